"""Validation that reports each weight file as soon as its facts are known.

:func:`live_validate` runs every rule of :func:`rwkv_registry.engine.validate.validate_registry` and
returns the same :class:`~rwkv_registry.engine.validate.Report`; on the way it calls ``on_file`` once per
weight file (cached files first, then each file as its hash completes, biggest first across
threads), so the TUI can mark entries before the whole run ends. ``should_stop`` is polled
between files and before each rule step: a newer run on demand makes the old one stop early. The browser runs
it in a child process (:mod:`rwkv_registry.tui.validation_process`), or in a thread where it cannot start one.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from rwkv_registry.checks.catalogue import RULES
from rwkv_registry.engine.facts import FileCallback, FileFacts, GatherCancelled, gather_facts
from rwkv_registry.engine.validate import Report, Snapshot, Tree, Validator, before_validation, run_validator

ValidationCancelled = GatherCancelled  # a newer validation (or quitting) stopped this one
PROGRESS_EVERY_S = 0.1  # files checked are handed to the UI thread at most this often (and with the last file)


class CheckedFile(NamedTuple):
    """One weight file whose facts are known: its registry-relative path, the entry recording it, its status."""

    rel: str
    entry_id: str | None
    status: str


class FileBatcher:
    """Collects :class:`CheckedFile` results in the validation thread and hands them on in batches: the first file
    at once, then everything checked since at most every ``every`` seconds, and the batch with the file that
    completes the planned count (:attr:`total`) at once. 2,000 files are a few dozen UI messages, not 2,000: on a
    loaded machine each message costs the UI thread a turn of its event loop and a wait for the GIL.
    :meth:`flush` hands on what is left (a run whose plan was not known)."""

    def __init__(
        self,
        send: Callable[[list[CheckedFile]], object],
        *,
        every: float = PROGRESS_EVERY_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.send = send
        self.every = every
        self.clock = clock
        self.total: int | None = None
        self.seen = 0
        self.pending: list[CheckedFile] = []
        self.sent_at: float | None = None

    def add(self, item: CheckedFile) -> None:
        """One more file; sends the batch when it is due."""
        self.pending.append(item)
        self.seen += 1
        now = self.clock()
        last = self.total is not None and self.seen >= self.total
        if last or self.sent_at is None or now - self.sent_at >= self.every:
            self._send(now)

    def flush(self) -> None:
        """Send what has not been sent yet (nothing when nothing is pending)."""
        if self.pending:
            self._send(self.clock())

    def _send(self, now: float) -> None:
        batch, self.pending = self.pending, []
        self.sent_at = now
        self.send(batch)


def preliminary_status(entry: dict[str, Any] | None, facts: FileFacts | OSError) -> str:
    """An entry's status from its file alone (hash and size against index.json, content rules).

    The final report may add findings (base shapes, train.json, SHA256SUMS): this is what is
    known as soon as the file is read.
    """
    if isinstance(facts, OSError):
        return "error"
    severities = {str(RULES[f["code"]].severity) for f in facts.findings if f.get("code") in RULES}
    if entry is not None:
        rec = entry["file"] if isinstance(entry.get("file"), dict) else {}
        if rec.get("sha256") != facts.sha256 or rec.get("size") != facts.size:
            severities.add("error")
        if facts.method is not None and facts.method != entry.get("method"):
            severities.add("error")
    return "error" if "error" in severities else "warning" if "warning" in severities else "ok"


class LiveSnapshot(Snapshot):
    """The local tree, whose weight files' facts are reported each as it completes (cached ones first) and whose
    reading stops when ``should_stop()`` turns true: the walk and the scheduling are
    :func:`~rwkv_registry.engine.facts.gather_facts`', as for ``validate``."""

    def __init__(
        self,
        root: Path,
        *,
        on_file: FileCallback,
        on_plan: Callable[[int], object] | None = None,
        should_stop: Callable[[], bool] = lambda: False,
        workers: int | None = None,
    ) -> None:
        super().__init__(root)
        self.on_file = on_file
        self.on_plan = on_plan
        self.should_stop = should_stop
        self.workers = workers

    def facts(self, tree: Tree, weights: list[str], v: Validator) -> dict[str, FileFacts | OSError]:
        """Cached facts first, then the other files read in parallel, each reported when done. A stopped run
        keeps what it read (appended to the cache's journal), so a later run reads only the rest."""
        if self.on_plan is not None:
            self.on_plan(len(weights))
        try:
            facts, stats = gather_facts(
                {r: tree.files[r] for r in weights},
                v.cache,
                workers=self.workers,
                on_file=self.on_file,
                should_stop=self.should_stop,
            )
        except GatherCancelled:
            v.cache.save_additions()  # the run that replaced this one may be writing the cache file
            raise
        v.stats.update(stats)
        return facts


def live_validator(
    root: Path,
    *,
    on_file: FileCallback,
    on_plan: Callable[[int], object] | None = None,
    should_stop: Callable[[], bool] = lambda: False,
    between_steps: Callable[[], object] = lambda: None,
    use_cache: bool = True,
    workers: int | None = None,
) -> Validator:
    """A :class:`Validator` of ``root`` that reports every weight file as it completes (:class:`LiveSnapshot`) and
    can be stopped: before each rule step ``between_steps()`` is called, then, once ``should_stop()`` is true, what
    was read is kept (appended to the cache's journal) and :class:`ValidationCancelled` raised."""

    def before_step(v: Validator) -> None:
        between_steps()
        if should_stop():
            v.cache.save_additions()
            raise ValidationCancelled

    snapshot = LiveSnapshot(root, on_file=on_file, on_plan=on_plan, should_stop=should_stop, workers=workers)
    return Validator(root, use_cache=use_cache, since=None, snapshot=snapshot, before_step=before_step)


def live_validate(
    root: str | os.PathLike[str],
    *,
    on_file: FileCallback,
    on_plan: Callable[[int], object] | None = None,
    should_stop: Callable[[], bool] = lambda: False,
    between_steps: Callable[[], object] = lambda: None,
    use_cache: bool = True,
) -> Report:
    """Validate like :func:`~rwkv_registry.engine.validate.validate_registry` (the same checks first, the same report
    order), reporting each weight file as it completes; ``between_steps()`` is called before each rule step.
    Raises :class:`ValidationCancelled` when ``should_stop()`` turns true (polled between files and rule steps), and
    :class:`~rwkv_registry.core.errors.UsageError` when ``root`` is no directory (deleted while the browser runs)."""
    path, early = before_validation(root)
    if early is not None:
        return early
    v = live_validator(
        path,
        on_file=on_file,
        on_plan=on_plan,
        should_stop=should_stop,
        between_steps=between_steps,
        use_cache=use_cache,
    )
    return run_validator(v, root)
