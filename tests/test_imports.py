"""The core never imports torch or textual: `validate` and the pre-commit hook start fast."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from regtools import build_registry

PROBE = """
import sys, json
from rwkv_registry.cli.main import main
code = main(["validate", sys.argv[1], "--format", "json"])
heavy = sorted(m for m in ("torch", "textual", "triton", "numpy", "git") if m in sys.modules)
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
    if not any((d / ".git").exists() for d in root.resolve().parents):  # no repository around it: GIT004
        assert "git" not in modules  # found without importing GitPython (about a seventh of a warm run)


def test_validate_reading_a_new_small_state_file_imports_no_numpy(tmp_path: Path) -> None:
    """The pre-commit hook right after an `add` of a State file reads that one file: its NaN/Inf count
    (facts.count_nonfinite) needs no numpy, whose import cost more than the rest of the file's facts."""
    import os

    root = build_registry(tmp_path / "reg", tmp_path, with_miss=False)
    subprocess.run([sys.executable, "-c", PROBE, str(root)], capture_output=True, text=True)  # warm the cache
    state = next(root.rglob("*.pth"))
    st = state.stat()
    os.utime(state, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000))  # a new stat key: its facts are read again
    out = subprocess.run([sys.executable, "-c", PROBE, str(root)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout.rsplit("MODULES=", 1)[0])
    assert report["stats"]["bytes_hashed"] == st.st_size  # the State file was read, not taken from the cache
    assert "numpy" not in json.loads(out.stdout.rsplit("MODULES=", 1)[1])


def test_importing_every_core_module_keeps_torch_out() -> None:
    code = (
        "import importlib, pkgutil, sys, rwkv_registry\n"
        "seen = 0\n"
        "for m in pkgutil.walk_packages(rwkv_registry.__path__, 'rwkv_registry.'):\n"
        "    if m.name != 'rwkv_registry.__main__':\n"
        "        importlib.import_module(m.name); seen += 1\n"
        "assert seen > 40, seen\n"
        "bad = [m for m in ('torch', 'textual') if m in sys.modules]\n"
        "print(bad); raise SystemExit(1 if bad else 0)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


# Runs the CLI as if torch and textual were not installed (the core install: `pip install rwkv-registry`).
WITHOUT_EXTRAS = """
import sys

class NotInstalled:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in ("torch", "textual", "rwkv", "triton", "huggingface_hub"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, NotInstalled())
from rwkv_registry.cli.main import main
raise SystemExit(main(sys.argv[1:]))
"""


def test_core_dependencies_leave_out_torch_and_textual() -> None:
    import tomllib

    meta = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())["project"]
    core = " ".join(meta["dependencies"])
    assert "torch" not in core and "textual" not in core and "rwkv=" not in core
    assert any(d.startswith("torch") for d in meta["optional-dependencies"]["model"])
    assert any(d.startswith("textual") for d in meta["optional-dependencies"]["tui"])


def test_without_the_extras_the_core_works_and_the_rest_says_what_to_install(tmp_path: Path) -> None:
    root = build_registry(tmp_path / "reg", tmp_path)

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-c", WITHOUT_EXTRAS, *args], capture_output=True, text=True)

    ok = run("validate", str(root))
    assert ok.returncode == 0, ok.stderr
    tui = run("tui", str(root))
    assert tui.returncode == 2 and "pip install 'rwkv-registry[tui]'" in tui.stderr
    smoke = run("smoke", str(root), "some-entry", "--base-file", "base.pth")
    assert smoke.returncode == 2 and "pip install 'rwkv-registry[smoke]'" in smoke.stderr
    for hub_command in (
        ("validate", "hf://owner/repo"),
        ("pull", "owner/repo", str(tmp_path / "pulled")),
        ("push", str(root), "--repo", "owner/repo"),
        ("add-base", str(root), "--from-hub", "owner/repo/base.pth"),
    ):
        hub = run(*hub_command)
        assert hub.returncode == 2 and "pip install 'rwkv-registry[hub]'" in hub.stderr, (hub_command, hub.stderr)
    assert not (tmp_path / "pulled").exists()
    assert "needs 'textual'" in tui.stderr and "needs 'torch'" in smoke.stderr
    assert "Traceback" not in tui.stderr + smoke.stderr
