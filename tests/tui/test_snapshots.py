"""SVG snapshots of the TUI (pytest-textual-snapshot) on the demo, an empty and a broken registry.

Regenerate after an intended change of the screen, then look at the SVGs before committing:

    .venv/bin/python -m pytest tests/tui/test_snapshots.py --snapshot-update

Every snapshot waits for validation to finish; nothing on screen depends on the time or on the
temporary directory (the registry is named by its index.json name).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Input
from tui_helpers import MISS_IDS, break_registry, build_small, settle

from rwkv_registry.tui.app import RegistryApp
from rwkv_registry.tui.screens.compare import CompareScreen


@pytest.fixture(autouse=True)
def _colour(monkeypatch: pytest.MonkeyPatch) -> None:
    """Snapshots are taken in colour unless a test asks otherwise, whatever the CI sets."""
    monkeypatch.delenv("NO_COLOR", raising=False)


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from rwkv_registry.store.demo import build_demo

    return build_demo(tmp_path_factory.mktemp("demo") / "registry", log=lambda _m: None)


@pytest.fixture
def broken(tmp_path: Path) -> Path:
    return break_registry(build_small(tmp_path / "reg", tmp_path))


def make_app(path: Path) -> RegistryApp:
    return RegistryApp(str(path), keymap={})


def prepare(entry: str | None = None, tab: str | None = None):
    """run_before: settle, turn the input cursor's blink off, pick an entry and a tab."""

    async def run_before(pilot) -> None:
        app = pilot.app
        await settle(pilot)
        app.main.query_one(Input).cursor_blink = False
        if entry is not None:
            assert app.main.tree.select_entry(entry)
            await settle(pilot)
        if tab is not None:
            await pilot.press(str(["info", "train", "miss", "scores", "checks"].index(tab) + 1))
            await settle(pilot)

    return run_before


def test_demo_overview_80x24(snap_compare, demo: Path) -> None:
    assert snap_compare(make_app(demo), terminal_size=(80, 24), run_before=prepare())


def test_demo_miss_entry_80x24(snap_compare, demo: Path) -> None:
    assert snap_compare(make_app(demo), terminal_size=(80, 24), run_before=prepare("v21-lr2e-5-e2", "miss"))


def test_demo_state_scores_120x36(snap_compare, demo: Path) -> None:
    assert snap_compare(make_app(demo), terminal_size=(120, 36), run_before=prepare("v141b-s1224", "scores"))


def test_demo_train_100x30(snap_compare, demo: Path) -> None:
    assert snap_compare(make_app(demo), terminal_size=(100, 30), run_before=prepare("v21-lr3e-5-e2", "train"))


def test_empty_registry_80x24(snap_compare, tmp_path: Path) -> None:
    from rwkv_registry.store.ops import init_registry

    init_registry(tmp_path / "empty", name="test/empty", title="An empty registry")
    assert snap_compare(make_app(tmp_path / "empty"), terminal_size=(80, 24), run_before=prepare())


def test_broken_registry_checks_80x24(snap_compare, broken: Path) -> None:
    assert snap_compare(make_app(broken), terminal_size=(80, 24), run_before=prepare(MISS_IDS[1], "checks"))


def test_broken_registry_without_colour_80x24(snap_compare, broken: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    assert snap_compare(make_app(broken), terminal_size=(80, 24), run_before=prepare())


def test_compare_screen_100x30(snap_compare, tmp_path: Path) -> None:
    small = build_small(tmp_path / "reg", tmp_path)

    async def run_before(pilot) -> None:
        await prepare()(pilot)
        pilot.app.push_screen(CompareScreen(pilot.app.catalog, *MISS_IDS))
        await settle(pilot)

    assert snap_compare(make_app(small), terminal_size=(100, 30), run_before=run_before)
