"""Fixtures of the registry tests (helpers live in regtools.py: `from regtools import ...`)."""

from __future__ import annotations

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
