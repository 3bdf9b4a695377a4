"""Run a child process and measure it (exit code, output, peak RSS, wall time); and the child side.

The parent side, :func:`run_measured`, reaps the child with ``os.wait4`` and keeps its
``ru_maxrss``. On Linux that figure also holds the parent's resident size at fork (the kernel
carries the old address space's high-water mark across ``execve``), so the child side reports
its own peak, ``VmHWM`` of ``/proc/self/status``, which :func:`probe` prefers. The child side is
this file run as a script::

    python rss_probe.py validate REGISTRY        # findings of validate_registry as JSON
    python rss_probe.py open FILE                # the safe reader's verdict as JSON
    python rss_probe.py json FILE                # load_json_file's verdict as JSON
    python rss_probe.py torch-load FILE MODE     # torch.load(weights_only=MODE == "safe")
    python rss_probe.py alloc BYTES              # allocate and touch BYTES (the control of the measure)

Used by the corpus, the resource-bound tests and the bench scripts.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
MB = 1024 * 1024


@dataclass
class Measured:
    """What one child process did."""

    rc: int
    stdout: str
    stderr: str
    max_rss: int  # bytes, peak resident set of the child
    wall_s: float
    timed_out: bool

    def json(self) -> object:
        """The child's stdout parsed as JSON."""
        return json.loads(self.stdout)


def run_measured(
    argv: list[str], *, timeout: float = 120.0, env: dict[str, str] | None = None, cwd: str | Path | None = None
) -> Measured:
    """Run ``argv`` to completion (killed after ``timeout`` s) and measure it."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=out, stderr=err, stdin=subprocess.DEVNULL, env=env, cwd=cwd)
        timed_out = False
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() - t0 > timeout:
                proc.kill()
                timed_out = True
                pid, status, usage = os.wait4(proc.pid, 0)
                break
            time.sleep(0.002)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        rss = usage.ru_maxrss * (1 if sys.platform == "darwin" else 1024)
        return Measured(
            proc.returncode, out.read().decode("utf-8", "replace"), err.read().decode("utf-8", "replace"),
            rss, wall, timed_out,
        )  # fmt: skip


def probe(*args: str, timeout: float = 120.0, env: dict[str, str] | None = None) -> Measured:
    """Run this file as the child with ``args``; ``max_rss`` is the child's own peak when known."""
    run = run_measured([sys.executable, str(Path(__file__).resolve()), *args], timeout=timeout, env=env)
    try:
        peak = json.loads(run.stdout).get("peak_rss")
    except (ValueError, AttributeError):
        peak = None
    if isinstance(peak, int):
        run.max_rss = peak
    return run


def peak_rss() -> int | None:
    """This process's peak resident set size in bytes (Linux ``VmHWM``), or None."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


# --- the child side ------------------------------------------------------------------------------


def _validate(path: str) -> dict:
    from rwkv_registry.engine.validate import validate_registry

    report = validate_registry(path, use_cache=False)
    return {"ok": report.ok, "findings": [[f.code, f.path, f.message] for f in report.findings]}


def _open(path: str) -> dict:
    from rwkv_registry.core.errors import CheckpointError
    from rwkv_registry.formats.ckpt import open_checkpoint

    try:
        with open_checkpoint(path) as ck:
            return {"code": None, "tensors": len(ck.tensors)}
    except CheckpointError as e:
        return {"code": e.code, "message": e.message}


def _json(path: str) -> dict:
    from rwkv_registry.formats.jsonload import JsonLoadError, load_json_file

    try:
        load_json_file(path)
        return {"error": None}
    except JsonLoadError as e:
        return {"error": e.reason}


def _torch_load(path: str, mode: str) -> dict:
    import warnings

    import torch

    warnings.simplefilter("ignore")
    try:
        value = torch.load(path, weights_only=mode == "safe", map_location="cpu")
        return {"loaded": True, "type": type(value).__name__}
    except Exception as e:  # the verdict is the exception
        # torch's weights-only refusals wrap the reason in generic advice: keep the reason
        text = str(e).split("WeightsUnpickler error:", 1)[-1]
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        reason = [line for line in lines if not line.startswith(_TORCH_ADVICE)] or lines or [""]
        return {"loaded": False, "error": f"{type(e).__name__}: {reason[0]}"}


_TORCH_ADVICE = ("Weights only load failed", "Please file an issue", "Check the documentation", "(1)", "(2)")


def _alloc(size: str) -> dict:
    data = b"x" * int(size)  # written, so resident
    return {"allocated": len(data)}


def main(argv: list[str]) -> int:
    """Child entry point; prints one JSON object."""
    command, rest = argv[0], argv[1:]
    handlers = {"validate": _validate, "open": _open, "json": _json, "torch-load": _torch_load, "alloc": _alloc}
    result = handlers[command](*rest)
    result["peak_rss"] = peak_rss()
    sys.stdout.write(json.dumps(result) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
