"""Crash safety: SIGKILL `init`, `add-base`, `add`, `sums` and `score` at many points; check the registry after each.

Each kill runs the real command line (``python -m rwkv_registry.cli.main``) on a fresh copy of a
"before" registry and kills it either at a named fault point (``RWKV_REGISTRY_FAULT``, see
:mod:`rwkv_registry.fs.atomic`: every directory created, half of and all of every staged file, the
journal, every rename) or after a random delay: three in four counted from the moment the write
begins (the harness polls the registry for the first temporary file; the write lasts a few
milliseconds, over which the delays are spread), one in four from the start of the command. Then:

1. ``rwkv-registry recover`` (standing for "the next command") must exit 0 and say what it did:
   "nothing to recover" when nothing was left, else "removed N temporary file(s)…" or
   "completed an interrupted write…";
2. the registry must then be byte-identical to before the command (every file and directory;
   the lock file aside) or byte-identical to the result of an uninterrupted run, and in the
   second case ``validate`` must pass;
3. the write lock must be free (a lock file left by the dead process never blocks);
4. (``--rerun``) running the command again must succeed or refuse cleanly, and end in the
   uninterrupted result.

Run from the repository root::

    .venv/bin/python bench/crash.py                 # ≥ 50 kills per command, prints figures
    .venv/bin/python bench/crash.py --docs          # also writes the figures into docs/reliability.md

The harness (scenarios, kills, checks) is tests/support/crash_harness.py; tests/test_crash.py runs a dozen of
these kills in the test suite. ``machine`` and ``write_section`` here serve every benchmark's figures.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "support"))

from crash_harness import SCENARIOS, run_all  # noqa: E402


def machine() -> str:
    """A one-line description of this machine."""
    import platform

    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{platform.system()} {platform.release()}, {cpu}, {os.cpu_count()} CPUs, Python {platform.python_version()}"


def markdown(fig: dict, args: argparse.Namespace) -> str:
    """The crash-safety section of docs/reliability.md."""
    import datetime as dt

    lines = [
        f"Measured {dt.date.today().isoformat()} on {machine()} by `bench/crash.py --seed {args.seed} "
        f"--random {args.random}{' --rerun' if args.rerun else ''}`.",
        "",
        f"**{fig['kills']} SIGKILLs** in {fig['runs']} runs; failures: **{len(fig['failures'])}**.",
        "",
        "| command | runs | killed | at a fault point | at a random time | of which inside the write | "
        "ended as before | ended as after | left temp/journal files | journal rolled forward | failures |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for cmd, c in fig["per_command"].items():
        lines.append(
            f"| `{cmd}` | {c.get('runs', 0)} | {c.get('killed', 0)} | {c.get('at_fault_point', 0)} | "
            f"{c.get('at_random_time', 0)} | {c.get('random_inside_write', 0)} | {c.get('ended_before', 0)} | "
            f"{c.get('ended_after', 0)} | "
            f"{c.get('left_transient_files', 0)} | {c.get('journal_rolled_forward', 0)} | {c.get('failures', 0)} |"
        )
    return "\n".join(lines) + "\n"


def write_section(name: str, body: str) -> None:
    """Replace the ``<!-- bench:NAME:begin -->``…``end`` section of docs/reliability.md."""
    path = ROOT / "docs" / "reliability.md"
    text = path.read_text("utf-8")
    begin, end = f"<!-- bench:{name}:begin -->", f"<!-- bench:{name}:end -->"
    head, sep, rest = text.partition(begin)
    _, sep2, tail = rest.partition(end)
    if not (sep and sep2):
        raise SystemExit(f"{path}: markers {begin} … {end} not found")
    path.write_text(f"{head}{begin}\n{body}{end}{tail}", "utf-8")


def main() -> int:
    """Command line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--random", type=int, default=40, help="random-time kills per scenario (default 40)")
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--only", action="append", choices=sorted(SCENARIOS), help="scenario(s) to run")
    parser.add_argument("--rerun", action="store_true", help="also re-run the command after each kill")
    parser.add_argument("--docs", action="store_true", help="write the figures into docs/reliability.md")
    args = parser.parse_args()
    fig = run_all(args.only or list(SCENARIOS), args.random, args.seed, args.rerun, lambda m: print(m, flush=True))
    print(json.dumps(fig, indent=2))
    if args.docs:
        write_section("crash", markdown(fig, args))
    return 1 if fig["failures"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
