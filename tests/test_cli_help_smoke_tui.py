"""`smoke --help` and `tui --help` end with one example command line, which the parser accepts as written."""

from __future__ import annotations

import shlex

import pytest

from rwkv_registry.cli.main import build_parser, main

EXAMPLES = {
    "smoke": "rwkv-registry smoke . v141b-s1224 --base-file rwkv7-g1k-7.2b-20260930-ctx25600.pth --record",
    "tui": "rwkv-registry tui .",
}


@pytest.mark.parametrize("command", sorted(EXAMPLES))
def test_help_ends_with_an_example_the_parser_accepts(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        main([command, "--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    [line] = [x for x in out.splitlines() if x.startswith("example: ")]
    assert out.rstrip().endswith(line)  # the last line, printed as written (not re-wrapped)
    example = line.removeprefix("example: ").split("    (")[0]
    assert example == EXAMPLES[command]
    args = build_parser().parse_args(shlex.split(example)[1:])
    assert (args.command, args.path) == (command, ".")
    if command == "smoke":
        assert (args.entry_id, args.base_file, args.record) == (
            "v141b-s1224",
            "rwkv7-g1k-7.2b-20260930-ctx25600.pth",
            True,
        )
    else:
        assert "q quits" in line and "escape goes back to the tree" in line


def _commands() -> dict:
    import argparse

    p = build_parser()
    return next(a for a in p._actions if isinstance(a, argparse._SubParsersAction)).choices


@pytest.mark.parametrize("command", sorted(_commands()))
def test_every_command_help_ends_with_one_example_of_itself(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Each command's --help ends with one `example: rwkv-registry COMMAND …` line, printed as written, which
    the command line accepts (words after four spaces and a parenthesis are a remark)."""
    from rwkv_registry.cli.main import parse_command_line

    with pytest.raises(SystemExit) as e:
        main([command, "--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    [line] = [x for x in out.splitlines() if x.startswith("example: ")]
    assert out.rstrip().endswith(line)
    words = shlex.split(line.removeprefix("example: ").split("    (")[0])
    assert words[:2] == ["rwkv-registry", command]
    args, extra = parse_command_line(build_parser(), words[1:])
    assert args.command == command and extra == []


def test_docs_commands_md_is_generated_from_the_parser() -> None:
    """docs/commands.md: a section per command with its synopsis and its --help example, in step with the parser.
    Regenerate: python -c "from rwkv_registry.cli.main import commands_markdown; print(commands_markdown(), end='')"
    > docs/commands.md"""
    from pathlib import Path

    from rwkv_registry.cli.main import EXAMPLES, commands_markdown

    doc = (Path(__file__).resolve().parents[1] / "docs" / "commands.md").read_text()
    assert doc == commands_markdown(), "docs/commands.md is stale: regenerate it (see this test's docstring)"
    sections = [s.split("\n", 1)[0] for s in doc.split("\n## ")[1:]]
    assert sections == list(_commands()) and set(EXAMPLES) == set(_commands())
    for name in sections:
        body = doc.split(f"\n## {name}\n", 1)[1].split("\n## ", 1)[0]
        assert f"```\nrwkv-registry {name}" in body and f"```sh\n{EXAMPLES[name]}\n```" in body
