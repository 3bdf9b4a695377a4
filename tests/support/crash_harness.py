"""The crash harness: SIGKILL a registry write command at a fault point or a random time, then check the registry.

One scenario per write (`init`, `add-base`, `add` of a State and of a MiSS adapter, `sums`, `score`): a fresh copy
of its "before" registry, the real command line (``python -m rwkv_registry.cli.main``) run with
``RWKV_REGISTRY_FAULT`` naming a fault point of :mod:`rwkv_registry.fs.atomic` or killed after a delay, then the
checks of :func:`check_after_kill` (recover says what it did; the registry is as before or as after, and valid; the
lock is free). bench/crash.py runs hundreds of kills and writes the figures; tests/test_crash.py runs a dozen.
"""

from __future__ import annotations

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

from regtools import TINY_ARCH, TINY_BASE, TINY_SHA, miss_train, state_train, write_miss, write_state

from rwkv_registry.engine.validate import validate_registry
from rwkv_registry.fs.atomic import DIRS_NAME, JOURNAL_NAME, LOCK_NAME, TMP_PREFIX, registry_lock

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


def env(work: Path, fault: str | None) -> dict[str, str]:
    env = dict(os.environ, RWKV_REGISTRY_CACHE_DIR=str(work / "cache"))
    env.pop("RWKV_REGISTRY_FAULT", None)
    if fault:
        env["RWKV_REGISTRY_FAULT"] = fault
    return env


def fresh(scn: Scenario, work: Path) -> None:
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
    proc = subprocess.Popen(_cli(*scn.argv(work)), env=env(work, fault), stdout=subprocess.DEVNULL,
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
    fresh(scn, work)
    reg = work / "reg"
    proc = subprocess.Popen(_cli(*scn.argv(work)), env=env(work, None), stdout=subprocess.DEVNULL,
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
        rec = subprocess.run(_cli("recover", str(reg)), env=env(work, None), capture_output=True, text=True)
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
    fresh(scn, work)
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
        fresh(scn, work)
        ends.append(run_command(scn, work)[1])
    scn.t_end = sorted(ends)[1]
    starts = []
    for _ in range(3):
        fresh(scn, work)
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
                fresh(scn, work)
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
