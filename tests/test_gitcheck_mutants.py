"""Checks of registry/gitcheck.py that a mutation audit found no test for.

Each test kills at least one hand-made mutant of gitcheck.py that the rest of the suite (tests/test_git.py)
let live (named in its docstring).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from regtools import TINY_BASE, build_registry, edit_index, resum
from test_git import git

from rwkv_registry.gitcheck import git_blob_id
from rwkv_registry.ops import write_readme
from rwkv_registry.validate import validate_registry

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
    from rwkv_registry import gitcheck

    for v in gitcheck._GIT_ENV:
        monkeypatch.delenv(v, raising=False)
    if gitcheck._work_tree_around(tmp_path):
        pytest.skip("a .git above the temporary directory")
    monkeypatch.setenv("GIT_DIR", str(tmp_path / "elsewhere.git"))
    assert gitcheck._work_tree_around(tmp_path)
