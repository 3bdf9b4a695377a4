"""Concurrent writers: two `rwkv-registry` commands on one registry at once, many times.

Each repetition copies a registry holding one base, starts two commands together (the real
command line, ``python -m rwkv_registry.cli.main``) and waits for both. Either both succeed, or one is
refused cleanly (exit 1 or 2, an ``error:`` line, no traceback). Then the registry must validate,
index.json must hold every entry whose command succeeded and no other, and nothing may be lost
or duplicated. With ``held`` the bench holds the write lock while both start, so that both wait
on it and race when it is released (guaranteed contention); otherwise they start together.

The pairs: ``add+add``, ``add+add-same``, ``add+add-base``, ``add+sums``.

Run from the repository root::

    .venv/bin/python bench/concurrency.py --reps 50 [--docs]

The harness (what each pair does, the runs, the checks) is tests/support/concurrency_harness.py;
tests/test_concurrency.py runs a few.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests" / "support"), str(ROOT / "bench")]

from concurrency_harness import PAIRS, run_all  # noqa: E402
from crash import machine, write_section  # noqa: E402


def markdown(fig: dict, reps: int) -> str:
    """The concurrency section of docs/reliability.md."""
    import datetime as dt

    runs = sum(c["runs"] for c in fig["pairs"].values())
    lines = [
        f"Measured {dt.date.today().isoformat()} on {machine()} by `bench/concurrency.py --reps {reps}`.",
        "",
        f"**{runs} runs** of two concurrent commands; lost entries, corrupt index.json or failed validation: "
        f"**{len(fig['failures'])}**.",
        "",
        "| pair | runs | lock held at start | both succeeded | one refused cleanly | failures |",
        "|---|---|---|---|---|---|",
    ]
    for pair, c in fig["pairs"].items():
        lines.append(
            f"| `{pair}` | {c.get('runs', 0)} | {c.get('held_lock_start', 0)} | {c.get('both', 0)} | "
            f"{c.get('one refused', 0)} | {c.get('failures', 0)} |"
        )
    return "\n".join(lines) + "\n"


def main() -> int:
    """Command line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=50, help="repetitions per pair (default 50)")
    parser.add_argument("--only", action="append", choices=sorted(PAIRS))
    parser.add_argument("--docs", action="store_true", help="write the figures into docs/reliability.md")
    args = parser.parse_args()
    fig = run_all(args.only or list(PAIRS), args.reps, lambda m: print(m, flush=True))
    print(json.dumps(fig, indent=2))
    if args.docs:
        write_section("concurrency", markdown(fig, args.reps))
    return 1 if fig["failures"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
