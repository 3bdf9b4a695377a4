"""bench/smoke_bench.py --dry-run: the GPU benchmark's whole path on a tiny CPU model."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
@pytest.mark.parametrize("extra", [[], ["--worst-case"]], ids=["early-stop", "worst-case"])
def test_bench_dry_run(tmp_path, extra):
    out = tmp_path / "bench.json"
    proc = subprocess.run(
        [sys.executable, str(REPO / "bench" / "smoke_bench.py"), "--dry-run", "--out", str(out), *extra],
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
    assert result["eval_s"] > 0 and result["warmup_s"] > 0 and "within_target" in result
    budget = result["settings"]["max_call_tokens"] * result["settings"]["runs"] * result["cases"]
    for side in ("entry", "base"):  # worst case: every call runs to its budget; else a random model stops early
        generated = result["sides"][side]["generated_tokens"]
        assert generated == budget if extra else 0 < generated < budget, (side, generated, budget)
    assert "entry + base x2 runs" in proc.stdout


def _checkout() -> object:
    import importlib.util

    spec = importlib.util.spec_from_file_location("checkout", REPO / "bench" / "checkout.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_only_wheels_for_this_python_are_unpacked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """.whl carries rpds_py for Python 3.11 and 3.12: --wheels must put only the matching one on the path."""
    import zipfile

    checkout = _checkout()
    me = f"cp{sys.version_info.major}{sys.version_info.minor}"
    other = "cp39" if me != "cp39" else "cp310"
    names = {
        "purepkg-1.0-py3-none-any.whl": "purepkg/__init__.py",
        f"natpkg-1.0-{me}-{me}-manylinux_2_17_x86_64.manylinux2014_x86_64.whl": "natpkg_mine/__init__.py",
        f"natpkg-1.0-{other}-{other}-manylinux_2_17_x86_64.manylinux2014_x86_64.whl": "natpkg_other/__init__.py",
        "garbage.whl": "garbage/__init__.py",
    }
    for name, member in names.items():
        with zipfile.ZipFile(tmp_path / name, "w") as zf:
            zf.writestr(member, "")
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setenv("PYTHONPATH", "")
    target, skipped = checkout.unpack_wheels(tmp_path)
    unpacked = {p.name for p in target.iterdir()}
    assert "purepkg" in unpacked and "garbage" not in unpacked and "natpkg_other" not in unpacked
    if sys.platform == "linux" and __import__("platform").machine() == "x86_64":
        assert "natpkg_mine" in unpacked
    assert any(name.startswith(f"natpkg-1.0-{other}") for name in skipped) and "garbage.whl" in skipped
    assert sys.path[0] == str(target) and str(target) in __import__("os").environ["PYTHONPATH"]
