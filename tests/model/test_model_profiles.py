"""Prompt profiles (G1 chat format) and sampling presets, and their documentation."""

from __future__ import annotations

from pathlib import Path

import pytest

from rwkv_registry.errors import UsageError
from rwkv_registry.model import PROFILES, SAMPLING_PRESETS, Message, get_profile, get_sampling
from rwkv_registry.model.profiles import clean_text, profiles_markdown

DOC = Path(__file__).resolve().parents[2] / "docs" / "profiles.md"


def test_g1k_renders_turns_and_ends_with_assistant_colon() -> None:
    prompt = get_profile("g1k").render(
        [("system", "You call tools."), ("user", "List files"), ("assistant", "ok"), ("tool", "a.txt")]
    )
    assert prompt == ("System: You call tools.\n\nUser: List files\n\nAssistant: ok\n\nTool: a.txt\n\nAssistant:")


def test_g1k_think_opens_a_think_block() -> None:
    assert get_profile("g1k-think").render([{"role": "user", "content": "hi"}]) == "User: hi\n\nAssistant: <think>"


def test_text_cleaning_of_system_user_tool_but_not_assistant() -> None:
    messy = "  line one\r\n\r\n\r\nline two\rline three\n\n  "
    prompt = get_profile("g1k").render([Message("user", messy), Message("assistant", "a\n\nb")])
    assert prompt == "User: line one\nline two\nline three\n\nAssistant: a\n\nb\n\nAssistant:"
    assert clean_text("\n\n\nx\n\n\n\ny\n") == "x\ny"


def test_bad_messages_are_refused() -> None:
    with pytest.raises(UsageError, match=r"unknown message role 'bot'"):
        get_profile("g1k").render([("bot", "x")])
    with pytest.raises(UsageError, match="empty user message"):
        get_profile("g1k").render([("user", "")])
    with pytest.raises(UsageError, match="at least one message"):
        get_profile("g1k").render([])


def test_profiles_and_presets_are_named_data() -> None:
    assert set(PROFILES) == {"g1k", "g1k-think"}
    assert {"greedy", "g1k-agent"} <= set(SAMPLING_PRESETS)
    agent = get_sampling("g1k-agent")
    assert (agent.temperature, agent.top_p, agent.top_k) == (0.3, 0.5, 0)
    assert (agent.presence_penalty, agent.frequency_penalty, agent.penalty_decay) == (0.0, 0.0, 1.0)
    assert get_sampling("greedy").greedy and not agent.greedy
    for p in PROFILES.values():
        assert 0 in p.stop_tokens and "\n\n" in p.stop_strings
    with pytest.raises(UsageError, match="unknown prompt profile 'g2'; known: g1k, g1k-think"):
        get_profile("g2")
    with pytest.raises(UsageError, match="unknown sampling preset 'hot'"):
        get_sampling("hot")


def test_docs_embed_the_generated_tables() -> None:
    text = DOC.read_text(encoding="utf-8")
    assert profiles_markdown() in text, (
        "docs/profiles.md is out of date: paste the output of "
        "`python -c 'from rwkv_registry.model.profiles import profiles_markdown; print(profiles_markdown())'`"
    )
