"""Peak memory, output size and time of ``rwkv-registry validate`` on inputs that bloat names and headers.

Each case replaces one file of a small registry (one tiny base, one State; built once in a child process, so this
process stays small) and runs ``validate`` (text and ``--format json``) in a child that reports its own peak
resident set (``VmHWM``, as tests/malicious/rss_probe.py does), and the safe reader alone opens the State
(``rss_probe.py open``: ``open_checkpoint`` reads with ``pread``; ``validate`` maps the file to hash it, and the
mapped pages it reads count in its resident set):

- ``sums-20mb-path``: SHA256SUMS gains a line whose path is 20 MB long;
- ``st-20mb-name``: the State is a safetensors file whose one tensor name is 20 MB long;
- ``st-99mb-spaces``: the State is a safetensors file whose header is ``{}`` and 99 MB of spaces;
- ``st-200k-empty``: the State is a safetensors file of 200,000 empty tensors;
- ``clean``: nothing replaced (the baseline).

Run from the repository root: ``.venv/bin/python bench/hostile_names_bench.py`` (about a minute; ``--cases`` picks
some). Figures in docs/security.md ("Output and memory bombs").
"""

from __future__ import annotations

import argparse
import json
import shutil
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
TESTS = HERE.parent / "tests"
MB = 1024 * 1024
STATE = "rwkv7-tiny-20260101-ctx4096/state/v1/s1.pth"

_BUILD = """
import sys
sys.path.insert(0, sys.argv[2])
from pathlib import Path
from regtools import build_registry
build_registry(Path(sys.argv[1]) / "reg", Path(sys.argv[1]), with_miss=False)
"""

_RUN = """
import sys
from rwkv_registry.cli.main import main
try:
    code = main(sys.argv[1:])
finally:
    with open("/proc/self/status", encoding="ascii") as f:
        hwm = next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmHWM:"))
    sys.stderr.write(f"\\nVMHWM {hwm}\\n")
raise SystemExit(code)
"""


def _safetensors(header: bytes, data: bytes = b"") -> bytes:
    return struct.pack("<Q", len(header)) + header + data


def _sums_20mb(reg: Path) -> None:
    with open(reg / "SHA256SUMS", "ab") as f:
        f.write(b"0" * 64 + b"  " + b"a" * (20 * MB) + b"\n")


def _st_name(reg: Path) -> None:
    name = "n" * (20 * MB)
    header = json.dumps({name: {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}).encode()
    (reg / STATE).write_bytes(_safetensors(header, bytes(4)))


def _st_spaces(reg: Path) -> None:
    (reg / STATE).write_bytes(_safetensors(b"{}" + b" " * (99 * 1000 * 1000)))


def _st_empty(reg: Path) -> None:
    header = json.dumps({f"t{i}": {"dtype": "F32", "shape": [0], "data_offsets": [0, 0]} for i in range(200_000)})
    (reg / STATE).write_bytes(_safetensors(header.encode()))


CASES: dict[str, Callable[[Path], None]] = {
    "clean": lambda reg: None,
    "sums-20mb-path": _sums_20mb,
    "st-20mb-name": _st_name,
    "st-99mb-spaces": _st_spaces,
    "st-200k-empty": _st_empty,
}


def _open_peak(path: Path) -> float:
    """Peak resident MB of ``rss_probe.py open PATH`` (the safe reader alone)."""
    run = subprocess.run(
        [sys.executable, str(TESTS / "malicious" / "rss_probe.py"), "open", str(path)], capture_output=True, timeout=300
    )
    return round(json.loads(run.stdout)["peak_rss"] / MB, 1)


def _measure(reg: Path, fmt: str) -> dict[str, float | int | str]:
    t0 = time.perf_counter()
    run = subprocess.run(
        [sys.executable, "-c", _RUN, "validate", str(reg), "--no-cache", "--format", fmt],
        capture_output=True,
        timeout=300,
    )
    wall = time.perf_counter() - t0
    err = run.stderr.decode("utf-8", "replace")
    hwm = int(err.rsplit("VMHWM ", 1)[1].split()[0]) if "VMHWM " in err else -1
    return {"rc": run.returncode, "peak_mb": round(hwm / MB, 1), "out_bytes": len(run.stdout), "wall_s": round(wall, 2)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", nargs="*", default=list(CASES), choices=list(CASES))
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="hostile-names-") as tmp:
        template = Path(tmp) / "template"
        template.mkdir()
        subprocess.run([sys.executable, "-c", _BUILD, str(template), str(TESTS / "support")], check=True)
        print(f"{'case':16} {'format':6} {'rc':>3} {'peak MB':>8} {'output bytes':>13} {'wall s':>7} {'open MB':>8}")
        for name in args.cases:
            reg = Path(tmp) / name
            shutil.copytree(template / "reg", reg)
            CASES[name](reg)
            opened = _open_peak(reg / STATE)
            for fmt in ("text", "json"):
                m = _measure(reg, fmt)
                print(
                    f"{name:16} {fmt:6} {m['rc']:>3} {m['peak_mb']:>8} {m['out_bytes']:>13,} {m['wall_s']:>7} "
                    f"{opened:>8}"
                )
            shutil.rmtree(reg)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
