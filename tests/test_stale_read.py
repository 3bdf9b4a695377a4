"""A file a write rewrites from the copy it read (README.md, index.json, a train.json being merged) and that an
editor saves meanwhile (editors take no lock): the write is refused just before its journal, nothing is replaced,
its temporary files are removed, and the editor's bytes are kept.

The editor's save is made by a hook on the fault point ``staged`` of :meth:`Transaction.commit`, that is after the
command read the file and staged its new content, before anything is renamed."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from regtools import TINY_ARCH, TINY_BASE, edit_index, state_train, write_state

from rwkv_registry.cli.main import main
from rwkv_registry.core.errors import RefusedError
from rwkv_registry.fs import atomic
from rwkv_registry.store.ops import add_base, add_entry, update_index, write_readme


def _snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _save_at_staged(monkeypatch: pytest.MonkeyPatch, save: Callable[[], None]) -> list[str]:
    """Run ``save`` (an editor saving a file) once, when a commit reaches its fault point ``staged``."""
    seen: list[str] = []
    real = atomic.fault_point

    def hook(name: str) -> None:
        if name == "staged" and not seen:
            seen.append(name)
            save()
        real(name)

    monkeypatch.setattr(atomic, "fault_point", hook)
    return seen


def _in_place(path: Path, text: bytes) -> Callable[[], None]:
    """A save that rewrites the file in place (same inode) with new bytes."""
    return lambda: path.write_bytes(text)


def _readme_needs_update(reg: Path) -> None:
    edit_index(reg, lambda i: i["entries"][0].update(description="a new description the README does not show yet"))


def _assert_refused_and_kept(reg: Path, before: dict[str, bytes], rel: str, err: RefusedError) -> None:
    assert rel in err.message and "after this command read it" in err.message
    assert "again" in err.hint
    assert err.path == rel
    after = _snapshot(reg)
    # ``before``: the registry as it was, with the editor's save: nothing replaced, no temporary file left behind
    assert sorted(after) == sorted(before)
    assert [k for k in after if after[k] != before[k]] == []
    assert not (reg / atomic.JOURNAL_NAME).exists()


def test_readme_refuses_when_readme_md_is_saved_between_read_and_replace(
    reg: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """It was lost: `readme` read README.md once, rendered the tables into that copy and renamed it over the
    file, so the publisher's edit saved in between vanished without a word."""
    _readme_needs_update(reg)
    edited = (reg / "README.md").read_bytes() + b"\nA paragraph the publisher just saved.\n"
    seen = _save_at_staged(monkeypatch, _in_place(reg / "README.md", edited))
    before = {**_snapshot(reg), "README.md": edited}
    with pytest.raises(RefusedError) as info:
        write_readme(reg)
    assert seen == ["staged"]
    _assert_refused_and_kept(reg, before, "README.md", info.value)
    assert (reg / "README.md").read_bytes() == edited
    monkeypatch.undo()
    assert write_readme(reg) == "updated"  # run again: it reads the edit and keeps it
    assert b"A paragraph the publisher just saved." in (reg / "README.md").read_bytes()


def test_the_cli_says_which_file_and_to_run_again(
    reg: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _readme_needs_update(reg)
    readme = reg / "README.md"
    _save_at_staged(monkeypatch, _in_place(readme, readme.read_bytes() + b"\nedit\n"))
    assert main(["readme", str(reg)]) == 1
    err = capsys.readouterr().err
    assert "README.md" in err and "again" in err and "Traceback" not in err


@pytest.mark.parametrize("how", ["renamed-over, same size and mtime", "in place, same size and mtime"])
def test_a_save_that_keeps_size_and_mtime_is_still_seen(reg: Path, monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    """An editor that renames a new file over README.md (a new inode), or one that rewrites it in place and sets
    the old mtime back: same size, same mtime, still a change (inode; ctime, which nobody can set back)."""
    _readme_needs_update(reg)
    readme = reg / "README.md"
    old = readme.read_bytes()
    edited = old.replace(b"#", b"=", 1)
    assert len(edited) == len(old) and edited != old
    st = readme.stat()

    def save() -> None:
        if how.startswith("renamed"):
            tmp = reg / "README.md.swp"
            tmp.write_bytes(edited)
            os.utime(tmp, ns=(st.st_atime_ns, st.st_mtime_ns))
            os.replace(tmp, readme)
        else:
            readme.write_bytes(edited)
            os.utime(readme, ns=(st.st_atime_ns, st.st_mtime_ns))

    _save_at_staged(monkeypatch, save)
    with pytest.raises(RefusedError, match=r"README\.md"):
        write_readme(reg)
    assert readme.read_bytes() == edited


def test_a_readme_md_created_meanwhile_is_not_overwritten(reg: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No README.md when `readme` looked: one the publisher saves before the rename is theirs, not replaced."""
    (reg / "README.md").unlink()
    mine = b"# my own README, saved just now\n"
    _save_at_staged(monkeypatch, _in_place(reg / "README.md", mine))
    with pytest.raises(RefusedError, match=r"README\.md was created after this command read it"):
        write_readme(reg)
    assert (reg / "README.md").read_bytes() == mine


def test_add_refuses_when_index_json_is_edited_meanwhile(
    reg: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Scores are edited in index.json by hand: an edit saved while `add` copied and hashed the weights was lost
    (add rewrote index.json from the copy it read at its start)."""
    index = reg / "index.json"
    edited = index.read_bytes().replace(b'"known_issues": []', b'"known_issues": ["edited by hand"]', 1)
    assert edited != index.read_bytes()
    _save_at_staged(monkeypatch, _in_place(index, edited))
    before = {**_snapshot(reg), "index.json": edited}
    src = write_state(tmp_path / "src2" / "s2.pth", seed=7)
    with pytest.raises(RefusedError) as info:
        add_entry(reg, src, base=TINY_BASE, data_version="v1", train=state_train())
    _assert_refused_and_kept(reg, before, "index.json", info.value)


def test_add_refuses_when_the_train_json_it_merges_into_is_edited_meanwhile(
    reg: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A new MiSS run is merged into the train.json of its data version, read once: an edit of that file saved
    before the rename was lost. (A fresh data version has no train.json yet; the registry's v2 one is merged.)"""
    from regtools import miss_train, write_miss

    train = reg / TINY_BASE / "miss" / "v3" / "train.json"
    src = tmp_path / "src3" / "r4-a" / "adapter-final.pth"
    write_miss(src, seed=5)
    add_entry(reg, src, base=TINY_BASE, data_version="v3", train=miss_train("v3"), group="r4-a")
    edited = train.read_bytes() + b"\n"
    _save_at_staged(monkeypatch, _in_place(train, edited))
    src_b = tmp_path / "src3" / "r4-b" / "adapter-final.pth"
    write_miss(src_b, seed=6)
    rel = f"{TINY_BASE}/miss/v3/train.json"
    before = {**_snapshot(reg), rel: edited}
    with pytest.raises(RefusedError) as info:
        add_entry(reg, src_b, base=TINY_BASE, data_version="v3", train=miss_train("v3"), group="r4-b")
    _assert_refused_and_kept(reg, before, rel, info.value)


@pytest.mark.parametrize("rel", ["README.md", "index.json"])
def test_add_base_and_update_index_refuse_a_file_saved_meanwhile(
    reg: Path, monkeypatch: pytest.MonkeyPatch, rel: str
) -> None:
    path = reg / rel
    edited = path.read_bytes() + b"\n"
    _save_at_staged(monkeypatch, _in_place(path, edited))
    before = {**_snapshot(reg), rel: edited}
    with pytest.raises(RefusedError) as info:
        add_base(reg, name="rwkv7-tiny-20270101-ctx4096", source="o/r", sha256="e" * 64, size=1, arch=dict(TINY_ARCH))
    _assert_refused_and_kept(reg, before, rel, info.value)
    edited2 = edited + b"\n"
    _save_at_staged(monkeypatch, _in_place(path, edited2))
    before[rel] = edited2
    with pytest.raises(RefusedError) as info:
        update_index(reg, lambda i: i.update(known_issues=["noted"]))
    _assert_refused_and_kept(reg, before, rel, info.value)


def test_an_unchanged_file_lets_the_write_through(reg: Path) -> None:
    """The passing case: nobody edits, the write goes through as before."""
    _readme_needs_update(reg)
    assert write_readme(reg) == "updated"
    assert b"a new description the README does not show yet" in (reg / "README.md").read_bytes()


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
