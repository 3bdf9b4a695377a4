"""The concurrency harness: two `rwkv-registry` write commands started together on one registry, then the checks
(both succeed, or one is refused cleanly; the registry validates; index.json holds every entry whose command
succeeded and no other). bench/concurrency.py runs many repetitions of each pair and writes the figures;
tests/test_concurrency.py runs a few.

Pairs:

- ``add+add``: two different State files into one data-version directory (both must land);
- ``add+add-same``: the same file name twice (the second must be refused: published weights
  never change);
- ``add+add-base``: a State under the existing base and a new base;
- ``add+sums``: an add and a SHA256SUMS rewrite.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from crash_harness import ARCH, CLI
from regtools import TINY_BASE, TINY_SHA, state_train, write_state

from rwkv_registry.engine.validate import validate_registry
from rwkv_registry.fs.atomic import registry_lock

OTHER_BASE = "rwkv7-other-20260201-ctx4096"  # another family: adding it freezes nothing


def prepare_template(base: Path) -> Path:
    """A registry with one base, plus the input files of every pair."""
    template = base / "template"
    reg = template / "reg"
    subprocess.run([*CLI, "init", str(reg), "--name", "test/registry"], check=True, capture_output=True)
    subprocess.run([*CLI, "add-base", str(reg), "--name", TINY_BASE, "--sha256", TINY_SHA, "--size", "1234",
                    "--arch", ARCH, "--source", "BlinkDL/rwkv7-g1"], check=True, capture_output=True)  # fmt: skip
    inputs = template / "in"
    write_state(inputs / "a" / "sa.pth", seed=11)
    write_state(inputs / "b" / "sb.pth", seed=12)
    write_state(inputs / "c" / "sa.pth", seed=13)  # same name as a/sa.pth, other content
    (inputs / "train.json").write_text(json.dumps(state_train("v1")))
    return template


def _metadata_base(work: Path, name: str) -> list[str]:
    return ["add-base", str(work / "reg"), "--name", name, "--sha256", "c" * 64, "--size", "99", "--arch", ARCH,
            "--source", "BlinkDL/rwkv7-g1"]  # fmt: skip


def _add(work: Path, rel: str) -> list[str]:
    return ["add", str(work / "reg"), str(work / "in" / rel), "--base", TINY_BASE, "--data-version", "v1",
            "--train", str(work / "in" / "train.json")]  # fmt: skip


PAIRS: dict[str, Callable[[Path], tuple[list[str], list[str]]]] = {
    "add+add": lambda w: (_add(w, "a/sa.pth"), _add(w, "b/sb.pth")),
    "add+add-same": lambda w: (_add(w, "a/sa.pth"), _add(w, "c/sa.pth")),
    "add+add-base": lambda w: (
        _add(w, "a/sa.pth"),
        _metadata_base(w, OTHER_BASE),
    ),
    "add+sums": lambda w: (_add(w, "a/sa.pth"), ["sums", str(w / "reg")]),
}


def _expected_ids(argv: list[str]) -> set[str]:
    """The entry (or base) a successful command adds."""
    if argv[0] == "add":
        return {Path(argv[2]).stem}
    if argv[0] == "add-base":
        return {"base:" + argv[argv.index("--name") + 1]}
    return set()


def start_pair(template: Path, work: Path, pair: str, *, held: bool) -> tuple[list[list[str]], list[tuple]]:
    """Run one pair once on a fresh copy; the argument lists and (exit code, stderr) of each."""
    if work.exists():
        shutil.rmtree(work)
    shutil.copytree(template, work)
    env = dict(os.environ, RWKV_REGISTRY_CACHE_DIR=str(work / "cache"))
    env.pop("RWKV_REGISTRY_FAULT", None)
    argvs = list(PAIRS[pair](work))
    lock = registry_lock(work / "reg", quiet=True) if held else None
    if lock is not None:
        lock.__enter__()
    procs = [subprocess.Popen([*CLI, *a], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for a in argvs]  # fmt: skip
    if lock is not None:
        time.sleep(1.0)  # both are past their imports and input checks, waiting on the lock
        lock.__exit__(None, None, None)
    results = [(p.returncode, err) for p, (_, err) in ((p, p.communicate(timeout=120)) for p in procs)]
    return argvs, results


def check_pair(work: Path, pair: str, argvs: list[list[str]], results: list[tuple]) -> tuple[str, list[str]]:
    """(outcome, problems) of one run: "both" or "one refused"; problems empty when all holds."""
    problems: list[str] = []
    succeeded: set[str] = set()
    refused = 0
    for argv, (rc, err) in zip(argvs, results, strict=True):
        if rc == 0:
            succeeded |= _expected_ids(argv)
        elif rc in (1, 2) and err.lstrip().startswith("error:") and "Traceback" not in err:
            refused += 1
        else:
            problems.append(f"{argv[0]} exited {rc}: {err.strip()[-300:]}")
    try:
        index = json.loads((work / "reg" / "index.json").read_text())
    except ValueError as e:
        return "corrupt", [*problems, f"index.json is not JSON: {e}"]
    present = {e["id"] for e in index["entries"]} | {"base:" + b["name"] for b in index["bases"]}
    present.discard("base:" + TINY_BASE)
    if present != succeeded:
        problems.append(f"index.json holds {sorted(present)}, the successful commands added {sorted(succeeded)}")
    ids = [e["id"] for e in index["entries"]]
    if len(ids) != len(set(ids)):
        problems.append(f"duplicate entries {ids}")
    report = validate_registry(work / "reg", use_cache=False)
    if not report.ok:
        problems.append("does not validate: " + ", ".join(f"{f.code} {f.path}" for f in report.findings[:5]))
    if pair == "add+add-same" and refused != 1:
        problems.append(f"the same file name was accepted {2 - refused} times")
    return ("both" if refused == 0 else "one refused"), problems


def one_run(template: Path, work: Path, pair: str, *, held: bool) -> tuple[str, list[str]]:
    """Run and check one pair once."""
    argvs, results = start_pair(template, work, pair, held=held)
    return check_pair(work, pair, argvs, results)


def run_all(pairs: list[str], reps: int, log: Callable[[str], None]) -> dict:
    """Every pair ``reps`` times, half of them with the lock held at the start."""
    figures: dict[str, Counter] = {}
    failures: list[tuple[str, int, list[str]]] = []
    with tempfile.TemporaryDirectory(prefix="rwkv-concurrency-") as tmp:
        template = prepare_template(Path(tmp))
        for pair in pairs:
            c = figures.setdefault(pair, Counter())
            for n in range(reps):
                held = n % 2 == 1
                outcome, problems = one_run(template, Path(tmp) / "work", pair, held=held)
                c["runs"] += 1
                c["held_lock_start"] += held
                c[outcome] += 1
                c["failures"] += bool(problems)
                if problems:
                    failures.append((pair, n, problems))
                    log(f"FAIL {pair} #{n}: {problems}")
            log(f"{pair}: {dict(c)}")
    return {"pairs": {k: dict(v) for k, v in figures.items()}, "failures": failures}
