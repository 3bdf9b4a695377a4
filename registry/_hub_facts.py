"""Facts of a weight file on the Hub without downloading it.

sha256 and size come from the Hub's LFS metadata (``list_repo_tree``); kind, writer, tensor
headers and the MiSS manifest from Range reads of the zip (:class:`rwkv_registry._hub_http.RemoteFile`),
checked by the same safe reader and the same manifest rules as a local file. What needs the tensor
values is left out: the recomputed ``content_version`` (MIS011), the value scans (MIS010, STA004).
``full=True`` downloads MiSS files whole and computes their facts exactly as for a local file.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from ._hub_http import RemoteFile
from ._hub_remote import RemoteRepo
from .errors import CheckpointError, RegistryIOError
from .facts import FileFacts, compute_facts

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
    from .ckpt import open_checkpoint
    from .facts import _STATE_NAME, _miss_facts

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
    facts.kind = ck.kind
    facts.writer = ck.writer
    facts.tensors = [(t.name, t.dtype, list(t.shape)) for t in ck.tensors.values()]
    if ck.miss_manifest is not None:
        facts.method = "miss"
        try:
            # the manifest and target rules (MIS002–MIS009); stops where the D values would be needed
            _miss_facts(facts, _HeadersOnly(ck))
        except _NoValues:
            pass
    elif ck.tensors and all(_STATE_NAME.match(n) for n in ck.tensors):
        facts.method = "state"
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
    fd, tmp = tempfile.mkstemp(prefix="full-", suffix=".pth", dir=workdir)
    try:
        with os.fdopen(fd, "wb") as f:
            remote.fetcher.get(source.url, start=0, end=entry.size - 1, total=entry.size, sink=f)
        return compute_facts(tmp), entry.size
    except RegistryIOError:
        raise
    except OSError as e:
        raise RegistryIOError(f"{path}: cannot store the download in {workdir}: {e.strerror or e}") from e
    finally:
        Path(tmp).unlink(missing_ok=True)
