"""Validation that reports each weight file as soon as its facts are known.

:func:`live_validate` runs every rule of :func:`rwkv_registry.validate.validate_registry` and
returns the same :class:`~rwkv_registry.validate.Report`; on the way it calls ``on_file`` once per
weight file (cached files first, then each file as its hash completes, biggest first across
threads), so the TUI can mark entries before the whole run ends. ``should_stop`` is polled
between files: a newer run on demand makes the old one stop early.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any

from rwkv_registry.facts import FileFacts, compute_facts, stat_key
from rwkv_registry.rules import RULES
from rwkv_registry.validate import Report, Tree, Validator

FileCallback = Callable[[str, "FileFacts | OSError"], None]


class ValidationCancelled(Exception):
    """A newer validation replaced this one."""


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


class LiveValidator(Validator):
    """A :class:`Validator` whose fact collection reports every file as it completes."""

    def __init__(
        self,
        root: Path,
        *,
        on_file: FileCallback,
        on_plan: Callable[[int], object] | None = None,
        should_stop: Callable[[], bool] = lambda: False,
        use_cache: bool = True,
        workers: int | None = None,
    ) -> None:
        super().__init__(root, use_cache=use_cache, since=None)
        self.on_file = on_file
        self.on_plan = on_plan
        self.should_stop = should_stop
        self.workers = workers

    def _stop_check(self) -> None:
        if self.should_stop():
            raise ValidationCancelled

    def collect_facts(self, tree: Tree, weights: list[str]) -> dict[str, FileFacts | OSError]:
        """Cached facts first, then the other files hashed in parallel, each reported when done."""
        if self.on_plan is not None:
            self.on_plan(len(weights))
        results: dict[str, FileFacts | OSError] = {}
        todo: list[tuple[int, str, str, list[Any]]] = []
        hits = hashed = 0
        started = time.time_ns()  # before any file is looked at: the racy-clean rule of facts.gather_facts
        for rel in weights:
            self._stop_check()
            path = tree.files[rel]
            try:
                key = stat_key(os.stat(path), str(path))
            except OSError as e:
                results[rel] = e
                self.on_file(rel, e)
                continue
            cached = self.cache.get(str(path), key)
            if cached is not None:
                hits += 1
                results[rel] = cached
                self.on_file(rel, cached)
            else:
                todo.append((key[3], rel, path, key))
        todo.sort(reverse=True)

        def read(item: tuple[int, str, str, list[Any]]) -> FileFacts | OSError:
            if self.should_stop():
                return OSError("cancelled")
            try:
                return compute_facts(item[2])
            except OSError as e:
                return e

        if todo:
            n = self.workers or min(len(todo), os.cpu_count() or 1)
            with ThreadPoolExecutor(max_workers=n, thread_name_prefix="rwkv-validate") as pool:
                pending: dict[Future[FileFacts | OSError], tuple[int, str, str, list[Any]]] = {
                    pool.submit(read, item): item for item in todo
                }
                try:
                    while pending:
                        done, _ = wait(pending, return_when=FIRST_COMPLETED)
                        for fut in done:
                            _, rel, path, key = pending.pop(fut)
                            result = fut.result()
                            self._stop_check()
                            results[rel] = result
                            if isinstance(result, FileFacts):
                                hashed += result.size
                                self.cache.put_read(str(path), key, result, started)
                            self.on_file(rel, result)
                except ValidationCancelled:
                    for fut in pending:
                        fut.cancel()
                    raise
        self.stats.update({"bytes_hashed": hashed, "cache_hits": hits})
        return results


def live_validate(
    root: str | os.PathLike[str],
    *,
    on_file: FileCallback,
    on_plan: Callable[[int], object] | None = None,
    should_stop: Callable[[], bool] = lambda: False,
    use_cache: bool = True,
) -> Report:
    """Validate like :func:`~rwkv_registry.validate.validate_registry`, reporting each weight file as
    it completes. Raises :class:`ValidationCancelled` when ``should_stop()`` turns true."""
    path = Path(root).resolve()
    v = LiveValidator(path, on_file=on_file, on_plan=on_plan, should_stop=should_stop, use_cache=use_cache)
    v.run()
    order = {"error": 0, "warning": 1, "info": 2}
    v.findings.sort(key=lambda f: (order[str(f.severity)], f.path, f.code, f.message))
    return Report(str(root), v.findings, v.stats)
