"""Atomic, locked writes to a registry.

Every command that writes goes through one :class:`Transaction` under :func:`registry_lock`:

1. each new file is written to a temporary file ``.rwkv-registry-tmp-*`` in its final directory
   and fsync'ed;
2. a journal ``.rwkv-registry.journal`` listing (temporary, final) pairs is written atomically
   (temp file, fsync, rename, fsync of the directory);
3. the temporary files are renamed over their final names, directories fsync'ed;
4. the journal is removed.

A process killed before step 2 leaves only temporary files: :func:`recover` deletes them and the
registry is byte-identical to before. Killed after step 2, :func:`recover` completes the renames,
and the registry is in its new, valid state. The lock (``.rwkv-registry.lock``, an ``flock``
through the filelock library) is released by the kernel when a process dies, so a stale lock
file never blocks; a second writer waits up to ``timeout`` seconds, then fails cleanly.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
from collections.abc import Iterator
from pathlib import Path

from .errors import LockedError, RegistryIOError

LOCK_NAME = ".rwkv-registry.lock"
JOURNAL_NAME = ".rwkv-registry.journal"
TMP_PREFIX = ".rwkv-registry-tmp-"
TRANSIENT_NAMES = (LOCK_NAME, JOURNAL_NAME)
FAULT_ENV = "RWKV_REGISTRY_FAULT"


def fault_point(name: str) -> None:
    """Crash-test hook: ``RWKV_REGISTRY_FAULT=name`` kills the process here with SIGKILL."""
    wanted = os.environ.get(FAULT_ENV)
    if wanted and wanted == name:
        os.kill(os.getpid(), signal.SIGKILL)


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    """Write one file atomically (temp file in the same directory, fsync, rename, fsync dir)."""
    path = Path(path)
    tmp = path.with_name(f"{TMP_PREFIX}{secrets.token_hex(6)}-{path.name}")
    try:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as e:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise RegistryIOError(f"cannot write {path}: {e.strerror or e}", path=str(path)) from e
    _fsync_dir(path.parent)


@contextlib.contextmanager
def registry_lock(root: str | os.PathLike[str], *, timeout: float = 30.0) -> Iterator[list[str]]:
    """Hold the registry's write lock; recovers an interrupted write first.

    Yields the list of recovery messages (empty when there was nothing to recover).
    """
    from filelock import FileLock, Timeout

    root = Path(root)
    lock = FileLock(str(root / LOCK_NAME), timeout=timeout)
    try:
        lock.acquire()
    except Timeout:
        raise LockedError(
            f"{root}: another rwkv-registry command is writing (lock {LOCK_NAME} held for {timeout:g} s)",
            hint="Wait for it to finish and run the command again.",
        ) from None
    except OSError as e:
        raise RegistryIOError(f"cannot create the lock file in {root}: {e.strerror or e}") from e
    try:
        yield recover(root)
    finally:
        lock.release()


def _temp_files(root: Path) -> list[Path]:
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        if ".git" in dirnames:
            dirnames.remove(".git")
        found += [Path(dirpath) / n for n in filenames if n.startswith(TMP_PREFIX)]
    return found


def recover(root: str | os.PathLike[str]) -> list[str]:
    """Finish or undo an interrupted write. Call only while holding the lock."""
    root = Path(root)
    messages: list[str] = []
    journal = root / JOURNAL_NAME
    if journal.exists():
        try:
            plan = json.loads(journal.read_text("utf-8"))
            renames = [(str(a), str(b)) for a, b in plan["renames"]]
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise RegistryIOError(
                f"{journal}: unreadable journal of an interrupted write ({e})",
                hint="Inspect the registry with `git status`, restore it, then delete the journal.",
            ) from e
        done = 0
        for tmp, final in renames:
            src, dst = root / tmp, root / final
            if src.exists():
                dst.parent.mkdir(parents=True, exist_ok=True)
                os.replace(src, dst)
                _fsync_dir(dst.parent)
                done += 1
        journal.unlink()
        _fsync_dir(root)
        messages.append(f"completed an interrupted write ({done} of {len(renames)} file(s) were pending)")
    leftovers = _temp_files(root)
    for p in leftovers:
        with contextlib.suppress(OSError):
            p.unlink()
    if leftovers:
        messages.append(f"removed {len(leftovers)} temporary file(s) of an interrupted write")
    return messages


class Transaction:
    """Stage several files, then publish them all or none (see the module docstring)."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)
        self.staged: list[tuple[Path, Path]] = []  # (tmp, final), absolute
        self.created_dirs: list[Path] = []

    def _tmp_for(self, rel: str) -> tuple[Path, Path]:
        final = self.root / rel
        missing = []
        parent = final.parent
        while not parent.exists():
            missing.append(parent)
            parent = parent.parent
        for d in reversed(missing):
            d.mkdir()
            self.created_dirs.append(d)
        return final.with_name(f"{TMP_PREFIX}{secrets.token_hex(6)}-{final.name}"), final

    def write_bytes(self, rel: str, data: bytes) -> None:
        """Stage ``data`` as the new content of ``rel`` (registry-relative POSIX path)."""
        tmp, final = self._tmp_for(rel)
        try:
            with open(tmp, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
        except OSError as e:
            raise RegistryIOError(f"cannot write {final}: {e.strerror or e}", path=rel) from e
        self.staged.append((tmp, final))

    def copy_file(self, rel: str, src: str | os.PathLike[str]) -> None:
        """Stage a copy of ``src`` as ``rel``."""
        tmp, final = self._tmp_for(rel)
        try:
            with open(src, "rb") as fin, open(tmp, "wb") as fout:
                while chunk := fin.read(8 << 20):
                    fout.write(chunk)
                fout.flush()
                os.fsync(fout.fileno())
        except OSError as e:
            raise RegistryIOError(f"cannot copy {src} to {final}: {e.strerror or e}", path=rel) from e
        self.staged.append((tmp, final))

    def mkdir(self, rel: str) -> None:
        """Create a directory (and its parents) as part of the transaction."""
        self._tmp_for(rel + "/.keep")

    def commit(self) -> None:
        """Publish every staged file (journal, renames, fsyncs)."""
        fault_point("staged")
        journal = self.root / JOURNAL_NAME
        plan = {"renames": [[str(t.relative_to(self.root)), str(f.relative_to(self.root))] for t, f in self.staged]}
        atomic_write_bytes(journal, json.dumps(plan).encode())
        _fsync_dir(self.root)
        fault_point("journal")
        for i, (tmp, final) in enumerate(self.staged):
            os.replace(tmp, final)
            _fsync_dir(final.parent)
            fault_point(f"rename-{i}")
        journal.unlink()
        _fsync_dir(self.root)
        self.staged.clear()
        self.created_dirs.clear()

    def rollback(self) -> None:
        """Drop every staged file and the directories this transaction created."""
        for tmp, _ in self.staged:
            with contextlib.suppress(OSError):
                tmp.unlink()
        for d in reversed(self.created_dirs):
            with contextlib.suppress(OSError):
                d.rmdir()
        self.staged.clear()
        self.created_dirs.clear()

    def __enter__(self) -> Transaction:
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if exc_type is not None or self.staged:
            self.rollback()
