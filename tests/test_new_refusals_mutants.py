"""Checks of the last round's refusals that a mutation audit found no test for.

``demo --smoke`` replacing only a ``<PATH>-smoke/registry`` it wrote (model/smoke/demo.py), empty path arguments
(registry/cli/main.py). Each test kills at least one hand-made mutant (named in its docstring) that the rest of the
suite let live.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rwkv_registry.cli.main import main
from rwkv_registry.core.errors import UsageError
from rwkv_registry.fs.atomic import TMP_PREFIX
from rwkv_registry.model.smoke.demo import check_tiny_registry_dir
from rwkv_registry.store.ops import init_registry


def _earlier_demo(work: Path) -> Path:
    reg = work / "registry"
    init_registry(reg, name="demo/tiny-smoke")
    return reg


def _refused(work: Path, why: str) -> None:
    with pytest.raises(UsageError, match="is not an earlier tiny demo registry") as info:
        check_tiny_registry_dir(work)
    assert why in info.value.message


def test_a_tiny_registry_with_an_entry_the_demo_never_adds_is_not_replaced(tmp_path: Path) -> None:
    """D01: the tiny registry's name alone let a registry holding the user's own entries be deleted."""
    reg = _earlier_demo(tmp_path)
    index = json.loads((reg / "index.json").read_text())
    index["entries"].append({"id": "my-own-state"})
    (reg / "index.json").write_text(json.dumps(index))
    _refused(tmp_path, "its index.json is not the tiny demo's")


def test_a_tiny_registry_under_git_is_not_replaced(tmp_path: Path) -> None:
    """D02: a tiny demo registry the user made a git repository of (its history) was deleted with it."""
    reg = _earlier_demo(tmp_path)
    (reg / ".git").mkdir()
    _refused(tmp_path, "it is a git repository")


def test_a_link_in_place_of_the_tiny_registry_is_not_followed(tmp_path: Path) -> None:
    """D06: a symbolic link to an earlier tiny demo registry elsewhere passed the check (whose rmtree then fails
    on the link); D08: a dangling link there was taken for no registry at all."""
    elsewhere = _earlier_demo(tmp_path / "elsewhere")
    work = tmp_path / "work"
    work.mkdir()
    (work / "registry").symlink_to(elsewhere)
    _refused(work, "it is not a directory")
    (work / "registry").unlink()
    (work / "registry").symlink_to(tmp_path / "nowhere")
    _refused(work, "it is not a directory")


def test_leftovers_of_an_interrupted_write_do_not_stop_the_replacement(tmp_path: Path) -> None:
    """D04: the temporary file of a write killed in the earlier demo (which the demo wrote, and recover would
    remove) was taken for a file of the user's, and the demo refused to run again."""
    reg = _earlier_demo(tmp_path)
    (reg / f"{TMP_PREFIX}0123456789ab-index.json").write_text("{")
    check_tiny_registry_dir(tmp_path)


def test_a_link_to_a_directory_inside_the_tiny_registry_is_a_file_it_did_not_write(tmp_path: Path) -> None:
    """D11: a symbolic link to a directory (the user's data linked in) was skipped as a directory, and deleted."""
    reg = _earlier_demo(tmp_path)
    (tmp_path / "data").mkdir()
    (reg / "my-data").symlink_to(tmp_path / "data")
    _refused(tmp_path, "it holds files the demo did not write (my-data)")


def test_a_sha256sums_that_is_not_the_demos_stops_the_replacement(tmp_path: Path) -> None:
    """D09: a SHA256SUMS with lines that are no sha256sum lines was read for what it did parse."""
    reg = _earlier_demo(tmp_path)
    with (reg / "SHA256SUMS").open("a") as f:
        f.write("my notes, not a checksum\n")
    _refused(tmp_path, "is not a sha256sum line")


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        (["smoke", "REG", "e", "--base-file", ""], "--base-file"),
        (["smoke", "REG", "e", "--base-file", "b.pth", "--cases", ""], "--cases"),
        (["add", "REG", "s.pth", "--base", "b", "--data-version", "v1", "--train", ""], "--train"),
        (["sign", "REG", "--key", ""], "--key"),
        (["compare", "", "b.json"], "A.json"),
        (["compare", "a.json", ""], "B.json"),
    ],
)
def test_every_path_argument_that_is_empty_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], flag: str
) -> None:
    """E01/E02/E03/E05/E08: the empty-path check without B.json, --cases, --base-file or --train, or naming
    sign's --key 'KEY': each such argument read as the current directory, or named another one."""
    init_registry(tmp_path / "reg")
    argv = [str(tmp_path / "reg") if a == "REG" else a for a in argv]
    before = sorted(p.name for p in (tmp_path / "reg").iterdir())
    assert main(argv) == 2
    assert f"{flag}: an empty path" in capsys.readouterr().err
    assert sorted(p.name for p in (tmp_path / "reg").iterdir()) == before


def test_an_explicit_id_that_is_taken_is_refused_without_the_default_ids_story(
    reg: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """I07: the message of a taken ``--id`` explained where a default id comes from (a State's file stem), though
    the user gave the id; it names the entry holding it and a free id, as for a default id."""
    from regtools import TINY_BASE, state_train, write_state

    src = write_state(tmp_path / "in" / "other.pth", seed=5)
    train = tmp_path / "t.json"
    train.write_text(json.dumps(state_train("v7")))
    argv = ["add", str(reg), str(src), "--base", TINY_BASE, "--data-version", "v7", "--train", str(train)]
    assert main([*argv, "--id", "s1"]) == 1
    err = " ".join(capsys.readouterr().err.split())
    assert f"entry id 's1' exists (the entry at {TINY_BASE}/state/v1/s1.pth)" in err
    assert "default id" not in err and "--id s1-2" in err


def test_the_housekeeping_files_init_wrote_are_the_demos_until_edited(tmp_path: Path) -> None:
    """.gitignore and .pre-commit-config.yaml are not in SHA256SUMS: as init wrote them they are the demo's own
    (replaced), edited they are the user's (refused)."""
    reg = _earlier_demo(tmp_path)
    check_tiny_registry_dir(tmp_path)
    (reg / ".pre-commit-config.yaml").write_text("# my hooks\n")
    _refused(tmp_path, "it holds files the demo did not write (.pre-commit-config.yaml)")
