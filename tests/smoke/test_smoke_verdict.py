"""Tests that kill mutants of the smoke verdict path (a hand-written mutation audit).

Each test pins one rule of the verdict that the end-to-end tests left open because on the tiny
weights the base never answers a case: outcomes with both sides correct, the counts fed to the
McNemar test, the thresholds, the base side's own checks, the record written back, the base
fingerprint refused even when its hash is cached, a State that does not fit, a MiSS trained on
another base, and settings that reach the run. Most build a real run once on the tiny weights
and then replace the per-case scores, so each takes milliseconds.
"""

from __future__ import annotations

import dataclasses
import io
import json
import shutil
from pathlib import Path
from typing import ClassVar

import pytest
import torch

from rwkv_registry.catalog.compare import compare, mcnemar_exact, results_file, results_from_json
from rwkv_registry.catalog.entries import find_entry
from rwkv_registry.cli.main import main
from rwkv_registry.core.errors import UsageError
from rwkv_registry.index.smoke_cases import TINY_CASES, Case, builtin_path, is_toy_base
from rwkv_registry.model.rwkv7 import RWKV7
from rwkv_registry.model.smoke import evaluate
from rwkv_registry.model.smoke.demo import MISS_ID, STATE_ID, build_tiny_registry
from rwkv_registry.model.smoke.evaluate import (
    BrokenEntryError,
    Settings,
    SmokeResult,
    check_base_file,
    load_entry,
    pick_device,
    run_side,
    run_smoke,
)
from rwkv_registry.model.smoke.prompt import CALL_OPENER, PromptBuilder
from rwkv_registry.model.smoke.report import build_report, smoke_record
from rwkv_registry.model.smoke.scoring import CallScore, score_call
from rwkv_registry.model.tiny import make_tiny_base
from rwkv_registry.model.tokenizer import get_tokenizer
from rwkv_registry.schemas import schema_errors

pytestmark = pytest.mark.slow
TINY = builtin_path(TINY_CASES)


@pytest.fixture(scope="module")
def registry(tiny_weights, tmp_path_factory) -> Path:
    return build_tiny_registry(tmp_path_factory.mktemp("smoke-mutants"), tiny_weights)


@pytest.fixture(scope="module")
def result(registry, tiny_weights) -> SmokeResult:
    """One real run of the State entry; the tests below replace its per-case scores."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return run_smoke(
            registry, STATE_ID, tiny_weights.base, device="cpu", cases_path=TINY, settings=Settings(think_tokens=24)
        )
    finally:
        torch.set_num_threads(threads)


def right(case: Case) -> CallScore:
    text = json.dumps({"name": case.expected_name, "arguments": case.expected_arguments}, separators=(",", ":"))
    score = score_call(case, text[len(CALL_OPENER) :])
    assert score.correct
    return score


def refusal(case: Case) -> CallScore:
    """A parseable but wrong answer (no_tool where a tool is expected, else another tool)."""
    name = "read_file" if case.abstain else "no_tool"
    args = {"path": "x"} if case.abstain else {"reason": "no"}
    score = score_call(case, json.dumps({"name": name, "arguments": args}, separators=(",", ":"))[len(CALL_OPENER) :])
    assert not score.correct and not score.parse_failure
    return score


def garbage(case: Case) -> CallScore:
    score = score_call(case, "oops")
    assert score.parse_failure
    return score


def with_scores(result: SmokeResult, entry: list[CallScore], base: list[CallScore], **settings) -> SmokeResult:
    return dataclasses.replace(
        result,
        entry_side=dataclasses.replace(result.entry_side, scores=entry),
        base_side=dataclasses.replace(result.base_side, scores=base),
        settings=dataclasses.replace(result.settings, **settings),
    )


def pattern(result: SmokeResult, correct: set[int], wrong=refusal) -> list[CallScore]:
    return [right(c) if i in correct else wrong(c) for i, c in enumerate(result.cases.cases)]


def test_outcomes_and_mcnemar_count_only_discordant_cases(result):
    """Both sides right is a tie, not a win or a loss; p comes from wins and losses, not solved counts."""
    n = len(result.cases.cases)
    assert n == 14
    entry, base = set(range(10)), {0, 1, 2, 10, 11}
    report = build_report(with_scores(result, pattern(result, entry), pattern(result, base)))
    ids = [c.id for c in result.cases.cases]
    cmp_ = report["comparison"]
    assert (cmp_["wins"], cmp_["losses"], cmp_["ties"]) == (7, 2, 5)
    assert cmp_["won"] == ids[3:10] and cmp_["lost"] == ids[10:12]
    assert cmp_["p_value"] == mcnemar_exact(7, 2) == pytest.approx(0.1796875)
    assert [c["outcome"] for c in report["cases"]] == ["tie"] * 3 + ["win"] * 7 + ["loss"] * 2 + ["tie"] * 2
    assert report["verdict"] == "pass" and report["exit_code"] == 0
    assert report["sides"]["entry"]["solved"] == 10 and report["sides"]["base"]["solved"] == 5
    assert report["sides"]["entry"]["parse_failures"] == 0
    rec = smoke_record(report)
    assert schema_errors("smoke-record", rec) == []
    assert (rec["entry_score"]["solved"], rec["base_score"]["solved"]) == (10, 5)
    assert (rec["wins"], rec["losses"], rec["p_value"]) == (7, 2, cmp_["p_value"])
    assert schema_errors("smoke-report", report) == []
    # `compare` of two such reports: the entry's per-case results, ties excluded from the test
    other = build_report(with_scores(result, pattern(result, base), pattern(result, set())))
    c = compare(results_from_json(other, "a"), results_from_json(report, "b"))
    assert (c.wins, c.losses, c.ties, c.p_value) == (7, 2, 5, mcnemar_exact(7, 2))


def test_significantly_worse_entry_fails_and_its_record_says_fail(result):
    entry, base = set(), set(range(10))
    report = build_report(with_scores(result, pattern(result, entry), pattern(result, base)))
    cmp_ = report["comparison"]
    assert (cmp_["wins"], cmp_["losses"], cmp_["ties"]) == (0, 10, 4)
    assert cmp_["p_value"] == pytest.approx(2 * 0.5**10)
    assert report["verdict"] == "fail" and report["exit_code"] == 1
    assert [r for r in report["reasons"] if "significantly worse" in r] == report["reasons"]
    rec = smoke_record(report)
    assert rec["verdict"] == "fail" and rec["checks"]["reasons"] == report["reasons"]
    assert rec["checks"]["false_refusals"] == report["sides"]["entry"]["false_refusals"] > 0
    assert rec["checks"]["entry_parse_failures"] == 0


def test_parse_failure_threshold_is_strictly_above(result):
    """The entry is broken only *above* the threshold; wrong but parseable calls are no parse failures."""
    cases = result.cases.cases
    base = pattern(result, set(), wrong=garbage)

    def entry(failures: int) -> list[CallScore]:
        return [garbage(c) if i < failures else refusal(c) for i, c in enumerate(cases)]

    at = build_report(with_scores(result, entry(2), base, parse_failure_threshold=2 / 14))
    assert at["sides"]["entry"]["parse_failures"] == 2 and at["verdict"] == "pass", at["reasons"]
    above = build_report(with_scores(result, entry(3), base, parse_failure_threshold=2 / 14))
    assert above["verdict"] == "fail" and "parse failures with the entry: 3/14" in above["reasons"][0]
    rec = smoke_record(above)
    assert (rec["checks"]["entry_parse_failures"], rec["checks"]["base_parse_failures"]) == (3, 14)
    # the default 20 %: 2 of 14 (14 %) passes, 3 of 14 (21 %) fails
    assert build_report(with_scores(result, entry(2), base))["verdict"] == "pass"
    assert build_report(with_scores(result, entry(3), base))["verdict"] == "fail"


@pytest.mark.parametrize("check", ["finite", "deterministic"])
def test_one_bad_case_with_the_entry_fails(result, check):
    """One non-finite or non-deterministic case with the entry, where the base alone is fine, fails the run."""
    flags = [True] * len(result.cases.cases)
    flags[5] = False
    bad = dataclasses.replace(result, entry_side=dataclasses.replace(result.entry_side, **{check: flags}))
    report = build_report(bad)
    assert report["sides"]["entry"][check] is False
    assert report["verdict"] == "fail" and report["exit_code"] == 1
    want = "non-finite logits" if check == "finite" else "non-deterministic"
    label = "with the entry" if check == "deterministic" else "with the entry attached"
    [reason] = report["reasons"]
    assert want in reason and label in reason
    rec = smoke_record(report)
    assert rec["checks"][check] is False and rec["verdict"] == "fail"


@pytest.mark.parametrize("entry_too", [False, True])
@pytest.mark.parametrize("check", ["finite", "deterministic"])
def test_a_bad_case_with_the_base_alone_is_inconclusive_not_the_entry(result, check, entry_too):
    """One non-finite or non-deterministic case with the base alone (and with the entry on the same case, or not):
    nothing blames the entry, the base fails the same way: inconclusive, exit 2, a reason that says why."""
    flags = [True] * len(result.cases.cases)
    flags[5] = False
    sides = {"base_side": dataclasses.replace(result.base_side, **{check: flags})}
    if entry_too:
        sides["entry_side"] = dataclasses.replace(result.entry_side, **{check: flags})
    report = build_report(dataclasses.replace(result, **sides))
    assert report["verdict"] == "inconclusive" and report["exit_code"] == 2
    [reason] = report["reasons"]
    want = "non-finite logits (NaN/Inf) with the base alone" if check == "finite" else "non-deterministic with"
    assert reason.startswith(want) and "base alone" in reason and "not the entry" in reason
    assert schema_errors("smoke-report", report) == []
    # the entry on one more case than the base: its own fault again
    more = list(flags)
    more[6] = False
    worse = dataclasses.replace(
        result, entry_side=dataclasses.replace(result.entry_side, **{check: more}), base_side=sides["base_side"]
    )
    report = build_report(worse)
    assert report["verdict"] == "fail" and report["exit_code"] == 1 and len(report["reasons"]) == 2


def test_parse_failures_on_the_same_cases_as_the_base_alone_are_inconclusive(result):
    """The entry fails to parse above the threshold on exactly the cases the base alone fails to parse: the
    format or the harness, not the entry (exit 2); one case more, or another set, is the entry's (exit 1)."""
    cases = result.cases.cases
    base = [garbage(c) if i < 10 else right(c) for i, c in enumerate(cases)]
    same = build_report(with_scores(result, list(base), base))
    assert same["verdict"] == "inconclusive" and same["exit_code"] == 2
    [reason] = same["reasons"]
    assert reason.startswith("parse failures with the entry: 10/14 (71%) above the 20% threshold, but the base alone")
    assert "exactly the same cases: a harness or format problem" in reason and "not the entry" in reason
    one_more = [garbage(c) if i < 11 else right(c) for i, c in enumerate(cases)]
    assert build_report(with_scores(result, one_more, base))["verdict"] == "fail"
    other = [garbage(c) if 4 <= i < 14 else right(c) for i, c in enumerate(cases)]
    assert build_report(with_scores(result, other, base))["verdict"] == "fail"


def test_report_names_what_was_run(result, registry, tiny_weights):
    """The entry's own sha256 (not the base's), its id, base and profile, and the settings used."""
    report = build_report(result)
    entry, base = find_entry(registry, STATE_ID)
    assert report["entry"]["id"] == STATE_ID and report["entry"]["base"] == base["name"]
    assert report["entry"]["sha256"] == entry["file"]["sha256"] != report["base"]["sha256"]
    assert report["base"]["sha256"] == base["sha256"]
    assert report["entry"]["profile"] == "g1k" and report["settings"]["think_tokens"] == 24
    assert report["cases_file"]["count"] == 14


def test_cached_hash_of_a_wrong_base_is_still_refused(registry, tmp_path):
    """A second run with the wrong base file (its hash now cached) is refused like the first."""
    other = make_tiny_base(tmp_path / "other.pth", seed=9)
    _, base = find_entry(registry, MISS_ID)
    for _ in range(2):
        with pytest.raises(UsageError, match="is not the base of entry"):
            check_base_file(other, base, MISS_ID)


def test_a_state_that_does_not_fit_the_base_is_broken(registry, tiny_weights, tmp_path):
    entry, base = find_entry(registry, STATE_ID)
    sd = torch.load(registry / entry["path"], weights_only=True)
    path = tmp_path / "narrow-state.pth"
    torch.save({k: v[:1].clone() for k, v in sd.items()}, path)  # one head fewer in every layer
    model = RWKV7.from_pth(tiny_weights.base, device="cpu", dtype=torch.float32, fingerprint=base["sha256"])
    with pytest.raises(BrokenEntryError, match="cannot be used on its base"):
        load_entry(model, entry, path)


def test_a_miss_trained_on_another_base_is_broken(registry, tiny_weights, monkeypatch):
    """The adapter's own base fingerprint is checked; smoke never forces it."""
    from rwkv_registry.model import miss

    entry, base = find_entry(registry, MISS_ID)
    real = miss.load_miss

    def other_base(path):
        return dataclasses.replace(real(path), base_fingerprint="0" * 64)

    monkeypatch.setattr(miss, "load_miss", other_base)
    model = RWKV7.from_pth(tiny_weights.base, device="cpu", dtype=torch.float32, fingerprint=base["sha256"])
    with pytest.raises(BrokenEntryError, match="cannot be used on its base"):
        load_entry(model, entry, registry / entry["path"])


class _Flaky(evaluate.Engine):
    """An engine whose second run gives another token for case 0 and a NaN loss row for case 1."""

    calls = 0

    def run(self, jobs, progress=None):
        results, stats = super().run(jobs, progress)
        type(self).calls += 1
        n = len(jobs) // 2
        results[n + 1] = dataclasses.replace(results[n + 1], finite=False)
        if type(self).calls == 2:
            results[0] = dataclasses.replace(results[0], tokens=(*results[0].tokens, 1))
        return results, stats


def test_determinism_and_finiteness_are_checked_per_case_across_runs(result, tiny_weights, monkeypatch):
    monkeypatch.setattr(evaluate, "Engine", _Flaky)
    _Flaky.calls = 0
    model = RWKV7.from_pth(tiny_weights.base, device="cpu", dtype=torch.float32)
    builder = PromptBuilder(evaluate.get_profile("g1k"), get_tokenizer())
    side = run_side("base", model, builder, result.cases, result.settings, None, evaluate._NoProgress())
    assert _Flaky.calls == 2  # two runs
    assert side.deterministic == [False] + [True] * 13
    assert side.finite == [True, False] + [True] * 12


def test_device_cuda_without_a_gpu_is_a_usage_error(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(UsageError, match="no CUDA device"):
        pick_device("cuda")
    assert pick_device("auto") == ("cpu", torch.float32)


def test_given_cases_are_used_on_a_toy_base(registry, tiny_weights, tmp_path):
    """--cases wins over the built-in tiny set (the toy base only changes the default)."""
    lines = TINY.read_text().splitlines()
    mine = tmp_path / "two.jsonl"
    mine.write_text("\n".join(lines[:3]) + "\n")  # the toolset and two cases
    run = run_smoke(registry, STATE_ID, tiny_weights.base, device="cpu", cases_path=mine, settings=Settings(runs=1))
    assert [c.id for c in run.cases.cases] == ["t-easy-1", "t-easy-2"] and run.cases.source == str(mine)


def test_think_tokens_reach_the_run(registry, tiny_weights, monkeypatch):
    seen = []

    def fake(*args, settings, **kwargs):
        seen.append(settings)
        raise UsageError("stop here")

    monkeypatch.setattr("rwkv_registry.model.smoke.cli.run_smoke", fake)
    argv = ["smoke", str(registry), MISS_ID, "--base-file", str(tiny_weights.base), "--device", "cpu"]
    assert main([*argv, "--cases", str(TINY), "--think-tokens", "7"]) == 2
    assert [s.think_tokens for s in seen] == [7]


def test_a_failing_run_is_recorded_too(registry, tiny_weights, tmp_path, monkeypatch, capsys):
    """--record appends the record of a fail too: a broken entry is a finding worth keeping."""
    root = Path(shutil.copytree(registry, tmp_path / "reg"))
    real = evaluate.run_side

    def broken_entry(label, *args):
        side = real(label, *args)
        return dataclasses.replace(side, finite=[False] * len(side.finite)) if label == "entry" else side

    monkeypatch.setattr(evaluate, "run_side", broken_entry)
    argv = ["smoke", str(root), STATE_ID, "--base-file", str(tiny_weights.base), "--device", "cpu"]
    assert main([*argv, "--cases", str(TINY), "--record", "--format", "json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["verdict"] == "fail"
    index = json.loads((root / "index.json").read_text())
    [entry] = [e for e in index["entries"] if e["id"] == STATE_ID]
    [rec] = entry["smoke"]
    assert rec["verdict"] == "fail" and rec["checks"]["finite"] is False
    assert rec["checks"]["reasons"] == report["reasons"]
    assert schema_errors("smoke-record", rec) == []


def test_an_inconclusive_run_is_not_recorded_and_says_why(registry, tiny_weights, tmp_path, monkeypatch, capsys):
    """The base alone gives NaN: the run says nothing about the entry, so --record appends nothing, stderr says so,
    the text names the verdict and why, and the exit code is 2."""
    root = Path(shutil.copytree(registry, tmp_path / "reg"))
    before = (root / "index.json").read_bytes()
    real = evaluate.run_side

    def broken_base(label, *args):
        side = real(label, *args)
        return dataclasses.replace(side, finite=[False] * len(side.finite)) if label == "base" else side

    monkeypatch.setattr(evaluate, "run_side", broken_base)
    argv = ["smoke", str(root), STATE_ID, "--base-file", str(tiny_weights.base), "--device", "cpu"]
    assert main([*argv, "--cases", str(TINY), "--record"]) == 2
    out, err = capsys.readouterr()
    out, err = " ".join(out.split()), " ".join(err.split())
    assert (
        "INCONCLUSIVE: the base alone fails the same way, so this is a harness or format problem, not the entry" in out
    )
    assert "- non-finite logits (NaN/Inf) with the base alone in 14 case(s): nothing can be judged" in out
    assert "FAIL" not in out and "smoke record appended" not in out
    assert f"note: no smoke record appended to {STATE_ID}: an inconclusive run says nothing about the entry" in err
    assert (root / "index.json").read_bytes() == before


def test_compare_refuses_duplicate_and_one_sided_question_sets():
    a = results_from_json(results_file("a", {"q1": 1.0, "q2": 0.0}), "a")
    b = results_from_json(results_file("b", {"q1": 1.0}), "b")
    for x, y in ((a, b), (b, a)):
        with pytest.raises(UsageError, match="different questions"):
            compare(x, y)
    data = results_file("a", {"q1": 1.0})
    data["results"].append({"id": "q1", "category": "", "score": 0.0})
    with pytest.raises(UsageError, match="appears twice"):
        results_from_json(data, "a")


def test_text_report_shows_wins_and_losses_the_right_way_round(result):
    from rich.console import Console

    from rwkv_registry.model.smoke.report import render

    report = build_report(with_scores(result, pattern(result, set(range(10))), pattern(result, {0, 1, 2, 10, 11})))
    console = Console(record=True, width=160, file=io.StringIO())
    render(report, console)
    text = console.export_text()
    assert "+7/−2 on 9 discordant cases" in text and "PASS" in text and "FAIL" not in text
    worse = build_report(with_scores(result, pattern(result, set()), pattern(result, set(range(10)))))
    console = Console(record=True, width=160, file=io.StringIO())
    render(worse, console)
    text = console.export_text()
    assert "+0/−10 on 10 discordant cases" in text and "FAIL" in text and "significantly worse" in text


@pytest.mark.parametrize(("width", "toy"), [(128, True), (511, True), (512, False), (768, False), (True, False)])
def test_toy_base_is_narrower_than_512(width, toy):
    assert is_toy_base({"architecture": {"n_embd": width}}) is toy
    assert is_toy_base({}) is False


def _call(case: Case, name: str, args: dict) -> CallScore:
    return score_call(case, json.dumps({"name": name, "arguments": args}, separators=(",", ":"))[len(CALL_OPENER) :])


def test_side_counts_per_category_and_kind_of_error(result):
    """Every counter of a side, from a hand-made answer sheet on the tiny set (14 cases: easy 0-2,
    hard 3-6, arguments 7-8, abstention 9-11, multi-step 12-13). Kills: abstention solved counted as
    abstained, false refusals counted as any no_tool, unknown tools counted as any wrong name,
    solved counted as parsed, the record's score sides swapped."""
    cases = result.cases.cases
    assert [c.category for c in cases[9:12]] == ["abstention"] * 3 and cases[4].expected_name == "delete_card"
    entry = [right(c) for c in cases]
    entry[1] = _call(cases[1], "open_file", {"path": "a.txt"})  # an invented tool
    entry[2] = garbage(cases[2])  # a parse failure
    entry[3] = _call(cases[3], "delete_card", {"card": "c-1"})  # the near-duplicate: wrong, known tool
    entry[4] = _call(cases[4], "no_tool", {"reason": "I cannot"})  # a false refusal
    entry[9] = _call(cases[9], "no_tool", {})  # abstains, but without the required reason: wrong
    entry[11] = _call(cases[11], "read_file", {"path": "x"})  # acts where it should abstain
    base = [garbage(c) for c in cases]
    report = build_report(with_scores(result, entry, base))
    e = report["sides"]["entry"]
    assert e["solved"] == 8 and e["total"] == 14
    assert e["by_category"] == {
        "easy-selection": {"solved": 1, "total": 3},
        "hard-selection": {"solved": 2, "total": 4},
        "argument-filling": {"solved": 2, "total": 2},
        "abstention": {"solved": 1, "total": 3},
        "multi-step": {"solved": 2, "total": 2},
    }
    assert (e["parse_failures"], e["false_refusals"], e["unknown_tools"]) == (1, 1, 1)
    assert e["abstention"] == {"solved": 1, "total": 3}
    b = report["sides"]["base"]
    assert (b["solved"], b["parse_failures"], b["false_refusals"], b["unknown_tools"]) == (0, 14, 0, 0)
    cmp_ = report["comparison"]
    assert (cmp_["wins"], cmp_["losses"], cmp_["p_value"]) == (8, 0, 2 / 2**8)
    rec = smoke_record(report)
    assert rec["entry_score"]["solved"] == 8 and rec["base_score"]["solved"] == 0
    assert rec["entry_score"]["by_category"]["hard-selection"] == {"solved": 2, "total": 4}
    assert rec["checks"]["false_refusals"] == 1


@pytest.mark.parametrize(("losses", "verdict"), [(5, "pass"), (6, "fail")])
def test_default_alpha_is_five_percent(result, losses, verdict):
    """0 wins and 5 losses give p = 2 / 2^5 = 0.0625, not below 0.05: pass; 6 losses give
    p = 2 / 2^6 = 0.03125: significantly worse (docs/smoke.md). Kills a default alpha of 0.1."""
    cases = result.cases.cases
    entry = [right(c) if i >= losses else refusal(c) for i, c in enumerate(cases)]
    base = [right(c) for c in cases]
    report = build_report(with_scores(result, entry, base))
    assert report["settings"]["alpha"] == 0.05
    assert report["comparison"]["p_value"] == 2 / 2**losses
    assert report["verdict"] == verdict


def test_losses_are_per_token_of_the_hand_written_completion(result):
    """The expected completion after the opener is the rest of the compact call plus the closing
    fence, e.g. ``read_file","arguments":{"path":"notes.txt"}}`` + newline + three backticks; its
    loss is reported per token of that text, per case and as the side's mean, for the entry and the
    base each (kills a per-case loss left summed, a token count off by one, the sides swapped)."""
    tok = get_tokenizer()
    report = build_report(result)
    for side_name, side in (("entry", result.entry_side), ("base", result.base_side)):
        counts = []
        for i, c in enumerate(result.cases.cases):
            call = json.dumps({"name": c.expected_name, "arguments": c.expected_arguments}, separators=(",", ":"))
            text = call[len('{"name":"') :] + "\n```"
            counts.append(len(tok.encode(text)))
            assert side.nll_tokens[i] == counts[-1]
            assert report["cases"][i][side_name]["loss"] == pytest.approx(side.nll[i] / counts[-1], rel=1e-12)
        mean = sum(side.nll) / sum(counts)
        assert report["sides"][side_name]["mean_loss"] == pytest.approx(mean, rel=1e-12)
    rec = smoke_record(report)
    assert rec["checks"]["entry_loss"] == report["sides"]["entry"]["mean_loss"]
    assert rec["checks"]["base_loss"] == report["sides"]["base"]["mean_loss"]
    # the trained State makes its own completions likelier than the random base does
    assert rec["checks"]["entry_loss"] < rec["checks"]["base_loss"]


def test_call_budget_is_twice_the_longest_expected_call_plus_16(result):
    """docs/smoke.md: ``2 × the longest expected call + 16`` tokens, the longest counted by hand
    from the compact call text (kills + 15, min for max)."""
    tok = get_tokenizer()
    lengths = []
    for c in result.cases.cases:
        call = json.dumps({"name": c.expected_name, "arguments": c.expected_arguments}, separators=(",", ":"))
        lengths.append(len(tok.encode(call[len('{"name":"') :] + "\n```")))
    assert min(lengths) < max(lengths)
    assert result.settings.max_call_tokens == 2 * max(lengths) + 16
    assert build_report(result)["settings"]["max_call_tokens"] == 2 * max(lengths) + 16


class _Recorder(evaluate.Engine):
    """The real engine, keeping every job it was given."""

    jobs: ClassVar[list] = []

    def run(self, jobs, progress=None):
        type(self).jobs.append(list(jobs))
        return super().run(jobs, progress)


def test_thinking_side_jobs_stop_where_docs_say_and_score_after_the_thinking(result, tiny_weights, monkeypatch):
    """With g1k-think: the thinking pass stops at ``</think>`` (or a new turn) after at most
    think_tokens; the call pass stops at the closing fence; the loss rows are teacher-forced after the
    same prompt as the call rows, the thinking included (docs/smoke.md, FORMATS §8)."""
    monkeypatch.setattr(evaluate, "Engine", _Recorder)
    _Recorder.jobs = []
    model = RWKV7.from_pth(tiny_weights.base, device="cpu", dtype=torch.float32)
    builder = PromptBuilder(evaluate.get_profile("g1k-think"), get_tokenizer())
    cases = dataclasses.replace(result.cases, cases=result.cases.cases[:3])
    settings = Settings(think_tokens=5, runs=1, max_call_tokens=40)
    side = run_side("entry", model, builder, cases, settings, None, evaluate._NoProgress())
    think_jobs, call_and_loss = _Recorder.jobs
    assert [j.stops for j in think_jobs] == [(b"</think>", b"\n\nUser:", b"\nUser:", b"\nSystem:")] * 3
    assert [j.max_new for j in think_jobs] == [5] * 3
    calls, losses = call_and_loss[:3], call_and_loss[3:]
    assert [j.stops for j in calls] == [(b"```", b"\n\nUser:", b"\nUser:", b"\nSystem:")] * 3
    assert [j.max_new for j in calls] == [40] * 3 and all(j.prefix_check is not None for j in calls)
    tok = get_tokenizer()
    for i, (call, loss) in enumerate(zip(calls, losses, strict=True)):
        thought = side.thinking[i].text
        assert tok.decode(call.suffix).endswith("Assistant: <think" + thought + '</think> ```json\n{"name":"')
        assert (loss.prefix, loss.suffix) == (call.prefix, call.suffix)


@pytest.mark.parametrize("knobs", [{"think_tokens": 0}, {"think_tokens": 4097}, {"think_tokens": 10**9}, {"runs": 0}])
def test_settings_from_python_are_bounded_as_the_command_line_is(knobs: dict[str, int]) -> None:
    """`smoke --think-tokens` refuses a budget outside 1…4096; Settings built from Python refuse it too (and a run
    count below one), instead of a smoke run that decodes for hours or checks nothing."""
    with pytest.raises(ValueError, match=next(iter(knobs))):
        Settings(**knobs)
    assert Settings(think_tokens=4096).think_tokens == 4096 and Settings(think_tokens=1, runs=1).runs == 1
