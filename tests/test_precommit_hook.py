"""The pre-commit hook `init` writes, run by pre-commit itself (a real `git commit` through `pre-commit install`)
with a PATH that lacks the virtualenv's bin directory, as under a GUI git client: it finds rwkv-registry through
the Python that runs pre-commit, passes a valid registry, fails a broken one, and an edit of its own configuration
does not fail it (docs/precommit.md)."""

from __future__ import annotations

import importlib.util
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rwkv_registry.cli.main import main
from rwkv_registry.store.ops import PRECOMMIT

pytestmark = pytest.mark.skipif(
    shutil.which("git") is None or importlib.util.find_spec("pre_commit") is None,
    reason="needs git and pre-commit (the dev extras)",
)


def _bare_path() -> str:
    """A PATH with the directories of the tools git and the hook use, and not the one of this Python (the
    virtualenv's bin, where rwkv-registry and pre-commit are)."""
    venv_bin = os.path.dirname(sys.executable)
    dirs: list[str] = []
    for tool in ("git", "sh", "tr", "head", "ps", "cut"):
        found = shutil.which(tool)
        if found is not None and os.path.dirname(found) not in (*dirs, venv_bin):
            dirs.append(os.path.dirname(found))
    path = os.pathsep.join(dirs)
    if shutil.which("rwkv-registry", path=path) or shutil.which("pre-commit", path=path):
        pytest.skip("rwkv-registry or pre-commit is installed outside the virtualenv")
    return path


def _env(tmp_path: Path, path: str) -> dict[str, str]:
    return {
        "PATH": path,
        "HOME": str(tmp_path / "home"),
        "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-cache"),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.org",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.org",
    }


def _git(root: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=root, env=env, capture_output=True, text=True)


def test_the_hook_runs_without_rwkv_registry_on_path(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "reg"
    assert main(["init", str(root)]) == 0
    capsys.readouterr()
    env = _env(tmp_path, _bare_path())
    assert _git(root, env, "init", "-q").returncode == 0
    # `pre-commit install` records the Python that runs it in .git/hooks/pre-commit (pre-commit's own way)
    subprocess.run([sys.executable, "-m", "pre_commit", "install"], cwd=root, env=env, check=True, capture_output=True)
    assert _git(root, env, "add", "-A").returncode == 0
    done = _git(root, env, "commit", "-m", "new registry")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "rwkv-registry validate" in done.stdout + done.stderr and "Passed" in done.stdout + done.stderr
    # editing the hook's own configuration does not fail the hook (not listed in SHA256SUMS)
    config = root / ".pre-commit-config.yaml"
    config.write_text(config.read_text() + "# checked by the team\n")
    _git(root, env, "add", "-A")
    done = _git(root, env, "commit", "-m", "note in the hook config")
    assert done.returncode == 0, done.stdout + done.stderr
    # the hook does check: a README without its generated sections fails the commit
    (root / "README.md").write_text("# no markers\n")
    _git(root, env, "add", "-A")
    done = _git(root, env, "commit", "-m", "broken")
    out = done.stdout + done.stderr
    assert done.returncode == 1 and "Failed" in out and "RDM001" in out, out


def test_the_hook_says_what_to_do_when_it_finds_no_rwkv_registry(tmp_path: Path) -> None:
    """Run by a Python without rwkv_registry (a pre-commit installed apart), with no rwkv-registry on PATH and no
    RWKV_REGISTRY: one line saying what to install or set, exit 1; RWKV_REGISTRY names the command to run."""
    other = shutil.which("python3", path=_bare_path())
    if other is None or subprocess.run([other, "-c", "import rwkv_registry"], capture_output=True).returncode == 0:
        pytest.skip("no Python without rwkv_registry outside the virtualenv")
    yaml = pytest.importorskip("yaml")  # pre-commit's own dependency
    entry = yaml.safe_load(PRECOMMIT)["repos"][0]["hooks"][0]["entry"]
    argv = shlex.split(entry)
    assert argv[:2] == ["sh", "-c"]
    run = [other, "-c", "import subprocess, sys; sys.exit(subprocess.run(sys.argv[1:]).returncode)", *argv]
    env = _env(tmp_path, _bare_path())
    done = subprocess.run(run, env=env, capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr.startswith("rwkv-registry validate: rwkv-registry is not on PATH, nor installed for the Python")
    assert f"({other})" in done.stderr and "RWKV_REGISTRY=/path/to/venv/bin/rwkv-registry" in done.stderr
    root = tmp_path / "reg"
    assert main(["init", str(root)]) == 0
    env["RWKV_REGISTRY"] = f"{sys.executable} -m rwkv_registry"
    done = subprocess.run(run, env=env, capture_output=True, text=True, cwd=root)
    assert done.returncode == 0 and done.stdout.splitlines()[-1].startswith("OK .:"), done.stdout + done.stderr
