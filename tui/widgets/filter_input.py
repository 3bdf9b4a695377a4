"""The filter box: free text plus ``method:`` ``base:`` ``data:`` ``is:`` terms (see EntryFilter)."""

from __future__ import annotations

from typing import ClassVar

from textual.binding import Binding, BindingType
from textual.widgets import Input

from rwkv_registry.catalog.entries import EntryFilter


class FilterInput(Input):
    """One line; Enter goes back to the tree keeping the filter, Escape clears it and goes back to the tree."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "leave", "Back", show=False, id="registry.clear_filter")]

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(placeholder="/ filter: text method:miss data:v2 is:error", id=id)

    @property
    def entry_filter(self) -> EntryFilter:
        """The parsed filter."""
        return EntryFilter.parse(self.value)

    def action_leave(self) -> None:
        """Clear the text and return to the tree, at once: the next key is the tree's (``q`` quits). Before, the
        first Escape only cleared and kept the focus here, so a ``q`` after it was typed into the box."""
        if self.value:
            self.value = ""
        self.screen.query_one("#tree").focus()
