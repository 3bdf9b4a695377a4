"""One long-lived thread that runs the latest job handed to it (the browser's details reader).

A Textual thread worker per job started a thread at every details draw; this thread sleeps on a condition
variable while there is nothing to do (no wakeup, no poll), and a job handed over while another runs replaces any
job still waiting, so that a burst of cursor moves reads the last node only. Imports no textual.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

Job = Callable[[], None]


class LatestJob:
    """Runs each job on one daemon thread (started with the first job), the newest waiting job only; an exception
    a job raises is handed to ``on_error`` (in that thread) and the thread goes on."""

    def __init__(self, name: str, on_error: Callable[[BaseException], None]) -> None:
        self.name = name
        self.on_error = on_error
        self._cond = threading.Condition()
        self._waiting: Job | None = None
        self._running = False
        self._closed = False
        self._thread: threading.Thread | None = None

    def submit(self, job: Job) -> None:
        """Run ``job`` once the one running (if any) ends, instead of any job still waiting."""
        with self._cond:
            if self._closed:
                return
            self._waiting = job
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name=self.name, daemon=True)
                self._thread.start()
            self._cond.notify()

    @property
    def idle(self) -> bool:
        """No job running and none waiting."""
        with self._cond:
            return self._waiting is None and not self._running

    def close(self) -> None:
        """Run no further job (the one running finishes); the thread ends."""
        with self._cond:
            self._closed = True
            self._waiting = None
            self._cond.notify()

    def _loop(self) -> None:
        while True:
            with self._cond:
                while self._waiting is None and not self._closed:
                    self._cond.wait()
                if self._closed:
                    return
                job, self._waiting = self._waiting, None
                if job is None:  # woken with nothing to do
                    continue
                self._running = True
            try:
                job()
            except Exception as e:  # a bug in a renderer: say so, keep reading the next nodes
                self.on_error(e)
            finally:
                with self._cond:
                    self._running = False
                    self._cond.notify_all()
