"""Writes never leave the registry: a directory on the way that is a symbolic link (to a directory outside, or to
another one inside), a link swapped in between the check and the write, a ``..`` in a path, a lock file that is a
link. Every write goes through atomic.Transaction (and recover through the same opener), so each case is refused
before anything is written, whatever the command (docs/security.md, "Writes stay in the registry")."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from regtools import TINY_BASE, state_train, write_state

from rwkv_registry.cli.main import main
from rwkv_registry.core.errors import RefusedError
from rwkv_registry.fs import atomic
from rwkv_registry.fs.atomic import JOURNAL_NAME, LOCK_NAME, TMP_PREFIX, Transaction, recover

NEW_BASE = "rwkv7-other-20260301-ctx4096"
ADD_BASE = ["--name", NEW_BASE, "--sha256", "7" * 64, "--size", "1234", "--source", "BlinkDL/rwkv7-g1",
            "--arch", "n_layer=2,n_embd=128,vocab_size=65536,ffn_size=512"]  # fmt: skip


def _tree(root: Path) -> dict[str, str]:
    """Every entry under ``root`` (links as their target, files as their bytes), the lock file aside."""
    out: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            rel = p.relative_to(root).as_posix()
            if p.is_symlink():
                out[rel] = "-> " + os.readlink(p)
            elif p.is_file() and name != LOCK_NAME:
                out[rel] = p.read_bytes().hex()
            elif p.is_dir():
                out[rel] = "/"
    return out


def _add_argv(reg: Path, tmp_path: Path, version: str) -> list[str]:
    src = write_state(tmp_path / "in" / "s9.pth", seed=9)
    train = tmp_path / "train.json"
    train.write_text(json.dumps(state_train(version)))
    return ["add", str(reg), str(src), "--base", TINY_BASE, "--data-version", version, "--train", str(train)]


def _outside(tmp_path: Path) -> Path:
    out = tmp_path / "outside"
    out.mkdir()
    (out / "mine.txt").write_text("the user's own file\n")
    return out


@pytest.mark.parametrize(
    ("link", "version"),
    [
        (f"{TINY_BASE}/state/v9", "v9"),  # a new data version, its directory a link out
        (f"{TINY_BASE}/state/v1", "v1"),  # an existing one, moved out and linked back
        (f"{TINY_BASE}/state", "v9"),  # the method directory
        (TINY_BASE, "v9"),  # the base directory itself
    ],
)
def test_add_never_writes_through_a_directory_that_links_out(
    reg: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], link: str, version: str
) -> None:
    outside = _outside(tmp_path)
    if (reg / link).exists():
        shutil.copytree(reg / link, outside, dirs_exist_ok=True)
        shutil.rmtree(reg / link)
    (reg / link).symlink_to(outside)
    argv = _add_argv(reg, tmp_path, version)
    before, before_out = _tree(reg), _tree(outside)
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert f"{reg / link} is a symbolic link (to {outside}), leaving the registry (LAY005)" in err
    assert "nothing was written" in err and "hint: Replace the link with a real directory" in err
    assert _tree(outside) == before_out  # no weight file, no train.json, no temporary file out there
    assert _tree(reg) == before


def test_add_never_writes_through_a_link_to_another_directory_of_the_registry(
    reg: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A link that stays inside (state/v9 -> v1) is refused too: the files would land under another name."""
    (reg / TINY_BASE / "state" / "v9").symlink_to("v1")
    before = _tree(reg)
    assert main(_add_argv(reg, tmp_path, "v9")) == 1
    err = capsys.readouterr().err
    assert f"{reg / TINY_BASE / 'state' / 'v9'} is a symbolic link (to v1): nothing was written" in err
    assert "LAY005" not in err
    assert _tree(reg) == before


def test_a_link_swapped_in_after_the_check_is_not_followed(
    reg: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The new version directory is made and checked, then (at the crash-test point right after it is made) moved
    away and replaced by a link out, before anything is written in it: the files go to the directory checked (now
    under its new name, inside the registry), never out."""
    outside = _outside(tmp_path)
    before_out = _tree(outside)
    made = reg / TINY_BASE / "state" / "v9"
    real_fault_point = atomic.fault_point

    def swap(name: str) -> None:
        if name == "mkdir-0":
            made.rename(made.with_name("v9-moved"))
            made.symlink_to(outside)
        real_fault_point(name)

    monkeypatch.setattr(atomic, "fault_point", swap)
    main(_add_argv(reg, tmp_path, "v9"))
    assert _tree(outside) == before_out
    assert sorted(p.name for p in made.with_name("v9-moved").iterdir()) == ["s9.pth", "train.json"]


@pytest.mark.parametrize("rel", ["../escaped.json", "a/../../escaped.json", "/tmp/escaped.json", "a//b.json", "."])
def test_a_path_that_is_not_plainly_inside_is_refused(tmp_path: Path, rel: str) -> None:
    root = tmp_path / "reg"
    root.mkdir()
    (root / "index.json").write_text("{}")
    with pytest.raises(RefusedError, match="is not a plain path inside the registry"), Transaction(root) as txn:
        txn.write_bytes(rel, b"{}")
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["index.json", "reg"]


@pytest.mark.parametrize("command", ["sums", "readme", "add-base"])
def test_a_lock_file_that_is_a_link_is_never_opened(
    reg: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    """The lock library opens its file with O_TRUNC: through a link it would empty the user's file."""
    outside = _outside(tmp_path)
    (reg / LOCK_NAME).unlink(missing_ok=True)  # left by the writes that built the registry
    (reg / LOCK_NAME).symlink_to(outside / "mine.txt")
    argv = [command, str(reg), *(ADD_BASE if command == "add-base" else [])]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert f"{reg / LOCK_NAME} is a symbolic link (to {outside / 'mine.txt'}), leaving the registry (LAY005)" in err
    assert "hint: Remove the link" in err
    assert (outside / "mine.txt").read_text() == "the user's own file\n"


def test_recover_never_renames_through_a_link(tmp_path: Path) -> None:
    """A journal (a registry from a stranger may hold one) whose directory is a link to another directory of the
    registry: recover refuses it, and renames nothing there."""
    root = tmp_path / "reg"
    (root / "a").mkdir(parents=True)
    (root / "index.json").write_text("{}")
    (root / "b").symlink_to("a")
    tmp = f"{TMP_PREFIX}0123456789ab-x.json"
    (root / "a" / tmp).write_text("planted")
    (root / JOURNAL_NAME).write_text(json.dumps({"renames": [[f"b/{tmp}", "b/x.json"]]}))
    with pytest.raises(RefusedError, match=r"b is a symbolic link \(to a\): nothing was written"):
        recover(root)
    assert sorted(p.name for p in (root / "a").iterdir()) == [tmp]


def test_without_openat_links_are_refused_by_path_and_writes_still_work(
    reg: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The path-based fallback (a system without ``openat``, Windows): each component checked with lstat."""
    monkeypatch.setattr(atomic, "DIR_FDS", False)
    outside = _outside(tmp_path)
    (reg / TINY_BASE / "state" / "v9").symlink_to(outside)
    before_out = _tree(outside)
    assert main(_add_argv(reg, tmp_path, "v9")) == 1
    assert "is a symbolic link" in capsys.readouterr().err
    assert _tree(outside) == before_out
    (reg / TINY_BASE / "state" / "v9").unlink()
    assert main(_add_argv(reg, tmp_path, "v9")) == 0  # a new directory, made and written by path
    assert (reg / TINY_BASE / "state" / "v9" / "s9.pth").is_file()
