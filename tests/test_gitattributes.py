"""Our reading of .gitattributes against git's own (``git check-attr filter``), side by side on generated files:
last match wins, ``-filter`` and ``!filter``, ``filter=lfs`` overridden later, ``**``, directory patterns, macros
(``binary``, user macros, macros where git refuses them), CRLF lines, comments, quoted patterns, negative patterns,
invalid attribute names, over-long lines, nested .gitattributes files. Whatever git says,
registry/formats/gitattr.py says;
and ``validate`` reports LFS002 for a weight file whose ``filter`` git does not make ``lfs``."""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import unicodedata
from pathlib import Path

import pytest

from rwkv_registry.engine.validate import validate_registry
from rwkv_registry.formats.gitattr import filter_of

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is the oracle of these tests")

CAFE = unicodedata.normalize("NFC", "café.pth")
PATHS = [
    "x.pth",
    "a/x.pth",
    "base/state/v1/s1.pth",
    "base/miss/v2/r16/adapter-final.pth",
    "x.safetensors",
    "base/state/v1/s.safetensors",
    "S1.PTH",
    f"base/state/v1/{CAFE}",
    "a b.pth",
    "base/state/v1/[1].pth",
    "state/x.pth",
    "base/x.pth",
    "!x.pth",
    "x.pthx",
]
LINES = [
    "*.pth filter=lfs diff=lfs merge=lfs -text",
    "*.safetensors filter=lfs diff=lfs merge=lfs -text",
    "*.pth -filter",
    "*.pth !filter",
    "*.pth filter",
    "*.pth filter=other",
    "*.pth -filter=lfs",
    "*.pth -filter filter=lfs",
    "*.pth filter=lfs -filter",
    "**/*.pth filter=lfs",
    "base/** filter=lfs",
    "base/**/*.pth -filter",
    "base/**/v1/*.pth -filter",
    "base/*/v1/* -filter",
    "*/state/*/*.pth -filter",
    "/x.pth filter=lfs",
    "x.pth -filter",
    "state/ -filter",
    "base/state/ -filter",
    "state/** -filter",
    "* -filter",
    "** filter=lfs",
    "*.pth binary",
    "[attr]binary -filter",
    "[attr]lfs filter=lfs diff=lfs merge=lfs -text",
    "*.pth lfs",
    "*.pth -lfs",
    "*.pth !lfs",
    "[attr]nolfs -filter",
    "*.pth nolfs",
    "*.pth nolfs filter=lfs",
    "# *.pth -filter",
    "   *.pth -filter",
    "*.pth\t-filter",
    '"*.pth" -filter',
    '"a b.pth" -filter',
    '"a\\040b.pth" filter=lfs',
    '"bad\\q.pth" -filter',
    "!*.pth -filter",
    "\\!x.pth filter=lfs",
    "*.[pP][tT][hH] -filter",
    "?1.pth -filter",
    "caf?.pth -filter",
    "caf??.pth -filter",
    "*.p[!a]h -filter",
    "*.p[^a]h -filter",
    "*.p[^t]h -filter",
    "x.pth/ -filter",
    "*.pth/ -filter",
    "*.p[[:alpha:]]h -filter",
    "*.p[[:bogus:]]h -filter",
    "*.pt[h-a] -filter",
    "*.p[]t]h -filter",
    "base/state/v1/\\[1\\].pth -filter",
    "base/state/v1/[[]1].pth filter=lfs",
    "*.pth bad@name -filter",
    "*.pth =x -filter",
    "*.pth - -filter",
    "*.pth" + " " * 2100 + "-filter",
    "*.pth" + " " * 2030 + "-filter",
    "*.pth*",
    "*.pth* -filter",
    "*.pth",
    "",
    "  ",
    "[attr]",
    "[attr] -filter",
    "*.pth -text filter=lfs -diff",
]


def _git_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), GIT_CONFIG_NOSYSTEM="1",
               GIT_CONFIG_GLOBAL=os.devnull, LC_ALL="C")  # fmt: skip
    return env


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    root = tmp_path_factory.mktemp("gitattr")
    env = _git_env(root / "home")
    (root / "home").mkdir()
    subprocess.run(["git", "init", "-q", str(root / "r")], check=True, env=env)
    return root / "r", env


def _git_says(repo: tuple[Path, dict[str, str]], files: dict[str, bytes]) -> dict[str, str]:
    top, env = repo
    for p in top.rglob(".gitattributes"):
        p.unlink()
    for d, data in files.items():
        (top / d).mkdir(parents=True, exist_ok=True)
        (top / d / ".gitattributes").write_bytes(data)
    stdin = b"".join(p.encode() + b"\0" for p in PATHS)
    out = subprocess.run(["git", "check-attr", "--stdin", "-z", "filter"], input=stdin, cwd=top, env=env,
                         capture_output=True, check=True).stdout  # fmt: skip
    fields = out.split(b"\0")
    return {fields[i].decode(): fields[i + 2].decode() for i in range(0, len(fields) - 2, 3)}


def _we_say(files: dict[str, bytes]) -> dict[str, str]:
    return {p: filter_of(files, p).shown() for p in PATHS}


def _check(repo: tuple[Path, dict[str, str]], files: dict[str, bytes]) -> None:
    assert _we_say(files) == _git_says(repo, files), files


def test_last_match_wins_as_in_git(repo: tuple[Path, dict[str, str]]) -> None:
    """The finding of issue 26: a later `*.pth -filter` turns LFS off."""
    files = {"": b"*.pth filter=lfs diff=lfs merge=lfs -text\n*.pth -filter\n"}
    assert _git_says(repo, files)["base/state/v1/s1.pth"] == "unset"
    _check(repo, files)


@pytest.mark.parametrize("line", LINES, ids=range(len(LINES)))
def test_each_kind_of_line_after_lfs_reads_as_in_git(repo: tuple[Path, dict[str, str]], line: str) -> None:
    base = "*.pth filter=lfs diff=lfs merge=lfs -text\n*.safetensors filter=lfs\n"
    _check(repo, {"": (base + line + "\n").encode()})
    _check(repo, {"": (line + "\n" + base).encode()})


@pytest.mark.parametrize("ending", [b"\n", b"\r\n"])
def test_line_endings_bom_and_nul_read_as_in_git(repo: tuple[Path, dict[str, str]], ending: bytes) -> None:
    lines = [b"*.pth filter=lfs", b"*.pth -filter"]
    _check(repo, {"": ending.join(lines) + ending})
    _check(repo, {"": b"\xef\xbb\xbf" + lines[1] + ending})  # the mark is skipped: the line's pattern is *.pth
    _check(repo, {"": b"\xef\xbb\xbf" + ending.join(lines)})
    _check(repo, {"": ending.join(lines) + b"\0garbage" + ending})  # git stops at a NUL: -filter stays


def test_nested_files_and_macros_where_git_refuses_them(repo: tuple[Path, dict[str, str]]) -> None:
    _check(repo, {"": b"*.pth filter=lfs\n", "base": b"*.pth -filter\n"})
    _check(repo, {"": b"*.pth -filter\n", "base/state": b"*.pth filter=lfs\n"})
    _check(repo, {"": b"*.pth filter=lfs\n", "base": b"[attr]off -filter\n*.pth off\n"})  # no macro below the top
    _check(repo, {"": b"[attr]off -filter\n*.pth filter=lfs\n", "base": b"*.pth off\n"})
    _check(repo, {"": b"[attr]lfs filter=lfs\n*.pth -filter\n*.pth -lfs\n"})  # a macro unset: not expanded
    _check(repo, {"": b"[attr]lfs filter=lfs\n*.pth -filter\n*.pth !lfs\n"})
    _check(repo, {"": b"[attr]lfs filter=lfs\n*.pth -filter\n*.pth lfs=yes\n"})
    _check(repo, {"": b"*.pth filter=lfs\n", "base": b"/x.pth -filter\nstate/*/*.pth -filter\n"})


def test_generated_files_read_as_in_git(repo: tuple[Path, dict[str, str]]) -> None:
    rng = random.Random(26)
    dirs = ["", "", "", "base", "base/state", "a"]
    for _ in range(250):
        files: dict[str, bytes] = {}
        for d in rng.sample(dirs, rng.randint(1, 3)):
            ending = rng.choice(["\n", "\r\n"])
            lines = rng.choices(LINES, k=rng.randint(1, 6))
            files[d] = (ending.join(lines) + rng.choice(["", ending])).encode()
        _check(repo, files)


def test_validate_reports_a_later_line_that_turns_lfs_off(reg: Path) -> None:
    """Before: validate looked for any `*.pth filter=lfs` line and was silent."""
    attrs = reg / ".gitattributes"
    attrs.write_text(attrs.read_text() + "*.pth -filter\n")
    found = [(f.path, f.message) for f in validate_registry(reg).findings if f.code == "LFS002"]
    assert (".gitattributes", "*.pth files are not routed through Git LFS (git gives them filter: unset, from "
            ".gitattributes line 7)") in found  # fmt: skip


def test_validate_reports_a_weight_file_a_narrower_line_leaves_out(reg: Path) -> None:
    attrs = reg / ".gitattributes"
    attrs.write_text(attrs.read_text() + "rwkv7-tiny-*/state/v1/*.pth !filter\n")
    found = [(f.path, f.message) for f in validate_registry(reg).findings if f.code == "LFS002"]
    state = "rwkv7-tiny-20260101-ctx4096/state/v1/s1.pth"
    assert found == [(state, "not routed through Git LFS: git gives it filter: unspecified, from .gitattributes "
                      "line 7")]  # fmt: skip


def test_validate_passes_the_gitattributes_init_writes(reg: Path) -> None:
    assert [f for f in validate_registry(reg).findings if f.code == "LFS002"] == []


def test_a_gitattributes_too_large_to_read_is_no_verdict(reg: Path) -> None:
    """Past 1 MiB (git reads up to 100 MB) the file is not read: LFS002 says so, rather than guess."""
    attrs = reg / ".gitattributes"
    attrs.write_text(attrs.read_text() + "#" * (1024 * 1024) + "\n")
    found = [(f.path, f.message) for f in validate_registry(reg).findings if f.code == "LFS002"]
    assert found == [(".gitattributes", "more than 1,048,576 bytes: too large to be read, so no weight file is known "
                      "to be routed through Git LFS")]  # fmt: skip
