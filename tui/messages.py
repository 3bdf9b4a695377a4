"""App-level messages: what the thread workers post back to the UI thread."""

from __future__ import annotations

from typing import Any

from textual.message import Message

from rwkv_registry.catalog.entries import NodeRef
from rwkv_registry.engine.validate import Report
from rwkv_registry.tui.validation import CheckedFile


class ValidationPlanned(Message):
    """A validation run knows how many weight files it will read."""

    def __init__(self, run: int, files: int) -> None:
        super().__init__()
        self.run = run
        self.files = files


class FilesChecked(Message):
    """Weight files whose facts became known since the last such message (at most one every
    :data:`~rwkv_registry.tui.validation.PROGRESS_EVERY_S`, and one with the last file): each entry recording
    one gets a preliminary status. ``files``: ``(rel, entry id or None, status)`` in the order they completed."""

    def __init__(self, run: int, files: list[CheckedFile]) -> None:
        super().__init__()
        self.run = run
        self.files = files


class ValidationFinished(Message):
    """A validation run ended with its full report."""

    def __init__(self, run: int, report: Report) -> None:
        super().__init__()
        self.run = run
        self.report = report


class ValidationFailed(Message):
    """A validation run could not start: the registry is gone (deleted, or no longer a directory); or its process
    died (killed, out of memory, an import error). ``state``: the status bar's word for it."""

    def __init__(self, run: int, message: str, hint: str, *, state: str = "not validated") -> None:
        super().__init__()
        self.run = run
        self.message = message
        self.hint = hint
        self.state = state


class DetailsReady(Message):
    """The details of a tree node, read and rendered off the UI thread."""

    def __init__(self, ref: NodeRef, generation: int, sections: dict[str, Any]) -> None:
        super().__init__()
        self.ref = ref
        self.generation = generation
        self.sections = sections


class DetailsFailed(Message):
    """Reading or rendering a node's details raised (a bug): the App says so; the next node is read as usual."""

    def __init__(self, error: BaseException) -> None:
        super().__init__()
        self.error = error
