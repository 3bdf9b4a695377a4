"""The handler of ``score``: the flags in, a score built and recorded by :mod:`rwkv_registry.catalog.scoring`, one
line printed."""

from __future__ import annotations

import argparse
import sys

from rwkv_registry.catalog.scoring import Number, build_score, category, figures_text, number, numbers, record_score
from rwkv_registry.core.errors import UsageError


def cmd_score(args: argparse.Namespace) -> int:
    spec = None
    extra = [f for f in ("base", "method", "data_version", "description") if getattr(args, f) is not None]
    if args.new_unpublished:
        missing = [f"--{f.replace('_', '-')}" for f in ("base", "method", "data_version") if getattr(args, f) is None]
        if missing:
            raise UsageError(
                f"--new-unpublished needs {', '.join(missing)}: the base it was trained on, its method, its data",
                hint="e.g. --new-unpublished --base rwkv7-g1k-7.2b-20260930-ctx25600 --method miss --data-version v2.0",
            )
        spec = {f: getattr(args, f) for f in ("base", "method", "data_version", "description")}
    elif extra:
        flags = ", ".join(f"--{f.replace('_', '-')}" for f in extra)
        raise UsageError(
            f"{flags}: only with --new-unpublished (a weight never uploaded, created with this score)",
            hint="Drop them, or add --new-unpublished.",
        )

    def figure(name: str) -> Number | None:
        text = getattr(args, name)
        return None if text is None else number(text, f"--{name.replace('_', '-')}")

    score = build_score(
        benchmark=args.benchmark,
        date=args.date,
        score=figure("score"),
        unit=args.unit,
        solved=figure("solved"),
        total=args.total,
        runs=args.runs,
        run_scores=None if args.run_scores is None else numbers(args.run_scores, "--run-scores"),
        categories=[category(c) for c in args.category or ()],
        backend=args.backend,
        note=args.note,
        report=args.report,
        content_version=args.content_version,
        results=args.results or (),
        against=args.against,
        against_results=args.against_results or (),
        wins=args.wins,
        losses=args.losses,
        p_value=figure("p_value"),
    )
    done = record_score(args.path, args.target, score, replace=args.replace, new_unpublished=spec)
    verb = "replaced" if done.replaced is not None else "recorded"
    new = " (new unpublished weight)" if done.created else ""
    sys.stdout.write(
        f"{verb} {score['benchmark']} {score['date']} for {done.kind} {done.name}{new}: {figures_text(score)}\n"
    )
    return 0
