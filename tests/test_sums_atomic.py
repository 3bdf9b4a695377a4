"""SHA256SUMS format (byte-compatible with `sha256sum -c`) and atomic, locked writes."""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from regtools import hold_lock

from rwkv_registry.core.errors import LockedError
from rwkv_registry.fs.atomic import JOURNAL_NAME, TMP_PREFIX, Transaction, atomic_write_bytes, recover, registry_lock
from rwkv_registry.index.sums import format_sums, parse_sums


def test_format_is_sorted_and_parses_back() -> None:
    hashes = {"b/x.pth": "A" * 64, "a.json": "b" * 64, "c\\d": "c" * 64}
    data = format_sums(hashes)
    lines, bad = parse_sums(data)
    assert bad == []
    assert [line.path for line in lines] == ["a.json", "b/x.pth", "c\\d"]
    assert lines[1].sha256 == "a" * 64  # lower-cased
    assert data.splitlines()[2].startswith(b"\\")  # GNU escape marker for a backslash in the name


def test_malformed_lines_are_reported_with_numbers() -> None:
    lines, bad = parse_sums(b"0" * 64 + b"  ok\nnonsense\n" + b"1" * 64 + b"  crlf\r\n" + b"bad\r\n")
    assert [line.path for line in lines] == ["ok", "crlf"]  # a CR LF line end is accepted, as sha256sum -c does
    assert [line.crlf for line in lines] == [False, True]
    assert [n for n, _ in bad] == [2, 4]


@pytest.mark.parametrize("name", ["a\\qb", "trail\\"])
def test_sums_parse_rejects_an_escape_sha256sum_rejects(name: str, tmp_path: Path) -> None:
    """GNU unescapes only \\\\, \\n and \\r; any other escape, or a backslash at the end, makes the line
    improperly formatted (HSH003), not the listing of some other name."""
    line = "\\" + "ab" * 32 + f"  {name}\n"
    good, bad = parse_sums(line.encode())
    assert good == [] and bad == [(1, line[:-1])]
    if shutil.which("sha256sum"):
        (tmp_path / "SHA256SUMS").write_text(line)
        for n in ("aqb", "a\\qb", "trail", "trail\\"):
            (tmp_path / n).write_bytes(b"x")
        out = subprocess.run(["sha256sum", "-c", "SHA256SUMS"], cwd=tmp_path, capture_output=True, text=True)
        assert out.returncode == 1 and "no properly formatted" in out.stderr


def test_validate_reports_an_escape_sha256sum_rejects_as_hsh003(registry: Path) -> None:
    """The same rule through validate: a SHA256SUMS line ``sha256sum -c`` calls improperly formatted is HSH003."""
    from rwkv_registry.engine.validate import validate_registry

    with (registry / "SHA256SUMS").open("a") as f:
        f.write("\\" + "ab" * 32 + "  a\\qb\n")
    found = [f for f in validate_registry(registry, use_cache=False).findings if f.code == "HSH003"]
    assert len(found) == 1 and found[0].path == "SHA256SUMS"


@pytest.mark.skipif(shutil.which("sha256sum") is None, reason="coreutils sha256sum not installed")
def test_sha256sum_accepts_our_file(tmp_path: Path) -> None:
    files = {"a.txt": b"hello", "dir/b.bin": b"\x00\x01", "back\\slash.txt": b"x"}
    for rel, data in files.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
    (tmp_path / "SHA256SUMS").write_bytes(format_sums({r: hashlib.sha256(d).hexdigest() for r, d in files.items()}))
    out = subprocess.run(["sha256sum", "-c", "SHA256SUMS"], cwd=tmp_path, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    (tmp_path / "a.txt").write_bytes(b"changed")
    assert (
        subprocess.run(["sha256sum", "-c", "--quiet", "SHA256SUMS"], cwd=tmp_path, capture_output=True).returncode == 1
    )


def test_atomic_write_replaces_whole_file(tmp_path: Path) -> None:
    p = tmp_path / "f.json"
    p.write_text("old")
    atomic_write_bytes(p, b"new")
    assert p.read_bytes() == b"new"
    assert [x.name for x in tmp_path.iterdir()] == ["f.json"]


def test_transaction_publishes_all_or_nothing(tmp_path: Path) -> None:
    (tmp_path / "a").write_text("A0")
    with pytest.raises(RuntimeError), Transaction(tmp_path) as txn:
        txn.write_bytes("a", b"A1")
        txn.write_bytes("sub/b", b"B1")
        raise RuntimeError("interrupted before commit")
    assert (tmp_path / "a").read_text() == "A0"
    assert not (tmp_path / "sub").exists()
    with Transaction(tmp_path) as txn:
        txn.write_bytes("a", b"A1")
        txn.write_bytes("sub/b", b"B1")
        txn.commit()
    assert (tmp_path / "a").read_text() == "A1" and (tmp_path / "sub" / "b").read_text() == "B1"
    assert not list(tmp_path.rglob(f"{TMP_PREFIX}*")) and not (tmp_path / JOURNAL_NAME).exists()


def test_recover_rolls_forward_a_journaled_write(tmp_path: Path) -> None:
    (tmp_path / "a").write_text("old")
    tmp = tmp_path / f"{TMP_PREFIX}x-a"
    tmp.write_text("new")
    (tmp_path / JOURNAL_NAME).write_text(json.dumps({"renames": [[tmp.name, "a"]]}))
    messages = recover(tmp_path)
    assert (tmp_path / "a").read_text() == "new"
    assert "completed an interrupted write" in messages[0]
    assert not (tmp_path / JOURNAL_NAME).exists()


def test_recover_rolls_back_unjournaled_temp_files(tmp_path: Path) -> None:
    (tmp_path / "a").write_text("old")
    (tmp_path / f"{TMP_PREFIX}y-a").write_text("half")
    messages = recover(tmp_path)
    assert (tmp_path / "a").read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a"]
    assert "removed 1 temporary file" in messages[0]


def test_second_writer_fails_cleanly_when_lock_held(tmp_path: Path) -> None:
    (tmp_path / "index.json").write_text("{}")  # the lock is taken only in a registry
    ctx = multiprocessing.get_context("spawn")
    ready = ctx.Event()
    p = ctx.Process(target=hold_lock, args=(str(tmp_path), ready, 3.0))
    p.start()
    try:
        assert ready.wait(20)
        with (
            pytest.raises(LockedError, match="another rwkv-registry command is writing"),
            registry_lock(tmp_path, timeout=0.2),
        ):
            pass
    finally:
        p.join(20)
    with registry_lock(tmp_path, timeout=1):  # released when the holder ends
        pass


def _registry_files_by_os_walk(root: Path) -> dict[str, Path]:
    """What ops.registry_files returned when it was written with os.walk (the reference of the test below)."""
    from rwkv_registry.checks.sums import NOT_SUMMED

    out: dict[str, Path] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        if Path(dirpath) == root and ".git" in dirnames:
            dirnames.remove(".git")
        dirnames.sort()
        for name in filenames:
            p = Path(dirpath) / name
            rel = p.relative_to(root).as_posix()
            if rel in NOT_SUMMED or name.startswith(TMP_PREFIX) or p.is_symlink():
                continue
            out[rel] = p
    return out


def test_registry_files_are_what_os_walk_gave(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from rwkv_registry.store.ops import registry_files

    root = tmp_path / "reg"
    for rel in (
        "index.json", "SHA256SUMS", "SHA256SUMS.sig", "README.md", f"{TMP_PREFIX}x", ".git/HEAD", ".git/objects/ab",
        "b/z.pth", "b/a.pth", "b/SHA256SUMS", "b/.git/config", f"b/s/{TMP_PREFIX}y", "b/s/v1/train.json",
        "a/state/v1/s.pth", "a/miss/v1/g/adapter-final.pth", "c d/é ü.json", "Z/x", "_/x",
    ):  # fmt: skip
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(rel.encode())
    (root / "a" / "link.pth").symlink_to(root / "b" / "z.pth")
    (root / "a" / "dirlink").symlink_to(root / "b", target_is_directory=True)
    (root / "a" / "broken").symlink_to(root / "nowhere")
    (root / "empty" / "deeper").mkdir(parents=True)
    for given in (root, tmp_path / "reg" / "." / "", Path(str(root) + "/"), Path("reg"), Path("reg/b/..")):
        monkeypatch.chdir(tmp_path)
        got = registry_files(given)
        want = _registry_files_by_os_walk(given)
        assert all(isinstance(v, str) for v in got.values())  # the walk's own strings, no Path per file
        assert [(k, Path(v)) for k, v in got.items()] == list(want.items())  # same paths, same order
        assert list(got.values()) == [os.fspath(v) for v in want.values()] or given == Path(".")
    monkeypatch.chdir(root)
    got_here = registry_files(Path("."))
    assert [(k, Path(v)) for k, v in got_here.items()] == list(_registry_files_by_os_walk(Path(".")).items())
    got = registry_files(root)
    assert "b/SHA256SUMS" in got and "b/.git/config" in got and "index.json" in got
    assert not {"SHA256SUMS", "a/link.pth", "a/broken", ".git/HEAD", f"{TMP_PREFIX}x"} & set(got)
    # recover's search for temporary files walks the same way (not under .git at the top, a link to a directory
    # not entered): it removes every temporary file os.walk finds (the dirs record at the top last), nothing else
    from rwkv_registry.fs.atomic import DIRS_NAME

    def everything() -> set[str]:
        return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_symlink() or not p.is_dir()}

    temps = (f"{TMP_PREFIX}x", f"b/s/{TMP_PREFIX}y", DIRS_NAME, f"b/{DIRS_NAME}", f".git/{TMP_PREFIX}z")
    temps += (f"b/.git/{TMP_PREFIX}w", f"a/{TMP_PREFIX}v/x")
    for given in (root, Path(".")):
        for rel in temps:
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_bytes(b"")
        if not (root / "a" / f"{TMP_PREFIX}link").is_symlink():
            (root / "a" / f"{TMP_PREFIX}link").symlink_to(root / "nowhere")
        by_os_walk = set()
        for dirpath, dirnames, filenames in os.walk(given):
            if Path(dirpath) == given and ".git" in dirnames:
                dirnames.remove(".git")
            found = [Path(dirpath) / n for n in filenames if n.startswith(TMP_PREFIX)]
            by_os_walk |= {(q.relative_to(root) if q.is_absolute() else q).as_posix() for q in found}
        before = everything()
        assert recover(given) == [f"removed {len(by_os_walk)} temporary file(s) of an interrupted write"]
        assert before - everything() == by_os_walk and len(by_os_walk) == 6  # the 5 of the walk, and the record
        assert {f".git/{TMP_PREFIX}z", f"a/{TMP_PREFIX}v/x"} <= everything()


def test_a_write_walks_the_tree_once_and_a_commit_drops_the_walk_kept(
    registry: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """registry_lock's recover walks the tree and keeps the listing; compute_sums under the lock lists it instead of
    walking again, with the very files a fresh walk gives; once a transaction commits, the listing is dropped (the
    files it renamed in are not in it), and so is it when the lock is released."""
    from rwkv_registry.fs import atomic
    from rwkv_registry.store.ops import compute_sums, registry_files

    walks: list[str] = []
    real = atomic.tree_files

    def counting(root: Path, *, sort_dirs: bool = False) -> Any:
        walks.append(os.fspath(root))
        return real(root, sort_dirs=sort_dirs)

    fresh = registry_files(registry.resolve())
    monkeypatch.setattr(atomic, "tree_files", counting)
    with atomic.registry_lock(registry):
        assert len(walks) == 1  # recover's
        assert registry_files(registry.resolve()) == fresh
        sums = compute_sums(registry)
        assert len(walks) == 1
        with atomic.Transaction(registry) as txn:
            txn.write_bytes("new/file.txt", b"new")
            txn.commit()
        assert "new/file.txt" in compute_sums(registry).decode()  # walked again after the commit
        assert len(walks) == 2
    assert "new/file.txt" not in sums.decode()
    assert atomic._listings == {}
    registry_files(registry.resolve())
    assert len(walks) == 3  # outside the lock: walked
