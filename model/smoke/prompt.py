"""Prompts of the smoke evaluation: how RWKV-Agent asks for a tool call (FORMATS §8).

The System turn is an instruction line followed by the tools, one compact JSON object per line,
``no_tool`` last. Earlier turns follow (User, Assistant calls, Tool results). The prompt then
pre-opens the call, so the model only writes the rest of it::

    System: <instruction>\\n{"name":"read_file",…}\\n…\\n{"name":"no_tool",…}\\n\\n
    User: Show me notes.txt\\n\\n
    Assistant: ```json\\n{"name":"                         (profile g1k)

and generation stops at ```` ``` ````, ``\\n\\nUser:``, ``\\nUser:`` or ``\\nSystem:``.

With the thinking profile (``g1k-think``) the model first thinks: the prompt ends
``Assistant: <think`` (RWKV-Agent's prompt.go since e3ed3d4 withholds the ``>``: the model writes it) and
a first pass generates until ``</think>`` (at most ``think_tokens`` tokens); its text opens with the
model's ``>``. The second pass appends that text, ``</think>`` and the same opener
(``Assistant: <think>…</think> ```json\\n{"name":"``). The joint between ``</think>`` and the
fence (one space) mirrors ``Assistant: ```json`` and is not verified on released weights.

Token ids are built segment by segment (System turn, the rest of the conversation, the
continuation), each segment tokenized on its own: the System segment is then a shared prefix of
every case with the same tools, whose state is computed once (the ids equal the whole-text
tokenization whenever no vocabulary entry spans a turn boundary, which ``\\n\\n`` makes rare).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rwkv_registry.index.smoke_cases import Case
from rwkv_registry.model.profiles import ROLES, PromptProfile, ThinkingMode, clean_text
from rwkv_registry.model.tokenizer import RWKVTokenizer

DEFAULT_INSTRUCTION = (
    "You are an agent on the user's computer. Call exactly one tool per turn, answering with one fenced call: "
    '```json {"name": "TOOL", "arguments": {...}} ```. Give every required argument and no other. '
    "When no tool fits, call no_tool with your reply as reason. Tools, one per line:"
)
CALL_OPENER = '{"name":"'
FENCE_OPEN = "```json\n"
FENCE_CLOSE = "\n```"
ANSWER_PREFIX = " " + FENCE_OPEN + CALL_OPENER  # after "Assistant:" (or "</think>")
THINK_CLOSE = "</think>"
CALL_STOPS: tuple[str, ...] = ("```", "\n\nUser:", "\nUser:", "\nSystem:")
THINK_STOPS: tuple[str, ...] = (THINK_CLOSE, "\n\nUser:", "\nUser:", "\nSystem:")
STOP_TOKENS: tuple[int, ...] = (0,)


def tool_line(tool: Any) -> str:
    """One tool as a compact JSON line (``name``, ``description``, ``arguments``)."""
    return json.dumps(tool.to_json(), ensure_ascii=False, separators=(",", ":"))


def call_json(name: str, arguments: dict[str, Any]) -> str:
    """A call as the model should write it: compact JSON ``{"name":…,"arguments":{…}}``."""
    return json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False, separators=(",", ":"))


def fenced_call(name: str, arguments: dict[str, Any]) -> str:
    """An earlier assistant turn: the fenced call."""
    return FENCE_OPEN + call_json(name, arguments) + FENCE_CLOSE


def system_text(case: Case) -> str:
    """The System turn's text: the instruction and one line per tool."""
    lines = [case.system or DEFAULT_INSTRUCTION, *(tool_line(t) for t in case.tools)]
    return "\n".join(lines)


def expected_completion(case: Case) -> str:
    """What the model should write after the opener: the rest of the call and the closing fence."""
    full = call_json(case.expected_name, case.expected_arguments)
    assert full.startswith(CALL_OPENER)
    return full[len(CALL_OPENER) :] + FENCE_CLOSE


def _turn(role: str, text: str) -> str:
    """One G1 turn; System, User and Tool text is cleaned, Assistant text kept (as the profiles do)."""
    title = ROLES[role]
    body = text if role == "assistant" else clean_text(text)
    return f"{title}: {body}\n\n"


@dataclass(frozen=True)
class PromptIds:
    """A prompt as token ids: ``prefix`` (the System turn, shared) then ``suffix``."""

    prefix: tuple[int, ...]
    suffix: tuple[int, ...]

    @property
    def ids(self) -> tuple[int, ...]:
        """The whole prompt."""
        return self.prefix + self.suffix


class PromptBuilder:
    """Renders cases into token ids for one prompt profile (``g1k`` or ``g1k-think``)."""

    def __init__(self, profile: PromptProfile, tokenizer: RWKVTokenizer) -> None:
        if profile.thinking == ThinkingMode.FAST:
            raise ValueError("the smoke evaluation supports profiles with thinking off or full")
        self.profile = profile
        self.tok = tokenizer
        self._prefix_cache: dict[str, tuple[int, ...]] = {}

    @property
    def thinks(self) -> bool:
        """True when the profile makes the model think before answering."""
        return self.profile.thinking == ThinkingMode.FULL

    def system_ids(self, case: Case) -> tuple[int, ...]:
        """Token ids of the System turn (cached per tool list and instruction)."""
        key = f"{case.system or ''}\0{case.tools_key}"
        if key not in self._prefix_cache:
            self._prefix_cache[key] = tuple(self.tok.encode(_turn("system", system_text(case))))
        return self._prefix_cache[key]

    def conversation(self, case: Case) -> str:
        """The turns after the System turn, ending with the profile's ``Assistant:`` suffix."""
        return "".join(_turn(r, t) for r, t in case.messages) + self.profile.assistant_suffix

    def think_prompt(self, case: Case) -> PromptIds:
        """The prompt of the thinking pass (ends ``Assistant: <think``)."""
        return PromptIds(self.system_ids(case), tuple(self.tok.encode(self.conversation(case))))

    def call_prompt(self, case: Case, thinking: str | None = None) -> PromptIds:
        """The prompt that pre-opens the call; ``thinking`` is the first pass's text (thinking profile; None: an
        empty thinking, the ``>`` that closes the opened tag and nothing more)."""
        convo = tuple(self.tok.encode(self.conversation(case)))
        if self.thinks:
            tail = (self.profile.withheld if thinking is None else thinking) + THINK_CLOSE + ANSWER_PREFIX
        else:
            tail = ANSWER_PREFIX
        return PromptIds(self.system_ids(case), convo + tuple(self.tok.encode(tail)))

    def completion_ids(self, case: Case) -> tuple[int, ...]:
        """The expected completion, teacher-forced for the loss."""
        return tuple(self.tok.encode(expected_completion(case)))


def render_text(builder: PromptBuilder, case: Case, thinking: str | None = None) -> str:
    """The call prompt as text (for humans and docs)."""
    return builder.tok.decode(builder.call_prompt(case, thinking).ids)


def stop_bytes(stops: Sequence[str]) -> tuple[bytes, ...]:
    """Stop strings as UTF-8 bytes."""
    return tuple(s.encode("utf-8") for s in stops)
