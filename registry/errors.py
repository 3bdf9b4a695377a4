"""Exceptions that stop a command.

Validation *findings* are data (:mod:`rwkv_registry.rules`); the exceptions here are for what
stops a command. Each carries a one-line message, a hint and the exit code the CLI uses:
0 success, 1 validation errors found or a write refused, 2 usage or I/O error.
Set ``RWKV_REGISTRY_TRACEBACK=1`` to see the full traceback of an unexpected error.
"""

from __future__ import annotations


class RegistryError(Exception):
    """Base class: a command cannot go on. ``exit_code`` is what the CLI returns."""

    exit_code = 2

    def __init__(self, message: str, *, hint: str = "", path: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.path = path


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
    """A weight file breaks a rule of the safe reader; ``code`` is the rule code (PTH…, LFS…)."""

    exit_code = 1

    def __init__(self, code: str, message: str, *, path: str = "") -> None:
        super().__init__(message, path=path)
        self.code = code
