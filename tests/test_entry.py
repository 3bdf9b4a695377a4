"""The console script's wrapper: Ctrl-C while the CLI is still being imported or its arguments
parsed gives exit code 130 and one line, never a traceback."""

from __future__ import annotations

import subprocess
import sys
from importlib.machinery import ModuleSpec
from pathlib import Path
from types import ModuleType

import pytest

from rwkv_registry.cli import entry as _entry


class _InterruptImport:
    """A meta-path finder that raises KeyboardInterrupt when ``name`` is imported, as a Ctrl-C would."""

    def __init__(self, name: str) -> None:
        self.name = name

    def find_spec(self, fullname: str, path: object = None, target: ModuleType | None = None) -> ModuleSpec | None:
        if fullname == self.name:
            raise KeyboardInterrupt
        return None


def test_ctrl_c_while_importing_the_cli(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delitem(sys.modules, "rwkv_registry.cli.main", raising=False)
    monkeypatch.setattr(sys, "meta_path", [_InterruptImport("rwkv_registry.cli.main"), *sys.meta_path])
    assert _entry.run(["validate", "."]) == 130
    err = capsys.readouterr().err
    assert err == "interrupted before the command started: nothing was done\n"


def test_ctrl_c_while_parsing_arguments(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from rwkv_registry.cli import main as cli

    def interrupted() -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "build_parser", interrupted)
    assert _entry.run(["validate", "."]) == 130
    assert "Traceback" not in capsys.readouterr().err


def test_the_wrapper_passes_main_through(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _entry.run(["validate", str(tmp_path / "absent")]) == 2  # a usage error, as from main
    assert "Traceback" not in capsys.readouterr().err


def test_python_dash_m_runs_the_cli() -> None:
    out = subprocess.run([sys.executable, "-m", "rwkv_registry", "rules"], capture_output=True, text=True)
    assert out.returncode == 0 and "HSH001" in out.stdout, out.stderr


def test_every_flag_of_every_command_says_what_it_does() -> None:
    import argparse

    from rwkv_registry.cli.main import build_parser

    silent = []
    for action in build_parser()._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                silent += [f"{name} {a.option_strings[0]}" for a in sub._actions if a.option_strings and not a.help]
    assert silent == []


def test_rules_markdown_and_format_are_exclusive(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        _entry.run(["rules", "--markdown", "--format", "json"])
    assert e.value.code == 2 and "not allowed with argument --markdown" in capsys.readouterr().err


def test_an_unknown_flag_gets_the_commands_usage_and_the_nearest_flag(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["add", "reg", "s1.pth", "--base", "b", "--data-version", "v1", "--train", "t.json", "--recomended"]
    with pytest.raises(SystemExit) as e:
        _entry.run(argv)
    err = capsys.readouterr().err
    assert e.value.code == 2 and "usage: rwkv-registry add " in err
    assert "unrecognized arguments: --recomended (did you mean --recommended?)" in err
    with pytest.raises(SystemExit):
        _entry.run(["validate", ".", "surplus"])
    err = capsys.readouterr().err
    assert "rwkv-registry validate: error: unrecognized arguments: surplus\n" in err


def test_add_choices_are_the_schema_enums() -> None:
    """`add --profile` offers exactly what index.schema.json accepts, `add --sampling` the presets of RWKV-Agent's
    presets.go, which the schema lists as its examples (one list would drift)."""
    import argparse

    from rwkv_registry.cli.main import build_parser
    from rwkv_registry.index.sampling import SAMPLING_PRESETS
    from rwkv_registry.schemas import load_schema

    entry = load_schema("index")["$defs"]["entry"]["properties"]
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)).choices["add"]
    actions = {a.dest: a for a in sub._actions if a.dest in ("profile", "sampling")}
    assert actions["profile"].choices == entry["profile"]["enum"]
    assert actions["sampling"].choices is None  # refused by add with a did-you-mean hint, not by argparse
    assert actions["sampling"].default == "g1k-agent" and entry["sampling"]["examples"] == list(SAMPLING_PRESETS)
    assert ", ".join(SAMPLING_PRESETS) in actions["sampling"].help
