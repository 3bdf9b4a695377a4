"""The browser: filter and tree on the left, details on the right, validation status at the bottom."""

from __future__ import annotations

import contextlib
import os
import shlex
import socket
import subprocess
import threading
import time
from collections.abc import Callable
from multiprocessing import connection
from typing import ClassVar

from textual import events, on, work
from textual.app import ComposeResult, SuspendNotSupported
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Footer, Header, Input, Tree
from textual.worker import Worker, WorkerState, get_current_worker

from rwkv_registry.catalog.entries import Catalog, EntryFilter, FindingIndex, NodeRef, status_of_findings, worst_status
from rwkv_registry.core.errors import RegistryError
from rwkv_registry.engine.validate import Report
from rwkv_registry.tui.latest_job import LatestJob
from rwkv_registry.tui.messages import (
    DetailsFailed,
    DetailsReady,
    FilesChecked,
    ValidationFailed,
    ValidationFinished,
    ValidationPlanned,
)
from rwkv_registry.tui.validation import (
    CheckedFile,
    FileBatcher,
    ValidationCancelled,
    live_validate,
    preliminary_status,
)
from rwkv_registry.tui.validation_process import ValidationProcess, child_main
from rwkv_registry.tui.widgets.details import TABS, DetailsPane, build_sections, render_checks
from rwkv_registry.tui.widgets.filter_input import FilterInput
from rwkv_registry.tui.widgets.registry_tree import RegistryTree
from rwkv_registry.tui.widgets.status_bar import StatusBar

NARROW = 80  # below this many columns the tree sits above the details instead of beside them
FILTER_DEBOUNCE_S = 0.15  # typed text filters the tree once the keys pause this long
DETAILS_DEBOUNCE_S = 0.08  # the details of the cursor's node are drawn once it rests this long
YIELD_AT_MOST_S = 1.0  # validation waits for a busy UI at most this long at a time, so that it always ends
RELAY_EVERY_S = 0.05  # while the UI is busy, the thread relaying the validation's messages checks this often…
RELAY_IDLE_S = 0.25  # … and otherwise at least this often (a message, or the UI turning busy, wakes it at once)
VALIDATE_IN_PROCESS = True  # validate in a child process (False: in a thread of this one, as where none starts)
VALIDATION_TARGET = child_main  # the child's function (tests replace it)


def _no_relay() -> None:
    """MainScreen._wake_relay while no validation process runs."""


DIED_HINT = "Press v to validate again; `rwkv-registry validate` shows the same findings."


class MainScreen(Screen[None]):
    """Browse, validate, copy usage commands, edit train.json, pick entries to compare."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("v", "validate", "Validate", id="registry.validate"),
        Binding("y", "copy_usage", "Copy", id="registry.copy_usage"),
        Binding("e", "edit_train", "Edit", id="registry.edit_train"),
        Binding("c", "compare", "Compare", id="registry.compare"),
        Binding("slash", "focus_filter", "Filter", id="registry.focus_filter"),
        Binding("escape", "clear_filter", "Clear filter", show=False, id="registry.clear_filter"),
        *[
            Binding(str(i), f"show_tab('{key}')", title, show=False, id=f"registry.tab_{key}")
            for i, (key, title) in enumerate(TABS, start=1)
        ],
    ]

    def __init__(self, catalog: Catalog, *, validate_on_start: bool = True) -> None:
        super().__init__()
        self.catalog = catalog
        self.validate_on_start = validate_on_start
        self.report: Report | None = None
        self.findings: FindingIndex | None = None
        self.validating = False
        self.run_id = 0
        self.files_total = 0
        self.files_done = 0
        self.marked: str | None = None
        self.current: NodeRef = NodeRef("registry")
        self.details_generation = 0
        self._filter_timer: Timer | None = None
        self._details_timer: Timer | None = None
        self._ui_busy: Callable[[], bool] = lambda: False  # RegistryApp.ui_busy (on_mount)
        self._process_lock = threading.Lock()  # one validation process at a time (one writer of the cache)
        self.validation_pid: int | None = None  # the last validation process started
        self.validation_note: str | None = None  # why validation runs in a thread (no process could start)
        self._wake_relay: Callable[[], None] = _no_relay  # wakes the relay thread (the UI turned busy, a new run)
        self._details_reader = LatestJob("rwkv-details", self._details_failed)  # one thread, asleep when idle

    # --- layout -------------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(id="body"):
            with Vertical(id="browse"):
                yield FilterInput(id="filter")
                yield RegistryTree(self.catalog, id="tree")
            yield DetailsPane(id="details")
        yield StatusBar(id="status")
        yield Footer()

    def on_resize(self, event: events.Resize) -> None:
        """Stack tree and details in a narrow terminal, where side by side both would be cramped."""
        narrow = event.size.width < NARROW
        self.set_class(narrow, "-narrow")
        self.query_one(Footer).compact = narrow  # no padding around the keys, so more of them fit

    @property
    def tree(self) -> RegistryTree:  # type: ignore[override]  # DOMNode.tree (a rich Tree of the DOM) is for logging
        """The browse tree."""
        return self.query_one(RegistryTree)

    @property
    def details(self) -> DetailsPane:
        """The details pane."""
        return self.query_one(DetailsPane)

    @property
    def status_bar(self) -> StatusBar:
        """The status bar."""
        return self.query_one(StatusBar)

    def on_mount(self) -> None:
        self._ui_busy = getattr(self.app, "ui_busy", self._ui_busy)
        if hasattr(self.app, "on_busy"):
            self.app.on_busy = lambda: self._wake_relay()
        self.tree.rebuild()
        self.tree.focus()
        self._update_entries_text()
        self.show_details((self.tree.cursor_node.data if self.tree.cursor_node else None) or NodeRef("registry"))
        if self.validate_on_start:
            self.call_after_refresh(self.action_validate)

    # --- details ------------------------------------------------------------------------------------
    @on(Tree.NodeHighlighted, "#tree")
    def _highlighted(self, event: Tree.NodeHighlighted[NodeRef]) -> None:
        """The cursor moved: it is the current node at once (for y, c, e), its details are drawn once the cursor
        rests for DETAILS_DEBOUNCE_S (an arrow key held down drew five tabs at every node it passed)."""
        if event.node.data is not None and event.node.data != self.current:
            self.current = event.node.data
            self.details_generation += 1  # details still being read for the node left are dropped
            if self._details_timer is not None:
                self._details_timer.stop()
            self._details_timer = self.set_timer(DETAILS_DEBOUNCE_S, self._show_current)

    @property
    def details_pending(self) -> bool:
        """True while the cursor's node waits for DETAILS_DEBOUNCE_S before its details are drawn."""
        return self._details_timer is not None

    def _show_current(self) -> None:
        self._details_timer = None
        self.show_details(self.current)

    def show_details(self, ref: NodeRef) -> None:
        """Show a node: checks at once (in memory), the rest from a worker thread (reads files)."""
        if self._details_timer is not None:
            self._details_timer.stop()
            self._details_timer = None
        self.current = ref
        self.details_generation += 1
        self._draw_checks()
        self.load_details(ref, self.details_generation)

    def load_details(self, ref: NodeRef, generation: int) -> None:
        """Read and render a node's details off the UI thread, in the screen's one details thread (a node still
        waiting there is replaced; one no longer current when its turn comes is skipped)."""

        def job() -> None:
            if generation != self.details_generation:
                return
            sections = build_sections(self.catalog, ref)
            if generation == self.details_generation:
                self.post_message(DetailsReady(ref, generation, sections))

        self._details_reader.submit(job)

    @property
    def details_loading(self) -> bool:
        """True while the details thread reads a node's details (or one waits for it)."""
        return not self._details_reader.idle

    def _details_failed(self, error: BaseException) -> None:  # in the details thread
        self.post_message(DetailsFailed(error))

    def on_details_failed(self, message: DetailsFailed) -> None:
        self.notify(f"details failed: {message.error}", severity="error", timeout=10, markup=False)

    def on_details_ready(self, message: DetailsReady) -> None:
        if message.generation == self.details_generation and message.ref == self.current:
            self.details.show(message.sections)

    def on_unmount(self) -> None:
        self._details_reader.close()
        self._wake_relay()  # quitting cancels the validation worker: its relay stops the child now

    def _node_status(self, ref: NodeRef) -> str:
        if ref.kind == "entry":
            return self.tree.statuses.get(ref.entry_id, "unchecked")
        if ref.kind == "registry":
            return self.tree.registry_status
        ids = [str(e.get("id")) for e in self.catalog.entries_under(ref)]
        return worst_status(self.tree.statuses.get(i, "unchecked") for i in ids) if ids else "ok"

    def _draw_checks(self) -> None:
        ref = self.current
        status = self._node_status(ref)
        progress = f"{self.files_done}/{self.files_total} files read" if self.validating else ""
        self.details.show({"checks": render_checks(self.catalog, ref, self.findings, status=status, progress=progress)})
        self.details.set_checks_status(status)

    # --- filter ---------------------------------------------------------------------------------------
    @on(Input.Changed, "#filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        """Typing filters once the keys pause for FILTER_DEBOUNCE_S (a burst of keys filters once, with the final
        text); clearing the box filters at once."""
        if self._filter_timer is not None:
            self._filter_timer.stop()
            self._filter_timer = None
        if event.value:
            self._filter_timer = self.set_timer(FILTER_DEBOUNCE_S, self._apply_filter)
        else:
            self._apply_filter()

    @property
    def filter_pending(self) -> bool:
        """True while typed text waits for FILTER_DEBOUNCE_S before it filters the tree."""
        return self._filter_timer is not None

    def _apply_filter(self) -> None:
        """Filter the tree with the box's text (nothing to do when it parses to the filter shown)."""
        if self._filter_timer is not None:
            self._filter_timer.stop()
            self._filter_timer = None
        flt = EntryFilter.parse(self.query_one(FilterInput).value)
        if flt != self.tree.filter:
            self.tree.rebuild(flt)
            self._update_entries_text()

    @on(Input.Submitted, "#filter")
    def _filter_submitted(self) -> None:
        self._apply_filter()  # Enter does not wait for the keys to pause
        self.tree.focus()

    def _update_entries_text(self) -> None:
        total = len(self.catalog.entries)
        flt = self.tree.filter
        if flt.active:
            text = f"{self.tree.shown_entries} of {total} entries ({flt.describe()})"
        else:
            text = f"{total} entr{'y' if total == 1 else 'ies'}"
        self.status_bar.set_entries(text)

    def action_show_tab(self, key: str) -> None:
        """Switch the details pane to a tab (keys 1–5)."""
        self.details.activate(key)

    def action_focus_filter(self) -> None:
        """Put the cursor in the filter box."""
        self.query_one(FilterInput).focus()

    def action_clear_filter(self) -> None:
        """Show everything again."""
        box = self.query_one(FilterInput)
        if box.value:
            box.value = ""

    def set_filter(self, text: str) -> None:
        """Set the filter box's text and filter at once (command palette)."""
        self.query_one(FilterInput).value = text
        self._apply_filter()

    # --- validation -----------------------------------------------------------------------------------
    def action_validate(self) -> None:
        """Validate the whole registry in a thread worker (a newer run replaces a running one)."""
        self._refresh_catalog()
        self.run_id += 1
        self.validating = True
        self.files_done = self.files_total = 0
        self.status_bar.set_validation("validating…", self.report.counts if self.report else None)
        for eid in [str(e.get("id")) for e in self.catalog.entries]:
            if self.tree.statuses.get(eid, "unchecked") == "unchecked":
                self.tree.set_status(eid, "checking")
        self.tree.refresh_groups()
        self._heartbeat(True)
        old_relay = self._wake_relay
        self.validate_worker(self.run_id)  # cancels the running one…
        old_relay()  # … whose relay thread then stops its child at once

    def _heartbeat(self, on: bool) -> None:
        """The App's heartbeat (ui_busy's congestion check) runs while a validation runs."""
        beat = getattr(self.app, "heartbeat", None)
        if beat is not None:
            beat(on)

    def _refresh_catalog(self) -> None:
        """Re-read index.json if it changed; an entry marked for comparison that it no longer has is unmarked."""
        if not self.catalog.refresh():
            return
        self.tree.rebuild()
        self._update_entries_text()
        if self.marked is not None and self.catalog.get_entry(self.marked) is None:
            gone, self.marked = self.marked, None
            self.status_bar.set_marked(None)
            self.notify(f"{gone} is no longer in index.json: unmarked.", severity="warning", markup=False)

    @work(thread=True, exclusive=True, exit_on_error=False, group="validate", name="validate")
    def validate_worker(self, run: int) -> None:
        """Run every rule in a child process (VALIDATE_IN_PROCESS; see validation_process): its Python code never
        competes with the UI thread for the GIL. This thread only starts it, relays its messages (holding the
        files checked while the UI is busy, and telling the child, which then pauses) and stops it; where no
        process can be started, the rules run here, as before."""
        worker = get_current_worker()
        by_path = {str(e.get("path")): e for e in self.catalog.entries}
        if VALIDATE_IN_PROCESS and self._validate_in_process(run, worker, by_path):
            return
        self._validate_in_thread(run, worker, by_path)

    def _validate_in_process(self, run: int, worker: Worker[None], by_path: dict[str, dict[str, object]]) -> bool:
        """False when no process could be started (the caller then validates in this thread). The previous run's
        process has exited by then (its worker stopped it): one writer of the validation cache at a time."""
        with self._process_lock:  # a newer run's worker waits here until the older one has stopped its child
            if worker.is_cancelled:
                return True
            try:
                proc = ValidationProcess(self.catalog.root, by_path, target=VALIDATION_TARGET)
            except Exception as e:  # no processes here (a sandbox that forbids them, EAGAIN): threads
                note = f"cannot start a validation process ({type(e).__name__}: {e}); validating in a thread"
                self.log.warning(note)
                self.validation_note = note
                return False
            self.validation_pid = proc.pid
            busy = self._ui_busy()  # as last told to the child: busy already, it pauses before its first step
            if busy:
                proc.set_busy(True)
            held: list[CheckedFile] = []  # files checked, not handed to the UI while it is busy
            wake_r, wake_w = socket.socketpair()  # the UI thread wakes this thread as it turns busy (App.on_busy)
            wake_r.setblocking(False)
            wake_w.setblocking(False)

            def wake() -> None:
                with contextlib.suppress(OSError):
                    wake_w.send(b"!")

            self._wake_relay = wake
            try:
                while not worker.is_cancelled:
                    # while busy, note soon that it no longer is; else sleep until a message, busy or RELAY_IDLE_S
                    ready = connection.wait([proc.conn, wake_r], RELAY_EVERY_S if busy else RELAY_IDLE_S)
                    if wake_r in ready:
                        with contextlib.suppress(OSError):
                            wake_r.recv(4096)
                    message = proc.receive(0) if proc.conn in ready else None
                    if busy != self._ui_busy():
                        busy = not busy
                        proc.set_busy(busy)
                    if message is not None and message[0] == "files":
                        held.extend(message[1])
                    if held and (not busy or (message is not None and message[0] != "files")):
                        self.post_message(FilesChecked(run, held))
                        held = []
                    if message is None:
                        continue
                    kind = message[0]
                    if kind == "plan":
                        self.post_message(ValidationPlanned(run, message[1]))
                    elif kind == "files":
                        pass
                    elif kind == "done":
                        self.post_message(ValidationFinished(run, message[1]))
                        break
                    elif kind == "failed":
                        self.post_message(ValidationFailed(run, message[1], message[2]))
                        break
                    else:  # crash, died: the browser says so instead of waiting forever
                        text = message[1] if kind == "died" else f"The validation process failed:\n{message[1]}"
                        self.post_message(ValidationFailed(run, text, DIED_HINT, state="validation failed"))
                        break
            finally:
                self._wake_relay = _no_relay
                proc.stop()
                wake_r.close()
                wake_w.close()
            return True

    def _validate_in_thread(self, run: int, worker: Worker[None], by_path: dict[str, dict[str, object]]) -> None:
        """Every rule in this thread, yielding to a busy UI (the path where processes cannot be started)."""
        batcher = FileBatcher(lambda files: self.post_message(FilesChecked(run, files)))

        def on_file(rel: str, facts: object) -> None:
            e = by_path.get(rel)
            status = preliminary_status(e, facts)  # type: ignore[arg-type]
            batcher.add(CheckedFile(rel, str(e.get("id")) if e else None, status))

        def on_plan(n: int) -> None:
            batcher.total = n
            self.post_message(ValidationPlanned(run, n))

        try:
            report = live_validate(
                self.catalog.root,
                on_file=on_file,
                on_plan=on_plan,
                should_stop=lambda: self._yield_to_ui(worker),
            )
        except ValidationCancelled:
            return
        except RegistryError as e:  # the registry was deleted (or replaced by a file) while the browser runs
            if not worker.is_cancelled:
                self.post_message(ValidationFailed(run, e.message, e.hint))
            return
        if not worker.is_cancelled:
            batcher.flush()
            self.post_message(ValidationFinished(run, report))

    def _yield_to_ui(self, worker: Worker[None]) -> bool:
        """The validation's ``should_stop`` (polled before and after each weight file) and pause between its rule
        steps: while the App's ``ui_busy()`` (a key pressed just now, the event loop congested), wait (up to
        YIELD_AT_MOST_S). The validation threads run Python code; each
        holds the GIL up to the 5 ms switch interval whenever the UI thread wants it back, and on a loaded machine
        a thread holding it may be descheduled too: a key press that needs a hundred turns of the event loop
        took seconds. True once the run is cancelled (a newer run, quitting)."""
        end = time.monotonic() + YIELD_AT_MOST_S
        while not worker.is_cancelled and self._ui_busy() and time.monotonic() < end:
            time.sleep(0.02)
        return worker.is_cancelled

    def on_validation_failed(self, message: ValidationFailed) -> None:
        if message.run != self.run_id:
            return
        self.validating = False
        self._heartbeat(False)
        self.report = self.findings = None  # what an earlier run found no longer holds
        self.tree.set_statuses({}, "unchecked")
        self.status_bar.set_validation(message.state, None)
        text = f"{message.message}\n{message.hint}" if message.hint else message.message
        self.notify(text, title="cannot validate", severity="error", timeout=10, markup=False)
        self._draw_checks()

    def on_validation_planned(self, message: ValidationPlanned) -> None:
        if message.run == self.run_id:
            self.files_total = message.files
            self._draw_progress()

    def on_files_checked(self, message: FilesChecked) -> None:
        """A batch of files checked (at most one every 0.1 s, see FileBatcher): marks, count and group marks once."""
        if message.run != self.run_id:
            return
        self.files_done += len(message.files)
        current = self.current.entry_id if self.current.kind == "entry" else None
        for f in message.files:
            if f.entry_id:
                self.tree.set_status(f.entry_id, f.status)
        self._draw_progress()
        self.tree.refresh_groups()
        if current is not None and any(f.entry_id == current for f in message.files):
            self._draw_checks()

    def _draw_progress(self) -> None:
        counts = self.report.counts if self.report else None
        self.status_bar.set_validation(f"validating {self.files_done}/{self.files_total} files…", counts)

    def on_validation_finished(self, message: ValidationFinished) -> None:
        if message.run != self.run_id:
            return
        self._refresh_catalog()
        self.validating = False
        self._heartbeat(False)
        self.report = message.report
        self.findings = FindingIndex(message.report.findings, self.catalog.entries, self.catalog.index_entries)
        # LAY013 (a write in progress) is the whole report: no entry was checked
        checked = not any(f.code == "LAY013" for f in message.report.findings)
        statuses = {
            str(e.get("id")): self.findings.status(str(e.get("id"))) if checked else "unchecked"
            for e in self.catalog.entries
        }
        self.tree.set_statuses(statuses, status_of_findings(message.report.findings))
        if self.tree.filter.flags:
            self.tree.rebuild()
            self._update_entries_text()
        self.status_bar.set_validation("validated", message.report.counts)
        self._draw_checks()
        self.load_details(self.current, self.details_generation)  # MiSS: now from the validation cache

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """A failed validation stops the progress display (the App shows the error)."""
        if event.state == WorkerState.ERROR and event.worker.group == "validate":
            self.validating = False
            self._heartbeat(False)
            self.status_bar.set_validation("validation failed", self.report.counts if self.report else None)

    # --- actions on the selected entry ----------------------------------------------------------------
    def _selected_entry(self, what: str) -> dict[str, object] | None:
        ref = self.current
        e = self.catalog.get_entry(ref.entry_id) if ref.kind == "entry" else None
        if e is None:
            self.notify(f"Select an entry (a weight file) to {what}.", severity="warning", markup=False)
        return e

    def action_copy_usage(self) -> None:
        """Copy the rwkv-cli command that uses the selected entry."""
        e = self._selected_entry("copy its usage command")
        if e is None:
            return
        usage = self.catalog.usage(e)
        self.app.copy_to_clipboard(usage.text)
        self.notify(usage.command, title="copied to the clipboard", markup=False)

    def action_edit_train(self) -> None:
        """Open the selected entry's (or data version's) train.json in $VISUAL / $EDITOR."""
        ref = self.current
        rel = None
        if ref.kind == "entry":
            e = self.catalog.get_entry(ref.entry_id)
            rel = Catalog.train_rel(e) if e else None
        elif ref.kind == "version":
            entries = self.catalog.entries_under(ref)
            rel = Catalog.train_rel(entries[0]) if entries else f"{ref.prefix}/train.json"
        if rel is None:
            self.notify("Select a data version or an entry to edit its train.json.", severity="warning", markup=False)
            return
        editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
        command = [*shlex.split(editor), str(self.catalog.root / rel)]
        try:
            with self.app.suspend():
                code = self._spawn(command)
        except SuspendNotSupported:  # headless or web: nothing to hand the terminal to
            code = self._spawn(command)
        if code is None:
            return
        if code != 0:
            self.notify(f"{command[0]} exited with status {code}", severity="warning", markup=False)
        self.show_details(self.current)
        self.action_validate()

    def _spawn(self, command: list[str]) -> int | None:
        try:
            return subprocess.run(command, check=False).returncode
        except OSError as e:
            self.notify(
                f"cannot start the editor {command[0]!r}: {e.strerror or e}. Set $EDITOR.",
                severity="error",
                markup=False,
            )
            return None

    def action_compare(self) -> None:
        """First press marks the selected entry, a press on another entry opens the comparison."""
        e = self._selected_entry("compare it")
        if e is None:
            return
        eid = str(e.get("id"))
        if self.marked is None or self.marked == eid:
            self.marked = None if self.marked == eid else eid
            self.status_bar.set_marked(self.marked)
            if self.marked:
                self.notify(f"{eid} marked; select another entry and press c to compare.", markup=False)
            return
        from rwkv_registry.tui.screens.compare import CompareScreen

        first, self.marked = self.marked, None
        self.status_bar.set_marked(None)
        self.app.push_screen(CompareScreen(self.catalog, first, eid))

    def go_to(self, entry_id: str) -> None:
        """Put the cursor on an entry (clearing a filter that hides it)."""
        if not self.tree.select_entry(entry_id):
            self.set_filter("")
            self.tree.rebuild(EntryFilter())
            self.tree.select_entry(entry_id)
        self.tree.focus()
