"""The TUI shows registry text holding terminal control sequences escaped (textsafe.printable): what it writes to
the terminal (the compositor's output, as the driver receives it) holds no OSC, BEL, C1 CSI or bidi override of a
description, a known issue, a train.json command or a notification."""

from __future__ import annotations

from pathlib import Path

from regtools import edit_index
from tui_helpers import STATE_ID, build_small, run_async, settle

from rwkv_registry.tui.app import RegistryApp

EVIL = "pwn\x1b]0;HACKED\x07\x9b2J\u202eevil"
RAW = ("\x1b]0;HACKED", "\x07", "\x9b", "\u202e")


def _screen_output(app: RegistryApp) -> str:
    """The terminal sequences of a full repaint of the screen (what the driver would write)."""
    return app.screen._compositor.render_update(full=True).render_segments(app.console)


@run_async
async def test_the_tui_never_writes_registry_control_sequences(tmp_path: Path) -> None:
    reg = build_small(tmp_path / "reg", tmp_path)

    def plant(index: dict) -> None:
        index["entries"][0]["description"] = EVIL
        index["known_issues"] = [EVIL]

    edit_index(reg, plant)
    app = RegistryApp(str(reg), validate_on_start=False, keymap={})
    async with app.run_test(size=(120, 40)) as pilot:
        assert app.main.tree.select_entry(STATE_ID)
        await settle(pilot)
        out = _screen_output(app)
        assert not [r for r in RAW if r in out]
        assert "HACKED" in out and "\\x1b" in out  # shown, escaped
        app.notify(f"note {EVIL}", markup=False)
        await settle(pilot)
        out = _screen_output(app)
        assert not [r for r in RAW if r in out]
