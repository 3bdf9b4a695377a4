"""Fixtures of the registry tests (helpers live in regtools.py: `from regtools import ...`)."""

from __future__ import annotations

import importlib.util
import logging
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest


def _bootstrap_from_checkout() -> None:
    """On a machine where the package is not installed (the GPU machine: no network to pip install),
    import ``rwkv_registry`` from this checkout's folders (``bench/checkout.py``)."""
    if importlib.util.find_spec("rwkv_registry") is not None:
        return
    spec = importlib.util.spec_from_file_location("_checkout", Path(__file__).parents[1] / "bench" / "checkout.py")
    assert spec is not None and spec.loader is not None
    checkout = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(checkout)
    checkout.bootstrap_package()


_bootstrap_from_checkout()


def _no_hypothesis_deadlines() -> None:
    """No property test fails for its time: hypothesis' default deadline (200 ms an example) failed a JSON-prefix
    test under load (a first run of 276 ms, 156 ms on the rerun). Speed is measured by bench/, never by a test."""
    try:
        from hypothesis import settings
    except ImportError:  # the GPU machine may lack the dev dependencies; its tests need none of this
        return
    settings.register_profile("rwkv-registry", deadline=None)
    settings.load_profile("rwkv-registry")


_no_hypothesis_deadlines()

from regtools import build_registry  # noqa: E402


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test gets its own validation cache directory, outside any registry."""
    monkeypatch.setenv("RWKV_REGISTRY_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))


@pytest.fixture(autouse=True)
def _hub_log_stream() -> Iterator[None]:
    """huggingface_hub gives its logger a handler on the ``sys.stderr`` of the moment it is first imported: in a
    test, ``capsys``'s stream, closed at the end of that test. A later test's retry warnings then print "--- Logging
    error ---" and a traceback into its own captured output. After each test the handler writes to the stderr of
    the session again (a command line has one stderr only; this is the tests' doing, not the tool's)."""
    yield
    for handler in logging.getLogger("huggingface_hub").handlers:
        if type(handler) is logging.StreamHandler:
            handler.stream = sys.stderr  # not setStream: it flushes the old stream, closed by now


@pytest.fixture
def sigint_as_at_a_terminal() -> Iterator[None]:
    """Python's own SIGINT handler (Ctrl-C raises KeyboardInterrupt) for the test's duration: a test run started in
    the background (`make test &` in a script, some CI runners) inherits SIGINT ignored, and then neither a real
    SIGINT nor ``_thread.interrupt_main()`` reaches the code under test."""
    import signal

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


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


# --- the Hub look-alike, for the Hub tests -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def hub() -> Iterator[Any]:
    """The Hub look-alike (tests/support/hub_server.py), one per test module."""
    from hub_server import FakeHub

    with FakeHub() as server:
        yield server


@pytest.fixture
def hub_env(hub: Any, monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Point huggingface_hub at the test server; never a real token, never the user's cache. A Hub test module
    asks for it in every test: ``pytestmark = pytest.mark.usefixtures("hub_env")``."""
    import huggingface_hub.constants as hf_constants
    from huggingface_hub.utils import disable_progress_bars, enable_progress_bars

    home = tmp_path_factory.mktemp("hf_home")
    monkeypatch.setenv("HF_ENDPOINT", hub.endpoint)
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
    monkeypatch.setenv("HF_HOME", str(home))
    monkeypatch.setenv("HF_TOKEN", "hf_test_token_for_the_local_server")
    # huggingface_hub read these at import time: set the module values too
    monkeypatch.setattr(hf_constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(hf_constants, "HF_HUB_CACHE", str(home / "hub"))
    monkeypatch.setattr(hf_constants, "HF_HUB_DISABLE_XET", True)  # the server speaks LFS, not Xet
    disable_progress_bars()
    yield
    enable_progress_bars()


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The small valid registry (build_registry), one per test module: copy it before changing it."""
    tmp = tmp_path_factory.mktemp("tiny")
    return build_registry(tmp / "reg", tmp)
