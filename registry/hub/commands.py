"""The registry on the Hugging Face Hub: validate a Hub repository in place, add a base from the Hub,
push behind a validation gate, pull and validate.

>>> report = validate_hub("hf://No-22/rwkv-agent-weights")          # doctest: +SKIP
>>> report.ok, report.stats["bytes_fetched"]                         # doctest: +SKIP
(True, 241337)

``validate hf://OWNER/REPO[@REVISION]`` runs every rule of :mod:`rwkv_registry.engine.validate` on the
repository at one commit without downloading the weights: the small files (index.json, SHA256SUMS
and its signature, README.md, train.json, .gitattributes, any file not stored in LFS) are
downloaded to a temporary mirror; each weight file's sha256 and size come from the Hub's LFS
metadata, its tensor headers and embedded ``miss.json`` from HTTP Range reads of the zip. The MiSS
``content_version`` and the value scans need the tensor bytes: ``full=True`` (``--full``) downloads
the MiSS files for them. Git history rules (GIT…) do not apply to a remote repository.

The Hub endpoint is ``$HF_ENDPOINT`` at call time (or ``endpoint=``); tokens are huggingface_hub's
(``HF_TOKEN`` or ``hf auth login``). See docs/hub.md.
"""

from __future__ import annotations

import os
import re
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path, PurePosixPath
from typing import Any

from rwkv_registry.checks.layout import case_twins
from rwkv_registry.core.errors import CheckpointError, RefusedError, RegistryError, UsageError
from rwkv_registry.core.fsio import MAX_TEXT_BYTES
from rwkv_registry.core.rules import Finding
from rwkv_registry.engine.facts import FileFacts, compute_facts
from rwkv_registry.engine.validate import (
    WEIGHT_SUFFIXES,
    Report,
    Snapshot,
    Tree,
    Validator,
    sort_findings,
)
from rwkv_registry.hub.remote import (
    RemoteEntry,
    RemoteRepo,
    check_repo_id,
    connect,
    hub_endpoint,
    hub_error,
    parse_hf_target,
)
from rwkv_registry.hub.sync import pull_registry, push_registry

__all__ = [
    "HubSnapshot",
    "add_base_from_hub",
    "hub_validator",
    "parse_hub_file",
    "pull_registry",
    "push_registry",
    "validate_hub",
]

WORKERS = 8


class HubSnapshot(Snapshot):
    """A Hub repository pinned at one commit, as a :class:`~rwkv_registry.engine.validate.Validator` reads it.

    ``mirror`` is an empty scratch directory that receives the small files; weight files are never
    written there (their facts come from metadata and Range reads). ``workdir`` receives the
    ``full`` downloads, one at a time per thread, each deleted once read. The Hub keeps its own history (no
    GIT rules), and a legacy package's adapter.pth is not downloaded (MIS021 says so).
    """

    history = False
    reads_legacy_packages = False

    def __init__(self, remote: RemoteRepo, mirror: Path, *, full: bool = False, workdir: Path | None = None) -> None:
        super().__init__(mirror)
        self.remote = remote
        self.full = full
        self.work = workdir or mirror.parent / f"{mirror.name}-work"

    def walk(self, findings: list[Finding]) -> Tree:
        """The remote tree; every file but the weights is downloaded into the mirror (a small file may sit
        in LFS too, when .gitattributes routes everything there)."""
        small = sorted(
            p
            for p, e in self.remote.files.items()
            if e.lfs_sha256 is None or (not p.endswith(WEIGHT_SUFFIXES) and e.size <= MAX_TEXT_BYTES)
        )
        self.root.mkdir(parents=True, exist_ok=True)

        def fetch(path: str) -> None:
            dest = self.root / path
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(self.remote.download(path))

        with ThreadPoolExecutor(max_workers=WORKERS) as pool:
            list(pool.map(fetch, small))
        tree = Tree()
        tree.files = {p: str(self.root / p) for p in sorted(self.remote.files)}
        tree.dirs = set(self.remote.dirs)
        by_dir: dict[str, set[str]] = {}  # LAY017 on the listing, as the local walk finds it on disk
        for p in [*self.remote.files, *self.remote.dirs]:
            parent, _, name = p.rpartition("/")
            by_dir.setdefault(parent, set()).add(name)
        for parent in sorted(by_dir):
            findings.extend(case_twins(sorted(by_dir[parent]), parent))
        return tree

    def facts(self, tree: Tree, weights: list[str], v: Validator) -> dict[str, FileFacts | OSError]:
        """Weights in LFS: metadata + Range reads (``--full``: MiSS downloaded); plain git files: read locally."""
        from rwkv_registry.hub.facts import metadata_facts, remote_weight_facts
        from rwkv_registry.hub.transport import DownloadCut, LocalWriteError

        self.work.mkdir(parents=True, exist_ok=True)
        results: dict[str, FileFacts | OSError] = {}
        hashed = 0
        remote_weights = []
        for rel in weights:
            entry = self.remote.files[rel]
            if entry.lfs_sha256 is None:
                try:
                    results[rel] = compute_facts(tree.files[rel])
                    hashed += entry.size
                except OSError as e:
                    results[rel] = e
            else:
                remote_weights.append(rel)

        def one(rel: str) -> tuple[str, FileFacts | OSError, int]:
            try:
                facts, n = remote_weight_facts(self.remote, rel, full=self.full, workdir=self.work)
                return rel, facts, n
            except LocalWriteError:  # --full's download could not be stored here: a local error, exit 2
                raise
            except RegistryError as e:
                # the network, the Hub, its storage or a proxy, not the file: no finding (LAY010, "cannot read", whose
                # fix is local permissions) but no verdict either: exit 2, the file named, with the error's own fix (a
                # cut, an error status, an answer other than the request: RemoteStatusError, WrongAnswerError, bytes
                # other than the listing's)
                where = f"{self.remote.repo_id}@{self.remote.sha[:12]}: "
                if not e.message.startswith(where):
                    e.message = f"{where}{rel}: {e.message}"
                    e.args = (e.message,)
                if isinstance(e, DownloadCut):
                    e.hint = "The connection to the Hub (or its storage) dropped; nothing was written. Try again."
                e.path = rel
                raise

        with ThreadPoolExecutor(max_workers=min(WORKERS, max(1, len(remote_weights)))) as pool:
            for rel, result, n in pool.map(one, remote_weights):
                results[rel] = result
                hashed += n
                if v.progress:
                    v.progress(rel, n)
        # other LFS files: their sha256 is known from the metadata (SHA256SUMS needs it)
        for rel, entry in self.remote.files.items():
            if rel not in results and entry.lfs_sha256 is not None:
                results[rel] = metadata_facts(entry.size, entry.lfs_sha256)
        v.stats.update({"bytes_hashed": hashed, "cache_hits": 0})
        return results


def hub_validator(remote: RemoteRepo, mirror: Path, *, full: bool = False, workdir: Path | None = None) -> Validator:
    """A :class:`~rwkv_registry.engine.validate.Validator` of ``remote`` (:class:`HubSnapshot`'s arguments)."""
    return Validator(
        mirror, use_cache=False, since=None, snapshot=HubSnapshot(remote, mirror, full=full, workdir=workdir)
    )


def validate_hub(
    target: str,
    *,
    full: bool = False,
    trusted_keys: list[str] | None = None,
    endpoint: str | None = None,
    token: str | bool | None = None,
) -> Report:
    """Validate ``hf://OWNER/REPO[@REVISION]`` in place; ``stats["bytes_fetched"]`` counts the file bytes read.

    Same rules, codes and exit codes as :func:`rwkv_registry.engine.validate.validate_registry`.
    Raises :class:`~rwkv_registry.core.errors.UsageError` / ``RegistryIOError`` when the repository
    cannot be reached or does not exist.
    """
    t0 = time.perf_counter()
    repo_id, revision = parse_hf_target(target)
    remote = connect(repo_id, revision, endpoint=endpoint, token=token)
    with tempfile.TemporaryDirectory(prefix="rwkv-registry-hub-") as tmp:
        v = hub_validator(remote, Path(tmp) / "mirror", full=full, workdir=Path(tmp) / "work")
        v.trusted_keys = list(trusted_keys or [])
        try:
            v.run()
        except RegistryError:
            raise
        except Exception as e:  # HTTP trouble while walking: say so, never a traceback
            raise hub_error(e, repo_id, revision, remote.endpoint) from e
    sort_findings(v.findings)
    v.stats.update(
        {
            "bytes_fetched": remote.fetcher.bytes_fetched,
            "requests": remote.fetcher.requests,
            "whole_reads": remote.fetcher.whole_reads,
            "weight_bytes": sum(e.size for p, e in remote.files.items() if p.endswith((".pth", ".safetensors"))),
            "commit": remote.sha,
            "elapsed_s": time.perf_counter() - t0,
        }
    )
    return Report(f"hf://{repo_id}@{remote.sha}", v.findings, v.stats)


# --- add-base --from-hub ---------------------------------------------------------------------------------


def parse_hub_file(spec: str) -> tuple[str, str | None, str]:
    """``OWNER/REPO[@REVISION]/FILE`` -> (repo id, revision or None, file path in the repository).

    >>> parse_hub_file("BlinkDL/rwkv7-g1/rwkv7-g1a-0.1b-20250728-ctx4096.pth")
    ('BlinkDL/rwkv7-g1', None, 'rwkv7-g1a-0.1b-20250728-ctx4096.pth')
    >>> parse_hub_file("BlinkDL/rwkv7-g1@abc123/sub/x.pth")
    ('BlinkDL/rwkv7-g1', 'abc123', 'sub/x.pth')
    """
    spec = spec[len("hf://") :] if spec.startswith("hf://") else spec
    m = re.match(r"^([^/@]+/[^/@]+?)(?:@([^/]+))?/(.+)$", spec)
    if not m:
        raise UsageError(
            f"--from-hub {spec!r} is not OWNER/REPO/FILE",
            hint="e.g. --from-hub BlinkDL/rwkv7-g1/rwkv7-g1a-0.1b-20250728-ctx4096.pth (OWNER/REPO@REV/FILE pins it)",
        )
    repo_id, revision, file = m.group(1), m.group(2), m.group(3)
    check_repo_id(repo_id, "--from-hub OWNER/REPO/FILE")
    if any(part in ("", ".", "..") for part in file.split("/")):
        raise UsageError(
            f"--from-hub: {file!r} is not a file path inside the repository",
            hint="Give the path the Hub lists, without empty, '.' or '..' parts: OWNER/REPO[@REV]/DIR/FILE.pth.",
        )
    return repo_id, revision, file


def _read_remote_architecture(remote: RemoteRepo, file: str) -> dict[str, Any]:
    from rwkv_registry.formats.ckpt import open_checkpoint
    from rwkv_registry.index.arch import architecture_from_shapes

    # a base has ~30 tensors per layer, most of a few KB: merging neighbours within 64 KiB turns ~1000
    # local-header reads into ~100 requests, for a few MB of a 14 GB file
    source = remote.open(file, workers=16, gap=64 * 1024)
    source.prefetch_zip_metadata()
    try:
        ck = open_checkpoint(source)
    except CheckpointError as e:
        raise RefusedError(
            f"{remote.repo_id}/{file}: {e.message}", hint="Give an RWKV-7 base saved by torch.save.", path=file
        ) from None
    shapes = {n: tuple(t.shape) for n, t in ck.tensors.items()}
    dtype = Counter(t.dtype for t in ck.tensors.values()).most_common(1)
    return architecture_from_shapes(shapes, dtype=dtype[0][0] if dtype else None)


def add_base_from_hub(
    path: str | os.PathLike[str],
    spec: str,
    *,
    name: str | None = None,
    vocab: str = "rwkv_vocab_v20230424.txt",
    freeze_previous: bool = True,
    family: str | None = None,
    endpoint: str | None = None,
    token: str | bool | None = None,
    warnings: list[Finding] | None = None,
    frozen: list[tuple[str, str]] | None = None,
) -> dict[str, Any]:
    """Register a base read from the Hub: sha256 and size from LFS metadata, architecture from Range
    reads of the checkpoint's zip and pickle (a few hundred KB of a 14 GB file). The base's
    ``source`` records the file path and the commit it was read at. Returns the base as in index.json.
    ``warnings``, ``frozen``: as for :func:`~rwkv_registry.store.ops.add_base`.
    """
    from huggingface_hub import HfApi
    from huggingface_hub.hf_api import RepoFile

    from rwkv_registry.hub.transport import Fetcher
    from rwkv_registry.store.ops import add_base

    root = Path(path)
    if not (root / "index.json").is_file():
        raise UsageError(f"{path}: no index.json here", hint="Create a registry with `rwkv-registry init PATH`.")
    repo_id, revision, file = parse_hub_file(spec)
    endpoint = hub_endpoint(endpoint)
    api = HfApi(endpoint=endpoint, token=token)
    try:
        sha = api.repo_info(repo_id, revision=revision).sha
        infos = api.get_paths_info(repo_id, [file], revision=sha)
    except Exception as e:
        raise hub_error(e, repo_id, revision, endpoint) from e
    info = next((i for i in infos if isinstance(i, RepoFile) and i.path == file), None)
    if info is None:
        raise UsageError(
            f"{repo_id}@{(sha or '')[:12]}: no file {file!r}",
            hint=f"List the files with `hf download {repo_id} --dry-run` or on the Hub's Files tab.",
        )
    if info.lfs is None:
        raise RefusedError(
            f"{repo_id}/{file} is not stored in Git LFS, so the Hub does not give its sha256",
            hint="Download it and run `rwkv-registry add-base PATH FILE` (it hashes the file).",
        )
    assert sha is not None
    remote = RemoteRepo(api, repo_id, revision, sha, endpoint, Fetcher(endpoint, token))
    remote.files[file] = RemoteEntry(file, int(info.lfs.size), info.blob_id, info.lfs.sha256)
    try:
        arch = _read_remote_architecture(remote, file)
    except RegistryError:
        raise
    except Exception as e:
        raise hub_error(e, repo_id, revision, endpoint) from e
    base_name = name or PurePosixPath(file).stem
    return add_base(
        root,
        name=base_name,
        source=repo_id,
        source_file=file,
        revision=sha,
        sha256=info.lfs.sha256,
        size=int(info.lfs.size),
        arch=arch,
        vocab=vocab,
        family=family,
        freeze_previous=freeze_previous,
        warnings=warnings,
        frozen=frozen,
    )
