"""Atomic, locked writes to a registry.

Every command that writes goes through one :class:`Transaction` under :func:`registry_lock`:

1. each new file is written to a temporary file ``.rwkv-registry-tmp-*`` in its final directory
   and fsync'ed;
2. a journal ``.rwkv-registry.journal`` listing (temporary, final) pairs is written atomically
   (temp file, fsync, rename, fsync of the directory);
3. the temporary files are renamed over their final names, directories fsync'ed;
4. the journal is removed.

A process killed before step 2 leaves only temporary files: :func:`recover` deletes them, and the
directories the write created (each is recorded in ``.rwkv-registry-tmp-dirs`` before it is made),
and the registry is byte-identical to before. Killed after step 2, :func:`recover` completes the
renames, and the registry is in its new, valid state. The lock (``.rwkv-registry.lock``, an
``flock`` through the filelock library) is released by the kernel when a process dies, so a stale
lock file never blocks; a second writer waits up to ``timeout`` seconds (saying so on stderr after
a second when stderr is a terminal, after five otherwise), then fails cleanly. The next writer
recovers before it writes and says so on the ``rwkv_registry`` logger (stderr). The lock is taken
only in a registry (a directory holding ``index.json``, or one where a write was interrupted);
``init`` opts out with ``creating=True``.

Ctrl-C (SIGINT): an interrupt while files are staged rolls the transaction back (every temporary
file and created directory is removed; the registry is byte-identical). From the journal to the
end of :meth:`Transaction.commit` the interrupt is held back, so the commit completes; the
``KeyboardInterrupt`` is raised after it, and :func:`committed_count` tells the CLI that a write
was committed so that it can say so. Rollback and :func:`recover` hold interrupts back too.
SIGKILL cannot be held back: that is what the journal and :func:`recover` are for.

A file that a write rewrites from a copy it read (README.md, index.json, a train.json being merged) can be edited
meanwhile by a program that takes no lock (an editor saving it). The writer stamps it (:func:`read_stamps`) before
reading it and hands the stamps to :meth:`Transaction.expect_unchanged`. Each is stamped again just before the
journal, and once more after the journal is on disk, immediately before the first rename: until a file is renamed,
removing the journal still undoes the write whole. A file that changed refuses the write: the journal (if written) and
the temporary files are removed, and the edit is kept. The files read are renamed first, one right after the other
(the directories are fsync'ed after the last rename), so what is left unseen is an edit saved during those renames,
a few system calls. ``add`` also checks before it copies the weight file (:meth:`Transaction.check_unchanged`).
A stamp's times have the granularity of the file system's clock (a few ms on Linux, 1 or 2 s on some file systems):
a save of the same size within the same tick leaves the stamp as it was. So a stamp taken within
:data:`COARSE_NS` of the file's last change also holds the sha256 of its content, compared by the last check.
A rename that fails after the journal (an I/O error) keeps the journal and the temporary files for
:func:`recover` to finish.

Writes never leave the registry (docs/security.md, "Writes stay in the registry"). Every directory on the way to a
file a write creates or replaces is opened by :func:`open_registry_dir` one component at a time, each relative to the
one above (``openat``) with ``O_NOFOLLOW``: a component that is a symbolic link (to a directory outside the registry,
or to another directory inside it), a ``..``, an empty or ``.`` component is refused before anything is written. The
staged file is then created (``O_CREAT | O_EXCL | O_NOFOLLOW``), renamed over its final name (``renameat``), and its
directory fsync'ed through that very descriptor, so a link swapped in after the check changes nothing: the write goes
to the directory that was checked. :func:`recover` opens the journal's directories the same way, and the lock file and
the record of created directories are opened without following a link. What is left: a directory of the registry
that another process *moves* (``mv``, not a link) out of the registry while a write holds its descriptor receives the
file where it now is; only a process that can already write in the registry can do that. On a system without
``openat`` (``os.supports_dir_fd``; Windows), each component is checked with ``lstat`` just before the write instead,
which leaves the window between that check and the write.

Crash tests set ``RWKV_REGISTRY_FAULT`` to one of the fault points to have the process SIGKILL
itself there: ``mkdir-<k>`` (k-th directory created), ``partial-<i>`` (half of the i-th staged file
written), ``written-<i>`` (i-th staged file complete), ``staged``, ``journal-tmp`` (journal
written, not yet renamed), ``journal``, ``rename-<i>`` (the i-th rename done, in the order of the renames: the files
read first), ``renamed`` and ``committed``.
``RWKV_REGISTRY_FAULT_SIGNAL=INT`` sends SIGINT (Ctrl-C) there instead, and the process goes on.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import stat
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, NamedTuple, NoReturn

from rwkv_registry.core.errors import LockedError, RefusedError, RegistryIOError, UsageError, os_error_hint
from rwkv_registry.core.textsafe import clip
from rwkv_registry.index.sums import SUMS_NAME

if TYPE_CHECKING:
    import logging

LOCK_NAME = ".rwkv-registry.lock"
JOURNAL_NAME = ".rwkv-registry.journal"
TMP_PREFIX = ".rwkv-registry-tmp-"
DIRS_NAME = TMP_PREFIX + "dirs"  # directories a transaction created, one per line (removed on rollback)
TRANSIENT_NAMES = (LOCK_NAME, JOURNAL_NAME)
FAULT_ENV = "RWKV_REGISTRY_FAULT"
FAULT_SIGNAL_ENV = "RWKV_REGISTRY_FAULT_SIGNAL"  # "INT": the fault point sends SIGINT instead of SIGKILL
WAIT_NOTICE_TTY_S = 1.0  # a blocked writer says that it waits after this long (stderr is a terminal)
WAIT_NOTICE_S = 5.0  # ... and after this long when stderr is a pipe or a file (scripts, CI logs)
MAX_JOURNAL = 16 * 1024 * 1024
# LAY005's and LAY017's fixes (checks/layout.py gives them to the rules): the writers' refusals say the same
LINK_OUTSIDE_HINT = "Replace the link by the file itself; nothing in the registry may point outside it."
CASE_TWIN_HINT = (
    "Two entries of one directory (`s1.pth` and `S1.pth`, `v1/` and `V1/`, or `é` written as one code point and as "
    "`e` plus a combining accent) are one file on macOS and Windows: a clone there keeps only one of them, and "
    "SHA256SUMS no longer matches. Rename or remove one (`git mv`), then run `rwkv-registry sums PATH`."
)


def _log() -> logging.Logger:
    """The ``rwkv_registry`` logger (logging imported only when there is something to say: not on every run)."""
    import logging

    return logging.getLogger("rwkv_registry")


def _token() -> str:
    """12 random hex digits for a temporary file's name (secrets imported only by a write)."""
    import secrets

    return secrets.token_hex(6)


_commits = 0  # transactions this process committed (see committed_count)


def fault_point(name: str) -> None:
    """Crash-test hook: ``RWKV_REGISTRY_FAULT=name`` kills the process here with SIGKILL
    (with ``RWKV_REGISTRY_FAULT_SIGNAL=INT``, sends it SIGINT, as Ctrl-C would)."""
    wanted = os.environ.get(FAULT_ENV)
    if wanted and wanted == name:
        sig = signal.SIGINT if os.environ.get(FAULT_SIGNAL_ENV, "").upper() == "INT" else signal.SIGKILL
        os.kill(os.getpid(), sig)


Stamp = tuple[int, int, int, int, int] | None
"""What :func:`file_stamp` sees of a file: (st_dev, st_ino, st_size, st_mtime_ns, st_ctime_ns); None when absent."""

COARSE_NS = 2_000_000_000
"""A stamp taken less than this after the file's last change (mtime or ctime) may not see a save of the same size
within the same clock tick (FAT counts mtime in 2 s, ext3 and HFS+ in 1 s, Linux's file clock in a few ms): then
:func:`read_stamps` also records the sha256 of the content."""


class Seen(NamedTuple):
    """What :func:`read_stamps` saw of a file before it was read: its :data:`Stamp`, and the sha256 of its content
    when the stamp alone could miss a save (taken within :data:`COARSE_NS` of the file's last change; None else)."""

    stamp: Stamp
    sha256: str | None = None


def _lstat(path: Path) -> os.stat_result | None:
    try:
        return os.stat(path, follow_symlinks=False)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as e:
        raise RegistryIOError(
            f"cannot stat {path}: {e.strerror or e}", hint=os_error_hint(e, path), path=str(path)
        ) from e


def _stamp_of(st: os.stat_result | None) -> Stamp:
    return None if st is None else (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def file_stamp(path: Path) -> Stamp:
    """The stamp of ``path`` (the file itself, a link not followed): changed by a save in place (size, mtime, and
    ctime, which no program can set back) or by one that renames a new file over it (inode). None when absent."""
    return _stamp_of(_lstat(path))


def _content_sha256(path: Path) -> str | None:
    """The sha256 of the regular file ``path`` (a link not followed, a FIFO not opened); None when it is none or
    cannot be read (then the stamp alone decides)."""
    from rwkv_registry.core.fsio import sha256_file

    try:
        return sha256_file(path, follow_symlinks=False)[0]
    except OSError:
        return None


def _seen(path: Path) -> Seen | None:
    st = _lstat(path)
    if st is None:
        return None
    stamp = _stamp_of(st)
    if not stat.S_ISREG(st.st_mode) or time.time_ns() - max(st.st_mtime_ns, st.st_ctime_ns) >= COARSE_NS:
        return Seen(stamp)
    return Seen(stamp, _content_sha256(path))  # hashed after the stat: a save in between is in what is read


def read_stamps(root: Path, *rels: str) -> dict[str, Seen | None]:
    """What is seen of the registry files ``rels`` before they are read (None: absent; see the module docstring)."""
    return {rel: _seen(root / rel) for rel in rels}


def committed_count() -> int:
    """How many transactions this process has committed (the CLI reports an interrupt after one)."""
    return _commits


@contextlib.contextmanager
def interrupts_deferred() -> Iterator[None]:
    """Hold SIGINT (Ctrl-C) back while the block runs; raise ``KeyboardInterrupt`` after it.

    Only in the main thread with Python's default SIGINT handler in place (elsewhere, and when
    nested, the block runs unchanged). An exception raised by the block wins over a held
    interrupt, which is then dropped (the exception already stops the command).
    """
    if (
        threading.current_thread() is not threading.main_thread()
        or signal.getsignal(signal.SIGINT) is not signal.default_int_handler
    ):
        yield
        return
    held: list[int] = []

    def hold(signum: int, frame: object) -> None:
        held.append(signum)

    signal.signal(signal.SIGINT, hold)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if held:
        raise KeyboardInterrupt


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


# --- directories of the registry, opened without following a link --------------------------------------------

_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_O_BINARY = getattr(os, "O_BINARY", 0)
DIR_FDS = bool(_O_NOFOLLOW and _O_DIRECTORY) and {os.open, os.mkdir, os.stat, os.unlink, os.rmdir} <= os.supports_dir_fd
"""Whether this system has ``openat`` and friends (Linux, macOS, the BSDs): then :class:`RegistryDir` works through
directory descriptors; else (Windows) through paths, each component checked with ``lstat`` just before."""


class RegistryDir:
    """One directory of a registry, opened by :func:`open_registry_dir`: the operations a write makes in it (create a
    temporary file, rename it over its final name, unlink, fsync), by name, relative to the directory checked."""

    def __init__(self, path: Path, fd: int | None) -> None:
        self.path = path  # for messages (and the operations, on a system without DIR_FDS)
        self.fd = fd

    def _at(self, name: str) -> tuple[str | Path, dict[str, int]]:
        return (name, {"dir_fd": self.fd}) if self.fd is not None else (self.path / name, {})

    def lstat(self, name: str) -> os.stat_result | None:
        """The entry ``name`` itself (a link not followed); None when absent."""
        where, kw = self._at(name)
        try:
            return os.stat(where, follow_symlinks=False, **kw)
        except FileNotFoundError:
            return None

    def create(self, name: str) -> BinaryIO:
        """A new file ``name`` for writing: never an existing one, never through a link (``O_EXCL | O_NOFOLLOW``)."""
        where, kw = self._at(name)
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW | _O_CLOEXEC | _O_BINARY
        return os.fdopen(os.open(where, flags, 0o666, **kw), "wb")

    def open_read(self, name: str) -> BinaryIO:
        """The regular file ``name`` for reading (a link not followed)."""
        where, kw = self._at(name)
        return os.fdopen(os.open(where, os.O_RDONLY | _O_NOFOLLOW | _O_CLOEXEC | _O_BINARY, **kw), "rb")

    def replace(self, src: str, dst: str) -> None:
        """``os.replace`` of ``src`` over ``dst``, both in this directory."""
        if self.fd is not None:
            os.replace(src, dst, src_dir_fd=self.fd, dst_dir_fd=self.fd)
        else:
            os.replace(self.path / src, self.path / dst)

    def unlink(self, name: str) -> None:
        where, kw = self._at(name)
        os.unlink(where, **kw)

    def rmdir(self, name: str) -> None:
        where, kw = self._at(name)
        os.rmdir(where, **kw)

    def fsync(self) -> None:
        """fsync the directory (its entries: the renames made in it); errors ignored, as :func:`_fsync_dir`."""
        if self.fd is None:
            _fsync_dir(self.path)
            return
        with contextlib.suppress(OSError):
            os.fsync(self.fd)

    def close(self) -> None:
        if self.fd is not None:
            with contextlib.suppress(OSError):
                os.close(self.fd)
            self.fd = None


def _path_parts(rel: str) -> list[str]:
    """The components of the registry-relative directory ``rel`` ("" or "." for the root); a :class:`RefusedError`
    for an absolute path, a backslash, or an empty, ``.`` or ``..`` component: no write of rwkv-registry names one."""
    if rel in ("", "."):
        return []
    parts = rel.split("/")
    if rel.startswith("/") or "\\" in rel or "\0" in rel or any(p in ("", ".", "..") for p in parts):
        raise RefusedError(
            f"{clip(rel)!r} is not a plain path inside the registry (an absolute path, '..', '.', an empty "
            "component or a backslash): nothing written",
            hint="This is a bug in the command that asked for it: report it.",
            path=clip(rel),
        )
    return parts


def _refuse_component(root: Path, rel: str, st: os.stat_result, *, lock: bool = False) -> NoReturn:
    """The refusal of a write whose way passes ``rel``, which is no directory (a link, a file, a FIFO, …);
    ``lock``: ``rel`` is the lock file, a link."""
    path = root / rel
    if stat.S_ISLNK(st.st_mode):
        try:
            target = os.readlink(path)
        except OSError:
            target = "?"
        outside = not within(Path(os.path.realpath(root)), path)
        raise RefusedError(
            f"{path} is a symbolic link (to {clip(target)})"
            + (", leaving the registry (LAY005)" if outside else "")
            + ": nothing was written (a write never goes through a link)",
            hint=f"Remove the link (`rm {path}`): no rwkv-registry command makes one; then run the command again."
            if lock
            else f"Replace the link with a real directory (`rm {path}`, then move what it should hold there), "
            "then run the command again.",
            path=clip(rel),
        )
    raise RefusedError(
        f"{path} is not a directory, where the write needs one: nothing was written",
        hint=f"Move {path} out of the way, then run the command again.",
        path=clip(rel),
    )


def open_registry_dir(
    root: str | os.PathLike[str], rel: str, *, make: Callable[[Path], None] | None = None
) -> RegistryDir:
    """The directory ``root/rel`` for a write, opened one component at a time below ``root``, each relative to the
    one above and never through a symbolic link (``openat(..., O_NOFOLLOW | O_DIRECTORY)``): the one guard of every
    write (:class:`Transaction`, :func:`recover`, the journal). Refused (:class:`RefusedError`, nothing written) when
    a component is a link, a file or anything else but a directory, or ``rel`` holds ``..``, ``.`` or an empty
    component. ``make``: a missing component is created, after ``make(path)`` was called with its path (the
    transaction records it first); without it, a missing component raises ``FileNotFoundError``. ``root`` itself is
    the registry the user named, and may be reached through links."""
    root = Path(root)
    parts = _path_parts(rel)
    if not DIR_FDS:
        return _open_by_path(root, parts, make)
    fd = os.open(root, os.O_RDONLY | _O_DIRECTORY | _O_CLOEXEC)
    done: list[str] = []
    try:
        for part in parts:
            sofar = "/".join([*done, part])
            try:
                nfd = os.open(part, os.O_RDONLY | _O_DIRECTORY | _O_NOFOLLOW | _O_CLOEXEC, dir_fd=fd)
            except FileNotFoundError:
                if make is None:
                    raise
                make(root / sofar)
                os.mkdir(part, dir_fd=fd)
                nfd = os.open(part, os.O_RDONLY | _O_DIRECTORY | _O_NOFOLLOW | _O_CLOEXEC, dir_fd=fd)
            except OSError:  # ELOOP (Linux, macOS) or EMLINK (FreeBSD) for a link, ENOTDIR for a file
                st = os.stat(part, dir_fd=fd, follow_symlinks=False)
                if stat.S_ISDIR(st.st_mode):
                    raise
                _refuse_component(root, sofar, st)
            os.close(fd)
            fd = nfd
            done.append(part)
    except BaseException:
        os.close(fd)
        raise
    return RegistryDir(root / "/".join(parts) if parts else root, fd)


def refuse_unsafe_path(root: str | os.PathLike[str], rel: str) -> None:
    """Refuse now (:class:`RefusedError`) a write of the file ``rel`` that :class:`Transaction` would refuse at its
    first step because a directory on its way is a symbolic link (or no directory), or the file itself is a link:
    for a command to say so before a long step (``add`` copying a weight file). Nothing is created."""
    parts = _path_parts(rel)
    for depth in range(len(parts) - 1, -1, -1):  # the deepest directory on the way that exists
        try:
            d = open_registry_dir(root, "/".join(parts[:depth]))
        except FileNotFoundError:
            continue
        try:
            st = d.lstat(parts[-1]) if depth == len(parts) - 1 else None
        finally:
            d.close()
        if st is not None and stat.S_ISLNK(st.st_mode):
            refuse_link(Path(root) / rel, rel)
        return


def _open_by_path(root: Path, parts: list[str], make: Callable[[Path], None] | None) -> RegistryDir:
    """:func:`open_registry_dir` without ``openat``: each component checked with ``lstat`` (and made) by path."""
    path = root
    for i, part in enumerate(parts):
        path = path / part
        st = _lstat(path)
        if st is None:
            if make is None:
                raise FileNotFoundError(2, "No such file or directory", str(path))
            make(path)
            path.mkdir()
        elif not stat.S_ISDIR(st.st_mode) or stat.S_ISLNK(st.st_mode):
            _refuse_component(root, "/".join(parts[: i + 1]), st)
    return RegistryDir(path, None)


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    """Write one file atomically (temp file in the same directory, fsync, rename, fsync dir)."""
    _atomic_write(Path(path), data)


def _atomic_write(path: Path, data: bytes, fault: str = "") -> None:
    tmp = path.with_name(f"{TMP_PREFIX}{_token()}-{path.name}")
    try:
        _refuse_directory(path)
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW | _O_CLOEXEC | _O_BINARY
        with os.fdopen(os.open(tmp, flags, 0o666), "wb") as f:  # a new file, never one a link points to
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        if fault:
            fault_point(fault)
        os.replace(tmp, path)
    except BaseException as e:  # Ctrl-C too: never leave the temporary file behind
        with contextlib.suppress(OSError):
            tmp.unlink()
        if isinstance(e, RegistryIOError):
            raise
        if isinstance(e, OSError):
            raise RegistryIOError(
                f"cannot write {path}: {e.strerror or e}", hint=os_error_hint(e, path.parent), path=str(path)
            ) from e
        raise
    _fsync_dir(path.parent)


def _refuse_directory(final: Path) -> None:
    """A write puts a file at ``final``: refuse (before anything is staged) if a directory is there."""
    if final.is_dir() and not final.is_symlink():
        raise RegistryIOError(
            f"cannot write {final}: it is a directory, where a file belongs",
            hint=f"Remove or rename the directory {final}, then run the command again.",
            path=str(final),
        )


def refuse_link(final: Path, rel: str) -> None:
    """A write replaces ``final``: refuse (nothing published) if it is a symbolic link. Renaming a file over it
    would drop the user's link silently, and writing through it would change another file of the registry (or,
    leaving it, LAY005, a file elsewhere) that SHA256SUMS and git see under its own name. Every writer (``add``,
    ``add-base``, ``readme``, ``sums``, ``sign``) stages through :class:`Transaction`, so all refuse alike
    (``pull`` does not write in a registry: it fills an empty directory)."""
    if not final.is_symlink():
        return
    try:
        target = os.readlink(final)
    except OSError:
        target = "?"
    raise RefusedError(
        f"{final} is a symbolic link (to {target}): not written, since writing would replace the link with a file",
        hint=f'Replace the link with the file it points to (`cp --remove-destination "$(realpath {final})" {final}`), '
        "then run the command again.",
        path=rel,
    )


def refuse_case_twin(root: Path, rel: str) -> None:
    """A write creates ``rel`` (a file or a directory, absent so far): refuse it (:class:`RefusedError`, LAY017) when
    its directory holds another name that differs from it only in letter case or Unicode normalization
    (:func:`~rwkv_registry.index.layout.name_key`): on macOS and Windows the two would be one file."""
    from rwkv_registry.index.layout import name_key

    parent_rel, _, name = rel.rpartition("/")
    parent = root / parent_rel if parent_rel else root
    key = name_key(name)
    try:
        with os.scandir(parent) as entries:
            twin = next((e.name for e in entries if e.name != name and name_key(e.name) == key), None)
    except OSError:
        return  # a directory still to be made, or unreadable: nothing there to collide with
    if twin is not None:
        shown = f"{parent_rel}/{twin}" if parent_rel else twin
        raise RefusedError(
            f"{clip(rel)!r} and {clip(shown)!r} differ only in letter case or Unicode normalization (LAY017): on "
            "macOS and Windows they would be one file; nothing was written",
            hint=f"Give it another name. {CASE_TWIN_HINT}",
            path=clip(rel),
        )


def is_transient(name: str) -> bool:
    """Whether ``name`` is one a write leaves: the lock, the journal, a temporary file, the dirs record."""
    return name.startswith(".rwkv-registry")


def registry_around(path: Path) -> Path | None:
    """The root of the registry holding ``path``: ``path`` itself or the nearest directory above it
    with index.json beside SHA256SUMS or README.md; None outside every registry."""
    for d in [path, *path.parents] if path.is_dir() else path.parents:
        if (d / "index.json").is_file() and ((d / SUMS_NAME).is_file() or (d / "README.md").is_file()):
            return d
    return None


def require_directory(root: Path, hint: str = "Give the registry's root directory (the one with index.json).") -> None:
    """A :class:`UsageError` naming ``root`` and why it is no directory (absent, a dangling or looping
    symbolic link, or a file); a :class:`RegistryIOError` when it, or a directory above it, cannot be
    searched (``stat`` raises ``EACCES`` rather than saying "absent")."""
    try:
        if not root.exists():
            dangling = root.is_symlink()
            why = "a symbolic link that leads nowhere: dangling, or a loop" if dangling else "it does not exist"
            raise UsageError(f"{root}: not a directory ({why})", hint=hint, path=str(root))
        if not root.is_dir():
            raise UsageError(f"{root}: not a directory (it is a file)", hint=hint, path=str(root))
        (root / "index.json").exists()  # the directory itself can be searched
    except OSError as e:
        raise RegistryIOError(
            f"{root}: cannot be read: {e.strerror or e}",
            hint=f"Check the permissions of {root} and of every directory above it (r and x are needed), "
            "and that its file system is mounted.",
            path=str(root),
        ) from e


def require_reachable(path: Path, flag: str = "") -> None:
    """A :class:`RegistryIOError` naming ``path`` (after ``flag``, e.g. ``"--base-file "``) when it cannot even
    be looked at: under a directory without search permission, ``Path.exists``/``is_file``/``is_dir`` raise
    ``PermissionError`` instead of answering."""
    try:
        path.exists()
    except OSError as e:
        raise RegistryIOError(
            f"{flag}{path}: cannot be read: {e.strerror or e}",
            hint="Check the permissions of the directories above it (x is needed to reach a file, r to read it).",
            path=str(path),
        ) from e


def index_link_outside(root: str | os.PathLike[str]) -> str | None:
    """Where ``root/index.json`` points when it is a symbolic link leaving the registry (``validate``: LAY005),
    else None: following it, readers would show another registry's index, and writers would read it and replace
    the link by a file."""
    path = os.path.join(root, "index.json")
    try:
        if not os.path.islink(path):
            return None
        link = os.readlink(path)
    except OSError:
        return None
    return None if within(Path(os.path.realpath(root)), path) else link


def refuse_index_link(root: str | os.PathLike[str]) -> None:
    """Raise :class:`RefusedError` (exit 1, as ``validate`` fails on it) when index.json is a symbolic link leaving
    the registry (LAY005): nothing is read through it or written."""
    link = index_link_outside(root)
    if link is not None:
        raise RefusedError(
            f"{os.path.join(root, 'index.json')} is a symbolic link to {link}, outside the registry (LAY005): "
            "not followed (nothing read through it, nothing written)",
            hint=LINK_OUTSIDE_HINT,
            path="index.json",
        )


def require_registry(root: str | os.PathLike[str], *, creating: bool = False, strict: bool = False) -> Path:
    """``root`` as a Path, checked to be a registry before anything is created in it.

    A registry is a directory holding ``index.json``, or (unless ``strict``) one holding nothing
    but the transient files of an interrupted rwkv-registry write (a killed ``init``), which
    :func:`recover` cleans. ``creating`` (``init``): the directory must exist; it need not be a
    registry yet. Raises :class:`UsageError` naming the path (and the registry around it, if
    there is one). An index.json that is a symbolic link leaving the registry (LAY005) is refused
    (:func:`refuse_index_link`).
    """
    root = Path(root)
    require_directory(root)
    if not creating:
        refuse_index_link(root)
    if creating or (root / "index.json").exists():
        return root
    try:
        names = [n for n in os.listdir(root) if n != ".git"]
    except OSError as e:
        raise RegistryIOError(
            f"cannot read the directory {root}: {e.strerror or e}", hint=os_error_hint(e, root), path=str(root)
        ) from e
    if names and all(is_transient(n) for n in names) and not strict:
        return root  # an interrupted init: recover() cleans it
    above = registry_around(root.absolute())
    if above is not None:
        rel = os.path.relpath(above)
        shown = str(above) if rel.startswith("..") else rel
        hint = f"{root} lies inside the registry {shown}: give {shown}."
    else:
        hint = (
            f"Give the registry's root directory (the one with index.json). To make {root} a registry: "
            f"`rwkv-registry init {root}` (an empty directory)."
        )
    raise UsageError(f"{root} is not a registry (no index.json); give the registry root", hint=hint, path=str(root))


def _stderr_is_terminal() -> bool:
    try:
        return bool(sys.stderr is not None and sys.stderr.isatty())
    except (AttributeError, ValueError, OSError):
        return False


def _refuse_lock_link(root: Path) -> None:
    """Refuse to take the lock when ``.rwkv-registry.lock`` is a symbolic link: the lock library opens it with
    ``O_TRUNC`` and would empty the file the link points to (a registry from a stranger may hold such a link). What
    is left is a link put there between this check and the open, by a process that can already write in the
    registry. (A directory in its place is the lock library's own error: a :class:`RegistryIOError`.)"""
    st = _lstat(root / LOCK_NAME)
    if st is not None and stat.S_ISLNK(st.st_mode):
        _refuse_component(root, LOCK_NAME, st, lock=True)


@contextlib.contextmanager
def registry_lock(
    root: str | os.PathLike[str], *, timeout: float = 30.0, quiet: bool = False, creating: bool = False
) -> Iterator[list[str]]:
    """Hold the registry's write lock; recovers an interrupted write first.

    ``root`` must be a registry (:func:`require_registry`; ``creating=True`` for ``init``, which
    makes one): nothing, not even the lock file, is created in any other directory. Yields the
    list of recovery messages (empty when there was nothing to recover). Unless ``quiet``, they
    are also logged as a warning on the ``rwkv_registry`` logger, which Python prints on stderr
    when no logging is configured. A writer that has to wait says so on stderr, after
    WAIT_NOTICE_TTY_S when stderr is a terminal, else after WAIT_NOTICE_S.
    """
    from filelock import FileLock, Timeout

    root = require_registry(root, creating=creating)
    _refuse_lock_link(root)
    lock = FileLock(str(root / LOCK_NAME), timeout=timeout)
    notice = WAIT_NOTICE_TTY_S if _stderr_is_terminal() else WAIT_NOTICE_S
    try:
        try:
            lock.acquire(timeout=min(notice, timeout))
        except Timeout:
            if timeout <= notice:
                raise
            sys.stderr.write(
                f"{root}: waiting for the lock held by another rwkv-registry command… (up to {timeout:g} s)\n"
            )
            sys.stderr.flush()
            lock.acquire(timeout=timeout - notice)
    except Timeout:
        raise LockedError(
            f"{root}: another rwkv-registry command is writing (lock {LOCK_NAME} held for {timeout:g} s)",
            hint="Wait for it to finish and run the command again.",
        ) from None
    except OSError as e:
        raise RegistryIOError(
            f"cannot create the lock file {root / LOCK_NAME}: {e.strerror or e}",
            hint=f"Every write takes a lock file in the registry: {root} must be writable (check its "
            "permissions, and whether its file system is mounted read-only).",
            path=str(root),
        ) from e
    real = os.path.realpath(root)
    try:
        listing: Listing = []
        messages = recover(root, listing)  # its walk of the tree is kept for compute_sums (tree_listing)
        _listings[real] = listing
        if messages and not quiet:
            _log().warning("%s: %s", root, "; ".join(messages))
        yield messages
    finally:
        _listings.pop(real, None)
        lock.release()


Listed = tuple[str, str, "list[os.DirEntry[str]] | OSError"]
"""What :func:`scan_tree` yields for one directory: its path, its relative prefix, its entries (or why not)."""


def scan_tree(root: Path | str, *, sort_entries: bool = False, sort_dirs: bool = False) -> Iterator[Listed]:
    """The one walk of a registry's tree, for the writers (:func:`tree_files`) and for ``validate``
    (:func:`rwkv_registry.engine.validate.walk_tree`): ``(directory, prefix, entries)`` for ``root`` and every
    directory entered under it, top-down (a directory before those inside it, as a top-down ``os.walk``).
    ``directory`` is the path os.walk would give, ``prefix`` ``""`` or ``"a/b/"``; ``entries`` the directory's
    listing (one ``scandir``, no stat per entry; with ``sort_entries``, sorted by name) or the ``OSError`` of a
    directory that could not be listed. Entered: each entry that is a directory (a link followed, as os.walk's
    ``is_dir``; an entry that cannot be asked is not one) and not a symbolic link (never followed), except ``.git``
    at the top, listed among the top's entries but never entered; in the listing's order, or by name (``sort_dirs``,
    or ``sort_entries``). Iterative: a tree nested deeper than Python's recursion limit is walked too."""
    stack: list[tuple[str, str, bool]] = [(os.fspath(root), "", True)]
    while stack:
        dirpath, prefix, top = stack.pop()
        try:
            with os.scandir(dirpath) as listing:
                entries = list(listing)
        except OSError as e:
            yield dirpath, prefix, e
            continue
        if sort_entries:
            entries.sort(key=lambda e: e.name)
        yield dirpath, prefix, entries
        inner: list[os.DirEntry[str]] = []
        for entry in entries:
            try:
                if not entry.is_dir() or (top and entry.name == ".git"):
                    continue
            except OSError:
                continue
            try:
                link = entry.is_symlink()  # os.walk asks os.path.islink: a stat, where this reads the listing's type
            except OSError:
                link = False  # as os.path.islink
            if not link:
                inner.append(entry)
        if sort_dirs and not sort_entries:
            inner.sort(key=lambda e: e.name)
        stack.extend((e.path, f"{prefix}{e.name}/", False) for e in reversed(inner))  # popped in order


def tree_files(root: Path, *, sort_dirs: bool = False) -> Iterator[tuple[str, str, os.DirEntry[str]]]:
    """``(directory, relative prefix, entry)`` of everything under ``root`` that is not a directory, in the order of a
    top-down ``os.walk(root)`` (with ``sort_dirs``: its directory names sorted) that skips ``.git`` at the top
    (:func:`scan_tree`'s walk): a directory that cannot be listed is skipped, and a link to one is not entered, as
    there. No stat per file (the walk plus a ``Path`` per directory was about 50 ms of every write at 4,000
    entries)."""
    for dirpath, prefix, entries in scan_tree(root, sort_dirs=sort_dirs):
        if isinstance(entries, OSError):
            continue
        for entry in entries:
            try:
                is_dir = entry.is_dir()  # follows a link, as os.walk's
            except OSError:
                is_dir = False
            if not is_dir:
                yield dirpath, prefix, entry


Listing = list[tuple[str, str, os.DirEntry[str]]]
"""What :func:`tree_files` yields, kept."""

_listings: dict[str, Listing] = {}
"""The tree of each registry whose lock this process holds (by resolved root), as :func:`registry_lock`'s
:func:`recover` walked it (:func:`tree_files` from the resolved root, directories sorted), temporary files left out:
:func:`tree_listing` gives it instead of walking the tree again. Dropped when the lock is released and when a
:class:`Transaction` of the registry commits (the files it renamed in are not in it)."""


def tree_listing(root: Path) -> Listing:
    """``list(tree_files(root, sort_dirs=True))`` for ``root`` resolved, temporary files (``TMP_PREFIX``) left out:
    under :func:`registry_lock`, before any commit, the walk its :func:`recover` made (a write stages nothing but
    temporary files until it commits); otherwise walked now."""
    kept = _listings.get(os.fspath(root))
    if kept is not None:
        return kept
    return [x for x in tree_files(root, sort_dirs=True) if not x[2].name.startswith(TMP_PREFIX)]


def _temp_files(root: Path, listing: Listing | None = None) -> list[Path]:
    """The temporary files under ``root`` (the dirs record at the top aside); ``listing`` (given): filled with the
    other files, as :func:`tree_listing` gives them (walked from ``root`` resolved)."""
    found = []
    top = root if listing is None else Path(os.path.realpath(root))
    for d, rel, e in tree_files(top, sort_dirs=listing is not None):
        if not e.name.startswith(TMP_PREFIX):
            if listing is not None:
                listing.append((d, rel, e))
        elif rel or e.name != DIRS_NAME:
            found.append(Path(d) / e.name)
    return found


def _created_dirs(root: Path) -> list[Path]:
    """Directories recorded in DIRS_NAME (complete lines only), deepest first, all inside ``root``."""
    try:
        text = (root / DIRS_NAME).read_bytes().decode("utf-8", "replace")
    except OSError:
        return []
    lines = text.split("\n")[:-1]  # a line without its newline was cut by a crash: ignore it
    out = []
    for rel in lines:
        safe = rel and not rel.startswith("/") and all(p not in ("", ".", "..") for p in rel.split("/"))
        if safe and _inside(root, root / rel):
            out.append(root / rel)
    return sorted(set(out), key=lambda p: len(p.parts), reverse=True)


def _remove_empty_dirs(dirs: Iterable[Path]) -> int:
    removed = 0
    for d in dirs:
        try:
            d.rmdir()  # only succeeds on an empty directory
            removed += 1
        except OSError:
            pass
    return removed


def _inside(root: Path, path: Path) -> bool:
    """Is ``path`` (symbolic links resolved) inside ``root``?"""
    return within(Path(os.path.realpath(root)), path)


def within(real_root: Path, path: str | os.PathLike[str]) -> bool:
    """Does ``path``, symbolic links resolved, stay at or under ``real_root`` (itself already resolved)? The test of
    a link that leaves the registry (``validate``'s LAY005), shared by every reader and writer."""
    target = Path(os.path.realpath(path))
    return target == real_root or real_root in target.parents


def _read_journal(root: Path, journal: Path) -> list[tuple[Path, Path]]:
    """The (temporary, final) pairs of a journal, each checked to be a rename that a
    :class:`Transaction` makes: a temporary file next to its final name, inside the registry.
    A journal that asks for anything else (a registry from a stranger may hold one) is refused."""
    hint = "Inspect the registry with `git status`, restore it, then delete the journal."
    try:
        if journal.stat().st_size > MAX_JOURNAL:
            raise ValueError(f"{journal.stat().st_size} bytes, more than a journal ever holds")
        plan = json.loads(journal.read_bytes().decode("utf-8"))
        renames = [(a, b) for a, b in plan["renames"]]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise RegistryIOError(f"{journal}: unreadable journal of an interrupted write ({e})", hint=hint) from e
    out = []
    for tmp, final in renames:
        ok = isinstance(tmp, str) and isinstance(final, str)
        if ok:
            parts_t, parts_f = tmp.split("/"), final.split("/")
            ok = (
                not tmp.startswith("/")
                and "\\" not in tmp + final
                and all(p not in ("", ".", "..") for p in parts_t + parts_f)
                and parts_t[:-1] == parts_f[:-1]
                and parts_t[-1].startswith(TMP_PREFIX)
                and not parts_f[-1].startswith(TMP_PREFIX)
                and _inside(root, root / final)
            )
        if not ok:
            raise RegistryIOError(
                f"{journal}: the journal asks to rename {tmp!r} to {final!r}, which no rwkv-registry write does; "
                "nothing was changed",
                hint="The journal was not written by rwkv-registry. " + hint,
            )
        out.append((root / tmp, root / final))
    return out


def recover(root: str | os.PathLike[str], listing: Listing | None = None) -> list[str]:
    """Finish or undo an interrupted write. Call only while holding the lock. ``listing``: filled with the files of
    the tree once it is done, temporary files aside (:func:`tree_listing`).

    Ctrl-C is held back until it is done."""
    with interrupts_deferred():
        return _recover(Path(root), listing)


def _recover(root: Path, listing: Listing | None = None) -> list[str]:
    messages: list[str] = []
    journal = root / JOURNAL_NAME
    if journal.exists():
        renames = _read_journal(root, journal)
        done = 0
        for src, dst in renames:
            rel_dir = dst.parent.relative_to(root).as_posix()
            try:  # the journal's directory opened as every write opens it: never through a link (RefusedError)
                d = open_registry_dir(root, "" if rel_dir == "." else rel_dir)
            except FileNotFoundError:
                continue  # its temporary file cannot be there either
            except OSError as e:
                raise RegistryIOError(
                    f"{root}: cannot finish an interrupted write ({done} of {len(renames)} file(s) done, the journal "
                    f"is kept): {e.strerror or e}",
                    hint="Fix that, then run `rwkv-registry recover` again.",
                    path=str(dst),
                ) from e
            try:
                if d.lstat(src.name) is None:
                    continue
                try:
                    st = d.lstat(dst.name)
                    if st is not None and stat.S_ISDIR(st.st_mode):
                        _refuse_directory(dst)
                    d.replace(src.name, dst.name)
                except OSError as e:
                    raise RegistryIOError(
                        f"{root}: cannot finish an interrupted write ({done} of {len(renames)} file(s) done, "
                        f"the journal is kept): {e.strerror if not isinstance(e, RegistryIOError) else e.message}",
                        hint="Fix that (e.g. remove the directory in the way), then run `rwkv-registry recover` again.",
                        path=str(dst),
                    ) from e
                d.fsync()
                done += 1
            finally:
                d.close()
        journal.unlink()
        _fsync_dir(root)
        messages.append(f"completed an interrupted write ({done} of {len(renames)} file(s) were pending)")
        created: list[Path] = []  # rolled forward: the directories now hold the new files
    else:
        created = _created_dirs(root)
    leftovers = _temp_files(root, listing)
    for p in leftovers:
        with contextlib.suppress(OSError):
            p.unlink()
    removed_dirs = _remove_empty_dirs(created)
    if (root / DIRS_NAME).exists():  # last: a crash before this line leaves the record for the next recover
        with contextlib.suppress(OSError):
            (root / DIRS_NAME).unlink()
            leftovers.append(root / DIRS_NAME)
    if leftovers or removed_dirs:
        dirs = f" and {removed_dirs} empty directory(ies)" if removed_dirs else ""
        messages.append(f"removed {len(leftovers)} temporary file(s){dirs} of an interrupted write")
    return messages


class Transaction:
    """Stage several files, then publish them all or none (see the module docstring)."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)
        self.staged: list[tuple[Path, Path]] = []  # (tmp, final), absolute
        self.created_dirs: list[Path] = []
        self._temps: list[Path] = []  # every temporary file, noted before it is opened (Ctrl-C mid-write)
        self._dirs_record = False  # this transaction wrote DIRS_NAME
        self._journaled = False  # the journal is in place: from now on the write rolls forward
        self._expected: dict[str, Seen | None] = {}  # files read before the write, which must not change before it
        self._dirs: dict[str, RegistryDir] = {}  # the directories written in, by registry-relative path ("": root)
        self._where: dict[Path, tuple[RegistryDir, str, str]] = {}  # tmp path -> (its directory, tmp name, final)

    def expect_unchanged(self, stamps: Mapping[str, Seen | None]) -> None:
        """Refuse the commit if one of these files (registry-relative, seen by :func:`read_stamps` before the
        caller read them) is not as seen just before the journal, or just before the first rename: an editor saved
        it meanwhile, and the copy this write was made from is stale."""
        self._expected.update(stamps)

    def check_unchanged(self) -> None:
        """Refuse now (:class:`RefusedError`; the caller's ``with`` rolls back) if a file given to
        :meth:`expect_unchanged` changed: before a long step (``add`` copying a weight file), so that a stale write
        stops before it, not after. Stamps only; the last check, in :meth:`commit`, also compares content."""
        self._refuse_changed(content=False)

    def _changed(self, content: bool) -> str | None:
        """The first file read that is no longer as seen (``content``: its sha256 compared too, where recorded)."""
        for rel, seen in self._expected.items():
            path = self.root / rel
            stamp = file_stamp(path)
            if seen is None:
                if stamp is not None:
                    return rel
            elif stamp != seen.stamp or (content and seen.sha256 is not None and _content_sha256(path) != seen.sha256):
                return rel
        return None

    def _refuse_changed(self, content: bool) -> None:
        rel = self._changed(content)
        if rel is not None:
            self._refuse(rel)

    def _refuse(self, rel: str) -> None:
        what = "created" if self._expected[rel] is None else "changed or removed"
        raise RefusedError(
            f"{self.root / rel} was {what} after this command read it (saved by an editor meanwhile?): nothing "
            f"was written, and {rel} is kept as it is now",
            hint="Run the command again: it reads the file anew.",
            path=rel,
        )

    def _drop_journal(self, journal: Path, rel: str) -> None:
        """Undo the journal (nothing renamed yet): the write is then refused whole, as before the journal."""
        try:
            journal.unlink()
        except OSError as e:
            raise RegistryIOError(
                f"{self.root / rel} changed after this command read it, and the journal {journal} could not be "
                f"removed ({e.strerror or e}): the write was not made, but the journal would finish it",
                hint=f"Delete {journal} (nothing was renamed yet), then run the command again.",
                path=str(journal),
            ) from e
        _fsync_dir(self.root)
        self._journaled = False

    def _record_dir(self, d: Path) -> None:
        """Note ``d`` in DIRS_NAME (fsync'ed) before creating it, so that recover can remove it."""
        line = d.relative_to(self.root).as_posix() + "\n"
        self._dirs_record = True
        try:
            flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | _O_NOFOLLOW | _O_CLOEXEC | _O_BINARY
            top = self._dir("")
            where, kw = top._at(DIRS_NAME)
            with os.fdopen(os.open(where, flags, 0o666, **kw), "ab") as f:
                f.write(line.encode("utf-8", "surrogateescape"))
                f.flush()
                os.fsync(f.fileno())
        except OSError as e:
            raise RegistryIOError(
                f"cannot write {self.root / DIRS_NAME}: {e.strerror or e}",
                hint=os_error_hint(e, self.root),
                path=DIRS_NAME,
            ) from e

    def _dir(self, rel_dir: str) -> RegistryDir:
        """The directory ``rel_dir`` of the registry, opened once per transaction by :func:`open_registry_dir` (never
        through a link); the directories missing on the way are created, each recorded first (:meth:`_record_dir`)."""
        d = self._dirs.get(rel_dir)
        if d is None:
            d = open_registry_dir(self.root, rel_dir, make=self._make_dir if rel_dir else None)
            self._dirs[rel_dir] = d
        return d

    def _make_dir(self, d: Path) -> None:
        """Called by :func:`open_registry_dir` before it creates ``d``."""
        if self.created_dirs:  # the one before is made now: its crash-test point
            fault_point(f"mkdir-{len(self.created_dirs) - 1}")
        refuse_case_twin(self.root, d.relative_to(self.root).as_posix())
        self._record_dir(d)
        self.created_dirs.append(d)  # before mkdir: a Ctrl-C right after it still removes it

    def _tmp_for(self, rel: str) -> tuple[Path, Path]:
        parts = _path_parts(rel)
        if not parts:
            _path_parts("/")  # the root itself is no file: refused
        rel_dir, name = "/".join(parts[:-1]), parts[-1]
        made = len(self.created_dirs)
        try:
            d = self._dir(rel_dir)
        except OSError as e:
            if isinstance(e, RegistryIOError):
                raise
            where = self.root / rel_dir
            raise RegistryIOError(
                f"cannot create the directory {where}: {e.strerror or e}", hint=os_error_hint(e, where), path=str(where)
            ) from e
        if len(self.created_dirs) > made:
            fault_point(f"mkdir-{len(self.created_dirs) - 1}")
        final = self.root / rel
        st = d.lstat(name)
        if st is not None and stat.S_ISDIR(st.st_mode):
            _refuse_directory(final)
        if st is not None and stat.S_ISLNK(st.st_mode):
            refuse_link(final, rel)
        if st is None:
            refuse_case_twin(self.root, rel)
        tmp_name = f"{TMP_PREFIX}{_token()}-{name}"
        tmp = final.with_name(tmp_name)
        self._where[tmp] = (d, tmp_name, name)
        return tmp, final

    def _write_staged(self, tmp: Path, chunks: Iterable[bytes]) -> None:
        """Write, flush and fsync one staged file (fault points partial-<i> and written-<i>), created in the
        directory checked by :meth:`_tmp_for` (its descriptor), never through a link."""
        index = len(self.staged)
        d, tmp_name, _ = self._where[tmp]
        with d.create(tmp_name) as f:
            self._write_chunks(f, chunks, index)
            f.flush()
            os.fsync(f.fileno())
        fault_point(f"written-{index}")

    @staticmethod
    def _write_chunks(f: BinaryIO, chunks: Iterable[bytes], index: int) -> None:
        first = True
        for chunk in chunks:
            if first:  # a crash-test point halfway through the first chunk
                f.write(chunk[: len(chunk) // 2])
                f.flush()
                fault_point(f"partial-{index}")
                f.write(chunk[len(chunk) // 2 :])
                first = False
            else:
                f.write(chunk)
        if first:
            fault_point(f"partial-{index}")

    def write_bytes(self, rel: str, data: bytes) -> None:
        """Stage ``data`` as the new content of ``rel`` (registry-relative POSIX path)."""
        tmp, final = self._tmp_for(rel)
        self._temps.append(tmp)
        try:
            self._write_staged(tmp, [data])
        except OSError as e:
            raise RegistryIOError(
                f"cannot write {final}: {e.strerror or e}", hint=os_error_hint(e, final.parent), path=rel
            ) from e
        self.staged.append((tmp, final))

    def copy_file(self, rel: str, src: str | os.PathLike[str]) -> None:
        """Stage a copy of ``src`` as ``rel``."""
        tmp, final = self._tmp_for(rel)
        self._temps.append(tmp)
        try:
            with open(src, "rb") as fin:
                self._write_staged(tmp, iter(lambda: fin.read(8 << 20), b""))
        except OSError as e:
            raise RegistryIOError(
                f"cannot copy {src} to {final}: {e.strerror or e}",
                hint=os_error_hint(e, e.filename or final.parent),
                path=rel,
            ) from e
        self.staged.append((tmp, final))

    def mkdir(self, rel: str) -> None:
        """Create a directory (and its parents) as part of the transaction."""
        self._tmp_for(rel + "/.keep")

    def staged_sha256(self, rel: str) -> str:
        """The sha256 of the file staged for ``rel``, read back through its directory's descriptor."""
        import hashlib

        final = self.root / rel
        tmp = next(t for t, f in self.staged if f == final)
        d, tmp_name, _ = self._where[tmp]
        h = hashlib.sha256()
        with d.open_read(tmp_name) as f:
            for chunk in iter(lambda: f.read(8 << 20), b""):
                h.update(chunk)
        return h.hexdigest()

    def _close_dirs(self) -> None:
        for d in self._dirs.values():
            d.close()
        self._dirs.clear()
        self._where.clear()

    def commit(self) -> None:
        """Publish every staged file (journal, renames, fsyncs).

        Ctrl-C is held back from the journal on, and raised once the commit is complete. An I/O
        error after the journal keeps the journal and the temporary files: `recover` finishes.
        """
        global _commits
        fault_point("staged")
        self._refuse_changed(content=False)  # before the journal: nothing to undo but the temporary files
        read = {self.root / rel for rel in self._expected}
        order = sorted(self.staged, key=lambda pair: pair[1] not in read)  # the files read first (stable)
        with interrupts_deferred():
            journal = self.root / JOURNAL_NAME
            plan = {"renames": [[str(t.relative_to(self.root)), str(f.relative_to(self.root))] for t, f in order]}
            _atomic_write(journal, json.dumps(plan).encode(), fault="journal-tmp")
            self._journaled = True
            _fsync_dir(self.root)
            fault_point("journal")
            changed = self._changed(content=True)  # the last moment at which the write can be refused whole
            if changed is not None:
                self._drop_journal(journal, changed)
                self._refuse(changed)
            final = journal
            try:
                for i, (tmp, final) in enumerate(order):  # noqa: B007 (final: named by the error below)
                    # the files read are renamed back to back, right after the check
                    d, tmp_name, name = self._where[tmp]
                    d.replace(tmp_name, name)  # in the directory checked, whatever a link swapped in meanwhile
                    fault_point(f"rename-{i}")
                for d in dict.fromkeys(self._where[t][0] for t, _ in order):  # a crash before: recover renames again
                    d.fsync()
                with contextlib.suppress(FileNotFoundError):
                    (self.root / DIRS_NAME).unlink()  # before the journal: a crash now rolls forward
                fault_point("renamed")
                final = journal
                journal.unlink()
            except OSError as e:
                raise RegistryIOError(
                    f"cannot finish the write: {final}: {e.strerror or e} (its journal {JOURNAL_NAME} is kept)",
                    hint=f"Fix that, then run `rwkv-registry recover {self.root}` to finish the write.",
                    path=str(final),
                ) from e
            _fsync_dir(self.root)
            _listings.pop(os.path.realpath(self.root), None)  # the tree now holds the files renamed in
            fault_point("committed")
            self.staged.clear()
            self._temps.clear()
            self.created_dirs.clear()
            self._close_dirs()
            self._dirs_record = self._journaled = False
            _commits += 1

    def rollback(self) -> None:
        """Drop every staged file and the directories this transaction created.

        Not after the journal is in place: then the write rolls forward (`recover` finishes it)."""
        if self._journaled:
            return
        with interrupts_deferred():
            for tmp in self._temps:
                with contextlib.suppress(OSError):
                    d, tmp_name, _ = self._where[tmp]
                    d.unlink(tmp_name)  # in the directory it was created in
            for made in reversed(self.created_dirs):
                with contextlib.suppress(OSError):
                    rel = made.relative_to(self.root).as_posix()
                    parent = open_registry_dir(self.root, rel.rpartition("/")[0])
                    try:
                        parent.rmdir(made.name)  # only an empty one; never through a link
                    finally:
                        parent.close()
            if self._dirs_record:
                with contextlib.suppress(OSError):
                    self._dir("").unlink(DIRS_NAME)
            self.staged.clear()
            self._temps.clear()
            self.created_dirs.clear()
            self._close_dirs()
            self._dirs_record = False

    def __enter__(self) -> Transaction:
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if exc_type is not None or self.staged or self._temps:
            self.rollback()
        self._close_dirs()
