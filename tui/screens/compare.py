"""Two entries side by side: differing fields, score deltas and the train.json diff."""

from __future__ import annotations

from typing import ClassVar

from rich.console import Group
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Footer, Header, Static
from textual.worker import get_current_worker

from rwkv_registry.catalog.entries import (
    Catalog,
    Comparison,
)
from rwkv_registry.catalog.render import (
    render_comparison,
)
from rwkv_registry.core.errors import RegistryError
from rwkv_registry.core.textsafe import printable, printable_renderable


class CompareScreen(Screen[None]):
    """``A`` against ``B``: ``=`` same, ``≠``/``~`` changed, ``-``/``+`` on one side only."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q", "app.pop_screen", "Back", id="compare.close"),
    ]

    class Ready(Message):
        """The comparison was computed off the UI thread."""

        def __init__(self, comparison: Comparison) -> None:
            super().__init__()
            self.comparison = comparison

    class Failed(Message):
        """An entry to compare is no longer in index.json."""

        def __init__(self, text: str, hint: str = "") -> None:
            super().__init__()
            self.text = text
            self.hint = hint

    def __init__(self, catalog: Catalog, a: str, b: str) -> None:
        super().__init__()
        self.catalog = catalog
        self.a = a
        self.b = b
        self.comparison: Comparison | None = None

    def compose(self) -> ComposeResult:
        yield Header()
        with VerticalScroll(id="compare-scroll"):
            yield Static(
                Text(f"comparing {printable(self.a)} with {printable(self.b)}…", style="dim"), id="compare-body"
            )
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = f"{printable(self.a)} ↔ {printable(self.b)}"
        self.compute()

    @work(thread=True, exclusive=True, exit_on_error=False, name="compare")
    def compute(self) -> None:
        """Read both train.json files (cached) and build the comparison."""
        try:
            cmp = self.catalog.compare(self.catalog.entry(self.a), self.catalog.entry(self.b))
        except RegistryError as e:  # an entry left index.json since it was chosen
            if not get_current_worker().is_cancelled:
                self.post_message(self.Failed(e.message, e.hint))
            return
        if not get_current_worker().is_cancelled:
            self.post_message(self.Ready(cmp))

    def on_compare_screen_failed(self, message: Failed) -> None:
        text = Text(f"✗ cannot compare: {printable(message.text)}")
        if message.hint:
            text.append(f"\n{printable(message.hint)}", style="dim")
        self.query_one("#compare-body", Static).update(text)

    def on_compare_screen_ready(self, message: Ready) -> None:
        self.comparison = message.comparison
        body = printable_renderable(Group(*render_comparison(message.comparison)))  # train.json text, escaped
        self.query_one("#compare-body", Static).update(body)
