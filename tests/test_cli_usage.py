"""The command line's usage: every command that takes a registry root takes it as PATH or as --path PATH, and a
mistyped option gets the nearest real one."""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

import pytest

from rwkv_registry.cli.main import build_parser, main, parse_command_line

# each command's other arguments (PATH aside), enough for the parser
OTHERS = {
    "validate": [],
    "init": [],
    "add-base": ["base.pth", "--source", "BlinkDL/rwkv7-g1"],
    "add": ["s1.pth", "--base", "B", "--data-version", "v1", "--train", "t.json"],
    "sums": ["--check"],
    "readme": [],
    "recover": [],
    "demo": [],
    "list": ["--filter", "method:miss"],
    "tui": [],
    "smoke": ["v1", "--base-file", "base.pth"],
    "score": ["v1", "--benchmark", "exam"],
    "sign": ["--key", "k"],
    "verify": ["--pubkey", "k.pub"],
    "push": ["--repo", "o/r"],
    "pull": [],
}


def _subparsers() -> dict[str, argparse.ArgumentParser]:
    p = build_parser()
    return next(a for a in p._actions if isinstance(a, argparse._SubParsersAction)).choices


def test_every_command_with_a_registry_root_has_path_and_is_listed_here() -> None:
    with_path = {name for name, sp in _subparsers().items() if any(a.dest == "path" for a in sp._actions)}
    assert with_path == {*OTHERS, "show"}
    for name in OTHERS:
        text = _subparsers()[name].format_help()
        assert "--path PATH" in text and "[PATH]" in text, name


@pytest.mark.parametrize("command", sorted(OTHERS))
def test_path_option_reads_as_the_positional_path(command: str) -> None:
    """PATH, --path PATH before or after the other arguments, and both naming one directory: the same command."""
    parser = build_parser()
    lead = ["o/r"] if command == "pull" else []  # pull OWNER/REPO PATH
    positional, _ = parse_command_line(parser, [command, *lead, "reg", *OTHERS[command]])
    forms = (
        [command, *lead, "--path", "reg", *OTHERS[command]],
        [command, *lead, *OTHERS[command], "--path", "reg"],
        [command, "--path=reg", *lead, *OTHERS[command]],
        [command, *lead, "reg", *OTHERS[command], "--path", "./reg/"],
    )
    for argv in forms:
        args, extra = parse_command_line(parser, argv)
        assert extra == [] and vars(args) == vars(positional), argv


def test_path_and_a_different_path_option_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        main(["validate", str(tmp_path / "a"), "--path", str(tmp_path / "b")])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert f"two registry roots, PATH {tmp_path / 'a'} and --path {tmp_path / 'b'}" in err
    assert "give it once, as PATH or as --path PATH" in err


def test_a_required_path_is_still_required(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        main(["sums", "--check"])
    assert e.value.code == 2
    assert "the following arguments are required: PATH (or --path PATH)" in capsys.readouterr().err


def test_validate_and_list_default_to_the_current_directory(
    reg: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(reg)
    assert main(["validate"]) == 0
    assert capsys.readouterr().out.splitlines()[-1].startswith("OK .:")


def test_commands_run_with_path_option(reg: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sums", "--check", "--path", str(reg)]) == 0
    assert "SHA256SUMS: OK" in capsys.readouterr().out
    assert main(["validate", "--path", str(reg)]) == 0
    assert main(["readme", "--path", str(reg)]) == 0
    assert "already up to date" in capsys.readouterr().out
    new = tmp_path / "new"
    assert main(["init", "--path", str(new)]) == 0
    assert (new / "index.json").is_file()
    shutil.rmtree(new)


def _typo(flag: str) -> str:
    """The flag without its second letter (--base -> --bse, --keep-previous-active -> --kep-previous-active)."""
    return flag[:3] + flag[4:]


@pytest.mark.parametrize("command", sorted(_subparsers()))
def test_a_mistyped_option_gets_the_nearest_one(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Every option of every command, mistyped: the error names the option meant, whether argparse reports the
    word as unrecognized or (the option being required) says the option is missing."""
    sp = _subparsers()[command]
    lead = {"pull": ["o/r", "reg"], "compare": ["a.json", "b.json"], "keygen": ["k"]}.get(command, ["reg"])
    if command == "show":
        lead = []
    flags = [o for a in sp._actions for o in a.option_strings if o.startswith("--") and len(o) > 5]
    flags = [f for f in flags if f not in ("--help", "--freeze-previous")]
    for flag in flags:
        typo = _typo(flag)
        with pytest.raises(SystemExit) as e:
            main([command, *lead, typo, "x"])
        assert e.value.code == 2
        err = capsys.readouterr().err.splitlines()[-1]
        assert f"did you mean {flag}" in err, (flag, typo, err)


def test_a_mistyped_required_option_is_named_with_the_missing_one(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        main(["add", "reg", "s1.pth", "--bsae", "B", "--data-version", "v1", "--train", "t.json"])
    assert e.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        "rwkv-registry add: error: the following arguments are required: --base (did you mean --base for --bsae?)"
    )
