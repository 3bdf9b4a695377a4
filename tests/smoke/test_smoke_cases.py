"""Case files: the shipped sets, the JSONL format and its refusals, prompts and scoring."""

from __future__ import annotations

import errno
import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rwkv_registry.core.errors import UsageError
from rwkv_registry.index import smoke_cases
from rwkv_registry.index.smoke_cases import (
    CATEGORIES,
    DEFAULT_CASES,
    MAX_CASE_LINE,
    NO_TOOL,
    TINY_CASES,
    TOY_WIDTH,
    builtin_path,
    is_toy_base,
    load_cases,
    parse_cases,
)
from rwkv_registry.model import get_profile, get_tokenizer
from rwkv_registry.model.smoke import casegen
from rwkv_registry.model.smoke.prompt import CALL_OPENER, PromptBuilder, expected_completion, render_text
from rwkv_registry.model.smoke.scoring import parse_call, score_call, values_match
from rwkv_registry.schemas import schema_errors

TOOLS = [
    {
        "name": "archive_card",
        "description": "Archive a card.",
        "arguments": {"type": "object", "properties": {"card": {"type": "string"}}, "required": ["card"]},
    },
    {
        "name": "delete_card",
        "description": "Delete a card.",
        "arguments": {
            "type": "object",
            "properties": {"card": {"type": "string"}, "why": {"type": "string"}},
            "required": ["card"],
        },
    },
]


def case_line(**over: object) -> dict[str, object]:
    c: dict[str, object] = {
        "id": "c1",
        "category": "hard-selection",
        "tools": TOOLS,
        "messages": [{"role": "user", "content": "Archive card 7"}],
        "expected": {"name": "archive_card", "arguments": {"card": "7"}},
        "check_values": ["card"],
    }
    c.update(over)
    return c


def write_jsonl(path: Path, *objs: object) -> Path:
    path.write_text("\n".join(json.dumps(o) for o in objs) + "\n")
    return path


# ---------------------------------------------------------------------------------- shipped sets


@pytest.mark.parametrize(("name", "render"), [(DEFAULT_CASES, casegen.default_jsonl), (TINY_CASES, casegen.tiny_jsonl)])
def test_shipped_files_are_what_casegen_writes(name, render):
    assert builtin_path(name).read_bytes() == render(), (
        f"data/{name} is stale: run `python -m rwkv_registry.model.smoke.casegen registry/data`"
    )


def test_default_set_covers_the_five_categories_with_forty_cases_or_more():
    cs = load_cases()
    assert len(cs) >= 40
    counts = {c: sum(1 for x in cs.cases if x.category == c) for c in CATEGORIES}
    assert all(n >= 5 for n in counts.values()), counts
    assert cs.categories() == list(CATEGORIES)
    assert cs.source == f"builtin:{DEFAULT_CASES}"


def test_default_set_offers_near_duplicates_and_no_tool_everywhere():
    cs = load_cases()
    for c in cs.cases:
        names = [t.name for t in c.tools]
        assert names[-1] == NO_TOOL and names.count(NO_TOOL) == 1
        assert {"archive_card", "delete_card", "archive_mail", "delete_mail", "search_mail", "web_search"} <= set(names)
    # every abstention case expects no_tool, and no other category does (except multi-step answers)
    assert all(c.abstain for c in cs.cases if c.category == "abstention")
    assert not any(c.abstain for c in cs.cases if c.category in ("easy-selection", "hard-selection"))


def test_every_shipped_line_follows_the_case_schema():
    for name in (DEFAULT_CASES, TINY_CASES):
        for line in builtin_path(name).read_text().splitlines():
            assert schema_errors("smoke-case", json.loads(line)) == []


def test_expected_calls_parse_back_to_themselves():
    # The completion the loss is measured on is exactly what the scorer accepts as correct.
    for name in (DEFAULT_CASES, TINY_CASES):
        for c in load_cases(builtin_path(name)).cases:
            text = expected_completion(c)
            assert text.endswith("\n```")
            call, error = parse_call(text[: -len("```")])
            assert error == "" and call == {"name": c.expected_name, "arguments": c.expected_arguments}
            assert score_call(c, text[: -len("```")]).correct


# ---------------------------------------------------------------------------------- the format


def test_toolset_lines_and_inline_tools(tmp_path):
    p = write_jsonl(
        tmp_path / "c.jsonl", {"toolset": "cards", "tools": TOOLS}, case_line(id="a", tools="cards"), case_line(id="b")
    )
    cs = load_cases(p)
    assert [c.id for c in cs.cases] == ["a", "b"]
    assert cs.cases[0].tools == cs.cases[1].tools
    assert cs.cases[0].tools_key != cs.cases[1].tools_key or cs.cases[0].tools_key
    assert cs.sha256 == __import__("hashlib").sha256(p.read_bytes()).hexdigest()


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        (["{not json"], "c.jsonl:1"),
        ([case_line(category="Bad Cat")], "c.jsonl:1: $.category"),
        ([case_line(), case_line()], "case id 'c1' already used on line 1"),
        ([case_line(tools="cards")], "names toolset 'cards', not defined above"),
        ([case_line(expected={"name": "send_mail", "arguments": {}})], "expects 'send_mail', which is not among"),
        ([case_line(expected={"name": "archive_card", "arguments": {}})], "lacks required 'card'"),
        ([case_line(expected={"name": "archive_card", "arguments": {"card": "7", "x": 1}})], "gives 'x', not declared"),
        ([case_line(check_values=["why"])], "check_values names 'why'"),
        (
            [case_line(messages=[{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}])],
            "must end with a user or tool turn",
        ),
        ([{"toolset": "t", "tools": TOOLS}, {"toolset": "t", "tools": TOOLS}, case_line()], "defined twice"),
        ([], "no cases"),
    ],
)
def test_bad_case_files_are_refused_with_file_and_line(tmp_path, lines, message):
    p = tmp_path / "c.jsonl"
    p.write_text("\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n")
    with pytest.raises(UsageError) as err:
        load_cases(p)
    assert message in err.value.message
    assert str(p) in err.value.message


def test_missing_case_file(tmp_path):
    with pytest.raises(UsageError, match="no such case file"):
        load_cases(tmp_path / "absent.jsonl")


# ---------------------------------------------------------------------------------- prompts


def test_prompt_lists_tools_and_pre_opens_the_call(tmp_path):
    c = load_cases(write_jsonl(tmp_path / "c.jsonl", case_line())).cases[0]
    text = render_text(PromptBuilder(get_profile("g1k"), get_tokenizer()), c)
    assert text.startswith("System: ")
    lines = text.split("\n\n")[0].split("\n")
    assert [json.loads(x)["name"] for x in lines[1:]] == ["archive_card", "delete_card", NO_TOOL]
    assert text.endswith('User: Archive card 7\n\nAssistant: ```json\n{"name":"')
    assert text.endswith(CALL_OPENER)


def test_thinking_profile_thinks_then_pre_opens(tmp_path):
    c = load_cases(write_jsonl(tmp_path / "c.jsonl", case_line())).cases[0]
    b = PromptBuilder(get_profile("g1k-think"), get_tokenizer())
    # prompt.go e3ed3d4 withholds the ">": the thinking pass's text opens with the model's ">"
    assert b.tok.decode(b.think_prompt(c).ids).endswith("Assistant: <think")
    assert render_text(b, c, ">card 7 to archive").endswith(
        'Assistant: <think>card 7 to archive</think> ```json\n{"name":"'
    )
    assert render_text(b, c).endswith('Assistant: <think></think> ```json\n{"name":"')  # an empty thinking
    # the System turn is a shared prefix of both prompts
    assert b.think_prompt(c).prefix == b.call_prompt(c, "x").prefix


def test_prompt_cleans_system_user_and_tool_turns_but_keeps_assistant_text(tmp_path):
    """FORMATS §6 / docs/profiles.md: System, User and Tool text loses blank lines and CRLF and is
    trimmed; an earlier Assistant call is kept as given. A case's own System text keeps its shared
    prefix apart from the default's (kills the System cache keyed on the tools alone)."""
    convo = [
        {"role": "user", "content": "List cards\r\n\r\nplease "},
        {"role": "assistant", "content": "```json\n{}\n\n```"},
        {"role": "tool", "content": "c-1\n\n\nc-2"},
    ]
    plain = case_line(id="a", messages=convo)
    own = case_line(id="b", messages=convo, system="Be brief.\n\nVery.")
    a, b = load_cases(write_jsonl(tmp_path / "c.jsonl", plain, own)).cases
    builder = PromptBuilder(get_profile("g1k"), get_tokenizer())
    text = render_text(builder, a)
    assert text.endswith(
        'User: List cards\nplease\n\nAssistant: ```json\n{}\n\n```\n\nTool: c-1\nc-2\n\nAssistant: ```json\n{"name":"'
    )
    own_text = render_text(builder, b)
    assert own_text.startswith("System: Be brief.\nVery.\n{")
    assert builder.system_ids(b) != builder.system_ids(a)
    assert render_text(builder, a) == text  # and the default System turn is not replaced by b's


def test_categories_follow_the_five_known_then_the_file_order(tmp_path):
    """The report's table order: the five categories as in seed 003, then any other in order of
    appearance, whatever the file's order."""
    lines = [
        case_line(id="a", category="zeta"),
        case_line(
            id="b", category="abstention", expected={"name": "no_tool", "arguments": {"reason": "x"}}, check_values=[]
        ),
        case_line(id="c", category="alpha"),
        case_line(id="d", category="easy-selection"),
    ]
    cs = load_cases(write_jsonl(tmp_path / "c.jsonl", *lines))
    assert cs.categories() == ["easy-selection", "abstention", "zeta", "alpha"]


# ---------------------------------------------------------------------------------- scoring


@pytest.fixture
def case(tmp_path):
    return load_cases(write_jsonl(tmp_path / "c.jsonl", case_line())).cases[0]


@pytest.fixture
def abstain(tmp_path):
    return load_cases(
        write_jsonl(
            tmp_path / "c.jsonl",
            case_line(expected={"name": "no_tool", "arguments": {"reason": "hi"}}, check_values=[]),
        )
    ).cases[0]


@pytest.mark.parametrize(
    ("output", "correct", "flags"),
    [
        ('archive_card","arguments":{"card":"7"}}\n', True, ()),
        ('archive_card","arguments":{"card":" 7 "}}', True, ()),
        ('archive_card","arguments":{"card":7}}', True, ()),
        ('archive_card","arguments":{"card":"8"}}', False, ("wrong card",)),
        ('delete_card","arguments":{"card":"7"}}', False, ("wrong tool",)),
        ('archive_cards","arguments":{"card":"7"}}', False, ("unknown tool",)),
        ('no_tool","arguments":{"reason":"no"}}', False, ("false refusal",)),
        ('archive_card","arguments":{}}', False, ("missing card",)),
        ('archive_card","arguments":{"card":"7","force":true}}', False, ("invented force",)),
        ('archive_card","arguments":{"card":"7"}} and more', False, ("parse failure",)),
        ('archive_card","arguments":{"card":"7"', False, ("parse failure",)),
        ('archive_card","arguments":"7"}', False, ("parse failure",)),
        ('archive_card","arguments":{},"extra":1}', False, ("parse failure",)),
        ('archive_card","arguments":{"card":NaN}}', False, ("parse failure",)),
    ],
)
def test_scoring_rules(case, output, correct, flags):
    s = score_call(case, output)
    assert s.correct is correct
    assert s.flags == flags
    assert s.parse_failure is (flags == ("parse failure",))
    assert s.false_refusal is (flags == ("false refusal",))
    assert s.unknown_tool is (flags == ("unknown tool",))


def _card_why_case(tmp_path, why):
    """One delete_card case whose check_values are ``card`` ("7") and ``why``."""
    expected = {"name": "delete_card", "arguments": {"card": "7", "why": why}}
    lines = case_line(expected=expected, check_values=["card", "why"])
    return load_cases(write_jsonl(tmp_path / "c.jsonl", lines)).cases[0]


@pytest.mark.parametrize(
    ("why", "correct"),
    [
        ("urgent", True),
        ("  Urgent ", True),  # surrounding whitespace and case do not count...
        ("\\turgent\\n", True),
        ("URGENT", True),
        ("urgentx", False),  # ...but every other character does
        ("ur gent", False),
        ("", False),
    ],
)
def test_string_values_compare_stripped_and_casefolded(tmp_path, why, correct):
    """A string that is no number: only ``.strip().casefold()`` makes these equal (float() does not)."""
    c = _card_why_case(tmp_path, "urgent")
    s = score_call(c, 'delete_card","arguments":{"card":"7","why":"' + why + '"}}')
    assert not s.parse_failure and s.correct is correct
    assert s.wrong_values == (() if correct else ("why",))
    assert s.flags == (() if correct else ("wrong why",))


@pytest.mark.parametrize(("expected", "produced"), [("Straße", "STRASSE"), ("straße", "Strasse")])
def test_string_values_compare_by_casefold_not_lower(tmp_path, expected, produced):
    """casefold() maps ß to ss, lower() does not: the comparison must be Unicode's caseless one."""
    c = _card_why_case(tmp_path, expected)
    s = score_call(c, 'delete_card","arguments":{"card":"7","why":"' + produced + '"}}')
    assert s.correct and s.wrong_values == ()


@pytest.mark.parametrize(
    ("arguments", "wrong"),
    [('{"card":"7","why":"urgent"}', ()), ('{"card":"7","why":"later"}', ("why",)), ('{"card":"7"}', ("why",))],
)
def test_an_optional_check_values_argument_left_out_is_wrong(tmp_path, arguments, wrong):
    """check_values asks for the value: a call without it (as args-07 without its folder) is not correct."""
    c = _card_why_case(tmp_path, "urgent")
    s = score_call(c, 'delete_card","arguments":' + arguments + "}")
    assert s.correct is (not wrong) and s.wrong_values == wrong and s.missing == ()
    assert s.flags == tuple(f"wrong {a}" for a in wrong)


def test_a_huge_integer_value_is_wrong_not_a_crash(case):
    """json reads a 400-digit number as an int that float() cannot take: scored, never an OverflowError."""
    s = score_call(case, 'archive_card","arguments":{"card":' + "9" * 400 + "}}")
    assert not s.correct and s.wrong_values == ("card",)
    assert values_match(10**400, 10**400) and not values_match(10**400, 10**400 + 1)
    assert values_match(2**53 + 1, 2**53 + 1) and values_match(7, "7.0")


@pytest.mark.parametrize(
    ("got", "want", "match"),
    [
        (True, True, True),
        (False, False, True),
        (True, 1, False),
        (1, True, False),
        (False, 0, False),
        (False, "0", False),
        ([True], [1], False),
        ({"a": False}, {"a": False}, True),
        (None, None, True),
        (0, None, False),
    ],
)
def test_booleans_are_not_numbers(got, want, match):
    assert values_match(got, want) is match


def test_abstention_needs_no_tool_with_a_reason(abstain):
    assert score_call(abstain, 'no_tool","arguments":{"reason":"Hello!"}}').correct
    s = score_call(abstain, 'no_tool","arguments":{}}')
    assert not s.correct and s.missing == ("reason",) and not s.false_refusal
    s = score_call(abstain, 'archive_card","arguments":{"card":"7"}}')
    assert not s.correct and not s.false_refusal and s.flags == ("wrong tool",)


# ---------------------------------------------------------------------------------- early stop


def test_every_prefix_of_an_expected_call_may_continue():
    from rwkv_registry.model.smoke.scoring import call_prefix_ok

    for name in (DEFAULT_CASES, TINY_CASES):
        for c in load_cases(builtin_path(name)).cases:
            text = expected_completion(c)[: -len("```")]
            assert all(call_prefix_ok(text[:i]) for i in range(len(text) + 1)), c.id


@pytest.mark.parametrize(
    "output",
    [
        'x" z',
        'x","arguments":{}} trailing',
        'x","arguments":{,',
        'x","arguments":{"a":tru3',
        'x","arguments":{"a":"\\q"',
        'x","arguments":{"a":"b\x01',  # a raw control character inside a string
        "x\n",
    ],
)
def test_a_call_that_can_no_longer_parse_is_recognised(output):
    from rwkv_registry.model.smoke.scoring import call_prefix_ok

    assert not call_prefix_ok(output)
    assert parse_call(output + '"}}')[0] is None  # and indeed nothing completes it here


_scalars = (
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8)
)
_values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=12,
)


@given(_values, st.booleans())
def test_json_prefix_scanner_accepts_every_prefix_of_valid_json(value, ascii_only):
    from rwkv_registry.model.smoke.scoring import json_prefix_ok

    text = json.dumps(value, ensure_ascii=ascii_only) + " \n"
    assert all(json_prefix_ok(text[:i]) for i in range(len(text) + 1))
    assert not json_prefix_ok(text + "x")


@pytest.mark.parametrize("ctrl", ["\x00", "\x01", "\t", "\n", "\x1f"])
def test_json_prefix_scanner_refuses_raw_control_characters_in_strings(ctrl):
    """JSON strings may hold control characters only escaped; outside strings whitespace is fine."""
    from rwkv_registry.model.smoke.scoring import call_prefix_ok, json_prefix_ok

    assert not json_prefix_ok('{"name": "x' + ctrl)
    assert not json_prefix_ok('{"name": "x' + ctrl + 'y"}')
    assert not json_prefix_ok('{"k' + ctrl)  # in a key too
    assert not call_prefix_ok("x" + ctrl)
    escaped = f"\\u{ord(ctrl):04x}"  # the escaped form is accepted, whole or cut off
    assert json_prefix_ok('{"name": "x' + escaped)
    assert json_prefix_ok('{"name": "x' + escaped[:3])
    assert json_prefix_ok('{"name": "x' + escaped + '"}')
    assert call_prefix_ok("x" + escaped)
    assert json.loads('{"name": "x' + escaped + '"}') == {"name": "x" + ctrl}
    if ctrl in "\t\n":  # JSON whitespace between tokens
        assert json_prefix_ok("{" + ctrl + '"name"' + ctrl + ":" + ctrl + '"x"' + ctrl + "}" + ctrl)


def test_a_huge_case_line_is_refused_with_the_limit() -> None:
    """A 5 MB message never finished; a case line is capped, toolset lines are not."""
    from rwkv_registry.index.smoke_cases import MAX_CASE_LINE, builtin_path, parse_cases

    toolset, case = builtin_path("tiny_cases.jsonl").read_text().splitlines()[:2]
    big = json.loads(case)
    big["messages"][0]["content"] = "x" * (MAX_CASE_LINE + 1)
    with pytest.raises(UsageError, match=r"huge\.jsonl:2: a case line of \d+ KiB \(at most 256 KiB\)"):
        parse_cases(f"{toolset}\n{json.dumps(big)}\n".encode(), "huge.jsonl")


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
