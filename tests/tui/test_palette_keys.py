"""The palette's ``Go to <entry>`` search keys (tui/commands.py): the C prefilter finds exactly the candidates the
fuzzy matcher scores above 0, the narrowing of one keystroke to the next keeps them all, and the keys are built
again when index.json is re-read."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

from textual.fuzzy import Matcher

from rwkv_registry.catalog.entries import Catalog
from rwkv_registry.tui.commands import GoToKeys, go_to_keys, subsequence_pattern

ALPHABET = "ag3-v2.0s1rR4_ \\[]^$*+?()|{}İıßKK"  # regex specials, a space, case pairs and letters lower() changes


def _write_index(root: Path, ids: list[str]) -> None:
    path = root / "index.json"
    path.write_text(json.dumps({"entries": [{"id": i} for i in ids]}))
    os.utime(path, ns=(path.stat().st_mtime_ns + 10**9,) * 2)  # a new stat key even within one clock tick


def _fuzzy_hits(query: str, candidates: list[str]) -> list[int]:
    matcher = Matcher(query)
    return [i for i, c in enumerate(candidates) if matcher.match(c) > 0]


def test_the_prefilter_finds_exactly_what_the_fuzzy_matcher_scores() -> None:
    rng = random.Random(7)
    candidates = ["Go to " + "".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 14))) for _ in range(400)] + [
        "Go to 20260101-v2.9-r4-g118",
        "Go to 20250601-v1.0-s0",
    ]
    lowered = [c.lower() for c in candidates]
    queries = ["g", "g3-v2", "v2.9", "[", "a^$", "İ", "K", "ß", ")(", "go to", "\\"]
    queries += ["".join(rng.choice(ALPHABET) for _ in range(rng.randint(1, 4))) for _ in range(150)]
    for query in queries:
        pattern = subsequence_pattern(query)
        mine = [i for i, c in enumerate(lowered) if pattern.search(c)]
        assert mine == _fuzzy_hits(query, candidates), query


def test_narrowing_keystroke_by_keystroke_keeps_every_match(tmp_path: Path) -> None:
    ids = [f"2026-v{v}.{d}-{m}{k}" for v in (1, 2) for d in range(10) for m in ("s", "r4-g") for k in range(12)]
    _write_index(tmp_path, ids)
    keys = GoToKeys(Catalog(tmp_path))
    candidates = [f"Go to {i}" for i in ids]
    for typed in ("g", "g3", "G3-", "g3-v", "g3-v2", "v", "v2.1", "v2.1-R4"):  # extends, then starts again
        assert keys.narrow(typed) == _fuzzy_hits(typed, candidates), typed
    assert keys.narrow("v2.1-r4") and keys.narrow("zzz") == []


def test_the_keys_are_built_again_when_index_json_changes(tmp_path: Path) -> None:
    _write_index(tmp_path, ["a-1", "b-1"])
    cat = Catalog(tmp_path)
    first = go_to_keys(cat)
    assert go_to_keys(cat) is first  # once per load of index.json, not per keystroke
    assert [first.ids[i] for i in first.narrow("b")] == ["b-1"]
    _write_index(tmp_path, ["a-1", "b-1", "b-2"])
    assert cat.refresh()
    second = go_to_keys(cat)
    assert second is not first
    assert [second.ids[i] for i in second.narrow("b")] == ["b-1", "b-2"]


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
