"""Smoke cases: tool-calling questions with their expected call, read from JSONL.

The format belongs to the registry (no torch here), so ``rwkv-registry smoke`` checks a case
file before it imports torch; ``rwkv_registry.model.smoke`` evaluates the cases.

A case file is JSON Lines (``schemas/smoke-case.schema.json`` describes one line). A line is
either a **case** or a **toolset** that later cases name instead of repeating the tools::

    {"toolset": "desk", "tools": [{"name": "read_file", "description": "…", "arguments": {…}}, …]}
    {"id": "easy-01", "category": "easy-selection", "tools": "desk",
     "messages": [{"role": "user", "content": "Show me notes.txt"}],
     "expected": {"name": "read_file", "arguments": {"path": "notes.txt"}}, "check_values": ["path"]}

A tool is ``{"name", "description", "arguments"}`` where ``arguments`` is a JSON Schema object
(``{"type": "object", "properties": {…}, "required": […]}``), as RWKV-Agent lists tools (FORMATS
§8). The pseudo-tool ``no_tool`` (argument ``reason``: the reply) is added to every case; an
abstention case expects ``no_tool``. ``messages`` is the conversation before the call (roles
user, assistant, tool); it ends with a user or tool turn. ``check_values`` names arguments whose
value must also match (strings compared trimmed and case-folded). Blank lines are skipped.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from rwkv_registry.core.errors import UsageError
from rwkv_registry.formats.jsonload import JsonLoadError, load_json_bytes

NO_TOOL = "no_tool"
CATEGORIES = ("easy-selection", "hard-selection", "argument-filling", "abstention", "multi-step")
CATEGORY_TITLES = {
    "easy-selection": "easy selection",
    "hard-selection": "hard selection (near-duplicates)",
    "argument-filling": "argument filling",
    "abstention": "abstention (no_tool)",
    "multi-step": "multi-step",
}
NO_TOOL_SPEC: dict[str, Any] = {
    "name": NO_TOOL,
    "description": "No tool fits the request: answer the user directly; reason is the reply.",
    "arguments": {
        "type": "object",
        "properties": {"reason": {"type": "string", "description": "The reply to the user."}},
        "required": ["reason"],
    },
}
DEFAULT_CASES = "default_cases.jsonl"
TINY_CASES = "tiny_cases.jsonl"
TOY_WIDTH = 512  # a base narrower than this is a toy: the smallest released RWKV-7 (0.1B) is 768 wide
_MAX_FILE = 16 << 20


@dataclass(frozen=True)
class Tool:
    """One callable tool: its name, description and argument schema."""

    name: str
    description: str
    arguments: dict[str, Any]

    @property
    def properties(self) -> dict[str, Any]:
        """The declared arguments (``arguments.properties``)."""
        props = self.arguments.get("properties", {})
        return props if isinstance(props, dict) else {}

    @property
    def required(self) -> tuple[str, ...]:
        """The arguments a call must give."""
        req = self.arguments.get("required", [])
        return tuple(r for r in req if isinstance(r, str)) if isinstance(req, list) else ()

    def to_json(self) -> dict[str, Any]:
        """The tool as listed in the System turn (key order name, description, arguments)."""
        return {"name": self.name, "description": self.description, "arguments": self.arguments}


NO_TOOL_TOOL = Tool(NO_TOOL_SPEC["name"], NO_TOOL_SPEC["description"], NO_TOOL_SPEC["arguments"])


@dataclass(frozen=True)
class Case:
    """One smoke question: the tools on offer, the conversation, and the call expected next."""

    id: str
    category: str
    tools: tuple[Tool, ...]  # as offered, no_tool last (added when the file does not list it)
    messages: tuple[tuple[str, str], ...]  # (role, text); ends with a user or tool turn
    expected_name: str
    expected_arguments: dict[str, Any]
    check_values: tuple[str, ...] = ()
    system: str | None = None  # replaces the default instruction line(s) of the System turn
    note: str = ""
    tools_key: str = field(default="", compare=False)  # identical tool lists share this key

    @property
    def abstain(self) -> bool:
        """True when the right answer is ``no_tool``."""
        return self.expected_name == NO_TOOL

    def tool(self, name: str) -> Tool | None:
        """The offered tool called ``name``, if any."""
        for t in self.tools:
            if t.name == name:
                return t
        return None


@dataclass(frozen=True)
class CaseSet:
    """The cases of one file, with the file's sha256 (recorded with every smoke result)."""

    cases: tuple[Case, ...]
    sha256: str
    source: str  # the path, or "builtin:<name>"

    def __len__(self) -> int:
        return len(self.cases)

    def categories(self) -> list[str]:
        """Categories in the order of :data:`CATEGORIES`, then any others in order of appearance."""
        seen = list(dict.fromkeys(c.category for c in self.cases))
        return [c for c in CATEGORIES if c in seen] + [c for c in seen if c not in CATEGORIES]


def builtin_path(name: str = DEFAULT_CASES) -> Path:
    """Path of a case file shipped with the package (``registry/data/<name>``)."""
    return Path(str(resources.files("rwkv_registry").joinpath("data", name)))


def is_toy_base(base: Mapping[str, Any]) -> bool:
    """Is the base (its record in index.json) a toy model, narrower than any released RWKV-7?

    Such a base (the demo's tiny one is 128 wide) cannot answer the built-in tool-calling cases,
    so a smoke run without ``--cases`` uses the tiny set (:data:`TINY_CASES`) instead.
    """
    arch = base.get("architecture")
    width = arch.get("n_embd") if isinstance(arch, Mapping) else None
    return isinstance(width, int) and not isinstance(width, bool) and width < TOY_WIDTH


def default_cases(base: Mapping[str, Any]) -> str:
    """Name of the built-in case set for ``base``: the tiny set for a toy base, else the default set."""
    return TINY_CASES if is_toy_base(base) else DEFAULT_CASES


def load_cases(path: str | Path | None = None) -> CaseSet:
    """Read and check a case file (default: the built-in tool-calling set).

    Every problem is a :class:`UsageError` naming the file, the line and what to fix; the whole
    file is checked against ``smoke-case.schema.json`` line by line, then for consistency
    (unique ids, known toolsets, the expected tool offered, arguments declared).
    """
    p = Path(path) if path is not None else builtin_path()
    display = str(path) if path is not None else f"builtin:{DEFAULT_CASES}"
    try:
        data = p.read_bytes()
    except FileNotFoundError:
        raise UsageError(f"{display}: no such case file", hint="Give a JSONL case file to --cases.") from None
    except OSError as e:
        raise UsageError(
            f"{display}: cannot read the case file ({e.strerror or e})", hint="Give a readable JSONL file to --cases."
        ) from None
    if len(data) > _MAX_FILE:
        raise UsageError(f"{display}: case file larger than {_MAX_FILE >> 20} MiB", hint=_CASE_HINT)
    return parse_cases(data, display)


_CASE_HINT = "See the case format in docs/smoke.md (schemas/smoke-case.schema.json)."
MAX_CASE_LINE = 256 * 1024  # a case line (toolsets aside): a smoke case is a short conversation


def parse_cases(data: bytes, display: str = "cases") -> CaseSet:
    """Parse JSONL case text (see the module docstring); ``display`` names it in messages."""
    from rwkv_registry.schemas import schema_errors, schema_summary

    toolsets: dict[str, tuple[Tool, ...]] = {}
    cases: list[Case] = []
    ids: dict[str, int] = {}
    lines = data.split(b"\n")
    for no, raw in enumerate(lines, 1):
        text = raw.strip()
        if not text:
            continue
        where = f"{display}:{no}"
        try:
            obj = load_json_bytes(text, path=where)
        except JsonLoadError as e:
            raise UsageError(e.message, hint="Each line of a case file is one JSON object.") from None
        errors = schema_errors("smoke-case", obj)
        if errors:
            shown = schema_summary(errors)
            raise UsageError(f"{where}: {shown}", hint="See schemas/smoke-case.schema.json (docs/smoke.md).")
        if "toolset" in obj:
            name = obj["toolset"]
            if name in toolsets:
                raise UsageError(
                    f"{where}: toolset {name!r} is defined twice", hint="Give each toolset line its own name."
                )
            toolsets[name] = _tools(obj["tools"], where)
            continue
        if len(text) > MAX_CASE_LINE and "toolset" not in obj:
            raise UsageError(
                f"{where}: a case line of {len(text) >> 10} KiB (at most {MAX_CASE_LINE >> 10} KiB)",
                hint="smoke is a quick check of short conversations; long ones belong in a full evaluation.",
            )
        case = _case(obj, toolsets, where)
        if case.id in ids:
            raise UsageError(
                f"{where}: case id {case.id!r} already used on line {ids[case.id]}", hint="Give every case its own id."
            )
        ids[case.id] = no
        cases.append(case)
    if not cases:
        raise UsageError(f"{display}: no cases", hint="A case file holds at least one case line.")
    return CaseSet(tuple(cases), hashlib.sha256(data).hexdigest(), display)


def _tools(items: list[Mapping[str, Any]], where: str) -> tuple[Tool, ...]:
    tools = [Tool(t["name"], t["description"], dict(t["arguments"])) for t in items]
    names = [t.name for t in tools]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise UsageError(f"{where}: tool {dup[0]!r} listed twice", hint="List each tool once per toolset or case.")
    for t in tools:
        undeclared = [r for r in t.required if r not in t.properties]
        if undeclared:
            raise UsageError(
                f"{where}: tool {t.name!r} requires {undeclared[0]!r} but does not declare it",
                hint="Declare every required argument under the tool's parameters.",
            )
    return tuple(tools)


def _case(obj: Mapping[str, Any], toolsets: Mapping[str, tuple[Tool, ...]], where: str) -> Case:
    cid = obj["id"]
    spec = obj["tools"]
    if isinstance(spec, str):
        if spec not in toolsets:
            known = ", ".join(toolsets) or "none defined above"
            raise UsageError(
                f"{where}: case {cid!r} names toolset {spec!r}, not defined above ({known})",
                hint="Define the toolset on a line before the cases that use it.",
            )
        tools = toolsets[spec]
        key = f"toolset:{spec}"
    else:
        tools = _tools(spec, where)
        key = json.dumps([t.to_json() for t in tools], sort_keys=True)
    if all(t.name != NO_TOOL for t in tools):
        tools = (*tools, NO_TOOL_TOOL)
    messages = tuple((m["role"], m["content"]) for m in obj["messages"])
    if messages[-1][0] not in ("user", "tool"):
        raise UsageError(f"{where}: case {cid!r}: the conversation must end with a user or tool turn", hint=_CASE_HINT)
    exp = obj["expected"]
    name, args = exp["name"], dict(exp.get("arguments", {}))
    case = Case(
        id=cid,
        category=obj["category"],
        tools=tools,
        messages=messages,
        expected_name=name,
        expected_arguments=args,
        check_values=tuple(obj.get("check_values", ())),
        system=obj.get("system"),
        note=obj.get("note", ""),
        tools_key=key,
    )
    tool = case.tool(name)
    if tool is None:
        raise UsageError(
            f"{where}: case {cid!r} expects {name!r}, which is not among its tools",
            hint="Offer the expected tool in the case's tools or toolset (or expect no_tool).",
        )
    missing = [r for r in tool.required if r not in args]
    extra = [a for a in args if a not in tool.properties]
    if missing or extra:
        what = f"lacks required {missing[0]!r}" if missing else f"gives {extra[0]!r}, not declared by the tool"
        raise UsageError(f"{where}: case {cid!r}: the expected call {what}", hint=_CASE_HINT)
    for a in case.check_values:
        if a not in args:
            raise UsageError(
                f"{where}: case {cid!r}: check_values names {a!r}, absent from the expected arguments",
                hint="check_values lists arguments of the expected call whose values are compared.",
            )
    return case
