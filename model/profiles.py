"""Prompt profiles and sampling presets: named, documented data (see ``docs/profiles.md``).

The G1 chat format (FORMATS §6; No-22-Github/RWKV-Agent ``internal/inference/prompt.go``,
``CompileGeneratePrompt`` at commit e3ed3d4, the newest version of the file: :data:`TEMPLATE`):

- each turn is ``"<Role>: <text>\\n\\n"`` with roles System, User, Assistant, Tool;
- System, User and Tool text is cleaned: ``\\r\\n`` and ``\\r`` become ``\\n``, blank lines are
  removed (``\\n\\n`` collapsed to ``\\n`` until none is left), then it is trimmed;
  Assistant text is kept as given;
- the prompt ends ``"Assistant:"`` followed by the profile's thinking suffix:
  nothing (thinking off), ``" <think></think"`` (fast: an empty, closed think block) or
  ``" <think"`` (full: the model writes its thinking). The final ``>`` is withheld on purpose: RWKV's
  tokenizer merges ``>`` with the text after it, so the model writes it (its output opens with ``>``;
  :meth:`PromptProfile.reconstruct` puts the prefix back, as RWKV-Agent's ``reconstructOutput`` does).

The sampling presets are RWKV-Agent's ``internal/samplingpreset/presets.go`` (:mod:`rwkv_registry.index.sampling`).
``docs/profiles.md`` embeds :func:`profiles_markdown`; a test keeps the two equal.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from rwkv_registry.core.errors import UsageError
from rwkv_registry.index.sampling import SAMPLING_PRESETS, SamplingPreset, did_you_mean, unknown_sampling_hint

__all__ = [
    "PROFILES",
    "ROLES",
    "SAMPLING_PRESETS",
    "TEMPLATE",
    "THINKING_SUFFIX",
    "Message",
    "PromptProfile",
    "SamplingPreset",
    "ThinkingMode",
    "clean_text",
    "get_profile",
    "get_sampling",
    "profiles_markdown",
]


class ThinkingMode(enum.StrEnum):
    """What follows ``Assistant:`` at the end of a prompt."""

    OFF = "off"
    FAST = "fast"
    FULL = "full"


# The template the profiles follow: RWKV-Agent's prompt.go at commit e3ed3d4 (2026-08-10, "fix: restore the withheld
# ">" in think prefixes"; PromptTemplateID "rwkv-g1-chat", PromptTemplateVersion 3), unchanged since in every stored
# version. Its CompileGeneratePrompt ends the prompt with
#     prompt.WriteString("Assistant:")
#     case ThinkingFast: formatted += " <think></think"
#     case ThinkingFull: formatted += " <think"
# The commit before it (35fbe6e) wrote the whole tags; docs/profiles.md has every version.
TEMPLATE = "rwkv-g1-chat v3, prompt.go @ e3ed3d4"

THINKING_SUFFIX: dict[ThinkingMode, str] = {
    ThinkingMode.OFF: "",
    ThinkingMode.FAST: " <think></think",
    ThinkingMode.FULL: " <think",
}

ROLES: dict[str, str] = {"system": "System", "user": "User", "assistant": "Assistant", "tool": "Tool"}
_CLEANED_ROLES = frozenset({"system", "user", "tool"})


@dataclass(frozen=True)
class PromptProfile:
    """How to render a conversation into a prompt, and when generation stops."""

    name: str
    description: str
    thinking: ThinkingMode
    stop_strings: tuple[str, ...]  # generation stops before the first of these (bytes level)
    stop_tokens: tuple[int, ...]  # generation stops at these ids (0 = end of text)
    template: str = TEMPLATE  # the upstream template version (commit) the rendering follows

    @property
    def assistant_suffix(self) -> str:
        """The end of every prompt: ``"Assistant:"`` plus the thinking suffix."""
        return "Assistant:" + THINKING_SUFFIX[self.thinking]

    @property
    def withheld(self) -> str:
        """What the model writes first to finish the tag the prompt left open: ``">"`` with thinking, else ``""``."""
        return ">" if THINKING_SUFFIX[self.thinking] else ""

    def reconstruct(self, output: str) -> str:
        """The model's ``output`` with the think prefix the prompt opened put back in front of it (RWKV-Agent's
        ``RWKVChatRenderer.reconstructOutput``): ``">plan</think>answer"`` becomes ``"<think>plan</think>answer"``.
        Output that already opens with ``<think>`` (after whitespace), and any output of a profile without
        thinking, is returned as it is."""
        suffix = THINKING_SUFFIX[self.thinking]
        if not suffix or output.strip().startswith("<think>"):
            return output
        return suffix.lstrip(" ") + output

    def render(self, messages: Iterable[Message | Mapping[str, str] | tuple[str, str]]) -> str:
        """The prompt for ``messages`` (``Message``, ``{"role", "content"}`` or ``(role, text)``)."""
        parts = []
        for raw in messages:
            msg = Message.coerce(raw)
            text = clean_text(msg.text) if msg.role in _CLEANED_ROLES else msg.text
            parts.append(f"{ROLES[msg.role]}: {text}\n\n")
        if not parts:
            raise UsageError("a prompt needs at least one message", hint='Pass e.g. [("user", "Hello")].')
        return "".join(parts) + self.assistant_suffix


@dataclass(frozen=True)
class Message:
    """One turn: ``role`` is system, user, assistant or tool."""

    role: str
    text: str

    @classmethod
    def coerce(cls, raw: Message | Mapping[str, str] | tuple[str, str]) -> Message:
        """Accept a Message, a ``{"role", "content"}`` mapping or a ``(role, text)`` pair."""
        if isinstance(raw, Message):
            msg = raw
        elif isinstance(raw, Mapping):
            msg = cls(str(raw.get("role", "")), str(raw.get("content", raw.get("text", ""))))
        else:
            role, text = raw
            msg = cls(str(role), str(text))
        role = msg.role.lower()
        if role not in ROLES:
            raise UsageError(
                f"unknown message role {msg.role!r}; use one of {sorted(ROLES)}",
                hint='Name each message\'s role with one of those words (any case), e.g. ("user", text).',
            )
        if not msg.text:
            raise UsageError(f"empty {role} message", hint="Give the message some text, or leave it out.")
        return cls(role, msg.text)


def clean_text(text: str) -> str:
    """G1 text cleaning: unify newlines, remove blank lines, trim."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    while "\n\n" in text:
        text = text.replace("\n\n", "\n")
    return text.strip()


# Stops shared by the G1 profiles: end of text, the turn separator, a new User turn.
G1_STOP_STRINGS: tuple[str, ...] = ("\n\n", "\nUser:")
G1_STOP_TOKENS: tuple[int, ...] = (0,)

PROFILES: dict[str, PromptProfile] = {
    p.name: p
    for p in (
        PromptProfile(
            name="g1k",
            description="G1 chat format, no thinking: the prompt ends 'Assistant:'. Used with State weights.",
            thinking=ThinkingMode.OFF,
            stop_strings=G1_STOP_STRINGS,
            stop_tokens=G1_STOP_TOKENS,
        ),
        PromptProfile(
            name="g1k-think",
            description="G1 chat format with full thinking: the prompt ends 'Assistant: <think' (the model writes "
            "the '>'). Used with MiSS adapters (they score clearly worse without thinking).",
            thinking=ThinkingMode.FULL,
            stop_strings=G1_STOP_STRINGS,
            stop_tokens=G1_STOP_TOKENS,
        ),
    )
}


def get_profile(name: str) -> PromptProfile:
    """The prompt profile ``name``; :class:`UsageError` lists the known names otherwise."""
    try:
        return PROFILES[name]
    except KeyError:
        raise UsageError(
            f"unknown prompt profile {name!r}; known: {', '.join(PROFILES)}",
            hint=did_you_mean(name, tuple(PROFILES))
            + "Use one of the known names (docs/profiles.md); an entry's profile is the one index.json records.",
        ) from None


def get_sampling(name: str) -> SamplingPreset:
    """The sampling preset ``name``; :class:`UsageError` lists the known names otherwise."""
    try:
        return SAMPLING_PRESETS[name]
    except KeyError:
        raise UsageError(
            f"unknown sampling preset {name!r}; known: {', '.join(SAMPLING_PRESETS)}",
            hint=unknown_sampling_hint(name),
        ) from None


def _md_cell(s: str) -> str:
    return "`" + s.encode("unicode_escape").decode("ascii").replace("|", "\\|") + "`"


def _md_list(items: Sequence[str]) -> str:
    return ", ".join(_md_cell(s) for s in items)


def profiles_markdown() -> str:
    """The two tables of ``docs/profiles.md`` (generated; a test compares them with the file)."""
    lines = [
        "| profile | thinking | prompt ends with | template followed | stop strings | stop tokens | use |",
        "|---|---|---|---|---|---|---|",
    ]
    for p in PROFILES.values():
        lines.append(
            f"| `{p.name}` | {p.thinking} | {_md_cell(p.assistant_suffix)} | {p.template} | "
            f"{_md_list(p.stop_strings)} | {', '.join(str(t) for t in p.stop_tokens)} | {p.description} |"
        )
    lines += [
        "",
        "| preset | temperature | top_p | top_k | presence | frequency | penalty decay | use |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for s in SAMPLING_PRESETS.values():
        lines.append(
            f"| `{s.name}` | {s.temperature:g} | {s.top_p:g} | {s.top_k} | {s.presence_penalty:g} | "
            f"{s.frequency_penalty:g} | {s.penalty_decay:g} | {s.description} |"
        )
    return "\n".join(lines) + "\n"
