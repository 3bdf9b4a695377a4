"""The details pane's savings (tui/widgets/details.py): hidden tabs get their new content when shown (by key or
click), never stale; a table is rendered once per update, and draws exactly what a plain Static draws."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from rich.console import Console, ConsoleOptions, Group, RenderResult
from rich.table import Table
from rich.text import Text
from textual.app import App, ComposeResult
from textual.containers import VerticalScroll
from textual.geometry import Region
from textual.widgets import Static
from tui_helpers import MISS_IDS, STATE_ID, build_small, run_async, settle, text_of, wait_until

from rwkv_registry.tui.app import RegistryApp
from rwkv_registry.tui.widgets.details import DetailStatic

SIZE = (100, 30)


@pytest.fixture
def small(tmp_path: Path) -> Path:
    return build_small(tmp_path / "reg", tmp_path)


def _shown(app: Any, key: str) -> str:
    """What a tab's Static holds now, read without DetailsPane.section (which hands over pending content)."""
    return text_of(app.main.details.query_one(f"#detail-{key}", Static).content)


@run_async
async def test_a_hidden_tab_shows_the_current_entry_once_opened_by_key_or_click(small: Path) -> None:
    app = RegistryApp(str(small), validate_on_start=False, keymap={})
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.main.tree.select_entry(MISS_IDS[0])
        await settle(pilot)
        await pilot.press("3")  # MiSS
        await settle(pilot)
        assert MISS_IDS[0] in _shown(app, "info") or "content" in _shown(app, "miss")
        first_miss = _shown(app, "miss")
        await pilot.press("1")  # back to Info; the cursor moves on while MiSS is hidden
        assert app.main.tree.select_entry(STATE_ID)
        await settle(pilot)
        assert STATE_ID in _shown(app, "info")
        await pilot.press("3")  # by key: the State entry's MiSS tab, not the MiSS entry's
        await settle(pilot)
        assert _shown(app, "miss") != first_miss and _shown(app, "miss") == text_of(
            app.main.details.section("miss").content
        )
        await pilot.press("1")
        assert app.main.tree.select_entry(MISS_IDS[1])
        await settle(pilot)
        await pilot.click("#--content-tab-tab-train")  # by click
        await settle(pilot)
        assert app.main.details.query_one("TabbedContent").active == "tab-train"
        train = _shown(app, "train")
        assert "▶ r4-b" in train  # MISS_IDS[1]'s run is marked, as test_app's navigation test reads it


class CountingTable:
    """A table that counts its renderings."""

    def __init__(self) -> None:
        self.renders = 0
        self.table = Table(title="facts")
        self.table.add_column("key")
        self.table.add_column("value")
        for i in range(12):
            self.table.add_row(f"key {i}", Text(f"value {i} " * (i % 4 + 1), style="bold" if i % 2 else "dim"))

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        self.renders += 1
        yield self.table


class TwoStatics(App[None]):
    CSS = "Screen { layout: horizontal; } VerticalScroll { height: 1fr; width: 40; } Static { height: auto; }"

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="a"):
            yield DetailStatic(id="once")
        with VerticalScroll(id="b"):
            yield Static(id="plain")


@run_async
async def test_a_table_is_rendered_once_per_update_and_drawn_as_static_draws_it() -> None:
    app = TwoStatics()
    async with app.run_test(size=(90, 60)) as pilot:  # no scroll bar: one width
        once, plain = app.query_one("#once", DetailStatic), app.query_one("#plain", Static)
        for n in range(2):  # a second update: rendered once more, with its own content
            counted, baseline = CountingTable(), CountingTable()
            once.update(Group(Text(f"update {n}", style="bold"), counted))
            plain.update(Group(Text(f"update {n}", style="bold"), baseline))
            await pilot.pause()
            await pilot.pause()
            assert counted.renders == 1  # measured (layout) and drawn from one rendering
            assert baseline.renders >= 2  # a plain Static renders it to measure it (once or more), then to draw it
            assert once.size == plain.size and once.size.height > 12
            region = Region(0, 0, once.size.width, once.size.height)
            assert once.render_lines(region) == plain.render_lines(region)
            assert "update" in once.render_lines(region)[0].text


@run_async
async def test_a_hidden_checks_tab_shows_the_new_validation_once_opened(small: Path) -> None:
    """The Checks tab, hidden while the validation runs, shows its report when clicked (not "not validated")."""
    app = RegistryApp(str(small), validate_on_start=False, keymap={})
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.main.tree.select_entry(STATE_ID)
        await settle(pilot)
        assert "not validated yet" in text_of(app.main.details.section("checks").content)  # handed over now
        await pilot.press("v")
        await wait_until(pilot, lambda: app.main.report is not None and not app.main.validating, timeout=60)
        await settle(pilot)
        await pilot.click("#--content-tab-tab-checks")
        await settle(pilot)
        assert app.main.details.query_one("TabbedContent").active == "tab-checks"
        assert "✓ no findings" in _shown(app, "checks") and "not validated" not in _shown(app, "checks")


@run_async
async def test_details_of_the_same_height_are_drawn_without_a_layout(
    small: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every details draw laid the whole screen out (Static.update), and after each layout Textual repainted the
    tree's scroll bar in a frame of its own: three frames per cursor move. Content of the height already shown
    is now drawn without a layout; content of another height is laid out, and the tab takes its height."""
    from textual.screen import Screen

    layouts: list[int] = []
    real = Screen._refresh_layout

    def counted(self: Screen[Any], *a: Any, **k: Any) -> None:
        layouts.append(1)
        real(self, *a, **k)

    monkeypatch.setattr(Screen, "_refresh_layout", counted)
    app = RegistryApp(str(small), validate_on_start=False, keymap={})
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        info = app.main.details.query_one("#detail-info", DetailStatic)
        assert app.main.tree.select_entry(MISS_IDS[0])
        await settle(pilot)
        height = info.content_size.height
        layouts.clear()
        await pilot.press("down")  # its sibling (select_entry would expand its parents: a layout of the tree)
        await settle(pilot)
        assert MISS_IDS[1] in _shown(app, "info") and info.content_size.height == height
        assert layouts == []  # one before
        assert app.main.tree.select_entry(STATE_ID)  # a State entry: another height, laid out
        await settle(pilot)
        assert layouts and STATE_ID in _shown(app, "info")
        assert info.content_size.height == info.render().get_height(info.styles, info.content_size.width)
        assert info.content_size.height != height
