"""Per-file facts: everything the rules need from a weight file's bytes, computed in one pass.

A weight file is mapped once (mmap); the same pages feed its sha256, the safe reader (tensor
headers, the embedded miss.json), the MiSS ``content_version`` and the value scan. Facts depend
only on the file's bytes, so they are cached per file, keyed by (device, inode, path, size,
mtime_ns, ctime_ns): an unchanged file is never read again, and an in-place edit that restores the
old mtime still changes ctime. A file whose times are whole seconds and recent is not cached
(:func:`racy`): on a coarse clock, a same-size rewrite in the same step would keep the whole key.
Rules that compare a file with index.json or its base are applied to the facts on every run
(:mod:`rwkv_registry.engine.validate`).
"""

from __future__ import annotations

import hashlib
import json
import mmap
import os
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import MISSING, asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from rwkv_registry.checks.catalogue import RULES, finding
from rwkv_registry.checks.state import holds_a_state, time_state_name
from rwkv_registry.core.codekey import code_digest
from rwkv_registry.core.errors import CheckpointError
from rwkv_registry.core.rules import Finding
from rwkv_registry.core.textsafe import clip

MAX_ITEMS = 50_000  # index.json entries whose schema errors the cache keeps
_JOURNAL_MAX = 8 << 20  # bytes of the journal read back (FactsCache.journal); beyond, ignored
_JOURNAL_APPEND_MAX = 1 << 20  # a save appends to the journal up to this size, then rewrites the cache file


def cache_version() -> list[str]:
    """What a cache file and each journal line are stamped with, and must carry to be read: the digest of the code
    that decides the facts and verdicts cached (:func:`rwkv_registry.core.codekey.code_digest`, which covers this module
    and so the cache's layout too): facts of the code before an upgrade or an edit are never trusted."""
    return ["facts", code_digest()]


@dataclass
class FileFacts:
    """What one weight file contains. JSON-serializable (cached)."""

    size: int
    sha256: str
    kind: str  # torch-zip | safetensors | lfs-pointer | unknown
    writer: str | None = None
    method: str | None = None  # state | miss | None (neither)
    tensors: list[tuple[str, str, list[int]]] = field(default_factory=list)  # name, dtype, shape
    manifest: Any = None  # parsed miss.json (None when absent or unparseable)
    content_version: str | None = None  # recomputed from the bytes (MiSS only)
    targets: list[dict[str, Any]] = field(default_factory=list)  # checked MiSS target specs
    lfs: dict[str, Any] | None = None  # {"oid": ..., "size": ...} when the file is an LFS pointer
    findings: list[dict[str, Any]] = field(default_factory=list)  # content-only findings

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> FileFacts:
        data = dict(data)
        data["tensors"] = [tuple(t) for t in data.get("tensors", [])]
        return cls(**data)

    def content_findings(self, path: str) -> list[Finding]:
        return [finding(f["code"], path, f["message"], hint=f.get("hint")) for f in self.findings]


def _add(facts: FileFacts, code: str, message: str, hint: str | None = None) -> None:
    """A content finding; ``hint`` only where it is more precise than the rule's own (what to change here)."""
    facts.findings.append({"code": code, "message": message, **({"hint": hint} if hint else {})})


def compute_facts(path: str | os.PathLike[str]) -> FileFacts:
    """Read ``path`` once and derive its facts. Raises OSError only for I/O failures (and for a FIFO or
    device, which would block)."""
    return _mapped_facts(path, None)


_HASH_STEP = 1 << 20  # bytes of a mapped file fed to each hasher in turn (compute_facts_and_blob_id)


def compute_facts_and_blob_id(path: str | os.PathLike[str]) -> tuple[FileFacts, str]:
    """:func:`compute_facts` and the file's git blob id (sha1 of ``blob <size>\\0`` + the bytes) from the same
    read: one mmap, each 1 MiB of it fed to the sha256 and the sha1 in turn (a weight file kept in plain git, not
    LFS, whose download is checked by its blob id and validated by its sha256). Raises OSError only for I/O
    failures."""
    blob = hashlib.sha1(usedforsecurity=False)
    facts = _mapped_facts(path, blob)
    return facts, blob.hexdigest()


def _mapped_facts(path: str | os.PathLike[str], blob: Any) -> FileFacts:
    """The facts of ``path`` mapped once; with ``blob`` (a sha1), the git blob id of the same bytes too."""
    from rwkv_registry.core.fsio import open_regular

    with open_regular(path) as f:
        size = os.fstat(f.fileno()).st_size
        if blob is not None:
            blob.update(b"blob %d\0" % size)
        if size == 0:
            facts = FileFacts(size=0, sha256=hashlib.sha256(b"").hexdigest(), kind="unknown")
            _add(facts, "PTH001", "the file is empty")
            return facts
        mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    try:
        sha256 = None
        if blob is not None:
            h = hashlib.sha256()
            view = memoryview(mm)
            try:
                for at in range(0, size, _HASH_STEP):
                    chunk = view[at : at + _HASH_STEP]
                    h.update(chunk)
                    blob.update(chunk)
                    chunk.release()
            finally:
                view.release()
            sha256 = h.hexdigest()
        return facts_from_buffer(mm, sha256=sha256)
    finally:
        try:
            mm.close()
        except BufferError:  # a view still alive (only on error paths); the GC closes it
            pass


def facts_from_buffer(buf: bytes | bytearray | memoryview | mmap.mmap, *, sha256: str | None = None) -> FileFacts:
    """Facts of a file already in memory (or mapped). ``sha256``: the digest of ``buf`` when the caller computed it
    already (:func:`compute_facts_and_blob_id`), else computed here."""
    from rwkv_registry.formats.ckpt import MemorySource, open_checkpoint
    from rwkv_registry.formats.lfs import parse_lfs_pointer

    size = len(buf)
    facts = FileFacts(size=size, sha256=sha256 or hashlib.sha256(buf).hexdigest(), kind="unknown")
    if size < 1024:
        pointer = parse_lfs_pointer(bytes(buf[:size]))
        if pointer is not None:
            facts.kind = "lfs-pointer"
            facts.lfs = {"oid": pointer.oid, "size": pointer.size}
            _add(
                facts,
                "LFS001",
                f"the file is a Git LFS pointer (oid sha256:{pointer.oid[:12]}…, size {pointer.size}), not the weights",
            )
            return facts
    try:
        ck = open_checkpoint(MemorySource(buf))
    except CheckpointError as e:
        _add(facts, e.code, e.message)
        return facts
    checkpoint_facts(facts, ck)
    return facts


def checkpoint_facts(facts: FileFacts, ck: Any) -> None:
    """The kind, tensors, method and content findings of an opened checkpoint ``ck``: one function for a local
    file and for the Hub's header reads (:mod:`rwkv_registry.hub.facts`, whose ``ck`` raises when a value is
    read), so that both apply the same rules.

    A manifest counts only as the server looks it up: the zip entry ``archive/miss.json``, that exact name
    (adapter.cpp ``load_package``: ``archive.value().find_entry("archive/miss.json")``; pth_archive.cpp
    ``find_entry`` compares names with ``==``, case-sensitive). A ``miss.json`` under another prefix (what
    ``torch.save`` names after the file, or ``Archive/``) never reaches here: the reader refuses it (PTH019), as
    a member no reader of weights reads."""
    from rwkv_registry.checks.miss import looks_like_training_checkpoint

    facts.kind = ck.kind
    facts.writer = ck.writer
    facts.tensors = [(t.name, t.dtype, list(t.shape)) for t in ck.tensors.values()]
    if ck.miss_manifest is not None:
        facts.method = "miss"
        miss_facts(facts, ck, ck.miss_manifest)
    elif looks_like_training_checkpoint(ck.tensors):
        facts.method = "miss"
        _add(
            facts,
            "MIS018",
            "a legacy rwkv_miss_tune training checkpoint (training.pth without archive/miss.json: fp32 "
            ".D.master/.gradient/.adam_m/.adam_v records and initial_state), not an inference adapter: the server "
            "loads it only with the trainer's checkpoint.json beside it, and refuses it alone (PTH has no embedded "
            "MiSS metadata; legacy checkpoints require sibling checkpoint.json)",
        )
    elif holds_a_state(ck.tensors):
        facts.method = "state"
        _state_facts(facts, ck)


# Which bytes of a little-endian float hold the bits of its exponent, and which of them: a float is NaN or
# infinite exactly when every one of those bits is set (float32 0x7F800000, bfloat16 0x7F80, float16 0x7C00).
_EXPONENT_BYTES: dict[str, tuple[int, tuple[tuple[int, int], ...]]] = {
    "float32": (4, ((3, 0x7F), (2, 0x80))),
    "bfloat16": (2, ((1, 0x7F), (0, 0x80))),
    "float16": (2, ((1, 0x7C),)),
}
_ALL_SET = {m: bytes(1 if b & m == m else 0 for b in range(256)) for m in (0x7F, 0x80, 0x7C)}  # translate tables


_NUMPY_FROM = 1 << 20  # bytes: from here numpy's vector code beats these C passes by more than its import costs


def count_nonfinite(data: bytes | memoryview, dtype: str) -> int:
    """How many values of the little-endian ``dtype`` array ``data`` are NaN or infinite (float32, bfloat16,
    float16). Below :data:`_NUMPY_FROM` bytes, computed without numpy, whose import would cost a validation that
    reads one small new State file (the pre-commit hook after an ``add``) more than the file itself: a strided
    slice, ``bytes.translate`` to one flag byte per value and, only when some value has the first part of its
    exponent all ones, an AND of the flags as integers and ``int.bit_count``."""
    size, parts = _EXPONENT_BYTES[dtype]
    if len(data) >= _NUMPY_FROM:
        import numpy as np

        if dtype == "bfloat16":
            return int(np.count_nonzero((np.frombuffer(data, dtype="<u2") & 0x7F80) == 0x7F80))
        return int(np.count_nonzero(~np.isfinite(np.frombuffer(data, dtype="<f4" if size == 4 else "<f2"))))
    raw = bytes(data)
    raw = raw[: len(raw) - len(raw) % size]
    (offset, mask), rest = parts[0], parts[1:]
    flags = raw[offset::size].translate(_ALL_SET[mask])
    if not flags.count(1):
        return 0  # the usual case: no exponent even near all ones
    hits = int.from_bytes(flags, "little")
    for offset, mask in rest:
        hits &= int.from_bytes(raw[offset::size].translate(_ALL_SET[mask]), "little")
    return hits.bit_count()


def _state_facts(facts: FileFacts, ck: Any) -> None:
    for t in ck.tensors.values():
        if not time_state_name(t.name):
            continue  # the server never reads the values of the others (STA006)
        if t.dtype not in _EXPONENT_BYTES:
            continue  # STA003 is decided from the dtype alone
        bad = count_nonfinite(ck.tensor_bytes(t.name), t.dtype)
        if bad:
            _add(facts, "STA004", f"{clip(t.name)} holds {bad} NaN/Inf value(s)")


def miss_facts(
    facts: FileFacts, ck: Any, raw: bytes | memoryview | None, *, origin: str = "", manifest: Any = None
) -> None:
    """load_package's rules on one package: the manifest ``raw`` (bytes of ``origin``: the embedded
    ``archive/miss.json`` by default, or a legacy ``adapter.json``) or an already built ``manifest`` (``origin``
    "checkpoint.json": what the server makes of a legacy checkpoint's metadata,
    :mod:`rwkv_registry.engine.misspkg`), and
    the tensors of ``ck``. Findings go to ``facts``, in the server's order where it stops at the first.

    Only an embedded manifest has a ``tensor_source``: "D" (the default) or "master" (a training checkpoint, its
    targets read from the fp32 ``<name>.master`` records, 4 per target and ``initial_state``), removed before
    anything else is checked or hashed (``p->manifest.removeMember("tensor_source")``). A legacy ``adapter.json`` is
    used as it is (the server does not read ``tensor_source`` there, and hashes it)."""
    from rwkv_registry.checks.miss import (
        MANIFEST_ENTRY,
        MANIFEST_MAX_BYTES,
        TENSOR_SOURCES,
        budget_findings,
        check_manifest,
        content_version,
        payload_bytes,
        server_values,
    )
    from rwkv_registry.formats.jsonload import JsonLoadError, load_json_bytes

    origin = origin or MANIFEST_ENTRY
    legacy = origin == "checkpoint.json"
    training = legacy
    if manifest is None:
        assert raw is not None
        if len(raw) > MANIFEST_MAX_BYTES:  # (8ULL << 20): "adapter manifest too large"
            _add(
                facts,
                "MIS002",
                f"{origin} is {len(raw)} bytes, the server's limit is {MANIFEST_MAX_BYTES} "
                "(adapter manifest too large)",
            )
            return
        try:
            manifest = load_json_bytes(bytes(raw), path=origin)
        except JsonLoadError as e:  # "invalid embedded MiSS manifest" / "invalid adapter manifest"
            _add(facts, "MIS003", f"{origin}: {e}", hint=e.hint or None)
            return
    if origin == MANIFEST_ENTRY and isinstance(manifest, dict):
        source = manifest.get("tensor_source", "D")  # get("tensor_source", "D").asString()
        if not (isinstance(source, str) and source in TENSOR_SOURCES):
            facts.manifest = manifest
            _add(
                facts,
                "MIS019",
                f'miss.json tensor_source is {source!r}; the server takes only "D" (the default) or "master" '
                "(unsupported adapter tensor source)",
            )
            return
        training = source == "master"
        manifest = {k: v for k, v in manifest.items() if k != "tensor_source"}
        if training:
            dtype_said = manifest.get("dtype")
            _add(
                facts,
                "MIS018",
                'a rwkv_miss_tune training checkpoint (training.pth: tensor_source "master", fp32 .master tensors '
                "with their gradients, Adam moments and initial_state), not the inference adapter: the server would "
                f"load it, rounding the masters to {dtype_said if isinstance(dtype_said, str) else 'float16'}, "
                "unless another finding here is a reason it refuses it",
            )
    facts.manifest = manifest
    structural, specs = check_manifest(manifest, "")
    for f in structural:
        _add(facts, f.code, f.message, hint=f.hint if f.hint != RULES[f.code].hint else None)
    facts.targets = [asdict(s) for s in specs]
    if not isinstance(manifest, dict):
        return
    dtype = manifest.get("dtype")
    names = set(ck.tensors)
    targets = manifest.get("targets")
    n_targets = len(targets) if isinstance(targets, list) else 0  # anything else got MIS007
    suffix = ".master" if training else ""
    wanted = {s.tensor + suffix for s in specs}
    expected_count = n_targets * 4 + 1 if training else n_targets
    ok = len(specs) == n_targets
    for s in specs:  # "adapter tensor shape/dtype mismatch"
        record = s.tensor + suffix
        want_dtype = "float32" if training else dtype
        t = ck.tensors.get(record)
        if t is None:
            _add(facts, "MIS008", f"target tensor {record} is missing")
            ok = False
        elif t.dtype != want_dtype:
            _add(
                facts,
                "MIS008",
                f"{record} is {t.dtype}, the server requires {want_dtype}"
                + (" (a training checkpoint's masters are fp32)" if training else " (the manifest's dtype)"),
            )
            ok = False
        elif tuple(t.shape) != s.shape:
            _add(facts, "MIS008", f"{record} has shape {list(t.shape)}, the manifest says {list(s.shape)}")
            ok = False
    extra = [] if training else sorted(names - wanted)
    if extra or len(names) != expected_count:  # "adapter tensor count mismatch"
        shown = ", ".join(extra[:5]) + ("…" if len(extra) > 5 else "")
        _add(
            facts,
            "MIS009",
            f"{len(names)} tensors for {n_targets} targets"
            + (f" (a training checkpoint holds 4 per target and initial_state: {expected_count})" if training else "")
            + (f" (not targets: {shown})" if extra else ""),
        )
    for f in budget_findings(payload_bytes(specs), ""):  # "adapter RAM budget exceeded", and the GPU's at use
        _add(facts, f.code, f.message, hint=f.hint)
    if not ok or dtype not in ("bfloat16", "float16"):
        return
    chunks = []
    for s in specs:
        record = s.tensor + suffix
        native, bad = server_values(ck.tensor_bytes(record), ck.tensors[record].dtype, dtype)
        chunks.append(native)
        for count, first, message in bad:
            _add(facts, "MIS010", f"{record}: {count} value(s) refused: {message} (first: {first!r})")
    facts.content_version = content_version(manifest, chunks)
    if legacy:  # the server computes it for a legacy checkpoint: nothing to compare
        manifest["content_version"] = facts.content_version
        return
    embedded = manifest.get("content_version")
    if isinstance(embedded, str) and embedded != facts.content_version:  # "adapter content digest mismatch"
        why = ""
        if training and dtype == "float16":
            import numpy as np

            even = [
                np.frombuffer(ck.tensor_bytes(s.tensor + suffix), dtype="<f4").astype("<f2").tobytes() for s in specs
            ]
            if content_version(manifest, even) == embedded:
                why = (
                    "; it is what the trainer's rounding of the fp32 masters to float16 gives (ties to even, "
                    "__float2half_rn), not the server's (float_to_f16_bits: ties away from zero, and 0 below 2^-24): "
                    "a master value falls on a float16 tie or under 2^-24, and the server refuses this checkpoint"
                )
        _add(
            facts,
            "MIS011",
            f"embedded content_version {embedded[:16]}… but the file's content gives {facts.content_version[:16]}…"
            + why,
        )


# --- the per-file cache ----------------------------------------------------------------------------


def cache_dir() -> Path:
    """The user cache directory (``RWKV_REGISTRY_CACHE_DIR`` overrides it)."""
    env = os.environ.get("RWKV_REGISTRY_CACHE_DIR")
    if env:
        return Path(env)
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("rwkv-registry", appauthor=False))


def stat_key(st: os.stat_result, path: str) -> list[Any]:
    return [st.st_dev, st.st_ino, path, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


_SECOND_NS = 1_000_000_000
RACY_COARSE_NS = 2 * _SECOND_NS  # the coarsest file-system clock in use: FAT's 2 s (HFS+, ext3: 1 s)


def racy(key: list[Any], started_ns: int) -> bool:
    """Whether facts read under ``key`` may not be cached: the file's times are whole seconds (a file system
    with a coarse clock: FAT, HFS+, ext3, some network mounts) and within that clock's step of ``started_ns``,
    the wall time before the file was looked at. A same-size rewrite in the same step would then keep every
    field of the key, and the cache would answer for the old bytes (git's "racily clean" entries). Such a
    file is hashed again on the next run, once its times are old enough."""
    mtime, ctime = key[4], key[5]
    if mtime % _SECOND_NS and ctime % _SECOND_NS:
        return False  # sub-second times: a later write gets a later time
    return max(mtime, ctime) + RACY_COARSE_NS > started_ns


_BLOB_FIELDS = ("tensors", "targets", "manifest.targets")  # stored once per distinct content (FactsCache.blobs)
_BLOB_MIN_ITEMS = 4
_FIELDS = frozenset(f.name for f in fields(FileFacts))
_REQUIRED_FIELDS = frozenset(f.name for f in fields(FileFacts) if f.default is MISSING and f.default_factory is MISSING)


def _list_of_lists(value: Any) -> bool:
    """Whether ``value`` is a list of lists or tuples (a tensor list: name, dtype, shape; as JSON holds it, or as
    :meth:`FactsCache.put` left it in memory)."""
    return isinstance(value, list) and all(isinstance(t, (list, tuple)) for t in value)


class FactsCache:
    """A JSON file of facts per absolute path, outside the validated tree. Never trusted blindly:
    an entry is used only if its stat key matches exactly."""

    def __init__(self, root: Path, *, enabled: bool = True) -> None:
        self.enabled = enabled
        self.dirty = False
        self.files: dict[str, Any] = {}
        self.json: dict[str, Any] = {}
        # schema errors of index.json entries by content (rwkv_registry.schemas.schema_errors' memo)
        self.items: dict[str, Any] = {}
        # the big lists of facts (tensors, targets, the manifest's targets) by content: every adapter of one
        # base and rank has the same ones, 60 KB of JSON each at 7.2B, loaded on every warm run
        self.blobs: dict[str, Any] = {}
        self.path: Path | None = None
        self.journaled = False  # a journal existed when the cache was read: a rewrite of the file replaces it
        self.loaded = False  # the cache file was read (this version): a save may append only what changed
        self._new_files: dict[str, Any] = {}
        self._new_json: dict[str, Any] = {}
        self._seen_items: set[str] = set()
        self._tuples: dict[str, list[Any] | None] = {}  # blobs of tensor lists as tuples (get); None: malformed
        if not enabled:
            return
        directory = cache_dir().resolve()
        root = root.resolve()
        if directory == root or root in directory.parents:
            self.enabled = False  # never write inside the validated tree
            return
        tag = hashlib.sha256(str(root).encode("utf-8", "surrogateescape")).hexdigest()[:16]
        self.path = directory / f"validate-{tag}.json"
        try:
            with open(self.path, "rb") as f:
                data = json.load(f)
            if data.get("version") == cache_version():
                files, json_values = data.get("files"), data.get("json")  # a file of another shape: a cold run
                self.files = files if isinstance(files, dict) else {}
                self.json = json_values if isinstance(json_values, dict) else {}
                items = data.get("items", {})
                self.items = items if isinstance(items, dict) else {}
                blobs = data.get("blobs", {})
                self.blobs = blobs if isinstance(blobs, dict) else {}
                self.loaded = True
        except (OSError, ValueError, AttributeError):
            pass
        self._read_journal()
        self._seen_items = set(self.items)

    @property
    def journal(self) -> Path | None:
        """What was added since the cache file was written, one JSON line per save or write (:meth:`save`,
        :meth:`journal_items`), beside the cache file; read after it, line by line, in order."""
        return self.path.with_name(f"{self.path.stem}.journal.jsonl") if self.path else None

    def _read_journal(self) -> None:
        self.journaled = False
        if self.journal is None:
            return
        try:
            with open(self.journal, "rb") as f:
                raw = f.read(_JOURNAL_MAX + 1)
        except OSError:
            return
        self.journaled = True  # removed by the next save, which keeps what it holds
        if len(raw) > _JOURNAL_MAX:
            return
        for line in raw.splitlines():
            try:
                record = json.loads(line)
            except ValueError:
                continue  # a line cut short by a killed writer
            if isinstance(record, dict) and record.get("version") == cache_version():
                for name, table in (("files", self.files), ("json", self.json), ("items", self.items)):
                    values = record.get(name)
                    if isinstance(values, dict):
                        table.update(values)
                blobs = record.get("blobs")
                if isinstance(blobs, dict):
                    self.blobs.update(blobs)
                for path in record.get("gone") or ():  # files deleted since: their entries leave the cache
                    if isinstance(path, str):
                        self.files.pop(path, None)

    def journal_items(self, items: dict[str, Any], json_values: dict[str, Any] | None = None) -> None:
        """Append index-entry schema results (and JSON files' verdicts, :meth:`put_json`) to the journal, not
        rewriting the whole cache: ``add`` records those of the entries and the train.json it wrote, so that the
        validation right after it (the pre-commit hook) finds them known and does not import jsonschema. Both are
        keyed by content, like :attr:`items` and :attr:`json`; a lost line only costs time."""
        if not (self.enabled and self.journal is not None and (items or json_values)):
            return
        self._append({"version": cache_version(), "items": items, "json": json_values or {}})

    def _append(self, record: dict[str, Any], limit: int | None = None) -> bool:
        """Append ``record`` as one line to the journal (None path: nothing); False when it could not be written
        or the journal would grow past ``limit`` bytes."""
        if self.journal is None:
            return False
        data = (json.dumps(record) + "\n").encode("utf-8", "surrogatepass")
        try:
            if limit is not None:
                try:
                    size = os.stat(self.journal).st_size
                except FileNotFoundError:
                    size = 0
                if size + len(data) > limit:
                    return False
            self.journal.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.journal, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                return os.write(fd, data) == len(data)
            finally:
                os.close(fd)
        except OSError:
            return False

    def _entry(self, path: str, key: list[Any]) -> tuple[dict[str, Any], dict[str, str]] | None:
        """The facts and blob references cached for ``path`` under ``key`` when the entry is well formed, else None:
        the one check behind :meth:`get` and :meth:`sha256_of`, so that they never disagree. Well formed: a dict of
        FileFacts' own fields with at least its required ones (an integer size, a string sha256 and kind), each blob
        reference naming a stored blob of a known field (a tensor list holding lists; ``manifest.targets`` inside a
        manifest dict), inline tensors a list of lists. A cache file damaged or written by hand is then answered by
        reading the file again, never by a hash whose facts could not be made."""
        item = self.files.get(path) if self.enabled else None
        if not (isinstance(item, dict) and item.get("key") == key):
            return None
        facts, blobs = item.get("facts"), item.get("blobs", {})
        if not (isinstance(facts, dict) and isinstance(blobs, dict) and _REQUIRED_FIELDS <= facts.keys() <= _FIELDS):
            return None
        size, sha, kind = facts["size"], facts["sha256"], facts["kind"]
        if isinstance(size, bool) or not (isinstance(size, int) and isinstance(sha, str) and isinstance(kind, str)):
            return None
        for where, digest in blobs.items():
            if where not in _BLOB_FIELDS or not isinstance(digest, str) or digest not in self.blobs:
                return None
            if where == "manifest.targets" and not isinstance(facts.get("manifest"), dict):
                return None
            if where == "tensors" and self._tensor_tuples(digest) is None:
                return None
        if "tensors" not in blobs and not _list_of_lists(facts.get("tensors", [])):
            return None
        return facts, blobs

    def get(self, path: str, key: list[Any]) -> FileFacts | None:
        entry = self._entry(path, key)
        if entry is None:
            return None
        facts, blobs = entry
        data = dict(facts)
        shared = None
        for where, digest in blobs.items():  # the fields put() replaced, by name
            if where == "tensors":  # as FileFacts.from_json makes them, once per blob (read-only)
                shared = data["tensors"] = self._tensor_tuples(digest)
                continue
            value = self.blobs[digest]
            if where == "manifest.targets":
                data["manifest"] = {**data["manifest"], "targets": value}
            else:
                data[where] = value
        if shared is None:
            data["tensors"] = [tuple(t) for t in data.get("tensors", [])]  # FileFacts.from_json's
        return FileFacts(**data)

    def sha256_of(self, path: str, key: list[Any]) -> str | None:
        """The sha256 of the facts cached for ``path`` under ``key`` (what ``get(path, key).sha256`` gives), without
        making the facts (their dict, tensor tuples and FileFacts: about 10 µs a file, 4,000 per write at 4,000
        entries, where SHA256SUMS needs only the hash); None exactly when :meth:`get` gives None (:meth:`_entry`)."""
        entry = self._entry(path, key)
        return None if entry is None else str(entry[0]["sha256"])

    def _tensor_tuples(self, digest: str) -> Any:
        """The blob ``digest`` (a tensor list) as FileFacts holds it, tuples, made once and shared: the adapters of a
        base and rank all have it (2,400 lists of tuples made again on every warm run at 4,000 entries); None when
        the blob is no list of lists (a damaged cache: :meth:`_entry` rejects the entries that use it)."""
        if digest not in self._tuples:
            blob = self.blobs.get(digest)
            self._tuples[digest] = [tuple(t) for t in blob] if isinstance(blob, list) and _list_of_lists(blob) else None
        return self._tuples[digest]

    def put_read(self, path: str, key: list[Any], facts: FileFacts, started_ns: int) -> None:
        """Cache ``facts`` read from ``path`` under ``key`` (its stat key before the read) unless the file changed
        since it was read (a new stat key) or is racily clean (:func:`racy`, ``started_ns`` being the wall time
        before the file was looked at).

        ``key`` may name another path (its third field): where the file was read before it was renamed to ``path``
        (``pull`` checks each download in a staging directory, then moves it into place). The facts are then
        cached under ``path``'s own key only if it is the same inode with the same size, mtime and ctime: any write
        since the read changes the ctime, and so does, on most file systems, renaming the file itself (it is then
        read again, never trusted)."""
        try:
            st = os.stat(path)
            if stat_key(st, key[2]) == key and not racy(key, started_ns):
                self.put(path, stat_key(st, path), facts)
        except OSError:
            pass

    def put(self, path: str, key: list[Any], facts: FileFacts) -> None:
        if self.enabled:
            data = asdict(facts)
            blobs: dict[str, str] = {}
            for where in _BLOB_FIELDS:
                holder = data.get("manifest") if where == "manifest.targets" else data
                field_name = where.rsplit(".", 1)[-1]
                value = holder.get(field_name) if isinstance(holder, dict) else None
                if not isinstance(value, list) or len(value) < _BLOB_MIN_ITEMS:
                    continue
                text = json.dumps(value)  # key order kept: a blob is exactly the value it replaces
                digest = hashlib.sha256(text.encode()).hexdigest()[:32]
                self.blobs.setdefault(digest, json.loads(text))
                blobs[where] = digest
                if where == "manifest.targets":
                    data["manifest"] = {**data["manifest"], "targets": None}
                else:
                    data[where] = None
            self.files[path] = {"key": key, "facts": data, "blobs": blobs} if blobs else {"key": key, "facts": data}
            self._new_files[path] = self.files[path]
            self.dirty = True

    def get_json(self, key: str) -> Any:
        return self.json.get(key) if self.enabled else None

    def put_json(self, key: str, value: Any) -> None:
        if self.enabled:
            self.json[key] = value
            self._new_json[key] = value
            self.dirty = True

    def _additions(self, gone: list[str] | None = None) -> dict[str, Any]:
        """What this run learnt, as one journal record; ``gone``: the cached files that no longer exist."""
        used = {d for v in self._new_files.values() if isinstance(v, dict) for d in (v.get("blobs") or {}).values()}
        record = {
            "version": cache_version(),
            "files": self._new_files,
            "json": self._new_json,
            "items": {k: v for k, v in self.items.items() if k not in self._seen_items},
            "blobs": {d: self.blobs[d] for d in used if d in self.blobs},
        }
        if gone:
            record["gone"] = gone
        return record

    def save_additions(self) -> None:
        """Append what this run learnt to the journal, never rewriting the cache file: for a run stopped early,
        while the run that replaced it may be writing the cache file (a rewrite from this run's memory would drop
        what the other wrote). Up to :data:`_JOURNAL_APPEND_MAX`; beyond, nothing is kept, which only costs time."""
        if self.enabled and self.dirty and self.path:
            self._append(self._additions(), _JOURNAL_APPEND_MAX)

    def save(self, live: Iterable[str] = ()) -> None:
        """Write what changed. When the cache file was read and the journal stays under
        :data:`_JOURNAL_APPEND_MAX`, only this run's additions are appended to the journal (one line: the
        validation after an ``add`` at 4,000 entries adds a few KB to a 4 MB file), with the cached files no
        longer in ``live`` (the files under the root) as ``gone``, which leave the cache when it is read back; else
        the whole cache is written atomically, without the entries of files that no longer exist, and the journal
        read with it is removed."""
        if not (self.enabled and self.dirty and self.path):
            return
        keep = set(live)
        gone = [p for p in self.files if p not in keep] if keep else []  # files deleted: their entries leave
        small = len(self.json) <= 4096 and len(self.items) <= MAX_ITEMS
        if self.loaded and small and self._append(self._additions(gone), _JOURNAL_APPEND_MAX):
            for p in gone:
                del self.files[p]
            return
        files = {p: v for p, v in self.files.items() if p in keep} if keep else self.files
        used = {d for v in files.values() if isinstance(v, dict) for d in (v.get("blobs") or {}).values()}
        self.blobs = {d: b for d, b in self.blobs.items() if d in used}
        if len(self.json) > 4096:
            self.json = dict(list(self.json.items())[-2048:])
        if len(self.items) > MAX_ITEMS:  # the most recently used last (schema_errors re-inserts what it reads)
            self.items = dict(list(self.items.items())[-MAX_ITEMS:])
        payload = json.dumps(
            {
                "version": cache_version(),
                "files": files,
                "json": self.json,
                "items": self.items,
                "blobs": self.blobs,
            }
        )
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            import tempfile  # only for a rewrite (a warm run appends or writes nothing)

            fd, tmp = tempfile.mkstemp(prefix=".validate-", dir=self.path.parent)
            with os.fdopen(fd, "w") as f:
                f.write(payload)
            os.replace(tmp, self.path)
            if self.journaled and self.journal is not None:
                self.journal.unlink(missing_ok=True)  # its items are in the file now
        except OSError:
            pass  # a cache that cannot be written only costs time


FileCallback = Callable[[str, "FileFacts | OSError"], None]


class GatherCancelled(Exception):
    """:func:`gather_facts` stopped early because its ``should_stop`` turned true."""


def gather_facts(
    paths: Mapping[str, str | os.PathLike[str]],
    cache: FactsCache,
    *,
    workers: int | None = None,
    progress: Callable[[str, int], None] | None = None,
    on_file: FileCallback | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> tuple[dict[str, FileFacts | OSError], dict[str, int]]:
    """Facts of every file in ``paths`` (relative name -> absolute path), hashed in parallel threads.

    Returns the facts (or the OSError that prevented reading) and stats
    ``{"bytes_hashed": …, "cache_hits": …}``.

    ``on_file(rel, result)`` is called once per file in the calling thread, as soon as its result is known: files
    that could not be stat'ed and cached files first (in the order of ``paths``), then each file read as it
    completes (the biggest are started first, for better packing across threads); the last call comes with the
    last result, so counting the calls gives a progress that reaches ``len(paths)``. ``progress(rel, n)`` is
    called for each file read, with the bytes hashed (0 when it could not be read).

    ``should_stop()`` is polled before each file is looked at, before a worker starts reading one, and after each
    file completes. Once it turns true, no further file is started, the files being read finish (a file is never
    read in part), and :class:`GatherCancelled` is raised without a further callback. Every file read to the end
    is in ``cache`` by then (:meth:`FactsCache.put_read`), under the stat key taken before it was read: the cache
    holds only whole, correct facts, and once saved (:meth:`FactsCache.save_additions`) the next run reads only
    what this one did not.
    """
    stop = should_stop or (lambda: False)
    results: dict[str, FileFacts | OSError] = {}
    todo: list[tuple[int, str, str, list[Any]]] = []
    started = time.time_ns()  # before any file is looked at: the racy-clean rule (put_read)
    hits = 0
    for rel, given in paths.items():
        if stop():
            raise GatherCancelled
        abspath = os.fspath(given)
        try:
            st = os.stat(abspath)
        except OSError as e:
            results[rel] = e
            if on_file:
                on_file(rel, e)
            continue
        key = stat_key(st, abspath)
        cached = cache.get(abspath, key)
        if cached is not None:
            results[rel] = cached
            hits += 1
            if on_file:
                on_file(rel, cached)
        else:
            todo.append((st.st_size, rel, abspath, key))
    todo.sort(reverse=True)  # biggest first: better packing across threads
    hashed = 0

    def work(item: tuple[int, str, str, list[Any]]) -> FileFacts | OSError | None:
        if stop():
            return None  # cancelled before it started: nothing read
        try:
            return compute_facts(item[2])
        except OSError as e:
            return e

    def keep(item: tuple[int, str, str, list[Any]], result: FileFacts | OSError | None) -> None:
        if isinstance(result, FileFacts):  # the cache is only touched here, in the calling thread
            cache.put_read(item[2], item[3], result, started)

    if todo:
        from concurrent.futures import ThreadPoolExecutor, as_completed  # not imported by a warm run

        n = workers or min(len(todo), os.cpu_count() or 1) or 1
        with ThreadPoolExecutor(max_workers=n, thread_name_prefix="rwkv-facts") as pool:
            pending = {pool.submit(work, item): item for item in todo}
            try:
                # as_completed waits on every future with one waiter; wait(pending, FIRST_COMPLETED) in a loop
                # installed and removed a waiter on each pending future per round: quadratic in the files read
                for fut in as_completed(list(pending)):
                    item = pending.pop(fut)
                    result = fut.result()
                    keep(item, result)
                    if result is None or stop():
                        raise GatherCancelled
                    results[item[1]] = result
                    if isinstance(result, FileFacts):
                        hashed += result.size
                    if progress:
                        progress(item[1], result.size if isinstance(result, FileFacts) else 0)
                    if on_file:
                        on_file(item[1], result)
            except BaseException:
                pool.shutdown(wait=True, cancel_futures=True)  # the files being read finish: cache them
                for fut, item in pending.items():
                    if not fut.cancelled() and fut.exception() is None:
                        keep(item, fut.result())
                raise
    return {rel: results[rel] for rel in paths}, {"bytes_hashed": hashed, "cache_hits": hits}
