"""A third mutation audit of registry/fs/atomic.py: locking, journal recovery, stamps and temporary-file cleanup.

Hand-made mutants (B-numbered, not those of test_atomic_mutants.py / test_atomic_more_mutants.py), run against
test_atomic_mutants.py, test_atomic_more_mutants.py, test_crash.py, test_stale_read.py, test_stale_read_mutants.py,
test_sums_atomic.py and the lock, journal and Ctrl-C tests of test_cli_robustness.py:

- B01 ``st_size > MAX_JOURNAL`` -> ``>=``: survived; killed here
- B05 a rolled-forward recover removes the empty directories of the write: survived; killed here (only
  ``Transaction.mkdir`` leaves a created directory empty, and no command calls it today)
- B08 _temp_files keeps DIRS_NAME (the record removed with the temporary files, before the directories it lists):
  killed (test_sums_atomic.py)
- B13 the refusal always says "changed or removed", never "created": killed (test_stale_read.py)
- B16 registry_lock never releases the lock: equivalent under CPython (filelock releases in ``__del__`` when the
  generator's frame goes, and contextlib drops that frame from the traceback of an error raised in the block)
- B17 recovery messages logged even when ``quiet``: killed (test_crash.py)
- B20 registry_lock without ``except OSError`` (lock file not creatable): survived; killed here
- B21 a Ctrl-C held back during a commit dropped, not raised after it: killed (test_cli_robustness.py)
- B24 rollback removes created directories parents first: killed (test_atomic_more_mutants.py), and here
- B26 created directories not noted for the rollback: killed (test_atomic_more_mutants.py), and here
- B30 committed_count not counting: killed (test_cli_robustness.py)
- B31 _atomic_write wraps its own RegistryIOError again: survived; killed here
- B34 recover renames onto a directory without _refuse_directory: survived; killed here
- B37 read_stamps stamps ``rel`` against the working directory: killed (test_stale_read.py)
- B40 tree_files skips ``.git`` at every depth: killed (test_sums_atomic.py)
- B42 _record_dir does not mark the record as this transaction's: killed (test_atomic_more_mutants.py), and here
"""

from __future__ import annotations

import errno
import json
from pathlib import Path

import pytest

from rwkv_registry.core.errors import RegistryIOError
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
)


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
