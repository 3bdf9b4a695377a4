"""The browser's validation in a separate process, so that the UI thread never waits for the GIL.

The validation is Python code (the walk, the schema checks, the pickle reader): run in threads of the browser's
own process, it took the GIL from the UI thread at every turn of its event loop, and typing a filter on a loaded
machine took 10 s for 0.4 s of UI work. :class:`ValidationProcess` starts :func:`child_main` with the ``spawn``
start method (a fresh interpreter: forking a process that runs Textual's threads is unsafe), which runs
:func:`~rwkv_registry.tui.validation.live_validate` and sends back over a pipe, in this order: ``("plan", n)``,
``("files", [CheckedFile, …])`` in :class:`~rwkv_registry.tui.validation.FileBatcher`'s batches, then one of
``("done", Report)``, ``("failed", message, hint)`` (the registry is gone: the
:class:`~rwkv_registry.errors.RegistryError` of ``validate``) or ``("crash", text)`` (anything else, an import
error included). The parent reads them in a thread (:meth:`ValidationProcess.receive`); a process that dies
without a last message (killed, out of memory) reads as ``("died", text)``.

While the browser's UI is busy (a key pressed within 0.5 s, its event loop late: ``RegistryApp.ui_busy``), the
parent says so (:meth:`ValidationProcess.set_busy`) and the child starts no further file and no further rule step,
waiting up to :data:`YIELD_AT_MOST_S` at a time: on a loaded machine its CPU time is the UI's, and each batch of
results it sends costs the UI a redraw (bench/tui_bench.py: 50 cursor moves took 51 s at 2,000 entries with two
CPU hogs when it did not pause, 2.8 s typing a filter).

Stopping (:meth:`ValidationProcess.stop`: a newer run, quitting) sends ``stop``; the child starts no further file
and no further rule step, appends what it read to the validation cache's journal (the files being read finish)
and exits. One that does not within :data:`STOP_GRACE_S` is terminated, then killed; either way it is joined (no
zombie). The child also stops when its pipe closes (the browser died). The cache has one writer at a time: a new
run's process is started only after the old one has exited. The cache file itself is only ever replaced
atomically and the journal is appended one line per write (a line cut short is skipped when read), so a killed
child leaves no half-written cache.

This module imports no textual and no torch; the child imports ``rwkv_registry.tui.validation`` (the core's
rules) only once its output is silenced, so that an import error is reported over the pipe, never printed over
the browser's screen.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
import time
import traceback
from collections.abc import Callable
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, Literal

START_METHOD: Literal["spawn", "forkserver"] = (
    "spawn"  # a fresh interpreter: fork next to Textual's threads could copy a held lock
)
STOP_GRACE_S = 2.0  # a stopped child that has not exited by then is terminated (then killed)
YIELD_AT_MOST_S = 1.0  # the child waits for a busy UI at most this long at a time, so that it always ends
Message = tuple[Any, ...]


def child_main(root: str, by_path: dict[str, dict[str, Any]], use_cache: bool, conn: Connection) -> None:
    """The child process: validate ``root`` and send the results over ``conn`` (see the module's doc)."""
    _silence()
    stop = threading.Event()
    idle = threading.Event()  # cleared while the browser's UI is busy
    idle.set()

    def listen() -> None:  # "stop" from the parent, or the pipe closed (the parent died): stop
        try:
            while (message := conn.recv()) != "stop":
                if isinstance(message, tuple) and message[:1] == ("busy",):
                    idle.clear() if message[1] else idle.set()
        except (EOFError, OSError):
            pass
        stop.set()
        idle.set()

    def should_stop() -> bool:  # polled before and after each file and before each rule step
        idle.wait(YIELD_AT_MOST_S)
        return stop.is_set()

    threading.Thread(target=listen, name="rwkv-validate-stop", daemon=True).start()

    def send(message: Message) -> None:
        try:
            conn.send(message)
        except (OSError, ValueError):  # the parent is gone or stopped reading: nothing more to say
            stop.set()

    try:
        from rwkv_registry.errors import RegistryError
        from rwkv_registry.tui.validation import (
            CheckedFile,
            FileBatcher,
            ValidationCancelled,
            live_validate,
            preliminary_status,
        )
    except BaseException:  # an install that cannot import the rules: say so, do not hang
        send(("crash", _last_lines(traceback.format_exc())))
        return

    batcher = FileBatcher(lambda files: send(("files", files)))

    def on_file(rel: str, facts: object) -> None:
        e = by_path.get(rel)
        batcher.add(CheckedFile(rel, str(e.get("id")) if e else None, preliminary_status(e, facts)))  # type: ignore[arg-type]

    def on_plan(n: int) -> None:
        batcher.total = n
        send(("plan", n))

    try:
        report = live_validate(root, on_file=on_file, on_plan=on_plan, should_stop=should_stop, use_cache=use_cache)
    except ValidationCancelled:
        return
    except RegistryError as e:  # the registry was deleted (or replaced by a file) while the browser runs
        send(("failed", e.message, e.hint))
        return
    except BaseException:  # a bug in a rule: the browser shows it, the process exits
        send(("crash", _last_lines(traceback.format_exc())))
        return
    if not stop.is_set():
        batcher.flush()
        send(("done", report))


def _silence() -> None:
    """The child shares the browser's terminal: nothing it prints (a warning, a traceback) may reach the screen,
    and ctrl+c reaches the browser, which stops the child itself."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.dup2(null, 2)
        os.close(null)
    except OSError:
        pass


def _last_lines(text: str, n: int = 4) -> str:
    return "\n".join(text.strip().splitlines()[-n:])


def describe_exit(code: int | None) -> str:
    """Why a child process ended without its report, in words."""
    if code is None:
        return "it stopped answering"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        extra = " (out of memory, or killed by hand)" if -code == signal.SIGKILL else ""
        return f"it was killed by {name}{extra}"
    return f"it exited with status {code}"


def prepare() -> None:
    """Start multiprocessing's resource tracker (a small helper process every ``spawn`` start needs) now, before
    the App runs: starting it hands it ``sys.stderr``'s file descriptor, and while the App runs ``sys.stderr`` is
    Textual's capture, whose descriptor is -1, so the first validation process failed to start ("bad value(s) in
    fds_to_keep"). Errors are left to :class:`ValidationProcess`, which then fails to start (threads instead)."""
    from multiprocessing import resource_tracker

    try:
        resource_tracker.ensure_running()
    except Exception:  # no processes here: the validation runs in a thread
        pass


class ValidationProcess:
    """One validation run in a child process (see the module's doc). ``target`` replaces :func:`child_main`
    (tests). Raises what starting a process raises (OSError, …) where processes cannot be started."""

    def __init__(
        self,
        root: str | os.PathLike[str],
        by_path: dict[str, dict[str, Any]],
        *,
        use_cache: bool = True,
        target: Callable[..., None] = child_main,
        method: Literal["spawn", "forkserver"] = START_METHOD,
    ) -> None:
        ctx = (
            multiprocessing.get_context("forkserver")
            if method == "forkserver"
            else multiprocessing.get_context("spawn")
        )
        self.conn, child_conn = ctx.Pipe(duplex=True)
        self.finished = False  # the last message (done, failed, crash, died) was received
        try:
            self.process = ctx.Process(
                target=target,
                args=(str(Path(root)), by_path, use_cache, child_conn),
                name="rwkv-registry-validate",
                daemon=True,  # terminated by multiprocessing's exit handler if the browser exits without stop()
            )
            self.process.start()
        except BaseException:
            self.conn.close()
            raise
        finally:
            child_conn.close()  # the child holds its own copy: EOF here once the child is gone

    @property
    def pid(self) -> int | None:
        return self.process.pid

    def receive(self, timeout: float) -> Message | None:
        """The child's next message, waiting up to ``timeout`` s (None: nothing yet); ``("died", text)`` once the
        child is gone without its last message. Waits in the pipe's poll, without the GIL."""
        if self.finished:
            return None
        try:
            if not self.conn.poll(timeout):
                return None
            message: Message = self.conn.recv()
        except (EOFError, OSError):
            self.process.join(1.0)  # the pipe closed: the process is exiting
            self.finished = True
            return ("died", f"The validation process ended without a report: {describe_exit(self.process.exitcode)}.")
        except Exception as e:  # a message that cannot be unpickled (a version mix-up)
            self.finished = True
            return ("died", f"The validation process sent an unreadable message: {e}.")
        if message and message[0] in ("done", "failed", "crash"):
            self.finished = True
        return message

    def set_busy(self, busy: bool) -> None:
        """Tell the child that the browser's UI is busy (True: it starts no further file and no further rule step,
        waiting up to :data:`YIELD_AT_MOST_S` at a time) or no longer (False)."""
        try:
            self.conn.send(("busy", busy))
        except (OSError, ValueError):  # the child is gone: receive() says so
            pass

    def stop(self, grace: float = STOP_GRACE_S) -> int | None:
        """Ask the child to stop, wait up to ``grace`` s (reading what it still sends, so that it never blocks on a
        full pipe), then terminate it, then kill it; always join it. Returns its exit code."""
        p = self.process
        try:
            if p.is_alive():
                try:
                    self.conn.send("stop")
                except (OSError, ValueError):
                    pass
                end = time.monotonic() + grace
                while p.is_alive() and time.monotonic() < end:
                    try:
                        if self.conn.poll(0.05):
                            self.conn.recv()
                    except (EOFError, OSError):
                        p.join(max(0.0, end - time.monotonic()))
                    except Exception:  # an unreadable message while draining: nothing to keep
                        pass
                if p.is_alive():
                    p.terminate()
                    p.join(1.0)
                if p.is_alive():
                    p.kill()
            p.join()
            return p.exitcode
        finally:
            self.conn.close()
