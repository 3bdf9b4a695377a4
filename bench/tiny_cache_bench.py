"""Cost of reusing the demo's cached tiny weights (``build_tiny_weights`` on a folder that holds them).

A reuse checks each file's size and sha256 against the manifest (a truncated or changed file is trained
again, not trusted). This measures that check alone and a whole reuse, as medians of ``--runs`` runs, in
wall and CPU (user+sys) time::

    .venv/bin/python bench/tiny_cache_bench.py build/test-cache/smoke-tiny --runs 9

The folder must already hold the trained files (run the smoke tests or the demo once); nothing is written.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path


def _timed(fn: object, runs: int) -> tuple[float, float]:
    wall, cpu = [], []
    for _ in range(runs):
        t0, c0 = time.perf_counter(), os.times()
        fn()  # type: ignore[operator]
        c1 = os.times()
        wall.append(time.perf_counter() - t0)
        cpu.append((c1.user - c0.user) + (c1.system - c0.system))
    return statistics.median(wall), statistics.median(cpu)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", type=Path)
    ap.add_argument("--runs", type=int, default=9)
    args = ap.parse_args()
    from rwkv_registry.model.smoke import train_tiny

    manifest = json.loads((args.folder / train_tiny.MANIFEST).read_text())
    if manifest.get("key") != train_tiny.cache_key(train_tiny.TrainConfig()):
        raise SystemExit(f"{args.folder} holds tiny weights of other inputs: run the smoke tests or the demo first")
    files = [args.folder / n for n in (train_tiny.BASE_NAME, train_tiny.STATE_NAME, train_tiny.MISS_NAME)]
    size = sum(p.stat().st_size for p in files)
    check = _timed(lambda: [train_tiny._file_record(p) for p in files], args.runs)
    state: dict[str, bool] = {}

    def reuse() -> None:
        state["reused"] = train_tiny.build_tiny_weights(args.folder).reused

    whole = _timed(reuse, args.runs)
    if not state["reused"]:
        raise SystemExit(f"{args.folder}: the tiny weights were trained again, not reused")
    out = {
        "bytes_checked": size,
        "check_wall_s": round(check[0], 4),
        "check_cpu_s": round(check[1], 4),
        "reuse_wall_s": round(whole[0], 4),
        "reuse_cpu_s": round(whole[1], 4),
        "runs": args.runs,
    }
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
