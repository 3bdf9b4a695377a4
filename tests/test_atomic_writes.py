"""Checks of registry/fs/atomic.py that a mutation audit found no test for.

Each test kills at least one hand-made mutant of atomic.py that the rest of the suite let live
(named in its docstring): a write that fails or is interrupted must leave nothing behind and the
registry as it was.
"""

from __future__ import annotations

import errno
import json
import os
import stat
from pathlib import Path
from typing import ClassVar

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
    registry_lock,
    require_registry,
)


def _temps(d: Path) -> list[str]:
    return sorted(p.name for p in d.iterdir() if p.name.startswith(TMP_PREFIX))


@pytest.mark.parametrize("error", [OSError(errno.EXDEV, "Invalid cross-device link"), KeyboardInterrupt()])
def test_a_failed_or_interrupted_atomic_write_leaves_no_temporary_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, error: BaseException
) -> None:
    """A03: without the unlink of _atomic_write's except branch, the temporary file stayed beside the target."""
    target = tmp_path / "index.json"
    target.write_bytes(b"old")

    def fail(src: object, dst: object) -> None:
        raise error

    monkeypatch.setattr(atomic.os, "replace", fail)
    with pytest.raises(RegistryIOError if isinstance(error, OSError) else KeyboardInterrupt) as info:
        atomic_write_bytes(target, b"new")
    if isinstance(error, OSError):
        assert str(target) in info.value.message and "Invalid cross-device link" in info.value.message
    assert _temps(tmp_path) == []
    assert target.read_bytes() == b"old"


def test_an_index_json_alone_above_is_no_registry_for_init(tmp_path: Path) -> None:
    """A06: registry_around took any directory holding an index.json for a registry, so init refused a
    directory inside a project whose own index.json (a web page's, say) has neither SHA256SUMS nor README.md
    beside it; with one of them beside it, it is a registry and init still refuses."""
    from rwkv_registry.cli.main import main
    from rwkv_registry.core.errors import UsageError
    from rwkv_registry.store.ops import init_registry

    (tmp_path / "index.json").write_text("{}")
    main_rc = main(["init", str(tmp_path / "weights")])
    assert main_rc == 0 and (tmp_path / "weights" / "index.json").is_file()
    (tmp_path / "README.md").write_text("# a registry\n")
    with pytest.raises(UsageError, match="lies inside the registry at"):
        init_registry(tmp_path / "more")
    assert not (tmp_path / "more").exists()


def test_an_index_json_linking_to_the_registry_itself_is_not_called_outside(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A07: index_link_outside without its ``target == top`` case took a link to the registry's own directory
    for one leaving it, and readme refused it as LAY005 ('outside the registry'), which it is not."""
    from rwkv_registry.cli.main import main
    from rwkv_registry.fs.atomic import index_link_outside

    root = tmp_path / "r"
    assert main(["init", str(root)]) == 0
    (root / "index.json").unlink()
    (root / "index.json").symlink_to(".")
    assert index_link_outside(root) is None
    capsys.readouterr()
    assert main(["readme", str(root)]) == 1
    err = capsys.readouterr().err
    assert "index.json: is not a regular file" in err and "LAY005" not in err


@pytest.mark.parametrize("names", [[], ["notes.txt", ".rwkv-registry.lock"]], ids=["empty", "a-lock-among-files"])
def test_only_a_directory_of_nothing_but_transient_files_passes_for_an_interrupted_init(
    tmp_path: Path, names: list[str]
) -> None:
    """A10: an empty directory, A11: one holding any transient file among others, taken for a killed init (so
    a write command would take its lock and recover there) instead of 'not a registry'."""
    from rwkv_registry.core.errors import UsageError
    from rwkv_registry.fs.atomic import require_registry

    for name in names:
        (tmp_path / name).write_text("")
    with pytest.raises(UsageError, match="is not a registry"):
        require_registry(tmp_path)
    (tmp_path / "notes.txt").unlink(missing_ok=True)
    if names:
        assert require_registry(tmp_path) == tmp_path  # the lock file alone: a killed init, recover cleans it


class _BusyLock:
    """A FileLock always held by someone else: records each acquire's timeout and times out."""

    asked: ClassVar[list[float]] = []

    def __init__(self, path: str, timeout: float) -> None:
        self.path = path

    def acquire(self, timeout: float) -> None:
        import filelock

        self.asked.append(timeout)
        raise filelock.Timeout(self.path)

    def release(self) -> None:
        raise AssertionError("never acquired")


@pytest.mark.parametrize(
    ("timeout", "tty", "asked", "notice"),
    [(30.0, False, [5.0, 25.0], True), (5.0, False, [5.0], False), (3.0, True, [1.0, 2.0], True)],
)
def test_a_blocked_writer_waits_its_timeout_in_all_saying_so_once_past_the_notice(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    timeout: float,
    tty: bool,
    asked: list[float],
    notice: bool,
) -> None:
    """A12: timeout < notice (for <=) said 'waiting' for a wait that ended right there; A13: the second acquire
    waited the whole timeout again (notice + timeout in all)."""
    import filelock

    from rwkv_registry.core.errors import LockedError

    (tmp_path / "index.json").write_text("{}")
    monkeypatch.setattr(filelock, "FileLock", _BusyLock)
    monkeypatch.setattr(atomic, "_stderr_is_terminal", lambda: tty)
    monkeypatch.setattr(_BusyLock, "asked", [])
    with (
        pytest.raises(LockedError, match=f"lock .* held for {timeout:g} s"),
        atomic.registry_lock(tmp_path, timeout=timeout),
    ):
        pass
    assert _BusyLock.asked == asked
    assert ("waiting for the lock held by another rwkv-registry command" in capsys.readouterr().err) is notice


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


def _names(d: Path) -> list[str]:
    return sorted(p.relative_to(d).as_posix() for p in d.rglob("*"))


def test_a_journal_of_exactly_the_size_limit_is_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """B01: MAX_JOURNAL bytes is the largest journal recover reads (one byte more is refused unread)."""
    monkeypatch.setattr(atomic, "MAX_JOURNAL", 4096)
    (tmp_path / f"{TMP_PREFIX}x-a.json").write_text("new")
    plan = json.dumps({"renames": [[f"{TMP_PREFIX}x-a.json", "a.json"]]}).encode()
    (tmp_path / JOURNAL_NAME).write_bytes(plan + b" " * (4096 - len(plan)))
    assert recover(tmp_path) == ["completed an interrupted write (1 of 1 file(s) were pending)"]
    assert _names(tmp_path) == ["a.json"] and (tmp_path / "a.json").read_text() == "new"
    (tmp_path / JOURNAL_NAME).write_bytes(plan + b" " * (4097 - len(plan)))
    with pytest.raises(RegistryIOError, match="4097 bytes, more than a journal ever holds"):
        recover(tmp_path)


def test_a_write_finished_by_recover_keeps_the_directories_it_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """B05: after the journal the write rolls forward, directories included: recover must not take the directory
    record for one of a write to undo, and remove the (still empty) directory the transaction made."""
    (tmp_path / "index.json").write_text("{}")
    real = atomic.os.replace

    def fail_on_index(src: str, dst: str, **dir_fds: int) -> None:
        if str(dst).endswith("index.json"):
            raise OSError(errno.EIO, "Input/output error")
        real(src, dst, **dir_fds)

    txn = Transaction(tmp_path)
    txn.mkdir("base/state")
    txn.write_bytes("index.json", b'{"new": 1}')
    monkeypatch.setattr(atomic.os, "replace", fail_on_index)
    with pytest.raises(RegistryIOError, match="cannot finish the write"), txn:
        txn.commit()
    monkeypatch.setattr(atomic.os, "replace", real)
    assert recover(tmp_path) == [
        "completed an interrupted write (1 of 1 file(s) were pending)",
        "removed 1 temporary file(s) of an interrupted write",  # the directory record
    ]
    assert _names(tmp_path) == ["base", "base/state", "index.json"]
    assert (tmp_path / "index.json").read_bytes() == b'{"new": 1}'


def test_a_lock_file_that_cannot_be_created_is_an_io_error_naming_it(tmp_path: Path) -> None:
    """B20: what stops the lock file (here a directory in its place; a read-only file system alike) is a
    RegistryIOError with a hint, not an OSError traceback."""
    (tmp_path / "index.json").write_text("{}")
    (tmp_path / LOCK_NAME).mkdir()
    with pytest.raises(RegistryIOError) as info, registry_lock(tmp_path, timeout=0.1):
        pass
    assert info.value.message == f"cannot create the lock file {tmp_path / LOCK_NAME}: Is a directory"
    assert "must be writable" in info.value.hint


def test_a_failed_write_removes_every_directory_it_made(tmp_path: Path) -> None:
    """B24: rollback removes the created directories deepest first (parents first, each but the deepest is not
    empty yet and stays); B26: every one of them is noted before it is made."""
    (tmp_path / "index.json").write_text("{}")
    with pytest.raises(RuntimeError, match="stop"), Transaction(tmp_path) as txn:
        txn.write_bytes("base/state/v1/train.json", b"{}")
        raise RuntimeError("stop")
    assert _names(tmp_path) == ["index.json"]


def test_a_directory_in_the_way_of_an_atomic_write_is_said_once(tmp_path: Path) -> None:
    """B31: _atomic_write's own refusal is raised as it is, not wrapped in a second "cannot write" (whose reason
    would be the first message again)."""
    (tmp_path / "index.json").mkdir()
    with pytest.raises(RegistryIOError) as info:
        atomic_write_bytes(tmp_path / "index.json", b"{}")
    assert info.value.message == f"cannot write {tmp_path / 'index.json'}: it is a directory, where a file belongs"
    assert info.value.hint.startswith("Remove or rename the directory")
    assert _names(tmp_path) == ["index.json"]


def test_recover_names_a_directory_in_the_way_of_a_pending_rename(tmp_path: Path) -> None:
    """B34: a directory where the journal's file goes is refused as such (what to remove), the journal kept."""
    (tmp_path / f"{TMP_PREFIX}x-LICENSE").write_text("MIT\n")
    (tmp_path / "LICENSE").mkdir()
    (tmp_path / JOURNAL_NAME).write_text(json.dumps({"renames": [[f"{TMP_PREFIX}x-LICENSE", "LICENSE"]]}))
    with pytest.raises(RegistryIOError) as info:
        recover(tmp_path)
    assert info.value.message == (
        f"{tmp_path}: cannot finish an interrupted write (0 of 1 file(s) done, the journal is kept): "
        f"cannot write {tmp_path / 'LICENSE'}: it is a directory, where a file belongs"
    )
    assert (tmp_path / JOURNAL_NAME).exists() and (tmp_path / f"{TMP_PREFIX}x-LICENSE").exists()


def test_a_failed_write_that_made_directories_leaves_no_record(tmp_path: Path) -> None:
    """B42: the directory record of a rolled-back write is removed with the directories it lists."""
    (tmp_path / "index.json").write_text("{}")
    with pytest.raises(RuntimeError), Transaction(tmp_path) as txn:
        txn.write_bytes("base/x.json", b"{}")
        assert (tmp_path / DIRS_NAME).exists()
        raise RuntimeError("stop")
    assert _names(tmp_path) == ["index.json"]
