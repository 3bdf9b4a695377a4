"""``rwkv-registry tui [PATH]``: browse a registry, watch it validate, copy usage commands, compare entries.

Layout: the filter box and the tree (base → method → data version → entry) on the left, the
selected node's details in tabs on the right, the validation status and the key bindings at the
bottom; ctrl+p opens the command palette. Every binding has an id (see
:mod:`rwkv_registry.tui.keymap` to remap them). Validation runs in a child process (file reads for the
details in thread workers), so hashing a large file never freezes navigation.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

from textual import events
from textual.app import App
from textual.binding import Binding, BindingType
from textual.notifications import SeverityLevel
from textual.screen import Screen
from textual.timer import Timer
from textual.worker import Worker, WorkerState

from rwkv_registry.catalog.entries import Catalog
from rwkv_registry.core.textsafe import printable
from rwkv_registry.tui.commands import RegistryCommands
from rwkv_registry.tui.keymap import load_keymap
from rwkv_registry.tui.screens.main import MainScreen

HEARTBEAT_S = 0.05  # the event loop notes the time this often (ui_busy)
LOOP_LAG_S = 0.03  # a heartbeat this much later than due: the event loop is congested…
BUSY_HOLD_S = 0.3  # … and counts as busy for this long after
INPUT_QUIET_S = 0.5  # the UI counts as busy this long after a key press, click or scroll


class RegistryApp(App[None]):
    """The registry browser. ``validate_on_start=False`` leaves validation to the ``v`` key."""

    CSS_PATH = "registry.tcss"
    TITLE = "rwkv-registry"
    COMMANDS: ClassVar = App.COMMANDS | {RegistryCommands}
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("d", "toggle_dark", "Theme", id="app.toggle_dark"),
        Binding("q", "quit", "Quit", id="app.quit"),
    ]

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = True,
    ) -> None:
        """Textual's notification, its text shown through :func:`~rwkv_registry.core.textsafe.printable`: a message may
        quote registry text (an entry id, a path, a validation error), whose control sequences must not reach the
        terminal."""
        super().notify(
            printable(message, newlines=True), title=printable(title), severity=severity, timeout=timeout, markup=markup
        )

    def __init__(
        self, path: str = ".", *, validate_on_start: bool = True, keymap: dict[str, str] | None = None
    ) -> None:
        self.started = time.perf_counter()
        self.first_paint_s: float | None = None
        self.last_input = float("-inf")  # time.monotonic() of the last key press, click or scroll (see MainScreen)
        self.last_beat = time.monotonic()  # of the last HEARTBEAT_S tick the event loop ran
        self.busy_until = float("-inf")  # a late heartbeat marks the loop busy until then
        self._heartbeat: Timer | None = None  # runs while a validation runs (heartbeat())
        self.beating = False  # the heartbeat runs
        self.on_busy: Callable[[], None] | None = None  # called (UI thread) as ui_busy() turns true: wakes the relay
        super().__init__()
        self.catalog = Catalog(path)
        self.sub_title = printable(self.catalog.name)
        self.validate_on_start = validate_on_start
        if keymap is None:
            keymap, self.keymap_problems = load_keymap()
        else:
            self.keymap_problems = []
        self.user_keymap = keymap

    async def on_event(self, event: events.Event) -> None:
        """Note when the user last pressed a key, clicked or scrolled: the validation yields to that (ui_busy)."""
        if isinstance(event, events.Key | events.MouseDown | events.MouseScrollDown | events.MouseScrollUp):
            was_busy = self.ui_busy()
            self.last_input = time.monotonic()
            if not was_busy and self.on_busy is not None:
                self.on_busy()
        await super().on_event(event)

    def get_default_screen(self) -> Screen[None]:
        return MainScreen(self.catalog, validate_on_start=self.validate_on_start)

    def on_mount(self) -> None:
        if self.user_keymap:
            self.set_keymap(self.user_keymap)
        for problem in self.keymap_problems:
            self.notify(problem, title="keymap", severity="warning", timeout=10, markup=False)
        self.call_after_refresh(self._painted)

    def heartbeat(self, on: bool) -> None:
        """Start (a validation runs: ui_busy() is asked) or stop (none runs: nothing asks) the heartbeat, so that
        an idle browser is not woken 20 times a second."""
        if on:
            self.last_beat = time.monotonic()  # the heartbeat starts now, not when it last stopped
            self.busy_until = float("-inf")
            self.beating = True
            if self._heartbeat is None:
                self._heartbeat = self.set_interval(HEARTBEAT_S, self._beat)
            else:
                self._heartbeat.resume()
        else:
            self.beating = False
            if self._heartbeat is not None:
                self._heartbeat.pause()

    def _beat(self) -> None:
        now = time.monotonic()
        if now - self.last_beat > HEARTBEAT_S + LOOP_LAG_S:
            was_busy = now < self.busy_until or now - self.last_input < INPUT_QUIET_S
            self.busy_until = now + BUSY_HOLD_S
            if not was_busy and self.on_busy is not None:
                self.on_busy()
        self.last_beat = now

    def ui_busy(self) -> bool:
        """True when the user pressed a key (clicked, scrolled) within INPUT_QUIET_S, or the event loop is
        congested: its heartbeat came late within BUSY_HOLD_S, or is late now. Called from the validation thread,
        which then waits (MainScreen._yield_to_ui): its Python code would take the GIL from the UI thread."""
        now = time.monotonic()
        return (
            now - self.last_input < INPUT_QUIET_S
            or now < self.busy_until
            or (self.beating and now - self.last_beat > HEARTBEAT_S + LOOP_LAG_S)
        )

    def _painted(self) -> None:
        if self.first_paint_s is None:
            self.first_paint_s = time.perf_counter() - self.started

    @property
    def main(self) -> MainScreen:
        """The browser screen (the bottom of the stack)."""
        screen = self.screen_stack[0]
        assert isinstance(screen, MainScreen)
        return screen

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """The one place worker failures are shown."""
        if event.state == WorkerState.ERROR:
            self.notify(f"{event.worker.name} failed: {event.worker.error}", severity="error", timeout=10, markup=False)


def cmd_tui(args: argparse.Namespace) -> int:
    """``rwkv-registry tui [PATH]``. A folder inside a registry (a base directory, say) is refused as ``validate``
    refuses it, naming the registry's root to open instead."""
    from rwkv_registry.core.errors import UsageError
    from rwkv_registry.fs.atomic import registry_around

    root = Path(args.path)
    if root.is_dir() and not (root / "index.json").exists():
        outer = registry_around(root.resolve())
        if outer is not None:
            raise UsageError(
                f"{args.path}: no index.json here; it lies inside the registry at {outer}",
                hint=f"Browse the registry's root: rwkv-registry tui {outer}",
            )
    RegistryApp(args.path).run()
    return 0
