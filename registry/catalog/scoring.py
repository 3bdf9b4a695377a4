"""``rwkv-registry score``: record a benchmark result of an entry, a base alone or a weight never uploaded.

The figures come from per-question result files (the format ``compare`` reads: one file per run, averaged
question by question) or from the command line (solved/total, the headline, runs and run scores, categories). A
paired comparison against another weight is computed from that weight's result file by :func:`compare.compare` and
:func:`compare.mcnemar_exact`, the code of ``compare``, or taken from the command line (+wins/−losses; the p-value
from the same exact test unless given).

The score is written by :func:`ops.update_index`, the write ``add`` and ``smoke --record`` use: under the registry
lock, index.json, the README's generated sections and SHA256SUMS in one journaled transaction. Before anything is
written, the new score is checked against ``schemas/score.schema.json`` and by validate's own score rules
(:func:`rwkv_registry.checks.index.score_findings`: IDX008, IDX009, IDX013, IDX014, IDX017, IDX020): any finding
the new score brings, error or warning, on itself or on the scores compared against its weight, refuses the write
(exit 1, nothing written). A score of the same run (benchmark, date and backend:
:func:`rwkv_registry.checks.index.score_run`) as one recorded is
refused unless ``--replace``, which replaces it in place.

Scores are data about a weight, not the weight: they live in index.json and the README, at the registry's root,
which the immutability rules (GIT001-GIT003, GIT005, GIT007) do not cover; so a score may be recorded for an
entry under a frozen or superseded base, and nothing under the base's directory changes (docs/scores.md).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from rwkv_registry.catalog.compare import RESULTS_FORMAT, Results, compare, load_json, mcnemar_exact, results_from_json
from rwkv_registry.core.errors import RefusedError, UsageError
from rwkv_registry.core.rules import Finding

Number = int | float


# --- numbers from the command line ------------------------------------------------------------------------------

_INT = re.compile(r"[+-]?[0-9]+")


def number(text: str, flag: str) -> Number:
    """A figure as typed: ``296`` an integer, ``296.5`` a float (what the JSON file then holds); a
    :class:`UsageError` naming ``flag`` when it is no finite number."""
    t = text.strip()
    if _INT.fullmatch(t):
        return int(t)
    try:
        x = float(t)
    except ValueError:
        x = math.nan
    if not math.isfinite(x):
        raise UsageError(f"{flag} {text!r}: not a number", hint=f"Give a number, e.g. {flag} 52.2.")
    return x


def numbers(text: str, flag: str) -> list[Number]:
    """``--run-scores 52.0,52.4``: one figure per run, comma-separated."""
    return [number(part, flag) for part in text.split(",")]


def category(text: str) -> tuple[str, Number, int]:
    """``--category abstention=12/17``: a category's name, questions solved and questions asked."""
    name, eq, figures = text.rpartition("=")
    solved, slash, total = figures.partition("/")
    if not eq or not name.strip() or not slash or not _INT.fullmatch(total.strip()):
        raise UsageError(
            f"--category {text!r}: give NAME=SOLVED/TOTAL", hint="e.g. --category abstention=12/17 (repeatable)."
        )
    return name.strip(), number(solved, f"--category {name.strip()}="), int(total)


# --- the score ---------------------------------------------------------------------------------------------------


@dataclass
class Run:
    """The per-question results of one weight, averaged over the result files given (one per run)."""

    files: list[str]
    scores: dict[str, float]  # question id -> mean score over the runs, 0..1
    categories: dict[str, str]  # question id -> category (from the first file that names one)
    per_run: list[float]  # questions solved in each run
    integral: bool  # every score of every file is 0 or 1, and there is one file
    benchmark: str | None  # what the files record (the same in all), or None
    date: str | None


def read_runs(files: Sequence[str], flag: str) -> Run:
    """Read the result files of one weight (each a run of the same questions) and average them per question."""
    if any(f == "" for f in files):
        raise UsageError(
            f"{flag}: an empty path (an unset shell variable?)", hint="Give the result file (results.schema.json)."
        )
    loaded: list[tuple[str, Results, dict[str, Any]]] = []
    for f in files:
        data = load_json(f)
        loaded.append((f, results_from_json(data, f), data if isinstance(data, dict) else {}))
    first_file, first, _ = loaded[0]
    for f, r, _ in loaded[1:]:
        if set(r.scores) != set(first.scores):
            only_first, only_this = set(first.scores) - set(r.scores), set(r.scores) - set(first.scores)
            raise UsageError(
                f"{flag}: {first_file} and {f} hold different questions ({len(only_first)} only in the first, "
                f"{len(only_this)} only in the second; e.g. {sorted(only_first | only_this)[:5]})",
                hint=f"Each {flag} is one run of the same benchmark: the same question ids in every file.",
            )
    recorded: dict[str, str | None] = {}
    for key in ("benchmark", "date"):
        seen = {
            d[key] for _, _, d in loaded if d.get("format") == RESULTS_FORMAT and isinstance(d.get(key), str) and d[key]
        }
        if len(seen) > 1:
            raise UsageError(
                f"{flag}: the files record different {key}s ({', '.join(sorted(seen))})",
                hint=f"The runs averaged into one score are of one benchmark and day; give the files of one {key}.",
            )
        recorded[key] = next(iter(seen), None)
    n = len(loaded)
    scores = {q: math.fsum(r.scores[q] for _, r, _ in loaded) / n for q in first.scores}
    cats: dict[str, str] = {}
    for _, r, _ in loaded:
        for q, c in r.categories.items():
            if c:
                cats.setdefault(q, c)
    integral = n == 1 and all(float(s).is_integer() for s in first.scores.values())
    per_run = [math.fsum(r.scores.values()) for _, r, _ in loaded]
    return Run(list(files), scores, cats, per_run, integral, recorded["benchmark"], recorded["date"])


def _solved(x: float, integral: bool) -> Number:
    """A count of questions solved as recorded: whole when every score was 0 or 1 in one run, else a mean
    rounded to 2 decimals (exact for the halves of two runs)."""
    return round(x) if integral else round(x, 2)


def _headline(solved: float, total: int, unit: str, integral: bool) -> Number:
    """The headline in ``unit``: a percentage with one decimal (the seed README's 52.2%), or the count solved."""
    return round(100 * solved / total, 1) if unit == "percent" else _solved(solved, integral)


def _refuse_usage(message: str, hint: str) -> NoReturn:
    raise UsageError(message, hint=hint)


def build_score(
    *,
    benchmark: str | None,
    date: str | None,
    score: Number | None = None,
    unit: str = "percent",
    solved: Number | None = None,
    total: int | None = None,
    runs: int | None = None,
    run_scores: list[Number] | None = None,
    categories: Sequence[tuple[str, Number, int]] = (),
    backend: str | None = None,
    note: str | None = None,
    report: str | None = None,
    content_version: str | None = None,
    results: Sequence[str] = (),
    against: str | None = None,
    against_results: Sequence[str] = (),
    wins: int | None = None,
    losses: int | None = None,
    p_value: Number | None = None,
) -> dict[str, Any]:
    """The score item (``schemas/score.schema.json``) from result files and figures; the files are read here.

    Conflicting sources (figures and a file for the same number) are a :class:`UsageError`. The schema (a bad
    date, a percentage over 100, …) and the rules between the numbers (IDX008, IDX009, IDX013, …) are checked by
    :func:`record_score`, with validate's own functions."""
    if unit not in ("percent", "points"):
        _refuse_usage(f"--unit {unit!r}: give percent or points", "percent: share solved (0..100); points: a count.")
    mine = read_runs(results, "--results") if results else None
    if mine is not None:
        given = [
            flag
            for flag, value in (("--solved", solved), ("--total", total), ("--category", categories or None))
            if value is not None
        ]
        if given:
            _refuse_usage(
                f"{' and '.join(given)} with --results: the result file gives the questions solved, their number "
                "and the categories",
                f"Drop {' and '.join(given)}, or drop --results and give the figures.",
            )
        if len(mine.files) > 1 and (runs is not None or run_scores is not None):
            _refuse_usage(
                f"--runs/--run-scores with {len(mine.files)} --results files: each file is one run",
                "Drop --runs and --run-scores (counted and computed from the files), or give one averaged file.",
            )
        for key, value, flag in (("benchmark", benchmark, "--benchmark"), ("date", date, "--date")):
            theirs = getattr(mine, key)
            if value is not None and theirs is not None and value != theirs:
                _refuse_usage(
                    f"{flag} {value} but the result file{'s record' if len(mine.files) > 1 else ' records'} "
                    f"{key} {theirs}",
                    f"Give the {key} of the run the file holds, or drop {flag}: it is read from the file.",
                )
        benchmark = benchmark or mine.benchmark
        date = date or mine.date
        total = len(mine.scores)
        exact = math.fsum(mine.scores.values())
        solved = _solved(exact, mine.integral)
        if score is None:
            score = _headline(exact, total, unit, mine.integral)
        if len(mine.files) > 1:
            runs = len(mine.files)
            run_scores = [_headline(s, total, unit, _whole(s)) for s in mine.per_run]
        by_cat: dict[str, dict[str, Number]] = {}
        for q, c in sorted(mine.categories.items()):
            slot = by_cat.setdefault(c, {"solved": 0.0, "total": 0})
            slot["solved"] += mine.scores[q]
            slot["total"] += 1
        cat_items = {c: {"solved": _solved(v["solved"], mine.integral), "total": v["total"]} for c, v in by_cat.items()}
    else:
        cat_items = {}
        for name, cat_solved, cat_total in categories:
            if name in cat_items:
                _refuse_usage(f"--category {name!r} given twice", "Give each category once: NAME=SOLVED/TOTAL.")
            cat_items[name] = {"solved": cat_solved, "total": cat_total}
        if score is None:
            if solved is None or (unit == "percent" and total is None):
                _refuse_usage(
                    "no score: give --results FILE, or --score, or --solved with --total",
                    "e.g. --solved 296.5 --total 568 (the score is computed), or --score 21.4 alone; "
                    "`rwkv-registry score --help` shows a whole example.",
                )
            if unit == "percent" and isinstance(total, int) and total <= 0:
                _refuse_usage(f"--total {total}: a benchmark has at least one question", "Give the number asked.")
            assert solved is not None
            score = round(100 * solved / total, 1) if unit == "percent" and total else solved
    if not benchmark:
        _refuse_usage("no benchmark: give --benchmark NAME (e.g. exam)", "The result file may record it too.")
    if not date:
        _refuse_usage(
            "no date: give --date YYYY-MM-DD, the day the benchmark was run", "The result file may record it too."
        )
    if run_scores is not None and runs is None:
        runs = len(run_scores)
    sc: dict[str, Any] = {
        "benchmark": benchmark,
        "date": date,
        "score": score,
        "unit": unit,
        "solved": solved,
        "total": total,
    }
    if cat_items:
        sc["by_category"] = cat_items
    sc["runs"] = runs
    if run_scores is not None:
        sc["run_scores"] = list(run_scores)
    sc.update({"backend": backend, "note": note, "report": report})
    if content_version is not None:
        sc["content_version"] = content_version
    comparison = _comparison(mine, sc, against, against_results, wins, losses, p_value)
    if comparison is not None:
        sc["comparison"] = comparison
    return sc


def _whole(x: float) -> bool:
    """A run's count of questions solved is whole (every score 0 or 1): recorded as an integer."""
    return float(x).is_integer()


def _comparison(
    mine: Run | None,
    sc: dict[str, Any],
    against: str | None,
    against_results: Sequence[str],
    wins: int | None,
    losses: int | None,
    p_value: Number | None,
) -> dict[str, Any] | None:
    """The paired comparison: from the other weight's result files (``compare``'s join and exact test), or from
    +wins/−losses given (the p-value from the same test unless given)."""
    figures = wins is not None or losses is not None
    if against is None:
        if against_results or figures or p_value is not None:
            _refuse_usage(
                "a comparison needs --against ID: the entry or unpublished weight compared with",
                "e.g. --against v20-r16-lr3e-5 --wins 95 --losses 54, or --against ID --against-results FILE",
            )
        return None
    if against_results:
        if figures:
            _refuse_usage(
                "--wins/--losses with --against-results: the files give them",
                "Drop --wins and --losses, or drop --against-results.",
            )
        if mine is None:
            _refuse_usage(
                "--against-results compares question by question: give this weight's --results too",
                "Or give the comparison's figures: --wins N --losses N.",
            )
        assert mine is not None
        theirs = read_runs(against_results, "--against-results")
        for key in ("benchmark", "date"):
            value = getattr(theirs, key)
            if value is not None and value != sc[key]:
                _refuse_usage(
                    f"--against-results records {key} {value}, this score's is {sc[key]}",
                    "A paired comparison is of one run: give the other weight's results of the same benchmark and "
                    "day (IDX014).",
                )
        result = compare(
            Results(against, theirs.scores, theirs.categories), Results("this weight", mine.scores, mine.categories)
        )
        wins, losses = result.wins, result.losses
    else:
        if wins is None or losses is None:
            _refuse_usage(
                "a comparison needs both --wins and --losses (or --against-results FILE)",
                "wins: questions this weight solved and the other did not; losses: the reverse.",
            )
    assert wins is not None and losses is not None
    if p_value is None:
        if wins < 0 or losses < 0:
            _refuse_usage(f"+{wins}/−{losses}: counts of questions are not negative", "Give counts of questions.")
        try:
            p = mcnemar_exact(wins, losses)
        except ValueError as e:
            raise RefusedError(f"+{wins}/−{losses}: {e}", hint="Give the counts of discordant questions.") from None
        p_value = float(f"{p:.3g}")  # as `compare` prints it
    return {"against": against, "wins": wins, "losses": losses, "p_value": p_value}


_SCHEMA_HINTS = {
    "date": "Give the day the benchmark was run as YYYY-MM-DD, e.g. --date 2026-10-17.",
    "score": "A percentage lies in 0..100 (--unit points for a count).",
    "content_version": "Give the 64 hex digits the server answered when the adapter was registered.",
}


def _refuse_schema_errors(sc: dict[str, Any]) -> None:
    from rwkv_registry.schemas import schema_errors, schema_summary

    errors = schema_errors("score", sc)
    if errors:
        field = errors[0][0].removeprefix("$.").split(".")[0].split("[")[0]
        raise RefusedError(
            f"the score does not follow schemas/score.schema.json: {schema_summary(errors)}; nothing was written",
            hint=_SCHEMA_HINTS.get(field, "Fix the figure named; schemas/score.schema.json describes each field."),
        )


# --- the write ---------------------------------------------------------------------------------------------------


@dataclass
class Recorded:
    """What :func:`record_score` wrote."""

    kind: str  # "entry", "base" or "unpublished weight"
    name: str  # the entry's or unpublished weight's id, or the base's name
    score: dict[str, Any]
    replaced: dict[str, Any] | None  # the score of the same run it replaced
    created: bool  # a new unpublished weight was created for it


def _find(index: dict[str, Any], target: str) -> tuple[str, str, int] | None:
    """(kind, key of index, position) of ``target``: an entry id or its file's path, a base name, an unpublished
    weight's id; in that order, as ``show`` looks them up."""
    for i, e in enumerate(index["entries"]):
        if e["id"] == target:
            return "entry", "entries", i
    for i, e in enumerate(index["entries"]):
        if e["path"] == target:
            return "entry", "entries", i
    for i, b in enumerate(index["bases"]):
        if b["name"] == target:
            return "base", "bases", i
    for i, u in enumerate(index["unpublished"]):
        if u["id"] == target:
            return "unpublished weight", "unpublished", i
    return None


def _compares_against(item: dict[str, Any], name: str) -> bool:
    return any(isinstance(s.get("comparison"), dict) and s["comparison"].get("against") == name for s in item["scores"])


def _refuse_findings(found: list[Finding], whose: str) -> None:
    if found:
        f = found[0]
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        raise RefusedError(
            f"{f.code} {f.message}{more}{whose}; nothing was written",
            hint=f.hint,
            path="index.json",
            findings=found,
        )


def record_score(
    path: str | Path,
    target: str,
    score: dict[str, Any],
    *,
    replace: bool = False,
    new_unpublished: dict[str, Any] | None = None,
) -> Recorded:
    """Add ``score`` to the scores of ``target`` (an entry id or path, a base name, an unpublished weight's id) and
    write index.json, README.md and SHA256SUMS together; refuse (nothing written) what validate would find wrong
    with it. ``replace``: replace the score of the same run (benchmark, date, backend), which must exist.
    ``new_unpublished``: create the unpublished weight ``target`` (``base``, ``method``, ``data_version``,
    ``description``), which must not exist."""
    from rwkv_registry.checks.index import score_findings, score_run
    from rwkv_registry.fs.atomic import require_registry
    from rwkv_registry.store.ops import update_index

    root = require_registry(path, strict=True)
    done: list[Recorded] = []

    def edit(index: dict[str, Any]) -> None:
        created = False
        if new_unpublished is not None:
            _create_unpublished(index, target, new_unpublished)
            created = True
        where = _find(index, target)
        if where is None:
            known = [e["id"] for e in index["entries"]] + [u["id"] for u in index["unpublished"]]
            shown = ", ".join(known[:12]) + (", …" if len(known) > 12 else "")
            raise RefusedError(
                f"{target!r} is no entry, base or unpublished weight of index.json; nothing was written",
                hint=f"Known ids: {shown or 'none'}; bases: {', '.join(b['name'] for b in index['bases']) or 'none'}. "
                "A weight that was scored but never uploaded: add --new-unpublished --base NAME --method M "
                "--data-version V.",
                path="index.json",
            )
        kind, key, pos = where
        item = index[key][pos]
        name = item["name"] if kind == "base" else item["id"]
        against = (score.get("comparison") or {}).get("against")
        if against == name:
            raise RefusedError(
                f"--against {against!r} is the weight scored itself; nothing was written",
                hint="Compare against another entry, unpublished weight or base.",
            )
        scores: list[dict[str, Any]] = item["scores"]
        run = score_run(score)
        same = [i for i, s in enumerate(scores) if score_run(s) == run]
        if same and not replace:
            old = scores[same[0]]
            raise RefusedError(
                f"{kind} {name!r} already has a score of {score['benchmark']} {score['date']} "
                f"({score.get('backend') or 'backend not recorded'}): {figures_text(old)}; nothing was written",
                hint="Give --replace to replace it (its figures are dropped), or the --date or --backend of "
                "another run.",
                path="index.json",
            )
        if replace and not same:
            runs = "; ".join(
                f"{s['date']} ({s.get('backend') or 'backend not recorded'})"
                for s in scores
                if s["benchmark"] == score["benchmark"]
            )
            raise RefusedError(
                f"--replace: {kind} {name!r} has no score of {score['benchmark']} {score['date']} "
                f"({score.get('backend') or 'backend not recorded'}) to replace; nothing was written",
                hint=f"Its {score['benchmark']} scores: {runs}." if runs else "Drop --replace to add the score.",
                path="index.json",
            )

        # the rules of validate on the new score alone: the item with only that score, against the item with none
        # (what the item itself brings, step beyond total_steps and the like, is the same in both and cancels)
        def probe(with_scores: list[dict[str, Any]]) -> list[Finding]:
            copy = dict(item, scores=with_scores)
            probed = dict(index, **{key: [copy if i == pos else x for i, x in enumerate(index[key])]})
            return score_findings(probed, lambda x: x is copy)

        none = {(f.code, f.message) for f in probe([])}
        _refuse_findings([f for f in probe([score]) if (f.code, f.message) not in none], "")
        _refuse_schema_errors(score)  # after the rules: solved over total says so, not "score over 100"

        def others(x: dict[str, Any]) -> bool:
            return x is not item and _compares_against(x, name)

        before = {(f.code, f.message) for f in score_findings(index, others)}
        replaced = scores[same[0]] if same else None
        if same:
            scores[same[0]] = score
        else:
            scores.append(score)
        after = [f for f in score_findings(index, others) if (f.code, f.message) not in before]
        _refuse_findings(after, f", once {name!r} has this score")
        done.append(Recorded(kind, name, score, replaced, created))

    update_index(root, edit)
    return done[0]


def _create_unpublished(index: dict[str, Any], uid: str, spec: dict[str, Any]) -> None:
    """Append the unpublished weight ``uid`` (refused when the id is taken or the base unknown)."""
    taken = {e["id"] for e in index["entries"]} | {u["id"] for u in index["unpublished"]}
    bases = {b["name"] for b in index["bases"]}
    if uid in taken or uid in bases:
        what = "a base" if uid in bases else "an entry or unpublished weight"
        raise RefusedError(
            f"--new-unpublished: {uid!r} is already {what} of index.json; nothing was written",
            hint="Drop --new-unpublished to score it, or give the new weight another id (ids are shared by entries "
            "and unpublished weights, IDX001).",
            path="index.json",
        )
    if spec["base"] not in bases:
        raise RefusedError(
            f"--base {spec['base']!r} is not in index.json; nothing was written",
            hint=f"Known bases: {', '.join(sorted(bases)) or 'none'} (IDX002).",
            path="index.json",
        )
    index["unpublished"].append(
        {
            "id": uid,
            "base": spec["base"],
            "method": spec["method"],
            "data": {"version": spec["data_version"], "rows": None, "sha256": None},
            "description": spec.get("description") or "",
            "scores": [],
        }
    )


def figures_text(s: dict[str, Any]) -> str:
    """``52.2% (296.5/568), 2 runs`` (the README's form, from the catalog's renderer)."""
    from rwkv_registry.catalog.entries import score_num, score_text

    text = score_text(s)
    if s.get("unit") == "percent" and s.get("solved") is not None and s.get("total") is not None:
        text += f" ({score_num(s['solved'])}/{s['total']})"
    if s.get("runs"):
        text += f", {s['runs']} run{'s' if s['runs'] != 1 else ''}"
    comp = s.get("comparison")
    if isinstance(comp, dict):
        text += f", vs {comp['against']} +{comp['wins']}/−{comp['losses']}, p = {comp['p_value']:g}"
    return text
