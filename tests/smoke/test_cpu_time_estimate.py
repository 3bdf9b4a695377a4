"""smoke's CPU run-time estimate (model/smoke/evaluate.py: check_cpu_time): a note before a run of more than
a few minutes on the CPU, a refusal beyond --max-cpu-minutes. Sizes are faked (the demo's 7.2B base registered
by metadata, a small file in its place), and the CPU's rate is fixed, so no big model is loaded."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from rwkv_registry.cli.main import main
from rwkv_registry.core.errors import UsageError
from rwkv_registry.index.smoke_cases import DEFAULT_CASES, TINY_CASES, builtin_path, load_cases
from rwkv_registry.model.profiles import get_profile
from rwkv_registry.model.smoke import evaluate
from rwkv_registry.model.smoke.prompt import PromptBuilder
from rwkv_registry.model.tokenizer import get_tokenizer
from rwkv_registry.store.demo import build_demo

ARCH_72B = {"n_layer": 32, "n_embd": 4096, "vocab_size": 65536, "ffn_size": 16384}
BIG = {"name": "big", "architecture": ARCH_72B}
TINY = {"name": "tiny", "architecture": {"n_layer": 2, "n_embd": 128, "vocab_size": 65536, "ffn_size": 512}}
RATE = 100e9  # a fixed "measured" CPU rate: 100 GFLOP/s


def _inputs(cases: str = DEFAULT_CASES) -> tuple[PromptBuilder, evaluate.CaseSet, evaluate.Settings]:
    builder = PromptBuilder(get_profile("g1k"), get_tokenizer())
    return builder, load_cases(builtin_path(cases)), evaluate.Settings()


def test_flops_per_token_counts_the_matrices_but_not_the_embedding() -> None:
    c, f, layers, v = 4096, 16384, 32, 65536
    assert evaluate.flops_per_token(BIG) == 2 * (layers * (4 * c * c + 2 * c * f) + v * c)
    assert evaluate.flops_per_token({"name": "x"}) == 0


def test_a_large_base_on_the_cpu_gets_a_note_with_the_estimate(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(evaluate, "cpu_matmul_flops", lambda: RATE)
    builder, cases, settings = _inputs()
    tokens = evaluate.smoke_tokens(builder, cases, settings)
    seconds = evaluate.flops_per_token(BIG) * tokens / RATE
    assert seconds > 3600  # hours: the case the note is for
    note = evaluate.check_cpu_time(BIG, builder, cases, settings)
    assert note is not None and f"at least about {evaluate._minutes(seconds)}" in note
    assert f"{tokens:,} tokens" in note and "100 GFLOP/s" in note and "Ctrl-C" in note and "CUDA" in note
    assert evaluate.check_cpu_time(BIG, builder, cases, settings, max_minutes=math.ceil(seconds / 60) + 1) == note
    with pytest.raises(UsageError, match=r"over --max-cpu-minutes 60"):
        evaluate.check_cpu_time(BIG, builder, cases, settings, max_minutes=60)


def test_a_run_of_a_few_minutes_gets_no_note_and_a_tiny_one_is_not_measured(monkeypatch: pytest.MonkeyPatch) -> None:
    builder, cases, settings = _inputs()
    seconds_at = evaluate.flops_per_token(BIG) * evaluate.smoke_tokens(builder, cases, settings)
    monkeypatch.setattr(evaluate, "cpu_matmul_flops", lambda: seconds_at / 240)  # 4 minutes
    assert evaluate.check_cpu_time(BIG, builder, cases, settings) is None
    with pytest.raises(UsageError):
        evaluate.check_cpu_time(BIG, builder, cases, settings, max_minutes=3)

    def not_measured() -> float:
        raise AssertionError("a tiny model's run is not measured")

    monkeypatch.setattr(evaluate, "cpu_matmul_flops", not_measured)
    builder, cases, settings = _inputs(TINY_CASES)  # the demo's tiny model: about 0.1 TFLOP, under 5 min at 2 GFLOP/s
    assert evaluate.check_cpu_time(TINY, builder, cases, settings) is None
    with pytest.raises(UsageError, match="positive"):
        evaluate.check_cpu_time(TINY, builder, cases, settings, max_minutes=0)


def test_smoke_tokens_grow_with_the_thinking_budget() -> None:
    think = PromptBuilder(get_profile("g1k-think"), get_tokenizer())
    cases = load_cases(builtin_path(DEFAULT_CASES))
    a = evaluate.smoke_tokens(think, cases, evaluate.Settings(think_tokens=100))
    b = evaluate.smoke_tokens(think, cases, evaluate.Settings(think_tokens=200))
    assert b - a == 2 * 2 * len(cases.cases) * 3 * 100  # two sides, two runs, three passes see the thinking


def test_the_cpu_rate_is_measured() -> None:
    rate = evaluate.cpu_matmul_flops()
    assert 1e8 < rate < 1e15


@pytest.fixture(scope="module")
def big_registry(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, Path]:
    """The demo registry (its 7.2B base registered by metadata), a State entry's id, and a small file in
    place of the base."""
    root = build_demo(tmp_path_factory.mktemp("big") / "demo", log=lambda _m: None)
    index = json.loads((root / "index.json").read_text())
    entry = next(e["id"] for e in index["entries"] if e["method"] == "state")
    fake = root.parent / "fake-base.pth"
    fake.write_bytes(b"not the 7.2B base")
    return root, entry, fake


def test_cli_prints_the_note_before_the_base_is_hashed(big_registry, monkeypatch, capsys) -> None:
    root, entry, fake = big_registry
    monkeypatch.setattr(evaluate, "physical_memory", lambda: 2**40)  # fits in RAM: only the time is in question
    monkeypatch.setattr(evaluate, "cpu_matmul_flops", lambda: RATE)
    assert main(["smoke", str(root), entry, "--base-file", str(fake), "--device", "cpu"]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "note: on the CPU this smoke run takes at least about" in err
    assert err.index("note:") < err.index("is not the base of entry")  # then the (fake) base is refused


def test_cli_max_cpu_minutes_refuses_before_hashing(big_registry, monkeypatch, capsys) -> None:
    root, entry, fake = big_registry
    monkeypatch.setattr(evaluate, "physical_memory", lambda: 2**40)
    monkeypatch.setattr(evaluate, "cpu_matmul_flops", lambda: RATE)

    def no_hash(*a: object, **k: object) -> None:
        raise AssertionError("hashed")

    monkeypatch.setattr(evaluate, "check_base_file", no_hash)
    argv = ["smoke", str(root), entry, "--base-file", str(fake), "--device", "cpu", "--max-cpu-minutes", "30"]
    assert main(argv) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "error: smoke on the CPU would take at least about" in err and "over --max-cpu-minutes 30" in err
    assert "Traceback" not in err


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
