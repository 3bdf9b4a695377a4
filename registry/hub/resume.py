"""A pull's large files, downloaded so that a download cut short is continued, not started again.

huggingface_hub (2.4) writes each download to a temporary file of a random name and deletes it on any error, so
nothing of a file cut short survives for a later run. ``pull`` therefore downloads every file of
:data:`RESUMABLE_BYTES` or more itself (the weights: a MiSS adapter of a 7.2B base is GBs), with huggingface_hub's
own public API: :func:`~huggingface_hub.hf_hub_url` and :func:`~huggingface_hub.get_hf_file_metadata` for the
``resolve`` URL and the storage location it redirects to (LFS: a CDN), and its HTTP session through
:meth:`rwkv_registry.hub.transport.Fetcher.resume` (:func:`~huggingface_hub.utils.build_hf_headers`: the token goes to
the Hub only, never to the CDN, and never to disk or a message).

Its bytes go to ``STAGING/.cache/huggingface/rwkv-registry-partial/KEY.part``, KEY being the sha256 of what the
bytes must be: the repository, the commit being pulled, the file's path, its listed size and its sha256 (LFS) or
git blob id; ``KEY.json`` beside it says the same in words, and is written (atomically) before the first byte. A
rerun of the same pull continues a partial file only under the same KEY, with a matching ``KEY.json``, and not
larger than the listed size; any other partial file is deleted. Once complete, the file is moved to its place in
the staging directory, where the pull checks its size and sha256 or git blob id against the listing (the one read
of the file): a continued file that fails is deleted and fetched whole once (:func:`rwkv_registry.hub.sync`).
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

from rwkv_registry.core.errors import RegistryIOError
from rwkv_registry.fs.atomic import atomic_write_bytes
from rwkv_registry.hub.remote import RemoteRepo, hub_error
from rwkv_registry.hub.transport import DownloadCut, RangeNotSatisfiable

__all__ = [
    "PARTIAL_DIR",
    "RESUMABLE_BYTES",
    "DownloadCancelled",
    "fetch_resumable",
    "partial_bytes",
    "prune_partials",
    "resumable",
]

RESUMABLE_BYTES = 8 * 1024 * 1024  # files this large or larger are downloaded by fetch_resumable
RETRIES = 5  # continuations of a download cut by the network, within one pull (each must bring new bytes)
PARTIAL_DIR = ".cache/huggingface/rwkv-registry-partial"  # inside the staging directory (a pull removes .cache)


class DownloadCancelled(BaseException):
    """Raised in a download worker, between two chunks, once ``stop`` is set (Ctrl-C in the main thread, or another
    worker failed): the bytes received stay in the partial file, for the next pull to continue. A BaseException, so
    that no ``except Exception`` on the way (the HTTP client's, a retry) takes it for a network error."""


def _check(stop: threading.Event | None) -> None:
    if stop is not None and stop.is_set():
        raise DownloadCancelled


def resumable(remote: RemoteRepo, rels: list[str]) -> list[str]:
    """The files of ``rels`` that :func:`fetch_resumable` downloads (sorted): those of :data:`RESUMABLE_BYTES` or
    more."""
    return sorted(r for r in rels if remote.files[r].size >= RESUMABLE_BYTES)


def _identity(remote: RemoteRepo, rel: str) -> dict[str, object]:
    entry = remote.files[rel]
    return {
        "repo": remote.repo_id,
        "commit": remote.sha,
        "path": rel,
        "size": entry.size,
        "sha256" if entry.lfs_sha256 is not None else "git_blob_id": entry.lfs_sha256 or entry.blob_id,
    }


def _key(identity: dict[str, object]) -> str:
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()


def _paths(staging: Path, remote: RemoteRepo, rel: str) -> tuple[Path, Path, bytes]:
    identity = _identity(remote, rel)
    key = _key(identity)
    folder = staging / PARTIAL_DIR
    return folder / f"{key}.part", folder / f"{key}.json", json.dumps(identity, sort_keys=True).encode() + b"\n"


def prune_partials(staging: Path, remote: RemoteRepo, rels: list[str]) -> dict[str, int]:
    """Delete every partial file under ``staging`` that is not one of ``rels`` at this commit (another commit's,
    another size or digest, one whose ``KEY.json`` is missing or says otherwise, one larger than the listed size,
    anything else there). Returns the bytes kept of each of ``rels`` that has a partial file."""
    folder = staging / PARTIAL_DIR
    if not folder.is_dir():
        return {}
    wanted: dict[str, tuple[str, bytes]] = {}
    for rel in rels:
        part, meta, identity = _paths(staging, remote, rel)
        wanted[part.name] = (rel, identity)
        wanted[meta.name] = (rel, identity)
    kept: dict[str, int] = {}
    for entry in sorted(os.scandir(folder), key=lambda e: e.name):
        name = entry.name
        ours = wanted.get(name)
        if ours is not None and name.endswith(".part") and entry.is_file(follow_symlinks=False):
            rel, identity = ours
            meta = folder / (name[: -len(".part")] + ".json")
            try:
                size = entry.stat(follow_symlinks=False).st_size
                ok = not meta.is_symlink() and meta.read_bytes() == identity and size <= remote.files[rel].size
            except OSError:
                ok = False
            if ok:
                kept[rel] = size
                continue
        elif ours is not None and name.endswith(".json") and entry.is_file(follow_symlinks=False):
            continue  # judged with its .part (removed below when that is gone)
        _remove(Path(entry.path))
    for entry in os.scandir(folder):  # a KEY.json whose .part went: nothing to continue
        if entry.name.endswith(".json") and not (folder / (entry.name[: -len(".json")] + ".part")).exists():
            _remove(Path(entry.path))
    return kept


def _remove(path: Path) -> None:
    import shutil

    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def partial_bytes(staging: Path) -> int:
    """The bytes of the partial files kept under ``staging`` (0 when there are none)."""
    try:
        return sum(
            e.stat(follow_symlinks=False).st_size
            for e in os.scandir(staging / PARTIAL_DIR)
            if e.name.endswith(".part") and e.is_file(follow_symlinks=False)
        )
    except OSError:
        return 0


def fetch_resumable(
    remote: RemoteRepo,
    staging: Path,
    rel: str,
    *,
    whole: bool = False,
    log: Callable[[str], None] | None = None,
    stop: threading.Event | None = None,
    slot: int | None = None,
) -> int:
    """Download ``rel`` into ``staging/rel``, continuing the partial file an earlier pull left (unless ``whole``:
    it is deleted first). Returns the offset the bytes of this call start from (0: the whole file was fetched;
    the size: the partial file was complete already). The file is NOT checked here: the caller checks it against
    the listing and calls again with ``whole`` when a continued file fails.

    Raises :class:`RegistryIOError` naming the file (a Hub error, a cut connection: the bytes received stay in the
    partial file, for the next pull to continue), :class:`OSError` of the local disk as it is; Ctrl-C leaves the
    partial file continuable too.

    ``stop`` (set by another thread): checked before each request and after each chunk received; once set the
    download ends with :class:`DownloadCancelled`, its bytes kept in the partial file, never moved to ``staging/rel``.
    ``slot``: the line of its progress bar when several downloads run at once (``None``: one at a time)."""
    from huggingface_hub import get_hf_file_metadata

    _check(stop)

    entry = remote.files[rel]
    where = f"{remote.repo_id}@{remote.sha[:12]}: {rel}"
    part, meta, identity = _paths(staging, remote, rel)
    part.parent.mkdir(parents=True, exist_ok=True)
    offset = 0
    if whole:
        part.unlink(missing_ok=True)
    elif part.is_file() and not part.is_symlink():
        try:
            if meta.read_bytes() == identity:
                offset = part.stat().st_size
        except OSError:
            offset = 0
    if offset > entry.size:
        offset = 0  # more bytes than the file has: not this file's
    if offset == 0:
        part.unlink(missing_ok=True)
        atomic_write_bytes(meta, identity)  # before any byte: the partial file is tied to these bytes only
    if offset < entry.size:
        try:
            info = get_hf_file_metadata(
                remote.url(rel), token=remote.fetcher.token, endpoint=remote.endpoint, retry_on_errors=True
            )
        except Exception as e:
            err = hub_error(e, remote.repo_id, remote.sha[:12], remote.endpoint)
            raise RegistryIOError(f"{where}: {err.message}", hint=err.hint, path=rel) from e
        if info.size is not None and info.size != entry.size:
            raise RegistryIOError(
                f"{where}: the Hub says {info.size} bytes when resolved, {entry.size} in its tree listing",
                hint="Something between here and the Hub (its storage, a proxy, HF_ENDPOINT) serves other content "
                "than the repository holds at this commit. Try again, or report it.",
                path=rel,
            )
        _check(stop)
        start = _continue(remote, part, info.location, offset, entry.size, where, rel, stop=stop, slot=slot)
    else:
        start = offset
    _check(stop)  # complete, but the pull is stopping: it stays a partial file (the next pull finds it complete)
    if log is not None:
        if start:
            log(f"resumed {rel} from byte {start} of {entry.size} ({(entry.size - start) / 1e6:.1f} MB fetched)")
        elif offset:
            log(
                f"{rel}: the server ignored or refused the Range request from byte {offset}; fetched whole "
                f"({entry.size / 1e6:.1f} MB)"
            )
    target = staging / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    os.replace(part, target)
    meta.unlink(missing_ok=True)
    return start


def _continue(
    remote: RemoteRepo,
    part: Path,
    url: str,
    offset: int,
    size: int,
    where: str,
    rel: str,
    *,
    stop: threading.Event | None = None,
    slot: int | None = None,
) -> int:
    """Append the rest of the file to ``part`` with one request; a 416 (the storage holds fewer bytes than kept:
    they were not this file's) restarts it from byte 0, once. Returns the offset written from."""
    hint = (
        "The Hub, its storage or the network stopped the download. Run the same pull again: it continues this file "
        "from the bytes received (a Range request), and fetches the other missing files."
    )

    from huggingface_hub.utils import tqdm

    # several at once: one line each (the worker's slot), cleared when done, so that the bars do not overwrite each
    # other; one at a time: huggingface_hub's usual bar, kept
    placed: dict[str, object] = {} if slot is None else {"position": slot, "leave": False}

    def once(start: int) -> int:
        _check(stop)
        # huggingface_hub's progress bar (on stderr; HF_HUB_DISABLE_PROGRESS_BARS turns it off), as for the others
        with (
            open(part, "r+b" if start else "wb") as f,
            tqdm(
                total=size,
                initial=start,
                unit="B",
                unit_scale=True,
                desc=_short(rel),
                name="huggingface_hub.http_get",
                **placed,
            ) as bar,
        ):

            def shown(done: int) -> None:
                bar.update(done - bar.n)
                _check(stop)  # between two chunks: the bytes written so far stay, a prefix of the file

            written_from = remote.fetcher.resume(url, f, start, size, shown)
            f.flush()
            os.fsync(f.fileno())
        return written_from

    try:
        try:
            try:
                start = once(offset)
            except RangeNotSatisfiable:
                if offset == 0:
                    raise
                start = once(0)
        except DownloadCut as cut:  # a flaky link (a 416 restart too): continue from what arrived, while it comes
            start = continue_cut(part, once, cut, stop)
        return start
    except RegistryIOError as e:  # a cut: pull again; an error status or other bytes: that error's own fix
        own = e.hint if e.hint and not isinstance(e, DownloadCut) else hint
        raise RegistryIOError(f"{where}: {e.message}", hint=own, path=rel) from e


def _short(rel: str) -> str:
    return rel if len(rel) <= 40 else f"(…){rel[-40:]}"


def continue_cut(part: Path, once: Callable[[int], int], cut: DownloadCut, stop: threading.Event | None = None) -> int:
    """Continue a download the network cut (``cut``) from the bytes received, up to :data:`RETRIES` times while
    each try brings new bytes. Returns the offset the file was written from (0 if any try wrote it from 0: a
    server that ignored the Range request, even in an answer cut short)."""
    start = cut.written_from
    for _ in range(RETRIES):
        have = part.stat().st_size
        for _ in range(10):  # a second's back-off, cut short when the pull is stopping
            time.sleep(0.1)
            _check(stop)
        try:
            return min(start, once(have))
        except DownloadCut as again:
            cut = again
            start = min(start, again.written_from)
            if part.stat().st_size <= have:  # no progress: give up, keeping what arrived
                break
    raise cut
