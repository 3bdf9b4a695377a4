"""Prompt profiles (G1 chat format) and sampling presets, and their documentation.

The oracle is RWKV-Agent's source: the prompt ends and the preset values are built from its lines, quoted
verbatim below (No-22-Github/RWKV-Agent; docs/profiles.md quotes the same lines and says which commit each
profile follows).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from rwkv_registry.core.errors import UsageError
from rwkv_registry.model import PROFILES, SAMPLING_PRESETS, Message, get_profile, get_sampling
from rwkv_registry.model.profiles import PromptProfile, ThinkingMode, clean_text, profiles_markdown

DOC = Path(__file__).resolve().parents[2] / "docs" / "profiles.md"

# internal/inference/prompt.go, CompileGeneratePrompt, at commit e3ed3d4 (2026-08-10, "fix: restore the withheld
# ">" in think prefixes"; unchanged in every later stored version), lines 70-82 verbatim.
PROMPT_GO_E3ED3D4 = """\
\tprompt.WriteString("Assistant:")

\tformatted := prompt.String()
\t// The final ">" is deliberately withheld so the model generates it. RWKV
\t// tokenises ">" together with the text that follows it, so supplying the
\t// closing bracket here would start generation from a token boundary the
\t// model never saw in training.
\tswitch PromptThinkingMode(request.Prompt) {
\tcase ThinkingFast:
\t\tformatted += " <think></think"
\tcase ThinkingFull:
\t\tformatted += " <think"
\t}
"""

# internal/samplingpreset/presets.go (commit 0e6083de), the presets map and NoTruncation, verbatim (Use lines and
# closing braces left out).
PRESETS_GO = """\
const NoTruncation = 65536
\t"greedy": {
\t\tName: "greedy", Temperature: 1, TopK: 1, TopP: 1, PenaltyDecay: 1,
\t"g1k-agent": {
\t\tName: "g1k-agent", Temperature: 0.3, TopK: NoTruncation, TopP: 0.5, PenaltyDecay: 1,
\t"g1k-agent-fast": {
\t\tName: "g1k-agent-fast", Temperature: 0.3, TopK: NoTruncation, TopP: 0.5,
\t\tPresencePenalty: 0.5, FrequencyPenalty: 0.1, PenaltyDecay: 0.996,
\t"g1k-stable": {
\t\tName: "g1k-stable", Temperature: 1, TopK: 20, TopP: 0.3, PenaltyDecay: 1,
\t"backend": {
\t\tName: "backend", Temperature: 1, TopK: 20, TopP: 0.3,
\t\tPresencePenalty: 2, FrequencyPenalty: 0.2, PenaltyDecay: 0.996,
"""


def go_prompt_ends() -> dict[ThinkingMode, str]:
    """The end of a prompt per thinking mode, as the quoted prompt.go builds it."""
    base = re.search(r'prompt\.WriteString\("(.*)"\)', PROMPT_GO_E3ED3D4)
    assert base is not None
    ends = {ThinkingMode.OFF: base[1]}
    for mode, go in ((ThinkingMode.FAST, "ThinkingFast"), (ThinkingMode.FULL, "ThinkingFull")):
        m = re.search(rf'case {go}:\n\t\tformatted \+= "(.*)"\n', PROMPT_GO_E3ED3D4)
        assert m is not None, go
        ends[mode] = base[1] + m[1]
    return ends


def go_presets() -> dict[str, dict[str, float]]:
    """Each preset's fields as the quoted presets.go sets them (a field it leaves out is Go's zero)."""
    no_trunc = re.search(r"NoTruncation = (\d+)", PRESETS_GO)
    assert no_trunc is not None
    out: dict[str, dict[str, float]] = {}
    for name, body in re.findall(r'\t"([a-z0-9-]+)": \{\n((?:\t\t.*\n)+)', PRESETS_GO):
        fields = dict(re.findall(r"(\w+): ([\w.]+)", body.replace(f'Name: "{name}", ', "")))
        values = {k: float(no_trunc[1] if v == "NoTruncation" else v) for k, v in fields.items()}
        out[name] = {
            k: values.get(k, 0.0)
            for k in ("Temperature", "TopK", "TopP", "PresencePenalty", "FrequencyPenalty", "PenaltyDecay")
        }
    return out


def test_prompt_ends_are_prompt_go_e3ed3d4s_with_the_withheld_bracket() -> None:
    ends = go_prompt_ends()
    assert ends == {
        ThinkingMode.OFF: "Assistant:",
        ThinkingMode.FAST: "Assistant: <think></think",
        ThinkingMode.FULL: "Assistant: <think",
    }
    msgs = [("user", "你好")]
    assert get_profile("g1k").render(msgs) == "User: 你好\n\n" + ends[ThinkingMode.OFF]
    assert get_profile("g1k-think").render(msgs) == "User: 你好\n\n" + ends[ThinkingMode.FULL]
    fast = PromptProfile("fast", "", ThinkingMode.FAST, ("\n\n",), (0,))
    assert fast.render(msgs) == "User: 你好\n\n" + ends[ThinkingMode.FAST]
    assert not get_profile("g1k-think").render(msgs).endswith(">")  # 35fbe6e's whole tag is gone
    for p in PROFILES.values():
        assert p.template == "rwkv-g1-chat v3, prompt.go @ e3ed3d4"


def test_reconstruct_puts_the_opened_prefix_back_as_reconstruct_output_does() -> None:
    think = get_profile("g1k-think")
    assert think.reconstruct(">plan</think>answer") == "<think>plan</think>answer"
    assert think.reconstruct("  <think>x</think>y") == "  <think>x</think>y"  # already whole: kept
    fast = PromptProfile("fast", "", ThinkingMode.FAST, ("\n\n",), (0,))
    assert fast.reconstruct(">answer") == "<think></think>answer"
    assert get_profile("g1k").reconstruct(">x") == ">x"
    assert (think.withheld, fast.withheld, get_profile("g1k").withheld) == (">", ">", "")


def test_docs_quote_the_go_lines_the_tests_use() -> None:
    text = DOC.read_text(encoding="utf-8")
    assert "```go\n" + PROMPT_GO_E3ED3D4 + "```" in text
    for line in PRESETS_GO.splitlines()[1:]:
        assert "\n" + line + "\n" in text, line
    assert "**e3ed3d4**" in text and "0e6083de" in text


def test_sampling_presets_are_every_preset_of_presets_go_with_its_values() -> None:
    want = go_presets()
    assert list(want) == ["greedy", "g1k-agent", "g1k-agent-fast", "g1k-stable", "backend"]
    assert list(SAMPLING_PRESETS) == list(want)
    for name, w in want.items():
        s = get_sampling(name)
        got = {
            "Temperature": s.temperature,
            "TopK": s.top_k,
            "TopP": s.top_p,
            "PresencePenalty": s.presence_penalty,
            "FrequencyPenalty": s.frequency_penalty,
            "PenaltyDecay": s.penalty_decay,
        }
        assert got == w, name
        assert s.description
        assert s.greedy == (name == "greedy")  # presets_test.go: only greedy may set top_k 1


def test_g1k_renders_turns_and_ends_with_assistant_colon() -> None:
    prompt = get_profile("g1k").render(
        [("system", "You call tools."), ("user", "List files"), ("assistant", "ok"), ("tool", "a.txt")]
    )
    assert prompt == ("System: You call tools.\n\nUser: List files\n\nAssistant: ok\n\nTool: a.txt\n\nAssistant:")


def test_g1k_think_opens_a_think_block() -> None:
    assert get_profile("g1k-think").render([{"role": "user", "content": "hi"}]) == "User: hi\n\nAssistant: <think"


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
    agent = get_sampling("g1k-agent")
    assert (agent.temperature, agent.top_p, agent.top_k) == (0.3, 0.5, 65536)
    assert (agent.presence_penalty, agent.frequency_penalty, agent.penalty_decay) == (0.0, 0.0, 1.0)
    assert get_sampling("greedy").greedy and not agent.greedy
    for p in PROFILES.values():
        assert 0 in p.stop_tokens and "\n\n" in p.stop_strings
    with pytest.raises(UsageError, match="unknown prompt profile 'g2'; known: g1k, g1k-think"):
        get_profile("g2")
    with pytest.raises(UsageError, match="unknown sampling preset 'hot'") as e:
        get_sampling("hot")
    assert "Did you mean" not in e.value.hint and "greedy, g1k-agent, g1k-agent-fast" in e.value.hint
    with pytest.raises(UsageError, match="unknown sampling preset 'g1k-agnet'") as e:
        get_sampling("g1k-agnet")
    assert e.value.hint.startswith("Did you mean 'g1k-agent'? ")
    with pytest.raises(UsageError) as e:
        get_profile("g1k-thinking")
    assert e.value.hint.startswith("Did you mean 'g1k-think'? ")


def test_docs_embed_the_generated_tables() -> None:
    text = DOC.read_text(encoding="utf-8")
    assert profiles_markdown() in text, (
        "docs/profiles.md is out of date: paste the output of "
        "`python -c 'from rwkv_registry.model.profiles import profiles_markdown; print(profiles_markdown())'`"
    )
