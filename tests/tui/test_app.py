"""Pilot-driven tests of `rwkv-registry tui`: navigate, filter, validate, copy, edit, compare."""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path

import pytest
from regtools import TINY_ARCH, edit_index
from textual.widgets import Footer, Input
from tui_helpers import (
    BASE,
    MISS_IDS,
    NAME,
    SMOKE,
    STATE_ID,
    break_registry,
    build_small,
    miss_path,
    run_async,
    set_smoke,
    settle,
    tab_text,
    visible_labels,
    wait_until,
)

from rwkv_registry.catalog.entries import EntryFilter, NodeRef
from rwkv_registry.engine.validate import validate_registry
from rwkv_registry.tui.app import RegistryApp
from rwkv_registry.tui.messages import FilesChecked, ValidationFinished
from rwkv_registry.tui.screens.compare import CompareScreen
from rwkv_registry.tui.screens.main import MainScreen
from rwkv_registry.tui.validation_process import child_main
from rwkv_registry.tui.widgets.registry_tree import RegistryTree

SIZE = (100, 30)


@pytest.fixture
def small(tmp_path: Path) -> Path:
    return build_small(tmp_path / "reg", tmp_path)


@pytest.fixture
def broken(small: Path) -> Path:
    return break_registry(small)


@pytest.fixture
def in_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    """Validate in a thread of the test's process (the path where no process can be started), where the test's
    monkeypatching of the rules reaches; the child process's tests use tests/tui/proc_targets.py instead."""
    monkeypatch.setattr("rwkv_registry.tui.screens.main.VALIDATE_IN_PROCESS", False)


async def goto(pilot, entry_id: str) -> None:
    """Put the tree's cursor on an entry (keyboard navigation itself is tested with key presses)."""
    assert pilot.app.main.tree.select_entry(entry_id)
    await settle(pilot)


async def walk_to(pilot, entry_id: str) -> None:
    """Press down until the entry is highlighted."""
    tree = pilot.app.main.tree
    for _ in range(20):
        node = tree.cursor_node
        if node is not None and node.data is not None and node.data.entry_id == entry_id:
            await settle(pilot)
            return
        await pilot.press("down")
    raise AssertionError(f"{entry_id} not reachable in {visible_labels(tree)}")


@run_async
async def test_tree_shows_the_registry_and_marks(small: Path) -> None:
    app = RegistryApp(str(small), validate_on_start=False, keymap={})
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        labels = visible_labels(app.main.tree)
        assert labels == [
            f"· {NAME} (3)",
            f"  · {BASE} (3)",
            "    · State (1)",
            "      · v1 (1)",
            f"        · {STATE_ID} ★",
            "    · MiSS (2)",
            "      · v2 (2)",
            f"        · {MISS_IDS[0]} ★",
            f"        · {MISS_IDS[1]}",
        ]
        assert "not validated" in str(app.main.status_bar.render())


@run_async
async def test_navigate_shows_details_of_the_entry(small: Path) -> None:
    index = json.loads((small / "index.json").read_text())
    entry = next(e for e in index["entries"] if e["id"] == MISS_IDS[1])
    app = RegistryApp(str(small), validate_on_start=False, keymap={})
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await walk_to(pilot, MISS_IDS[1])
        info = tab_text(app, "info")
        assert entry["path"] in info and entry["file"]["sha256"] in info
        assert "v2 · 200 rows" in info and "g1k-think" in info and "g1k-agent" in info
        train = tab_text(app, "train")
        assert "rwkv_miss_tune 1.8.1 (commit 47df608)" in train
        assert "▶ r4-b  lr 3e-05 → 3e-06" in train and "  r4-a  lr 2e-05 → 2e-06" in train
        assert "rwkv_miss_tune --rank 4 --alpha 8 --lr $LR" in train
        miss = tab_text(app, "miss")
        assert entry["miss"]["content_version"] in miss
        assert "✓ matches base" in miss and "12 (6 per layer × 2 layers)" in miss
        scores = tab_text(app, "scores")
        assert "exam" in scores and "45.5%" in scores and "▶ v2-r4-b" in scores
        await pilot.press("1", "up")  # the data version above it: its train.json, no entry detail
        await settle(pilot)
        assert app.main.current == NodeRef("entry", BASE, "miss", "v2", MISS_IDS[0])
        await pilot.press("up")
        await settle(pilot)
        assert app.main.current == NodeRef("version", BASE, "miss", "v2")
        assert "rwkv_miss_tune" in tab_text(app, "train") and MISS_IDS[0] in tab_text(app, "info")


@run_async
async def test_filter_box_narrows_the_tree(small: Path) -> None:
    app = RegistryApp(str(small), validate_on_start=False, keymap={})
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("slash")
        assert isinstance(app.focused, Input)
        await pilot.press(*"method:miss")
        await settle(pilot)
        labels = visible_labels(app.main.tree)
        assert [x.strip() for x in labels[-2:]] == [f"· {MISS_IDS[0]} ★", f"· {MISS_IDS[1]}"]
        assert not any(STATE_ID in x for x in labels)
        assert "2 of 3 entries (method miss)" in str(app.main.status_bar.render())
        await pilot.press("escape")  # clears
        await settle(pilot)
        assert any(STATE_ID in x for x in visible_labels(app.main.tree))
        app.main.set_filter("r4-b")
        await settle(pilot)
        assert [x.strip() for x in visible_labels(app.main.tree) if "r4" in x] == [f"· {MISS_IDS[1]}"]
        app.main.set_filter("data:v1")
        await settle(pilot)
        entries = [n for n in app.main.tree._entry_nodes]
        assert entries == [STATE_ID]
        app.main.set_filter("is:rec")
        await settle(pilot)
        assert sorted(app.main.tree._entry_nodes) == sorted([STATE_ID, MISS_IDS[0]])


@run_async
async def test_filter_box_data_term_stops_at_a_version_boundary(small: Path) -> None:
    """The box shares ``EntryFilter``: ``data:v2`` kept an entry of data version v20 (a plain text prefix)."""

    def edit(index: dict) -> None:
        model = next(e for e in index["entries"] if e["id"] == MISS_IDS[1])
        for version in ("v20", "v2.1"):
            copy = json.loads(json.dumps(model))
            copy["id"] = f"{version.replace('.', '')}-r4-b"
            copy["data"]["version"] = version
            copy["path"] = model["path"].replace("/v2/", f"/{version}/")
            copy["recommended"] = False
            index["entries"].append(copy)

    edit_index(small, edit)
    app = RegistryApp(str(small), validate_on_start=False, keymap={})
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.main.set_filter("data:v2")
        await settle(pilot)
        assert sorted(app.main.tree._entry_nodes) == sorted([*MISS_IDS, "v21-r4-b"])
        app.main.set_filter("d:20")
        await settle(pilot)
        assert list(app.main.tree._entry_nodes) == ["v20-r4-b"]


@run_async
async def test_filter_keeps_the_chosen_entry_selected(small: Path) -> None:
    app = RegistryApp(str(small), validate_on_start=False, keymap={})
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await goto(pilot, MISS_IDS[1])
        app.main.set_filter("method:state")  # hides it: the cursor goes to the root
        await settle(pilot)
        assert app.main.current.kind == "registry"
        app.main.set_filter("")
        await settle(pilot)
        assert app.main.current.entry_id == MISS_IDS[1]


@pytest.mark.parametrize("typed", ["method:miss", ""])
@run_async
async def test_escape_in_the_filter_box_goes_back_to_the_tree_so_q_quits(small: Path, typed: str) -> None:
    """One Escape in the filter box clears it and puts the focus back on the tree: the `q` after it quits instead of
    being typed into the box (issue 28: the first Escape only cleared, and `q` became the filter `q`)."""
    app = RegistryApp(str(small), validate_on_start=False, keymap={})
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("slash", *typed)
        await settle(pilot)
        box = app.main.query_one("#filter", Input)
        assert app.focused is box and box.value == typed
        await pilot.press("escape")
        await settle(pilot)
        assert app.focused is app.main.tree and box.value == ""
        assert "3 entries" in str(app.main.status_bar.render())
        await pilot.press("q")
        await pilot.pause()
        assert box.value == ""  # not typed into the box
    assert app.return_code == 0


@run_async
async def test_enter_in_the_filter_box_keeps_the_filter_and_escape_on_the_tree_clears_it(small: Path) -> None:
    app = RegistryApp(str(small), validate_on_start=False, keymap={})
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("slash", *"method:miss", "enter")
        await settle(pilot)
        assert app.focused is app.main.tree and "2 of 3 entries (method miss)" in str(app.main.status_bar.render())
        await pilot.press("escape")
        await settle(pilot)
        assert app.main.query_one("#filter", Input).value == "" and app.focused is app.main.tree
        assert "3 entries" in str(app.main.status_bar.render())


@run_async
async def test_a_burst_of_keys_filters_once_with_the_final_text(small: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Typing waits for the keys to pause (FILTER_DEBOUNCE_S) and filters once, with the whole term; clearing the
    box filters at once. Before, every key rebuilt the tree (`m`, `me`, … `method:miss`)."""
    rebuilt: list[str] = []
    real = RegistryTree.rebuild

    def spy(self: RegistryTree, flt: EntryFilter | None = None) -> None:
        rebuilt.append(flt.describe() if flt else "-")
        real(self, flt)

    monkeypatch.setattr(RegistryTree, "rebuild", spy)
    monkeypatch.setattr("rwkv_registry.tui.screens.main.FILTER_DEBOUNCE_S", 3.0)  # longer than 12 key presses take
    app = RegistryApp(str(small), validate_on_start=False, keymap={})
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        rebuilt.clear()
        await pilot.press("slash", *"method:miss")
        assert app.main.filter_pending and rebuilt == []  # nothing filtered while the keys come
        await settle(pilot)
        assert rebuilt == ["method miss"] and not app.main.filter_pending
        assert "2 of 3 entries (method miss)" in str(app.main.status_bar.render())
        await pilot.press("escape")  # clears the box: the tree shows everything without waiting
        assert not app.main.filter_pending and rebuilt == ["method miss", "everything"]
        await pilot.press("slash", *"r4-", "backspace", "backspace", "backspace")  # typed and erased: no change
        await settle(pilot)
        assert rebuilt == ["method miss", "everything"]
        await pilot.press(*"data:v1", "enter")  # Enter does not wait for the keys to pause
        assert rebuilt[-1] == "data v1…" and not app.main.filter_pending and app.focused is app.main.tree


@run_async
async def test_moving_fast_draws_the_details_once_where_the_cursor_rests(
    small: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each node the cursor passes is current at once (y copies the entry under the cursor), but the details are
    drawn once it rests (DETAILS_DEBOUNCE_S): before, every node passed drew five tabs."""
    shown: list[NodeRef] = []
    real = MainScreen.show_details

    def spy(self: MainScreen, ref: NodeRef) -> None:
        shown.append(ref)
        real(self, ref)

    monkeypatch.setattr(MainScreen, "show_details", spy)
    monkeypatch.setattr("rwkv_registry.tui.screens.main.DETAILS_DEBOUNCE_S", 3.0)  # longer than 5 key presses take
    app = RegistryApp(str(small), validate_on_start=False, keymap={})
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        shown.clear()
        await pilot.press(*["down"] * 4)  # registry → base → State → v1 → the State entry
        assert app.main.current.entry_id == STATE_ID and app.main.details_pending
        await pilot.press("y")
        assert app.clipboard.startswith("rwkv-cli state upload") and STATE_ID in app.clipboard
        await settle(pilot)
        assert shown == [app.main.current] and STATE_ID in tab_text(app, "info")


@run_async
async def test_tree_nodes_load_lazily(small: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(RegistryTree, "AUTO_EXPAND", 0)
    app = RegistryApp(str(small), validate_on_start=False, keymap={})
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        tree = app.main.tree
        assert [n.data.kind for n in tree.root.children] == ["base"]
        assert len(tree.root.children[0].children) == 0 and tree._entry_nodes == {}
        await pilot.press("down", "space")  # open the base: its methods appear, nothing deeper
        await settle(pilot)
        base = tree.root.children[0]
        assert [n.data.method for n in base.children] == ["state", "miss"]
        assert all(len(n.children) == 0 for n in base.children) and tree._entry_nodes == {}
        assert tree.select_entry(MISS_IDS[0])  # jumping to an entry loads just its branch
        assert sorted(tree._entry_nodes) == sorted(MISS_IDS)


@run_async
async def test_validation_marks_entries_and_counts_findings(broken: Path) -> None:
    expected = validate_registry(broken, use_cache=False)
    seen: list[object] = []
    app = RegistryApp(str(broken), keymap={})
    async with app.run_test(size=SIZE, message_hook=seen.append) as pilot:
        await settle(pilot)
        tree = app.main.tree
        assert app.main.validation_pid is not None and app.main.validation_note is None  # in a child process
        assert tree.statuses == {STATE_ID: "error", MISS_IDS[0]: "ok", MISS_IDS[1]: "error"}
        assert tree.root.label.plain.startswith("✗ ")
        status = str(app.main.status_bar.render())
        assert f"✗ {expected.counts['error']} errors" in status and "validated" in status
        seen = list({id(m): m for m in seen}.values())  # the hook sees a message at each node it reaches
        batches = [m for m in seen if isinstance(m, FilesChecked)]
        checked = [f for m in batches for f in m.files]
        finished = [i for i, m in enumerate(seen) if isinstance(m, ValidationFinished)]
        assert sorted(f.entry_id for f in checked) == sorted([STATE_ID, *MISS_IDS])  # each file once
        assert len(finished) == 1 and all(seen.index(m) < finished[0] for m in batches)
        assert {f.entry_id: f.status for f in checked}[MISS_IDS[1]] == "error"  # known before the report
        await goto(pilot, MISS_IDS[1])
        checks = tab_text(app, "checks")
        rel = miss_path(broken, "r4-b").relative_to(broken).as_posix()
        for f in expected.findings:
            if f.path == rel:
                assert f.code in checks
        assert "HSH001" in checks and "MIS011" in checks and "TRN001" not in checks
        await goto(pilot, MISS_IDS[0])
        assert "✓ no findings" in tab_text(app, "checks")


@run_async
async def test_validation_never_blocks_navigation(
    small: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, in_thread: None
) -> None:
    monkeypatch.setenv("RWKV_REGISTRY_CACHE_DIR", str(tmp_path / "fresh-cache"))  # every file gets read
    import rwkv_registry.engine.facts as facts

    release = threading.Event()
    real = facts.compute_facts

    def slow(path):  # a "huge file": hashing waits until the test lets it go
        release.wait(10)
        return real(path)

    monkeypatch.setattr(facts, "compute_facts", slow)
    app = RegistryApp(str(small), keymap={})
    async with app.run_test(size=SIZE) as pilot:
        main = app.main
        await wait_until(pilot, lambda: "validating 0/3 files" in str(main.status_bar.render()))
        assert main.validating
        assert set(main.tree.statuses.values()) == {"checking"}
        await pilot.press("down", "down", "down", "down")  # moving and reading details still work
        await wait_until(pilot, lambda: main.current.entry_id == STATE_ID and STATE_ID in tab_text(app, "info"))
        assert main.validating
        release.set()
        await settle(pilot)
        assert not main.validating and set(main.tree.statuses.values()) == {"ok"}


def _slow_reads(monkeypatch: pytest.MonkeyPatch) -> tuple[threading.Event, list[str]]:
    """Every weight file read waits until the test sets the event (a "huge file"); the paths read, in order."""
    import rwkv_registry.engine.facts as facts

    release = threading.Event()
    reads: list[str] = []
    real = facts.compute_facts

    def slow(path):
        reads.append(str(path))
        release.wait(10)
        return real(path)

    monkeypatch.setattr(facts, "compute_facts", slow)
    return release, reads


@run_async
async def test_validation_progress_reaches_every_file(broken: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from rwkv_registry.tui.widgets.status_bar import StatusBar

    states: list[str] = []
    real = StatusBar.set_validation
    monkeypatch.setattr(
        StatusBar, "set_validation", lambda self, state, counts: (states.append(state), real(self, state, counts))
    )
    app = RegistryApp(str(broken), keymap={})
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        main = app.main
        assert main.files_done == main.files_total == 3 and not main.validating
        progress = [s for s in states if s.startswith("validating ")]
        assert progress[-1] == "validating 3/3 files…" and states[-1] == "validated"
        counts = [int(s.split()[1].split("/")[0]) for s in progress if "/" in s]
        assert counts[0] == 0 and counts == sorted(counts)  # planned, then only forward


@run_async
async def test_a_batch_of_checked_files_is_drawn_once(small: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """2,000 weight files used to post 2,000 messages; now the worker sends batches (FileBatcher, at most one every
    0.1 s): a batch of 500 files gives the count of all 500 and one draw of the progress, not one per file."""
    from rwkv_registry.tui.validation import CheckedFile
    from rwkv_registry.tui.widgets.status_bar import StatusBar

    draws: list[str] = []
    real = StatusBar.set_validation
    monkeypatch.setattr(
        StatusBar, "set_validation", lambda self, state, counts: (draws.append(state), real(self, state, counts))
    )
    app = RegistryApp(str(small), validate_on_start=False, keymap={})
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        main = app.main
        main.run_id, main.validating, main.files_total = 7, True, 501
        main.post_message(FilesChecked(7, [CheckedFile(f"f{i}.pth", None, "ok") for i in range(500)]))
        main.post_message(FilesChecked(6, [CheckedFile("old-run.pth", STATE_ID, "error")]))  # an older run: ignored
        main.post_message(FilesChecked(7, [CheckedFile("s.pth", STATE_ID, "warning")]))
        await settle(pilot)
        assert main.files_done == 501 and draws == ["validating 500/501 files…", "validating 501/501 files…"]
        assert main.tree.statuses[STATE_ID] == "warning"


@run_async
async def test_validation_waits_while_the_ui_is_busy(
    small: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, in_thread: None
) -> None:
    """The validation threads start no file (and no rule step) while the App says its UI is busy (a key just
    pressed, the event loop late): their Python code would take the GIL from the UI thread. Once it is not,
    the run goes on and ends with every file."""
    import rwkv_registry.engine.facts as facts

    monkeypatch.setenv("RWKV_REGISTRY_CACHE_DIR", str(tmp_path / "fresh-cache"))  # every file gets read
    monkeypatch.setattr("rwkv_registry.tui.screens.main.YIELD_AT_MOST_S", 60.0)
    busy = [True]
    monkeypatch.setattr(RegistryApp, "ui_busy", lambda self: busy[0])
    reads: list[str] = []
    real = facts.compute_facts
    monkeypatch.setattr(facts, "compute_facts", lambda path: (reads.append(str(path)), real(path))[1])
    app = RegistryApp(str(small), keymap={})
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.main.validating)
        await pilot.pause(0.5)
        assert reads == [] and app.main.validating and app.main.report is None
        busy[0] = False
        await wait_until(pilot, lambda: app.main.report is not None)
        assert len(reads) == 3 and app.main.files_done == 3


@run_async
async def test_a_key_press_makes_the_ui_busy_for_a_moment(small: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import rwkv_registry.tui.app as app_module

    app = RegistryApp(str(small), validate_on_start=False, keymap={})
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await wait_until(pilot, lambda: not app.ui_busy())  # the first frames are drawn
        await pilot.press("down")
        assert app.ui_busy()
        monkeypatch.setattr(app_module, "INPUT_QUIET_S", 0.0)
        await wait_until(pilot, lambda: not app.ui_busy())


@run_async
async def test_validate_again_stops_the_running_validation(
    small: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, in_thread: None
) -> None:
    """`v` during a validation: the old run reads no further file, keeps what it read in the cache, and the new
    run's report is `validate`'s."""
    expected = validate_registry(small, use_cache=False).findings
    monkeypatch.setenv("RWKV_REGISTRY_CACHE_DIR", str(tmp_path / "fresh-cache"))  # every file gets read
    monkeypatch.setattr("os.cpu_count", lambda: 1)  # one reading thread per run: one file in flight
    release, reads = _slow_reads(monkeypatch)
    app = RegistryApp(str(small), keymap={})
    async with app.run_test(size=SIZE) as pilot:
        main = app.main
        await wait_until(pilot, lambda: "validating 0/3 files" in str(main.status_bar.render()) and reads)
        await pilot.press("v")
        await wait_until(pilot, lambda: len(reads) == 2)  # the new run reads its first file
        release.set()
        await settle(pilot)
        assert main.run_id == 2 and not main.validating and main.report is not None
        assert len(reads) == 4 and reads[0] == reads[1]  # the old run stopped after its one file, the new read 3
        assert main.report.findings == expected
        await pilot.press("v")  # everything read is cached: the old run's file too
        await settle(pilot)
        assert len(reads) == 4 and main.report.stats["cache_hits"] == 3


@run_async
async def test_quitting_stops_the_validation(
    small: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, in_thread: None
) -> None:
    expected = validate_registry(small, use_cache=False).findings
    monkeypatch.setenv("RWKV_REGISTRY_CACHE_DIR", str(tmp_path / "fresh-cache"))
    monkeypatch.setattr("os.cpu_count", lambda: 1)
    release, reads = _slow_reads(monkeypatch)
    app = RegistryApp(str(small), keymap={})
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: bool(reads))
        await pilot.press("q")
        await pilot.pause()
    assert app.return_code == 0 and len(reads) == 1
    release.set()  # the file being read finishes; the stopped run appends its facts to the cache's journal
    import time

    end = time.monotonic() + 10
    while not list((tmp_path / "fresh-cache").glob("*.journal.jsonl")) and time.monotonic() < end:
        time.sleep(0.01)
    assert len(reads) == 1  # no other file was started
    report = validate_registry(small)  # reads the two others, each once
    assert report.stats["cache_hits"] == 1 and len(reads) == 3 and report.findings == expected


def _slow_child(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> tuple[Path, Path]:
    """The validation process reads each weight file only once the returned release file exists (a "huge file"),
    one at a time, and logs each read to the returned file (proc_targets.slow_reads)."""
    from proc_targets import READS, RELEASE, slow_reads

    monkeypatch.setenv("RWKV_REGISTRY_CACHE_DIR", str(tmp_path / "fresh-cache"))  # every file gets read
    monkeypatch.setenv(READS, str(tmp_path / "reads"))
    monkeypatch.setenv(RELEASE, str(tmp_path / "release"))
    monkeypatch.setattr("rwkv_registry.tui.screens.main.VALIDATION_TARGET", slow_reads)
    return tmp_path / "reads", tmp_path / "release"


def _gone(pid: int | None, within: float = 0.0) -> bool:
    """The process has exited and was reaped (no zombie), now or ``within`` seconds (its validation thread stops it
    right after relaying its last message, or once the App has quit)."""
    import os
    import time

    assert pid is not None
    end = time.monotonic() + within
    while True:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        if time.monotonic() >= end:
            return False
        time.sleep(0.02)


@run_async
async def test_the_validation_process_keeps_navigation_free_and_v_replaces_it(
    small: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rules run in a child process: navigation works while it reads a "huge file"; `v` stops it (it starts
    no further file and has exited, reaped, before the new run's process starts: one writer of the cache), and
    the new run's report is `validate`'s, reading only what the old one did not."""
    from proc_targets import reads_of

    expected = validate_registry(small, use_cache=False).findings
    reads, release = _slow_child(monkeypatch, tmp_path)
    app = RegistryApp(str(small), keymap={})
    async with app.run_test(size=SIZE) as pilot:
        main = app.main
        await wait_until(pilot, lambda: "validating 0/3 files" in str(main.status_bar.render()) and reads_of(reads))
        first = main.validation_pid
        assert first is not None and set(main.tree.statuses.values()) == {"checking"}
        await pilot.press("down", "down", "down", "down")  # moving and reading details still work
        await wait_until(pilot, lambda: main.current.entry_id == STATE_ID and STATE_ID in tab_text(app, "info"))
        threading.Timer(0.3, release.touch).start()  # the old run's file finishes while it is being stopped
        await pilot.press("v")
        await wait_until(pilot, lambda: main.validation_pid != first, timeout=20)
        assert _gone(first)  # the old process exited (and was reaped) before the new one started
        await wait_until(pilot, lambda: main.report is not None and not main.validating, timeout=30)
        assert main.run_id == 2 and main.report.findings == expected
        done = reads_of(reads)  # the old run's one file, then the new run's two others: the first was cached
        assert len(done) == 3 and done[0] not in done[1:] and main.report.stats["cache_hits"] == 1
    assert _gone(main.validation_pid, within=5)


@run_async
async def test_the_validation_process_pauses_while_the_ui_is_busy(
    small: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While the App says its UI is busy, the child starts no file and no rule step (its CPU time and each batch's
    redraw would be the UI's); once it is not, the run goes on and ends with every file."""
    import time

    from proc_targets import reads_of

    reads, release = _slow_child(monkeypatch, tmp_path)
    release.touch()  # reads do not wait
    busy = [True]
    monkeypatch.setattr(RegistryApp, "ui_busy", lambda self: busy[0])
    app = RegistryApp(str(small), keymap={})
    async with app.run_test(size=SIZE) as pilot:
        main = app.main
        await wait_until(pilot, lambda: main.validation_pid is not None)
        await pilot.pause(1.5)  # three rule steps come before the first file: each waits up to 1 s
        assert reads_of(reads) == [] and main.files_done == 0 and main.report is None
        t = time.monotonic()
        busy[0] = False
        await wait_until(pilot, lambda: main.report is not None, timeout=30)
        assert len(reads_of(reads)) == 3 and main.files_done == 3 and time.monotonic() - t < 10


@run_async
async def test_quitting_stops_the_validation_process(
    small: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`q` while the child reads a file: the App exits without a traceback, the child has exited and been
    reaped by then (no orphan, no zombie) after caching the file it was reading, and started no other."""
    import threading

    from proc_targets import reads_of

    expected = validate_registry(small, use_cache=False).findings
    reads, release = _slow_child(monkeypatch, tmp_path)
    app = RegistryApp(str(small), keymap={})
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: bool(reads_of(reads)))
        pid = app.main.validation_pid
        threading.Timer(0.3, release.touch).start()  # the file being read finishes while the App quits
        await pilot.press("q")
        await pilot.pause()
    # app.run() waits for its worker threads (asyncio.run), run_test() does not: allow the thread's stop()
    assert app.return_code == 0 and _gone(pid, within=5) and len(reads_of(reads)) == 1
    report = validate_registry(small)  # reads the two others
    assert report.stats["cache_hits"] == 1 and report.findings == expected


@run_async
async def test_a_killed_validation_process_is_reported_not_awaited(
    small: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The child killed (SIGKILL: the OOM killer, a user): the status bar says the validation failed, a notification
    says why and what to do, no entry keeps the "being validated" mark; `v` validates again."""
    import os
    import signal

    from proc_targets import ignores_stop

    monkeypatch.setattr("rwkv_registry.tui.screens.main.VALIDATION_TARGET", ignores_stop)
    app = RegistryApp(str(small), keymap={})
    async with app.run_test(size=SIZE) as pilot:
        main = app.main
        await wait_until(pilot, lambda: main.validation_pid is not None and main.files_total == 1, timeout=20)
        os.kill(main.validation_pid, signal.SIGKILL)
        # App.notify posts a message: the notification comes a moment after the state that causes it
        await wait_until(pilot, lambda: not main.validating and len(app._notifications) > 0)
        assert str(main.status_bar.render()).startswith("validation failed") and _gone(main.validation_pid, 5)
        text = " ".join(n.message for n in app._notifications)
        assert "killed by SIGKILL" in text and "Press v to validate again" in text
        assert "checking" not in main.tree.statuses.values()
        monkeypatch.setattr("rwkv_registry.tui.screens.main.VALIDATION_TARGET", child_main)
        await pilot.press("v")
        await wait_until(pilot, lambda: main.report is not None, timeout=30)
        assert main.report.findings == validate_registry(small, use_cache=False).findings


@run_async
async def test_a_validation_process_that_cannot_import_the_rules_is_reported(
    small: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from proc_targets import broken_install

    monkeypatch.setattr("rwkv_registry.tui.screens.main.VALIDATION_TARGET", broken_install)
    app = RegistryApp(str(small), keymap={})
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(  # App.notify posts a message: the notification comes a moment after the state
            pilot,
            lambda: app.main.validation_pid is not None and not app.main.validating and len(app._notifications) > 0,
            timeout=20,
        )
        assert str(app.main.status_bar.render()).startswith("validation failed")
        text = " ".join(n.message for n in app._notifications)
        assert "The validation process failed" in text and "ModuleNotFoundError" in text
        assert _gone(app.main.validation_pid, within=5)


@run_async
async def test_where_no_process_starts_the_validation_runs_in_a_thread(
    broken: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A sandbox that forbids processes: the same report, from a thread, and a note in the log saying why."""

    def refuse(*_a: object, **_k: object) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr("rwkv_registry.tui.screens.main.ValidationProcess", refuse)
    app = RegistryApp(str(broken), keymap={})
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.main.report is not None)
        main = app.main
        assert main.validation_pid is None and "cannot start a validation process" in (main.validation_note or "")
        assert "Operation not permitted" in (main.validation_note or "")
        assert main.report.findings == validate_registry(broken, use_cache=False).findings
        assert main.tree.statuses == {STATE_ID: "error", MISS_IDS[0]: "ok", MISS_IDS[1]: "error"}


@run_async
async def test_validate_on_demand_picks_up_changes(small: Path) -> None:
    app = RegistryApp(str(small), keymap={})
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.main.tree.statuses[MISS_IDS[1]] == "ok"
        p = miss_path(small, "r4-b")
        data = bytearray(p.read_bytes())
        data[len(data) // 2] ^= 1
        p.write_bytes(bytes(data))
        await pilot.press("v")
        await settle(pilot)
        assert app.main.tree.statuses[MISS_IDS[1]] == "error"
        assert app.main.report is not None and not app.main.report.ok


@run_async
async def test_copy_usage_command(small: Path) -> None:
    app = RegistryApp(str(small), validate_on_start=False, keymap={})
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("y")  # on the registry node: nothing to copy
        assert app.clipboard == ""
        await goto(pilot, STATE_ID)
        await pilot.press("y")
        first, second = app.clipboard.splitlines()
        assert first == f"rwkv-cli state upload --api-url <URL> --file {BASE}/state/v1/{STATE_ID}.pth"
        assert "--profile g1k " in second + " " and "--sampling g1k-agent" in second and second.startswith("#")
        await goto(pilot, MISS_IDS[0])
        await pilot.press("y")
        first, second = app.clipboard.splitlines()
        assert first == (
            f"rwkv-cli adapter register --api-url <URL> --adapter-id {MISS_IDS[0]} "
            f"--file {BASE}/miss/v2/r4-a/adapter-final.pth"
        )
        assert "--profile g1k-think" in second and "--sampling g1k-agent" in second


@run_async
async def test_edit_train_opens_the_editor(small: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    record = tmp_path / "editor-args.txt"
    script = tmp_path / "fake_editor.py"
    script.write_text(
        "import sys, pathlib\n"
        f"pathlib.Path({str(record)!r}).write_text(sys.argv[1])\n"
        "p = pathlib.Path(sys.argv[1]); t = p.read_text().replace('--lr $LR', '--lr $LR --edited'); p.write_text(t)\n"
    )
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.setenv("EDITOR", f"{sys.executable} {script}")
    app = RegistryApp(str(small), validate_on_start=False, keymap={})
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await goto(pilot, MISS_IDS[0])
        assert "--edited" not in tab_text(app, "train")
        await pilot.press("e")
        await settle(pilot)
        assert Path(record.read_text()) == small.resolve() / BASE / "miss" / "v2" / "train.json"
        assert "--edited" in tab_text(app, "train")  # re-read because it changed
        assert app.main.report is not None  # and validated again


@run_async
async def test_unchanged_files_are_not_read_again(small: Path) -> None:
    app = RegistryApp(str(small), validate_on_start=False, keymap={})
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await goto(pilot, MISS_IDS[0])
        await goto(pilot, MISS_IDS[1])  # both files and their train.json read once
        reads = app.catalog.reads
        await pilot.press("up", "down", "up", "down")
        await settle(pilot)
        assert app.main.current.entry_id == MISS_IDS[1]
        assert app.catalog.reads == reads


@run_async
async def test_compare_two_entries(small: Path) -> None:
    app = RegistryApp(str(small), validate_on_start=False, keymap={})
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await goto(pilot, MISS_IDS[0])
        await pilot.press("c")
        assert app.main.marked == MISS_IDS[0] and f"compare: {MISS_IDS[0]}" in str(app.main.status_bar.render())
        await goto(pilot, MISS_IDS[1])
        await pilot.press("c")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, CompareScreen) and screen.comparison is not None
        cmp = screen.comparison
        changed = [(a.strip(), b.strip()) for op, a, b in cmp.train_rows if op == "~"]
        assert ('"group": "r4-a",', '"group": "r4-b",') in changed
        assert ('"lr": 2e-05,', '"lr": 3e-05,') in changed
        (exam,) = cmp.scores
        assert exam.delta == pytest.approx(45.5 - 50.0) and exam.same_day
        await pilot.press("escape")
        assert isinstance(app.screen, MainScreen) and app.main.marked is None


@run_async
async def test_toggle_dark_light(small: Path) -> None:
    app = RegistryApp(str(small), validate_on_start=False, keymap={})
    async with app.run_test(size=SIZE) as pilot:
        dark = app.current_theme.dark
        await pilot.press("d")
        assert app.current_theme.dark is not dark
        await pilot.press("d")
        assert app.current_theme.dark is dark


@run_async
async def test_bindings_can_be_remapped(small: Path) -> None:
    app = RegistryApp(str(small), validate_on_start=False, keymap={"registry.copy_usage": "x"})
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await goto(pilot, STATE_ID)
        await pilot.press("y")
        assert app.clipboard == ""
        await pilot.press("x")
        assert app.clipboard.startswith("rwkv-cli state upload")


def test_every_binding_has_an_id() -> None:
    from rwkv_registry.tui.keymap import BINDING_IDS
    from rwkv_registry.tui.widgets.filter_input import FilterInput

    for owner in (RegistryApp, MainScreen, CompareScreen, FilterInput):
        ids = [b.id for b in owner.BINDINGS]
        assert all(ids), owner
        assert set(ids) <= set(BINDING_IDS), owner


@run_async
async def test_command_palette_goes_to_an_entry_and_filters(small: Path) -> None:
    app = RegistryApp(str(small), validate_on_start=False, keymap={})
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+p")
        await pilot.press(*"r4-b")
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        assert app.main.current.entry_id == MISS_IDS[1]
        await pilot.press("ctrl+p")
        await pilot.press(*"errors")
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        assert app.main.query_one(Input).value == "is:error"


@run_async
async def test_command_palette_lists_only_the_best_go_to_hits(small: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Opening the palette does nothing per entry; a search lists at most GO_TO_LIMIT `Go to` hits, the best
    first (the palette lays out every hit it gets: 2,000 of them took seconds per key)."""
    from textual.command import CommandList, CommandPalette

    import rwkv_registry.tui.commands as commands

    monkeypatch.setattr(commands, "GO_TO_LIMIT", 2)
    app = RegistryApp(str(small), validate_on_start=False, keymap={})
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+p")
        await settle(pilot)
        assert isinstance(app.screen, CommandPalette)
        listed = app.screen.query_one(CommandList)
        await wait_until(pilot, lambda: listed.option_count > 0)
        prompts = [str(listed.get_option_at_index(i).prompt) for i in range(listed.option_count)]
        assert not any("Go to" in p for p in prompts)  # discovery: the actions only
        await pilot.press(*"go to")
        palette = app.screen

        def searched() -> bool:
            gather = "--textual-command-palette-gather-commands"
            return all(w.is_finished for w in app.workers if w.group == gather) and listed.option_count > 0

        await wait_until(pilot, searched)
        await settle(pilot)
        prompts = [str(listed.get_option_at_index(i).prompt) for i in range(listed.option_count)]
        assert sum("Go to" in p for p in prompts) == 2  # three entries match, two listed
        assert palette is app.screen
        await pilot.press("escape")
        await pilot.press("ctrl+p")
        listed = app.screen.query_one(CommandList)
        await pilot.press(*MISS_IDS[1])
        await wait_until(pilot, searched)
        await settle(pilot)
        prompts = [str(listed.get_option_at_index(i).prompt) for i in range(listed.option_count)]
        assert f"Go to {MISS_IDS[1]}" in prompts[0]  # the exact id is the best hit


@run_async
async def test_smoke_records_are_shown(small: Path) -> None:
    set_smoke(small, MISS_IDS[0], SMOKE)
    app = RegistryApp(str(small), validate_on_start=False, keymap={})
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await goto(pilot, MISS_IDS[0])
        checks = tab_text(app, "checks")
        assert "✓ PASS" in checks and "entry 14/20 vs base 9/20" in checks and "+6/−1 p=0.125" in checks


@run_async
async def test_empty_registry_and_missing_index(tmp_path: Path) -> None:
    from rwkv_registry.store.ops import init_registry

    init_registry(tmp_path / "empty", name="test/empty")
    app = RegistryApp(str(tmp_path / "empty"), keymap={})
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert visible_labels(app.main.tree) == ["! test/empty (0)"]  # GIT004: no git clone
        assert "No base yet" in tab_text(app, "info")
    (tmp_path / "nothing").mkdir()
    app = RegistryApp(str(tmp_path / "nothing"), keymap={})
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert "index.json is missing" in tab_text(app, "info")
        assert app.main.report is not None and not app.main.report.ok


@run_async
async def test_frozen_base_is_marked(small: Path) -> None:
    from rwkv_registry.store.ops import update_index

    update_index(small, lambda index: index["bases"][0].update(status="frozen"))
    app = RegistryApp(str(small), validate_on_start=False, keymap={})
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        label = visible_labels(app.main.tree)[1]  # the name gives way (…) to the tag and count in a narrow tree
        assert label.startswith(f"  · {BASE[:12]}") and label.endswith(" [frozen] (3)")
        await pilot.press("down")
        await settle(pilot)
        assert f"{BASE}  [frozen]" in tab_text(app, "info") and "never touched" in tab_text(app, "info")
        await goto(pilot, STATE_ID)
        assert f"{BASE} [frozen]" in tab_text(app, "info")


@run_async
async def test_text_from_index_json_is_never_read_as_markup(small: Path) -> None:
    """A description holding '[/]' crashed the first paint; '[bold]…[/]' was swallowed. Both show as written."""
    from rwkv_registry.store.ops import update_index

    def edit(index: dict) -> None:
        index["registry"]["description"] = "Weights [/] for agents"
        entry = next(e for e in index["entries"] if e["id"] == MISS_IDS[1])
        entry["description"] = "[bold red]not markup[/] and [/] too"

    update_index(small, edit)
    app = RegistryApp(str(small), validate_on_start=False, keymap={})
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert "Weights [/] for agents" in tab_text(app, "info")
        await walk_to(pilot, MISS_IDS[1])
        assert "[bold red]not markup[/] and [/] too" in tab_text(app, "info")


@run_async
async def test_a_long_base_name_gives_way_to_its_tag_and_count(small: Path) -> None:
    """In a narrow tree the name is cut with … so that [frozen] and the entry count stay visible."""
    from rwkv_registry.store.ops import add_base

    newer = BASE.replace("2026", "2027", 1)
    assert newer != BASE
    add_base(small, name=newer, source="BlinkDL/rwkv7-g1", sha256="c" * 64, size=1, arch=dict(TINY_ARCH))
    app = RegistryApp(str(small), validate_on_start=False, keymap={})
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        tree = app.main.tree
        lines = ["".join(seg.text for seg in tree.render_line(y)).rstrip() for y in range(3)]
        old = next(line for line in lines if "[frozen]" in line)
        assert old.endswith("[frozen] (3)") and "…" in old, lines


@run_async
async def test_a_narrow_terminal_stacks_the_tree_above_the_details(broken: Path) -> None:
    """Under 80 columns tree and details each get the full width; the status bar shortens its counts."""
    app = RegistryApp(str(broken), keymap={})
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, lambda: str(app.main.status_bar.render()).startswith("validated"))
        main = app.main
        errors = validate_registry(broken, use_cache=False).counts["error"]
        assert not main.has_class("-narrow")
        assert main.details.region.x > main.tree.region.x and main.details.region.y == main.tree.region.y - 1
        assert f"✗ {errors} error" in str(main.status_bar.render())
        await pilot.resize_terminal(56, 20)  # the full counts need 58 columns or more
        await settle(pilot)
        assert main.has_class("-narrow") and main.query_one(Footer).compact
        assert main.details.region.y > main.tree.region.bottom - 1 and main.details.region.width >= 54
        assert main.tree.region.width >= 54
        status = str(main.status_bar.render())
        assert f"✗{errors} " in status and "error" not in status and "entries" in status, status
        await pilot.resize_terminal(100, 30)
        await settle(pilot)
        assert not main.has_class("-narrow") and f"✗ {errors} error" in str(main.status_bar.render())
        assert not main.query_one(Footer).compact


@run_async
async def test_a_registry_deleted_while_browsing(small: Path) -> None:
    """`v` after the registry was deleted: "not validated" and why, no finding of an earlier run kept, every key
    still answers. It used to validate the vanished tree and list LAY010/LFS002 echoes as its findings."""
    import shutil

    app = RegistryApp(str(small), keymap={})
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        main = app.main
        await goto(pilot, MISS_IDS[0])
        shutil.rmtree(small)
        await pilot.press("v")
        await settle(pilot)
        status = str(main.status_bar.render())
        assert status.startswith("not validated") and "error" not in status and main.report is None
        assert main.tree.root.label.plain.startswith("· ") and not main.validating
        messages = [n.message for n in app._notifications]
        assert any("does not exist" in m and str(small) in m for m in messages)
        for key in ("down", "up", "1", "2", "3", "4", "5", "y", "c", "e", "/", "escape", "escape", "v"):
            await pilot.press(key)
        await settle(pilot)
        assert app.return_code is None
        assert str(main.status_bar.render()).startswith("not validated")


@run_async
async def test_a_write_in_progress_leaves_entries_unchecked(small: Path) -> None:
    """LAY013 is the whole report while another command writes: no entry was checked, so none is marked ✓."""
    from rwkv_registry.fs.atomic import registry_lock

    app = RegistryApp(str(small), keymap={})
    with registry_lock(small):
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            main = app.main
            assert [f.code for f in main.report.findings] == ["LAY013"]
            assert set(main.tree.statuses.values()) == {"unchecked"}
            assert main.tree.root.label.plain.startswith("✗ ")
            assert "LAY013" in tab_text(app, "checks")


@run_async
async def test_an_entry_marked_for_comparison_then_removed_from_the_index(small: Path) -> None:
    app = RegistryApp(str(small), keymap={})
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        main = app.main
        await goto(pilot, MISS_IDS[1])
        await pilot.press("c")
        edit_index(small, lambda d: d.update(entries=[e for e in d["entries"] if e["id"] != MISS_IDS[1]]))
        await pilot.press("v")
        await settle(pilot)
        assert main.marked is None and "compare:" not in str(main.status_bar.render())
        assert any(f"{MISS_IDS[1]} is no longer in index.json" in n.message for n in app._notifications)
        await goto(pilot, STATE_ID)
        await pilot.press("c")  # marks it: no comparison with the entry that is gone
        await settle(pilot)
        assert main.marked == STATE_ID and isinstance(app.screen, MainScreen)


@run_async
async def test_comparing_an_entry_that_left_the_index_says_so(small: Path) -> None:
    from textual.widgets import Static

    app = RegistryApp(str(small), validate_on_start=False, keymap={})
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.push_screen(CompareScreen(app.catalog, "gone", STATE_ID))
        await settle(pilot)
        body = app.screen.query_one("#compare-body", Static)
        assert str(body.content).startswith("✗ cannot compare: ") and "gone" in str(body.content)
        assert "`rwkv-registry list PATH` shows every entry id." in str(body.content)  # the error's hint
        await pilot.press("escape")
        assert isinstance(app.screen, MainScreen)


def test_tui_in_a_folder_of_a_registry_names_its_root(
    registry: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`rwkv-registry tui BASE_DIR` (or `tui` run inside a base directory) is refused as `validate` refuses it, with
    the command that opens the registry's root; it used to open a browser whose only finding suggested `validate`."""
    from regtools import TINY_BASE

    from rwkv_registry.cli.main import main

    opened: list[str] = []
    monkeypatch.setattr(RegistryApp, "run", lambda self, *a, **k: opened.append("run"))
    assert main(["tui", str(registry)]) == 0 and opened == ["run"]  # the root itself opens
    assert main(["tui", str(registry / TINY_BASE)]) == 2 and opened == ["run"]
    err = capsys.readouterr().err
    assert f"no index.json here; it lies inside the registry at {registry.resolve()}" in err, err
    assert f"hint: Browse the registry's root: rwkv-registry tui {registry.resolve()}" in err and "Traceback" not in err


@run_async
async def test_an_idle_browser_runs_no_heartbeat(small: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The heartbeat (ui_busy's check that the event loop runs late) ran 20 times a second for the App's whole
    life; only a validation asks ui_busy(), so it now runs while one does, and an idle browser sleeps."""
    beats: list[float] = []
    real = RegistryApp._beat

    def counted(self: RegistryApp) -> None:
        beats.append(0.0)
        real(self)

    monkeypatch.setattr(RegistryApp, "_beat", counted)
    app = RegistryApp(str(small), keymap={})
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.main.report is not None and not app.main.validating, timeout=30)
        beats.clear()
        await pilot.pause(0.6)
        assert beats == []  # 12 beats before
        assert app.beating is False
        await pilot.press("v")  # a validation runs: the heartbeat too
        assert app.beating is True
        await wait_until(pilot, lambda: app.main.report is not None and not app.main.validating, timeout=30)
        assert app.beating is False


@run_async
async def test_the_details_are_read_without_a_worker_per_draw(small: Path) -> None:
    """Every details draw made a Textual thread worker, whose state changes (pending, running, success) were three
    more messages for the UI thread to handle; one long-lived thread now reads them all, asleep when there is
    nothing to read, and each node's details still arrive."""
    from textual.worker import Worker

    changes: list[str] = []

    def hook(message: object) -> None:
        if isinstance(message, Worker.StateChanged):
            changes.append(message.worker.name)

    app = RegistryApp(str(small), validate_on_start=False, keymap={})
    async with app.run_test(size=SIZE, message_hook=hook) as pilot:
        await settle(pilot)
        changes.clear()
        for entry in (MISS_IDS[1], STATE_ID, MISS_IDS[0], MISS_IDS[1]):
            await goto(pilot, entry)
            assert app.main.current.entry_id == entry and entry in tab_text(app, "info")
        assert changes == []  # 12 before (3 per draw)
        assert [t.name for t in threading.enumerate()].count("rwkv-details") == 1


@run_async
async def test_a_details_renderer_that_raises_is_reported_and_the_next_node_still_drawn(
    small: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import rwkv_registry.tui.screens.main as main_module

    real = main_module.build_sections

    def flaky(cat: object, ref: NodeRef) -> object:
        if ref.entry_id == STATE_ID:
            raise RuntimeError("renderer bug")
        return real(cat, ref)  # type: ignore[arg-type]

    monkeypatch.setattr(main_module, "build_sections", flaky)
    app = RegistryApp(str(small), validate_on_start=False, keymap={})
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await goto(pilot, STATE_ID)
        await wait_until(pilot, lambda: any("renderer bug" in n.message for n in app._notifications))
        await goto(pilot, MISS_IDS[1])
        assert MISS_IDS[1] in tab_text(app, "info")


@run_async
async def test_an_idle_relay_wakes_a_few_times_a_second_and_a_key_wakes_it_at_once(
    small: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While the child reads a "huge file" (no message), the relay thread polled ui_busy() 20 times a second;
    it now sleeps until a message, a key press (which wakes it: the child pauses at once) or RELAY_IDLE_S (here
    10 s, so that only the key can have woken it), and quitting wakes it to stop the child."""
    import time

    from proc_targets import reads_of

    reads, release = _slow_child(monkeypatch, tmp_path)
    monkeypatch.setattr("rwkv_registry.tui.screens.main.RELAY_IDLE_S", 10.0, raising=False)
    monkeypatch.setattr("rwkv_registry.tui.app.LOOP_LAG_S", 60.0)  # a loaded machine's late loop is not "busy" here
    calls: list[float] = []
    real = RegistryApp.ui_busy

    def counted(self: RegistryApp) -> bool:
        if threading.current_thread() is not threading.main_thread():
            calls.append(time.monotonic())
        return real(self)

    monkeypatch.setattr(RegistryApp, "ui_busy", counted)
    told: list[tuple[bool, float]] = []
    from rwkv_registry.tui.validation_process import ValidationProcess

    real_busy = ValidationProcess.set_busy
    monkeypatch.setattr(
        ValidationProcess, "set_busy", lambda self, busy: (told.append((busy, time.monotonic())), real_busy(self, busy))
    )
    app = RegistryApp(str(small), keymap={})
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: bool(reads_of(reads)), timeout=30)
        # the UI is idle and the relay knows it (it told the child so, if it had said busy at the start)
        await wait_until(pilot, lambda: not app.ui_busy() and (not told or told[-1][0] is False), timeout=30)
        await pilot.pause(0.2)
        calls.clear()
        told.clear()
        await pilot.pause(2.0)
        assert len(calls) <= 1, len(calls)  # 40 before (one check every RELAY_EVERY_S)
        t = time.monotonic()
        await pilot.press("down")
        await wait_until(pilot, lambda: bool(told))
        assert told[0][0] is True and told[0][1] - t < 3.0  # woken by the key, not at its next poll
        pid = app.main.validation_pid
        await pilot.press("q")
        await pilot.pause()
    release.touch()
    assert _gone(pid, within=5)
