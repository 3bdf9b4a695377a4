"""The command palette (ctrl+p): the screen's actions, quick filters and "go to entry"."""

from __future__ import annotations

import asyncio
import heapq
import re
import weakref
from collections.abc import Callable
from functools import partial

from textual.command import DiscoveryHit, Hit, Hits, Provider

from rwkv_registry.catalog.entries import METHOD_LABEL, Catalog
from rwkv_registry.tui.screens.main import MainScreen

GO_TO_LIMIT = 20  # the best-matching ``Go to <entry>`` hits listed for a search


def subsequence_pattern(query: str) -> re.Pattern[str]:
    """A regular expression that finds ``query``'s characters in order in a lower-cased candidate: exactly the
    candidates to which the palette's fuzzy matcher (textual.fuzzy, case-insensitive) gives a score above 0 (it
    scores only candidates holding every character of the query, in order, after ``str.lower()``). Each gap is a
    negated class (``a[^b]*b``), so a failing search never backtracks."""
    chars = query.lower()
    if not chars:
        return re.compile("")
    parts = [re.escape(chars[0])]
    parts += [f"[^{re.escape(c)}]*{re.escape(c)}" for c in chars[1:]]
    return re.compile("".join(parts), re.DOTALL)


class GoToKeys:
    """The ``Go to <entry>`` candidates of one load of index.json, built once (not per keystroke): the entry ids and
    their lower-cased candidate texts, which :func:`subsequence_pattern` searches in C before the fuzzy matcher
    scores the few that can match. :meth:`narrow` remembers the last query's matches, so a query that extends it
    (the next keystroke) searches only those."""

    def __init__(self, catalog: Catalog) -> None:
        self.entries = catalog.entries  # the list object: a re-read of index.json replaces it
        self.generation = catalog.generation
        self.ids = [str(e.get("id")) for e in self.entries]
        self.lowered = [f"Go to {eid}".lower() for eid in self.ids]
        self._last: tuple[str, list[int]] | None = None

    def fresh(self, catalog: Catalog) -> bool:
        """True while ``catalog`` still holds the entries these keys were built from."""
        return catalog.entries is self.entries and catalog.generation == self.generation

    def narrow(self, query: str) -> list[int]:
        """The indexes of the candidates holding ``query``'s characters in order (case-insensitive)."""
        last = self._last
        pool = last[1] if last is not None and query.lower().startswith(last[0]) else range(len(self.ids))
        search = subsequence_pattern(query).search
        lowered = self.lowered
        hits = [i for i in pool if search(lowered[i])]
        self._last = (query.lower(), hits)
        return hits


_keys: weakref.WeakKeyDictionary[Catalog, GoToKeys] = weakref.WeakKeyDictionary()


def go_to_keys(catalog: Catalog) -> GoToKeys:
    """The :class:`GoToKeys` of ``catalog``'s current entries (built again after index.json is re-read)."""
    keys = _keys.get(catalog)
    if keys is None or not keys.fresh(catalog):
        keys = _keys[catalog] = GoToKeys(catalog)
    return keys


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
        listed (the palette lays out every hit it is given: thousands of them cost seconds per keystroke). Only the
        entries that can match (:meth:`GoToKeys.narrow`, in C) are scored by the fuzzy matcher."""
        main = self._main()
        if main is None:
            return
        matcher = self.matcher(query)
        for name, callback, help_text in self._commands():
            score = matcher.match(name)
            if score > 0:
                yield Hit(score, matcher.highlight(name), callback, help=help_text)
        keys = go_to_keys(main.catalog)
        best: list[tuple[float, int, str]] = []
        for n, i in enumerate(keys.narrow(query)):
            if n % 500 == 499:
                await asyncio.sleep(0)  # let the UI (and a newer keystroke, which cancels this search) in
            eid = keys.ids[i]
            score = matcher.match(f"Go to {eid}")
            if score > 0:
                best.append((-score, i, eid))
        for neg, _, eid in heapq.nsmallest(GO_TO_LIMIT, best):
            e = main.catalog.get_entry(eid) or {}
            method = METHOD_LABEL.get(str(e.get("method")), str(e.get("method")))
            version = (e.get("data") or {}).get("version")
            help_text = f"{method} {version} under {e.get('base')}"
            yield Hit(-neg, matcher.highlight(f"Go to {eid}"), partial(main.go_to, eid), help=help_text)
