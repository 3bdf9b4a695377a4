"""Mutation audit of FactsCache.sha256_of and compute_sums' use of it (8b277cf): a cached hash that is not a string
is no answer, and compute_sums takes each cached weight file's hash from sha256_of, not from get()'s whole facts."""

from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import Any

import pytest

from rwkv_registry.engine.facts import FactsCache, stat_key
from rwkv_registry.engine.validate import validate_registry
from rwkv_registry.store.ops import compute_sums


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


def _malform(entry: dict[str, Any], how: str) -> None:
    facts = entry["facts"]
    if how == "size missing":
        del facts["size"]
    elif how == "unknown field":
        facts["colour"] = "blue"
    elif how == "size not an integer":
        facts["size"] = "12"
    elif how == "kind not a string":
        facts["kind"] = None
    elif how == "blob not stored":
        entry["blobs"] = {"tensors": "0" * 32}
        facts["tensors"] = None
    elif how == "blob of an unknown field":
        entry["blobs"] = {"colour": next(iter(entry.get("blobs", {}).values()), "0" * 32)}
    elif how == "inline tensors not a list":
        entry.pop("blobs", None)
        facts["tensors"] = 5
    elif how == "inline tensor not a list":
        entry.pop("blobs", None)
        facts["tensors"] = [["a", "float32", [1]], 7]
    elif how == "manifest targets without a manifest":
        entry["blobs"] = {"manifest.targets": next(iter(entry.get("blobs", {}).values()), "0" * 32)}
        facts["manifest"] = None


_MALFORMED = [
    "size missing",
    "unknown field",
    "size not an integer",
    "kind not a string",
    "blob not stored",
    "blob of an unknown field",
    "inline tensors not a list",
    "inline tensor not a list",
    "manifest targets without a manifest",
]


@pytest.mark.parametrize("how", _MALFORMED)
def test_sha256_of_answers_exactly_when_get_does(reg: Path, how: str) -> None:
    """A cache entry get() cannot make facts of (a damaged or hand-edited cache file) gives no hash either: the
    two share one check (FactsCache._entry). sha256_of used to look at the sha256 field alone and answered for
    all of these, and get() answered for a size or kind of the wrong type."""
    validate_registry(reg)
    cache = FactsCache(reg)
    w = _weights(reg)[0]
    key = stat_key(os.stat(w), w)
    facts = cache.get(w, key)
    assert facts is not None and cache.sha256_of(w, key) == facts.sha256
    cache.files[w] = copy.deepcopy(cache.files[w])
    _malform(cache.files[w], how)
    assert cache.get(w, key) is None
    assert cache.sha256_of(w, key) is None


def test_a_blob_tensor_list_that_is_no_list_of_lists_is_no_answer(reg: Path) -> None:
    """A stored tensor blob that is no list of lists: neither get() nor sha256_of answers for the entries using it,
    and get() does not raise."""
    validate_registry(reg)
    cache = FactsCache(reg)
    w = _weights(reg)[0]
    key = stat_key(os.stat(w), w)
    entry = cache.files[w]
    entry["blobs"] = {"tensors": "f" * 32}
    entry["facts"]["tensors"] = None
    cache.blobs["f" * 32] = [["a", "float32", [1]], 3]
    assert cache.get(w, key) is None
    assert cache.sha256_of(w, key) is None
