"""Facts of a weight file on the Hub without downloading it.

sha256 and size come from the Hub's LFS metadata (``list_repo_tree``); kind, writer, tensor
headers and the MiSS manifest from Range reads of the zip (:class:`rwkv_registry.hub.transport.RemoteFile`),
checked by the same safe reader and the same manifest rules as a local file. What needs the tensor
values is left out: the recomputed ``content_version`` (MIS011), the value scans (MIS010, STA004).
``full=True`` downloads MiSS files whole and computes their facts exactly as for a local file.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from rwkv_registry.core.errors import CheckpointError, RegistryIOError
from rwkv_registry.engine.facts import FileFacts, compute_facts
from rwkv_registry.hub.remote import RemoteRepo
from rwkv_registry.hub.transport import (
    DownloadCut,
    LocalWriteError,
    RangeNotSatisfiable,
    RemoteFile,
    RemoteStatusError,
    error_reason,
    error_status,
    status_hint,
    write_hint,
)

__all__ = ["header_facts", "metadata_facts", "remote_weight_facts"]


class _NoValues(Exception):
    """Raised when a rule asks for tensor values that a header-only read does not have."""


class _HeadersOnly:
    """A checkpoint whose tensor values are out of reach: every other attribute is the real one."""

    def __init__(self, ck: Any) -> None:
        self._ck = ck

    def __getattr__(self, name: str) -> Any:
        return getattr(self._ck, name)

    def tensor_bytes(self, name: str) -> bytes:
        raise _NoValues(name)


def metadata_facts(size: int, sha256: str) -> FileFacts:
    """Facts from the Hub's metadata alone (a file not read at all)."""
    return FileFacts(size=size, sha256=sha256, kind="unknown")


def header_facts(source: RemoteFile, *, size: int, sha256: str) -> FileFacts:
    """Facts from the headers of a remote checkpoint; the value-dependent rules are skipped."""
    from rwkv_registry.engine.facts import checkpoint_facts
    from rwkv_registry.formats.ckpt import open_checkpoint

    facts = FileFacts(size=size, sha256=sha256, kind="unknown")
    if size == 0:
        facts.findings.append({"code": "PTH001", "message": "the file is empty"})
        return facts
    source.prefetch_zip_metadata()
    try:
        ck = open_checkpoint(source)
    except CheckpointError as e:
        facts.findings.append({"code": e.code, "message": e.message})
        return facts
    try:
        # the rules of a local file (facts.checkpoint_facts: the manifest's place, tensor_source, the MiSS and
        # State rules), stopped where the tensor values would be needed
        checkpoint_facts(facts, _HeadersOnly(ck))
    except _NoValues:
        pass
    return facts


def remote_weight_facts(remote: RemoteRepo, path: str, *, full: bool, workdir: Path) -> tuple[FileFacts, int]:
    """Facts of one LFS weight file and the bytes hashed locally (non-zero only for a full download).

    ``full``: a MiSS file is downloaded to ``workdir`` and read like a local file, so
    ``content_version``, the value scan and the true sha256 of the bytes are checked too.
    """
    entry = remote.files[path]
    assert entry.lfs_sha256 is not None
    source = remote.open(path)
    facts = header_facts(source, size=entry.size, sha256=entry.lfs_sha256)
    if not (full and facts.method == "miss"):
        return facts, 0
    try:
        fd, tmp = tempfile.mkstemp(prefix="full-", suffix=".pth", dir=workdir)
    except OSError as e:
        raise LocalWriteError(str(workdir), e, hint=write_hint(str(workdir))) from e
    os.close(fd)  # written by name below: a first pass, and a continuation opened again
    try:
        continued = _download_whole(remote, source.url, entry.size, tmp)
        facts = compute_facts(tmp)
        hashed = entry.size
        # the bytes downloaded must be the listing's (its LFS sha256 and size), as for every whole download: other
        # bytes are the transfer's fault (the storage, a proxy), said as such, never an HSH001 against the registry
        try:
            remote.check_served(path, facts.size, facts.sha256, None)
        except RegistryIOError:
            if not continued:
                raise
            # the bytes kept before a cut may be what failed: fetched whole once, then checked as any download
            with open(tmp, "wb") as f:
                remote.fetcher.get(source.url, start=0, end=entry.size - 1, total=entry.size, sink=f)
            facts = compute_facts(tmp)
            hashed += entry.size
            remote.check_served(path, facts.size, facts.sha256, None)
        return facts, hashed
    except RegistryIOError:
        raise
    except OSError as e:
        raise LocalWriteError(tmp, e, hint=write_hint(tmp)) from e
    finally:
        Path(tmp).unlink(missing_ok=True)


def _download_whole(remote: RemoteRepo, url: str, size: int, tmp: str) -> bool:
    """Download ``url`` (``size`` bytes) into ``tmp`` with one Range request for all of it; a connection cut in a file
    of :data:`~rwkv_registry.hub.resume.RESUMABLE_BYTES` or more is continued from the bytes received with
    ``Range: bytes=N-`` (:meth:`~rwkv_registry.hub.transport.Fetcher.resume`), up to
    :data:`~rwkv_registry.hub.resume.RETRIES` times while each try brings bytes, as ``pull`` does. Returns whether
    it was continued (its sha256 must then be checked against the listing). Raises
    :class:`~rwkv_registry.hub.transport.DownloadCut` when the tries are spent, naming the bytes received."""
    from rwkv_registry.hub import resume as _hub_resume

    try:
        with open(tmp, "wb") as f:
            remote.fetcher.get(url, start=0, end=size - 1, total=size, sink=f)
        return False
    except DownloadCut as cut:
        if size < _hub_resume.RESUMABLE_BYTES:
            raise
        first = cut

    def once(start: int) -> int:
        try:
            with open(tmp, "r+b") as f:
                try:
                    return remote.fetcher.resume(url, f, start, size)
                except RangeNotSatisfiable:  # the storage holds fewer bytes than received: start again, once
                    return remote.fetcher.resume(url, f, 0, size)
        except DownloadCut:
            raise
        except RegistryIOError as e:  # an error status: the status and the URL, not a finding (LAY010)
            cause = e.__cause__
            status = error_status(cause) if cause is not None else None
            if cause is not None and status is not None:
                raise RemoteStatusError(url, status, error_reason(cause), hint=status_hint(status)) from cause
            raise

    _hub_resume.continue_cut(Path(tmp), once, first)
    return True
