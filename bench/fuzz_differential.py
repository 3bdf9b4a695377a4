"""Differential fuzzing campaign: generated weight files through the tool's reader and torch's.

Every sample is ``(class, seed)``: ``--seed S`` and index ``i`` give sample seed ``S * 10**9 + i``
and its class is drawn (weighted, :data:`WEIGHTS`) from the same pair, so the whole campaign is
reproducible and each disagreement is replayed alone with ``--replay CLASS:SEED``. The check is
tests/support/diffcheck.py (tool vs ``torch.load`` cpu / mmap / default location, ``zipfile``, a model of
rwkv_lightning_cuda's reader; tool vs ``safetensors.safe_open`` for ``st-*`` classes); the
generators are tests/support/diffgen.py. With ``--corpus`` the malicious cases and the bombs of
tests/malicious (evil_cases.py, bombs.py: the project's one copy of them, read by path) go
through the same check first, each also mutated ``--corpus-mutants`` times.

Run from the repository root (the machine is shared: few processes, niced)::

    nice -n 10 .venv/bin/python bench/fuzz_differential.py --count 100000 --jobs 1 \\
        --corpus --json build/fuzz_differential.json
    .venv/bin/python bench/fuzz_differential.py --replay eocd-in-comment:7000000123 --save /tmp/x

The JSON summary: counts per class (accepted / refused and the refusal codes), disagreements
per class and reader, each disagreement with its replay key (first ``--keep`` per class and
reader), time, machine, and the git commit of the tree that ran.
"""

from __future__ import annotations

import argparse
import collections
import json
import multiprocessing as mp
import os
import platform
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "support"))

import diffcheck  # noqa: E402
import diffgen  # noqa: E402

# share of the samples per class
WEIGHTS: dict[str, int] = {
    "valid": 4,
    "eocd-in-comment": 8,
    "comment-length": 4,
    "trailing-junk": 4,
    "case-collision": 8,
    "zip64-extra": 8,
    "unowned-bytes": 8,
    "extra-member": 6,
    "missing-record": 6,
    "record-values": 6,
    "storage-location": 6,
    "pickle-edits": 8,
    "header-fields": 10,
    "version-needed": 4,
    "bytes": 10,
    "st-valid": 2,
    "st-duplicates": 3,
    "st-offsets": 3,
    "st-fields": 4,
    "st-metadata": 3,
    "st-header": 3,
    "st-bytes": 4,
}


def pick(seed: int, index: int, classes: list[str]) -> tuple[str, int]:
    """The class and sample seed of sample ``index`` of campaign ``seed``."""
    rng = random.Random(f"pick/{seed}/{index}")
    klass = rng.choices(classes, weights=[WEIGHTS.get(c, 1) for c in classes])[0]
    return klass, seed * 10**9 + index


_WORKDIR: Path | None = None


def _init_worker() -> None:
    global _WORKDIR
    import torch

    torch.set_num_threads(1)
    _WORKDIR = diffcheck.workdir_for(Path(tempfile.gettempdir()))


def run_one(key: tuple[str, int]) -> dict[str, Any]:
    """Generate and check one sample; a plain dict for the parent."""
    klass, seed = key
    assert _WORKDIR is not None
    started = time.perf_counter()
    try:
        sample = diffgen.generate(klass, seed)
    except Exception as exc:  # a generator bug: reported, not hidden
        return {"class": klass, "seed": seed, "generator_error": f"{type(exc).__name__}: {exc}"[:300]}
    outcome = diffcheck.check(sample, _WORKDIR)
    return _record(klass, seed, sample.base, sample.note, outcome, time.perf_counter() - started)


def _record(klass: str, seed: int | str, base: str, note: str, outcome: diffcheck.Outcome, seconds: float) -> dict:
    return {
        "class": klass,
        "seed": seed,
        "base": base,
        "note": note[:300],
        "accepted": outcome.accepted,
        "code": outcome.code,
        "disagreements": [(d.reader, d.what[:400]) for d in outcome.disagreements],
        "notes": [n[:120] for n in outcome.notes],
        "seconds": seconds,
    }


# --- the corpus of tests/malicious ------------------------------------------------------------------------


def corpus_samples(mutants: int) -> list[tuple[str, str, bytes]]:
    """(class, case id, bytes) of every malicious case and weight-file bomb, and ``mutants`` byte-level
    mutants of each (seeded by the case id)."""
    sys.path[:0] = [str(ROOT / "tests" / "support"), str(ROOT / "tests" / "malicious")]
    from bombs import BOMBS, STATE
    from evil_cases import CASES, marker_for

    out: list[tuple[str, str, bytes]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for case in CASES.values():
            out.append(("corpus-evil", case.id, case.build(marker_for(Path(tmp), case.id).resolve())))
        for bomb in BOMBS.values():
            if bomb.target != STATE or bomb.slow:
                continue
            path = Path(tmp) / f"{bomb.id}.pth"
            bomb.write(path)
            out.append(("corpus-bomb", bomb.id, path.read_bytes()))
    mutated = []
    for klass, case_id, data in out:
        if len(data) > 4 << 20:
            continue
        for n in range(mutants):
            rng = random.Random(f"{case_id}/{n}")
            _, raw = diffgen.m_bytes(rng, diffgen.Base(case_id, data, []))
            mutated.append((klass + "-mutant", f"{case_id}/{n}", raw))
    return out + mutated


def run_corpus_one(item: tuple[str, str, bytes]) -> dict[str, Any]:
    klass, case_id, data = item
    assert _WORKDIR is not None
    started = time.perf_counter()
    outcome = diffcheck.check_bytes(data, _WORKDIR / f"corpus-{os.getpid()}.pth")
    return _record(klass, case_id, case_id, "", outcome, time.perf_counter() - started)


# --- summary -------------------------------------------------------------------------------------------------


class Summary:
    def __init__(self, keep: int) -> None:
        self.keep = keep
        self.per_class: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
        self.codes: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
        self.notes: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
        self.disagreements: dict[str, dict[str, list[dict]]] = collections.defaultdict(
            lambda: collections.defaultdict(list)
        )
        self.counts: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
        self.generator_errors: list[dict] = []
        self.total = 0
        self.seconds = 0.0

    def add(self, rec: dict[str, Any]) -> None:
        self.total += 1
        klass = rec["class"]
        if "generator_error" in rec:
            self.per_class[klass]["generator_error"] += 1
            if len(self.generator_errors) < 50:
                self.generator_errors.append(rec)
            return
        self.seconds += rec["seconds"]
        c = self.per_class[klass]
        c["samples"] += 1
        c["accepted" if rec["accepted"] else "refused"] += 1
        if rec["code"]:
            self.codes[klass][rec["code"]] += 1
        for note in rec["notes"]:
            self.notes[klass][note.split(":")[0][:60]] += 1
        readers = sorted({r for r, _ in rec["disagreements"]})
        if readers:
            c["disagreeing"] += 1
        for reader in readers:
            self.counts[klass][reader] += 1
            kept = self.disagreements[klass][reader]
            if len(kept) < self.keep:
                what = next(w for r, w in rec["disagreements"] if r == reader)
                replay = f"{klass}:{rec['seed']}"
                kept.append({"replay": replay, "base": rec["base"], "note": rec["note"], "what": what})

    def to_json(self) -> dict[str, Any]:
        accepted = sum(c["accepted"] for c in self.per_class.values())
        return {
            "samples": self.total,
            "accepted": accepted,
            "refused": sum(c["refused"] for c in self.per_class.values()),
            "disagreeing_samples": sum(c["disagreeing"] for c in self.per_class.values()),
            "per_class": {k: dict(v) for k, v in sorted(self.per_class.items())},
            "refusal_codes": {k: dict(v.most_common()) for k, v in sorted(self.codes.items())},
            "notes": {k: dict(v.most_common(10)) for k, v in sorted(self.notes.items())},
            "disagreements_per_class_and_reader": {k: dict(v) for k, v in sorted(self.counts.items())},
            "disagreements": {k: dict(v) for k, v in sorted(self.disagreements.items())},
            "generator_errors": self.generator_errors,
            "check_seconds_total": round(self.seconds, 1),
        }


def _git_head() -> str:
    """The commit of the tree that ran, ``+dirty`` when it had uncommitted changes."""
    try:
        head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True,
                              check=True).stdout.strip()  # fmt: skip
        dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+dirty" if dirty else "")


def _machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f} at start"


def replay(spec: str, save: Path | None) -> int:
    klass, _, seed = spec.partition(":")
    sample = diffgen.generate(klass, int(seed))
    _init_worker()
    assert _WORKDIR is not None
    outcome = diffcheck.check(sample, _WORKDIR)
    print(f"{spec}: base {sample.base}; {sample.note}")
    print(f"tool: {'accepts' if outcome.accepted else f'refuses ({outcome.code}: {outcome.message})'}")
    for d in outcome.disagreements:
        print(f"DISAGREES {d.reader}: {d.what}")
    for n in outcome.notes:
        print(f"note: {n}")
    if save is not None:
        save.mkdir(parents=True, exist_ok=True)
        path = save / f"{klass}-{seed}{sample.suffix}"
        path.write_bytes(sample.data)
        print(f"written to {path}")
    return 1 if outcome.disagreements else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--count", type=int, default=100_000, help="generated samples (default 100000)")
    ap.add_argument("--seed", type=int, default=7, help="campaign seed (default 7)")
    ap.add_argument("--start", type=int, default=0, help="first sample index (to continue a campaign)")
    ap.add_argument("--time-budget", type=float, default=0.0, help="stop after this many seconds (0: no limit)")
    ap.add_argument("--jobs", type=int, default=1, help="worker processes (default 1)")
    ap.add_argument("--classes", default="", help="comma-separated classes (default: all)")
    ap.add_argument("--corpus", action="store_true", help="also check tests/malicious's cases and bombs")
    ap.add_argument("--corpus-mutants", type=int, default=20, help="byte-level mutants of each corpus file")
    ap.add_argument("--keep", type=int, default=20, help="disagreements kept per class and reader")
    ap.add_argument("--json", type=Path, default=ROOT / "build" / "fuzz_differential.json", help="summary file")
    ap.add_argument("--replay", default="", help="CLASS:SEED: generate and check one sample, print the verdict")
    ap.add_argument("--save", type=Path, default=None, help="with --replay: write the sample's file here")
    args = ap.parse_args(argv)
    if args.replay:
        return replay(args.replay, args.save)
    classes = [c for c in args.classes.split(",") if c] or list(WEIGHTS)
    unknown = [c for c in classes if c not in diffgen.CLASSES and c not in diffgen.SAFETENSORS_CLASSES]
    if unknown:
        ap.error(f"unknown classes {unknown}")
    summary = Summary(args.keep)
    corpus_summary = Summary(args.keep)
    started = time.time()
    machine = _machine()
    deadline = started + args.time_budget if args.time_budget else float("inf")
    keys = (pick(args.seed, i, classes) for i in range(args.start, args.start + args.count))
    stopped_early = False
    with mp.Pool(args.jobs, initializer=_init_worker) as pool:
        if args.corpus:
            for rec in pool.imap_unordered(run_corpus_one, corpus_samples(args.corpus_mutants), chunksize=4):
                corpus_summary.add(rec)
        last_report = time.time()
        for rec in pool.imap_unordered(run_one, keys, chunksize=32):
            summary.add(rec)
            now = time.time()
            if now - last_report > 60:
                last_report = now
                disagreeing = sum(c["disagreeing"] for c in summary.per_class.values())
                print(f"{summary.total} samples, {now - started:.0f} s, {disagreeing} disagreeing", flush=True)
            if now > deadline:
                stopped_early = True
                pool.terminate()
                break
    elapsed = time.time() - started
    report = {
        "campaign": {"seed": args.seed, "start": args.start, "count_requested": args.count, "jobs": args.jobs,
                     "classes": classes, "seconds": round(elapsed, 1), "stopped_by_time_budget": stopped_early,
                     "machine": machine, "commit": _git_head(), "python": platform.python_version()},
        "generated": summary.to_json(),
        "corpus": corpus_summary.to_json() if args.corpus else None,
    }  # fmt: skip
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, indent=1, sort_keys=False) + "\n")
    gen = summary.to_json()
    print(f"{gen['samples']} samples in {elapsed:.0f} s: {gen['accepted']} accepted, {gen['refused']} refused, "
          f"{gen['disagreeing_samples']} with a disagreement; summary in {args.json}")  # fmt: skip
    if args.corpus:
        cor = corpus_summary.to_json()
        print(f"corpus: {cor['samples']} files, {cor['accepted']} accepted, {cor['disagreeing_samples']} disagreeing")
    for klass, readers in gen["disagreements_per_class_and_reader"].items():
        print(f"  {klass}: {readers}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
