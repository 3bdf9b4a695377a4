"""CPU time of `validate` on a wrong path (a directory that is plainly no registry, LAY016) holding a big tree.

Builds DIRS directories of FILES small files each under a temporary root (once, reused with --root), then runs
validate_registry(root, use_cache=False) RUNS times and prints the CPU time of each run (resource.getrusage, user +
system, of this process) and the os.scandir calls it made. To compare two versions of the package, run this script
with each on the path in turn, alternating (PYTHONPATH pointing at a tree whose rwkv_registry is the other one).
"""

from __future__ import annotations

import argparse
import os
import resource
import tempfile
from pathlib import Path


def build(root: Path, dirs: int, files: int) -> None:
    for d in range(dirs):
        sub = root / f"photos/{d // 100:03d}/{d:05d}"
        sub.mkdir(parents=True, exist_ok=True)
        for f in range(files):
            (sub / f"img{f}.jpg").write_bytes(b"x")
    (root / "notes.txt").write_text("not a registry\n")


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--root", type=Path, help="an existing tree built by an earlier run (default: a new one)")
    ap.add_argument("--dirs", type=int, default=2000)
    ap.add_argument("--files", type=int, default=10)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    root = args.root or Path(tempfile.mkdtemp(prefix="lay016-"))
    if not (root / "notes.txt").exists():
        build(root, args.dirs, args.files)
    import rwkv_registry
    from rwkv_registry.engine import validate as validate_mod

    calls = [0]
    real = os.scandir

    def counting(path: object) -> object:
        calls[0] += 1
        return real(path)  # type: ignore[call-overload]

    validate_mod.os.scandir = counting  # type: ignore[assignment]
    print(f"package {rwkv_registry.__file__}; root {root}")
    for _ in range(args.runs):
        calls[0] = 0
        t = cpu()
        report = validate_mod.validate_registry(root, use_cache=False)
        spent = cpu() - t
        codes = sorted({f.code for f in report.findings})
        print(f"cpu {spent * 1000:8.1f} ms  scandir calls {calls[0]:6d}  findings {codes}")


if __name__ == "__main__":
    main()
