"""Mutation audit of the palette's ``Go to <entry>`` prefilter (tui/commands.py, GoToKeys), after test_palette_keys.py.

- G01 the last matches reused when the last query extends the new one (``last.startswith(query)``): survived;
  killed here
- G02 ``fresh`` without the generation test, G03 without the identity test: equivalent (Catalog.refresh bumps
  ``generation`` and builds a new ``entries`` list together, and only there; the keys hold the old list, so its
  identity cannot be reused)
- G04 the first character not escaped: killed (test_palette_keys.py)
- G05 the matches remembered under the query less its last character: survived; killed here
- G06 the candidates without ``Go to ``: killed (test_palette_keys.py)
- G07 the keys never built again: killed (test_palette_keys.py)
"""

from __future__ import annotations

from pathlib import Path

from test_palette_keys import _fuzzy_hits, _write_index

from rwkv_registry.catalog.entries import Catalog
from rwkv_registry.tui.commands import GoToKeys


def test_a_backspace_brings_back_the_matches_of_the_shorter_query(tmp_path: Path) -> None:
    """Typing, then deleting (backspace) and typing something else: every step lists exactly what the fuzzy matcher
    scores, the entries the longer query had dropped included."""
    ids = [f"2026-v{v}.{d}-{m}{k}" for v in (1, 2) for d in range(10) for m in ("s", "r4-g") for k in range(12)]
    _write_index(tmp_path, ids)
    keys = GoToKeys(Catalog(tmp_path))
    candidates = [f"Go to {i}" for i in ids]
    steps = ("v2", "v2.", "v2.1", "v2.1-r", "v2.1-", "v2.1", "v2.1-s", "v2.1-", "v2")
    for typed in steps:
        assert keys.narrow(typed) == _fuzzy_hits(typed, candidates), typed
    assert len(keys.narrow("v2.1-")) > len(keys.narrow("v2.1-s")) > 0
