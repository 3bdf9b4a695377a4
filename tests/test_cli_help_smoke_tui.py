"""`smoke --help` and `tui --help` end with one example command line, which the parser accepts as written."""

from __future__ import annotations

import shlex

import pytest

from rwkv_registry.cli import build_parser, main

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
