"""Checks of registry/checks/git.py that a mutation audit found no test for.

Each test kills at least one hand-made mutant of gitcheck.py that the rest of the suite (tests/test_git.py)
let live (named in its docstring).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from regtools import TINY_BASE, build_registry, edit_index, resum
from test_git import git

from rwkv_registry.checks.git import git_blob_id
from rwkv_registry.engine.validate import validate_registry
from rwkv_registry.store.ops import write_readme

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git not installed")


def _sha256_repo(tmp_path: Path) -> Path:
    root = build_registry(tmp_path / "reg", tmp_path, with_miss=False)
    git(root, "init", "-q", "-b", "main", "--object-format=sha256")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "publish v1")
    return root


def _git_codes(root: Path) -> list[str]:
    return sorted(f.code for f in validate_registry(root, use_cache=False).findings if f.code.startswith("GIT"))


def test_blob_ids_are_gits_in_sha1_and_sha256_repositories(tmp_path: Path) -> None:
    """G04: git_blob_id always SHA-1; G05: without the NUL after the size. Both are compared with git's own ids."""
    root = _sha256_repo(tmp_path)
    data = (root / "index.json").read_bytes()
    assert git_blob_id(data, 64) == git(root, "rev-parse", "HEAD:index.json").strip()
    sha1 = tmp_path / "sha1"
    sha1.mkdir()
    git(sha1, "init", "-q")
    (sha1 / "f").write_bytes(data)
    assert git_blob_id(data) == git(sha1, "hash-object", "f").strip()


def test_a_frozen_base_reopened_in_a_sha256_repository_is_git005(tmp_path: Path) -> None:
    """G35: in a SHA-256 repository HEAD's index.json is read and compared with the one validated by its sha256;
    taking it for the same bytes whenever a sha256 was given hid the baseline's frozen status (no GIT005)."""
    root = _sha256_repo(tmp_path)
    assert _git_codes(root) == []
    edit_index(root, lambda i: i["bases"][0].update(status="frozen"))
    resum(root)
    write_readme(root)
    git(root, "commit", "-qam", "freeze")
    assert _git_codes(root) == []
    edit_index(root, lambda i: i["bases"][0].update(status="active"))
    resum(root)
    write_readme(root)
    assert _git_codes(root) == ["GIT005"]
    state = root / TINY_BASE / "state" / "v1" / "s1.pth"
    data = bytearray(state.read_bytes())
    data[-100] ^= 1
    state.write_bytes(bytes(data))
    assert "GIT001" in _git_codes(root)


def test_a_git_dir_variable_makes_a_work_tree_around_any_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """GIT_DIR (or GIT_WORK_TREE, ...) names a repository: git missing is then GIT006, not the GIT004 warning, even
    with no .git above the folder (kills the mutant without the environment check in _work_tree_around)."""
    from rwkv_registry.checks import git as gitcheck

    for v in gitcheck._GIT_ENV:
        monkeypatch.delenv(v, raising=False)
    if gitcheck._work_tree_around(tmp_path):
        pytest.skip("a .git above the temporary directory")
    monkeypatch.setenv("GIT_DIR", str(tmp_path / "elsewhere.git"))
    assert gitcheck._work_tree_around(tmp_path)


def _frozen_repo(tmp_path: Path) -> Path:
    """A published registry whose only base is frozen in a second commit."""
    root = build_registry(tmp_path / "reg", tmp_path, with_miss=False)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "publish v1")
    edit_index(root, lambda i: i["bases"][0].update(status="frozen"))
    resum(root)
    write_readme(root)
    git(root, "commit", "-qam", "freeze")
    return root


def _git_found(root: Path) -> list[tuple[str, str]]:
    return sorted(
        (f.code, f.path) for f in validate_registry(root, use_cache=False).findings if f.code.startswith("GIT")
    )


def test_a_published_file_renamed_in_the_index_is_deleted_at_its_old_name(tmp_path: Path) -> None:
    """G17: without --no-renames, git's staged diff says ``R100 old new`` for a ``git mv`` (rename detection is on
    by default), which read as the old path with status R: no GIT002 for the published file, and the name-status
    pairs read out of step; likewise a copy of it staged under a new name (GIT003 under the frozen base)."""
    root = _frozen_repo(tmp_path)
    old = f"{TINY_BASE}/state/v1/s1.pth"
    new = f"{TINY_BASE}/state/v1/renamed.pth"
    git(root, "mv", old, new)
    found = _git_found(root)
    assert ("GIT002", old) in found and ("GIT003", new) in found


def test_a_published_file_replaced_by_a_link_to_the_same_bytes_is_modified(tmp_path: Path) -> None:
    """G21: a file turned into a symbolic link is git's status T (type change), not M: still a change of a
    published file (GIT001), though the bytes read through the link are the same."""
    root = _frozen_repo(tmp_path)
    state = root / TINY_BASE / "state" / "v1" / "s1.pth"
    keep = tmp_path / "kept.pth"
    shutil.copyfile(state, keep)
    state.unlink()
    state.symlink_to(keep)
    assert ("GIT001", f"{TINY_BASE}/state/v1/s1.pth") in _git_found(root)


def test_an_ignored_file_under_a_frozen_base_is_not_a_new_file(tmp_path: Path) -> None:
    """G20: without --exclude-standard, ``git ls-files --others`` lists the files .gitignore excludes too: an
    ignored file under a frozen base (a log the publisher's .gitignore keeps out of git) was reported GIT003,
    though it can never be committed. An untracked file that is not ignored still is."""
    root = _frozen_repo(tmp_path)
    with (root / ".gitignore").open("a") as f:
        f.write("*.log\n")
    git(root, "commit", "-qam", "ignore logs")
    (root / TINY_BASE / "state" / "v1" / "train.log").write_text("loss 1.0\n")
    assert _git_found(root) == []
    (root / TINY_BASE / "state" / "v1" / "notes.txt").write_text("new\n")
    assert _git_found(root) == [("GIT003", f"{TINY_BASE}/state/v1/notes.txt")]


def test_a_folder_whose_name_begins_with_a_frozen_base_name_is_not_under_it(tmp_path: Path) -> None:
    """G18: a path is under a base when its first directory is the base's name exactly: a folder
    ``<base>-notes/`` beside a frozen base is not under it (a prefix match of the name said GIT003 there)."""
    root = _frozen_repo(tmp_path)
    other = root / f"{TINY_BASE}-notes"
    other.mkdir()
    (other / "todo.txt").write_text("x\n")
    git(root, "add", "--", other.name)
    (other / "more.txt").write_text("y\n")
    assert _git_found(root) == []


def test_a_frozen_base_that_a_newer_one_also_supersedes_is_said_frozen(tmp_path: Path) -> None:
    """G24: a base both frozen and superseded by a newer base of its family was named 'superseded' in GIT003 when
    the superseding pass overwrote the status: it is closed by its own status first (the fix a user looks for)."""
    root = _frozen_repo(tmp_path)
    newer = TINY_BASE.replace("20260101", "20270101")

    def add_newer(index: dict) -> None:
        index["bases"].append({**index["bases"][0], "name": newer, "status": "active"})

    edit_index(root, add_newer)
    (root / TINY_BASE / "state" / "v1" / "notes.txt").write_text("x\n")
    found = [f.message for f in validate_registry(root, use_cache=False).findings if f.code == "GIT003"]
    assert found == [f"new untracked file under frozen base {TINY_BASE}; new weights go under {newer}"]


def test_a_registry_below_the_top_of_its_repository_reads_its_own_index_at_head(tmp_path: Path) -> None:
    """G26: index.json at the baseline is read at the registry's path in the work tree (``reg/index.json``): read
    at the top (no such file there), a frozen base set active again below the top gave no GIT005."""
    outer = tmp_path / "outer"
    root = build_registry(outer / "reg", tmp_path, with_miss=False)
    git(outer, "init", "-q", "-b", "main")
    git(outer, "add", "-A")
    git(outer, "commit", "-q", "-m", "publish v1")
    for status in ("frozen", "active"):
        edit_index(root, lambda i, s=status: i["bases"][0].update(status=s))
        resum(root)
        write_readme(root)
        if status == "frozen":
            git(outer, "commit", "-qam", "freeze")
    assert _git_codes(root) == ["GIT005"]
