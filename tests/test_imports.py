"""The core never imports torch or textual: `validate` and the pre-commit hook start fast."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from regtools import build_registry

PROBE = """
import sys, json
from rwkv_registry.cli import main
code = main(["validate", sys.argv[1], "--format", "json"])
heavy = sorted(m for m in ("torch", "textual", "triton", "numpy") if m in sys.modules)
print("MODULES=" + json.dumps(heavy))
raise SystemExit(code)
"""


def test_validate_imports_neither_torch_nor_textual(tmp_path: Path) -> None:
    root = build_registry(tmp_path / "reg", tmp_path)
    subprocess.run([sys.executable, "-c", PROBE, str(root)], capture_output=True, text=True)  # warm the cache
    out = subprocess.run([sys.executable, "-c", PROBE, str(root)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    modules = json.loads(out.stdout.rsplit("MODULES=", 1)[1])
    assert "torch" not in modules and "textual" not in modules and "triton" not in modules
    assert "numpy" not in modules  # a warm run reads no weight bytes


def test_importing_every_core_module_keeps_torch_out() -> None:
    code = (
        "import importlib, pkgutil, sys, rwkv_registry\n"
        "for m in pkgutil.iter_modules(rwkv_registry.__path__):\n"
        "    if not m.ispkg:\n"
        "        importlib.import_module('rwkv_registry.' + m.name)\n"
        "bad = [m for m in ('torch', 'textual') if m in sys.modules]\n"
        "print(bad); raise SystemExit(1 if bad else 0)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
