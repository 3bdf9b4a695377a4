"""One Hub repository at one commit: its file listing (with LFS sha256 and size) and counted reads.

:func:`connect` resolves the revision to a commit once (``HfApi.repo_info``) and lists the tree at
that commit (``HfApi.list_repo_tree(recursive=True)``), so every later read sees the same
snapshot even if someone pushes meanwhile. Hub errors become :class:`RegistryError` with a hint.

The endpoint is ``HF_ENDPOINT`` read when the command runs (huggingface_hub reads it once, at
import), else huggingface_hub's default; it is passed explicitly to every call.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from rwkv_registry.checks.git import git_blob_id
from rwkv_registry.core.errors import RegistryError, RegistryIOError, UsageError
from rwkv_registry.hub.transport import Fetcher, RemoteFile

__all__ = [
    "RemoteEntry",
    "RemoteRepo",
    "connect",
    "file_digests",
    "git_blob_id",
    "hub_endpoint",
    "hub_error",
    "parse_hf_target",
]

_REPO = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}/[A-Za-z0-9][A-Za-z0-9._-]{0,95}$")


def hub_endpoint(endpoint: str | None = None) -> str:
    """The Hub URL to talk to: ``endpoint``, else ``$HF_ENDPOINT``, else huggingface_hub's default."""
    if endpoint:
        return endpoint.rstrip("/")
    env = os.environ.get("HF_ENDPOINT")
    if env:
        return env.rstrip("/")
    from huggingface_hub import constants

    return constants.ENDPOINT.rstrip("/")


def check_repo_id(repo_id: str, what: str = "OWNER/REPO") -> str:
    """Refuse anything but ``OWNER/REPO`` (letters, digits, ``.``, ``_``, ``-``)."""
    if not _REPO.match(repo_id or "") or ".." in repo_id or "--" in repo_id:
        raise UsageError(
            f"{repo_id!r} is not a Hugging Face repository id ({what})",
            hint="Give OWNER/REPO, e.g. No-22/rwkv-agent-weights.",
        )
    return repo_id


def parse_hf_target(target: str) -> tuple[str, str | None]:
    """``hf://OWNER/REPO[@REVISION]`` -> (repo id, revision or None).

    >>> parse_hf_target("hf://No-22/rwkv-agent-weights@main")
    ('No-22/rwkv-agent-weights', 'main')
    """
    if not target.startswith("hf://"):
        raise UsageError(f"{target!r} is not an hf:// target", hint="Write hf://OWNER/REPO[@REVISION].")
    rest = target[len("hf://") :]
    if rest.startswith("models/"):
        rest = rest[len("models/") :]
    repo, sep, revision = rest.partition("@")
    if sep and not revision:
        raise UsageError(f"{target!r}: empty revision after '@'", hint="Write hf://OWNER/REPO@REVISION.")
    return check_repo_id(repo.rstrip("/"), "hf://OWNER/REPO[@REVISION]"), (revision or None)


def hub_error(e: BaseException, repo_id: str, revision: str | None, endpoint: str) -> RegistryError:
    """A clear :class:`RegistryError` for an exception raised by huggingface_hub or its HTTP client."""
    from huggingface_hub.errors import (
        EntryNotFoundError,
        GatedRepoError,
        HfHubHTTPError,
        OfflineModeIsEnabled,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    where = f"{repo_id}@{revision}" if revision else repo_id
    if isinstance(e, RegistryError):
        return e
    endpoint = redact(endpoint)  # credentials in an HF_ENDPOINT URL never reach a message
    if isinstance(e, GatedRepoError):
        return UsageError(f"{where}: gated repository on {endpoint}", hint="Accept its terms on the Hub and log in.")
    if isinstance(e, RepositoryNotFoundError):
        return UsageError(
            f"{repo_id}: no such repository on {endpoint} (or it is private and the token cannot see it)",
            hint="Check OWNER/REPO; for a private repository log in with `hf auth login` or set HF_TOKEN.",
        )
    if isinstance(e, RevisionNotFoundError):
        return UsageError(
            f"{where}: revision {revision!r} does not exist", hint="Give an existing branch, tag or commit."
        )
    if isinstance(e, EntryNotFoundError):
        return UsageError(f"{where}: {_first_line(e)}", hint="Check the file path inside the repository.")
    if isinstance(e, OfflineModeIsEnabled):
        return RegistryIOError(f"{where}: offline mode is enabled", hint="Unset HF_HUB_OFFLINE to reach the Hub.")
    if isinstance(e, HfHubHTTPError):
        return RegistryIOError(f"{where}: the Hub answered: {_first_line(e)}", hint="Try again later.")
    if isinstance(e, OSError | ValueError) or type(e).__module__.startswith(("httpx", "httpcore")):
        return RegistryIOError(
            f"cannot reach {endpoint} for {where}: {type(e).__name__}: {_first_line(e)}",
            hint="Check the network, a proxy, or HF_ENDPOINT.",
        )
    return RegistryIOError(
        f"{where}: {type(e).__name__}: {_first_line(e)}",
        hint="Run the command again; if it fails the same way, report it with this message.",
    )


_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/@\s]+@")


def redact(text: str) -> str:
    """``text`` with the user:password part of every URL in it replaced by ``***``."""
    return _USERINFO.sub(r"\1***@", text)


def _first_line(e: BaseException) -> str:
    text = redact(str(e).strip())
    return text.splitlines()[0] if text else type(e).__name__


@dataclass(frozen=True)
class RemoteEntry:
    """One file of the remote tree. ``lfs_sha256`` is None for a plain git file."""

    path: str
    size: int
    blob_id: str
    lfs_sha256: str | None


@dataclass
class RemoteRepo:
    """A Hub repository pinned at commit ``sha``; every byte read goes through ``fetcher``."""

    api: Any
    repo_id: str
    revision: str | None
    sha: str
    endpoint: str
    fetcher: Fetcher
    files: dict[str, RemoteEntry] = field(default_factory=dict)
    dirs: set[str] = field(default_factory=set)

    def url(self, path: str) -> str:
        """The ``resolve`` URL of ``path`` at the pinned commit."""
        from huggingface_hub import hf_hub_url

        return hf_hub_url(self.repo_id, path, revision=self.sha, endpoint=self.endpoint)

    def download(self, path: str) -> bytes:
        """The whole content of ``path`` (counted), checked against the tree listing by :meth:`check_served`.
        Raises :class:`RegistryIOError` when the Hub served other bytes."""
        entry = self.files.get(path)
        try:
            data = self.fetcher.get(self.url(path), size=entry.size if entry is not None else None)
        except RegistryIOError as e:  # name the repository file, not only its URL, and say what to do
            e.message = f"{self.repo_id}@{self.sha[:12]}: {path}: {e.message}"
            e.args = (e.message,)
            e.hint = e.hint or (
                "The Hub (or its storage, a proxy, HF_ENDPOINT) did not serve the file whole: an error status or a "
                "cut connection. Try again later; nothing was written."
            )
            e.path = path
            raise
        if entry is None:
            return data
        blob = git_blob_id(data) if entry.lfs_sha256 is None else None
        self.check_served(path, len(data), hashlib.sha256(data).hexdigest(), blob)
        return data

    def check_served(self, path: str, size: int, sha256: str, blob_id: str | None) -> None:
        """Refuse bytes of ``path`` (their ``size``, ``sha256`` and, for a file not in LFS, ``blob_id``) that are
        not those of the tree listing: its size, and its sha256 (LFS) or git blob id. The one check of every
        whole download (``validate hf://``, ``pull``). Raises :class:`RegistryIOError`."""
        entry = self.files[path]
        lfs = entry.lfs_sha256 is not None
        listed, served = (entry.lfs_sha256, sha256) if lfs else (entry.blob_id, blob_id)
        if size == entry.size and served == listed:
            return
        what = "sha256" if lfs else "git blob id"
        got = f"{size} bytes" + (f" (sha256 {sha256[:12]}…)" if not lfs or size != entry.size else "")
        detail = (
            f", its tree listing says {entry.size} bytes"
            if size != entry.size
            else f" whose {what} is {(served or '?')[:12]}…, its tree listing says {(listed or '?')[:12]}…"
        )
        raise RegistryIOError(
            f"{self.repo_id}@{self.sha[:12]}: {path}: the Hub served {got}{detail}",
            hint="Something between here and the Hub (its storage, a proxy, HF_ENDPOINT) served other content "
            "than the repository holds at this commit: nothing read can be trusted. Try again, or report it.",
            path=path,
        )

    def open(self, path: str, **options: int) -> RemoteFile:
        """A Range-read source over ``path``: one HEAD to the Hub gives its storage location.

        ``options``: ``workers`` (parallel requests) and ``gap`` (merge ranges closer than this) of
        :class:`~rwkv_registry.hub.transport.RemoteFile`.
        """
        from huggingface_hub import get_hf_file_metadata
        from huggingface_hub.errors import HfHubHTTPError

        from rwkv_registry.hub.transport import (
            RemoteStatusError,
            WrongAnswerError,
            error_reason,
            error_status,
            status_hint,
        )

        entry = self.files[path]
        url = self.url(path)
        try:
            meta = get_hf_file_metadata(url, token=self.fetcher.token, endpoint=self.endpoint)
        except HfHubHTTPError as e:  # a file of the listing that the Hub does not serve: a 404, a 403, a 5xx
            if error_status(e) is None:
                raise hub_error(e, self.repo_id, self.sha[:12], self.endpoint) from e
            status = error_status(e)
            raise RemoteStatusError(url, status, error_reason(e), hint=status_hint(status)) from e
        except Exception as e:
            raise hub_error(e, self.repo_id, self.sha[:12], self.endpoint) from e
        if meta.size is not None and meta.size != entry.size:
            raise WrongAnswerError(
                url,
                f"the metadata of {path} (a HEAD of its resolve URL), {entry.size} bytes in the Hub's tree listing",
                f"{meta.size} bytes when resolved",
                hint="Something between here and the Hub (its storage, a proxy, HF_ENDPOINT) serves other content "
                "than the repository holds at this commit: no finding against the repository, nothing judged of this "
                "file. Try again, or report it.",
            )
        return RemoteFile(self.fetcher, meta.location, entry.size, name=path, sha256=entry.lfs_sha256, **options)


def file_digests(path: str | os.PathLike[str], *, blob: bool) -> tuple[int, str, str | None]:
    """(size, sha256, git blob id or None) of a local file, read once in 1 MiB blocks; the blob id only when
    ``blob`` (a file the Hub keeps in git, not in LFS)."""
    sha = hashlib.sha256()
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        git = hashlib.sha1(b"blob %d\0" % size, usedforsecurity=False) if blob else None
        n = 0
        while chunk := f.read(1 << 20):
            n += len(chunk)
            sha.update(chunk)
            if git is not None:
                git.update(chunk)
    # a file that changed while read gives a size or blob id that the listing check refuses
    return n, sha.hexdigest(), None if git is None else git.hexdigest()


def connect(
    repo_id: str, revision: str | None = None, *, endpoint: str | None = None, token: str | bool | None = None
) -> RemoteRepo:
    """Resolve ``revision`` (default: the default branch) and list the whole tree at that commit."""
    from huggingface_hub import HfApi
    from huggingface_hub.hf_api import RepoFile

    check_repo_id(repo_id)
    endpoint = hub_endpoint(endpoint)
    api = HfApi(endpoint=endpoint, token=token)
    try:
        info = api.repo_info(repo_id, revision=revision)
        sha = info.sha
        if not sha:
            raise RegistryIOError(
                f"{repo_id}: the Hub did not say which commit {revision or 'main'} is",
                hint="HF_ENDPOINT (or a proxy) does not answer as the Hub does: check it, and try again.",
            )
        remote = RemoteRepo(api, repo_id, revision, sha, endpoint, Fetcher(endpoint, token))
        for item in api.list_repo_tree(repo_id, recursive=True, revision=sha):
            path = item.path
            if not _safe_remote_path(path):
                raise RegistryIOError(
                    f"{repo_id}: the Hub lists an unsafe path {path!r}",
                    hint="No git repository holds such a path (absolute, with '..', '.', an empty part or a .git "
                    "folder): the Hub, a proxy or HF_ENDPOINT does not answer as the Hub does. Nothing was written.",
                )
            if isinstance(item, RepoFile):
                if path in remote.files:  # no git tree holds a path twice: which entry would the bytes match?
                    raise RegistryIOError(
                        f"{repo_id}: the Hub lists {path!r} twice",
                        hint="No git repository holds a path twice: the Hub, a proxy or HF_ENDPOINT does not answer "
                        "as the Hub does. Nothing was written.",
                    )
                lfs = item.lfs.sha256 if item.lfs is not None else None
                remote.files[path] = RemoteEntry(path, int(item.size), item.blob_id, lfs)
            else:
                remote.dirs.add(path)
        for path in remote.files:
            parent = PurePosixPath(path).parent
            while str(parent) != ".":
                remote.dirs.add(parent.as_posix())
                parent = parent.parent
        both = sorted(remote.dirs & set(remote.files))
        if both:  # no git tree holds this: a hostile or broken listing
            raise RegistryIOError(
                f"{repo_id}: the Hub lists {both[0]!r} both as a file and as a folder",
                hint="No git repository holds this: the Hub, a proxy or HF_ENDPOINT does not answer as the Hub does. "
                "Nothing was written.",
                path=both[0],
            )
    except RegistryError:
        raise
    except Exception as e:
        raise hub_error(e, repo_id, revision, endpoint) from e
    return remote


def _safe_remote_path(path: Any) -> bool:
    """A relative POSIX path without empty, ``.`` or ``..`` parts and without a ``.git`` part: git refuses to
    commit one (so no Hub repository holds one), and a ``.git/config`` written by a pull would run its
    ``core.fsmonitor`` command at the next ``git status`` there. Case and Windows' trailing dots and spaces
    are ignored, and NTFS's short name ``git~1`` counts, as git itself does."""
    if not isinstance(path, str) or not path or path.startswith("/") or "\\" in path or "\0" in path:
        return False
    return all(part not in ("", ".", "..") and not _is_git_dir(part) for part in path.split("/"))


def _is_git_dir(part: str) -> bool:
    name = part.lower().rstrip(". ")
    return name in (".git", "git~1")
