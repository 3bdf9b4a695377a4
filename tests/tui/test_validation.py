"""The TUI's validation (same report as `validate`, file by file) and its user keymap."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from tui_helpers import MISS_IDS, STATE_ID, break_registry, build_small, miss_path

from rwkv_registry.catalog.entries import Catalog
from rwkv_registry.engine.facts import FileFacts, compute_facts
from rwkv_registry.engine.validate import validate_registry
from rwkv_registry.tui.keymap import load_keymap
from rwkv_registry.tui.validation import ValidationCancelled, live_validate, preliminary_status


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

    from rwkv_registry.engine import facts

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


def test_live_validation_waits_for_a_write_in_progress_like_validate(broken: Path) -> None:
    """Under a running writer's lock, `validate` reports LAY013 and nothing else (the tree is half-written); the
    TUI's validation used to run every rule on it anyway."""
    from rwkv_registry.fs.atomic import registry_lock

    with registry_lock(broken):
        expected = validate_registry(broken, use_cache=False)
        files: list[str] = []
        report = live_validate(broken, on_file=lambda rel, _f: files.append(rel), use_cache=False)
    assert [f.code for f in expected.findings] == ["LAY013"]
    assert as_rows(report) == as_rows(expected) and files == []


def test_live_validation_gives_validates_order(broken: Path) -> None:
    """Findings in report order, numbers in a message compared as numbers ($.entries[2] before $.entries[10]), as
    `validate` prints them; the TUI's own sort compared them as text."""
    index = json.loads((broken / "index.json").read_text())
    entries = index["entries"]
    for i in range(3, 11):
        entries.append({**entries[0], "id": f"copy-{i}"})
    entries[2]["recommended"] = "yes"
    entries[10]["recommended"] = "no"
    (broken / "index.json").write_text(json.dumps(index))
    expected = validate_registry(broken, use_cache=False)
    report = live_validate(broken, on_file=lambda *_: None, use_cache=False)
    messages = [f.message for f in expected.findings if f.code == "SCH002"]
    assert messages[0].startswith("$.entries[2]") and messages[1].startswith("$.entries[10]")
    assert as_rows(report) == as_rows(expected)


def test_live_validation_of_a_deleted_registry_is_refused_like_validate(broken: Path) -> None:
    import shutil

    from rwkv_registry.core.errors import UsageError

    shutil.rmtree(broken)
    with pytest.raises(UsageError, match="does not exist"):
        validate_registry(broken)
    with pytest.raises(UsageError, match="does not exist"):
        live_validate(broken, on_file=lambda *_: None)


def test_file_batcher_sends_at_most_one_batch_per_interval_and_the_last_file_at_once() -> None:
    """The validation thread's results reach the UI in batches: the first file at once, then what was checked
    since at most every 0.1 s, and the batch with the planned count's last file at once; nothing is lost."""
    from rwkv_registry.tui.validation import CheckedFile, FileBatcher

    now = [0.0]
    sent: list[list[CheckedFile]] = []
    batcher = FileBatcher(sent.append, every=0.1, clock=lambda: now[0])
    batcher.total = 2000
    files = [CheckedFile(f"f{i}.pth", f"e{i}", "ok") for i in range(2000)]
    for i, f in enumerate(files):
        now[0] = i * 0.001  # 2,000 files in 2 s: one a millisecond
        batcher.add(f)
    assert [f for batch in sent for f in batch] == files  # every file once, in order
    assert len(sent[0]) == 1 and 15 <= len(sent) <= 22  # about one batch per 0.1 s, not 2,000 messages
    assert sent[-1][-1] == files[-1]  # the last file was sent with its batch, without waiting for the interval
    batcher.flush()
    assert len([f for batch in sent for f in batch]) == 2000  # nothing left to flush


def test_file_batcher_flush_sends_the_rest_when_the_plan_is_unknown() -> None:
    from rwkv_registry.tui.validation import CheckedFile, FileBatcher

    sent: list[list[CheckedFile]] = []
    batcher = FileBatcher(sent.append, every=0.1, clock=lambda: 5.0)
    for i in range(3):
        batcher.add(CheckedFile(f"f{i}.pth", None, "error"))
    assert [len(b) for b in sent] == [1]
    batcher.flush()
    assert [len(b) for b in sent] == [1, 2]


def test_a_stopped_live_validation_keeps_what_it_read_for_the_next_run(broken: Path) -> None:
    """The files a stopped run read (those reported, and any other in flight) are in the cache (its journal): the
    next run reads only the others."""
    seen: list[str] = []
    with pytest.raises(ValidationCancelled):
        live_validate(broken, on_file=lambda rel, _f: seen.append(rel), should_stop=lambda: bool(seen))
    assert len(seen) == 1
    report = live_validate(broken, on_file=lambda *_: None)
    assert report.stats["cache_hits"] >= 1 and as_rows(report) == as_rows(validate_registry(broken))


def test_a_live_validator_with_the_default_hooks_runs_to_the_end(broken: Path) -> None:
    """live_validator used on its own (no should_stop, no between_steps): a whole validation, as validate's."""
    from rwkv_registry.engine.validate import run_validator
    from rwkv_registry.tui.validation import live_validator

    files: list[str] = []
    report = run_validator(live_validator(broken, on_file=lambda rel, _f: files.append(rel), use_cache=False), broken)
    assert len(files) == 3 and as_rows(report) == as_rows(validate_registry(broken, use_cache=False))


# --- the validation process (rwkv_registry.tui.validation_process) ------------------------------------------------


def _drain(proc, timeout: float = 60.0) -> list[tuple]:
    """Every message of a ValidationProcess up to its last one (done, failed, crash, died)."""
    import time

    messages: list[tuple] = []
    end = time.monotonic() + timeout
    while not messages or messages[-1][0] not in ("done", "failed", "crash", "died"):
        assert time.monotonic() < end, messages
        m = proc.receive(0.1)
        if m is not None:
            messages.append(m)
    return messages


def _gone(pid: int) -> bool:
    """The process is neither running nor a zombie (reaped)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_the_validation_process_gives_validates_findings_file_by_file(broken: Path) -> None:
    """The browser's child process: each weight file once (in batches, before the report), with the status the
    thread path gives, and the same report as `rwkv-registry validate`."""
    from rwkv_registry.tui.validation_process import ValidationProcess

    expected = validate_registry(broken, use_cache=False)
    cat = Catalog(broken)
    by_path = {str(e["path"]): e for e in cat.entries}
    threaded: dict[str, str] = {}
    live_validate(
        broken,
        on_file=lambda rel, f: threaded.__setitem__(rel, preliminary_status(by_path.get(rel), f)),
        use_cache=False,
    )
    proc = ValidationProcess(broken, by_path, use_cache=False)
    try:
        messages = _drain(proc)
    finally:
        code = proc.stop()
    kinds = [m[0] for m in messages]
    assert kinds[0] == "plan" and messages[0][1] == 3 and kinds[-1] == "done" and set(kinds[1:-1]) == {"files"}
    files = [f for m in messages if m[0] == "files" for f in m[1]]
    assert sorted(f.rel for f in files) == sorted(by_path) and {f.rel: f.status for f in files} == threaded
    assert {f.entry_id for f in files} == {str(e["id"]) for e in cat.entries}
    report = messages[-1][1]
    assert as_rows(report) == as_rows(expected) and report.counts == expected.counts
    assert code == 0 and proc.process.pid is not None and _gone(proc.process.pid)


def test_the_validation_process_of_a_deleted_registry_says_why(broken: Path) -> None:
    import shutil

    from rwkv_registry.tui.validation_process import ValidationProcess

    shutil.rmtree(broken)
    proc = ValidationProcess(broken, {})
    try:
        messages = _drain(proc)
    finally:
        proc.stop()
    assert len(messages) == 1 and messages[0][0] == "failed" and "does not exist" in messages[0][1]


def test_a_killed_validation_process_reads_as_died_not_a_hang(broken: Path) -> None:
    """SIGKILL (the OOM killer, a user): the parent gets ("died", why) once the pipe closes; no zombie."""
    import signal

    from proc_targets import ignores_stop

    from rwkv_registry.tui.validation_process import ValidationProcess

    proc = ValidationProcess(broken, {}, target=ignores_stop)
    try:
        assert proc.receive(30) == ("plan", 1)
        assert proc.pid is not None
        os.kill(proc.pid, signal.SIGKILL)
        messages = _drain(proc, 10)
    finally:
        proc.stop()
    assert len(messages) == 1 and messages[0][0] == "died" and "SIGKILL" in messages[0][1]
    assert _gone(proc.pid)


def test_a_validation_process_that_cannot_import_the_rules_says_so(broken: Path) -> None:
    from proc_targets import broken_install

    from rwkv_registry.tui.validation_process import ValidationProcess

    proc = ValidationProcess(broken, {}, target=broken_install)
    try:
        messages = _drain(proc)
    finally:
        code = proc.stop()
    assert len(messages) == 1 and messages[0][0] == "crash" and "ModuleNotFoundError" in messages[0][1] and code == 0


def test_stopping_a_validation_process_keeps_what_it_read_and_leaves_no_process(
    broken: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """stop() while a file is being read: the child starts no further file, finishes that one, appends it to the
    cache's journal and exits (joined: no zombie); the next run reads only the other files."""
    import threading
    import time

    from proc_targets import READS, RELEASE, reads_of, slow_reads

    from rwkv_registry.tui.validation_process import ValidationProcess

    monkeypatch.setenv("RWKV_REGISTRY_CACHE_DIR", str(tmp_path / "fresh-cache"))
    monkeypatch.setenv(READS, str(tmp_path / "reads"))
    monkeypatch.setenv(RELEASE, str(tmp_path / "release"))
    by_path = {str(e["path"]): e for e in Catalog(broken).entries}
    proc = ValidationProcess(broken, by_path, target=slow_reads)
    end = time.monotonic() + 30
    while not reads_of(tmp_path / "reads") and time.monotonic() < end:
        time.sleep(0.01)
    in_flight = len(reads_of(tmp_path / "reads"))
    assert in_flight >= 1
    threading.Timer(0.3, lambda: (tmp_path / "release").touch()).start()  # the files being read finish later
    code = proc.stop()
    assert code == 0 and proc.pid is not None and _gone(proc.pid)  # it exited by itself, within the grace time
    assert len(reads_of(tmp_path / "reads")) == in_flight  # no file started after the stop
    report = validate_registry(broken)
    assert in_flight == 1 and report.stats["cache_hits"] == 1
    assert as_rows(report) == as_rows(validate_registry(broken, use_cache=False))


def test_a_validation_process_that_ignores_stop_is_terminated(broken: Path) -> None:
    import time

    from proc_targets import ignores_stop

    from rwkv_registry.tui.validation_process import ValidationProcess, describe_exit

    proc = ValidationProcess(broken, {}, target=ignores_stop)
    assert proc.receive(30) == ("plan", 1)
    t = time.monotonic()
    code = proc.stop(grace=0.2)
    assert time.monotonic() - t < 5 and code is not None and code < 0 and _gone(proc.pid or 0)
    assert "SIGTERM" in describe_exit(code) and "status 3" in describe_exit(3)


def test_the_validation_process_imports_neither_textual_nor_torch(broken: Path) -> None:
    """The child is a fresh interpreter (spawn): it imports the core's rules only, not the browser's textual (nor
    torch), so it starts in a fraction of a second."""
    from proc_targets import then_modules

    from rwkv_registry.tui.validation_process import ValidationProcess

    proc = ValidationProcess(broken, {}, target=then_modules)
    try:
        assert _drain(proc)[-1][0] == "done"
        assert proc.conn.poll(30)
        kind, modules = proc.conn.recv()
    finally:
        proc.stop()
    assert kind == "modules" and "rwkv_registry" in modules
    assert not {"textual", "torch"} & set(modules), modules


UNGUARDED_SCRIPT = """
import asyncio, os, sys, time

with open(os.environ["RWKV_TEST_TOP"], "a") as f:  # the script's top level, run once per interpreter that runs it
    f.write(f"{os.getpid()}\\n")

from rwkv_registry.tui.app import RegistryApp


async def browse():
    app = RegistryApp(sys.argv[1], keymap={})
    async with app.run_test(size=(100, 30)) as pilot:
        end = time.monotonic() + 120
        while (app.main.report is None or app.main.validating) and time.monotonic() < end:
            await pilot.pause(0.05)
        print("RESULT", app.main.validation_pid is not None, app.main.report is not None, app.main.files_done)
        app.exit()


asyncio.run(browse())  # no `if __name__ == "__main__":` guard
"""


def test_a_script_without_a_main_guard_runs_once_when_the_app_validates(broken: Path, tmp_path: Path) -> None:
    """A user's script that embeds the App without a main guard: the validation child is `python -m
    rwkv_registry.tui.validation_process`, which never imports the script, so its top level runs once (with
    multiprocessing's `spawn` the child imported the script as its main module and ran the App a second time)."""
    import subprocess
    import sys

    script, top = tmp_path / "embed.py", tmp_path / "top"
    script.write_text(UNGUARDED_SCRIPT)
    env = dict(os.environ, RWKV_TEST_TOP=str(top), RWKV_REGISTRY_KEYMAP="")
    env["RWKV_REGISTRY_CACHE_DIR"] = str(tmp_path / "cache")
    out = subprocess.run(
        [sys.executable, str(script), str(broken)], capture_output=True, text=True, env=env, timeout=300
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert "RESULT True True 3" in out.stdout, out.stdout[-2000:]  # validated in a child process, every file
    assert len(top.read_text().splitlines()) == 1


def test_a_child_that_cannot_start_its_module_is_reported_with_what_it_printed(
    broken: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An interpreter that cannot even run `-m rwkv_registry.tui.validation_process` (not installed there): the
    parent reads ("died", why) with the last lines the child printed, and reaps it."""
    import sys

    from rwkv_registry.tui.validation_process import ValidationProcess

    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\necho 'No module named rwkv_registry' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(fake))
    proc = ValidationProcess(broken, {})
    try:
        messages = _drain(proc, 30)
    finally:
        code = proc.stop()
    assert len(messages) == 1 and messages[0][0] == "died", messages
    assert "exited with status 1" in messages[0][1] and "No module named rwkv_registry" in messages[0][1]
    assert code == 1 and _gone(proc.pid or 0)
