"""sha256 of big files (a 14 GB base), cached by stat key like ``validate``'s facts cache.

The cache is one JSON file, ``smoke-sha256.json``, in the user cache directory
(:func:`rwkv_registry.engine.facts.cache_dir`, ``RWKV_REGISTRY_CACHE_DIR`` overrides it). An entry is
used only when the file's stat key (device, inode, path, size, mtime and ctime in ns) is
unchanged, so an edited file is always hashed again; a file with recent whole-second times is not
cached (:func:`rwkv_registry.engine.facts.racy`). A cache that cannot be read or written
only costs time.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path

from rwkv_registry.engine.facts import cache_dir, racy, stat_key
from rwkv_registry.fs.atomic import atomic_write_bytes
from rwkv_registry.store.ops import hash_file

CACHE_NAME = "smoke-sha256.json"
_MAX_ENTRIES = 256


def _cache_path() -> Path:
    return cache_dir() / CACHE_NAME


def _read() -> dict[str, dict[str, object]]:
    try:
        with open(_cache_path(), "rb") as f:
            data = json.load(f)
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write(data: dict[str, dict[str, object]]) -> None:
    path = _cache_path()
    if len(data) > _MAX_ENTRIES:
        data = dict(list(data.items())[-_MAX_ENTRIES:])
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(path, json.dumps(data).encode())  # removes its temporary file when it fails
    except OSError:  # RegistryIOError (atomic_write_bytes) is one
        pass


def cached_sha256(path: str | Path, *, progress: Callable[[int], None] | None = None) -> tuple[str, bool]:
    """``(sha256, from_cache)`` of ``path``; hashes (calling ``progress(n_bytes)``) on a miss.

    Raises :class:`rwkv_registry.core.errors.RegistryIOError` when the file cannot be read.
    """
    p = Path(path).resolve()
    started = time.time_ns()
    st = os.stat(p)
    key = stat_key(st, str(p))
    data = _read()
    item = data.get(str(p))
    if isinstance(item, dict) and item.get("key") == key and isinstance(item.get("sha256"), str):
        return str(item["sha256"]), True
    digest, _ = hash_file(p, progress)
    try:
        unchanged = stat_key(os.stat(p), str(p)) == key
    except OSError:
        unchanged = False
    if unchanged and not racy(key, started):  # never cache a file that changed while it was read
        data = _read()
        data.pop(str(p), None)
        data[str(p)] = {"key": key, "sha256": digest}
        _write(data)
    return digest, False
