"""``rwkv-registry smoke PATH ENTRY_ID --base-file BASE.pth``: the command's handler.

Progress (hashing, loading, each pass) goes to stderr; the report to stdout, as a rich text
report or, with ``--format json``, as JSON valid against ``schemas/smoke-report.schema.json``.
``--record`` appends a smoke record to the entry in ``index.json`` through the core's atomic write
path (the index must still validate, else nothing is written); an inconclusive run is not recorded. Exit
codes: 0 pass, 1 the entry is broken (see :mod:`~rwkv_registry.model.smoke.report`), 2 usage errors (unknown
entry, missing or wrong base file, unreadable case file) and an inconclusive run (the base alone fails the same
way: a harness or format problem, not the entry).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from rwkv_registry.cli.main import check_think_tokens
from rwkv_registry.core.textsafe import json_text
from rwkv_registry.model.smoke.evaluate import Settings, run_smoke
from rwkv_registry.model.smoke.report import append_record, build_report, recordable, render, smoke_record


class RichProgress:
    """A transient rich progress bar on stderr (silent when stderr is not a terminal)."""

    def __init__(self, console: Any) -> None:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self._progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
            transient=True,
            disable=not console.is_terminal,
        )
        self._task: Any = None

    def __enter__(self) -> RichProgress:
        self._progress.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._progress.__exit__(*exc)

    def phase(self, description: str, total: int) -> None:
        """Replace the current bar with a new one."""
        if self._task is not None:
            self._progress.remove_task(self._task)
        self._task = self._progress.add_task(description, total=total)

    def advance(self, n: int) -> None:
        """Advance the current bar."""
        if self._task is not None:
            self._progress.advance(self._task, n)


def cmd_smoke(args: argparse.Namespace) -> int:
    """Run the smoke evaluation of ``args.entry_id`` and print (and optionally record) the report."""
    from rich.console import Console
    from rich.markup import escape

    think = getattr(args, "think_tokens", 256)
    check_think_tokens(think)
    err = Console(stderr=True, highlight=False)
    with RichProgress(err) as progress:
        result = run_smoke(
            args.path,
            args.entry_id,
            args.base_file,
            device=args.device,
            cases_path=args.cases,
            settings=Settings(think_tokens=think),
            progress=progress,
            max_cpu_minutes=getattr(args, "max_cpu_minutes", None),
            note=lambda m: err.print(f"[yellow]note:[/] {escape(m)}"),
        )
    report = build_report(result)
    record = args.record and recordable(report)
    if record:
        append_record(args.path, args.entry_id, smoke_record(report))
    if args.format == "json":
        sys.stdout.write(json_text(report) + "\n")  # exact JSON, terminal controls escaped
    else:
        out = Console(highlight=False)
        render(report, out)
        if record:
            out.print(f"[dim]smoke record appended to {args.entry_id} in index.json[/]")
    if args.record and not record:
        err.print(
            f"[yellow]note:[/] no smoke record appended to {escape(args.entry_id)}: an inconclusive run says "
            "nothing about the entry (the base alone fails the same way); fix the harness or format and run again"
        )
    return int(report["exit_code"])
