"""The handler of ``compare``: two results files in, :func:`rwkv_registry.catalog.compare.compare` called, the
table (or JSON) printed."""

from __future__ import annotations

import argparse
import json
import sys

from rwkv_registry.catalog.compare import compare, load


def cmd_compare(args: argparse.Namespace) -> int:
    result = compare(load(args.a), load(args.b))
    if args.format == "json":
        sys.stdout.write(json.dumps(result.to_json(), indent=2) + "\n")
        return 0
    from rich.console import Console
    from rich.table import Table

    console = Console(highlight=False)
    table = Table(title=f"{result.b} against {result.a}")
    for col in ("category", "questions", "A", "B", "Δ", "+wins", "−losses"):
        table.add_column(col, justify="left" if col == "category" else "right")
    for cat, c in result.by_category.items():
        table.add_row(
            cat,
            str(int(c["questions"])),
            _fmt(c["score_a"]),
            _fmt(c["score_b"]),
            f"{c['delta']:+g}",
            str(int(c["wins"])),
            str(int(c["losses"])),
        )
    table.add_row(
        "all",
        str(result.questions),
        _fmt(result.score_a),
        _fmt(result.score_b),
        f"{result.score_b - result.score_a:+g}",
        str(result.wins),
        str(result.losses),
        style="bold",
    )
    console.print(table)
    console.print(
        f"+{result.wins}/−{result.losses} on {result.wins + result.losses} discordant questions, "
        f"exact McNemar p = {result.p_value:.3g}"
    )
    return 0


def _fmt(x: float) -> str:
    return f"{x:g}"
