"""The status bar: validation progress and counts, what the filter shows, the entry marked for compare."""

from __future__ import annotations

from rich.text import Text
from textual import events
from textual.widgets import Static

from rwkv_registry.catalog.entries import SEVERITY_MARK, SEVERITY_STYLE
from rwkv_registry.core.textsafe import printable


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


class StatusBar(Static):
    """One line, readable without colour: ``validated │ ✗ 1 error  ! 0 warnings  i 2 notes │ 4 entries``."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", id=id)
        self.state = "not validated"
        self.counts: dict[str, int] | None = None
        self.entries = ""
        self.marked: str | None = None

    def set_validation(self, state: str, counts: dict[str, int] | None) -> None:
        """``state``: e.g. ``validating 2/4 files…`` or ``validated``; ``counts`` per severity."""
        self.state = state
        self.counts = counts
        self._draw()

    def set_entries(self, text: str) -> None:
        """What the tree shows, e.g. ``4 entries`` or ``2 of 4 entries (filter: method miss)``."""
        self.entries = text
        self._draw()

    def set_marked(self, entry_id: str | None) -> None:
        """The entry marked for comparison, or None."""
        self.marked = entry_id
        self._draw()

    def on_resize(self, event: events.Resize) -> None:
        self._draw()

    def _draw(self) -> None:
        room = self.content_size.width
        text = self._text(compact=False)
        if room and text.cell_len > room:
            text = self._text(compact=True)  # ``validated │ ✗1 !0 i2 │ 4 entries``
        self.update(text)

    def _text(self, *, compact: bool) -> Text:
        text = Text(printable(self.state), style="bold" if self.state.startswith("validating") else "")
        if self.counts is not None:
            text.append(" │ ", style="dim")
            for sev, word in (("error", "error"), ("warning", "warning"), ("info", "note")):
                n = self.counts.get(sev, 0)
                shown = f"{SEVERITY_MARK[sev]}{n}" if compact else f"{SEVERITY_MARK[sev]} {_plural(n, word)}"
                text.append(shown, style=SEVERITY_STYLE[sev] if n else "dim")
                text.append(" " if compact else "  ")
            text.rstrip()
        if self.entries:
            text.append(" │ ", style="dim")
            text.append(printable(self.entries))
        if self.marked:
            text.append(" │ ", style="dim")
            text.append(f"compare: {printable(self.marked)} + ?", style="bold")
        return text
