"""Cost of ``make typecheck`` in two checkouts (say, before and after bench/ joined it), runs alternated.

Each checkout runs ``make typecheck`` once untimed (mypy's cache warmed, as in a repeated ``make test``),
then ``--runs`` times each, the two alternating; the medians of wall time and of the CPU time (user + sys)
of ``make`` and everything it started (``resource.getrusage(RUSAGE_CHILDREN)``), the figure to compare on a
shared machine::

    .venv/bin/python bench/typecheck_bench.py /path/to/before /path/to/after --runs 5

A checkout without its own ``.venv`` must have one linked in (``ln -s /path/to/after/.venv``): ``make`` is
told not to rebuild the venv (``-o``), so it never reinstalls into the linked one.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import time
from pathlib import Path

MAKE = ["make", "--no-print-directory", "-o", "venv", "-o", ".venv/.stamp", "typecheck"]


def once(checkout: Path) -> tuple[float, float]:
    """(wall seconds, CPU seconds of make and its children) of one ``make typecheck`` in ``checkout``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run(MAKE, cwd=checkout, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"make typecheck failed in {checkout}:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("checkouts", type=Path, nargs="+")
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    for checkout in args.checkouts:
        once(checkout)  # warm mypy's cache
    times: dict[Path, list[tuple[float, float]]] = {c: [] for c in args.checkouts}
    for _ in range(args.runs):
        for checkout in args.checkouts:
            times[checkout].append(once(checkout))
    rows = {
        str(c): {
            "wall_s": round(statistics.median(w for w, _ in t), 2),
            "cpu_s": round(statistics.median(cpu for _, cpu in t), 2),
        }
        for c, t in times.items()
    }
    print(json.dumps({"runs": args.runs, "loadavg": Path("/proc/loadavg").read_text().split()[:3], **rows}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
