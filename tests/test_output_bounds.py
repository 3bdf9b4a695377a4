"""Names of megabytes do not make messages of megabytes: a 20 MB path in SHA256SUMS, a 20 MB tensor name in a
State (torch pickle or safetensors) is quoted at most ~200 characters (textsafe.clip, at the quoting sites; every
finding's and error's message is cut at 4,000 characters at the latest). ``validate``'s whole output, text or JSON,
stays a few KB. (Peak memory on the same inputs: tests/test_bounds.py, bench/hostile_names_bench.py.)"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from ckpt_hostile import T, safetensors_bytes, tensor_pickle, with_pickle

STATE = "rwkv7-tiny-20260101-ctx4096/state/v1/s1.pth"
BIG = 20 * 1024 * 1024
LONG = "blocks.1.att.time_state" + "n" * BIG  # looks like a State's tensor: the State rules quote it


def _sums_path(reg: Path) -> None:
    with open(reg / "SHA256SUMS", "ab") as f:
        f.write(b"0" * 64 + b"  " + b"a" * BIG + b"\n")


def _pickle_name(reg: Path) -> None:
    ts = [T(name=f"blocks.{i}.att.time_state" if i == 0 else LONG, key=str(i), numel=2 * 64 * 64, shape=(2, 64, 64),
            stride=(4096, 64, 1)) for i in range(2)]  # fmt: skip
    (reg / STATE).write_bytes(with_pickle(tensor_pickle(ts), {"0": bytes(4 * 8192), "1": bytes(4 * 8192)}))


def _safetensors_name(reg: Path) -> None:
    long = "blocks.1.att.time_state" + "n" * (7 * 1024 * 1024)  # within the 8 MiB header bound: read, then quoted
    header = {"blocks.0.att.time_state": {"dtype": "F32", "shape": [2, 64, 64], "data_offsets": [0, 32768]},
              long: {"dtype": "F32", "shape": [2, 64, 64], "data_offsets": [32768, 65536]}}  # fmt: skip
    (reg / STATE).write_bytes(safetensors_bytes(header, bytes(65536)))


CASES: dict[str, tuple[Callable[[Path], None], str]] = {
    "sums-path-20mb": (_sums_path, "HSH005"),
    "pickle-name-20mb": (_pickle_name, "STA001"),
    "safetensors-name-7mb": (_safetensors_name, "STA001"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_giant_name_makes_no_giant_output(reg: Path, case: str) -> None:
    make, code = CASES[case]
    make(reg)
    for fmt in ("text", "json"):
        run = subprocess.run([sys.executable, "-m", "rwkv_registry.cli.main", "validate", str(reg), "--format", fmt],
                             capture_output=True, text=True)  # fmt: skip
        assert run.returncode == 1 and "Traceback" not in run.stderr, run.stderr[-500:]
        assert len(run.stdout) < 8000, f"{fmt}: {len(run.stdout):,} characters"
        assert "characters]…" in run.stdout  # the name is shown cut: head, length, tail
    findings = json.loads(run.stdout)["findings"]
    quoting = [f for f in findings if f["code"] == code]
    assert quoting and all(len(f["message"]) < 1000 for f in quoting)
