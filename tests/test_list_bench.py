"""bench/list_bench.py's measuring loop, once, on an empty registry: it unpacked scale_bench.run's four
values (wall, RSS, stdout, CPU) into three and stopped with a ValueError before its first row
(found by `make typecheck`, which now checks bench/)."""

from __future__ import annotations

import sys
from pathlib import Path

from rwkv_registry.cli.main import main

BENCH = Path(__file__).resolve().parents[1] / "bench"


def test_list_bench_measures_a_row(tmp_path: Path) -> None:
    sys.path.insert(0, str(BENCH))
    try:
        import list_bench
    finally:
        sys.path.remove(str(BENCH))
    root = tmp_path / "registry"
    assert main(["init", str(root)]) == 0
    (row,) = list_bench.measure(root, [80], 1)
    assert row["width"] == 80 and set(row) == {"width", "bytes", "rich", "laid out"}
    assert row["rich"][0] > 0 and row["laid out"][0] > 0  # median seconds of each way
