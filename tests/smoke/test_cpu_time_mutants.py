"""Mutation audit of check_cpu_time (model/smoke/evaluate.py): --max-cpu-minutes below the note's 5 minutes is
the bound under which a run goes unmeasured, and the minutes as said."""

from __future__ import annotations

import pytest

from rwkv_registry.core.errors import UsageError
from rwkv_registry.index.smoke_cases import TINY_CASES, builtin_path, load_cases
from rwkv_registry.model.profiles import get_profile
from rwkv_registry.model.smoke import evaluate
from rwkv_registry.model.smoke.prompt import PromptBuilder
from rwkv_registry.model.tokenizer import get_tokenizer

TINY = {"name": "tiny", "architecture": {"n_layer": 2, "n_embd": 128, "vocab_size": 65536, "ffn_size": 512}}


def test_a_max_below_the_note_limit_measures_a_run_the_note_alone_would_not(monkeypatch: pytest.MonkeyPatch) -> None:
    """The tiny model's run is under 5 minutes even at the slowest rate assumed, so it is not measured for the
    note; with --max-cpu-minutes 0.01 (under a second) it is, and refused on a slow CPU."""
    builder = PromptBuilder(get_profile("g1k"), get_tokenizer())
    cases, settings = load_cases(builtin_path(TINY_CASES)), evaluate.Settings()
    flops = evaluate.flops_per_token(TINY) * evaluate.smoke_tokens(builder, cases, settings)
    assert evaluate.SLOW_CPU_FLOPS * 60 * 0.01 < flops <= evaluate.SLOW_CPU_FLOPS * 60 * evaluate.CPU_NOTE_MINUTES
    measured: list[int] = []
    monkeypatch.setattr(evaluate, "cpu_matmul_flops", lambda: (measured.append(1), flops / 60)[1])  # 1 minute
    assert evaluate.check_cpu_time(TINY, builder, cases, settings) is None and measured == []
    with pytest.raises(UsageError, match=r"at least about 1 min .*over --max-cpu-minutes 0.01"):
        evaluate.check_cpu_time(TINY, builder, cases, settings, max_minutes=0.01)
    assert measured == [1]
    assert evaluate.check_cpu_time(TINY, builder, cases, settings, max_minutes=2) is None


@pytest.mark.parametrize(
    ("seconds", "said"),
    [(10, "1 min"), (59 * 60, "59 min"), (60 * 60, "1 h 00 min"), (125 * 60, "2 h 05 min"), (61 * 60, "1 h 01 min")],
)
def test_minutes_are_said_in_hours_from_an_hour_on(seconds: float, said: str) -> None:
    assert evaluate._minutes(seconds) == said
