"""The digest of the code behind every cached answer: one key for the facts cache and the verdict cache.

The validation cache (:class:`rwkv_registry.engine.facts.FactsCache`) remembers facts of weight files (their findings,
decided by the readers and the MiSS and State rules) and verdicts on JSON files and the README (decided by the
strict loader, the schemas, the README renderer, and ``ops``, whose ``add`` records them). An answer is only as good
as the code that made it: :func:`code_digest` hashes the source of every module whose code decides one
(:data:`DECIDING_MODULES`, read as files beside this one, never imported: a validation does not load ``ops``) and
every schema file, with the release, and each cache is keyed by it. A checkout whose checking code changed, by an
upgrade or an edit, trusts nothing the code before it cached; no constant is bumped by hand.
``tests/test_cache.py`` keeps the list complete: every module of the package that computing facts or verdicts
loads must be in it.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
from pathlib import Path
from typing import Any, Protocol

from rwkv_registry import __version__

DECIDING_MODULES = (
    "__init__",
    "core",
    "formats",
    "index",
    "fs",
    "checks",
    "engine",
    "store.ops",
)
"""Modules and packages (every module under them) of ``rwkv_registry`` whose code decides a cached answer."""


def _package_root() -> Path:
    return Path(__file__).resolve().parent.parent


def deciding_files() -> list[tuple[str, Path]]:
    """(name, path) of every source file and schema the digest covers, in a fixed order."""
    root = _package_root()
    files: list[tuple[str, Path]] = []
    for m in DECIDING_MODULES:
        where = root.joinpath(*m.split("."))
        if where.is_dir():
            for py in sorted(where.rglob("*.py")):
                rel = py.relative_to(root).with_suffix("")
                parts = [p for p in rel.parts if p != "__init__"]
                files.append((".".join(["rwkv_registry", *parts]), py))
        elif m == "__init__":
            files.append(("rwkv_registry", root / "__init__.py"))
        else:
            files.append((f"rwkv_registry.{m}", where.with_suffix(".py")))
    spec = importlib.util.find_spec("rwkv_registry.schemas")  # locates, does not import, the schemas package
    schemas = Path(spec.origin).parent if spec is not None and spec.origin else root.parent / "schemas"
    files.append(("rwkv_registry.schemas", schemas / "__init__.py"))
    files += [(f"schemas/{p.name}", p) for p in sorted(schemas.glob("*.json"))]
    return files


@functools.cache
def code_digest() -> str:
    """SHA-256 over the release and the source of :func:`deciding_files` (each with its name and length); a file
    that cannot be read counts by its name."""
    h = hashlib.sha256(f"rwkv-registry {__version__}\0".encode())
    for name, path in deciding_files():
        try:
            data = path.read_bytes()
        except OSError:
            data = b"\0unreadable"
        h.update(f"{name}\0{len(data)}\0".encode())
        h.update(data)
    return h.hexdigest()


class VerdictMemo(Protocol):
    """Where a check remembers its verdicts between runs, under a key that includes :func:`code_digest`: the
    validation cache (``engine.facts.FactsCache``). The JSON and README checks take one; ``None`` checks afresh."""

    def get_json(self, key: str) -> Any: ...

    def put_json(self, key: str, value: Any) -> None: ...
