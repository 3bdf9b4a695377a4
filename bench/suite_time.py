"""What ``make test`` costs, step by step, and where the test suite's time goes (issue 29: under 4 minutes on the
2-core CI machine).

Runs the steps of ``make test`` in this checkout, each timed: ``ruff check``, ``ruff format --check``, ``make layers``
(mypy and import-linter; ``--cold`` empties mypy's cache first, as in a fresh clone), then pytest as the Makefile
runs it (``-n 3 --dist loadfile``; ``--workers`` and ``--dist`` change that) with this module as a plugin, which
notes each test's wall time and CPU time (its process's user + sys, and that of the children it waited for). The
report: each step's wall time, the suite's CPU seconds against the wall time times the workers (the rest is time a
worker waited: sleeps, timeouts, a slow link played by a test server), and the files that cost most, by CPU and by
waiting::

    .venv/bin/python bench/suite_time.py --out build/suite_time.json            # the whole of make test
    .venv/bin/python bench/suite_time.py --pytest-only --workers 3 -- tests/tui  # pytest only, on a part

The JSON holds every test's figures; the summary is printed. Run it on an otherwise idle machine: another process's
load shows up as this suite's time.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
VENV_BIN = REPO / ".venv" / "bin"
RECORD_ENV = "SUITE_TIME_RECORDS"  # the folder each pytest process writes its records into


# ----------------------------------------------------------------------------------------------- the pytest plugin


def _cpu() -> tuple[float, float]:
    """(this process's user + sys seconds, its waited-for children's)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, kids.ru_utime + kids.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """One record per test (setup, call and teardown together), appended to this process's file."""
    folder = os.environ.get(RECORD_ENV)
    if not folder:
        yield
        return
    t0, (own0, kids0) = time.perf_counter(), _cpu()
    yield
    wall, (own1, kids1) = time.perf_counter() - t0, _cpu()
    record = {"id": item.nodeid, "wall": wall, "cpu": own1 - own0, "children_cpu": kids1 - kids0}
    with open(Path(folder) / f"{os.getpid()}.jsonl", "a", encoding="utf-8") as f:
        f.write(json.dumps(record) + "\n")


# ----------------------------------------------------------------------------------------------- the steps


def timed(argv: list[str], env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run ``argv`` in the checkout: its exit status, wall seconds and CPU seconds (with everything it started)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"argv": argv, "rc": done.returncode, "wall": wall, "cpu": cpu, "tail": (done.stdout + done.stderr)[-600:]}


def by_file(records: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    files: dict[str, dict[str, float]] = defaultdict(lambda: {"tests": 0, "wall": 0.0, "cpu": 0.0})
    for r in records:
        f = files[r["id"].split("::", 1)[0]]
        f["tests"] += 1
        f["wall"] += r["wall"]
        f["cpu"] += r["cpu"] + r["children_cpu"]
    return dict(files)


def summary(steps: dict[str, dict[str, Any]], records: list[dict[str, Any]], workers: int, top: int) -> str:
    lines = [f"{name:<22} rc {s['rc']:>3}  wall {s['wall']:7.1f} s  cpu {s['cpu']:7.1f} s" for name, s in steps.items()]
    total = sum(s["wall"] for s in steps.values())
    lines.append(f"{'all steps':<22}         wall {total:7.1f} s ({total / 60:.1f} min)")
    if records:
        wall = sum(r["wall"] for r in records)
        cpu = sum(r["cpu"] + r["children_cpu"] for r in records)
        lines.append(
            f"{len(records)} tests: {wall:.0f} worker-seconds in tests, {cpu:.0f} CPU seconds in them "
            f"({wall - cpu:.0f} s waiting); pytest's wall time x {workers} workers = "
            f"{steps['pytest']['wall'] * workers:.0f} s"
        )
        files = by_file(records)
        lines.append(f"the {top} files with most CPU time (s):")
        for name, f in sorted(files.items(), key=lambda kv: -kv[1]["cpu"])[:top]:
            lines.append(f"  {f['cpu']:7.1f} cpu {f['wall']:7.1f} wall {int(f['tests']):5d} tests  {name}")
        lines.append(f"the {top} files waiting most (wall - CPU, s):")
        for name, f in sorted(files.items(), key=lambda kv: -(kv[1]["wall"] - kv[1]["cpu"]))[:top]:
            lines.append(f"  {f['wall'] - f['cpu']:7.1f} wait {f['wall']:7.1f} wall {int(f['tests']):5d} tests  {name}")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=REPO / "build" / "suite_time.json")
    ap.add_argument("--workers", type=int, default=3, help="pytest -n (the Makefile's: 3)")
    ap.add_argument("--dist", default="loadfile", help="pytest --dist (the Makefile's: loadfile)")
    ap.add_argument("--cold", action="store_true", help="empty mypy's cache first (a fresh clone has none)")
    ap.add_argument("--pytest-only", action="store_true", help="skip ruff, mypy and import-linter")
    ap.add_argument("--top", type=int, default=15)
    ap.add_argument("pytest_args", nargs="*", help="after --: what pytest runs (default: the whole suite)")
    args = ap.parse_args()

    steps: dict[str, dict[str, Any]] = {}
    if not args.pytest_only:
        if args.cold:
            subprocess.run(["rm", "-rf", str(REPO / "build" / "mypy-cache")], check=True)
        steps["ruff check"] = timed([str(VENV_BIN / "ruff"), "check", "."])
        steps["ruff format --check"] = timed([str(VENV_BIN / "ruff"), "format", "--check", "."])
        steps["make layers"] = timed(["make", "--no-print-directory", "-o", "venv", "-o", ".venv/.stamp", "layers"])
    with tempfile.TemporaryDirectory(prefix="suite_time_") as folder:
        env = {
            **os.environ,
            RECORD_ENV: folder,
            "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO / "bench"), os.environ.get("PYTHONPATH", "")])),
        }
        argv = [sys.executable, "-m", "pytest", "-q", "-p", "suite_time", "-p", "no:cacheprovider"]
        argv += ["-n", str(args.workers), "--dist", args.dist, *args.pytest_args]
        steps["pytest"] = timed(argv, env)
        records = [json.loads(line) for p in Path(folder).glob("*.jsonl") for line in p.read_text().splitlines()]
    report = summary(steps, records, args.workers, args.top)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"steps": steps, "tests": records, "summary": report}, indent=1) + "\n")
    print(report)
    print(f"pytest: {steps['pytest']['tail'].strip().splitlines()[-1] if steps['pytest']['tail'].strip() else ''}")
    print(f"written: {args.out}")
    return max(s["rc"] for s in steps.values())


if __name__ == "__main__":
    raise SystemExit(main())
