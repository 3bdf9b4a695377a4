"""The README as a new user reads it: short, every command listed, the quick start pasted as written.

The quick start runs in a shell exactly as the README prints it, with only its path lines set to generated files:
a base written by torch.save, a State from rwkv_state_tune's writer and a MiSS adapter from rwkv_miss_tune's
(tests/conformance/, ported from the C++), then the real `git` and `pre-commit` commit it through the hook.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conformance.miss_adapter_cpp import export_input, trainer_targets
from conformance.miss_tune_adapter import save_adapter_pth
from regtools import miss_train, state_train, write_tiny_base

from rwkv_registry.cli.main import build_parser

sys.path.insert(0, str(Path(__file__).parent / "conformance"))  # the State writers import their helpers by name
from state_tune_writer import state_tune_bytes

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _section(title: str) -> str:
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", README, re.M | re.S)
    assert match, f"README has no section {title!r}"
    return match.group(1)


def _blocks(text: str, lang: str) -> list[str]:
    return re.findall(rf"^```{lang}\n(.*?)^```", text, re.M | re.S)


def test_the_readme_is_a_short_guide_with_the_two_setup_commands() -> None:
    assert len(README.splitlines()) <= 200
    install = _blocks(_section("Install"), "sh")
    assert any("make demo" in b and "make test" in b for b in install)
    for extra in ("[tui]", "[smoke]", "[hub]"):
        assert any(extra in b for b in install), extra


def test_every_command_has_its_line_in_the_readme() -> None:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    table = _section("Commands")
    listed = set(re.findall(r"^\| `([a-z-]+)", table, re.M)) | set(re.findall(r", `([a-z-]+)", table))
    assert set(sub.choices) <= listed, sorted(set(sub.choices) - listed)


def test_the_pre_commit_snippet_is_what_init_writes(tmp_path: Path) -> None:
    from rwkv_registry.cli.main import main

    assert main(["init", str(tmp_path / "reg")]) == 0
    written = (tmp_path / "reg" / ".pre-commit-config.yaml").read_text()
    (snippet,) = _blocks(_section("Pre-commit"), "yaml")
    assert snippet.strip() in written


def _user_files(where: Path) -> dict[str, Path]:
    """The four files the quick start asks for, as the user's trainers write them."""
    base = write_tiny_base(where / "models" / "rwkv7-g1k-7.2b-20260930-ctx25600.pth")  # tiny, named as the README
    fingerprint = hashlib.sha256(base.read_bytes()).hexdigest()
    state = where / "runs" / "state" / "v141b-s1224.pth"
    state.parent.mkdir(parents=True)
    state.write_bytes(state_tune_bytes(2, 2, 64, [0.01] * (2 * 2 * 64 * 64)))
    (state.parent / "train.json").write_text(json.dumps(state_train("v1.41")))
    rank = 16
    ts = trainer_targets(2, 128, 512, rank)
    count = sum(t.out * t.rank for t in ts)
    vals = (np.random.default_rng(0).standard_normal(count) * 0.01).astype(np.float32)
    data = (vals.view(np.uint32) >> 16).astype("<u2").tobytes()
    miss = where / "runs" / "miss" / "r16-lr2e-5-e2" / "adapter-final.pth"
    miss.parent.mkdir(parents=True)
    miss.write_bytes(save_adapter_pth(export_input(rank, 32.0, fingerprint, bf16=True), ts, data))
    train = miss_train("v2.1", groups=("r16-lr2e-5-e2",))
    train["hyperparameters"].update(rank=rank, alpha=32)
    (where / "runs" / "miss" / "train.json").write_text(json.dumps(train))
    return {"BASE_FILE": base, "STATE": state, "MISS": miss}


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_the_quick_start_runs_as_written(tmp_path: Path) -> None:
    (block,) = _blocks(_section("Quick start"), "sh")
    home = tmp_path / "home"
    files = _user_files(home)
    # the path lines are the user's to set: each is the same assignment, to this test's files
    script = block.replace("~/", f"{home}/")
    for name, path in files.items():
        assert f"{name}={path}" in script, name
    bindir = str(Path(sys.executable).parent)
    env = {
        "PATH": f"{bindir}{os.pathsep}/usr/bin{os.pathsep}/bin",
        "HOME": str(home),
        "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-cache"),
        "GIT_AUTHOR_NAME": "New User",
        "GIT_AUTHOR_EMAIL": "new@example.org",
        "GIT_COMMITTER_NAME": "New User",
        "GIT_COMMITTER_EMAIL": "new@example.org",
        "GIT_CONFIG_NOSYSTEM": "1",
        "RWKV_REGISTRY_CACHE_DIR": os.environ["RWKV_REGISTRY_CACHE_DIR"],
    }
    work = tmp_path / "work"
    work.mkdir()
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script], cwd=work, env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    reg = work / "my-weights"
    log = subprocess.run(["git", "log", "--format=%s"], cwd=reg, capture_output=True, text=True, check=True)
    assert log.stdout.splitlines() == [
        "exam score of v21-r16-lr2e-5-e2",
        "Base rwkv7-g1k-7.2b-20260930-ctx25600: State v1.41, MiSS v2.1",
    ]
    assert (reg / ".git" / "hooks" / "pre-commit").is_file()
    assert "rwkv-registry validate" in done.stdout + done.stderr  # the hook ran at each commit
    status = subprocess.run(["git", "status", "--porcelain"], cwd=reg, capture_output=True, text=True, check=True)
    assert status.stdout == ""
    index = json.loads((reg / "index.json").read_text())
    entries = {e["id"]: e for e in index["entries"]}
    assert set(entries) == {"v141b-s1224", "v21-r16-lr2e-5-e2"}
    (score,) = entries["v21-r16-lr2e-5-e2"]["scores"]
    assert score["benchmark"] == "exam" and score["solved"] == 296.5 and score["total"] == 568
    check = subprocess.run(
        [sys.executable, "-m", "rwkv_registry", "validate", str(reg)], env=env, capture_output=True, text=True
    )
    assert check.returncode == 0, check.stdout + check.stderr
