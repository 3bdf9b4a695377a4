"""Mutation audit of the stale-read check (atomic.file_stamp, read_stamps, Transaction.commit's re-check): each
field of the stamp on its own refuses the write.

On a real file system a save changes the ctime, so the size, mtime, inode and device fields are seen only when the
ctime does not move: a save within the same clock tick as the stamp (Linux stamps files with a coarse clock, a few
ms), or a file system with coarse timestamps. That cannot be timed reliably in a test, so the file's stat is played
here: identical but for one field, as such a save leaves it."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from rwkv_registry.core.errors import RefusedError
from rwkv_registry.fs import atomic

FIELDS = ["st_dev", "st_ino", "st_size", "st_mtime_ns", "st_ctime_ns"]


def _commit_with_stat_changed(root: Path, field: str | None, monkeypatch: pytest.MonkeyPatch) -> None:
    """Stamp README.md, stage a new README.md, then commit while its stat differs from the stamp in ``field``
    only (None: in nothing)."""
    readme = root / "README.md"
    readme.write_bytes(b"# read\n")
    stamps = atomic.read_stamps(root, "README.md")
    real_stat = os.stat
    frozen = real_stat(readme, follow_symlinks=False)

    def fake_stat(path: Any, *args: Any, **kwargs: Any) -> Any:
        if os.fspath(path) == os.fspath(readme) and kwargs.get("follow_symlinks") is False:
            values = {f: getattr(frozen, f) for f in FIELDS}
            if field is not None:
                values[field] += 1
            return SimpleNamespace(**values)
        return real_stat(path, *args, **kwargs)

    def hook(name: str) -> None:
        if name == "staged":
            monkeypatch.setattr(os, "stat", fake_stat)

    monkeypatch.setattr(atomic, "fault_point", hook)
    try:
        with atomic.Transaction(root) as txn:
            txn.write_bytes("README.md", b"# written\n")
            txn.expect_unchanged(stamps)
            txn.commit()
    finally:
        monkeypatch.setattr(os, "stat", real_stat)


@pytest.mark.parametrize("field", FIELDS)
def test_each_field_of_the_stamp_alone_refuses_the_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, field: str
) -> None:
    with pytest.raises(RefusedError, match=r"README\.md was changed or removed after this command read it"):
        _commit_with_stat_changed(tmp_path, field, monkeypatch)
    assert (tmp_path / "README.md").read_bytes() == b"# read\n"
    assert [p.name for p in tmp_path.iterdir()] == ["README.md"]  # no temporary file, no journal


def test_the_same_stat_lets_the_write_through(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _commit_with_stat_changed(tmp_path, None, monkeypatch)
    assert (tmp_path / "README.md").read_bytes() == b"# written\n"


def test_the_stamp_is_of_the_link_itself_not_its_target(tmp_path: Path) -> None:
    """A link is stamped as a link: its target changing is not the file read changing, and a link put in place of
    the file is a change even when it points at a file with the very same stat."""
    target = tmp_path / "target"
    target.write_bytes(b"x")
    link = tmp_path / "README.md"
    link.symlink_to(target)
    st = os.lstat(link)
    assert atomic.file_stamp(link) == (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    assert atomic.file_stamp(link) != atomic.file_stamp(target)


def test_a_path_below_a_file_is_absent_not_an_error(tmp_path: Path) -> None:
    (tmp_path / "f").write_bytes(b"")
    assert atomic.file_stamp(tmp_path / "f" / "README.md") is None
    assert atomic.read_stamps(tmp_path, "f/README.md", "missing") == {"f/README.md": None, "missing": None}


def test_stamps_given_in_two_calls_are_all_checked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """expect_unchanged adds to what was expected before: the file of the first call is still checked."""
    (tmp_path / "index.json").write_bytes(b"{}")
    (tmp_path / "README.md").write_bytes(b"# read\n")
    first = atomic.read_stamps(tmp_path, "index.json")
    second = atomic.read_stamps(tmp_path, "README.md")

    def hook(name: str) -> None:
        if name == "staged":
            (tmp_path / "index.json").write_bytes(b'{"edited": true}')

    monkeypatch.setattr(atomic, "fault_point", hook)
    with pytest.raises(RefusedError, match=r"index\.json was changed"), atomic.Transaction(tmp_path) as txn:
        txn.write_bytes("README.md", b"# written\n")
        txn.expect_unchanged(first)
        txn.expect_unchanged(second)
        txn.commit()
    assert (tmp_path / "README.md").read_bytes() == b"# read\n"


def test_a_stat_that_fails_otherwise_is_an_error_not_an_absent_file(tmp_path: Path) -> None:
    """Only a missing file (or a file where a directory was expected) is 'absent': any other failure to stat it
    (here a name too long) is an error naming the path, never taken as 'no file' (which would let a write
    proceed over a file the command could not look at)."""
    from rwkv_registry.core.errors import RegistryIOError

    long_name = "n" * 300
    with pytest.raises(RegistryIOError, match="cannot stat") as info:
        atomic.file_stamp(tmp_path / long_name)
    assert long_name in str(info.value.path)
