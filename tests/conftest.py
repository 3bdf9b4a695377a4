"""Fixtures of the registry tests (helpers live in regtools.py: `from regtools import ...`)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from regtools import build_registry


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test gets its own validation cache directory, outside any registry."""
    monkeypatch.setenv("RWKV_REGISTRY_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))


@pytest.fixture
def registry(tmp_path: Path) -> Path:
    """A small valid registry: one tiny base, one State, two MiSS adapters."""
    return build_registry(tmp_path / "reg", tmp_path)


def _template(tmp_path_factory: pytest.TempPathFactory, *, with_miss: bool) -> Path:
    tmp = tmp_path_factory.mktemp("template")
    with pytest.MonkeyPatch.context() as mp:  # session fixtures run before the per-test cache dir is set
        mp.setenv("RWKV_REGISTRY_CACHE_DIR", str(tmp / "cache"))
        return build_registry(tmp / "reg", tmp, with_miss=with_miss)


@pytest.fixture(scope="session")
def registry_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The small valid registry, built once per session; tests mutate copies (``reg``)."""
    return _template(tmp_path_factory, with_miss=True)


@pytest.fixture(scope="session")
def state_only_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The small registry with its State only, built once per session; never modified."""
    return _template(tmp_path_factory, with_miss=False)


@pytest.fixture
def reg(registry_template: Path, tmp_path: Path) -> Path:
    """A fresh copy of the session's template registry, safe to damage."""
    root = tmp_path / "reg"
    shutil.copytree(registry_template, root, symlinks=True)
    return root
