"""Paths the user may not read: a registry, a weight file or a base file under a directory without permission.

``Path.exists``/``is_file``/``is_dir`` raise ``PermissionError`` (instead of answering False) when a
directory above the path cannot be searched; every command must turn that into a message naming the path
and the fix, exit 2, never "unexpected PermissionError … this is a bug". The commands run in a child
process: as root, one without the capabilities that override file permissions (``setpriv``), so that the
permission bits are really enforced (a simulated ``PermissionError`` would not show which call raises).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from regtools import TINY_BASE, state_train, write_state

_DROP = "-dac_override,-dac_read_search,-fowner"
_PREFIX = ["setpriv", f"--bounding-set={_DROP}", f"--inh-caps={_DROP}"] if os.geteuid() == 0 else []


def _can_drop() -> bool:
    if not _PREFIX:
        return True
    if shutil.which("setpriv") is None:
        return False
    return subprocess.run([*_PREFIX, "true"], capture_output=True).returncode == 0


pytestmark = pytest.mark.skipif(not _can_drop(), reason="permission bits cannot be enforced (root without setpriv)")


def run_cli(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*_PREFIX, sys.executable, "-m", "rwkv_registry.cli.main", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, "COLUMNS": "200"},
    )


def clean(p: subprocess.CompletedProcess[str]) -> str:
    assert "unexpected" not in p.stderr and "Traceback" not in p.stderr, p.stderr
    return " ".join(p.stderr.split())


@pytest.fixture
def locked(tmp_path: Path) -> Iterator[Path]:
    """``tmp_path/locked`` (mode 000), restored after the test so that pytest can remove it."""
    d = tmp_path / "locked"
    d.mkdir()
    yield d
    d.chmod(0o755)


@pytest.mark.parametrize(
    "command",
    [["validate"], ["list"], ["show", "--path"], ["readme"], ["sums"], ["recover"], ["tui"]],
    ids=lambda c: c[0],
)
def test_a_registry_under_a_directory_without_permission(
    reg: Path, locked: Path, tmp_path: Path, command: list[str]
) -> None:
    inside = locked / "reg"
    shutil.copytree(reg, inside)
    locked.chmod(0)
    p = run_cli(*command, "locked/reg", cwd=tmp_path)
    assert p.returncode == 2
    err = clean(p)
    assert "locked/reg: cannot be read: Permission denied" in err
    assert "hint: Check the permissions of locked/reg and of every directory above it" in err


@pytest.mark.parametrize("command", [["validate"], ["list"], ["readme"], ["sums"], ["tui"]], ids=lambda c: c[0])
def test_a_registry_directory_without_permission(reg: Path, tmp_path: Path, command: list[str]) -> None:
    reg.chmod(0)
    try:
        p = run_cli(*command, "reg", cwd=tmp_path)
    finally:
        reg.chmod(0o755)
    assert p.returncode == 2
    assert "reg: cannot be read: Permission denied" in clean(p)


def test_init_under_a_directory_without_permission(locked: Path, tmp_path: Path) -> None:
    locked.chmod(0)
    p = run_cli("init", "locked/new", cwd=tmp_path)
    assert p.returncode == 2
    err = clean(p)
    assert "cannot create the directory locked/new: Permission denied" in err and "hint:" in err


def test_validate_a_folder_without_permission_inside_the_registry(reg: Path, tmp_path: Path) -> None:
    folder = reg / TINY_BASE / "state" / "v1"
    folder.chmod(0)
    try:
        p = run_cli("validate", "reg", "--no-cache", cwd=tmp_path)
    finally:
        folder.chmod(0o755)
    assert p.returncode == 1, p.stdout + p.stderr
    clean(p)
    assert "LAY010" in p.stdout and "cannot list the directory: Permission denied" in p.stdout
    # the cause only: what lies under the folder was not seen, so no "has no train.json" (TRN001), "the file does
    # not exist" (LAY008) or "SHA256SUMS lists …, which cannot be read" (HSH005) echoes it
    errors = [line.split()[1] for line in p.stdout.splitlines() if line.startswith("error")]
    assert errors == ["LAY010"], p.stdout
    assert "1 error(s)" in p.stdout


def test_validate_in_a_git_clone_whose_objects_cannot_be_read(reg: Path, tmp_path: Path) -> None:
    """A registry in a git work tree whose .git/objects the user cannot read: immutability cannot be checked, so
    validate fails (GIT006, exit 1: the pre-commit hook refuses) naming git's words and the fix."""
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t"}
    env["GIT_COMMITTER_EMAIL"] = "t@t"
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "publish"]):
        subprocess.run(["git", *args], cwd=reg, env=env, check=True, capture_output=True)
    objects = reg / ".git" / "objects"
    objects.chmod(0)
    try:
        p = run_cli("validate", "reg", "--no-cache", cwd=tmp_path)
    finally:
        objects.chmod(0o755)
    assert p.returncode == 1, p.stdout + p.stderr
    clean(p)
    assert "error   GIT006 .: git failed: stderr: 'fatal: not a git repository" in p.stdout
    assert "give the user running validate read access to .git" in " ".join(p.stdout.split())
    assert "GIT004" not in p.stdout


def test_add_and_add_base_and_smoke_name_a_file_they_cannot_reach(reg: Path, locked: Path, tmp_path: Path) -> None:
    write_state(locked / "s.pth")
    (tmp_path / "train.json").write_text(json.dumps(state_train("v9")))
    locked.chmod(0)
    add = ["add", "reg", "locked/s.pth", "--base", TINY_BASE, "--data-version", "v9", "--train", "train.json"]
    p = run_cli(*add, cwd=tmp_path)
    assert p.returncode == 2
    assert "error: locked/s.pth: cannot be read: Permission denied" in clean(p)
    p = run_cli("add-base", "reg", "locked/b.pth", "--source", "a/b", cwd=tmp_path)
    assert p.returncode == 2
    assert "error: locked/b.pth: cannot be read: Permission denied" in clean(p)
    p = run_cli("smoke", "reg", "s1", "--base-file", "locked/b.pth", cwd=tmp_path)
    assert p.returncode == 2
    assert "error: --base-file locked/b.pth: cannot be read: Permission denied" in clean(p)


def test_add_base_names_an_unreadable_base_file_once(reg: Path, tmp_path: Path) -> None:
    base = tmp_path / "b.pth"
    base.write_bytes(b"PK" + bytes(100))
    base.chmod(0)
    p = run_cli("add-base", "reg", "b.pth", "--source", "a/b", cwd=tmp_path)
    assert p.returncode == 2
    err = clean(p)
    assert "cannot read b.pth: Permission denied" in err
    assert err.count("cannot read") == 1, err


def test_a_symbolic_link_loop_is_named_as_one(tmp_path: Path) -> None:
    (tmp_path / "a").symlink_to("b")
    (tmp_path / "b").symlink_to("a")
    for command in (["validate"], ["list"], ["tui"]):
        p = run_cli(*command, "a", cwd=tmp_path)
        assert p.returncode == 2
        assert "a: not a directory (a symbolic link that leads nowhere: dangling, or a loop)" in clean(p)
