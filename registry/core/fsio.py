"""Bounded, FIFO-safe reading of registry files (any kind: JSON, README.md, SHA256SUMS, weight files' heads).

:func:`open_regular` opens a regular file only (a FIFO would block the open until another process writes);
:func:`read_at_most` reads at most a limit without allocating the limit up front."""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from collections.abc import Callable
from typing import BinaryIO

__all__ = ["open_regular", "read_at_most"]


def open_regular(path: str | os.PathLike[str], *, follow_symlinks: bool = True) -> BinaryIO:
    """``open(path, "rb")`` of a regular file only. A FIFO would block the open (and a device the reads) until
    another process writes; it is refused at once with ``OSError(EINVAL, "not a regular file")`` instead. With
    ``follow_symlinks=False`` a link in place of the file is refused too (``OSError(ELOOP)``, where the system has
    ``O_NOFOLLOW``)."""
    nonblock = getattr(os, "O_NONBLOCK", 0)
    nofollow = 0 if follow_symlinks else getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(path, os.O_RDONLY | nonblock | nofollow | getattr(os, "O_BINARY", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", os.fspath(path))
        if nonblock:
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_at_most(fh: BinaryIO, size: int, limit: int) -> bytes:
    """``fh.read(limit)``: the file's bytes up to ``limit``, asked for as ``size`` (its ``fstat`` size) plus one
    first, then the rest only if the file grew meanwhile. ``read(limit)`` itself allocates ``limit`` bytes before
    reading: 64 MiB for each small JSON file, two thirds of the time a warm run spent reading 640 train.json."""
    data = fh.read(min(size + 1, limit))
    if len(data) == size + 1 and len(data) < limit:  # the file grew since fstat: read on, as read(limit) would
        data += fh.read(limit - len(data))
    return data


MAX_TEXT_BYTES = 64 * 2**20  # SHA256SUMS and README.md larger than this are refused unread


def read_bounded(path: str | os.PathLike[str], limit: int = MAX_TEXT_BYTES) -> bytes | None:
    """The file's bytes, or None when it is larger than ``limit`` (decided by stat, never read)."""
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size > limit:
            return None
        return read_at_most(f, size, limit + 1)


def sha256_file(
    path: str | os.PathLike[str], progress: Callable[[int], None] | None = None, *, follow_symlinks: bool = True
) -> tuple[str, int]:
    """sha256 and size of a regular file of any size, streamed in 16 MiB chunks (``progress`` gets each length);
    ``follow_symlinks=False``: a link in its place is refused (see :func:`~rwkv_registry.core.fsio.open_regular`)."""
    h = hashlib.sha256()
    size = 0
    with open_regular(path, follow_symlinks=follow_symlinks) as f:  # a FIFO would block
        # read(n) allocates n bytes first: a file under 16 MiB is read in pieces of its own size (at least 64 KiB,
        # for a file that grows or says 0), not 16 MiB for each of the 640 small train.json a write hashes
        step = min(16 << 20, max(os.fstat(f.fileno()).st_size + 1, 1 << 16))
        while chunk := f.read(step):
            h.update(chunk)
            size += len(chunk)
            if progress:
                progress(len(chunk))
    return h.hexdigest(), size
