"""The per-file facts cache: fast when nothing changed, never fooled by a restored mtime, never in the tree."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from regtools import TINY_BASE

from rwkv_registry.validate import validate_registry

STATE = f"{TINY_BASE}/state/v1/s1.pth"


def test_warm_run_uses_the_cache(registry: Path) -> None:
    cold = validate_registry(registry)
    warm = validate_registry(registry)
    assert cold.stats["cache_hits"] == 0 and cold.stats["bytes_hashed"] > 0
    assert warm.stats["cache_hits"] == 3 and warm.stats["bytes_hashed"] == 0
    assert [f.code for f in warm.findings] == [f.code for f in cold.findings]


def test_in_place_edit_with_restored_mtime_is_caught(registry: Path) -> None:
    assert validate_registry(registry).ok
    p = registry / STATE
    st = p.stat()
    data = bytearray(p.read_bytes())
    data[-100] ^= 0x10
    with open(p, "r+b") as f:  # same inode, same size
        f.write(bytes(data))
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert p.stat().st_mtime_ns == st.st_mtime_ns and p.stat().st_size == st.st_size
    report = validate_registry(registry)
    assert "HSH001" in {f.code for f in report.findings}
    assert report.stats["cache_hits"] == 2  # the two MiSS files only


def test_no_cache_hashes_everything(registry: Path) -> None:
    validate_registry(registry)
    report = validate_registry(registry, use_cache=False)
    assert report.stats["cache_hits"] == 0 and report.stats["bytes_hashed"] > 0


def test_cache_is_never_written_inside_the_registry(registry: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RWKV_REGISTRY_CACHE_DIR", str(registry / "cache-here"))
    before = sorted(p.relative_to(registry) for p in registry.rglob("*"))
    assert validate_registry(registry).ok
    assert sorted(p.relative_to(registry) for p in registry.rglob("*")) == before


def test_corrupt_cache_file_is_ignored(registry: Path) -> None:
    validate_registry(registry)
    cache_dir = Path(os.environ["RWKV_REGISTRY_CACHE_DIR"])
    for f in cache_dir.glob("validate-*.json"):
        f.write_text("{garbage")
    report = validate_registry(registry)
    assert report.ok and report.stats["cache_hits"] == 0


def test_cached_facts_share_their_big_lists_and_read_back_unchanged(registry: Path, tmp_path: Path) -> None:
    # every adapter of one base and rank has the same tensors and targets: stored once (a 7.2B MiSS adapter's
    # facts are 60 KB of JSON, loaded on every warm run), read back equal to the facts computed
    import json
    from dataclasses import asdict

    from rwkv_registry.facts import FactsCache, FileFacts, compute_facts

    weights = sorted(p for p in registry.rglob("*.pth"))
    computed = {str(p): compute_facts(p) for p in weights}
    cache = FactsCache(tmp_path / "elsewhere")
    for i, (p, f) in enumerate(computed.items()):
        cache.put(p, [i], f)
    cache.save()
    again = FactsCache(tmp_path / "elsewhere")
    for i, (p, f) in enumerate(computed.items()):
        as_before = FileFacts.from_json(json.loads(json.dumps(asdict(f))))  # what the cache gave without blobs
        assert again.get(p, [i]) == as_before
        assert again.get(p, [i + 1]) is None
    stored = json.loads(again.path.read_text())
    misses = [v for v in stored["files"].values() if v["facts"]["method"] == "miss"]
    assert len(misses) == 2 and misses[0]["blobs"] == misses[1]["blobs"]  # the same shapes: the same blobs
    assert set(misses[0]["blobs"]) == {"tensors", "targets", "manifest.targets"}
    assert all(v["facts"]["targets"] is None for v in misses)
    # a blob gone (a cache from elsewhere, an edit): a miss, recomputed, never a half-read fact
    stored["blobs"] = {}
    again.path.write_text(json.dumps(stored))
    assert FactsCache(tmp_path / "elsewhere").get(str(weights[0]), [0]) is None
    report = validate_registry(registry)
    assert report.ok and report.stats["cache_hits"] == 0
    warm = validate_registry(registry)
    assert warm.stats["cache_hits"] == 3 and [f.code for f in warm.findings] == [f.code for f in report.findings]
