"""Exceptions that stop a command.

Validation *findings* are data (:mod:`rwkv_registry.core.rules`); the exceptions here are for what
stops a command. Each carries a one-line message, a hint and the exit code the CLI uses:
0 success, 1 validation errors found or a write refused, 2 usage or I/O error.
Set ``RWKV_REGISTRY_TRACEBACK=1`` to see the full traceback of an unexpected error.
"""

from __future__ import annotations

import errno
import os

from rwkv_registry.core.textsafe import MESSAGE_LIMIT, PATH_LIMIT, clip


class RegistryError(Exception):
    """Base class: a command cannot go on. ``exit_code`` is what the CLI returns."""

    exit_code = 2

    def __init__(self, message: str, *, hint: str = "", path: str = "") -> None:
        message = clip(message, MESSAGE_LIMIT)  # a name quoted whole is cut here at the latest (textsafe.clip)
        super().__init__(message)
        self.message = message
        self.hint = clip(hint, MESSAGE_LIMIT)
        self.path = clip(path, PATH_LIMIT)


class UsageError(RegistryError, ValueError):
    """Bad arguments or bad input named on the command line."""

    exit_code = 2


class RegistryIOError(RegistryError, OSError):
    """A file could not be read or written."""

    exit_code = 2


class RefusedError(RegistryError):
    """A write was refused because the result would not validate; nothing was changed."""

    exit_code = 1

    def __init__(self, message: str, *, hint: str = "", path: str = "", findings: list | None = None) -> None:
        super().__init__(message, hint=hint, path=path)
        self.findings = list(findings or [])


class LockedError(RegistryError):
    """Another writer holds the registry lock."""

    exit_code = 2


class CheckpointError(RegistryError, ValueError):
    """A weight file breaks a rule of the safe reader; ``code`` is the rule code (PTH…, LFS…, MIS002). Made by
    :func:`rwkv_registry.formats.rules.refusal`, which gives the rule's fix as ``hint``."""

    exit_code = 1

    def __init__(self, code: str, message: str, *, hint: str = "", path: str = "") -> None:
        super().__init__(message, hint=hint, path=path)
        self.code = code


def os_error_hint(e: OSError, where: str | os.PathLike[str]) -> str:
    """The fix for ``e``, an error of the operating system reading or writing ``where``, by its errno."""
    if e.errno in (errno.ENOSPC, errno.EDQUOT):
        return f"Free some space (or quota) on the disk that holds {where}, then run the command again."
    if e.errno in (errno.EACCES, errno.EPERM):
        return f"Check the permissions of {where} and of the directories above it, then run the command again."
    if e.errno == errno.EROFS:
        return f"{where} is on a read-only file system: work on a writable copy, or remount it read-write."
    if e.errno in (errno.ENOENT, errno.ENOTDIR):
        return f"{where} (or a directory above it) is missing or was moved: check the path and run the command again."
    if e.errno == errno.ENAMETOOLONG:
        return "A name on the path is too long for the file system: use a shorter path."
    if e.errno == errno.EISDIR:
        return f"{where} is a directory: give a file."
    return f"Check that {where} is reachable and the disk is healthy, then run the command again."
