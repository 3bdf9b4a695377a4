"""The browser's validation in a separate process, so that the UI thread never waits for the GIL.

The validation is Python code (the walk, the schema checks, the pickle reader): run in threads of the browser's
own process, it took the GIL from the UI thread at every turn of its event loop, and typing a filter on a loaded
machine took 10 s for 0.4 s of UI work. :class:`ValidationProcess` starts ``python -m
rwkv_registry.tui.validation_process FD`` (``sys.executable``; :func:`main`): a fresh interpreter, since forking a
process that runs Textual's threads is unsafe, which imports this module and the rules only, never the browser's
main module (multiprocessing's ``spawn`` imported it again in the child, so a script embedding the App without an
``if __name__ == "__main__":`` guard ran its top level twice). FD is the child's end of a socket pair carrying
:class:`multiprocessing.connection.Connection` messages; the first, from the browser, names the function to run
(:func:`child_main`), which runs :func:`~rwkv_registry.tui.validation.live_validate` and sends back, in this
order: ``("plan", n)``, ``("files", [CheckedFile, …])`` in :class:`~rwkv_registry.tui.validation.FileBatcher`'s
batches, then one of ``("done", Report)``, ``("failed", message, hint)`` (the registry is gone: the
:class:`~rwkv_registry.core.errors.RegistryError` of ``validate``) or ``("crash", text)`` (anything else, an import
error included). The parent reads them in a thread (:meth:`ValidationProcess.receive`); a process that dies
without a last message (killed, out of memory) reads as ``("died", text)``.

While the browser's UI is busy (a key pressed within 0.5 s, its event loop late: ``RegistryApp.ui_busy``), the
parent says so (:meth:`ValidationProcess.set_busy`) and the child starts no further file and no further rule step,
waiting up to :data:`YIELD_AT_MOST_S` at a time: on a loaded machine its CPU time is the UI's, and each batch of
results it sends costs the UI a redraw (bench/tui_bench.py: 50 cursor moves took 51 s at 2,000 entries with two
CPU hogs when it did not pause, 2.8 s typing a filter).

Stopping (:meth:`ValidationProcess.stop`: a newer run, quitting) sends ``stop``; the child starts no further file
and no further rule step, appends what it read to the validation cache's journal (the files being read finish)
and exits. One that does not within :data:`STOP_GRACE_S` is terminated, then killed; either way it is reaped (no
zombie); one the browser did not stop (an exception in the App) is when the browser exits. The child also stops
when its socket closes (the browser died). The cache has one writer at a time: a new
run's process is started only after the old one has exited. The cache file itself is only ever replaced
atomically and the journal is appended one line per write (a line cut short is skipped when read), so a killed
child leaves no half-written cache.

This module imports no textual and no torch; the child imports ``rwkv_registry.tui.validation`` (the core's
rules) only once its output is silenced, so that an import error is reported over the socket, never printed over
the browser's screen.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback
import weakref
from collections.abc import Callable
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

MODULE = "rwkv_registry.tui.validation_process"  # the child runs `python -m MODULE FD`
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
        from rwkv_registry.core.errors import RegistryError
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


def target_name(target: Callable[..., None]) -> str:
    """``module:qualname`` of a child function, which the child imports by that name (a function of a script run
    as ``__main__``, or a nested one, cannot be named: ValueError)."""
    module, name = getattr(target, "__module__", None), getattr(target, "__qualname__", "")
    if not module or module == "__main__" or "<" in name:
        raise ValueError(f"{target!r}: the validation process runs a module-level function of an importable module")
    return f"{module}:{name}"


def _resolve(spec: str) -> Callable[..., None]:
    module, _, name = spec.partition(":")
    obj: Any = importlib.import_module(module)
    for part in name.split("."):
        obj = getattr(obj, part)
    return obj


def main(argv: list[str] | None = None) -> int:
    """The child process (``python -m rwkv_registry.tui.validation_process FD``): FD is its end of the socket pair
    to the browser, whose first message says what to run: ``{"target": "module:function", "path": sys.path of the
    browser, "root", "by_path", "use_cache"}``. The target (:func:`child_main`, or a test's) then answers over it.
    Only this module and what the target imports are loaded: never the browser's main module, so a script that
    embeds the App without an ``if __name__ == "__main__":`` guard is not run again here."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or not args[0].isdigit():
        print(f"usage: python -m {MODULE} FD (started by the registry browser, not by hand)", file=sys.stderr)
        return 2
    try:
        conn = Connection(int(args[0]))
    except (OSError, ValueError) as e:
        print(f"{MODULE}: bad file descriptor {args[0]}: {e}", file=sys.stderr)
        return 2
    _silence()
    try:
        setup = conn.recv()
    except (EOFError, OSError):  # the browser went away before saying what to do
        return 0
    try:
        sys.path.extend(entry for entry in setup["path"] if entry not in sys.path)  # a test's target module
        target = _resolve(setup["target"])
    except BaseException:  # cannot find what to run: say so, do not hang
        with contextlib.suppress(OSError, ValueError):
            conn.send(("crash", _last_lines(traceback.format_exc())))
        return 0
    target(setup["root"], setup["by_path"], setup["use_cache"], conn)
    return 0


_running: weakref.WeakSet[ValidationProcess] = weakref.WeakSet()


@atexit.register
def _stop_running() -> None:
    """The browser exits without having stopped a child (an exception in the App): terminate it and reap it, as
    multiprocessing did with its daemon processes."""
    for proc in list(_running):
        with contextlib.suppress(Exception):
            proc.stop(grace=0.0)


class ValidationProcess:
    """One validation run in a child process (see the module's doc). ``target`` replaces :func:`child_main`
    (tests: a module-level function, imported by name in the child). Raises what starting a process raises
    (OSError, …) where processes cannot be started."""

    def __init__(
        self,
        root: str | os.PathLike[str],
        by_path: dict[str, dict[str, Any]],
        *,
        use_cache: bool = True,
        target: Callable[..., None] = child_main,
    ) -> None:
        spec = target_name(target)
        if not sys.executable:  # an embedded interpreter that cannot name itself: the caller uses a thread
            raise OSError("no Python interpreter to start (sys.executable is empty)")
        ours, theirs = socket.socketpair()
        self.conn = Connection(ours.detach())
        self.finished = False  # the last message (done, failed, crash, died) was received
        try:
            with theirs:  # the child holds its own copy: EOF here once the child is gone
                self.process = subprocess.Popen(
                    [sys.executable, "-m", MODULE, str(theirs.fileno())],
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.PIPE,  # what Python prints if it cannot even start the module (see receive)
                    pass_fds=(theirs.fileno(),),
                )
        except BaseException:
            self.conn.close()
            raise
        _running.add(self)
        setup = {"target": spec, "path": list(sys.path), "root": str(Path(root)), "by_path": by_path}
        try:
            self.conn.send(setup | {"use_cache": use_cache})
        except (OSError, ValueError):  # the child died at once: receive() says why
            pass

    @property
    def pid(self) -> int | None:
        return self.process.pid

    def receive(self, timeout: float) -> Message | None:
        """The child's next message, waiting up to ``timeout`` s (None: nothing yet); ``("died", text)`` once the
        child is gone without its last message. Waits in the socket's poll, without the GIL."""
        if self.finished:
            return None
        try:
            if not self.conn.poll(timeout):
                return None
            message: Message = self.conn.recv()
        except (EOFError, OSError):
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(1.0)  # the socket closed: the process is exiting
            self.finished = True
            why = f"The validation process ended without a report: {describe_exit(self.process.returncode)}."
            printed = self._printed()
            return ("died", f"{why}\n{printed}" if printed else why)
        except Exception as e:  # a message that cannot be unpickled (a version mix-up)
            self.finished = True
            return ("died", f"The validation process sent an unreadable message: {e}.")
        if message and message[0] in ("done", "failed", "crash"):
            self.finished = True
        return message

    def _printed(self) -> str:
        """The last lines the exited child printed before it silenced its output (Python that cannot import this
        module, say); "" while it runs."""
        err = self.process.stderr
        if err is None or self.process.returncode is None:
            return ""
        try:
            os.set_blocking(err.fileno(), False)
            data = err.read(65536) or b""
        except (OSError, ValueError):
            return ""
        return _last_lines(data.decode(errors="replace"), 2)

    def set_busy(self, busy: bool) -> None:
        """Tell the child that the browser's UI is busy (True: it starts no further file and no further rule step,
        waiting up to :data:`YIELD_AT_MOST_S` at a time) or no longer (False)."""
        try:
            self.conn.send(("busy", busy))
        except (OSError, ValueError):  # the child is gone: receive() says so
            pass

    def stop(self, grace: float = STOP_GRACE_S) -> int | None:
        """Ask the child to stop, wait up to ``grace`` s (reading what it still sends, so that it never blocks on a
        full socket), then terminate it, then kill it; always reap it (no zombie). Returns its exit code."""
        p = self.process
        try:
            if p.poll() is None:
                with contextlib.suppress(OSError, ValueError):
                    self.conn.send("stop")
                end = time.monotonic() + grace
                while p.poll() is None and time.monotonic() < end:
                    try:
                        if self.conn.poll(0.05):
                            self.conn.recv()
                    except (EOFError, OSError):
                        with contextlib.suppress(subprocess.TimeoutExpired):
                            p.wait(max(0.0, end - time.monotonic()))
                    except Exception:  # an unreadable message while draining: nothing to keep
                        pass
                if p.poll() is None:
                    p.terminate()
                    with contextlib.suppress(subprocess.TimeoutExpired):
                        p.wait(1.0)
                if p.poll() is None:
                    p.kill()
            p.wait()
            return p.returncode
        finally:
            self.conn.close()
            if p.stderr is not None:
                p.stderr.close()
            _running.discard(self)


if __name__ == "__main__":  # run through the module's own name, so that the target sees one copy of it
    from rwkv_registry.tui.validation_process import main as _main

    raise SystemExit(_main())
