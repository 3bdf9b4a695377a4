"""Scoring one generated tool call against its case (seed 003's rules).

The model writes the call after the pre-opened ``{"name":"``; generation stops at the closing
fence (or another stop). The call text is ``{"name":"`` + the output, and:

- **parse failure**: it is not exactly one JSON object (whitespace may follow it; nothing else),
  or the object is not ``{"name": <string>, "arguments": <object>}`` with no other key;
- **tool name exact**: the name equals the expected one;
- **arguments**: every argument the tool requires is present and none is *invented* (absent from
  the tool's declared properties); ``check_values`` arguments must also equal the reference
  (strings trimmed and case-folded, numbers and numeric strings by value): an optional one that
  the call leaves out is wrong too;
- **abstention correct**: ``no_tool`` when the case expects it (its ``reason`` is required);
- **false refusal**: ``no_tool`` when a tool was expected;
- **unknown tool**: a name that is not among the offered tools (an invented tool).

A case is *correct* when the call parses, the name is exact and the arguments pass.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

from rwkv_registry.index.smoke_cases import NO_TOOL, Case
from rwkv_registry.model.smoke.prompt import CALL_OPENER


@dataclass(frozen=True)
class CallScore:
    """The verdict on one generated call."""

    correct: bool
    parse_failure: bool
    parse_error: str  # why it did not parse ("" when it did)
    name: str | None  # the called tool (None on a parse failure)
    arguments: dict[str, Any] | None
    name_ok: bool
    unknown_tool: bool  # called a tool that is not offered
    missing: tuple[str, ...] = ()  # required arguments absent
    invented: tuple[str, ...] = ()  # arguments not declared by the tool
    wrong_values: tuple[str, ...] = ()  # check_values arguments that differ from the reference
    false_refusal: bool = False  # no_tool when a tool was expected
    abstained: bool = False  # called no_tool
    flags: tuple[str, ...] = field(default=())  # short labels for reports

    def to_json(self) -> dict[str, Any]:
        """The fields a report keeps."""
        return {
            "correct": self.correct,
            "parse_failure": self.parse_failure,
            "parse_error": self.parse_error,
            "name": self.name,
            "arguments": self.arguments,
            "name_ok": self.name_ok,
            "unknown_tool": self.unknown_tool,
            "missing": list(self.missing),
            "invented": list(self.invented),
            "wrong_values": list(self.wrong_values),
            "false_refusal": self.false_refusal,
        }


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


def parse_call(output: str) -> tuple[dict[str, Any] | None, str]:
    """``(call, "")`` when ``{"name":"`` + ``output`` is one well-formed call, else ``(None, why)``."""
    text = CALL_OPENER + output
    try:
        obj, end = json.JSONDecoder(parse_constant=_refuse_constant).raw_decode(text)
    except json.JSONDecodeError as e:
        return None, f"not JSON: {e.msg} (character {max(0, e.pos - len(CALL_OPENER))})"
    except ValueError as e:  # NaN / Infinity: not JSON
        return None, f"not JSON: {e}"
    rest = text[end:].strip()
    if rest:
        return None, f"text after the call: {rest[:40]!r}"
    if not isinstance(obj, dict):
        return None, "the call is not an object"
    extra = sorted(set(obj) - {"name", "arguments"})
    if extra:
        return None, f"unexpected key {extra[0]!r} in the call"
    if not isinstance(obj.get("name"), str):
        return None, "name is not a string"
    if not isinstance(obj.get("arguments"), dict):
        return None, "arguments is missing or not an object"
    return obj, ""


_WS = " \t\n\r"
_ESCAPES = '"\\/bfnrt'
_NUMBER = "0123456789+-.eE"


def json_prefix_ok(text: str) -> bool:
    """False once ``text`` can no longer begin one JSON value followed only by whitespace.

    A character-level scanner (strings, escapes, literals, nesting; numbers are checked loosely):
    it never refuses a prefix of valid JSON, so a generation stopped on its verdict is a parse
    failure whatever would have followed.
    """
    stack: list[str] = []
    state = "value"
    literal = ""  # the rest of true/false/null still expected
    key = False  # the string being read is an object key
    hex_left = 0
    i = 0
    while i < len(text):
        ch = text[i]
        i += 1
        if state == "string":
            if ch == "\\":
                state = "escape"
            elif ch == '"':
                state = "colon" if key else "after"
            elif ord(ch) < 0x20:
                return False
            continue
        if state == "escape":
            if ch == "u":
                state, hex_left = "hex", 4
            elif ch in _ESCAPES:
                state = "string"
            else:
                return False
            continue
        if state == "hex":
            if ch not in "0123456789abcdefABCDEF":
                return False
            hex_left -= 1
            if hex_left == 0:
                state = "string"
            continue
        if state == "literal":
            if ch != literal[0]:
                return False
            literal = literal[1:]
            if not literal:
                state = "after"
            continue
        if state == "number":
            if ch in _NUMBER:
                continue
            state = "after"  # and read this character as what follows the number
        if ch in _WS:
            continue
        if state in ("value", "value_or_end"):
            if state == "value_or_end" and ch == "]":
                stack.pop()
                state = "after"
            elif ch == "{":
                stack.append("{")
                state = "key_or_end"
            elif ch == "[":
                stack.append("[")
                state = "value_or_end"
            elif ch == '"':
                state, key = "string", False
            elif ch == "-" or ch.isdigit():
                state = "number"
            elif ch in "tfn":
                state, literal = "literal", {"t": "rue", "f": "alse", "n": "ull"}[ch]
            else:
                return False
        elif state in ("key", "key_or_end"):
            if ch == '"':
                state, key = "string", True
            elif state == "key_or_end" and ch == "}":
                stack.pop()
                state = "after"
            else:
                return False
        elif state == "colon":
            if ch != ":":
                return False
            state = "value"
        elif state == "after":
            if not stack:
                return False  # something after the complete value
            if ch == ",":
                state = "key" if stack[-1] == "{" else "value"
            elif ch == ("}" if stack[-1] == "{" else "]"):
                stack.pop()
            else:
                return False
    return True


def call_prefix_ok(output: str) -> bool:
    """Can ``{"name":"`` + ``output`` still become one parseable call? (Used to stop early.)"""
    return json_prefix_ok(CALL_OPENER + output)


def _norm(value: Any) -> Any:
    if isinstance(value, bool):  # tagged: True == 1.0 in Python, but true is not 1 in a call
        return ("bool", value)
    if value is None:
        return value
    if isinstance(value, int) and abs(value) > 2**53:  # beyond float's exact range (and float() overflows)
        return value
    if isinstance(value, int | float):
        return float(value) if math.isfinite(value) else str(value)
    if isinstance(value, str):
        s = value.strip().casefold()
        try:
            f = float(s)
        except ValueError:
            return s
        return f if math.isfinite(f) else s
    if isinstance(value, list):
        return [_norm(v) for v in value]
    if isinstance(value, dict):
        return {k: _norm(v) for k, v in value.items()}
    return value


def values_match(got: Any, want: Any) -> bool:
    """Argument equality for ``check_values`` (see the module docstring)."""
    return bool(_norm(got) == _norm(want))


def score_call(case: Case, output: str) -> CallScore:
    """Score the text generated after the opener for ``case``."""
    call, error = parse_call(output)
    if call is None:
        return CallScore(
            correct=False,
            parse_failure=True,
            parse_error=error,
            name=None,
            arguments=None,
            name_ok=False,
            unknown_tool=False,
            flags=("parse failure",),
        )
    name, args = call["name"], call["arguments"]
    tool = case.tool(name)
    name_ok = name == case.expected_name
    missing = tuple(r for r in tool.required if r not in args) if tool else ()
    invented = tuple(a for a in args if a not in tool.properties) if tool else ()
    wrong = (  # an absent check_values argument is wrong too (unless already counted as missing)
        tuple(
            a
            for a in case.check_values
            if a not in missing and (a not in args or not values_match(args[a], case.expected_arguments[a]))
        )
        if name_ok
        else ()
    )
    abstained = name == NO_TOOL
    false_refusal = abstained and not case.abstain
    correct = name_ok and tool is not None and not missing and not invented and not wrong
    flags = []
    if not name_ok:
        flags.append("false refusal" if false_refusal else ("unknown tool" if tool is None else "wrong tool"))
    if missing:
        flags.append("missing " + ", ".join(missing))
    if invented:
        flags.append("invented " + ", ".join(invented))
    if wrong:
        flags.append("wrong " + ", ".join(wrong))
    return CallScore(
        correct=correct,
        parse_failure=False,
        parse_error="",
        name=name,
        arguments=args,
        name_ok=name_ok,
        unknown_tool=tool is None,
        missing=missing,
        invented=invented,
        wrong_values=wrong,
        false_refusal=false_refusal,
        abstained=abstained,
        flags=tuple(flags),
    )
