"""bench/wheels.py --check: the folder of wheels the GPU machine's one call carries (.whl/), checked before the call
on wheels made here (no network): each of its list at its version, rpds-py for both Pythons, readable, one version
of each, within the device tool's 64 MiB; every problem named with its fix, exit 1."""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"


def _wheels() -> ModuleType:
    sys.path.insert(0, str(BENCH))
    try:
        import wheels
    finally:
        sys.path.remove(str(BENCH))
    return wheels


def _file_name(w: Any, python: str | None) -> str:
    name, version = w.name.replace("-", "_"), w.version
    if python is None:
        return f"{name}-{version}-py3-none-any.whl"
    tag = "cp" + python.replace(".", "")
    return f"{name}-{version}-{tag}-{tag}-manylinux_2_17_x86_64.manylinux2014_x86_64.whl"


def _make(folder: Path, wheels: ModuleType) -> None:
    folder.mkdir()
    for w in wheels.WHEELS:
        for python in wheels.PYTHONS if w.compiled else (None,):
            with zipfile.ZipFile(folder / _file_name(w, python), "w") as zf:
                zf.writestr(f"{w.name}/__init__.py", "")


def test_a_complete_folder_passes_and_main_says_it_is_ready(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    wheels = _wheels()
    folder = tmp_path / ".whl"
    _make(folder, wheels)
    assert wheels.problems(folder, 0) == []
    assert wheels.main(["--check", "--dest", str(folder)]) == 0
    assert "10 wheels" in capsys.readouterr().out
    names = {w.name for w in wheels.WHEELS}
    assert {"rwkv", "fla-core", "flash-linear-attention", "jsonschema"} <= names  # what h200.sh's steps import
    rwkv = next(w for w in wheels.WHEELS if w.name == "rwkv")
    assert rwkv.version == "0.8.32"  # the version, the one gpu_engine's table names


def test_each_problem_is_named_with_its_fix(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    wheels = _wheels()
    folder = tmp_path / ".whl"
    assert wheels.problems(folder, 0) == [
        f"{folder}: no such folder; fix: python bench/wheels.py (fetches the wheels into it)"
    ]
    _make(folder, wheels)
    (folder / "fla_core-0.6.0-py3-none-any.whl").unlink()
    (folder / "einops-0.8.2-py3-none-any.whl").rename(folder / "einops-0.7.0-py3-none-any.whl")
    (folder / "rpds_py-2026.9.1-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl").unlink()
    (folder / "attrs-25.0.0-py3-none-any.whl").write_bytes(b"PK")  # a second version beside 26.1.0
    (folder / "referencing-0.37.0-py3-none-any.whl").write_bytes(b"not a zip")
    found = wheels.problems(folder, 0)
    assert found == [
        f"{folder}: no fla-core 0.6.0 wheel, gpu_engine's fla chunk_rwkv7; fix: python bench/wheels.py",
        f"{folder}: no einops 0.8.2 wheel (there: 0.7.0), fla's; fix: python bench/wheels.py",
        f"{folder / 'referencing-0.37.0-py3-none-any.whl'}: not a readable wheel (BadZipFile: File is not a zip file); "
        "fix: delete it and run python bench/wheels.py",
        f"{folder}: attrs is there in 2 versions (25.0.0, 26.1.0), unpacked over each other; fix: keep 26.1.0 only",
        f"{folder}: no rpds-py 2026.9.1 wheel for Python 3.11; fix: python bench/wheels.py",
    ]
    assert wheels.main(["--check", "--dest", str(folder)]) == 1
    err = capsys.readouterr().err
    assert err.count("error: ") == len(found) and "Traceback" not in err


def test_a_carry_over_the_device_limit_is_refused(tmp_path: Path) -> None:
    wheels = _wheels()
    folder = tmp_path / ".whl"
    _make(folder, wheels)
    size = sum(p.stat().st_size for p in folder.glob("*.whl"))
    assert wheels.problems(folder, wheels.CARRY_LIMIT - size) == []
    (over,) = wheels.problems(folder, wheels.CARRY_LIMIT - size + 1)
    assert "over the device tool's 64 MiB" in over
    assert 0 < wheels.tree_size() < wheels.CARRY_LIMIT  # this checkout's tracked files
