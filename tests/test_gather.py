"""gather_facts' progress and cancellation (what the TUI's live validation builds on)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from regtools import TINY_ARCH

from rwkv_registry.engine import facts
from rwkv_registry.engine.facts import FactsCache, FileFacts, GatherCancelled, gather_facts, stat_key
from rwkv_registry.store.demo import write_synthetic_state


def _files(tmp_path: Path, n: int) -> dict[str, Path]:
    """``n`` files of distinct sizes: real State files and files that are no checkpoint at all."""
    root = tmp_path / "files"
    root.mkdir()
    out = {}
    for i in range(n):
        p = root / f"f{i:02d}.pth"
        if i % 2:
            write_synthetic_state(p, TINY_ARCH, seed=i)
        else:
            p.write_bytes(bytes([i]) * (100 + 37 * i))
        out[p.name] = p
    return out


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    read: list[str] = []
    real = facts.compute_facts

    def counted(path: str | os.PathLike[str]) -> FileFacts:
        read.append(os.path.basename(path))
        return real(path)

    monkeypatch.setattr(facts, "compute_facts", counted)
    return read


def test_every_file_is_reported_once_and_progress_reaches_all(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    paths: dict[str, str | Path] = dict(_files(tmp_path, 8))
    cache = FactsCache(tmp_path / "files")
    first = dict(list(paths.items())[:3])
    gather_facts(first, cache)  # three of them cached
    paths["gone.pth"] = str(tmp_path / "files" / "gone.pth")  # cannot be stat'ed
    read = _counting(monkeypatch)
    calls: list[str] = []
    hashed: list[tuple[str, int]] = []
    got, stats = gather_facts(
        paths, cache, workers=2, on_file=lambda rel, _r: calls.append(rel), progress=lambda r, n: hashed.append((r, n))
    )
    assert sorted(calls) == sorted(paths) and len(calls) == len(paths)  # 100%: one call per file, none twice
    assert set(calls[:4]) == {*first, "gone.pth"}  # what is known without reading comes first
    assert sorted(read) == sorted(set(paths) - set(first) - {"gone.pth"}) == sorted(r for r, _ in hashed)
    assert list(got) == list(paths) and isinstance(got["gone.pth"], FileNotFoundError)
    assert stats == {"cache_hits": 3, "bytes_hashed": sum(n for _, n in hashed)}
    cold, _ = gather_facts(paths, FactsCache(tmp_path, enabled=False))
    assert {r: f for r, f in got.items() if r != "gone.pth"} == {r: f for r, f in cold.items() if r != "gone.pth"}


def test_cancellation_stops_early_and_leaves_the_cache_consistent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths = _files(tmp_path, 12)
    cache = FactsCache(tmp_path / "files")
    read = _counting(monkeypatch)
    seen: list[str] = []

    def slow_report(rel: str, _result: object) -> None:  # the calling thread lags behind: the worker must stop
        seen.append(rel)
        time.sleep(0.3)

    with pytest.raises(GatherCancelled):  # stop once three files were read
        gather_facts(paths, cache, workers=1, on_file=slow_report, should_stop=lambda: len(read) >= 3)
    assert len(read) == 3  # the one worker started no file after the third: 9 of 12 never read
    assert len(seen) < 3 and set(seen) <= set(read)  # nothing reported once stopped
    # every file read to the end is cached (reported or not), under its current stat key, with the facts of its
    # bytes; no other file is
    assert sorted(cache.files) == sorted(str(paths[r]) for r in read)
    for r in read:
        p = str(paths[r])
        assert cache.get(p, stat_key(os.stat(p), p)) == facts.facts_from_buffer(paths[r].read_bytes())
    cache.save()
    first = list(read)
    read.clear()
    got, stats = gather_facts(paths, FactsCache(tmp_path / "files"))  # the next run reads only the rest
    assert stats["cache_hits"] == 3 and sorted(read) == sorted(set(paths) - set(first))
    cold, _ = gather_facts(paths, FactsCache(tmp_path, enabled=False))
    assert got == cold


def test_cancelled_before_the_first_file_reads_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    paths = _files(tmp_path, 3)
    cache = FactsCache(tmp_path / "files")
    read = _counting(monkeypatch)
    with pytest.raises(GatherCancelled):
        gather_facts(paths, cache, on_file=lambda *_: pytest.fail("reported"), should_stop=lambda: True)
    assert read == [] and cache.files == {} and not cache.dirty


def test_ctrl_c_in_the_calling_thread_reads_no_queued_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C (here raised by the first report) while files wait for a worker: they are never read, the one being
    read finishes and is cached, and the Ctrl-C is what comes out (not the cancellation of the queued reads)."""
    paths = _files(tmp_path, 12)
    cache = FactsCache(tmp_path / "files")
    read = _counting(monkeypatch)
    counted = facts.compute_facts

    def slow(path: str | os.PathLike[str]) -> FileFacts:
        time.sleep(0.2)
        return counted(path)

    monkeypatch.setattr(facts, "compute_facts", slow)

    def interrupted(rel: str, _result: object) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        gather_facts(paths, cache, workers=1, on_file=interrupted)
    assert 1 <= len(read) < 6, read  # 12 queued (2.4 s of reading): those not started yet were cancelled
    assert sorted(cache.files) == sorted(str(paths[r]) for r in read)


def test_a_path_that_cannot_be_read_is_reported_with_no_bytes_hashed(tmp_path: Path) -> None:
    paths: dict[str, str | Path] = dict(_files(tmp_path, 2))
    (tmp_path / "a-folder.pth").mkdir()  # stat'ed, then refused by open()
    paths["a-folder.pth"] = tmp_path / "a-folder.pth"
    hashed: dict[str, int] = {}
    got, stats = gather_facts(paths, FactsCache(tmp_path, enabled=False), progress=hashed.__setitem__)
    assert isinstance(got["a-folder.pth"], OSError) and hashed["a-folder.pth"] == 0
    files = sum(os.path.getsize(paths[r]) for r in ("f00.pth", "f01.pth"))
    assert stats["bytes_hashed"] == sum(hashed.values()) == files


def test_the_biggest_files_are_read_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The files to read are started biggest first (for better packing across threads), whatever their order in
    ``paths``; on_file still reports every file."""
    paths = _files(tmp_path, 6)
    read = _counting(monkeypatch)
    reported: list[str] = []
    gather_facts(paths, FactsCache(tmp_path, enabled=False), workers=1, on_file=lambda r, _f: reported.append(r))
    sizes = [os.path.getsize(paths[r]) for r in read]
    assert sorted(read) == sorted(reported) == sorted(paths)
    assert sizes == sorted(sizes, reverse=True) and read != list(paths)  # not the order given
