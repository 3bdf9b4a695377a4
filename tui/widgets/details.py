"""The details pane: five tabs about the selected node (Info, Train, MiSS, Scores, Checks)."""

from __future__ import annotations

from collections.abc import Iterable
from itertools import islice
from typing import Any

from rich.console import Console, ConsoleOptions, Group, RenderableType
from rich.segment import Segment
from rich.table import Table
from rich.text import Text
from textual import active_app
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.css.styles import RulesMap
from textual.strip import Strip
from textual.style import Style
from textual.visual import RenderOptions, RichVisual, Visual
from textual.widgets import ContentSwitcher, Static, TabbedContent, TabPane

from rwkv_registry.catalog.entries import (
    STATUS_MARK,
    Catalog,
    FindingIndex,
    NodeRef,
)
from rwkv_registry.catalog.render import (
    render_base_info,
    render_entry_info,
    render_findings,
    render_group_info,
    render_miss,
    render_registry_info,
    render_scores,
    render_smoke,
    render_train,
)
from rwkv_registry.core.textsafe import printable_renderable

TABS = (("info", "Info"), ("train", "Train"), ("miss", "MiSS"), ("scores", "Scores"), ("checks", "Checks"))


def _hint(text: str) -> Text:
    return Text(text, style="dim")


def build_sections(cat: Catalog, ref: NodeRef) -> dict[str, RenderableType]:
    """Info, Train, MiSS and Scores of a node. Reads files through the catalogue (cached by stat):
    run it in a worker thread, never on the UI thread."""
    if ref.kind == "entry":
        e = cat.get_entry(ref.entry_id)
        if e is None:
            gone = _hint(f"entry {ref.entry_id} is no longer in index.json")
            return {"info": gone, "train": gone, "miss": gone, "scores": gone}
        train_info, _ = cat.effective_train(e)
        return {
            "info": render_entry_info(cat, e),
            "train": render_train(train_info, e),
            "miss": render_miss(cat, e, cat.miss_summary(e)),
            "scores": render_scores(cat, str(e.get("base")), entry=e),
        }
    if ref.kind == "registry":
        return {
            "info": render_registry_info(cat),
            "train": _hint("Select a data version or an entry to see its train.json."),
            "miss": _hint("Select a MiSS entry to see its manifest."),
            "scores": Group(*[render_scores(cat, b) for b in cat.base_names()]) if cat.bases else _hint("No scores."),
        }
    ids = [str(e.get("id")) for e in cat.entries_under(ref)]
    if ref.kind == "base":
        b = cat.base(ref.base)
        info: RenderableType = render_base_info(cat, b) if b else Text(f"✗ base {ref.base} is not in index.json")
        return {
            "info": info,
            "train": _hint("Select a data version or an entry to see its train.json."),
            "miss": _hint("Select a MiSS entry to see its manifest."),
            "scores": render_scores(cat, ref.base),
        }
    train: RenderableType = _hint("Select a data version or an entry to see its train.json.")
    if ref.kind == "version":
        entries = cat.entries_under(ref)
        rel = Catalog.train_rel(entries[0]) if entries else f"{ref.prefix}/train.json"
        train = render_train(cat.train(rel))
    return {
        "info": render_group_info(cat, ref),
        "train": train,
        "miss": _hint("Select a MiSS entry to see its manifest."),
        "scores": render_scores(cat, ref.base, only=ids, table=False),
    }


def render_checks(
    cat: Catalog, ref: NodeRef, findings: FindingIndex | None, *, status: str, progress: str = ""
) -> RenderableType:
    """Validation findings of a node (and an entry's smoke records). No file is read."""
    checked = findings is not None
    if ref.kind == "entry":
        e = cat.get_entry(ref.entry_id) or {}
        mine = findings.for_entry(ref.entry_id) if findings else []
        head = render_findings(mine, checked=checked, title="validation of this entry", within=ref.base)
        parts: list[Any] = [head]
        if not checked and status not in ("unchecked", "checking"):
            parts.append(Text(f"{STATUS_MARK[status]} file read: {status} so far ({progress})", style="dim"))
        return Group(*parts, Text(""), render_smoke(e))
    if ref.kind == "registry":
        return render_findings(findings.findings if findings else [], checked=checked, title="validation")
    ids = [str(e.get("id")) for e in cat.entries_under(ref)]
    under = findings.under(ref.prefix, ids) if findings else []
    return render_findings(under, checked=checked, title=f"validation of {ref.prefix}/", within=ref.base)


class _Replay:
    """Segments rendered earlier, rendered again as they are."""

    def __init__(self, segments: list[Segment]) -> None:
        self.segments = segments

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterable[Segment]:
        return self.segments


class RenderedOnce(RichVisual):
    """A :class:`~textual.visual.RichVisual` that renders its renderable once per width. Textual renders a rich
    renderable twice per update of a ``height: auto`` Static, once to measure its height (the layout) and once to
    draw it; a details tab's tables took some 15 ms each time, at every cursor move that drew the details. The
    segments of the first rendering are kept and replayed (through the widget's ``post_render``, as Textual draws
    them). Only for renderables whose lines depend on the width alone (tables, groups of them: see
    :class:`DetailStatic`), never on the height Textual passes when it draws."""

    def __init__(self, widget: Static, renderable: RenderableType) -> None:
        super().__init__(widget, renderable)
        self._rendered: dict[int, list[Segment]] = {}

    def segments(self, width: int) -> list[Segment]:
        """The renderable's segments at ``width`` (rendered on the first call for that width; a layout measures
        at two widths when the tab's scroll bar comes or goes)."""
        segments = self._rendered.get(width)
        if segments is None:
            if len(self._rendered) >= 4:
                self._rendered.clear()
            app = active_app.get()
            options = app.console_options.update_width(width).update(highlight=False)
            # registry text shown escaped where it holds control characters (textsafe.printable)
            shown = printable_renderable(self._renderable)
            segments = self._rendered[width] = list(app.console.render(shown, options))
        return segments

    def get_height(self, rules: RulesMap, width: int) -> int:
        return sum(text.count("\n") for text, _, _ in self.segments(width))

    def render_strips(self, width: int, height: int | None, style: Style, options: RenderOptions) -> list[Strip]:
        app = active_app.get()
        console_options = app.console_options.update(highlight=False, width=width, height=height)
        renderable = self._widget.post_render(_Replay(self.segments(width)), style.rich_style)
        lines = Segment.split_and_crop_lines(
            app.console.render(renderable, console_options.update_width(width)),
            width,
            include_new_lines=False,
            pad=False,
        )
        return [Strip(line) for line in islice(lines, None, height)]


class DetailStatic(Static):
    """The Static of a details tab: a table or a group of renderables is rendered once per update and width
    (:class:`RenderedOnce`), not once to measure it and again to draw it. Text, and anything else, as Static
    draws it."""

    def render(self) -> Visual | RenderableType:
        visual = self.visual
        content = self.content
        if type(visual) is RichVisual and isinstance(content, Group | Table):
            memo = getattr(self, "_memo", None)
            if memo is None or memo[0] is not visual:
                memo = self._memo = (visual, RenderedOnce(self, content))
            return memo[1]
        if isinstance(content, Text) and not content.plain.isprintable():
            return printable_renderable(content)  # a message quoting registry text, escaped
        if type(visual) is RichVisual:
            return printable_renderable(content)
        return visual

    def show(self, content: RenderableType) -> None:
        """:meth:`update` to ``content``, laying the screen out again only when its height changes. A layout is of
        the whole screen, and after one Textual repaints the tree's scroll bar in a frame of its own: a cursor
        move that drew the details cost three frames (the tree's cursor, the details with the layout, the scroll
        bar); between entries of one data version the Info tab's height rarely changes. The height is measured
        as the layout would (the rendering is kept for the draw: :class:`RenderedOnce`)."""
        width, old = self.content_size
        self.update(content, layout=False)
        if width <= 0 or not self.is_mounted:
            self.refresh(layout=True)
            return
        visual = self.render()
        # the styles, as Widget.get_content_height passes them (its annotation says RulesMap)
        new = visual.get_height(self.styles, width) if isinstance(visual, Visual) else None  # type: ignore[arg-type]
        if new != old:
            self.refresh(layout=True)


class DetailsPane(Vertical):
    """Tabs of rich renderables; :meth:`show` swaps their content without remounting anything.

    Only the tab shown is updated at once: the others keep their new content pending until they are shown (the
    tab switch, by key or click, updates them before the next frame) or read (:meth:`section`). Updating a hidden
    Static still cost a layout of the whole screen, and the Checks tab, drawn at once when the cursor rests, cost
    one frame's layout more than the other tabs, which a worker draws a moment later."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._pending: dict[str, RenderableType] = {}

    def compose(self) -> ComposeResult:
        with TabbedContent(id="detail-tabs"):
            for i, (key, title) in enumerate(TABS, start=1):
                with TabPane(f"{i} {title}", id=f"tab-{key}"), VerticalScroll(classes="detail-scroll"):
                    yield DetailStatic(id=f"detail-{key}", classes="detail")

    def on_mount(self) -> None:
        # init: content shown before the watcher existed is handed over too
        self.watch(self.query_one(ContentSwitcher), "current", self._switched, init=True)

    def _switched(self, current: str | None) -> None:
        """A tab is shown (ContentSwitcher.current, set by a key or a click): give it its pending content first."""
        if current and current.startswith("tab-"):
            self._flush(current.removeprefix("tab-"))

    def _flush(self, key: str) -> None:
        if key in self._pending:
            self.query_one(f"#detail-{key}", Static).update(self._pending.pop(key))

    def show(self, sections: dict[str, RenderableType]) -> None:
        """Replace the content of the given tabs (keys of :data:`TABS`): the tab shown now, the others when shown."""
        active = self.query_one(TabbedContent).active
        for key, renderable in sections.items():
            if f"tab-{key}" == active:
                self._pending.pop(key, None)
                self.query_one(f"#detail-{key}", DetailStatic).show(renderable)
            else:
                self._pending[key] = renderable

    def section(self, key: str) -> Static:
        """The Static of one tab, with its latest content (tests read what it shows)."""
        self._flush(key)
        return self.query_one(f"#detail-{key}", Static)

    def set_checks_status(self, status: str) -> None:
        """Put the node's status mark on the Checks tab label (a relabelling lays the tabs out again: only when
        the mark changes)."""
        tabs = self.query_one(TabbedContent)
        tab = tabs.get_tab("tab-checks")
        label = f"5 Checks {STATUS_MARK[status]}"
        if tab.label_text != label:
            tab.label = label

    def activate(self, key: str) -> None:
        """Show the tab ``key`` (info, train, miss, scores, checks)."""
        self.query_one(TabbedContent).active = f"tab-{key}"
