"""Child-process functions for the tests of the browser's validation process (``ValidationProcess(target=…)``).

They run in a fresh interpreter (``python -m rwkv_registry.tui.validation_process``, which imports them by name),
where a test's monkeypatching does not reach: what they need comes from environment variables the test sets before
the process starts."""

from __future__ import annotations

import os
import sys
import time
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from rwkv_registry.tui.validation_process import child_main

READS = "RWKV_TEST_READS"  # a file: one line per weight file the child starts reading
RELEASE = "RWKV_TEST_RELEASE"  # a file: each read waits until it exists


def slow_reads(root: str, by_path: dict[str, dict[str, Any]], use_cache: bool, conn: Connection) -> None:
    """``child_main`` with one reading thread, whose every weight file read is logged to $RWKV_TEST_READS and
    waits (up to 30 s) for the file $RWKV_TEST_RELEASE (a "huge file")."""
    import rwkv_registry.engine.facts as facts

    real = facts.compute_facts
    reads, release = Path(os.environ[READS]), Path(os.environ[RELEASE])

    def slow(path: Any) -> Any:
        with open(reads, "a") as f:
            f.write(f"{path}\n")
        end = time.monotonic() + 30
        while not release.exists() and time.monotonic() < end:
            time.sleep(0.01)
        return real(path)

    facts.compute_facts = slow  # type: ignore[assignment]
    os.cpu_count = lambda: 1  # one file in flight at a time
    child_main(root, by_path, use_cache, conn)


def broken_install(root: str, by_path: dict[str, dict[str, Any]], use_cache: bool, conn: Connection) -> None:
    """``child_main`` where the rules cannot be imported (a broken install)."""
    sys.modules["rwkv_registry.tui.validation"] = None  # type: ignore[assignment]  # import raises ImportError
    child_main(root, by_path, use_cache, conn)


def ignores_stop(root: str, by_path: dict[str, dict[str, Any]], use_cache: bool, conn: Connection) -> None:
    """A child that never answers (stuck in C code, say): only terminate() ends it."""
    conn.send(("plan", 1))
    while True:
        time.sleep(1)


def reads_of(path: Path) -> list[str]:
    """The lines $RWKV_TEST_READS holds (none yet: [])."""
    try:
        return path.read_text().splitlines()
    except FileNotFoundError:
        return []


def then_modules(root: str, by_path: dict[str, dict[str, Any]], use_cache: bool, conn: Connection) -> None:
    """``child_main``, then ``("modules", names)``: the top-level packages the child imported by its end."""
    child_main(root, by_path, use_cache, conn)
    conn.send(("modules", sorted({name.split(".")[0] for name in sys.modules})))
