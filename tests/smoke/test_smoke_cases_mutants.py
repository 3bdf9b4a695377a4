"""Mutation audit of registry/index/smoke_cases.py (the case-file format): the checks test_smoke_cases.py left open.

Hand-made mutants, one small change each, run against test_smoke_cases.py and test_toy_base_detection:

- S01 ``width < TOY_WIDTH`` -> ``<=`` (a 512-wide base is a toy): killed here
- S02 is_toy_base without ``not isinstance(width, bool)``: killed here
- S03 ``len(data) > _MAX_FILE`` -> ``>=``: killed here
- S04 load_cases without ``except OSError`` (a directory, EACCES): killed here
- S05 ``enumerate(lines, 1)`` -> ``enumerate(lines)``: killed by test_smoke_cases.py
- S06 blank lines not skipped: killed by test_smoke_cases.py
- S07 ``len(text) > MAX_CASE_LINE`` -> ``>=``: killed here
- S08 ``ids[case.id] = no - 1`` (line of the first use): killed by test_smoke_cases.py
- S09 sha256 of the stripped data: killed by test_smoke_cases.py
- S10 a tool listed twice refused only at three (``count > 2``): killed here
- S11 a required argument the tool does not declare let through: killed here
- S12 inline tools keyed by their names only (System cache): killed here
- S13 ``all(t.name != NO_TOOL ...)`` -> ``any`` (no_tool twice): killed here
- S14 a conversation ending with a tool turn refused: killed by test_smoke_cases.py
- S15 ``missing or extra`` -> ``missing and extra``: killed by test_smoke_cases.py
- S16 extra arguments checked against ``required``, not ``properties``: killed by test_smoke_cases.py
- S17 categories in file order, not CATEGORIES' order: killed by test_smoke_cases.py
- S18 a toolset defined twice let through: killed by test_smoke_cases.py
- S19 every toolset keyed ``"toolset"`` (System cache): killed here
- S20 Case.tool returns the last tool for any name: killed by test_smoke_cases.py
"""

from __future__ import annotations

import errno
import json
from pathlib import Path

import pytest
from test_smoke_cases import TOOLS, case_line, write_jsonl

from rwkv_registry.core.errors import UsageError
from rwkv_registry.index import smoke_cases
from rwkv_registry.index.smoke_cases import MAX_CASE_LINE, NO_TOOL, TOY_WIDTH, is_toy_base, load_cases, parse_cases
from rwkv_registry.model import get_profile, get_tokenizer
from rwkv_registry.model.smoke.prompt import PromptBuilder, render_text


def test_a_base_as_wide_as_the_toy_limit_is_no_toy() -> None:
    """S01: TOY_WIDTH is the first width that is not a toy (narrower than it is one)."""
    assert is_toy_base({"architecture": {"n_embd": TOY_WIDTH - 1}})
    assert not is_toy_base({"architecture": {"n_embd": TOY_WIDTH}})


def test_a_boolean_width_is_no_width() -> None:
    """S02: ``true`` (an int to Python) in a hand-edited index is no width, so it does not pick the tiny set."""
    assert not is_toy_base({"architecture": {"n_embd": True}})
    assert smoke_cases.default_cases({"architecture": {"n_embd": True}}) == smoke_cases.DEFAULT_CASES


def test_a_case_file_of_exactly_the_size_limit_is_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """S03: the limit is the largest file read; one byte more is refused naming the limit."""
    monkeypatch.setattr(smoke_cases, "_MAX_FILE", 4 << 20)
    line = json.dumps(case_line()).encode() + b"\n"
    p = tmp_path / "c.jsonl"
    p.write_bytes(line + b" " * ((4 << 20) - len(line)))  # a last line of blanks: skipped
    assert [c.id for c in load_cases(p).cases] == ["c1"]
    p.write_bytes(line + b" " * ((4 << 20) - len(line) + 1))
    with pytest.raises(UsageError, match=r"c\.jsonl: case file larger than 4 MiB"):
        load_cases(p)


def test_an_unreadable_case_file_is_a_usage_error(tmp_path: Path) -> None:
    """S04: ``--cases`` naming a directory (or a file without read permission) says so, not a traceback."""
    with pytest.raises(UsageError) as err:
        load_cases(tmp_path)
    assert err.value.message.startswith(f"{tmp_path}: cannot read the case file (")
    assert err.value.hint


def test_an_unreadable_case_file_names_the_os_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """S04, EACCES without root: the reason is the system's words."""

    def refuse(self: Path) -> bytes:
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(Path, "read_bytes", refuse)
    with pytest.raises(UsageError, match=r"c\.jsonl: cannot read the case file \(Permission denied\)"):
        load_cases(tmp_path / "c.jsonl")


def test_a_case_line_of_exactly_the_limit_is_read() -> None:
    """S07: MAX_CASE_LINE bytes is the longest case line taken; one more is refused."""
    base = json.dumps(case_line(messages=[{"role": "user", "content": ""}]))
    pad = MAX_CASE_LINE - len(base)
    at_limit = json.dumps(case_line(messages=[{"role": "user", "content": "x" * pad}]))
    assert len(at_limit) == MAX_CASE_LINE
    assert len(parse_cases(at_limit.encode(), "c.jsonl")) == 1
    over = json.dumps(case_line(messages=[{"role": "user", "content": "x" * (pad + 1)}]))
    with pytest.raises(UsageError, match=r"c\.jsonl:1: a case line of 256 KiB"):
        parse_cases(over.encode(), "c.jsonl")


@pytest.mark.parametrize("inline", [True, False], ids=["inline", "toolset"])
def test_a_tool_listed_twice_is_refused(tmp_path: Path, inline: bool) -> None:
    """S10: two tools of one name (the model could not tell which one a call means)."""
    tools = [TOOLS[0], TOOLS[1], TOOLS[0]]
    lines = [case_line(tools=tools)] if inline else [{"toolset": "t", "tools": tools}, case_line(tools="t")]
    with pytest.raises(UsageError, match=r"c\.jsonl:1: tool 'archive_card' listed twice"):
        load_cases(write_jsonl(tmp_path / "c.jsonl", *lines))


def test_a_tool_requiring_an_undeclared_argument_is_refused(tmp_path: Path) -> None:
    """S11: ``required`` naming an argument that ``properties`` lacks: the prompt would list a tool no call can
    satisfy."""
    bad = {**TOOLS[0], "arguments": {"type": "object", "properties": {"card": {}}, "required": ["card", "box"]}}
    with pytest.raises(UsageError, match=r"c\.jsonl:1: tool 'archive_card' requires 'box' but does not declare it"):
        load_cases(write_jsonl(tmp_path / "c.jsonl", case_line(tools=[bad, TOOLS[1]])))


def test_cases_whose_inline_tools_differ_only_in_descriptions_get_their_own_system_turn(tmp_path: Path) -> None:
    """S12: the System turn is cached per tools_key; two inline tool lists with the same names but other
    descriptions must not share it (the second case would be asked with the first case's tools)."""
    other = [{**TOOLS[0], "description": "Move a card to the archive."}, TOOLS[1]]
    a, b = load_cases(write_jsonl(tmp_path / "c.jsonl", case_line(id="a"), case_line(id="b", tools=other))).cases
    builder = PromptBuilder(get_profile("g1k"), get_tokenizer())
    assert "Archive a card." in render_text(builder, a)
    text_b = render_text(builder, b)
    assert "Move a card to the archive." in text_b and "Archive a card." not in text_b


def test_cases_of_different_toolsets_get_their_own_system_turn(tmp_path: Path) -> None:
    """S19: two toolsets, one System turn each (one builder renders both)."""
    other = [{**TOOLS[0], "description": "Move a card to the archive."}, TOOLS[1]]
    lines = [
        {"toolset": "one", "tools": TOOLS},
        {"toolset": "two", "tools": other},
        case_line(id="a", tools="one"),
        case_line(id="b", tools="two"),
    ]
    a, b = load_cases(write_jsonl(tmp_path / "c.jsonl", *lines)).cases
    builder = PromptBuilder(get_profile("g1k"), get_tokenizer())
    assert "Archive a card." in render_text(builder, a)
    assert "Move a card to the archive." in render_text(builder, b)


def test_a_file_listing_no_tool_itself_offers_it_once(tmp_path: Path) -> None:
    """S13: no_tool is added only when the tools lack it; listed by the file, it stays where the file put it."""
    own = {
        "name": NO_TOOL,
        "description": "Nothing fits.",
        "arguments": {"type": "object", "properties": {"reason": {"type": "string"}}, "required": ["reason"]},
    }
    (c,) = load_cases(write_jsonl(tmp_path / "c.jsonl", case_line(tools=[own, *TOOLS]))).cases
    assert [t.name for t in c.tools] == [NO_TOOL, "archive_card", "delete_card"]
    assert c.tool(NO_TOOL) is not None and c.tool(NO_TOOL).description == "Nothing fits."  # type: ignore[union-attr]
