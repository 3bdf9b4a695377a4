"""Registry text holding terminal control sequences (an OSC that retitles the window, a CSI that clears the screen,
BEL, a C1 CSI, a right-to-left override) is shown escaped by every text output (textsafe.printable): ``list``,
``show``, ``validate``'s report, the notes of ``add``, error messages; with colour forced on too. JSON output stays
exact JSON. (The TUI: tests/tui/test_tui_escapes.py.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from regtools import TINY_BASE, edit_index, resum, state_train, write_state

EVIL = "pwn\x1b]0;HACKED\x07\x1b[2J\x9b31m\u202eevil\u2066"
SHOWN = "pwn\\x1b]0;HACKED\\x07\\x1b[2J\\x9b31m\\u202eevil\\u2066"
RAW = ("\x1b]", "\x07", "\x1b[2J", "\x9b", "\u202e", "\u2066")


def _run(*args: str, colour: bool = False) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "NO_COLOR", "TTY_COMPATIBLE")}
    if colour:
        env["FORCE_COLOR"] = "1"  # rich then writes colour codes, and takes its own path through the text
    return subprocess.run([sys.executable, "-m", "rwkv_registry.cli.main", *args], capture_output=True, text=True,
                          env=env, encoding="utf-8")  # fmt: skip


def _assert_safe(text: str) -> None:
    assert not [r for r in RAW if r in text], repr(text[-600:])


@pytest.fixture
def evil(reg: Path) -> Path:
    def plant(index: dict) -> None:
        index["entries"][0]["description"] = EVIL
        index["known_issues"] = [EVIL]

    edit_index(reg, plant)
    resum(reg)
    return reg


@pytest.mark.parametrize("colour", [False, True], ids=["plain", "colour"])
@pytest.mark.parametrize("command", ["list", "show", "show-registry"])
def test_list_and_show_escape_control_sequences(evil: Path, command: str, colour: bool) -> None:
    argv = {"list": ["list", str(evil)], "show": ["show", "s1", "--path", str(evil)],
            "show-registry": ["show", "--path", str(evil)]}[command]  # fmt: skip
    run = _run(*argv, colour=colour)
    assert run.returncode == 0, run.stderr
    _assert_safe(run.stdout)
    if command != "show-registry":
        assert SHOWN in run.stdout.replace("\n", "") or "pwn\\x1b]0;HACKED" in run.stdout


def test_json_output_stays_exact(evil: Path) -> None:
    run = _run("list", str(evil), "--format", "json")
    _assert_safe(run.stdout)  # json.dumps escapes control characters itself (\u001b …)
    described = [e.get("description") for e in json.loads(run.stdout)["entries"]]
    assert EVIL in described
    run = _run("show", "s1", "--path", str(evil), "--format", "json")
    _assert_safe(run.stdout)
    assert json.loads(run.stdout)["entry"]["description"] == EVIL
    run = _run("show", "--path", str(evil), "--format", "json")
    _assert_safe(run.stdout)
    assert json.loads(run.stdout)["known_issues"] == [EVIL]


@pytest.mark.parametrize("colour", [False, True], ids=["plain", "colour"])
def test_validate_messages_escape_a_hostile_file_name(reg: Path, colour: bool) -> None:
    (reg / f"x{EVIL}.txt").write_text("stray")
    run = _run("validate", str(reg), colour=colour)
    assert run.returncode == 1
    _assert_safe(run.stdout)
    assert f"x{SHOWN}.txt" in run.stdout


def test_add_notes_escape_registry_text(reg: Path, tmp_path: Path) -> None:
    src = write_state(tmp_path / "in" / "s9.pth", seed=9)
    train = tmp_path / "train.json"
    train.write_text(json.dumps(state_train("v9", trainer={"name": "rwkv_state_tune", "version": f"1.8.1{EVIL}"})))
    run = _run("add", str(reg), str(src), "--base", TINY_BASE, "--data-version", "v9", "--train", str(train))
    assert run.returncode == 0, run.stderr
    _assert_safe(run.stderr)
    assert f"1.8.1{SHOWN}" in run.stderr  # the TRN006 note quotes the trainer's version


def test_error_messages_escape_what_they_quote(tmp_path: Path) -> None:
    run = _run("list", str(tmp_path / f"no{EVIL}"))
    assert run.returncode == 2
    _assert_safe(run.stderr)
    assert f"no{SHOWN}" in run.stderr
