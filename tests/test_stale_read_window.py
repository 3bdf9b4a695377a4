"""The stale-read window of a write (atomic.read_stamps, Transaction.check_unchanged, Transaction.commit): a file the
write read, saved by an editor at any point up to the first rename, refuses the write whole (exit 1 from the CLI),
and the edit is kept; a save of the same size within one clock tick of the file's last change, which leaves its stamp
as it was, is caught by the content's sha256; ``add`` checks before it copies the weight file."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from regtools import TINY_BASE, state_train, write_state

from rwkv_registry.cli.main import main
from rwkv_registry.core.errors import RefusedError
from rwkv_registry.fs import atomic
from rwkv_registry.fs.atomic import JOURNAL_NAME, LOCK_NAME, Transaction

EDIT = b"# saved by an editor meanwhile\n"
STAT_FIELDS = ["st_dev", "st_ino", "st_size", "st_mtime_ns", "st_ctime_ns"]


def _snapshot(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): "dir" if p.is_dir() else hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.name != LOCK_NAME
    }


def _transient(root: Path) -> list[str]:
    return sorted(p.name for p in root.rglob(".rwkv-registry*") if p.name != LOCK_NAME)


def _edit_at(monkeypatch: pytest.MonkeyPatch, point: str, path: Path, data: bytes = EDIT) -> list[str]:
    """Save ``data`` into ``path`` (as an editor would, in place) when the write reaches the fault point ``point``;
    returns the points reached, in order."""
    reached: list[str] = []

    def hook(name: str) -> None:
        reached.append(name)
        if name == point:
            path.write_bytes(data)

    monkeypatch.setattr(atomic, "fault_point", hook)
    return reached


def _two_files(root: Path) -> None:
    (root / "README.md").write_bytes(b"# read\n")
    (root / "SHA256SUMS").write_bytes(b"old sums\n")


def _write(root: Path) -> None:
    """Stage SHA256SUMS (not read) before README.md (read), as _publish stages them, and commit."""
    stamps = atomic.read_stamps(root, "README.md")
    with Transaction(root) as txn:
        txn.expect_unchanged(stamps)
        txn.write_bytes("SHA256SUMS", b"new sums\n")
        txn.write_bytes("README.md", b"# written\n")
        txn.commit()


@pytest.mark.parametrize("point", ["written-1", "staged", "journal-tmp", "journal"])
def test_an_edit_up_to_the_first_rename_refuses_the_write_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, point: str
) -> None:
    """Before, an edit saved after the check that preceded the journal (``journal-tmp``, ``journal``) was
    overwritten: the check now runs again after the journal, right before the first rename, and drops the journal."""
    _two_files(tmp_path)
    reached = _edit_at(monkeypatch, point, tmp_path / "README.md")
    with pytest.raises(RefusedError, match=r"README\.md was changed or removed after this command read it"):
        _write(tmp_path)
    assert point in reached and not any(p.startswith("rename-") for p in reached)
    assert (tmp_path / "README.md").read_bytes() == EDIT
    assert (tmp_path / "SHA256SUMS").read_bytes() == b"old sums\n"  # nothing half-written
    assert _transient(tmp_path) == []  # no temporary file, no journal


def test_the_files_read_are_renamed_first_right_after_the_last_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The journal lists (and the commit renames) README.md, which was read, before SHA256SUMS, staged first: an
    edit to a file read is seen up to its own rename, not only up to the renames of the files staged before it."""
    _two_files(tmp_path)
    plans: list[list[str]] = []

    def hook(name: str) -> None:
        if name == "journal":
            plans.append([final for _, final in json.loads((tmp_path / JOURNAL_NAME).read_bytes())["renames"]])
        if name == "rename-0":
            assert (tmp_path / "README.md").read_bytes() == b"# written\n"
            assert (tmp_path / "SHA256SUMS").read_bytes() == b"old sums\n"

    monkeypatch.setattr(atomic, "fault_point", hook)
    _write(tmp_path)
    assert plans == [["README.md", "SHA256SUMS"]]
    assert (tmp_path / "SHA256SUMS").read_bytes() == b"new sums\n"


def _same_stat(monkeypatch: pytest.MonkeyPatch, path: Path) -> None:
    """From now on ``path`` stats as it does now: a save within the same clock tick on a file system with coarse
    timestamps (the inode, size, mtime and ctime all as before)."""
    real_stat = os.stat
    frozen = real_stat(path, follow_symlinks=False)

    def fake_stat(p: Any, *args: Any, **kwargs: Any) -> Any:
        if os.fspath(p) == os.fspath(path) and kwargs.get("follow_symlinks") is False:
            return SimpleNamespace(st_mode=frozen.st_mode, **{f: getattr(frozen, f) for f in STAT_FIELDS})
        return real_stat(p, *args, **kwargs)

    monkeypatch.setattr(os, "stat", fake_stat)


@pytest.mark.parametrize("point", ["staged", "journal"])
def test_a_same_size_save_within_the_stamps_tick_is_seen_by_its_content(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, point: str
) -> None:
    _two_files(tmp_path)
    readme = tmp_path / "README.md"
    same_size = b"# edit\n"
    assert len(same_size) == len(readme.read_bytes())

    def hook(name: str) -> None:
        if name == point:
            _same_stat(monkeypatch, readme)
            readme.write_bytes(same_size)

    monkeypatch.setattr(atomic, "fault_point", hook)
    with pytest.raises(RefusedError, match=r"README\.md was changed or removed"):
        _write(tmp_path)
    monkeypatch.undo()
    assert readme.read_bytes() == same_size
    assert (tmp_path / "SHA256SUMS").read_bytes() == b"old sums\n"
    assert _transient(tmp_path) == []


def test_the_content_is_hashed_only_when_the_stamp_is_within_a_tick_of_the_last_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "README.md").write_bytes(b"# read\n")
    fresh = atomic.read_stamps(tmp_path, "README.md")["README.md"]
    assert fresh is not None and fresh.sha256 == hashlib.sha256(b"# read\n").hexdigest()
    st = os.stat(tmp_path / "README.md")
    later = max(st.st_mtime_ns, st.st_ctime_ns) + atomic.COARSE_NS
    monkeypatch.setattr(atomic.time, "time_ns", lambda: later)
    old = atomic.read_stamps(tmp_path, "README.md")["README.md"]
    assert old == atomic.Seen(atomic.file_stamp(tmp_path / "README.md"), None)
    monkeypatch.setattr(atomic.time, "time_ns", lambda: later - 1)
    assert atomic.read_stamps(tmp_path, "README.md")["README.md"] == fresh


def test_an_unchanged_file_read_lets_the_write_through(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _two_files(tmp_path)
    reached = _edit_at(monkeypatch, "never", tmp_path / "README.md")
    _write(tmp_path)
    assert (tmp_path / "README.md").read_bytes() == b"# written\n"
    assert (tmp_path / "SHA256SUMS").read_bytes() == b"new sums\n"
    assert "rename-1" in reached and _transient(tmp_path) == []


# --- the command line: exit 1, the edit kept, nothing written ---------------------------------------------------


@pytest.fixture
def add_args(reg: Path, tmp_path: Path) -> list[str]:
    state = write_state(tmp_path / "in" / "s9.pth", seed=9)
    train = tmp_path / "in" / "train.json"
    train.write_text(json.dumps(state_train("v9")))
    return ["add", str(reg), str(state), "--base", TINY_BASE, "--data-version", "v9", "--train", str(train)]


@pytest.mark.parametrize("point", ["written-0", "staged", "journal-tmp", "journal"])
@pytest.mark.parametrize("edited", ["README.md", "index.json"])
def test_add_refuses_with_exit_1_when_a_file_it_read_is_saved_meanwhile(
    reg: Path,
    add_args: list[str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    point: str,
    edited: str,
) -> None:
    path = reg / edited
    data = path.read_bytes() + (b"\nSaved by hand.\n" if edited == "README.md" else b"\n")
    before = _snapshot(reg)
    _edit_at(monkeypatch, point, path, data)
    assert main(add_args) == 1
    err = " ".join(capsys.readouterr().err.split())
    assert "Traceback" not in err
    assert f"{path} was changed or removed after this command read it" in err
    assert "Run the command again" in err
    assert path.read_bytes() == data
    assert _snapshot(reg) == {**before, edited: hashlib.sha256(data).hexdigest()}  # the weight file not copied
    assert _transient(reg) == []


def test_add_checks_before_it_copies_the_weight_file(
    reg: Path, add_args: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """An edit saved while add prepared the write (here: while it rendered README.md) stops it before the weight
    file, possibly gigabytes, is copied, not after."""
    from rwkv_registry.store import ops

    readme = reg / "README.md"
    edited = readme.read_bytes() + b"\nSaved by hand.\n"
    real = ops._readme_for
    copies: list[str] = []

    def render_then_edit(*args: Any, **kwargs: Any) -> bytes:
        out = real(*args, **kwargs)
        readme.write_bytes(edited)
        return out

    real_copy = Transaction.copy_file

    def copy_file(self: Transaction, rel: str, src: str | os.PathLike[str]) -> None:
        copies.append(rel)
        real_copy(self, rel, src)

    monkeypatch.setattr(ops, "_readme_for", render_then_edit)
    monkeypatch.setattr(Transaction, "copy_file", copy_file)
    assert main(add_args) == 1
    assert "README.md was changed or removed" in " ".join(capsys.readouterr().err.split())
    assert copies == []
    assert readme.read_bytes() == edited
    assert _transient(reg) == []


@pytest.mark.parametrize("command", ["readme", "add-base"])
def test_readme_and_add_base_refuse_an_edit_saved_after_the_journal(
    reg: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    readme = reg / "README.md"
    text = readme.read_bytes()
    if command == "readme":  # something for readme to write: its generated sections emptied
        start = text.index(b"<!-- rwkv-registry:sections:begin -->") + len(b"<!-- rwkv-registry:sections:begin -->")
        text = text[:start] + text[text.index(b"<!-- rwkv-registry:sections:end -->") :]
        readme.write_bytes(text)
        argv = ["readme", str(reg)]
    else:
        argv = ["add-base", str(reg), "--name", "rwkv7-other-20270101-ctx4096", "--sha256", "c" * 64]
        argv += ["--arch", "n_layer=2,n_embd=128,vocab_size=65536,ffn_size=512", "--source", "BlinkDL/rwkv7-g1"]
    before = _snapshot(reg)
    edited = text + b"\nSaved by hand.\n"
    _edit_at(monkeypatch, "journal", readme, edited)
    assert main(argv) == 1
    assert "README.md was changed or removed" in " ".join(capsys.readouterr().err.split())
    assert readme.read_bytes() == edited
    assert _snapshot(reg) == {**before, "README.md": hashlib.sha256(edited).hexdigest()}
    assert _transient(reg) == []
