"""The browse tree: registry → base → method → data version → entry, children added on first expand."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.widgets import Tree
from textual.widgets.tree import TreeNode

from rwkv_registry.catalog.entries import (
    FROZEN_TAG,
    METHOD_LABEL,
    RECOMMENDED_MARK,
    STATUS_MARK,
    STATUS_STYLE,
    Catalog,
    EntryFilter,
    NodeRef,
    worst_status,
)
from rwkv_registry.core.textsafe import printable

Grouped = dict[str, dict[str, dict[str, list[dict[str, Any]]]]]


class RegistryTree(Tree[NodeRef]):
    """Lazily loaded tree of a :class:`~rwkv_registry.catalog.entries.Catalog`.

    A node's children are created the first time it is expanded, so a registry of thousands of
    entries mounts with one node per base. Each label starts with a status mark (``·`` not
    validated, ``✓`` ok, ``!`` warnings, ``✗`` errors); ``★`` marks the recommended entry and
    ``[frozen]`` a frozen base, so nothing depends on colour.
    """

    AUTO_EXPAND = 40  # small registries (or filter results up to FILTER_EXPAND) open fully
    FILTER_EXPAND = 200

    def __init__(self, catalog: Catalog, *, id: str | None = None) -> None:
        super().__init__(catalog.name, data=NodeRef("registry"), id=id)
        self.catalog = catalog
        self.statuses: dict[str, str] = {}
        self.registry_status = "unchecked"
        self.filter = EntryFilter()
        self.preferred: NodeRef | None = None  # the node the user chose; kept across filter changes
        self._forced: NodeRef | None = None
        self.shown_entries = 0
        self._grouped: Grouped = {}
        self._all: Grouped = {}
        self._all_generation = -1  # the Catalog.generation _all was grouped from
        self._group_status: dict[NodeRef, str] = {}
        self._loaded: set[Any] = set()
        self._entry_nodes: dict[str, TreeNode[NodeRef]] = {}
        self._group_nodes: dict[NodeRef, TreeNode[NodeRef]] = {}
        self.guide_depth = 3

    # --- building ----------------------------------------------------------------------------------
    def rebuild(self, flt: EntryFilter | None = None) -> None:
        """(Re)build from the catalogue with ``flt`` (default: the current filter); keep the cursor's node."""
        if flt is not None:
            self.filter = flt
        previous = self.preferred
        self._forced = NodeRef("registry")
        self.move_cursor(None)  # before clearing: the Tree must not keep a cursor node of the old nodes
        self.clear()
        self._loaded = {self.root.id}
        self._entry_nodes.clear()
        self._group_nodes.clear()
        cat = self.catalog
        if self._all_generation != cat.generation:  # index.json re-read: group again (not on each filter change)
            self._all, self._all_generation = cat.grouped(), cat.generation
        if self.filter.active:
            self._grouped = cat.grouped(self.filter.keeper(cat, self.statuses))
            self._grouped = {b: m for b, m in self._grouped.items() if m}
        else:
            self._grouped = self._all
        self.shown_entries = sum(len(es) for ms in self._grouped.values() for vs in ms.values() for es in vs.values())
        self._group_status = self._group_statuses()
        self.root.set_label(self._root_label())
        for base in self._grouped:
            ref = NodeRef("base", base)
            self._group_nodes[ref] = self.root.add(self._group_label(ref), data=ref)
        self.root.expand()
        limit = self.FILTER_EXPAND if self.filter.active else self.AUTO_EXPAND
        if self.shown_entries <= limit:
            for node in list(self.root.children):
                self._expand_deep(node)
        target = self._group_nodes.get(previous) if previous is not None and previous.kind != "entry" else None
        if previous is not None and previous.kind == "entry":
            target = self._entry_nodes.get(previous.entry_id)
        self._forced = None if target is not None else NodeRef("registry")
        self._place_cursor(target or self.root)  # from line -1: the move always posts NodeHighlighted

    def _place_cursor(self, node: TreeNode[NodeRef]) -> None:
        self.get_node_at_line(0)  # lay out the lines now: nodes added since have no line number yet
        self.move_cursor(node)

    def _expand_deep(self, node: TreeNode[NodeRef]) -> None:
        self.load_children(node)
        node.expand()
        for child in node.children:
            if child.allow_expand:
                self._expand_deep(child)

    def load_children(self, node: TreeNode[NodeRef]) -> None:
        """Create the children of ``node`` if not done yet."""
        ref = node.data
        if ref is None or node.id in self._loaded:
            return
        self._loaded.add(node.id)
        if ref.kind == "base":
            for method in self._grouped.get(ref.base, {}):
                child = NodeRef("method", ref.base, method)
                self._group_nodes[child] = node.add(self._group_label(child), data=child)
        elif ref.kind == "method":
            for version in self._grouped.get(ref.base, {}).get(ref.method, {}):
                child = NodeRef("version", ref.base, ref.method, version)
                self._group_nodes[child] = node.add(self._group_label(child), data=child)
        elif ref.kind == "version":
            for e in self._grouped.get(ref.base, {}).get(ref.method, {}).get(ref.version, []):
                eid = str(e.get("id"))
                child = NodeRef("entry", ref.base, ref.method, ref.version, eid)
                self._entry_nodes[eid] = node.add_leaf(self._entry_label(e), data=child)

    def on_tree_node_expanded(self, event: Tree.NodeExpanded[NodeRef]) -> None:
        """Lazy loading: children appear when a node is opened."""
        self.load_children(event.node)

    def on_tree_node_highlighted(self, event: Tree.NodeHighlighted[NodeRef]) -> None:
        """Remember what the user put the cursor on (not where a rebuild had to put it)."""
        if event.node.data is not None and event.node.data == self._forced:
            self._forced = None
        elif event.node.data is not None:
            self.preferred = event.node.data

    def select_entry(self, entry_id: str) -> bool:
        """Open the path to an entry and put the cursor on it; False if the filter hides it."""
        e = self.catalog.get_entry(entry_id)
        if e is None:
            return False
        base, method = str(e.get("base")), str(e.get("method"))
        version = str((e.get("data") or {}).get("version"))
        for ref in (NodeRef("base", base), NodeRef("method", base, method), NodeRef("version", base, method, version)):
            node = self._group_nodes.get(ref)
            if node is None:
                return False
            self.load_children(node)
            node.expand()
        node = self._entry_nodes.get(entry_id)
        if node is None:
            return False
        self._place_cursor(node)
        return True

    # --- labels ----------------------------------------------------------------------------------
    def _group_statuses(self) -> dict[NodeRef, str]:
        """The worst status below every base, method and data version, in one pass over the entries (a label
        no longer walks its entries, so relabelling every group costs one walk, not one per level)."""
        out: dict[NodeRef, str] = {}
        statuses = self.statuses
        for base, methods in self._all.items():
            worst_m = []
            for method, versions in methods.items():
                worst_v = []
                for version, entries in versions.items():
                    w = worst_status(statuses.get(str(e.get("id")), "unchecked") for e in entries) if entries else "ok"
                    out[NodeRef("version", base, method, version)] = w
                    worst_v.append(w)
                w = worst_status(worst_v) if worst_v else "ok"
                out[NodeRef("method", base, method)] = w
                worst_m.append(w)
            out[NodeRef("base", base)] = worst_status(worst_m) if worst_m else "ok"
        return out

    def _status(self, entry_id: str) -> str:
        return self.statuses.get(entry_id, "unchecked")

    def _mark(self, status: str) -> Text:
        return Text(STATUS_MARK[status] + " ", style=STATUS_STYLE[status])

    def _root_label(self) -> Text:
        label = self._mark(self.registry_status)
        total = len(self.catalog.entries)
        count = f" ({self.shown_entries} of {total} shown)" if self.filter.active else f" ({total})"
        label.append(self._fit(printable(self.catalog.name), depth=0, tail=len(count)), style="bold")
        label.append(count, style="dim")
        return label

    def _group_label(self, ref: NodeRef) -> Text:
        shown = self._grouped.get(ref.base, {})
        if ref.kind == "base":
            n = sum(len(es) for vs in shown.values() for es in vs.values())
        elif ref.kind == "method":
            n = sum(len(es) for es in shown.get(ref.method, {}).values())
        else:
            n = len(shown.get(ref.method, {}).get(ref.version, []))
        label = self._mark(self._group_status.get(ref, "ok"))
        if ref.kind == "base":
            status = self.catalog.base_status(ref.base)
            tag = f" {FROZEN_TAG}" if status == "frozen" else " [not in index]" if status == "unknown" else ""
            # a long base name gives way (…) so that its tag and count stay visible in a narrow tree
            label.append(self._fit(printable(ref.base), depth=1, tail=len(tag) + len(f" ({n})")), style="bold")
            if tag:
                label.append(tag, style="cyan" if status == "frozen" else "bold red")
        elif ref.kind == "method":
            label.append(printable(METHOD_LABEL.get(ref.method, ref.method)))
        else:
            label.append(printable(ref.version))
        label.append(f" ({n})", style="dim")
        return label

    def _fit(self, text: str, *, depth: int, tail: int) -> str:
        """``text`` cut short with … so that a label at ``depth`` (guides, status mark, text, ``tail``
        more cells) fits the tree's current width; unchanged before the first layout."""
        width = self.scrollable_content_region.width
        if width <= 0:
            return text
        room = width - self.guide_depth * depth - 4 - tail  # 4: the ▼ of an expandable node and the mark
        return text if len(text) <= room else text[: max(room - 1, 8)] + "…"

    def on_resize(self) -> None:
        """Labels that were cut to fit are cut again for the new width."""
        self.refresh_groups()

    def _entry_label(self, e: dict[str, Any]) -> Text:
        eid = str(e.get("id"))
        label = self._mark(self._status(eid))
        label.append(printable(eid))
        if e.get("recommended") is True:
            label.append(f" {RECOMMENDED_MARK}", style="bold yellow")
        return label

    # --- statuses ------------------------------------------------------------------------------------
    def set_status(self, entry_id: str, status: str) -> None:
        """One entry's status changed: relabel its node (groups are relabelled by :meth:`refresh_groups`)."""
        if self.statuses.get(entry_id) == status:
            return
        self.statuses[entry_id] = status
        node = self._entry_nodes.get(entry_id)
        e = self.catalog.get_entry(entry_id)
        if node is not None and e is not None:
            node.set_label(self._entry_label(e))

    def set_statuses(self, statuses: dict[str, str], registry_status: str) -> None:
        """Replace every status (a finished report) and relabel all loaded nodes."""
        self.statuses = dict(statuses)
        self.registry_status = registry_status
        for eid, node in self._entry_nodes.items():
            e = self.catalog.get_entry(eid)
            if e is not None:
                node.set_label(self._entry_label(e))
        self.refresh_groups()

    def refresh_groups(self) -> None:
        """Relabel the registry, base, method and version nodes from the entries' statuses (only the nodes whose
        label changed: each relabelling schedules a redraw of the node's lines)."""
        self._group_status = self._group_statuses()
        self._relabel(self.root, self._root_label())
        for ref, node in self._group_nodes.items():
            self._relabel(node, self._group_label(ref))

    @staticmethod
    def _relabel(node: TreeNode[NodeRef], label: Text) -> None:
        if node.label != label:
            node.set_label(label)
