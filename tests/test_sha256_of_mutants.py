"""Mutation audit of FactsCache.sha256_of and compute_sums' use of it (8b277cf): a cached hash that is not a string
is no answer, and compute_sums takes each cached weight file's hash from sha256_of, not from get()'s whole facts."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rwkv_registry.facts import FactsCache, stat_key
from rwkv_registry.ops import compute_sums
from rwkv_registry.validate import validate_registry


def _weights(reg: Path) -> list[str]:
    return sorted(str(p) for p in reg.resolve().rglob("*.pth"))


def test_a_cached_sha256_that_is_not_a_string_is_no_answer(reg: Path) -> None:
    validate_registry(reg)
    cache = FactsCache(reg)
    w = _weights(reg)[0]
    key = stat_key(os.stat(w), w)
    assert isinstance(cache.sha256_of(w, key), str)
    for bad in (None, 5, ["0" * 64]):
        cache.files[w]["facts"]["sha256"] = bad
        assert cache.sha256_of(w, key) is None, bad
    cache.files[w]["facts"] = "not a dict"
    assert cache.sha256_of(w, key) is None


def test_compute_sums_asks_for_the_hash_alone(reg: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every weight file validate cached is answered by sha256_of under its own stat key: get() (which builds
    the whole facts) is not asked, for an absolute or a relative registry path."""
    validate_registry(reg)
    cold = compute_sums(reg, cache=FactsCache(reg, enabled=False))
    asked: list[str] = []
    real = FactsCache.get
    monkeypatch.setattr(FactsCache, "get", lambda self, path, key: (asked.append(path), real(self, path, key))[1])
    assert compute_sums(reg) == cold
    monkeypatch.chdir(reg.parent)
    assert compute_sums(Path(reg.name)) == cold
    assert [p for p in asked if p.endswith(".pth")] == []
