"""Exceptions of the model package.

All subclass the core's :class:`rwkv_registry.core.errors.RegistryError`, so the CLI maps them to a
one-line message, a hint and an exit code like every other error of the project.
"""

from __future__ import annotations

from rwkv_registry.core.errors import RegistryError


class ModelError(RegistryError, ValueError):
    """A weight file or an argument cannot be used by the model."""

    exit_code = 2


class WeightsFormatError(ModelError):
    """A base, State or MiSS file is not what it claims to be (missing tensor, wrong layout…)."""


class ShapeMismatchError(ModelError):
    """Weights do not fit the loaded base (layer count, heads, widths); the message names both shapes."""


class FingerprintMismatchError(ModelError):
    """A MiSS package was trained on another base file (sha256 differs); pass ``force=True`` to override."""

    exit_code = 1
