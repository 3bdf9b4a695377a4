"""`rwkv-registry list` (the text table) laid out by hand against every table through rich.

Builds (or takes, ``--registry``) a registry of ``--entries`` N with ``scale_bench.build``, then runs
``python -m rwkv_registry.cli.main list PATH`` in a fresh process per run, output to a pipe, at each
``--width`` (``COLUMNS``), alternating the two ways so that other load on the machine weighs on both
alike: ``rich`` (``catalog_render.PLAIN_LIST = False``: every table measured and rendered by rich, as
before the change) and ``laid out`` (the default). Prints the median wall time and peak RSS of each,
and fails unless both print the same bytes.

Usage: python bench/list_bench.py [--entries 1000,4000] [--width 80,200] [--repeat 5]
       [--registry PATH] [--keep DIR]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from crash import machine
from scale_bench import build, run

CODE = (
    "import sys; import rwkv_registry.catalog.render as r; r.PLAIN_LIST = {plain}; "
    "from rwkv_registry.cli.main import main; sys.exit(main(['list', sys.argv[1]]))"
)


def measure(root: Path, widths: list[int], repeat: int) -> list[dict[str, object]]:
    import os

    rows: list[dict[str, object]] = []
    for width in widths:
        env = {**os.environ, "COLUMNS": str(width)}
        times: dict[str, list[float]] = {"rich": [], "laid out": []}
        rss: dict[str, list[float]] = {"rich": [], "laid out": []}
        outs: dict[str, str] = {}
        for _ in range(repeat):
            for label, plain in (("rich", False), ("laid out", True)):
                dt, mb, out, _cpu = run([sys.executable, "-c", CODE.format(plain=plain), str(root)], env=env)
                times[label].append(dt)
                rss[label].append(mb)
                if outs.setdefault(label, out) != out:
                    raise SystemExit(f"{label}: output changed between runs")
        if outs["rich"] != outs["laid out"]:
            raise SystemExit(f"width {width}: the laid-out table differs from rich's")
        row: dict[str, object] = {"width": width, "bytes": len(outs["rich"].encode())}
        for label in times:
            row[label] = (round(statistics.median(times[label]), 3), round(statistics.median(rss[label])))
        rows.append(row)
        print(row, flush=True)
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--entries", default="1000,4000")
    ap.add_argument("--width", default="80,200")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--registry", type=Path, help="time this registry instead of building one")
    ap.add_argument("--keep", type=Path, help="build the registries under this directory and keep them")
    args = ap.parse_args()
    widths = [int(w) for w in args.width.split(",")]
    print(machine())
    if args.registry:
        measure(args.registry, widths, args.repeat)
        return 0
    for n in (int(x) for x in args.entries.split(",")):
        with tempfile.TemporaryDirectory() as tmp:
            root = (args.keep or Path(tmp)) / f"list-{n}"
            build(root, n, 8, 200, 0)
            print(f"N = {n}")
            measure(root, widths, args.repeat)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
