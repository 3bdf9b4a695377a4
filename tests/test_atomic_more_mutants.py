"""More checks of registry/fs/atomic.py that a mutation audit found no test for (after test_atomic_mutants.py).

A crash test cannot see a missing fsync (the page cache survives a SIGKILL; only a power cut loses it), so the
order of fsyncs and renames is checked by recording the calls. Each test kills at least one hand-made mutant of
atomic.py (named in its docstring) that the rest of the suite let live.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from rwkv_registry.core.errors import RegistryIOError, UsageError
from rwkv_registry.fs import atomic
from rwkv_registry.fs.atomic import (
    DIRS_NAME,
    JOURNAL_NAME,
    LOCK_NAME,
    TMP_PREFIX,
    Transaction,
    atomic_write_bytes,
    recover,
    require_registry,
)


def _record_io(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """Record, in order, the fsync of a file (``("file", path)``), of a directory (``("dir", path)``) and each
    rename (``("replace", destination)``) that atomic.py makes."""
    events: list[tuple[str, str]] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd: int) -> None:
        kind = "dir" if stat.S_ISDIR(os.fstat(fd).st_mode) else "file"
        events.append((kind, os.readlink(f"/proc/self/fd/{fd}")))
        real_fsync(fd)

    def replace(
        src: str | os.PathLike[str],
        dst: str | os.PathLike[str],
        *,
        src_dir_fd: int | None = None,
        dst_dir_fd: int | None = None,
    ) -> None:
        real_replace(src, dst, src_dir_fd=src_dir_fd, dst_dir_fd=dst_dir_fd)
        where = os.fspath(dst) if dst_dir_fd is None else os.path.join(os.readlink(f"/proc/self/fd/{dst_dir_fd}"), dst)
        events.append(("replace", where))  # renames within a directory opened by atomic.open_registry_dir too

    monkeypatch.setattr(atomic.os, "fsync", fsync)
    monkeypatch.setattr(atomic.os, "replace", replace)
    return events


def test_an_atomic_write_fsyncs_the_file_before_the_rename_and_its_directory_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A03: without the file's fsync, a power cut after the rename can leave an empty file under the final name;
    A02: without the directory's, the rename itself may be lost. A04: the temporary file carries TMP_PREFIX (what
    recover removes) and lies in the target's directory."""
    if not Path("/proc/self/fd").is_dir():
        pytest.skip("needs /proc to name the descriptors")
    target = tmp_path / "index.json"
    events = _record_io(monkeypatch)
    atomic_write_bytes(target, b"{}")
    assert [e[0] for e in events] == ["file", "replace", "dir"]
    tmp = Path(events[0][1])
    assert tmp.parent == tmp_path and tmp.name.startswith(TMP_PREFIX) and tmp.name.endswith("-index.json")
    assert events[1:] == [("replace", str(target)), ("dir", str(tmp_path))]


def test_a_commit_fsyncs_each_staged_file_then_each_renamed_files_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A24: a staged file not fsynced before the journal; A26: the journal's rename not made durable (directory
    fsync) before the renames it announces; A25: a rename's directory not fsynced. The renames follow one another
    (the files read are renamed right after the last stale-read check) and each directory renamed into is fsynced
    once after them, before the journal is removed (a crash before that renames again)."""
    if not Path("/proc/self/fd").is_dir():
        pytest.skip("needs /proc to name the descriptors")
    (tmp_path / "index.json").write_text("{}")
    (tmp_path / "a").mkdir()  # no directory to create: no record of one (its own fsync)
    events = _record_io(monkeypatch)
    with Transaction(tmp_path) as txn:
        txn.write_bytes("a/b.json", b"1")
        txn.write_bytes("c.json", b"2")
        staged = [str(t) for t, _ in txn.staged]
        txn.commit()
    journal = str(tmp_path / JOURNAL_NAME)
    assert events[:2] == [("file", staged[0]), ("file", staged[1])]
    i = events.index(("replace", journal))
    assert events[i + 1 : i + 2] == [("dir", str(tmp_path))]  # _atomic_write's own fsync of the directory
    assert events[i + 2 : i + 3] == [("dir", str(tmp_path))]  # the commit's, before the first rename
    renames = events[i + 3 :]
    assert renames[:2] == [("replace", str(tmp_path / "a" / "b.json")), ("replace", str(tmp_path / "c.json"))]
    assert renames[2:4] == [("dir", str(tmp_path / "a")), ("dir", str(tmp_path))]
    assert renames[4:] == [("dir", str(tmp_path))]  # the journal's removal, last


def test_recover_fsyncs_what_it_renames_and_the_removal_of_the_journal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A23: a rename finished by recover not made durable; A29: the journal's removal not made durable (a power
    cut could bring the journal back, and the next recover would rename again over newer files)."""
    if not Path("/proc/self/fd").is_dir():
        pytest.skip("needs /proc to name the descriptors")
    (tmp_path / "sub").mkdir()
    tmp = f"sub/{TMP_PREFIX}0123456789ab-x.json"
    (tmp_path / tmp).write_text("new")
    (tmp_path / JOURNAL_NAME).write_text(json.dumps({"renames": [[tmp, "sub/x.json"]]}))
    events = _record_io(monkeypatch)
    assert recover(tmp_path) == ["completed an interrupted write (1 of 1 file(s) were pending)"]
    assert events == [
        ("replace", str(tmp_path / "sub" / "x.json")),
        ("dir", str(tmp_path / "sub")),
        ("dir", str(tmp_path)),
    ]
    assert (tmp_path / "sub" / "x.json").read_text() == "new" and not (tmp_path / JOURNAL_NAME).exists()


def test_a_journal_asking_for_a_backslash_in_a_name_is_refused(tmp_path: Path) -> None:
    """A14: no rwkv-registry write names a file with a backslash (a Windows separator: ``a\\..\\x``)."""
    tmp = f"{TMP_PREFIX}0123456789ab-x"
    (tmp_path / tmp).write_text("attacker content")
    (tmp_path / JOURNAL_NAME).write_text(json.dumps({"renames": [[tmp, "a\\..\\x"]]}))
    with pytest.raises(RegistryIOError, match="no rwkv-registry write does"):
        recover(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([tmp, JOURNAL_NAME])


def test_a_transaction_left_without_commit_leaves_nothing(tmp_path: Path) -> None:
    """A17: a transaction whose block ended without an exception and without commit() (a code path that forgot
    it) kept its staged temporary files, its directories and their record in the registry."""
    (tmp_path / "index.json").write_text("{}")
    with Transaction(tmp_path) as txn:
        txn.write_bytes("new/dir/f.json", b"1")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["index.json"]


def test_an_interrupted_init_in_a_git_clone_is_still_one(tmp_path: Path) -> None:
    """A22: ``.git`` beside the transient files of a killed ``init`` (a registry made in a fresh clone) made the
    directory 'not a registry', so recover refused to clean it; A30: ``list``/``show`` (strict) still refuse it."""
    from rwkv_registry.cli.main import main

    (tmp_path / ".git").mkdir()
    (tmp_path / LOCK_NAME).write_text("")
    (tmp_path / DIRS_NAME).write_text("")
    assert require_registry(tmp_path) == tmp_path
    with pytest.raises(UsageError, match="is not a registry"):
        require_registry(tmp_path, strict=True)
    assert main(["list", str(tmp_path)]) == 2


def test_a_link_to_a_directory_where_a_file_is_written_is_refused_as_a_link(tmp_path: Path) -> None:
    """A05: ``_refuse_directory`` without ``not final.is_symlink()`` took a symbolic link to a directory for a
    directory (an I/O error, exit 2, 'remove the directory'), where it is a link the write refuses to replace."""
    from rwkv_registry.core.errors import RefusedError

    (tmp_path / "index.json").write_text("{}")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "README.md").symlink_to("elsewhere")
    with Transaction(tmp_path) as txn, pytest.raises(RefusedError, match="is a symbolic link"):
        txn.write_bytes("README.md", b"x")
    assert (tmp_path / "README.md").is_symlink() and sorted(p.name for p in tmp_path.iterdir()) == [
        "README.md",
        "elsewhere",
        "index.json",
    ]
