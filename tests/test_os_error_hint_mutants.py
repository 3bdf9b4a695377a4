"""Mutation audit of errors.os_error_hint: each errno it knows gets its own fix, naming the place."""

from __future__ import annotations

import errno

import pytest

from rwkv_registry.core.errors import os_error_hint


@pytest.mark.parametrize(
    ("code", "says"),
    [
        (errno.ENOSPC, "Free some space (or quota) on the disk that holds /w/x"),
        (errno.EDQUOT, "Free some space (or quota) on the disk that holds /w/x"),
        (errno.EACCES, "Check the permissions of /w/x and of the directories above it"),
        (errno.EPERM, "Check the permissions of /w/x and of the directories above it"),
        (errno.EROFS, "/w/x is on a read-only file system"),
        (errno.ENOENT, "/w/x (or a directory above it) is missing or was moved"),
        (errno.ENOTDIR, "/w/x (or a directory above it) is missing or was moved"),
        (errno.ENAMETOOLONG, "A name on the path is too long for the file system"),
        (errno.EISDIR, "/w/x is a directory: give a file."),
        (errno.EIO, "Check that /w/x is reachable and the disk is healthy"),
        (None, "Check that /w/x is reachable and the disk is healthy"),
    ],
)
def test_each_errno_gets_its_fix(code: int | None, says: str) -> None:
    e = OSError(code, "message") if code is not None else OSError("no errno")
    assert os_error_hint(e, "/w/x").startswith(says)
