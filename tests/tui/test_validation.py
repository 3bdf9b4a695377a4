"""The TUI's validation (same report as `validate`, file by file) and its user keymap."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from tui_helpers import MISS_IDS, STATE_ID, break_registry, build_small, miss_path

from rwkv_registry.catalog import Catalog
from rwkv_registry.facts import FileFacts, compute_facts
from rwkv_registry.tui.keymap import load_keymap
from rwkv_registry.tui.validation import ValidationCancelled, live_validate, preliminary_status
from rwkv_registry.validate import validate_registry


@pytest.fixture
def broken(tmp_path: Path) -> Path:
    return break_registry(build_small(tmp_path / "reg", tmp_path))


def as_rows(report) -> list[tuple[str, str, str]]:
    return [(f.code, f.path, f.message) for f in report.findings]


def test_live_validation_reports_each_file_and_the_same_findings(broken: Path) -> None:
    expected = validate_registry(broken, use_cache=False)
    files: list[str] = []
    plans: list[int] = []
    report = live_validate(broken, on_file=lambda rel, _f: files.append(rel), on_plan=plans.append, use_cache=False)
    assert as_rows(report) == as_rows(expected) and report.counts == expected.counts
    index = json.loads((broken / "index.json").read_text())
    assert sorted(files) == sorted(e["path"] for e in index["entries"]) and plans == [3]


def test_live_validation_uses_the_cache_and_can_be_stopped(broken: Path) -> None:
    live_validate(broken, on_file=lambda *_: None)
    second = live_validate(broken, on_file=lambda *_: None)
    assert second.stats["cache_hits"] == 3 and second.stats["bytes_hashed"] == 0
    seen: list[str] = []
    with pytest.raises(ValidationCancelled):
        live_validate(broken, on_file=lambda rel, _f: seen.append(rel), should_stop=lambda: bool(seen), use_cache=False)
    assert len(seen) == 1


def test_preliminary_status_from_the_file_alone(broken: Path) -> None:
    cat = Catalog(broken)
    state = cat.entry(STATE_ID)
    good, bad = cat.entry(MISS_IDS[0]), cat.entry(MISS_IDS[1])
    assert preliminary_status(good, compute_facts(miss_path(broken, "r4-a"))) == "ok"
    assert preliminary_status(bad, compute_facts(miss_path(broken, "r4-b"))) == "error"  # hash and MIS011
    facts = compute_facts(broken / state["path"])
    assert preliminary_status(state, facts) == "ok"  # its missing train.json is known only from the report
    assert preliminary_status({**state, "method": "miss"}, facts) == "error"
    assert preliminary_status(state, OSError("gone")) == "error"
    unknown = FileFacts(
        size=facts.size,
        sha256=facts.sha256,
        kind="torch-zip",
        method="state",
        findings=[{"code": "STA004", "message": "NaN"}],
    )
    assert preliminary_status(state, unknown) == "error"


def test_keymap_from_file_and_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "tui.json"
    config.write_text(json.dumps({"keymap": {"registry.validate": "ctrl+r", "registry.nope": "x"}}))
    monkeypatch.setenv("RWKV_REGISTRY_TUI_CONFIG", str(config))
    monkeypatch.setenv("RWKV_REGISTRY_KEYMAP", "registry.compare=x,app.toggle_dark=f2,garbage")
    keymap, problems = load_keymap()
    assert keymap == {"registry.validate": "ctrl+r", "registry.compare": "x", "app.toggle_dark": "f2"}
    assert any("registry.nope" in p for p in problems) and any("'garbage'" in p for p in problems)
    config.write_text("{broken")
    monkeypatch.delenv("RWKV_REGISTRY_KEYMAP")
    keymap, problems = load_keymap()
    assert keymap == {} and len(problems) == 1 and str(config) in problems[0]


def test_keymap_refuses_a_key_sequence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """'y y' (a sequence) bound nothing at all; it is reported and the default binding stays."""
    monkeypatch.setenv("RWKV_REGISTRY_TUI_CONFIG", str(tmp_path / "absent.json"))
    monkeypatch.setenv("RWKV_REGISTRY_KEYMAP", "registry.copy_usage=y y;registry.compare=ctrl+y,x")
    keymap, problems = load_keymap()
    assert keymap == {"registry.compare": "ctrl+y,x"}
    assert len(problems) == 1 and "'y y' is not a key" in problems[0]


def test_live_validation_never_caches_a_racily_clean_file(registry: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The TUI's validation once cached facts itself and skipped the racy-clean rule of facts.gather_facts, so a
    same-size rewrite within a coarse clock's step (FAT, HFS+, ext3) hid behind the old key and the browser showed
    the old bytes' verdict. It now reads files through gather_facts."""
    import time

    from rwkv_registry import facts

    tick = time.time_ns() // 10**9 * 10**9
    real = facts.stat_key

    def coarse(st: os.stat_result, path: str) -> list[object]:
        return [*real(st, path)[:4], tick, tick]

    monkeypatch.setattr(facts, "stat_key", coarse)
    assert live_validate(registry, on_file=lambda *_: None).ok
    state = next(p for p in registry.rglob("*.pth") if "/state/" in p.as_posix())
    data = bytearray(state.read_bytes())
    data[-100] ^= 0x10
    with open(state, "r+b") as f:  # same inode, same size, same (coarse) times: the same stat key
        f.write(bytes(data))
    report = live_validate(registry, on_file=lambda *_: None)
    assert "HSH001" in {f.code for f in report.findings}
