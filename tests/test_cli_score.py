"""`rwkv-registry score`: benchmark results recorded without editing index.json by hand.

From figures (the user's own example of seed 000, run as `--help` prints it), from per-question result files (one
per run, averaged), a paired comparison (p against an exact binomial computed here, independently), by category, a
base alone, a weight never uploaded; every refusal leaves the registry byte-identical, exit 1 with `error:` and
`hint:`; `--replace`; Ctrl-C and SIGKILL during the write; a score under a frozen base in a git registry.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
from fractions import Fraction
from math import comb
from pathlib import Path
from typing import Any

import pytest
from regtools import TINY_BASE, miss_train, write_miss

from rwkv_registry.cli.main import main
from rwkv_registry.engine.validate import validate_registry
from rwkv_registry.fs import atomic
from rwkv_registry.fs.atomic import LOCK_NAME

B16 = "App harness; inference backend of 2026-10-16"
B17 = "App harness; inference backend of 2026-10-17"
V20 = "v20-r16-lr3e-5"
NEWER = "rwkv7-tiny-20270101-ctx4096"
ARCH = "n_layer=2,n_embd=128,vocab_size=65536,ffn_size=512"


def snapshot(root: Path) -> dict[str, str]:
    """Every file (sha256) and directory of ``root``, the lock file aside."""
    out = {}
    for p in sorted(root.rglob("*")):
        if p.name != LOCK_NAME:
            out[p.relative_to(root).as_posix()] = "dir" if p.is_dir() else hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def findings(root: Path) -> set[tuple[str, str, str]]:
    report = validate_registry(root, use_cache=False)
    assert report.ok, [f"{f.code} {f.path}: {f.message}" for f in report.findings]
    return {(f.code, f.path, f.message) for f in report.findings}


def score(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["score", *argv])
    out, err = capsys.readouterr()
    assert "Traceback" not in err and "unexpected" not in err, err
    return code, out, " ".join(err.split())


def index(root: Path) -> dict[str, Any]:
    return json.loads((root / "index.json").read_text())


def scores_of(root: Path, name: str) -> list[dict[str, Any]]:
    i = index(root)
    items = i["entries"] + i["unpublished"] + [dict(b, id=b["name"]) for b in i["bases"]]
    return next(x for x in items if x["id"] == name)["scores"]


def readme_rows(root: Path, label: str) -> list[str]:
    """The rows of the README's score tables (under the header `| Weights | Benchmark | …`) for ``label``."""
    rows, in_scores = [], False
    for line in (root / "README.md").read_text().splitlines():
        in_scores = line.startswith("| Weights | Benchmark |") or (in_scores and line.startswith("|"))
        if in_scores and line.startswith(f"| {label} | "):
            rows.append(line)
    return rows


def results_file(path: Path, scores: dict[str, float], cats: dict[str, str] | None = None, **meta: Any) -> str:
    """A per-question result file as `compare` reads it (schemas/results.schema.json)."""
    results = [{"id": q, "category": (cats or {}).get(q, ""), "score": s} for q, s in scores.items()]
    path.write_text(json.dumps({"format": "rwkv-registry-results/1", "name": path.stem, **meta, "results": results}))
    return str(path)


def exact_mcnemar(wins: int, losses: int) -> float:
    """Two-sided exact sign test, in exact fractions: 2 · P[X ≤ min] with X ~ Binomial(wins + losses, 1/2)."""
    n, k = wins + losses, min(wins, losses)
    return float(min(Fraction(1), Fraction(2 * sum(comb(n, i) for i in range(k + 1)), 2**n)))


@pytest.fixture
def v20(reg: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """The seed's MiSS v2.0 r16 lr3e-5, never uploaded, with its exam score of 2026-10-17."""
    argv = [str(reg), V20, "--new-unpublished", "--base", TINY_BASE, "--method", "miss", "--data-version", "v2.0"]
    argv += ["--description", "MiSS v2.0 r16 lr3e-5, not uploaded", "--benchmark", "exam", "--date", "2026-10-17"]
    assert score(capsys, *argv, "--solved", "261.0", "--total", "568", "--runs", "2", "--backend", B17)[0] == 0
    return reg


# --- from figures: the user's example -----------------------------------------------------------------------------


def help_example(capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as e:
        main(["score", "--help"])
    assert e.value.code == 0
    lines = [line.strip() for line in capsys.readouterr().out.splitlines()]
    [example] = [line for line in lines if line.startswith("example: rwkv-registry score ")]
    return example.removeprefix("example: ")


def test_the_users_example_from_help_records_the_seed_figures(
    v20: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`52.2% (296.5 of 568), two runs averaged, 2026-10-17, backend X, +95/−54 vs v2.0, p = 0.001`, typed as the
    one example line of `score --help`, in the registry directory."""
    reg = v20
    adapter = tmp_path / "src" / "r4-lr2e-5-e2" / "adapter-final.pth"
    write_miss(adapter, seed=7)
    train = tmp_path / "train-v2.1.json"
    train.write_text(json.dumps(miss_train("v2.1", groups=("r4-lr2e-5-e2",))))
    add = ["add", str(reg), str(adapter), "--base", TINY_BASE, "--data-version", "v2.1", "--train", str(train)]
    assert main([*add, "--group", "r4-lr2e-5-e2", "--id", "v21-lr2e-5-e2"]) == 0
    capsys.readouterr()
    before = findings(reg)
    words = shlex.split(help_example(capsys))
    assert words[:4] == ["rwkv-registry", "score", ".", "v21-lr2e-5-e2"]
    monkeypatch.chdir(reg)
    code, out, err = score(capsys, *words[2:])
    assert (code, err) == (0, "")
    assert out == (
        f"recorded exam 2026-10-17 for entry v21-lr2e-5-e2: 52.2% (296.5/568), 2 runs, vs {V20} +95/−54, p = 0.001\n"
    )
    assert scores_of(reg, "v21-lr2e-5-e2") == [
        {
            "benchmark": "exam",
            "date": "2026-10-17",
            "score": 52.2,
            "unit": "percent",
            "solved": 296.5,
            "total": 568,
            "runs": 2,
            "backend": B17,
            "note": None,
            "report": "docs/evaluations/exam-v21-20261017",
            "comparison": {"against": V20, "wins": 95, "losses": 54, "p_value": 0.001},
        }
    ]
    assert readme_rows(reg, "v21-lr2e-5-e2")[-1] == (
        f"| v21-lr2e-5-e2 | exam | 2026-10-17 | 52.2% (296.5/568) | 2 | {B17} | vs {V20}: +95/−54, p=0.001; "
        "report: docs/evaluations/exam-v21-20261017 |"
    )
    assert findings(reg) == before  # validate: clean (the README and SHA256SUMS were rewritten with it)


def test_the_headline_is_computed_from_solved_and_total(reg: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = score(capsys, str(reg), "s1", "--benchmark", "exam", "--date", "2026-10-16", "--solved", "266.5",
                         "--total", "568", "--runs", "2", "--run-scores", "46.8,47.0")  # fmt: skip
    assert code == 0 and out.startswith("recorded exam 2026-10-16 for entry s1: 46.9% (266.5/568), 2 runs")
    [sc] = scores_of(reg, "s1")
    assert (sc["score"], sc["run_scores"]) == (46.9, [46.8, 47.0])
    assert readme_rows(reg, "s1")[-1] == "| s1 | exam | 2026-10-16 | 46.9% (266.5/568) | 2 | — | runs 46.8, 47.0 |"
    findings(reg)


def test_points_out_of_a_total(reg: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Seed 000's older bank: bfcl-product 41.0/60, three runs averaged."""
    argv = [str(reg), "s1", "--benchmark", "bfcl-product", "--date", "2026-10-13", "--unit", "points"]
    assert score(capsys, *argv, "--solved", "41.0", "--total", "60", "--runs", "3")[0] == 0
    assert scores_of(reg, "s1")[0]["score"] == 41.0
    assert readme_rows(reg, "s1")[-1] == "| s1 | bfcl-product | 2026-10-13 | 41.0/60 | 3 | — | — |"
    findings(reg)


# --- from result files -----------------------------------------------------------------------------------------------

WEB = {"q01": 1, "q02": 0.5, "q03": 0, "q04": 1}
TOOLS = {"q05": 1, "q06": 1, "q07": 0, "q08": 0.5, "q09": 1, "q10": 0}
CATS = {**dict.fromkeys(WEB, "web"), **dict.fromkeys(TOOLS, "tools")}


def test_from_a_results_file(reg: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Benchmark and date from the file, solved/total and the categories counted from its questions."""
    before = findings(reg)
    f = results_file(tmp_path / "a.json", {**WEB, **TOOLS}, CATS, benchmark="exam", date="2026-10-17")
    code, out, _ = score(capsys, str(reg), "v2-r4-a", "--results", f, "--runs", "2", "--backend", B17)
    assert code == 0 and out.startswith("recorded exam 2026-10-17 for entry v2-r4-a: 60.0% (6.0/10), 2 runs")
    [sc] = scores_of(reg, "v2-r4-a")
    assert sc == {
        "benchmark": "exam",
        "date": "2026-10-17",
        "score": 60.0,
        "unit": "percent",
        "solved": 6.0,
        "total": 10,
        "by_category": {"web": {"solved": 2.5, "total": 4}, "tools": {"solved": 3.5, "total": 6}},
        "runs": 2,
        "backend": B17,
        "note": None,
        "report": None,
    }
    assert readme_rows(reg, "v2-r4-a") == [
        f"| v2-r4-a | exam | 2026-10-17 | 60.0% (6.0/10) | 2 | {B17} | web 2.5/4, tools 3.5/6 |"
    ]
    assert findings(reg) == before


def test_one_file_per_run_is_averaged(reg: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Two runs of 0/1 scores: per-question means, the runs counted, each run's headline recorded."""
    run1 = {f"q{i:02d}": int(i < 6) for i in range(10)}  # 6 solved
    run2 = {f"q{i:02d}": int(i < 5 or i in (7, 8)) for i in range(10)}  # 7 solved
    files = [results_file(tmp_path / f"run{n}.json", r, benchmark="exam") for n, r in ((1, run1), (2, run2))]
    argv = [str(reg), "v2-r4-a", "--date", "2026-10-17", "--results", files[0], "--results", files[1]]
    assert score(capsys, *argv)[0] == 0
    [sc] = scores_of(reg, "v2-r4-a")
    assert (sc["score"], sc["solved"], sc["total"], sc["runs"], sc["run_scores"]) == (65.0, 6.5, 10, 2, [60.0, 70.0])
    assert "by_category" not in sc  # no question names one
    findings(reg)


def test_a_single_run_of_whole_scores_counts_whole_questions(
    reg: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Seed 003's 58/82: one deterministic run, scored 0 or 1 per case."""
    f = results_file(tmp_path / "judge.json", {f"c{i:02d}": int(i < 58) for i in range(82)}, benchmark="judge")
    assert score(capsys, str(reg), "s1", "--results", f, "--date", "2026-07-28", "--runs", "1")[0] == 0
    assert readme_rows(reg, "s1") == ["| s1 | judge | 2026-07-28 | 70.7% (58/82) | 1 | — | — |"]
    findings(reg)


# --- paired comparison ------------------------------------------------------------------------------------------------


def test_paired_comparison_from_result_files(reg: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """+95/−54 on 568 questions, joined question by question as `compare` joins them; p from the exact test,
    checked against an exact binomial sum computed here (p = 0.000983: the seed's "p = 0.001")."""
    qs = [f"q{i:03d}" for i in range(568)]
    ours = {q: int(i < 296) for i, q in enumerate(qs)}  # 201 both, 95 only ours
    theirs = {q: int(i < 201 or 296 <= i < 350) for i, q in enumerate(qs)}  # 54 only theirs
    meta = {"benchmark": "exam", "date": "2026-10-17"}
    a, b = results_file(tmp_path / "v20.json", theirs, **meta), results_file(tmp_path / "v21.json", ours, **meta)
    new = ["--new-unpublished", "--base", TINY_BASE, "--method", "miss", "--data-version", "v2.0"]
    assert score(capsys, str(reg), V20, *new, "--results", a, "--runs", "1", "--backend", B17)[0] == 0
    before = findings(reg)
    code, out, _ = score(capsys, str(reg), "v2-r4-a", "--results", b, "--runs", "1", "--backend", B17,
                         "--against", V20, "--against-results", a)  # fmt: skip
    assert code == 0
    p = exact_mcnemar(95, 54)
    assert round(p, 3) == 0.001 and f"{p:.3g}" == "0.000983"
    [sc] = scores_of(reg, "v2-r4-a")
    assert (sc["score"], sc["solved"], sc["total"]) == (52.1, 296, 568)
    assert sc["comparison"] == {"against": V20, "wins": 95, "losses": 54, "p_value": float(f"{p:.3g}")}
    assert out.endswith(f"vs {V20} +95/−54, p = 0.000983\n")
    # the same files through `compare`: the same counts and, rounded as it prints them, the same p
    assert main(["compare", a, b, "--format", "json"]) == 0
    compared = json.loads(capsys.readouterr().out)
    assert (compared["wins"], compared["losses"]) == (95, 54)
    assert abs(compared["p_value"] - p) <= 1e-12 * p
    assert f"vs {V20}: +95/−54, p=0.000983" in readme_rows(reg, "v2-r4-a")[0]
    assert findings(reg) == before


def test_paired_comparison_from_figures_computes_p(v20: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = [str(v20), "v2-r4-a", "--benchmark", "exam", "--date", "2026-10-17", "--solved", "296.5", "--total", "568"]
    assert score(capsys, *argv, "--backend", B17, "--against", V20, "--wins", "32", "--losses", "2")[0] == 0
    [sc] = scores_of(v20, "v2-r4-a")
    p = exact_mcnemar(32, 2)
    assert sc["comparison"]["p_value"] == float(f"{p:.3g}") == 6.94e-08 and f"{p:.2g}" == "6.9e-08"  # seed 003's
    findings(v20)


def test_a_comparison_against_another_day_is_refused(v20: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """IDX014: v2.0's exam score is of 2026-10-17 (backend B17); a comparison of another backend is no pair."""
    before = snapshot(v20)
    argv = [str(v20), "v2-r4-a", "--benchmark", "exam", "--date", "2026-10-17", "--score", "52.2", "--against", V20]
    code, _, err = score(capsys, *argv, "--backend", "another backend", "--wins", "95", "--losses", "54")
    assert code == 1 and snapshot(v20) == before
    assert err.startswith(f"error: index.json: IDX014 entry 'v2-r4-a', exam 2026-10-17: compared question by question "
                          f"against '{V20}', whose exam scores are of 2026-10-17 ({B17}), not of 2026-10-17 (another "
                          "backend); nothing was written hint: A per-question comparison")  # fmt: skip


def test_a_score_that_unpairs_an_earlier_comparison_is_refused(reg: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """v2-r4-a was compared with v2-r4-b before v2-r4-b had an exam score; one of another day would leave that
    comparison without its pair (IDX014 on v2-r4-a): refused; the score of the same run is recorded."""
    run = ["--benchmark", "exam", "--date", "2026-10-17", "--backend", B17]
    assert score(capsys, str(reg), "v2-r4-a", *run, "--score", "52.2", "--against", "v2-r4-b", "--wins", "9",
                 "--losses", "3")[0] == 0  # fmt: skip
    before = snapshot(reg)
    code, _, err = score(capsys, str(reg), "v2-r4-b", "--benchmark", "exam", "--date", "2026-10-16", "--score", "46")
    assert code == 1 and snapshot(reg) == before
    assert "IDX014 entry 'v2-r4-a', exam 2026-10-17: compared question by question against 'v2-r4-b'" in err
    assert ", once 'v2-r4-b' has this score; nothing was written" in err
    assert score(capsys, str(reg), "v2-r4-b", *run, "--score", "46")[0] == 0
    findings(reg)


# --- by category, a base alone, a weight never uploaded ---------------------------------------------------------------

SEED_003 = ["abstention=12/17", "arguments=19/22", "hard-selection=16/23", "easy-selection=11/18", "multi-step=0/2"]


def test_by_category_from_figures(reg: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Seed 003's State after one epoch: 58 of 82, category by category."""
    argv = [str(reg), "s1", "--benchmark", "gungnir-judge", "--date", "2026-07-28", "--solved", "58", "--total", "82"]
    cats = [w for c in SEED_003 for w in ("--category", c)]
    assert score(capsys, *argv, *cats)[0] == 0
    [sc] = scores_of(reg, "s1")
    assert sc["score"] == 70.7 and list(sc["by_category"]) == [c.split("=")[0] for c in SEED_003]
    assert sc["by_category"]["abstention"] == {"solved": 12, "total": 17}
    assert readme_rows(reg, "s1") == [
        "| s1 | gungnir-judge | 2026-07-28 | 70.7% (58/82) | — | — | abstention 12/17, arguments 19/22, "
        "hard-selection 16/23, easy-selection 11/18, multi-step 0/2 |"
    ]
    findings(reg)


def test_categories_that_do_not_add_up_are_refused(reg: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = snapshot(reg)
    argv = [str(reg), "s1", "--benchmark", "gungnir-judge", "--date", "2026-07-28", "--solved", "57", "--total", "82"]
    code, _, err = score(capsys, *argv, *[w for c in SEED_003 for w in ("--category", c)])
    assert code == 1 and snapshot(reg) == before
    assert "IDX013 entry 's1', gungnir-judge 2026-07-28: the categories solve 58 of 82, the score says 57" in err


def test_a_base_alone(reg: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = findings(reg)
    argv = [str(reg), TINY_BASE, "--benchmark", "exam", "--date", "2026-10-16", "--score", "21.4", "--runs", "2"]
    code, out, _ = score(capsys, *argv, "--backend", B16, "--note", "base alone, no weights attached")
    assert code == 0 and out == f"recorded exam 2026-10-16 for base {TINY_BASE}: 21.4%, 2 runs\n"
    assert scores_of(reg, TINY_BASE)[0]["score"] == 21.4
    assert readme_rows(reg, "base alone") == [
        f"| base alone | exam | 2026-10-16 | 21.4% | 2 | {B16} | base alone, no weights attached |"
    ]
    assert findings(reg) == before


def test_an_unpublished_weight(v20: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Created with its first score (--new-unpublished), then scored again by its id."""
    assert index(v20)["unpublished"] == [
        {
            "id": V20,
            "base": TINY_BASE,
            "method": "miss",
            "data": {"version": "v2.0", "rows": None, "sha256": None},
            "description": "MiSS v2.0 r16 lr3e-5, not uploaded",
            "scores": [
                {
                    "benchmark": "exam",
                    "date": "2026-10-17",
                    "score": 46.0,
                    "unit": "percent",
                    "solved": 261.0,
                    "total": 568,
                    "runs": 2,
                    "backend": B17,
                    "note": None,
                    "report": None,
                }
            ],
        }
    ]
    argv = [str(v20), V20, "--benchmark", "workbank-clean", "--date", "2026-10-13", "--unit", "points"]
    code, out, _ = score(capsys, *argv, "--score", "22.7", "--runs", "3")
    assert code == 0 and out == f"recorded workbank-clean 2026-10-13 for unpublished weight {V20}: 22.7, 3 runs\n"
    assert readme_rows(v20, f"{V20} (not uploaded)") == [
        f"| {V20} (not uploaded) | exam | 2026-10-17 | 46.0% (261.0/568) | 2 | {B17} | — |",
        f"| {V20} (not uploaded) | workbank-clean | 2026-10-13 | 22.7 | 3 | — | — |",
    ]
    findings(v20)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([V20], f"--new-unpublished: '{V20}' is already an entry or unpublished weight of index.json"),
        (["s1"], "--new-unpublished: 's1' is already an entry or unpublished weight of index.json"),
        ([TINY_BASE], f"--new-unpublished: '{TINY_BASE}' is already a base of index.json"),
        (["v9", "--base", "nowhere"], "--base 'nowhere' is not in index.json"),
    ],
    ids=["unpublished", "entry", "base", "unknown-base"],
)
def test_new_unpublished_refusals(argv: list[str], message: str, v20: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = snapshot(v20)
    base = [] if "--base" in argv else ["--base", TINY_BASE]
    new = ["--new-unpublished", *base, "--method", "miss", "--data-version", "v2.0"]
    code, _, err = score(capsys, str(v20), *argv, *new, "--benchmark", "exam", "--date", "2026-10-18", "--score", "5")
    assert code == 1 and snapshot(v20) == before
    assert err.startswith(f"error: {message}; nothing was written hint: ")


# --- refusals: exit 1, error and hint, the registry byte-identical ---------------------------------------------------

RUN = ["--benchmark", "exam", "--date", "2026-10-17"]


@pytest.mark.parametrize(
    ("target", "argv", "message", "hint"),
    [
        ("nobody", [*RUN, "--score", "50"], "'nobody' is no entry, base or unpublished weight of index.json",
         "Known ids: s1, v2-r4-a, v2-r4-b; bases: rwkv7-tiny-20260101-ctx4096."),
        ("s1", [*RUN, "--solved", "600", "--total", "568"], "IDX008 entry 's1', exam 2026-10-17: solved 600 of 568",
         "solved <= total"),
        ("s1", [*RUN, "--score", "52.2", "--runs", "2", "--run-scores", "52.2"],
         "IDX008 entry 's1', exam 2026-10-17: 1 run scores for 2 runs", "one run score per run"),
        ("s1", [*RUN, "--score", "46", "--category", "web=30/20"],
         "IDX008 entry 's1', exam 2026-10-17: category 'web': solved 30 of 20", "solved <= total (per category"),
        ("s1", ["--benchmark", "exam", "--date", "2026-13-01", "--score", "46"],
         "the score does not follow schemas/score.schema.json: $.date: \"2026-13-01\" is not a valid date (YYYY-MM-DD)",
         "Give the day the benchmark was run as YYYY-MM-DD"),
        ("s1", ["--benchmark", "exam", "--date", "17/10/2026", "--score", "46"],
         "the score does not follow schemas/score.schema.json: $.date: \"17/10/2026\" is not a valid date (YYYY-MM-DD)",
         "Give the day the benchmark was run as YYYY-MM-DD"),
        ("s1", [*RUN, "--score", "50", "--solved", "296.5", "--total", "568"],
         "IDX013 entry 's1', exam 2026-10-17: score 50% but solved 296.5 of 568 gives 52.2",
         "A percent score is 100 × solved / total"),
        ("s1", [*RUN, "--score", "120"], "$.score: 120 is more than the maximum 100", "A percentage lies in"),
        ("s1", [*RUN, "--score", "52.2", "--runs", "2", "--run-scores", "40,42"],
         "IDX013 entry 's1', exam 2026-10-17: score 52.2% but its run scores 40, 42 average 41",
         "the headline is the mean of `run_scores`"),
        ("v2-r4-a", [*RUN, "--score", "52.2", "--against", "v2-r4-b", "--wins", "95", "--losses", "54", "--p-value",
                     "0.5"], "IDX009 entry 'v2-r4-a', exam 2026-10-17: p_value 0.5 for +95/-54; the exact two-sided "
         "McNemar test gives 0.00098", "exact two-sided McNemar"),
        ("s1", [*RUN, "--score", "52.2", "--against", "nobody", "--wins", "1", "--losses", "0"],
         "IDX008 entry 's1', exam 2026-10-17: compared against 'nobody', which is no entry, unpublished weight or "
         "base", "names an entry or unpublished weight"),
        ("s1", [*RUN, "--solved", "5", "--total", "10", "--against", "v2-r4-b", "--wins", "8", "--losses", "5"],
         "IDX008 entry 's1', exam 2026-10-17: +8/-5 differ on more than 10 questions", "solved <= total"),
        ("s1", [*RUN, "--score", "52.2", "--against", "s1", "--wins", "1", "--losses", "0"],
         "--against 's1' is the weight scored itself", "Compare against another"),
        ("s1", [*RUN, "--score", "46.9", "--content-version", "5" * 64],
         f"IDX017 entry 's1', exam 2026-10-17: records content_version {'5' * 64}, but a State has none",
         "A State or a base has no content_version"),
        ("v2-r4-a", [*RUN, "--score", "46.9", "--content-version", "5" * 64],
         f"IDX017 entry 'v2-r4-a', exam 2026-10-17: measured on the adapter registered as content_version {'5' * 64}",
         "move the score to that file's entry"),
        ("s1", [*RUN, "--score", "46", "--replace"],
         "--replace: entry 's1' has no score of exam 2026-10-17 (backend not recorded) to replace",
         "Drop --replace to add the score."),
    ],
    ids=["unknown", "solved>total", "run-count", "category>total", "bad-date", "date-order", "percent", "over-100",
         "run-mean", "p-value", "against-unknown", "discordant>total", "against-itself", "cv-state", "cv-other",
         "replace-nothing"],
)  # fmt: skip
def test_refused_and_nothing_written(
    target: str, argv: list[str], message: str, hint: str, reg: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = snapshot(reg)
    code, out, err = score(capsys, str(reg), target, *argv)
    assert code == 1 and out == ""
    assert err.startswith("error: ") and f"{message}" in err.split(" hint: ")[0], err
    assert "nothing was written" in err.split(" hint: ")[0]
    assert hint in err.split(" hint: ", 1)[1]
    assert snapshot(reg) == before


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([*RUN, "--solved", "abc", "--total", "5"], "error: --solved 'abc': not a number"),
        ([*RUN, "--run-scores", "52,x"], "error: --run-scores 'x': not a number"),
        ([*RUN, "--category", "web:3/4", "--score", "5"], "error: --category 'web:3/4': give NAME=SOLVED/TOTAL"),
        ([*RUN], "error: no score: give --results FILE, or --score, or --solved with --total"),
        (["--date", "2026-10-17", "--score", "5"], "error: no benchmark: give --benchmark NAME"),
        (["--benchmark", "exam", "--score", "5"], "error: no date: give --date YYYY-MM-DD"),
        ([*RUN, "--score", "5", "--wins", "3", "--losses", "1"], "error: a comparison needs --against ID"),
        ([*RUN, "--score", "5", "--against", "v2-r4-b", "--wins", "3"], "error: a comparison needs both --wins and"),
        ([*RUN, "--score", "5", "--against", "v2-r4-b", "--against-results", "x.json"],
         "error: --against-results compares question by question: give this weight's --results too"),
        ([*RUN, "--score", "5", "--description", "x"], "error: --description: only with --new-unpublished"),
        ([*RUN, "--score", "5", "--new-unpublished", "--base", TINY_BASE],
         "error: --new-unpublished needs --method, --data-version"),
    ],
    ids=["not-a-number", "run-scores", "category-form", "no-score", "no-benchmark", "no-date", "no-against",
         "no-losses", "files-need-results", "description", "unpublished-fields"],
)  # fmt: skip
def test_usage_errors_exit_2(argv: list[str], message: str, reg: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = snapshot(reg)
    code, out, err = score(capsys, str(reg), "s1", *argv)
    assert (code, out) == (2, "") and err.startswith(message) and " hint: " in err, err
    assert snapshot(reg) == before


def test_a_results_file_with_figures_of_its_own_is_refused(
    reg: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = results_file(tmp_path / "a.json", WEB, benchmark="exam", date="2026-10-17")
    before = snapshot(reg)
    for extra, message in [
        (["--solved", "3"], "error: --solved with --results: the result file gives the questions solved"),
        (["--date", "2026-10-16"], "error: --date 2026-10-16 but the result file records date 2026-10-17"),
        (["--benchmark", "bfcl"], "error: --benchmark bfcl but the result file records benchmark exam"),
    ]:
        code, _, err = score(capsys, str(reg), "s1", "--results", f, *extra)
        assert code == 2 and err.startswith(message), err
    (tmp_path / "bad.json").write_text('{"format": "rwkv-registry-results/1", "name": "x", "results": []}')
    code, _, err = score(capsys, str(reg), "s1", "--results", str(tmp_path / "bad.json"))
    assert code == 2 and err.startswith(
        f"error: {tmp_path / 'bad.json'}: $.results: expected at least 1 item, got 0"
    ), err
    other = results_file(tmp_path / "b.json", TOOLS, benchmark="exam", date="2026-10-17")
    code, _, err = score(capsys, str(reg), "s1", "--results", f, "--results", other)
    assert code == 2 and f"error: --results: {f} and {other} hold different questions (4 only in the first" in err
    assert snapshot(reg) == before


def test_a_score_recorded_wrong_by_hand_does_not_block_a_new_one(reg: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """What validate already warns of (an IDX013 typed into index.json) is not the new score's: it is recorded,
    and the old warning stays as it was."""
    from regtools import edit_index, resum

    from rwkv_registry.store.ops import write_readme

    wrong = {"benchmark": "bfcl", "date": "2026-10-13", "score": 50.0, "unit": "percent", "solved": 41, "total": 60,
             "runs": 3, "backend": None, "note": None, "report": None}  # fmt: skip
    edit_index(reg, lambda i: i["entries"][0]["scores"].append(wrong))
    write_readme(reg)
    resum(reg)
    before = findings(reg)
    assert [m for c, _, m in before if c == "IDX013"] == [
        "entry 's1', bfcl 2026-10-13: score 50% but solved 41 of 60 gives 68.33"
    ]
    assert score(capsys, str(reg), "s1", *RUN, "--solved", "266.5", "--total", "568")[0] == 0
    assert findings(reg) == before


# --- the same run again: refused, or --replace ------------------------------------------------------------------------


def test_the_same_run_twice_is_refused_unless_replace(reg: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = [str(reg), "s1", *RUN, "--backend", B17]
    assert score(capsys, *argv, "--score", "46.9", "--runs", "2")[0] == 0
    assert score(capsys, str(reg), "s1", "--benchmark", "bfcl", "--date", "2026-10-13", "--score", "41")[0] == 0
    before = snapshot(reg)
    code, _, err = score(capsys, *argv, "--score", "47.3")
    assert code == 1 and snapshot(reg) == before
    assert err == (
        f"error: index.json: entry 's1' already has a score of exam 2026-10-17 ({B17}): 46.9%, 2 runs; nothing was "
        "written hint: Give --replace to replace it (its figures are dropped), or the --date or --backend of "
        "another run."
    )
    code, out, _ = score(capsys, *argv, "--score", "47.3", "--replace")
    assert code == 0 and out == "replaced exam 2026-10-17 for entry s1: 47.3%\n"
    assert [(s["benchmark"], s["score"]) for s in scores_of(reg, "s1")] == [("exam", 47.3), ("bfcl", 41)]  # in place
    assert score(capsys, str(reg), "s1", *RUN, "--backend", B16, "--score", "45")[0] == 0  # another backend: a run
    findings(reg)


# --- interruptions ---------------------------------------------------------------------------------------------------


def _sigint_as_at_a_terminal() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # a test run started in the background inherits SIGINT ignored


def _interrupt_at(point: str, reg: Path) -> subprocess.CompletedProcess[str]:
    """`score` with Ctrl-C (SIGINT) sent at write fault point ``point`` (rwkv_registry.fs.atomic)."""
    argv = ["score", str(reg), "s1", *RUN, "--score", "46.9", "--runs", "2"]
    env = {**os.environ, atomic.FAULT_ENV: point, atomic.FAULT_SIGNAL_ENV: "INT"}
    return subprocess.run([sys.executable, "-m", "rwkv_registry", *argv], capture_output=True, text=True, env=env,
                          preexec_fn=_sigint_as_at_a_terminal)  # fmt: skip


@pytest.mark.parametrize("point", ["partial-0", "written-2", "staged"])
def test_ctrl_c_before_the_commit_point_writes_nothing(point: str, reg: Path) -> None:
    before = snapshot(reg)
    out = _interrupt_at(point, reg)
    assert out.returncode == 130 and " ".join(out.stderr.split()) == "interrupted: nothing was written"
    assert snapshot(reg) == before


@pytest.mark.parametrize("point", ["journal", "rename-1", "committed"])
def test_ctrl_c_at_or_after_the_commit_point_records_the_score(point: str, reg: Path) -> None:
    out = _interrupt_at(point, reg)
    assert out.returncode == 130
    assert " ".join(out.stderr.split()) == "interrupted after the write was committed: the score is recorded"
    assert [s["score"] for s in scores_of(reg, "s1")] == [46.9]
    assert not [p for p in snapshot(reg) if Path(p).name.startswith(".rwkv-registry")]
    findings(reg)


@pytest.fixture(scope="module")
def crash_scenario(tmp_path_factory: pytest.TempPathFactory) -> Any:
    import crash_harness as harness

    harness.prepare(harness.SCENARIOS["score"], tmp_path_factory.mktemp("crash-score"), timing=False)
    return harness


@pytest.mark.parametrize("point", ["partial-1", "journal-tmp", "journal", "rename-0", "renamed"])
def test_sigkill_then_recover(point: str, crash_scenario: Any, tmp_path: Path) -> None:
    """As tests/test_crash.py does for the other writes: killed at a fault point, the next command recovers the
    registry to before the write or to the uninterrupted result (which validates), and a rerun ends there."""
    harness = crash_scenario
    scn = harness.SCENARIOS["score"]
    assert point in scn.points
    work = tmp_path / "work"
    harness.fresh(scn, work)
    rc, _ = harness.run_command(scn, work, fault=point)
    assert rc == -9, f"{point} was not reached"
    result = harness.check_after_kill(scn, work, f"point:{point}", rc, rerun=True)
    assert result.problems == []
    assert result.outcome == ("before" if point.startswith(("partial", "journal-tmp")) else "after")


# --- scores are data about a weight: a frozen base's entry is scored, its directory untouched ---------------------


@pytest.mark.skipif(shutil.which("git") is None, reason="git not installed")
def test_a_score_under_a_frozen_base_touches_no_published_file(reg: Path, capsys: pytest.CaptureFixture[str]) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@e", "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}  # fmt: skip

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=reg, env=env, check=True, capture_output=True, text=True).stdout

    git("init", "-q", "-b", "main")
    git("add", "-A")
    git("commit", "-q", "-m", "publish")
    newer = ["add-base", str(reg), "--name", NEWER, "--sha256", "b" * 64, "--size", "5", "--arch", ARCH]
    assert main([*newer, "--source", "BlinkDL/rwkv7-g1"]) == 0  # supersedes the tiny base: frozen
    git("add", "-A")
    git("commit", "-q", "-m", "new base")
    assert index(reg)["bases"][0]["status"] == "frozen"
    before = {p: h for p, h in snapshot(reg).items() if p.startswith(f"{TINY_BASE}/")}
    capsys.readouterr()
    assert score(capsys, str(reg), "s1", *RUN, "--score", "46.9", "--runs", "2")[0] == 0
    assert score(capsys, str(reg), TINY_BASE, *RUN, "--score", "21.4")[0] == 0
    assert {p: h for p, h in snapshot(reg).items() if p.startswith(f"{TINY_BASE}/")} == before
    assert git("status", "--porcelain").split() == ["M", "README.md", "M", "SHA256SUMS", "M", "index.json"]
    report = validate_registry(reg, use_cache=False)
    assert report.ok and not [f for f in report.findings if f.code.startswith("GIT")], report.findings


# --- docs/scores.md: the seed's scores section as commands ---------------------------------------------------------


def test_the_seed_scores_section_as_commands(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The block of docs/scores.md, run line by line (its shell variables expanded) on the demo registry (seed
    000's repository) with its scores removed, records every figure the demo records (benchmark, date, headline,
    unit, solved, total, runs, comparison), and validate finds what it found on the demo."""
    import re

    from rwkv_registry.store.demo import build_demo
    from rwkv_registry.store.ops import update_index

    text = (Path(__file__).resolve().parents[1] / "docs" / "scores.md").read_text()
    block = text.split("<!-- seed-scores:begin -->\n```sh\n", 1)[1].split("```\n<!-- seed-scores:end -->", 1)[0]
    root = build_demo(tmp_path / "demo", log=lambda m: None)
    before = findings(root)
    figures = ("benchmark", "date", "score", "unit", "solved", "total", "runs", "comparison")

    def recorded(i: dict[str, Any]) -> dict[str, list[tuple[Any, ...]]]:
        items = i["bases"] + i["entries"] + i["unpublished"]
        return {x.get("id", x.get("name")): [tuple(s.get(k) for k in figures) for s in x["scores"]] for x in items}

    expected = recorded(index(root))

    def strip(i: dict[str, Any]) -> None:
        for x in i["bases"] + i["entries"]:
            x["scores"] = []
        i["unpublished"] = []

    update_index(root, strip)
    validate_registry(root)  # the weights' hashes into the validation cache, as the pre-commit hook leaves them
    monkeypatch.chdir(root)
    variables: dict[str, str] = {}
    commands = 0
    for line in block.splitlines():
        assignment = re.fullmatch(r"([A-Z0-9]+)=(.*)", line)
        if assignment:
            [variables[assignment[1]]] = shlex.split(assignment[2])
            continue
        words = shlex.split(re.sub(r"\$([A-Z0-9]+)", lambda m: variables[m[1]], line))
        assert words[:3] == ["rwkv-registry", "score", "."], line
        code, out, err = score(capsys, *words[2:])
        assert (code, err) == (0, "") and out.startswith("recorded "), (line, err)
        commands += 1
    assert commands == sum(len(v) for v in expected.values()) == 13  # one line per score of the seed
    assert recorded(index(root)) == expected
    assert {u["id"]: (u["base"], u["method"], u["data"]["version"]) for u in index(root)["unpublished"]} == {
        "state-v1.3": ("rwkv7-g1k-7.2b-20260930-ctx25600", "state", "v1.3"),
        V20: ("rwkv7-g1k-7.2b-20260930-ctx25600", "miss", "v2.0"),
    }
    assert findings(root) == before
