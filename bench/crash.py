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

tests/test_crash.py runs a dozen of these kills in the test suite.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from regtools import TINY_ARCH, TINY_BASE, TINY_SHA, miss_train, state_train, write_miss, write_state  # noqa: E402

from rwkv_registry.engine.validate import validate_registry  # noqa: E402
from rwkv_registry.fs.atomic import DIRS_NAME, JOURNAL_NAME, LOCK_NAME, TMP_PREFIX, registry_lock  # noqa: E402

CLI = [sys.executable, "-m", "rwkv_registry.cli.main"]
ARCH = ",".join(
    [f"{k}={TINY_ARCH[k]}" for k in ("n_layer", "n_embd", "vocab_size", "head_size", "ffn_size")]
    + [f"lora_{k}={v}" for k, v in TINY_ARCH["lora"].items()]
)
Snapshot = dict[str, str]  # relative path -> sha256 of a file, or "dir"


def snapshot(root: Path) -> Snapshot:
    """Every file (by content) and directory under ``root``, the lock file aside; {} if absent."""
    out: Snapshot = {}
    if not root.exists():
        return out
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = Path(dirpath).relative_to(root)
        for d in dirnames:
            out[(rel_dir / d).as_posix()] = "dir"
        for name in filenames:
            if name == LOCK_NAME and rel_dir == Path("."):
                continue
            out[(rel_dir / name).as_posix()] = hashlib.sha256((Path(dirpath) / name).read_bytes()).hexdigest()
    return out


def leftovers(root: Path) -> list[str]:
    """Transient files of an interrupted write (temporary files, the journal, the created-dirs list)."""
    snap = snapshot(root)
    return sorted(p for p in snap if Path(p).name.startswith(TMP_PREFIX) or p in (JOURNAL_NAME, DIRS_NAME))


# --- scenarios ---------------------------------------------------------------------------------------------


@dataclass
class Scenario:
    """One command run on one "before" state."""

    name: str  # also the command
    prepare: Callable[[Path], None]  # builds work/reg (maybe absent) and work/in (inputs)
    argv: Callable[[Path], list[str]]  # CLI arguments, given the work directory
    before: Path | None = None  # template work directory (prepared once)
    after: Snapshot = field(default_factory=dict)  # uninterrupted result
    before_snap: Snapshot = field(default_factory=dict)
    t_write: float = 0.0  # seconds from start to the first write (calibrated)
    t_end: float = 0.0  # seconds of an uninterrupted run
    window: float = 0.0  # seconds from the first temporary file in the root to the commit
    points: list[str] = field(default_factory=list)  # fault points this command reaches


def _cli(*args: str) -> list[str]:
    return [*CLI, *args]


def _registry(work: Path, *, base: bool = True) -> None:
    subprocess.run(_cli("init", str(work / "reg"), "--name", "test/registry"), check=True, capture_output=True)
    if base:
        subprocess.run(_cli(*_add_base_args(work)), check=True, capture_output=True)


def _add_base_args(work: Path) -> list[str]:
    return ["add-base", str(work / "reg"), "--name", TINY_BASE, "--sha256", TINY_SHA, "--size", "1234",
            "--arch", ARCH, "--source", "BlinkDL/rwkv7-g1"]  # fmt: skip


def _prepare_add(work: Path) -> None:
    _registry(work)
    (work / "in").mkdir()
    write_state(work / "in" / "s2.pth", seed=5)
    (work / "in" / "train.json").write_text(json.dumps(state_train("v2")))


def _prepare_add_miss(work: Path) -> None:
    _registry(work)
    (work / "in").mkdir()
    write_miss(work / "in" / "adapter-final.pth", seed=3)
    (work / "in" / "train.json").write_text(json.dumps(miss_train("v3", groups=("r4-a",))))


def _score_args(work: Path) -> list[str]:
    return ["score", str(work / "reg"), TINY_BASE, "--benchmark", "exam", "--date", "2026-10-16", "--score", "21.4",
            "--runs", "2", "--note", "base alone"]  # fmt: skip


def _prepare_sums(work: Path) -> None:
    _registry(work)
    (work / "reg" / "LICENSE").write_text("MIT License\n")  # SHA256SUMS is now stale


SCENARIOS: dict[str, Scenario] = {
    s.name: s
    for s in [
        Scenario("init", lambda w: None, lambda w: ["init", str(w / "reg"), "--name", "test/registry"]),
        Scenario("add-base", lambda w: _registry(w, base=False), _add_base_args),
        Scenario("add", _prepare_add, lambda w: ["add", str(w / "reg"), str(w / "in" / "s2.pth"), "--base", TINY_BASE,
                                                 "--data-version", "v2", "--train", str(w / "in" / "train.json")]),
        Scenario("add-miss", _prepare_add_miss,
                 lambda w: ["add", str(w / "reg"), str(w / "in" / "adapter-final.pth"), "--base", TINY_BASE,
                            "--data-version", "v3", "--group", "r4-a", "--train", str(w / "in" / "train.json")]),
        Scenario("sums", _prepare_sums, lambda w: ["sums", str(w / "reg")]),
        Scenario("score", _registry, _score_args),
    ]
}  # fmt: skip
COMMAND_OF = {"init": "init", "add-base": "add-base", "add": "add", "add-miss": "add", "sums": "sums", "score": "score"}


# --- one kill ----------------------------------------------------------------------------------------------


@dataclass
class KillResult:
    """What one kill did, and whether every check held."""

    scenario: str
    how: str  # "point:<name>" or "timer:<seconds>"
    killed: bool  # False: the command finished before the kill
    left: list[str]  # transient files after the kill
    outcome: str  # "before" | "after"
    recover_message: str
    problems: list[str]


def _env(work: Path, fault: str | None) -> dict[str, str]:
    env = dict(os.environ, RWKV_REGISTRY_CACHE_DIR=str(work / "cache"))
    env.pop("RWKV_REGISTRY_FAULT", None)
    if fault:
        env["RWKV_REGISTRY_FAULT"] = fault
    return env


def _fresh(scn: Scenario, work: Path) -> None:
    if work.exists():
        shutil.rmtree(work)
    assert scn.before is not None
    shutil.copytree(scn.before, work, symlinks=True)


def _write_started(reg: Path) -> bool:
    """Has the write begun (a temporary file or the created-directories record in the root)?"""
    try:
        return any(name.startswith(TMP_PREFIX) for name in os.listdir(reg))
    except OSError:
        return False


def run_command(
    scn: Scenario, work: Path, *, fault: str | None = None, delay: float | None = None, in_write: bool = False
) -> tuple[int, float]:
    """Run the scenario's command; (exit status, seconds). Killed at fault point ``fault``, or
    ``delay`` s after the start, or (``in_write``) ``delay`` s after the write began (polled)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(_cli(*scn.argv(work)), env=_env(work, fault), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)  # fmt: skip
    if delay is not None:
        if in_write:
            while proc.poll() is None and not _write_started(work / "reg"):
                pass  # busy-wait: the write phase lasts milliseconds
        try:
            proc.wait(timeout=delay)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGKILL)
    rc = proc.wait(timeout=120)
    return rc, time.perf_counter() - t0


def _write_pending(reg: Path) -> bool:
    try:
        return any(name.startswith(TMP_PREFIX) or name == JOURNAL_NAME for name in os.listdir(reg))
    except OSError:
        return False


def write_window(scn: Scenario, work: Path) -> float:
    """Seconds from the first temporary file in the root until no temporary file nor journal is left
    there (the write committed), in an uninterrupted run."""
    _fresh(scn, work)
    reg = work / "reg"
    proc = subprocess.Popen(_cli(*scn.argv(work)), env=_env(work, None), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)  # fmt: skip
    while proc.poll() is None and not _write_started(reg):
        pass
    t0 = time.perf_counter()
    while proc.poll() is None and _write_pending(reg):
        pass
    t1 = time.perf_counter()
    proc.wait(timeout=120)
    return t1 - t0


def check_after_kill(scn: Scenario, work: Path, how: str, rc: int, *, rerun: bool) -> KillResult:
    """Recover, then compare with the before and after snapshots (the checks of the module docstring)."""
    reg = work / "reg"
    problems: list[str] = []
    killed = rc == -signal.SIGKILL
    if not killed and rc != 0:
        problems.append(f"command exited {rc}")
    left = leftovers(reg)
    message = ""
    if reg.exists():
        rec = subprocess.run(_cli("recover", str(reg)), env=_env(work, None), capture_output=True, text=True)
        message = " ".join(rec.stdout.split())
        if rec.returncode != 0:
            problems.append(f"recover exited {rec.returncode}: {rec.stderr.strip()}")
        expected = "nothing to recover" if not left else ("removed" if JOURNAL_NAME not in left else "completed")
        if expected not in message:
            problems.append(f"recover said {message!r}, expected {expected!r} (leftovers {left})")
    snap = snapshot(reg)
    if snap == scn.before_snap:
        outcome = "before"
    elif snap == scn.after:
        outcome = "after"
        report = validate_registry(reg, use_cache=False)
        if not report.ok:
            problems.append("after state does not validate: " + ", ".join(f.code for f in report.findings))
    else:
        outcome = "neither"
        extra = sorted(set(snap) - set(scn.after) - set(scn.before_snap))
        problems.append(f"registry is neither before nor after (unexpected: {extra[:5]})")
    if reg.exists():
        try:
            with registry_lock(reg, timeout=0.5, quiet=True):
                pass
        except Exception as e:  # the check is that nothing is raised
            problems.append(f"lock not free after the kill: {e}")
    if rerun and not problems:
        rc2, _ = run_command(scn, work)
        if snapshot(reg) != scn.after:
            problems.append(f"re-running the command (exit {rc2}) did not reach the uninterrupted result")
    return KillResult(scn.name, how, killed, left, outcome, message, problems)


# --- calibration and the whole run ---------------------------------------------------------------------------


def prepare(scn: Scenario, base_dir: Path, *, timing: bool = True) -> None:
    """Build the before template, the after snapshot, the reachable fault points and (``timing``)
    the timing the random kills need."""
    template = base_dir / f"{scn.name}-template"
    template.mkdir(parents=True)
    scn.prepare(template)
    scn.before = template
    work = base_dir / f"{scn.name}-calibrate"
    _fresh(scn, work)
    scn.before_snap = snapshot(work / "reg")
    rc, _ = run_command(scn, work)
    if rc != 0:
        raise SystemExit(f"{scn.name}: the uninterrupted command failed (exit {rc})")
    scn.after = snapshot(work / "reg")
    changed = [p for p, h in scn.after.items() if h != "dir" and scn.before_snap.get(p) != h]
    new_dirs = [p for p, h in scn.after.items() if h == "dir" and p not in scn.before_snap]
    n_files, n_dirs = len(changed), len(new_dirs)
    scn.points = (
        [f"mkdir-{k}" for k in range(n_dirs)]
        + [f"{kind}-{i}" for i in range(n_files) for kind in ("partial", "written")]
        + ["staged", "journal-tmp", "journal"]
        + [f"rename-{i}" for i in range(n_files)]
        + ["renamed", "committed"]
    )
    if timing:
        _calibrate(scn, work)
    shutil.rmtree(work)


def _calibrate(scn: Scenario, work: Path) -> None:
    """Median run time, time to the first write, and length of the write."""
    ends = []
    for _ in range(3):
        _fresh(scn, work)
        ends.append(run_command(scn, work)[1])
    scn.t_end = sorted(ends)[1]
    starts = []
    for _ in range(3):
        _fresh(scn, work)
        starts.append(run_command(scn, work, fault=scn.points[0])[1])
    scn.t_write = sorted(starts)[1]  # median time to the first write
    scn.window = sorted(write_window(scn, work) for _ in range(3))[1]


Kill = tuple[str, str | None, float | None, bool]  # (label, fault point, delay, delay counted from the write)


def kills_for(scn: Scenario, n_random: int, rng: random.Random) -> list[Kill]:
    """Every fault point; then ``n_random`` random delays: three quarters counted from the moment
    the write began (uniform over its measured length and a little more), a quarter from the start
    of the command (uniform over the whole run: start-up, input checks, hashing)."""
    plan: list[Kill] = [(f"point:{p}", p, None, False) for p in scn.points]
    for k in range(n_random):
        if k % 4 == 3:
            d = rng.uniform(0.0, scn.t_end * 1.05)
            plan.append((f"timer:{d:.4f}", None, d, False))
        else:
            d = rng.uniform(0.0, scn.window * 1.2)
            plan.append((f"write+{d:.4f}", None, d, True))
    return plan


def run_all(names: list[str], n_random: int, seed: int, rerun: bool, log: Callable[[str], None]) -> dict:
    """Prepare every scenario, run every kill; the figures."""
    rng = random.Random(seed)
    results: list[KillResult] = []
    with tempfile.TemporaryDirectory(prefix="rwkv-crash-") as tmp:
        base = Path(tmp)
        for name in names:
            scn = SCENARIOS[name]
            prepare(scn, base)
            log(
                f"{name}: {len(scn.points)} fault points, run {scn.t_end:.3f} s, write phase {scn.window * 1000:.1f} ms"
            )
            for n, (how, fault, delay, in_write) in enumerate(kills_for(scn, n_random, rng)):
                work = base / f"{name}-{n}"
                _fresh(scn, work)
                rc, _ = run_command(scn, work, fault=fault, delay=delay, in_write=in_write)
                result = check_after_kill(scn, work, how, rc, rerun=rerun)
                results.append(result)
                if result.problems:
                    log(f"  FAIL {name} {how}: {result.problems}")
                shutil.rmtree(work)
    return summarize(results)


def summarize(results: list[KillResult]) -> dict:
    """Counts per command and outcome."""
    per: dict[str, Counter] = {}
    for r in results:
        c = per.setdefault(COMMAND_OF[r.scenario], Counter())
        c["runs"] += 1
        c["killed"] += r.killed
        c["at_fault_point"] += r.killed and r.how.startswith("point:")
        random_kill = r.killed and not r.how.startswith("point:")
        c["at_random_time"] += random_kill
        c["random_inside_write"] += random_kill and bool(r.left)
        c[f"ended_{r.outcome}"] += 1
        c["left_transient_files"] += bool(r.left)
        c["journal_rolled_forward"] += JOURNAL_NAME in r.left
        c["failures"] += bool(r.problems)
    return {
        "per_command": {k: dict(v) for k, v in per.items()},
        "kills": sum(r.killed for r in results),
        "runs": len(results),
        "failures": [(r.scenario, r.how, r.problems) for r in results if r.problems],
    }


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
