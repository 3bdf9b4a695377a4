"""The command palette (ctrl+p): the screen's actions, quick filters and "go to entry"."""

from __future__ import annotations

import asyncio
import heapq
from collections.abc import Callable
from functools import partial

from textual.command import DiscoveryHit, Hit, Hits, Provider

from rwkv_registry.catalog import METHOD_LABEL
from rwkv_registry.tui.screens.main import MainScreen

GO_TO_LIMIT = 20  # the best-matching ``Go to <entry>`` hits listed for a search


class RegistryCommands(Provider):
    """Commands of the browser; also ``Go to <entry>`` for the entries matching what is typed."""

    def _main(self) -> MainScreen | None:
        screen = self.screen
        if isinstance(screen, MainScreen):
            return screen
        return next((s for s in self.app.screen_stack if isinstance(s, MainScreen)), None)

    def _commands(self) -> list[tuple[str, Callable[[], object], str]]:
        main = self._main()
        if main is None:
            return []
        out: list[tuple[str, Callable[[], object], str]] = [
            ("Validate the registry", main.action_validate, "run every rule again (v)"),
            ("Copy the usage command", main.action_copy_usage, "rwkv-cli line of the selected entry (y)"),
            ("Open train.json in $EDITOR", main.action_edit_train, "of the selected entry or data version (e)"),
            ("Compare entries", main.action_compare, "mark the selected entry, then compare with another (c)"),
            ("Toggle dark/light", self.app.action_toggle_dark, "switch the theme (d)"),
            ("Filter: entries with errors", partial(main.set_filter, "is:error"), "only what is broken"),
            ("Filter: entries with warnings", partial(main.set_filter, "is:warning"), "only warnings"),
            ("Filter: recommended entries", partial(main.set_filter, "is:rec"), "the ★ entries"),
            ("Clear the filter", partial(main.set_filter, ""), "show every entry (escape)"),
        ]
        return out

    async def discover(self) -> Hits:
        """Offer the actions (not the per-entry jumps) before anything is typed: nothing per entry on open."""
        for name, callback, help_text in self._commands():
            yield DiscoveryHit(name, callback, help=help_text)

    async def search(self, query: str) -> Hits:
        """Fuzzy-match the actions, and the entries' ``Go to <entry>``: only the GO_TO_LIMIT best of those are
        listed (the palette lays out every hit it is given: thousands of them cost seconds per keystroke)."""
        main = self._main()
        if main is None:
            return
        matcher = self.matcher(query)
        for name, callback, help_text in self._commands():
            score = matcher.match(name)
            if score > 0:
                yield Hit(score, matcher.highlight(name), callback, help=help_text)
        best: list[tuple[float, int, str]] = []
        for i, e in enumerate(main.catalog.entries):
            if i % 500 == 499:
                await asyncio.sleep(0)  # let the UI (and a newer keystroke, which cancels this search) in
            eid = str(e.get("id"))
            score = matcher.match(f"Go to {eid}")
            if score > 0:
                best.append((-score, i, eid))
        for neg, _, eid in heapq.nsmallest(GO_TO_LIMIT, best):
            e = main.catalog.get_entry(eid) or {}
            method = METHOD_LABEL.get(str(e.get("method")), str(e.get("method")))
            version = (e.get("data") or {}).get("version")
            help_text = f"{method} {version} under {e.get('base')}"
            yield Hit(-neg, matcher.highlight(f"Go to {eid}"), partial(main.go_to, eid), help=help_text)
