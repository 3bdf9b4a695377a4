"""``push`` and ``pull``: move a registry between a local directory and the Hub, validating on the way.

push: the local registry must validate (signatures included when keys are trusted); the remote
branch is pinned at its current commit; only files whose bytes differ from the remote (sha256 for
LFS files, git blob id for the others) are uploaded, and remote files absent locally are deleted,
all in ONE commit created with ``parent_commit`` so that a concurrent push makes it fail instead of
overwriting. Published files are protected by the policy ``validate`` holds a git clone to
(:mod:`rwkv_registry.index.published`), with the Hub's files as the published ones: a push never
changes or deletes a file under a base directory (GIT001, GIT002), adds nothing under a frozen or
superseded base, in the local or the remote index.json (GIT003), never unfreezes a base (GIT005) and
never changes a relied-on base's file (GIT007).

pull: ``snapshot_download`` of the repository at one commit (with ``base``: every small file, and
the weight files of that base only) into a hidden sibling of a new or empty directory, files of
:data:`~rwkv_registry.hub.resume.RESUMABLE_BYTES` or more by pull's own download (a file cut short is
continued by a Range request on the next run: :mod:`rwkv_registry.hub.resume`); every file
downloaded must be one the tree listing names, with its size and sha256 (LFS) or git blob id, else
nothing is kept; with ``trusted_keys`` (``--pubkey``) SHA256SUMS.sig must verify under those keys
and SHA256SUMS must match every file, else nothing is kept; then the files move into place and are
validated. Weights of the other bases are checked against the Hub's metadata in that validation.
"""

from __future__ import annotations

import errno
import glob
import itertools
import os
import re
import shutil
import stat as stat_module
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from rwkv_registry.core.errors import LockedError, RefusedError, RegistryError, RegistryIOError, UsageError
from rwkv_registry.core.fsio import sha256_file
from rwkv_registry.core.rules import Finding
from rwkv_registry.engine.facts import (
    FactsCache,
    FileFacts,
    compute_facts,
    compute_facts_and_blob_id,
    gather_facts,
    stat_key,
)
from rwkv_registry.engine.validate import (
    WEIGHT_SUFFIXES,
    Report,
    Snapshot,
    Tree,
    Validator,
    listed_sums_findings,
    sort_findings,
    validate_registry,
)
from rwkv_registry.fs.atomic import JOURNAL_NAME, LOCK_NAME, TMP_PREFIX, registry_around, require_directory, tree_files
from rwkv_registry.hub.remote import (
    RemoteEntry,
    RemoteRepo,
    check_repo_id,
    connect,
    file_digests,
    git_blob_id,
    hub_error,
)
from rwkv_registry.hub.resume import (
    PARTIAL_DIR,
    DownloadCancelled,
    fetch_resumable,
    partial_bytes,
    prune_partials,
    resumable,
)
from rwkv_registry.index.published import (
    base_dir,
    base_identity_changes,
    bases_by_name,
    change_code,
    closed_bases,
    empty_under,
    reopened,
)

__all__ = ["PullInterrupted", "PushResult", "pull_registry", "push_registry"]

Log = Callable[[str], None]

# pull's large files are downloaded this many at a time (or fewer: one per file). 4 pays where each connection is
# capped (a CDN edge, a congested route: 3x on a link of 50 ms + 20 MB/s per answer) and costs nothing on a link one
# connection fills (docs/hub.md, bench/pull_bench.py --large-workers)
LARGE_WORKERS = 4
# after Ctrl-C (or a failed download) the workers stop at their next chunk; the pull waits this long for them
STOP_WAIT_S = 1.0


@dataclass
class PushResult:
    """What a push did. ``commit`` is None when there was nothing to push."""

    commit: str | None
    parent: str
    uploaded: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    exit_code: int = 0


def _local_files(root: Path) -> dict[str, Path]:
    """Every file a push publishes: the tree without .git and the transient files of a write, as the one tree walk
    of the writers lists it (:func:`~rwkv_registry.fs.atomic.tree_files`), in os.walk's order (directories
    top-down, sorted; each one's files sorted by name)."""
    out: dict[str, Path] = {}
    for _, group in itertools.groupby(tree_files(root, sort_dirs=True), key=lambda found: found[0]):
        for directory, prefix, entry in sorted(group, key=lambda found: found[2].name):
            rel = prefix + entry.name
            if rel in (LOCK_NAME, JOURNAL_NAME) or entry.name.startswith(TMP_PREFIX):
                continue
            out[rel] = Path(directory) / entry.name
    return out


def _remote_index(remote: RemoteRepo, command: str) -> dict[str, Any]:
    """The Hub's index.json ({} when it has none). One that cannot be read is refused: which bases are frozen
    there would be unknown, and a push could then change files under one of them."""
    from rwkv_registry.formats.jsonload import JsonLoadError, load_json_bytes

    if "index.json" not in remote.files:
        return {}
    try:
        value = load_json_bytes(remote.download("index.json"), path="index.json")
    except JsonLoadError as e:
        why = e.message
    else:
        if isinstance(value, dict):
            return value
        why = f"it holds a JSON {type(value).__name__}, not an object"
    raise RefusedError(
        f"{command} refused: {remote.repo_id}@{remote.sha[:12]}: the Hub's index.json cannot be read ({why}), so "
        "which of its bases are frozen is unknown",
        hint=f"Repair index.json on the Hub first (e.g. `hf upload {remote.repo_id} index.json` from a registry "
        "that validates), then run the command again.",
        path="index.json",
    )


def _changed(root: Path, local: dict[str, Path], remote: RemoteRepo) -> list[str]:
    """Local files whose bytes differ from the remote's (or that the remote lacks)."""
    big = {r: p for r, p in local.items() if r.endswith(WEIGHT_SUFFIXES)}
    facts, _ = gather_facts(big, FactsCache(root))  # warm: validation just hashed them
    out = []
    for rel, path in local.items():
        entry = remote.files.get(rel)
        if entry is None:
            out.append(rel)
            continue
        if path.stat().st_size != entry.size:
            out.append(rel)
            continue
        if entry.lfs_sha256 is not None:
            f = facts.get(rel)
            sha = f.sha256 if isinstance(f, FileFacts) else sha256_file(path)[0]
            if sha != entry.lfs_sha256:
                out.append(rel)
        elif git_blob_id(path.read_bytes()) != entry.blob_id:
            out.append(rel)
    return out


def _protected(
    root: Path, changed: list[str], deleted: list[str], remote: RemoteRepo, local_index: Any, remote_index: Any
) -> list[str]:
    """Reasons a push would touch published files (empty when it may go ahead): the immutability policy of
    :mod:`rwkv_registry.index.published`, as ``validate`` applies it against git's history, with the Hub's files
    as what is published."""
    remote_bases, local_bases = bases_by_name(remote_index), bases_by_name(local_index)
    known = set(remote_bases) | set(local_bases)
    closed = closed_bases(remote_bases, local_bases)
    empty = empty_under(root)

    def closed_note(rel: str) -> str:
        base = base_dir(rel, known)
        return f"; base {base} is {closed[base]}" if base in closed else ""

    problems = []
    for rel in changed:
        code = change_code(rel, "M" if rel in remote.files else "A", known, closed, empty)
        if code == "GIT001":
            problems.append(f"{rel} would change on the Hub ({code}: published files never change{closed_note(rel)})")
        elif code == "GIT003":
            base = base_dir(rel, known)
            problems.append(f"{rel} would be added under the {closed[base]} base {base} ({code})")
    for name, _ in reopened(remote_bases, local_bases):  # a frozen base stays frozen (GIT005)
        problems.append(f"index.json would unfreeze the base {name} (GIT005: it is frozen on the Hub)")
    for name, what in base_identity_changes(remote_bases, local_bases, local_index):  # GIT007
        problems.append(f"index.json would change the base {name} published on the Hub: {what} (GIT007)")
    for rel in deleted:
        code = change_code(rel, "D", known, closed)
        if code is not None:
            problems.append(
                f"{rel} would be deleted from the Hub ({code}: published files are never deleted{closed_note(rel)})"
            )
    return problems


def push_registry(
    path: str | os.PathLike[str],
    repo_id: str,
    *,
    revision: str = "main",
    message: str | None = None,
    endpoint: str | None = None,
    token: str | bool | None = None,
    log: Log = print,
) -> PushResult:
    """Validate ``path``, then upload what differs from ``repo_id@revision`` in one commit.

    Raises :class:`RefusedError` (nothing pushed) when local validation fails, when published
    files would change, or when the remote branch moved during the push.
    """
    from huggingface_hub import CommitOperationAdd, CommitOperationDelete

    from rwkv_registry.formats.jsonload import JsonLoadError, load_json_file

    root = Path(path)
    require_directory(root)
    if re.fullmatch(r"[0-9a-f]{7,40}", revision):
        raise UsageError(
            f"--revision {revision}: push commits onto a branch, and this looks like a commit id",
            hint="Give the branch to push to (default main); a commit can be validated or pulled, not pushed onto.",
        )
    check_repo_id(repo_id)  # a mistyped --repo is named at once, not after a whole validation of the weights
    root = root.resolve()
    outer = None if (root / "index.json").exists() else registry_around(root)
    if outer is not None:  # validation would refuse it too, but with `validate`'s hint
        raise UsageError(
            f"{path}: no index.json here; it lies inside the registry at {outer}",
            hint=f"Push the registry's root: rwkv-registry push {outer} --repo {repo_id}",
        )
    with _writers_held_off(root):  # no write may slip in between the validation and the upload
        report = validate_registry(root)
        errors = [f for f in report.findings if str(f.severity) == "error"]
        if errors:
            # a directory that is no registry at all: say so first, not its echoes (LFS002, RDM001 sort before it)
            first = next((f for f in errors if f.code == "SCH004" and f.path == "index.json"), errors[0])
            raise RefusedError(
                f"push refused: {path} does not validate ({len(errors)} error(s); first: {first.code} "
                f"{first.path}: {first.message})",
                hint="Run `rwkv-registry validate PATH`, fix every error, then push again.",
                findings=errors,
            )
        log(f"validated {path}: OK")
        try:
            remote = connect(repo_id, revision, endpoint=endpoint, token=token)
        except UsageError as e:
            if "no such repository" in e.message:
                e.hint = f"Create it first (`hf repos create {repo_id}`), or log in if it is private."
            elif "does not exist" in e.message:
                e.hint = f"Push to an existing branch, or create it (`hf repos branch create {repo_id} {revision}`)."
            raise
        parent = remote.sha
        local = _local_files(root)
        try:
            local_index = load_json_file(root / "index.json")
        except JsonLoadError:
            local_index = {}
        changed = _changed(root, local, remote)
        deleted = sorted(set(remote.files) - set(local))
        problems = _protected(root, changed, deleted, remote, local_index, _remote_index(remote, "push"))
        if problems:
            raise RefusedError(
                f"push refused: {len(problems)} change(s) to published files on {repo_id}@{revision}: "
                + "; ".join(problems[:3])
                + ("; …" if len(problems) > 3 else ""),
                hint="Published files under a base directory never change or go, and a frozen or superseded base gets "
                "no new files (as `validate` holds a git clone to): publish new weights under a new name or data "
                "version; if your copy is behind the Hub, pull it first.",
            )
        if not changed and not deleted:
            log(f"{repo_id}@{revision} is up to date (commit {parent[:12]}): nothing to push")
            return PushResult(None, parent)
        size = sum(local[r].stat().st_size for r in changed)
        log(
            f"pushing to {repo_id}@{revision} (parent {parent[:12]}): {len(changed)} file(s) to upload "
            f"({size / 1e6:.1f} MB), {len(deleted)} to delete"
            + (f": {', '.join(deleted[:10])}{' …' if len(deleted) > 10 else ''}" if deleted else "")
        )
        operations: list[Any] = [CommitOperationAdd(path_in_repo=r, path_or_fileobj=str(local[r])) for r in changed]
        operations += [CommitOperationDelete(path_in_repo=r) for r in deleted]
        summary = message or f"rwkv-registry push: {len(changed)} file(s) added or changed, {len(deleted)} deleted"
        try:
            info = remote.api.create_commit(
                repo_id, operations, commit_message=summary, revision=revision, parent_commit=parent
            )
        except Exception as e:
            landed = _landed(remote, revision, parent, local, changed, deleted)
            if landed is None:
                raise _commit_error(e, remote, revision, parent) from e
            log(
                f"committed {landed[:12]} to {repo_id}@{revision} (the Hub answered an error, "
                f"{type(e).__name__}: {_first_line(str(e))[:200]}, but the branch now holds exactly this push)"
            )
            return PushResult(landed, parent, changed, deleted)
        log(f"committed {info.oid[:12]} to {repo_id}@{revision}: {info.commit_url}")
        return PushResult(info.oid, parent, changed, deleted)


@contextmanager
def _writers_held_off(root: Path, timeout: float = 30.0) -> Iterator[None]:
    """Hold a shared ``flock`` on the registry's lock file for the whole push.

    Writers take it exclusively (:func:`rwkv_registry.fs.atomic.registry_lock`), so none can start while
    the push validates, compares and uploads, and a write in progress makes the push wait (up to
    ``timeout``) instead of publishing a half-written tree. Shared: validation's own probe
    (:func:`~rwkv_registry.engine.validate.write_in_progress`) still reads the lock as free. Nothing is written
    but the (empty) lock file, and only where it is missing and can be created: a read-only registry
    cannot be written meanwhile by rwkv-registry either.
    """
    try:
        import fcntl
    except ImportError:  # not POSIX: filelock uses another mechanism there
        yield
        return
    if not (root / "index.json").is_file():  # no registry: validation refuses it; create nothing there
        yield
        return
    try:
        fd = os.open(root / LOCK_NAME, os.O_RDONLY | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o644)
    except OSError:
        yield
        return
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise LockedError(
                        f"{root}: another rwkv-registry command is writing (lock {LOCK_NAME} held for {timeout:g} s)",
                        hint="Wait for it to finish and push again.",
                    ) from None
                time.sleep(0.1)
        yield
    finally:
        os.close(fd)  # drops the shared lock


def _landed(
    remote: RemoteRepo, revision: str, parent: str, local: dict[str, Path], changed: list[str], deleted: list[str]
) -> str | None:
    """The commit ``revision`` is at when the commit request failed but the branch moved on from ``parent`` to hold
    exactly this push (the Hub committed, its answer was lost: a 500 or a cut connection after the commit); None
    when it does not (nothing committed, or someone else's commit)."""
    try:
        head = remote.api.repo_info(remote.repo_id, revision=revision).sha
        if not head or head == parent:
            return None
        after = connect(remote.repo_id, head, endpoint=remote.endpoint, token=remote.fetcher.token)
        if set(after.files) != (set(remote.files) - set(deleted)) | set(changed):
            return None
        for rel, entry in after.files.items():
            if rel not in changed:
                if entry != remote.files[rel]:
                    return None
                continue
            after.check_served(rel, *file_digests(local[rel], blob=entry.lfs_sha256 is None))  # raises if not ours
    except Exception:
        return None
    return head


def _commit_error(e: Exception, remote: RemoteRepo, revision: str, parent: str) -> RegistryError:
    status = getattr(getattr(e, "response", None), "status_code", None)
    head: str | None = None
    try:
        head = remote.api.repo_info(remote.repo_id, revision=revision).sha
    except Exception:
        pass
    if (head is not None and head != parent) or status in (409, 412):
        now = f"it is now at {head[:12]}" if head else "it has moved"
        return RefusedError(
            f"{remote.repo_id}@{revision} moved during the push: it was at {parent[:12]}, {now}; nothing was committed",
            hint="Someone else pushed meanwhile: inspect it "
            f"(`rwkv-registry validate hf://{remote.repo_id}@{revision}`), then "
            f"`rwkv-registry pull {remote.repo_id} NEW_DIR`, redo your change there "
            "(e.g. `rwkv-registry add NEW_DIR …`) and push from NEW_DIR.",
        )
    err = hub_error(e, remote.repo_id, revision, remote.endpoint)
    if head == parent:
        err.hint = f"Nothing was committed ({remote.repo_id}@{revision} is still at {parent[:12]}). {err.hint}".strip()
    else:  # the Hub could not be asked where the branch is now
        err.hint = (
            f"Whether the commit landed is unknown: check `rwkv-registry validate hf://{remote.repo_id}@{revision}` "
            f"(it was at {parent[:12]}) before pushing again. {err.hint}"
        ).strip()
    return err


# --- pull ---------------------------------------------------------------------------------------------------


class _PulledSnapshot(Snapshot):
    """A pulled registry whose skipped weight files are known only by the Hub's metadata."""

    def __init__(self, root: Path, skipped: dict[str, RemoteEntry]) -> None:
        super().__init__(root)
        self.skipped = skipped

    def walk(self, findings: list[Finding]) -> Tree:
        tree = super().walk(findings)
        for rel in self.skipped:
            tree.files[rel] = str(self.root / rel)
            parent = PurePosixPath(rel).parent
            while str(parent) != ".":
                tree.dirs.add(parent.as_posix())
                parent = parent.parent
        tree.empty_dirs = [d for d in tree.empty_dirs if not any(r.startswith(d + "/") for r in self.skipped)]
        return tree

    def facts(self, tree: Tree, weights: list[str], v: Validator) -> dict[str, FileFacts | OSError]:
        from rwkv_registry.hub.facts import metadata_facts

        facts = super().facts(tree, [w for w in weights if w not in self.skipped], v)
        for rel, entry in self.skipped.items():
            assert entry.lfs_sha256 is not None
            facts[rel] = metadata_facts(entry.size, entry.lfs_sha256)
        return facts


def pull_registry(
    repo_id: str,
    path: str | os.PathLike[str],
    *,
    base: str | None = None,
    revision: str | None = None,
    trusted_keys: list[str] | None = None,
    endpoint: str | None = None,
    token: str | bool | None = None,
    log: Log = print,
) -> Report:
    """Download ``repo_id`` (or, with ``base``, its small files and that base's weights) into ``path``
    (new or empty), then validate it. Returns the validation report.

    Before anything lands in ``path``, every downloaded file is checked against the Hub's tree listing
    (:meth:`RemoteRepo.check_served`, the check of ``validate hf://``), and with ``trusted_keys``
    (public key files, ``--pubkey``) the signature of SHA256SUMS must verify under those keys only and
    SHA256SUMS must match every file (:func:`rwkv_registry.checks.signatures.check_signatures` and the HSH rules
    of ``validate``). A failure raises (:class:`RegistryIOError`, :class:`RefusedError`) and leaves
    ``path`` as it was. Without ``trusted_keys`` the validation trusts index.json's keys, as ``validate``.
    """
    from huggingface_hub import snapshot_download

    from rwkv_registry.checks.signatures import load_public_key

    keys = list(trusted_keys or [])
    for key in keys:  # a bad key file is a usage error before any request
        load_public_key(key)

    hint = "Pull into a new or empty directory (a git clone of the Hub repository updates with `git pull`)."
    if not str(path).strip():
        raise UsageError("pull needs a destination directory", hint=hint)
    # absolute: "." or "x/.." name a directory whose staging sibling must lie outside it
    dest = Path(path).resolve()
    if dest.exists() and not dest.is_dir():
        raise UsageError(f"{path}: is a file, not a directory", hint=hint)
    if dest.exists() and any(dest.iterdir()):
        raise UsageError(f"{path} exists and is not empty", hint=hint)
    if not dest.parent.is_dir():
        raise UsageError(f"{path}: the directory {dest.parent} does not exist", hint=hint)
    for where in [dest.parent, *([dest] if dest.exists() else [])]:  # before any request, not after the download
        if not os.access(where, os.W_OK | os.X_OK):
            raise UsageError(
                f"{path}: cannot write in {where} (permission denied, or a read-only file system)",
                hint=f"The download is written beside PATH (in {dest.parent}), then moved into PATH: both must be "
                "writable. Pull somewhere else, or fix the permissions.",
                path=str(where),
            )
    remote = connect(repo_id, revision, endpoint=endpoint, token=token)
    # what an interrupted write leaves (LAY012): in PATH, `recover` (which LAY012's hint names) and every write
    # command would roll such a journal forward over the files just pulled, checked and perhaps signed
    transient = sorted(
        (r for r in remote.files if r == JOURNAL_NAME or r.rsplit("/", 1)[-1].startswith(TMP_PREFIX)),
        key=lambda r: (r != JOURNAL_NAME, r),  # the journal first: it is what would be rolled forward
    )
    _refuse_holding(
        remote,
        transient,
        "left by an interrupted rwkv-registry write (push never publishes one): in PATH, the next write command "
        "would complete it over the pulled files",
        f"Nothing was written to {path}. Tell the publisher (`rwkv-registry validate hf://{repo_id}` reports it as "
        "LAY012): the file must be deleted from the repository.",
    )
    # snapshot_download writes there too, and the pull removes that folder: the copy would lack them
    _refuse_holding(
        remote,
        sorted(r for r in remote.files if r.startswith(f"{DOWNLOAD_METADATA}/")),
        f"inside {DOWNLOAD_METADATA}/ where huggingface_hub keeps its download metadata (which a pull removes): the "
        "copy could not be complete",
        f"Nothing was written to {path}. Tell the publisher: no registry file lives there (`hf upload` leaves that "
        "folder out).",
    )
    skipped: dict[str, RemoteEntry] = {}
    allow: list[str] | None = None
    if base is not None:
        names = set(bases_by_name(_remote_index(remote, "pull --base")))
        if base not in names:
            raise UsageError(
                f"{repo_id}@{remote.sha[:12]}: no base {base!r} in index.json",
                hint=f"Bases: {', '.join(sorted(names)) or 'none'}.",
            )
        for rel, entry in remote.files.items():
            top = rel.split("/", 1)[0] if "/" in rel else None
            if top in names and top != base and entry.lfs_sha256 is not None and rel.endswith(WEIGHT_SUFFIXES):
                skipped[rel] = entry
        allow = sorted(set(remote.files) - set(skipped))
    want = [remote.files[r] for r in (allow if allow is not None else remote.files)]
    log(
        f"pulling {repo_id}@{remote.sha[:12]} into {path}: {len(want)} file(s), "
        f"{sum(e.size for e in want) / 1e6:.1f} MB" + (f" (weights of base {base} only)" if base else "")
    )
    # into a hidden sibling first: an interrupted pull leaves PATH as it was (absent or empty), and its files there
    # for the next pull into PATH to resume from
    staging = dest.parent / f".{dest.name}{PULL_STAGING}{os.getpid()}"
    wanted = [e.path for e in want]
    try:
        lock = _lock_staging(dest, staging, path, log)  # held until the pull ends: no other pull takes this directory
    except OSError as e:
        raise _refused(_download_error(e, remote, staging), path) from e
    try:
        try:
            kept = _reuse_kept(remote, staging, wanted, log)
        except OSError as e:
            raise _refused(_download_error(e, remote, staging), path) from e
        except KeyboardInterrupt as e:  # while the kept files are checked: they stay, for the next pull
            raise PullInterrupted(_interrupted(path, staging)) from e
        missing = [rel for rel in wanted if rel not in kept]
        # the large files: pull's own download, which keeps a file cut short and continues it on the next run
        large = resumable(remote, missing)
        large_set = set(large)
        small = [rel for rel in missing if rel not in large_set]
        try:
            partial = prune_partials(staging, remote, large)
            if partial:
                log(
                    f"resuming: {len(partial)} file(s) cut short ({sum(partial.values()) / 1e6:.1f} MB received) "
                    "are continued from where they stopped"
                )
            if small:
                snapshot_download(
                    repo_id,
                    revision=remote.sha,
                    local_dir=staging,
                    # fnmatch patterns: each path taken literally ('notes[1].md' is no character class)
                    allow_patterns=None
                    if allow is None and not kept and not large
                    else [glob.escape(p) for p in small],
                    endpoint=remote.endpoint,
                    token=token,
                )
            _drop_download_metadata(staging, keep_partial=True)
            kept = {**kept, **_fetch_large(remote, staging, large, log)}
            _drop_download_metadata(staging)
        except BaseException as e:  # Ctrl-C too: what is complete stays in staging, for the next pull to check and keep
            if isinstance(e, _Untrusted):  # bytes other than the listing's, fetched whole: nothing kept
                shutil.rmtree(staging, ignore_errors=True)
                raise _refused(e.error, path) from e
            in_flight = _in_flight(staging, remote)
            # huggingface_hub's partial files too (never resumed, see _reuse_kept); pull's own are kept
            _drop_download_metadata(staging, keep_partial=True)
            if not _staged_files(staging)[0] and not partial_bytes(staging):
                shutil.rmtree(staging, ignore_errors=True)  # nothing to resume from
            if isinstance(e, Exception):
                err = _refused(_download_error(e, remote, staging, in_flight), path)
                err.hint = f"{err.hint} {_resume_note(staging)}".strip()
                raise err from e
            raise PullInterrupted(_interrupted(path, staging)) from e
        try:
            digests, read = _check_download(remote, staging, wanted, kept)
            if keys:
                _check_trust(remote, staging, digests, keys)
        except BaseException as e:
            if not isinstance(e, KeyboardInterrupt):  # bytes not to be trusted, or a signature refused: none kept
                shutil.rmtree(staging, ignore_errors=True)
            if isinstance(e, RegistryError):
                _refused(e, path)
            if isinstance(e, KeyboardInterrupt):
                raise PullInterrupted(_interrupted(path, staging)) from e
            raise
        try:
            if dest.exists():
                _move_into(staging, dest)  # empty, checked above; it keeps its identity (it may be the cwd)
            else:
                staging.rename(dest)
        except OSError as e:
            intruder = _first_entry(dest)
            if intruder is not None:
                raise RegistryIOError(
                    f"cannot move the pulled files into {path}: it is no longer empty ({intruder} appeared there "
                    "during the pull); nothing of this pull was moved there",
                    hint=f"Another command wrote into {path} meanwhile. The checked download is in {staging}: delete "
                    "it, or move it to a new directory yourself and validate it there.",
                    path=str(path),
                ) from e
            raise RegistryIOError(
                f"cannot move the pulled files from {staging} to {path}: {e.strerror or e}",
                hint=f"Everything was downloaded into {staging}; move it to {path} yourself, then validate it.",
                path=str(path),
            ) from e
        except KeyboardInterrupt as e:  # Ctrl-C during the move: _move_into put back what it moved; PATH is as it was
            raise PullInterrupted(_interrupted(path, staging)) from e
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        cache = _seeded_cache(dest, read)  # each weight file was hashed and read once, by the check: not again
        if not skipped:
            return validate_registry(path, trusted_keys=keys, cache=cache)
        v = Validator(dest, use_cache=True, since=None, cache=cache, snapshot=_PulledSnapshot(dest, skipped))
        v.trusted_keys = keys
        v.run()
        sort_findings(v.findings)
        return Report(str(path), v.findings, v.stats)
    finally:
        if lock is not None:
            os.close(lock)


def _first_entry(dest: Path) -> str | None:
    """The first entry of ``dest`` (``dest`` itself when it is not a directory), None when it is absent or empty."""
    try:
        if not dest.is_dir():
            return str(dest) if dest.exists() else None
        return next((str(dest / p.name) for p in sorted(dest.iterdir())), None)
    except OSError:
        return None


def _refused(e: RegistryError, path: str | os.PathLike[str]) -> RegistryError:
    """``e`` as the reason a pull was refused before anything reached ``path``."""
    if not e.message.startswith("pull refused: "):
        e.message = f"pull refused: {e.message}"
        e.args = (e.message,)
        e.hint = f"{e.hint or ''} Nothing was written to {path}.".strip()
    return e


# errors of the local file system while the download is written (not of the network or the Hub)
_LOCAL_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EACCES, errno.EPERM, errno.EROFS, errno.ENAMETOOLONG, errno.EIO}


def _in_flight(staging: Path, remote: RemoteRepo) -> list[str]:
    """The files of the listing whose download had begun but not ended when ``snapshot_download`` failed: it takes
    ``.cache/huggingface/download/<path>.lock`` for each file and writes ``<path>.metadata`` once the file is in
    place (best effort: huggingface_hub's layout, used only to name the file in a message)."""
    folder = staging / DOWNLOAD_METADATA / "download"
    out = []
    try:
        for lock in sorted(folder.rglob("*.lock")):
            rel = lock.relative_to(folder).as_posix()[: -len(".lock")]
            if rel in remote.files and not lock.with_suffix(".metadata").exists() and not (staging / rel).exists():
                out.append(rel)
    except (OSError, ValueError):
        return []
    return out


def _download_error(
    e: Exception, remote: RemoteRepo, staging: Path, in_flight: list[str] | None = None
) -> RegistryError:
    """A clear error for ``snapshot_download`` failing: the local disk (full, read-only, not writable), a file whose
    download ended at another size than announced, or the Hub's or the network's error, naming the file it was
    downloading when the error says which (a ``resolve`` URL, a storage URL ending in its sha256), else the files
    whose download had begun and not ended (``in_flight``)."""
    where = f"{remote.repo_id}@{remote.sha[:12]}"
    text = str(e)
    if isinstance(e, OSError) and e.errno in _LOCAL_ERRNOS:
        full = e.errno in (errno.ENOSPC, errno.EDQUOT)
        return RegistryIOError(
            f"{where}: cannot write the download into {staging.parent}: {e.strerror or e}"
            + (f" ({e.filename})" if e.filename else ""),
            hint=(
                f"Free some space there: the pull writes up to {_size_mb(remote)} MB beside PATH (moved into "
                "PATH once complete and checked)."
                if full
                else "The download is written beside PATH, then moved into it: the directory that holds PATH must "
                "be writable. Pull somewhere else, or fix its permissions."
            ),
            path=str(staging.parent),
        )
    from huggingface_hub.errors import RevisionNotFoundError

    if isinstance(e, RevisionNotFoundError):  # the commit listed a moment ago: a force-push or a deleted branch
        return RegistryIOError(
            f"{where}: the commit {remote.sha} that {remote.revision or 'the default branch'} pointed to when the pull "
            "began is gone from the Hub (a force-push, or its branch deleted, during the pull)",
            hint="Pull again: it lists the repository afresh. If it keeps happening, someone is rewriting the "
            "branch's history: ask the publisher.",
        )
    expected = re.search(r"expected (\d+)\b", text)  # httpx: "received N bytes, expected M"
    if (
        in_flight
        and expected
        and len(by_size := [r for r in in_flight if remote.files[r].size == int(expected[1])]) == 1
    ):
        in_flight = by_size
    name = _which_file(text, remote) or (in_flight[0] if in_flight else None)
    on = f"{name}: " if name else ""
    if name is not None and name not in text and in_flight and len(in_flight) > 1:  # several downloads at once
        on = f"{name} (or one of the {len(in_flight) - 1} other file(s) then downloading): "
    if isinstance(e, OSError) and "Consistency check failed" in text:  # huggingface_hub: a size other than announced
        return RegistryIOError(
            f"{where}: {on}the download ended at another size than the Hub announced ({_first_line(text)})",
            hint="The connection was cut, or something between here and the Hub (its storage, a proxy, "
            "HF_ENDPOINT) announced a wrong length. Try again; if it repeats, report it.",
            path=name or "",
        )
    err = hub_error(e, remote.repo_id, remote.sha[:12], remote.endpoint)
    if name and name not in err.message:
        err.message = err.message.replace(f"{where}: ", f"{where}: {on}", 1)
        err.args = (err.message,)
    return err


def _size_mb(remote: RemoteRepo) -> str:
    return f"{sum(e.size for e in remote.files.values()) / 1e6:.1f}"


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else ""


def _which_file(text: str, remote: RemoteRepo) -> str | None:
    """The file of the listing that an error message of huggingface_hub speaks of, if it says: a ``resolve`` URL
    names its path; a storage URL, or a name shortened to its last 40 characters (``(…)0123abcd``), ends in the
    file's sha256 (LFS) or git blob id."""
    from urllib.parse import unquote

    m = re.search(r"/resolve/[^/\s'\"]+/([^\s'\"?#]+)", text)
    if m and unquote(m.group(1)) in remote.files:
        return unquote(m.group(1))
    tails = [t for t in re.findall(r"[0-9a-f]{16,64}", text) if t not in (remote.sha,)]
    for tail in tails:
        for rel, entry in sorted(remote.files.items()):
            if (entry.lfs_sha256 or "").endswith(tail) or entry.blob_id.endswith(tail):
                return rel
    m = re.search(r"\(…\)([^()\s]+)\)", text)  # the last 40 characters of a URL: …/resolve/<commit>/<path>
    if m:
        tail = unquote(m.group(1))
        hits = [rel for rel in remote.files if tail.endswith("/" + rel) or (len(tail) >= 40 and rel.endswith(tail))]
        if len(hits) == 1:
            return hits[0]
    return None


def _refuse_holding(remote: RemoteRepo, paths: list[str], why: str, hint: str) -> None:
    """Refuse the pull (nothing downloaded yet) when the repository holds ``paths``: the first is named."""
    if paths:
        more = f" (and {len(paths) - 1} more)" if len(paths) > 1 else ""
        raise RefusedError(
            f"pull refused: {remote.repo_id}@{remote.sha[:12]} holds {paths[0]}{more}, {why}",
            hint=hint,
            path=paths[0],
        )


PULL_STAGING = ".rwkv-registry-pull-"  # .<dest><this><pid>: where a pull downloads before the final rename


_Read = tuple[list[Any], FileFacts, int]  # a weight file's stat key before it was read, its facts, the time before


def _left_by_killed_pulls(dest: Path) -> list[Path]:
    """Staging directories of earlier pulls into ``dest`` whose process no longer runs (POSIX only)."""
    if os.name != "posix":
        return []
    out = []
    try:
        candidates = sorted(dest.parent.glob(glob.escape(f".{dest.name}{PULL_STAGING}") + "*"))
    except OSError:
        return []
    for candidate in candidates:
        pid = candidate.name.rsplit("-", 1)[-1]
        if not pid.isdigit() or int(pid) == os.getpid() or not candidate.is_dir():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            out.append(candidate)
        except (OSError, OverflowError):  # alive under another user, or not a pid at all
            continue
    return out


def _check_download(
    remote: RemoteRepo, staging: Path, wanted: list[str], kept: dict[str, tuple[str, _Read | None]] | None = None
) -> tuple[dict[str, str], dict[str, _Read]]:
    """What ``snapshot_download`` wrote into ``staging`` must be exactly the ``wanted`` files of the tree listing
    (it lists the repository again itself), each with the listed size and sha256 (LFS) or git blob id
    (:func:`_check_file`). ``kept``: files an earlier pull left there that :func:`_reuse_kept` checked already (not
    read again). Returns each file's sha256, and for each weight file what validation needs of it (its facts, read
    in the same pass as the digest checked here, and the stat key they were read under: :func:`_seeded_cache`).
    Raises :class:`RegistryIOError`."""
    where = f"{remote.repo_id}@{remote.sha[:12]}"
    wanted_set = set(wanted)
    by_case = {rel.lower(): rel for rel in sorted(wanted)}
    found: set[str] = set()
    for dirpath, dirnames, filenames in os.walk(staging):
        here = Path(dirpath)
        for name in sorted(dirnames + filenames):
            rel = (here / name).relative_to(staging).as_posix()
            if name in filenames and rel not in wanted_set and rel.lower() in by_case:
                raise _case_clash(where, by_case[rel.lower()], rel)  # a/x.pth written into the folder A/
            if (here / name).is_symlink() or (name in filenames and rel not in wanted_set):
                raise RegistryIOError(
                    f"{where}: the download holds {rel}, which is not among the files the Hub's tree listing gave",
                    hint="The Hub (or a proxy, HF_ENDPOINT) answered two listings of one commit differently: "
                    "nothing read can be trusted. Try again, or report it.",
                    path=rel,
                )
            if name in filenames:
                found.add(rel)
    missing = sorted(wanted_set - found)
    if missing:
        found_by_case = {rel.lower(): rel for rel in sorted(found)}
        clashes = [(rel, found_by_case[rel.lower()]) for rel in missing if rel.lower() in found_by_case]
        if clashes:  # README.md and Readme.md: one file holds the two downloads, under one of the names
            extra = f" (and {len(clashes) - 1} more such name(s))" if len(clashes) > 1 else ""
            raise _case_clash(where, *clashes[0], extra)
        more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
        raise RegistryIOError(
            f"{where}: {missing[0]}{more} is in the Hub's tree listing but was not downloaded",
            hint="The Hub (or a proxy, HF_ENDPOINT) answered two listings of one commit differently. Try again, "
            "or report it.",
            path=missing[0],
        )

    digests: dict[str, str] = {}
    read: dict[str, _Read] = {}
    for rel, (sha, facts) in (kept or {}).items():
        digests[rel] = sha
        if facts is not None:
            read[rel] = facts
    todo = sorted(set(wanted) - set(digests))
    with ThreadPoolExecutor(max_workers=min(4, max(1, len(todo)))) as pool:
        for rel, (sha, facts) in zip(todo, pool.map(lambda rel: _check_file(remote, staging, rel), todo), strict=True):
            digests[rel] = sha
            if facts is not None:
                read[rel] = facts
    return digests, read


def _check_file(remote: RemoteRepo, staging: Path, rel: str) -> tuple[str, _Read | None]:
    """Check ``staging/rel`` against the tree listing (:meth:`RemoteRepo.check_served`: its size, and its sha256
    in LFS or its git blob id in plain git), reading it once. Returns its sha256 and, for a weight file, what
    validation needs of it (facts from the same read, the stat key before it, the time before it). Raises
    :class:`RegistryIOError` on other bytes."""
    path = staging / rel
    entry = remote.files[rel]
    if rel.endswith(WEIGHT_SUFFIXES):
        # the facts validation needs come from the same read as the digest checked here (one mmap); for a file in
        # plain git the sha1 of its git blob id is fed the same pages as its sha256
        started = time.time_ns()
        key = stat_key(os.stat(path), str(path))
        if entry.lfs_sha256 is not None:
            facts, blob = compute_facts(path), None
        else:
            facts, blob = compute_facts_and_blob_id(path)
        remote.check_served(rel, facts.size, facts.sha256, blob)
        return facts.sha256, (key, facts, started)
    size, sha, blob = file_digests(path, blob=entry.lfs_sha256 is None)
    remote.check_served(rel, size, sha, blob)
    return sha, None


class _Untrusted(Exception):
    """A large file fetched whole (or continued, then fetched whole again) whose bytes are not the listing's."""

    def __init__(self, error: RegistryError) -> None:
        super().__init__(error.message)
        self.error = error


def _fetch_large(remote: RemoteRepo, staging: Path, rels: list[str], log: Log) -> dict[str, tuple[str, _Read | None]]:
    """Download ``rels`` (:func:`~rwkv_registry.hub.resume.fetch_resumable`: a partial file an earlier pull left is
    continued by a Range request), :data:`LARGE_WORKERS` at a time (fewer for fewer files), and check each against
    the listing (:func:`_check_file`, its one read). A continued file that fails the check (the kept bytes were not
    the file's) is deleted and fetched whole, once. Returns what :func:`_check_download` would have found of them.
    Raises :class:`_Untrusted` when a file fetched whole fails the check.

    The workers are daemon threads sharing one stop flag, checked before each request and between two chunks: the
    first worker to fail sets it, the others stop at their next chunk (their bytes kept in their partial files,
    never moved into place), and its error is raised; Ctrl-C in the main thread (which only waits) sets it too, waits
    up to :data:`STOP_WAIT_S` for the workers and raises ``KeyboardInterrupt``. A worker blocked in a read that
    brings nothing ends at the HTTP client's read timeout, and never moves its file into place."""
    out: dict[str, tuple[str, _Read | None]] = {}
    if not rels:
        return out
    stop = threading.Event()
    lock = threading.Lock()
    queue = iter(rels)
    failures: list[BaseException] = []
    workers = min(LARGE_WORKERS, len(rels))

    def say(message: str) -> None:
        with lock:  # one line at a time
            log(message)

    def fetch(rel: str, slot: int | None) -> tuple[str, _Read | None]:
        start = fetch_resumable(remote, staging, rel, log=say, stop=stop, slot=slot)
        try:
            return _check_file(remote, staging, rel)
        except RegistryIOError as e:
            (staging / rel).unlink(missing_ok=True)
            if start == 0:
                raise _Untrusted(e) from e
            say(f"{rel}: the file continued from byte {start} fails its check ({e.message}); fetching it whole")
        fetch_resumable(remote, staging, rel, whole=True, log=say, stop=stop, slot=slot)
        try:
            return _check_file(remote, staging, rel)
        except RegistryIOError as e:
            (staging / rel).unlink(missing_ok=True)
            e.message = f"{e.message} (fetched whole, after the file continued from byte {start} failed this check)"
            e.args = (e.message,)
            raise _Untrusted(e) from e

    def work(slot: int | None) -> None:
        while not stop.is_set():
            with lock:
                rel = next(queue, None)
            if rel is None:
                return
            try:
                result = fetch(rel, slot)
            except DownloadCancelled:
                return
            except BaseException as e:  # the first failure stops the others; it is the one raised
                with lock:
                    failures.append(e)
                stop.set()
                return
            with lock:
                out[rel] = result

    threads = [
        threading.Thread(target=work, args=(None if workers == 1 else i,), name=f"rwkv-registry-pull-{i}", daemon=True)
        for i in range(workers)
    ]
    try:
        for t in threads:
            t.start()
        deadline: float | None = None  # once a worker failed: how long the others still get to stop
        for t in threads:
            while t.is_alive() and (deadline is None or time.monotonic() < deadline):
                t.join(0.1)  # short waits: Ctrl-C reaches the main thread between two
                if deadline is None and stop.is_set():
                    deadline = time.monotonic() + STOP_WAIT_S
    except KeyboardInterrupt:
        stop.set()
        deadline = time.monotonic() + STOP_WAIT_S
        for t in threads:
            if t.is_alive():  # not one that Ctrl-C kept from starting (join would raise RuntimeError)
                t.join(max(0.0, deadline - time.monotonic()))
        raise
    if failures:
        raise failures[0]
    return out


class PullInterrupted(KeyboardInterrupt):
    """Ctrl-C during a pull, before anything reached PATH: ``message`` says where the files downloaded so far are
    kept and that the same pull resumes from them."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def _staged_files(staging: Path) -> tuple[int, int]:
    """(files, bytes) under ``staging`` (0, 0 when it is absent)."""
    n = size = 0
    for dirpath, dirnames, filenames in os.walk(staging):
        if Path(dirpath) == staging / DOWNLOAD_METADATA:
            dirnames[:] = [d for d in dirnames if staging / DOWNLOAD_METADATA / d != staging / PARTIAL_DIR]
        for name in filenames:
            try:
                size += os.lstat(os.path.join(dirpath, name)).st_size
                n += 1
            except OSError:
                continue
    return n, size


def _resume_note(staging: Path) -> str:
    """What the message of a pull stopped half-way says of the files it downloaded so far."""
    n, size = _staged_files(staging)
    cut = partial_bytes(staging)
    if not n and not cut:
        return ""
    what = f"The {n} file(s) downloaded so far ({size / 1e6:.1f} MB)" if n else ""
    if cut:
        what += (" and " if what else "The ") + f"{cut / 1e6:.1f} MB received of the file(s) cut short"
    return (
        f"{what} are kept in {staging}: run the same pull again to resume (each is checked again against the "
        "listing, a file cut short is continued from where it stopped, and only the missing ones are fetched), or "
        "delete that directory to free its space."
    )


def _interrupted(path: str | os.PathLike[str], staging: Path) -> str:
    note = _resume_note(staging)
    return f"interrupted: nothing was written to {path}." + (f" {note}" if note else "")


def _flock_dir(directory: Path) -> int | None:
    """A descriptor of ``directory`` holding an exclusive ``flock`` on it; None when another process holds one (a
    pull running there), or where there is no ``flock`` (not POSIX: no lock, as before). Raises OSError when the
    directory cannot be opened."""
    try:
        import fcntl
    except ImportError:
        return -1
    fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    except OSError:
        os.close(fd)
        raise
    return fd


def _lock_staging(dest: Path, staging: Path, path: str | os.PathLike[str], log: Log) -> int | None:
    """Make ``staging`` this pull's, locked (an exclusive ``flock`` held by the returned descriptor until the pull
    ends, None where there is no flock): the newest staging directory of an earlier pull into ``dest`` whose process
    no longer runs (killed outright, or stopped by Ctrl-C or an error) is taken over by one rename, unless a process
    holds its lock (a pull running under another pid namespace, where its pid looks free); the others are named in
    a note. Of two pulls starting at once, one takes it, the other finds it gone or locked. Nothing is taken over
    when ``staging`` exists already (an earlier pull of this very process). Raises :class:`LockedError` when
    another pull of this process into ``dest`` runs."""
    left = _left_by_killed_pulls(dest)

    def mtime(p: Path) -> float:
        try:
            return p.stat().st_mtime
        except OSError:
            return 0.0

    left.sort(key=mtime, reverse=True)
    fd: int | None = None
    if not os.path.lexists(staging):
        for candidate in list(left):
            try:
                fd = _flock_dir(candidate)
            except OSError:
                continue
            if fd is None:  # its pull runs after all: neither taken nor named
                left.remove(candidate)
                continue
            try:
                candidate.rename(staging)  # the lock follows the directory
            except OSError:
                if fd >= 0:
                    os.close(fd)
                fd = None
                continue
            log(f"resuming the interrupted pull into {path} from {candidate}")
            left.remove(candidate)
            break
    for other in left:
        log(
            f"note: {other} is left by an interrupted pull into {path} (its process no longer runs): delete it to "
            "free its space"
        )
    if fd is None:
        if os.path.islink(staging) or (os.path.lexists(staging) and not staging.is_dir()):
            os.unlink(staging)
        staging.mkdir(exist_ok=True)
        fd = _flock_dir(staging)
        if fd is None:
            raise LockedError(
                f"another pull into {path} is running in this process (it holds {staging})",
                hint="Wait for it to finish.",
                path=str(staging),
            )
    return fd if fd >= 0 else None


def _reuse_kept(remote: RemoteRepo, staging: Path, wanted: list[str], log: Log) -> dict[str, tuple[str, _Read | None]]:
    """The files an interrupted pull left in ``staging`` that this pull can keep: each is one of ``wanted``, with the
    size and sha256 (LFS) or git blob id (plain git) that the tree listing of THIS commit gives, read and checked now
    (:func:`_check_file`: a file changed since, or of another revision, is never trusted). Any other file (another
    revision's, a corrupted or partial one, huggingface_hub's metadata and temporary files, a symlink) is deleted,
    to be downloaded again. Returns what :func:`_check_download` would have found of the kept files."""
    if not staging.is_dir():
        return {}
    _drop_download_metadata(staging, keep_partial=True)  # pull's own partial files: judged by prune_partials
    wanted_set = set(wanted)
    candidates: list[str] = []
    dropped = 0
    for dirpath, dirnames, filenames in os.walk(staging):
        here = Path(dirpath)
        for name in sorted(dirnames + filenames):
            full = here / name
            rel = full.relative_to(staging).as_posix()
            if name in dirnames and not full.is_symlink():
                continue
            if rel.startswith(PARTIAL_DIR + "/"):
                continue
            try:
                st = os.lstat(full)
            except OSError:
                continue
            if stat_module.S_ISREG(st.st_mode) and rel in wanted_set and st.st_size == remote.files[rel].size:
                candidates.append(rel)
            else:
                full.unlink()
                dropped += 1

    def check(rel: str) -> tuple[str, tuple[str, _Read | None] | None]:
        try:
            return rel, _check_file(remote, staging, rel)
        except (RegistryIOError, OSError):
            return rel, None

    kept: dict[str, tuple[str, _Read | None]] = {}
    with ThreadPoolExecutor(max_workers=min(4, max(1, len(candidates)))) as pool:
        for rel, result in pool.map(check, sorted(candidates)):
            if result is None:
                (staging / rel).unlink(missing_ok=True)
                dropped += 1
            else:
                kept[rel] = result
    for dirpath, _, _ in os.walk(staging, topdown=False):  # folders left empty: a later download makes its own
        if Path(dirpath) != staging:
            try:
                os.rmdir(dirpath)
            except OSError:
                pass
    if not kept and not dropped:
        return kept
    size = sum(remote.files[r].size for r in kept)
    log(
        f"resuming: {len(kept)} file(s) ({size / 1e6:.1f} MB) downloaded by an interrupted pull are kept (each checked "
        f"against the listing of {remote.sha[:12]}), {len(wanted) - len(kept)} to download"
        + (f"; {dropped} other file(s) left there deleted (changed, partial, or not in this commit)" if dropped else "")
    )
    return kept


def _case_clash(where: str, listed: str, held: str, more: str = "") -> RegistryIOError:
    """The listing's ``listed`` was written as ``held``, which differs from it only in case (a case-insensitive file
    system: two names of the listing are one file or folder there). Names the two names that clash."""
    a, b = listed.split("/"), held.split("/")
    i = next((i for i, (x, y) in enumerate(zip(a, b, strict=True)) if x != y), len(a) - 1)
    one, two = "/".join(a[: i + 1]), "/".join(b[: i + 1])
    kind = "file" if i == len(a) - 1 else "folder"
    how = f"the download holds {held} only" if kind == "file" else f"{listed} was written as {held}"
    return RegistryIOError(
        f"{where}: {one} and {two} differ only in case, and {how}: on a case-insensitive file system the two names "
        f"are one {kind}{more}",
        hint="Pull onto a case-sensitive file system (on macOS a case-sensitive APFS volume, on Windows a folder "
        "with `fsutil file setCaseSensitiveInfo DIR enable`), or ask the publisher to rename one of the two.",
        path=listed,
    )


def _seeded_cache(dest: Path, read: dict[str, _Read]) -> FactsCache:
    """The validation cache of ``dest`` holding the facts :func:`_check_download` read in the staging directory,
    each under its file's stat key in ``dest``, so that validation does not hash the weights a second time.
    :meth:`FactsCache.put_read` takes one only if the file is the inode that was read, with the same size, mtime
    and ctime (nothing wrote it since; moving its directory into place changes neither) and not racily clean;
    any other is read again by validation."""
    cache = FactsCache(dest)
    for rel, (key, facts, started) in read.items():
        cache.put_read(str(dest / rel), key, facts, started)
    return cache


def _check_trust(remote: RemoteRepo, staging: Path, digests: dict[str, str], keys: list[str]) -> None:
    """``pull --pubkey``: SHA256SUMS.sig must verify under ``keys`` only (the SIG rules of ``validate``,
    :func:`~rwkv_registry.checks.signatures.check_signatures`), and SHA256SUMS must match every file of the listing
    (the HSH rules of ``validate``): the downloaded bytes by their ``digests``, the weights a one-base pull
    leaves on the Hub by their LFS sha256. Raises :class:`RefusedError` on any error."""
    from rwkv_registry.checks.signatures import check_signatures
    from rwkv_registry.hub.facts import metadata_facts

    files = {rel: str(staging / rel) for rel in remote.files}
    findings = check_signatures(staging, set(files), None, keys)
    if not any(f.code in ("SIG001", "SIG003", "SIG004") for f in findings):  # SHA256SUMS is signed by a key given
        facts: dict[str, FileFacts | OSError] = {}
        for rel, entry in remote.files.items():
            sha = digests.get(rel, entry.lfs_sha256)
            if sha is not None:
                facts[rel] = metadata_facts(entry.size, sha)
        findings += listed_sums_findings(staging, files, facts)
    errors = [f for f in findings if str(f.severity) == "error"]
    if errors:
        first = errors[0]
        raise RefusedError(
            f"{remote.repo_id}@{remote.sha[:12]} is not signed as --pubkey requires ({len(errors)} error(s); "
            f"first: {first.code} {first.path}: {first.message})",
            hint="Check that the --pubkey file is the publisher's key; if it is, the repository was changed or "
            "re-signed by someone else since the publisher signed it: do not use it, tell the publisher.",
            findings=errors,
        )


def _move_into(staging: Path, dest: Path) -> None:
    """Move every entry of ``staging`` into the empty directory ``dest``, then remove ``staging``; on
    failure (Ctrl-C too) the entries already moved go back, so ``dest`` is left empty."""
    moved: list[Path] = []
    try:
        for entry in sorted(staging.iterdir()):
            target = dest / entry.name
            # rename() replaces an existing file: a file another command put into PATH since it was found empty
            # would be lost (the window is narrowed to this check, not closed: no portable rename without replace)
            if os.path.lexists(target):
                raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), str(target))
            entry.rename(target)
            moved.append(target)
        staging.rmdir()
    except BaseException:
        for target in moved:
            try:
                target.rename(staging / target.name)
            except OSError:
                pass
        raise


DOWNLOAD_METADATA = ".cache/huggingface"  # snapshot_download(local_dir=...) keeps its metadata there


def _drop_download_metadata(dest: Path, *, keep_partial: bool = False) -> None:
    """huggingface_hub keeps download metadata in ``.cache/huggingface``: not part of a registry. ``keep_partial``:
    keep pull's own partial files there (:data:`~rwkv_registry.hub.resume.PARTIAL_DIR`), for a later run."""
    cache = dest / ".cache"
    if keep_partial and (dest / PARTIAL_DIR).is_dir() and not (dest / PARTIAL_DIR).is_symlink():
        try:
            entries = list(os.scandir(dest / DOWNLOAD_METADATA))
        except OSError:
            entries = []
        for entry in entries:
            if (dest / DOWNLOAD_METADATA / entry.name) == dest / PARTIAL_DIR:
                continue
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path, ignore_errors=True)
            else:
                try:
                    os.unlink(entry.path)
                except OSError:
                    pass
        return
    shutil.rmtree(dest / DOWNLOAD_METADATA, ignore_errors=True)
    try:
        cache.rmdir()
    except OSError:
        pass
