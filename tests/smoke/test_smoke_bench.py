"""bench/smoke_bench.py --dry-run: the GPU benchmark's whole path on a tiny CPU model."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_bench_dry_run(tmp_path):
    out = tmp_path / "bench.json"
    proc = subprocess.run(
        [sys.executable, str(REPO / "bench" / "smoke_bench.py"), "--dry-run", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(out.read_text())
    assert result["dry_run"] is True and result["device"] == "cpu" and result["cases"] == 8
    for side in ("entry", "base"):
        s = result["sides"][side]
        assert s["deterministic"] and s["finite"]
        assert s["prefill_tokens"] > 0 and s["fed_tokens"] > 0 and s["forwards"] > 0
    assert result["eval_s"] > 0 and "within_target" in result
    assert "entry + base x2 runs" in proc.stdout
