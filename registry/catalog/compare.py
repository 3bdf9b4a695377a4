"""``rwkv-registry compare A.json B.json``: per-question comparison with an exact McNemar test.

Two result files are joined question by question. A question is a *win* for B when B scored
higher than A on it, a *loss* when lower (scores may be fractional: the seed's exam averages two
runs, so a question scores 0, 0.5 or 1). The exact two-sided McNemar test on the discordant
questions gives the p-value: p = min(1, 2 · P[X ≤ min(wins, losses)]) with X ~ Binomial(wins +
losses, 1/2). The seed's own figures come out of it: v2.1 against v2.0, +95/−54 → p ≈ 0.001.

Accepted files (detected by content):

- a per-question result file (schema ``results.schema.json``)::

      {"format": "rwkv-registry-results/1", "name": "v2.1 r16 lr2e-5", "benchmark": "exam",
       "results": [{"id": "q001", "category": "web", "score": 1.0}, ...]}

- a smoke report (``rwkv-registry smoke --format json``): its per-case results of the entry.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rwkv_registry.core.errors import UsageError
from rwkv_registry.index.stats import mcnemar_exact

RESULTS_FORMAT = "rwkv-registry-results/1"


@dataclass
class Results:
    """Per-question scores of one system."""

    name: str
    scores: dict[str, float]
    categories: dict[str, str] = field(default_factory=dict)


def results_from_json(data: Any, display: str) -> Results:
    """Read a result file or a smoke report (already parsed)."""
    if not isinstance(data, dict):
        raise UsageError(
            f"{display}: not a JSON object",
            hint="compare takes per-question result files (results.schema.json) or `smoke --format json` reports.",
            path=display,
        )
    if data.get("format") == RESULTS_FORMAT:
        from rwkv_registry.schemas import schema_errors

        errors = schema_errors("results", data)
        if errors:
            raise UsageError(
                f"{display}: {errors[0][0]}: {errors[0][1]}",
                hint="See schemas/results.schema.json for the per-question format.",
            )
        scores: dict[str, float] = {}
        cats: dict[str, str] = {}
        for r in data["results"]:
            if r["id"] in scores:
                raise UsageError(
                    f"{display}: question id {r['id']!r} appears twice",
                    hint=f"Keep one result per question id in {display} (remove or rename the duplicate).",
                    path=display,
                )
            scores[r["id"]] = float(r["score"])
            if r.get("category"):
                cats[r["id"]] = r["category"]
        return Results(str(data.get("name") or display), scores, cats)
    if data.get("kind") == "rwkv-registry-smoke":
        hint = "A smoke report is what `rwkv-registry smoke --format json` writes (schemas/smoke-report.schema.json)."
        cases = data.get("cases")
        if not isinstance(cases, list):
            raise UsageError(f"{display}: smoke report without cases", hint=hint)
        scores = {}
        cats = {}
        for i, c in enumerate(cases):
            side = c.get("entry") if isinstance(c, dict) else None
            correct = side.get("correct") if isinstance(side, dict) else None
            if not isinstance(c, dict) or not isinstance(c.get("id"), str) or not isinstance(correct, bool):
                raise UsageError(
                    f"{display}: smoke report case {i} is not an object with an id and entry.correct (true or false)",
                    hint=hint,
                )
            if c["id"] in scores:
                raise UsageError(f"{display}: smoke report case id {c['id']!r} appears twice", hint=hint)
            scores[c["id"]] = 1.0 if correct else 0.0
            cats[c["id"]] = str(c.get("category", ""))
        entry = data.get("entry")
        name = entry.get("id") if isinstance(entry, dict) else None
        return Results(str(name or display), scores, cats)
    raise UsageError(
        f"{display}: neither a result file (format {RESULTS_FORMAT!r}) nor a smoke report",
        hint="See `rwkv-registry compare --help` and schemas/results.schema.json.",
    )


@dataclass
class Comparison:
    """B against A."""

    a: str
    b: str
    questions: int
    wins: int
    losses: int
    ties: int
    p_value: float
    score_a: float
    score_b: float
    by_category: dict[str, dict[str, float]]
    won: list[str]
    lost: list[str]

    def to_json(self) -> dict[str, Any]:
        return {
            "a": self.a,
            "b": self.b,
            "questions": self.questions,
            "wins": self.wins,
            "losses": self.losses,
            "ties": self.ties,
            "p_value": self.p_value,
            "score_a": self.score_a,
            "score_b": self.score_b,
            "by_category": self.by_category,
            "won": self.won,
            "lost": self.lost,
        }


def compare(a: Results, b: Results) -> Comparison:
    """Join by question id (both files must hold the same questions) and count discordant pairs."""
    only_a, only_b = set(a.scores) - set(b.scores), set(b.scores) - set(a.scores)
    if only_a or only_b:
        sample = sorted(only_a | only_b)[:5]
        raise UsageError(
            f"the files hold different questions ({len(only_a)} only in A, {len(only_b)} only in B; e.g. {sample})",
            hint="Compare results of the same benchmark and question set.",
        )
    won, lost = [], []
    cats: dict[str, dict[str, float]] = {}
    for q in sorted(a.scores):
        sa, sb = a.scores[q], b.scores[q]
        cat = b.categories.get(q) or a.categories.get(q) or "(none)"
        c = cats.setdefault(cat, {"questions": 0, "score_a": 0.0, "score_b": 0.0, "wins": 0, "losses": 0})
        c["questions"] += 1
        c["score_a"] += sa
        c["score_b"] += sb
        if sb > sa:
            won.append(q)
            c["wins"] += 1
        elif sb < sa:
            lost.append(q)
            c["losses"] += 1
    for c in cats.values():
        c["delta"] = c["score_b"] - c["score_a"]
    n = len(a.scores)
    return Comparison(
        a.name,
        b.name,
        n,
        len(won),
        len(lost),
        n - len(won) - len(lost),
        mcnemar_exact(len(won), len(lost)),
        sum(a.scores.values()),
        sum(b.scores.values()),
        dict(sorted(cats.items())),
        won,
        lost,
    )


def load(path: str) -> Results:
    return results_from_json(load_json(path), path)


def load_json(path: str) -> Any:
    """A result file or smoke report parsed by the strict loader (not yet checked: :func:`results_from_json`); what
    the loader refuses is a :class:`UsageError` naming the file. ``score`` reads the file's benchmark and date too."""
    from rwkv_registry.formats.jsonload import JsonLoadError, load_json_file

    try:
        return load_json_file(path)
    except JsonLoadError as e:  # its message already names the file
        raise UsageError(
            e.message,
            hint=(e.hint + " " if e.hint else "")
            + "compare takes per-question result files (results.schema.json) or `smoke --format json` reports.",
            path=path,
        ) from None


def results_file(
    name: str, scores: Mapping[str, float], categories: Mapping[str, str] | None = None, benchmark: str = ""
) -> dict[str, Any]:
    """A per-question result file (for exporting external benchmarks)."""
    return {
        "format": RESULTS_FORMAT,
        "name": name,
        "benchmark": benchmark,
        "results": [{"id": q, "category": (categories or {}).get(q, ""), "score": s} for q, s in scores.items()],
    }


def write_results(path: Path, data: dict[str, Any]) -> None:
    from rwkv_registry.fs.atomic import atomic_write_bytes

    atomic_write_bytes(path, (json.dumps(data, indent=2) + "\n").encode())
