"""`rwkv-registry compare`: per-question wins/losses and the exact McNemar test (seed 003 and seed 000 figures)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from rwkv_registry.catalog.compare import compare, mcnemar_exact, results_file, results_from_json
from rwkv_registry.cli.main import main
from rwkv_registry.core.errors import UsageError


@pytest.mark.parametrize(
    ("wins", "losses", "expected"),
    [
        (95, 54, 0.001),  # seed 000: MiSS v2.1 against v2.0 on the exam, "p=0.001"
        (32, 2, 6.9e-8),  # seed 003: state-tuned against base, "p = 6,9×10⁻⁸"
        (11, 8, 0.65),  # seed 003: LoRA against state, "p = 0,65"
    ],
)
def test_seed_figures(wins: int, losses: int, expected: float) -> None:
    assert mcnemar_exact(wins, losses) == pytest.approx(expected, rel=0.02)


def test_symmetric_and_bounded() -> None:
    assert mcnemar_exact(5, 5) == 1.0
    assert mcnemar_exact(0, 0) == 1.0
    assert mcnemar_exact(3, 9) == mcnemar_exact(9, 3)
    assert mcnemar_exact(0, 10) == pytest.approx(2 / 1024)
    assert 0 < mcnemar_exact(400, 600) < 1e-9


def _exact_tail(wins: int, losses: int) -> float:
    """p from exact integers, each coefficient from the one before (math.comb per term is quadratic)."""
    n, k = wins + losses, min(wins, losses)
    term = tail = 1
    for i in range(k):
        term = term * (n - i) // (i + 1)
        tail += term
    assert k > 3_000 or tail == sum(math.comb(n, i) for i in range(k + 1))
    return min(1.0, 2 * tail / 2**n)


@pytest.mark.parametrize(
    ("wins", "losses"), [(95, 54), (0, 19_999), (2_900, 2_400), (10_000, 9_990), (9_000, 9_999), (3, 19_997)]
)
def test_up_to_20000_pairs_the_sum_is_exact(wins: int, losses: int) -> None:
    assert mcnemar_exact(wins, losses) == _exact_tail(wins, losses)


@pytest.mark.parametrize(
    ("wins", "losses"),
    [(10_001, 10_000), (20_001, 19_000), (15_000, 15_700), (20_500, 20_000), (30_000, 0), (20_990, 1_999)],
)
def test_above_20000_pairs_the_float_sum_agrees_with_the_exact_one(wins: int, losses: int) -> None:
    exact = _exact_tail(wins, losses)
    assert mcnemar_exact(wins, losses) == pytest.approx(exact, rel=1e-9, abs=1e-300)


def test_large_counts_are_quick_and_bounded() -> None:
    # the binomial coefficients were recomputed per term: 10,000/10,000 took 28 s, and the schema had no maximum
    assert mcnemar_exact(10**9, 10**9 - 10**5) == pytest.approx(0.025345, rel=1e-4)
    assert mcnemar_exact(10**9, 10**9) == 1.0 and mcnemar_exact(10**9, 0) == 0.0
    with pytest.raises(ValueError, match="above 1,000,000,000"):
        mcnemar_exact(10**9 + 1, 5)


def _exam_pair() -> tuple[dict, dict]:
    """568 questions: v2.1 beats v2.0 on 95, loses 54, ties elsewhere (seed 000)."""
    old, new, cats = {}, {}, {}
    for i in range(568):
        q = f"q{i:03d}"
        cats[q] = "web" if i % 2 else "tools"
        if i < 95:
            old[q], new[q] = 0.0, 1.0
        elif i < 149:
            old[q], new[q] = 1.0, 0.0
        elif i < 300:
            old[q] = new[q] = 1.0
        else:
            old[q] = new[q] = 0.0
    return (results_file("v2.0 r16 lr3e-5", old, cats, "exam"), results_file("v2.1 r16 lr2e-5", new, cats, "exam"))


def test_seed_exam_comparison_from_counts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a, b = _exam_pair()
    (tmp_path / "a.json").write_text(json.dumps(a))
    (tmp_path / "b.json").write_text(json.dumps(b))
    assert main(["compare", str(tmp_path / "a.json"), str(tmp_path / "b.json"), "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["wins"], out["losses"], out["questions"]) == (95, 54, 568)
    assert out["p_value"] == pytest.approx(0.001, rel=0.02)
    assert out["by_category"]["web"]["wins"] + out["by_category"]["tools"]["wins"] == 95
    assert main(["compare", str(tmp_path / "a.json"), str(tmp_path / "b.json")]) == 0
    text = capsys.readouterr().out
    assert "+95/−54" in text and "p = 0.000983" in text


def test_fractional_scores_count_by_direction() -> None:
    a = results_from_json(results_file("a", {"q1": 0.5, "q2": 1.0, "q3": 0.0}), "a")
    b = results_from_json(results_file("b", {"q1": 1.0, "q2": 0.5, "q3": 0.0}), "b")
    c = compare(a, b)
    assert (c.wins, c.losses, c.ties) == (1, 1, 1) and c.won == ["q1"] and c.lost == ["q2"]


def test_refuses_mismatched_question_sets_and_bad_files(tmp_path: Path) -> None:
    a = results_from_json(results_file("a", {"q1": 1.0}), "a")
    b = results_from_json(results_file("b", {"q2": 1.0}), "b")
    with pytest.raises(UsageError, match="different questions"):
        compare(a, b)
    with pytest.raises(UsageError, match="score"):
        results_from_json({"format": "rwkv-registry-results/1", "name": "x", "results": [{"id": "q", "score": 2}]}, "x")
    (tmp_path / "bad.json").write_text("{")
    assert main(["compare", str(tmp_path / "bad.json"), str(tmp_path / "bad.json")]) == 2


def test_scores_and_category_deltas_are_b_minus_a() -> None:
    """Seed 003's second rung, State (A) against LoRA (B), per category, built from the article's
    table: abstention 12 → 15, arguments 19 → 16; each side solves its cases on disjoint questions
    so that the per-question join gives exactly those totals (mutants: delta a − b, totals swapped,
    A's category preferred over B's)."""
    a_scores, b_scores, cats = {}, {}, {}
    for cat, total, sa, sb in (("abstention", 17, 12, 15), ("arguments", 22, 19, 16)):
        for i in range(total):
            q = f"{cat}-{i:02d}"
            cats[q] = cat
            a_scores[q] = 1.0 if i < sa else 0.0
            b_scores[q] = 1.0 if i < sb else 0.0
    a = results_from_json(results_file("state", a_scores, cats), "a")
    b = results_from_json(results_file("lora", b_scores, cats), "b")
    c = compare(a, b)
    assert (c.score_a, c.score_b) == (31.0, 31.0)
    ab, ar = c.by_category["abstention"], c.by_category["arguments"]
    assert (ab["score_a"], ab["score_b"], ab["delta"], ab["wins"], ab["losses"]) == (12.0, 15.0, 3.0, 3, 0)
    assert (ar["score_a"], ar["score_b"], ar["delta"], ar["wins"], ar["losses"]) == (19.0, 16.0, -3.0, 0, 3)
    # unequal totals: A 1 of 2, B 2 of 2
    c2 = compare(
        results_from_json(results_file("a", {"q1": 1.0, "q2": 0.0}), "a"),
        results_from_json(results_file("b", {"q1": 1.0, "q2": 1.0}), "b"),
    )
    assert (c2.score_a, c2.score_b) == (1.0, 2.0)
    assert c2.to_json()["score_a"] == 1.0 and c2.to_json()["score_b"] == 2.0
    # when the two files disagree on a question's category, B's (the newer run's) is shown
    c3 = compare(
        results_from_json(results_file("a", {"q1": 1.0}, {"q1": "old"}), "a"),
        results_from_json(results_file("b", {"q1": 0.0}, {"q1": "new"}), "b"),
    )
    assert list(c3.by_category) == ["new"]


@pytest.mark.parametrize(
    "cases",
    [
        [{"id": "a"}],  # no entry side
        [5],  # a case that is no object
        [{"id": "a", "entry": {"correct": "yes"}}],  # correct neither true nor false
        [{"id": "a", "entry": []}],
        [{"entry": {"correct": True}}],  # no id
    ],
)
def test_a_malformed_smoke_report_is_refused_naming_the_file(tmp_path: Path, cases: list[object]) -> None:
    """It was an 'unexpected KeyError/TypeError ... this is a bug in rwkv-registry' (exit 2, no file named)."""
    with pytest.raises(UsageError, match=r"^r\.json: smoke report case 0 ") as info:
        results_from_json({"kind": "rwkv-registry-smoke", "cases": cases}, "r.json")
    assert "smoke --format json" in (info.value.hint or "")
    path = tmp_path / "r.json"
    path.write_text(json.dumps({"kind": "rwkv-registry-smoke", "cases": cases}))
    assert main(["compare", str(path), str(path)]) == 2


def test_a_smoke_report_names_its_entry_or_else_the_file_and_refuses_a_case_twice() -> None:
    case = {"id": "a", "category": "easy", "entry": {"correct": True}}
    report = {"kind": "rwkv-registry-smoke", "cases": [case]}
    assert results_from_json({**report, "entry": {"id": "s1"}}, "r.json").name == "s1"
    assert results_from_json({**report, "entry": "s1"}, "r.json").name == "r.json"  # was an AttributeError
    got = results_from_json(report, "r.json")
    assert (got.name, got.scores, got.categories) == ("r.json", {"a": 1.0}, {"a": "easy"})
    with pytest.raises(UsageError, match="case id 'a' appears twice"):
        results_from_json({**report, "cases": [case, {**case, "entry": {"correct": False}}]}, "r.json")


@pytest.mark.parametrize(("wins", "losses"), [(-1, 3), (3, -1), (10**9 + 1, 0), (0, 10**9 + 1)])
def test_counts_below_zero_or_above_the_cap_are_refused_on_either_side(wins: int, losses: int) -> None:
    """Mutation audit: the checks of mcnemar_exact on wins alone let a negative or oversize count of losses
    through (a p-value from nonsense, or minutes of summing)."""
    with pytest.raises(ValueError, match=r"non-negative|not taken"):
        mcnemar_exact(wins, losses)


def test_a_question_listed_twice_or_only_in_b_and_a_failed_smoke_case_count() -> None:
    """Mutation audit: a result file listing a question twice was read (the second score kept), a question only
    in B was joined away, and a smoke case's failure counted as solved."""
    twice = results_file("a", {"q1": 1.0})
    twice["results"].append({"id": "q1", "category": "", "score": 0.0})
    with pytest.raises(UsageError, match="question id 'q1' appears twice"):
        results_from_json(twice, "a.json")
    a = results_from_json(results_file("a", {"q1": 1.0}), "a")
    b = results_from_json(results_file("b", {"q1": 1.0, "q2": 0.0}), "b")
    with pytest.raises(UsageError, match=r"0 only in A, 1 only in B; e\.g\. \['q2'\]"):
        compare(a, b)
    cases = [{"id": "x", "entry": {"correct": False}}, {"id": "y", "entry": {"correct": True}}]
    got = results_from_json({"kind": "rwkv-registry-smoke", "cases": cases}, "r.json")
    assert got.scores == {"x": 0.0, "y": 1.0}
