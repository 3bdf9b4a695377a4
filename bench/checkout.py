"""Run from a bare checkout, as on the GPU machine: nothing pip-installed and no network.

``bootstrap_package()`` makes ``rwkv_registry`` importable from this checkout's folders when it is
not installed (``registry/`` is the package; ``model/``, ``kernels/``, ``schemas/``, ``tui/`` are
its sub-packages, as pyproject.toml maps them). ``unpack_wheels(folder)`` puts the wheels carried
to the machine on the path (``.whl/``: rwkv, fla, einops, and jsonschema with its dependencies),
skipping any built for another Python or platform. The benchmark scripts import this module;
``tests/conftest.py`` loads it by path, so ``python -m pytest tests/kernels tests/model -m gpu``
runs from a bare checkout too.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import tempfile
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def bootstrap_package(repo: Path = REPO) -> None:
    """Import ``rwkv_registry`` from ``repo`` unless it is installed (then nothing changes)."""
    if "rwkv_registry" in sys.modules or importlib.util.find_spec("rwkv_registry") is not None:
        return
    spec = importlib.util.spec_from_file_location(
        "rwkv_registry",
        repo / "registry" / "__init__.py",
        submodule_search_locations=[str(repo / "registry"), str(repo)],
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["rwkv_registry"] = module
    spec.loader.exec_module(module)


def wheel_fits(name: str) -> bool:
    """Whether a wheel file name's tags suit this interpreter (True when ``packaging`` is absent)."""
    try:
        from packaging.tags import sys_tags
        from packaging.utils import parse_wheel_filename
    except ImportError:
        return True
    try:
        _, _, _, tags = parse_wheel_filename(name)
    except ValueError:
        return False
    return not tags.isdisjoint(set(sys_tags()))


def unpack_wheels(folder: Path) -> tuple[Path, list[str]]:
    """Unzip the ``*.whl`` of ``folder`` that suit this interpreter into one directory, put it first
    on ``sys.path`` and ``PYTHONPATH`` (for subprocesses); ``(directory, names of skipped wheels)``."""
    target = Path(tempfile.mkdtemp(prefix="rwkv_registry_wheels_"))
    skipped = []
    for whl in sorted(folder.glob("*.whl")):
        if not wheel_fits(whl.name):
            skipped.append(whl.name)
            continue
        try:  # a truncated or unreadable wheel costs its own package, not the whole run
            with zipfile.ZipFile(whl) as zf:
                zf.extractall(target)
        except (OSError, zipfile.BadZipFile) as exc:
            skipped.append(f"{whl.name} ({type(exc).__name__}: {exc})")
    sys.path.insert(0, str(target))
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(target), os.environ.get("PYTHONPATH", "")]))
    return target, skipped
