"""The details pane: five tabs about the selected node (Info, Train, MiSS, Scores, Checks)."""

from __future__ import annotations

from typing import Any

from rich.console import Group, RenderableType
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.widgets import Static, TabbedContent, TabPane

from rwkv_registry.catalog import (
    STATUS_MARK,
    Catalog,
    FindingIndex,
    NodeRef,
)
from rwkv_registry.catalog_render import (
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


class DetailsPane(Vertical):
    """Tabs of rich renderables; :meth:`show` swaps their content without remounting anything."""

    def compose(self) -> ComposeResult:
        with TabbedContent(id="detail-tabs"):
            for i, (key, title) in enumerate(TABS, start=1):
                with TabPane(f"{i} {title}", id=f"tab-{key}"), VerticalScroll(classes="detail-scroll"):
                    yield Static(id=f"detail-{key}", classes="detail")

    def show(self, sections: dict[str, RenderableType]) -> None:
        """Replace the content of the given tabs (keys of :data:`TABS`)."""
        for key, renderable in sections.items():
            self.query_one(f"#detail-{key}", Static).update(renderable)

    def section(self, key: str) -> Static:
        """The Static of one tab (tests read what it shows)."""
        return self.query_one(f"#detail-{key}", Static)

    def set_checks_status(self, status: str) -> None:
        """Put the node's status mark on the Checks tab label."""
        tabs = self.query_one(TabbedContent)
        tab = tabs.get_tab("tab-checks")
        tab.label = f"5 Checks {STATUS_MARK[status]}"

    def activate(self, key: str) -> None:
        """Show the tab ``key`` (info, train, miss, scores, checks)."""
        self.query_one(TabbedContent).active = f"tab-{key}"
