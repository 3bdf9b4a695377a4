"""Benchmark of `rwkv-registry validate` on the demo registry (issue: core registry, performance).

Measures, in one run, on the same files (all in the page cache after a first read):

- ``sha256sum -c SHA256SUMS`` in the registry root (GNU coreutils, one core);
- a cold ``rwkv-registry validate --no-cache`` (whole process);
- a warm ``rwkv-registry validate`` (cache filled, nothing changed; whole process);
- per-file work = cold - warm, and its ratio to sha256sum (target ≤ 1.5);
- whether the warm run stays ≤ 0.5 s.

Usage: python bench/validate_bench.py [--registry PATH] [--repeat 5] [--json OUT]
(builds the demo registry in a temporary directory when --registry is not given).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from crash import machine  # one machine description for every benchmark's figures

CLI = [sys.executable, "-m", "rwkv_registry.cli.main"]


def timed(cmd: list[str], cwd: Path | None = None, env: dict[str, str] | None = None) -> float:
    t0 = time.perf_counter()
    out = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    dt = time.perf_counter() - t0
    if out.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(cmd)} failed ({out.returncode}):\n{out.stdout}\n{out.stderr}")
    return dt


def best(cmd: list[str], repeat: int, **kw: object) -> tuple[float, float]:
    times = [timed(cmd, **kw) for _ in range(repeat)]  # type: ignore[arg-type]
    return min(times), statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--registry", type=Path)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="rwkv-registry-bench-"))
    env = {**os.environ, "RWKV_REGISTRY_CACHE_DIR": str(tmp / "cache")}
    try:
        root = args.registry
        if root is None:
            root = tmp / "demo"
            subprocess.run([*CLI, "demo", str(root)], check=True, capture_output=True, env=env)
        root = root.resolve()
        weights = sum(p.stat().st_size for p in root.rglob("*.pth"))
        files = sum(1 for p in root.rglob("*") if p.is_file())
        if shutil.which("sha256sum") is None:
            raise SystemExit("sha256sum (GNU coreutils) is needed for the comparison")
        timed(["sha256sum", "-c", "--quiet", "SHA256SUMS"], cwd=root)  # page cache warm-up
        sums_best, sums_med = best(["sha256sum", "-c", "--quiet", "SHA256SUMS"], args.repeat, cwd=root)
        cold_best, cold_med = best([*CLI, "validate", str(root), "--no-cache"], args.repeat, env=env)
        timed([*CLI, "validate", str(root)], env=env)  # fill the cache
        warm_best, warm_med = best([*CLI, "validate", str(root)], args.repeat, env=env)
        per_file = cold_best - warm_best
        result = {
            "date": time.strftime("%Y-%m-%d"),
            "machine": machine(),
            "registry": str(root),
            "files": files,
            "weight_bytes": weights,
            "sha256sum_c_s": round(sums_best, 4),
            "validate_cold_no_cache_s": round(cold_best, 4),
            "validate_warm_s": round(warm_best, 4),
            "per_file_work_s": round(per_file, 4),
            "ratio_per_file_to_sha256sum": round(per_file / sums_best, 3),
            "medians": {"sha256sum": round(sums_med, 4), "cold": round(cold_med, 4), "warm": round(warm_med, 4)},
            "targets": {"ratio_max": 1.5, "warm_max_s": 0.5},
        }
        result["ok"] = result["ratio_per_file_to_sha256sum"] <= 1.5 and warm_best <= 0.5
        print(f"machine: {result['machine']}")
        print(f"registry: {files} files, {weights / 1e6:.1f} MB of weights")
        print("| measurement | best of %d | median |" % args.repeat)
        print("|---|---|---|")
        print(f"| sha256sum -c SHA256SUMS | {sums_best:.3f} s | {sums_med:.3f} s |")
        print(f"| validate --no-cache (cold, whole process) | {cold_best:.3f} s | {cold_med:.3f} s |")
        print(f"| validate (warm, whole process) | {warm_best:.3f} s | {warm_med:.3f} s |")
        print(f"| per-file work (cold - warm) | {per_file:.3f} s | |")
        print(f"| ratio per-file / sha256sum (target ≤ 1.5) | {result['ratio_per_file_to_sha256sum']:.2f} | |")
        print(f"targets met: {result['ok']}")
        if args.json:
            args.json.write_text(json.dumps(result, indent=2) + "\n")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
