"""Git immutability rules (GIT001, GIT003) on real repositories: a published file modified (replaced by a symbolic
link; in a registry below the repository root) and new files under a frozen or superseded base, staged or not,
beside the `.gitkeep` placeholders add-base makes. tests/test_git.py holds the other git cases.

The table of tests/test_validate_rules.py has each rule's basic passing and failing case; these are the cases of
branches that table does not reach. Most break one thing in the small valid registry (or in a MiSS manifest) and
assert the exact rule code, and usually the finding's path and message.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from mutations import set_key
from regtools import STATE, TINY_BASE, build_registry, edit_index, findings, resum, where, write_state

from rwkv_registry.store.ops import write_readme

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git not installed")


V1 = f"{TINY_BASE}/state/v1"


def _two_bases_published(root: Path) -> None:
    """The registry with a newer base of its family (the old one left active, so superseded but not frozen),
    committed."""
    from regtools import add_newer_base, git_publish

    add_newer_base(root, freeze_previous=False)
    git_publish(root, "two bases")


# --- GIT001: published files modified -------------------------------------------------------------------------------


@needs_git
def test_git001_a_published_file_replaced_by_a_symlink(reg: Path) -> None:
    """Mutant: a type change (git status T: the file became a symbolic link) was not a modification."""
    from regtools import git_publish

    git_publish(reg)
    (reg / STATE).unlink()
    (reg / STATE).symlink_to("train.json")
    found = [(f.path, f.message.split(",")[0]) for f in findings(reg, "GIT001")]
    assert found == [(STATE, "modified in the working tree")]


@needs_git
def test_git001_in_a_registry_below_the_repository_root(reg: Path, tmp_path: Path) -> None:
    """Mutant: paths from git not made relative to the registry (its base directories then never match)."""
    from regtools import git_publish

    outer = tmp_path / "outer"
    outer.mkdir()
    root = Path(shutil.move(reg, outer / "registry"))
    git_publish(outer)
    p = root / STATE
    p.write_bytes(p.read_bytes()[:-1] + bytes([p.read_bytes()[-1] ^ 1]))
    assert [f.path for f in findings(root, "GIT001")] == [STATE]


# --- GIT003: new files under a closed base --------------------------------------------------------------------------


@pytest.mark.skipif(shutil.which("git") is None, reason="git not installed")
def test_git003_staged_new_file_under_frozen_base(tmp_path: Path) -> None:
    """The pre-commit case: a new weight file is `git add`-ed (not committed) under a frozen base."""
    from regtools import git, git_publish

    root = build_registry(tmp_path / "reg", tmp_path, with_miss=False)
    git_publish(root, "publish v1")
    edit_index(root, lambda i: i["bases"][0].update(status="frozen"))
    write_readme(root)
    resum(root)
    git(root, "commit", "-qam", "freeze")
    assert findings(root, "GIT003") == []
    rel = f"{TINY_BASE}/state/v1/s3.pth"
    write_state(root / rel, seed=3)
    git(root, "add", "--", rel)
    assert git(root, "ls-files", "--others", "--exclude-standard") == ""  # staged, not untracked
    assert where(root, "GIT003") == {rel: [f"new file under frozen base {TINY_BASE} (in the index)"]}


@needs_git
def test_git003_a_staged_new_file_under_a_superseded_base(reg: Path) -> None:
    """Mutants: a new file in the diffs (not untracked) closed only by `frozen`, not by a newer base; the index
    (`git add`) not compared (the working-tree diff then names the wrong place)."""
    from regtools import git

    _two_bases_published(reg)
    (reg / V1 / "s9.pth").write_bytes(b"x")
    git(reg, "add", "-A")
    found = [(f.path, f.message) for f in findings(reg, "GIT003")]
    newer = TINY_BASE.replace("20260101", "20260301")
    assert found == [
        (f"{V1}/s9.pth", f"new file under superseded base {TINY_BASE} (in the index); new weights go under {newer}")
    ]


@needs_git
def test_git003_a_base_superseded_at_the_baseline_stays_closed(reg: Path) -> None:
    """Mutant: only today's index.json decides what is superseded; dropping the newer base from index.json in the
    same change does not reopen the old one."""
    from regtools import NEWER_BASE

    _two_bases_published(reg)
    edit_index(reg, lambda i: set_key(i, "bases", [b for b in i["bases"] if b["name"] != NEWER_BASE]))
    (reg / V1 / "s9.pth").write_bytes(b"x")
    assert [f.path for f in findings(reg, "GIT003")] == [f"{V1}/s9.pth"]


@needs_git
def test_git003_a_staged_placeholder_of_a_closed_base_is_no_new_file(reg: Path) -> None:
    """Mutant: the `.gitkeep` exception applied to untracked files only: an older base, closed at once, whose empty
    placeholders are staged (`git add -A` before the commit) was GIT003 for each of them."""
    from regtools import add_base_by_metadata, git, git_publish

    git_publish(reg)
    older = TINY_BASE.replace("20260101", "20250101")
    add_base_by_metadata(reg, older)
    git(reg, "add", "-A")
    assert findings(reg, "GIT003") == []


@needs_git
def test_git003_an_empty_gitkeep_deeper_than_a_method_folder_is_a_new_file(reg: Path) -> None:
    """Mutant: any empty `.gitkeep` taken for a placeholder: only `<base>/state/.gitkeep` and `<base>/miss/.gitkeep`
    are what add-base makes; one in a data-version folder of a closed base is a new file there."""
    from regtools import add_base_by_metadata, git_publish

    git_publish(reg)
    older = TINY_BASE.replace("20260101", "20250101")
    add_base_by_metadata(reg, older)  # superseded at once: closed
    (reg / older / "state" / "v1").mkdir()
    (reg / older / "state" / "v1" / ".gitkeep").write_bytes(b"")
    assert [f.path for f in findings(reg, "GIT003")] == [f"{older}/state/v1/.gitkeep"]
