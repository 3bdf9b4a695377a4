"""Safe reader of weight files: torch ``.pth`` zip archives and ``.safetensors``.

Nothing here executes a pickle or imports torch. A ``.pth`` is read as a zip (offsets and sizes
checked against the file), its ``data.pkl`` interpreted by a small allow-listed pickle machine,
and every tensor checked against its storage; a ``.safetensors`` header is parsed as JSON and
checked the way the safetensors library does. Any rule broken raises
:class:`rwkv_registry.core.errors.CheckpointError` whose ``code`` is the rule (PTH…, LFS001, MIS002).

Usage::

    ckpt = open_checkpoint("adapter-final.pth")          # metadata only, cheap
    for name, info in ckpt.tensors.items():
        print(name, info.dtype, info.shape)
    raw = ckpt.tensor_bytes("blocks.0.att.key.weight.D")  # little-endian bytes, zero copy
    ckpt.close()

For validating many large files, map each file once and pass a :class:`MemorySource` over the
mmap (reads are then zero-copy memoryview slices); :class:`FileSource` reads with ``os.pread``
and counts what it read, so a 14 GB base costs a few kilobytes to open.
"""

from __future__ import annotations

import json
import mmap
import os
import re
import struct
import threading
import zlib
from dataclasses import dataclass, field
from types import TracebackType
from typing import Protocol, runtime_checkable

from rwkv_registry.core.errors import CheckpointError, RegistryIOError, UsageError, os_error_hint
from rwkv_registry.core.textsafe import clip
from rwkv_registry.formats.lfs import MAX_POINTER_SIZE, looks_like_lfs_pointer, parse_lfs_pointer
from rwkv_registry.formats.rules import refusal
from rwkv_registry.formats.unpickle import DTYPE_ITEMSIZE, parse_tensor_pickle
from rwkv_registry.formats.zipread import ZipEntry, read_zip

__all__ = [
    "MAX_DATA_PKL",
    "MAX_MISS_MANIFEST",
    "MAX_NDIM",
    "MAX_SAFETENSORS_HEADER",
    "MAX_SAFETENSORS_TENSORS",
    "SAFETENSORS_DTYPES",
    "ByteSource",
    "Checkpoint",
    "FileSource",
    "MemorySource",
    "TensorInfo",
    "contiguous_stride",
    "open_checkpoint",
    "sniff_kind",
]

MAX_DATA_PKL = 64 * 1024 * 1024
MAX_MISS_MANIFEST = 8 * 1024 * 1024
# MIS002's fix (checks/miss.py gives it to the rule): the one MiSS rule the reader decides, by the manifest's size
MANIFEST_TOO_LARGE_HINT = (
    "The server refuses manifests (archive/miss.json, adapter.json) over 8 MiB; re-export the adapter with "
    "rwkv_miss_tune, whose manifest lists only the targets."
)
MAX_METADATA_ENTRY = 64 * 1024  # byteorder, version, .format_version, ...
MAX_EXTRA_ENTRY = 64 * 1024 * 1024  # other single-name entries (read for their CRC only)
MAX_SAFETENSORS_HEADER = 8 * 1024 * 1024  # the safetensors library allows 100_000_000: see _safetensors_header
MAX_SAFETENSORS_TENSORS = 16_384
MAX_NDIM = 64

# safetensors dtype -> torch dtype name (only these are accepted).
SAFETENSORS_DTYPES: dict[str, str] = {
    "BF16": "bfloat16",
    "F16": "float16",
    "F32": "float32",
    "F64": "float64",
    "I64": "int64",
    "I32": "int32",
    "I16": "int16",
    "I8": "int8",
    "U8": "uint8",
    "BOOL": "bool",
}

_CRC_CHUNK = 8 * 1024 * 1024
_VERIFY_MODES = ("none", "metadata", "all")
_KNOWN_METADATA = {
    "data.pkl",
    "byteorder",
    "version",
    ".format_version",
    ".storage_alignment",
    ".data/serialization_id",
    ".data/version",
}
# What torch.load parses in the metadata records (torch writes b"3\n", b"1", b"64", 40 digits).
MAX_RECORD_VERSION = 10  # torch 2.x reads record versions 1..10 (caffe2 kMaxSupportedFileFormatVersion)
_METADATA_FORMS = {
    "version": re.compile(rb"0*([1-9][0-9]?)\n?\Z"),
    ".data/version": re.compile(rb"0*([1-9][0-9]?)\n?\Z"),
    ".format_version": re.compile(rb"([0-9]{1,4})\Z"),
    ".storage_alignment": re.compile(rb"([1-9][0-9]{0,5})\Z"),
    ".data/serialization_id": re.compile(rb"([\x20-\x7e]{0,256})\Z"),
}
_TORCHSCRIPT_FILES = {"constants.pkl", "attributes.pkl", "model.json", "bytecode.pkl"}
_TORCHSCRIPT_DIRS = ("code/", "extra/", "constants/")
# The members torch.save writes (torch/serialization.py _save: storage keys are str(len(id_map)), decimal) and
# rwkv_lightning_cuda's writers (src/io/pth_writer.cpp write_pth: data/<i>, miss.json); anything else is PTH019.
_MEMBERS = _KNOWN_METADATA | {"miss.json"}
# miss.json is a member only as archive/miss.json: write_pth names its entries "archive/..." and load_package
# (src/miss/adapter.cpp) reads find_entry("archive/miss.json") alone; torch.save writes no miss.json at all.
_MISS_PREFIX = "archive"
_STORAGE_NAME = re.compile(r"data/(0|[1-9][0-9]{0,19})\Z")
_VERSION_RECORDS = (".data/version", "version")  # torch reads the first one present (PyTorchStreamReader::init)
_TORCH_MARKERS = {".format_version", ".storage_alignment", ".data/serialization_id"}


# --- byte sources ------------------------------------------------------------------------------


@runtime_checkable
class ByteSource(Protocol):
    """Random access to the bytes of one file. ``read`` returns exactly ``length`` bytes or raises."""

    size: int

    def read(self, offset: int, length: int) -> bytes | memoryview: ...


def _out_of_range(offset: int, length: int, size: int) -> CheckpointError:
    return refusal("PTH001", f"read of {length} bytes at offset {offset} is beyond the end ({size} bytes)")


class MemorySource:
    """A :class:`ByteSource` over bytes, a bytearray, a memoryview or an mmap (zero-copy slices).

    Call :meth:`release` (or use it as a context manager) before closing an mmap it wraps.
    """

    def __init__(self, buf: bytes | bytearray | memoryview | mmap.mmap) -> None:
        view = memoryview(buf)
        if not view.c_contiguous:
            raise UsageError(
                "MemorySource needs a contiguous buffer",
                hint="Pass bytes(buf), or a contiguous copy (numpy.ascontiguousarray), instead of a strided view.",
            )
        self._view: memoryview = view.cast("B") if view.format != "B" or view.ndim != 1 else view
        self.size: int = self._view.nbytes

    def read(self, offset: int, length: int) -> memoryview:
        """``length`` bytes at ``offset`` as a memoryview slice (no copy)."""
        if offset < 0 or length < 0 or offset + length > self.size:
            raise _out_of_range(offset, length, self.size)
        return self._view[offset : offset + length]

    def release(self) -> None:
        """Drop the view of the buffer (needed before ``mmap.close()``)."""
        self._view.release()

    def __enter__(self) -> MemorySource:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


class FileSource:
    """A :class:`ByteSource` reading a file with ``os.pread``; ``bytes_read`` counts what it read."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = os.fspath(path)
        self.bytes_read = 0
        self._lock = threading.Lock()
        try:
            self._file = open(self.path, "rb", buffering=0)  # noqa: SIM115 - closed by close()
            self.size: int = os.fstat(self._file.fileno()).st_size
        except OSError as exc:
            raise RegistryIOError(
                f"cannot read {self.path}: {exc.strerror or exc}", hint=os_error_hint(exc, self.path), path=self.path
            ) from exc

    def read(self, offset: int, length: int) -> bytes:
        """``length`` bytes at ``offset``; raises PTH001 if the file is shorter (e.g. it shrank)."""
        if offset < 0 or length < 0 or offset + length > self.size:
            raise _out_of_range(offset, length, self.size)
        parts: list[bytes] = []
        got = 0
        try:
            while got < length:
                chunk = self._pread(length - got, offset + got)
                if not chunk:
                    raise refusal(
                        "PTH001",
                        f"file ended at {offset + got} while reading (it shrank?)",
                        hint="The file changed while it was read: let whatever writes it finish, then run again.",
                    )
                parts.append(chunk)
                got += len(chunk)
        except OSError as exc:
            raise RegistryIOError(
                f"cannot read {self.path}: {exc.strerror or exc}", hint=os_error_hint(exc, self.path), path=self.path
            ) from exc
        self.bytes_read += length
        return parts[0] if len(parts) == 1 else b"".join(parts)

    def _pread(self, length: int, offset: int) -> bytes:
        if hasattr(os, "pread"):
            return os.pread(self._file.fileno(), length, offset)
        with self._lock:  # pragma: no cover - platforms without pread (Windows)
            self._file.seek(offset)
            return self._file.read(length)

    def close(self) -> None:
        """Close the file."""
        self._file.close()

    def __enter__(self) -> FileSource:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        file = getattr(self, "_file", None)
        if file is not None:
            file.close()


# --- results -----------------------------------------------------------------------------------


def contiguous_stride(shape: tuple[int, ...]) -> tuple[int, ...]:
    """Row-major strides (in elements) of a contiguous tensor of ``shape``."""
    stride: list[int] = []
    step = 1
    for dim in reversed(shape):
        stride.append(step)
        step *= dim
    return tuple(reversed(stride))


def _numel(shape: tuple[int, ...]) -> int:
    n = 1
    for dim in shape:
        n *= dim
    return n


@dataclass(frozen=True)
class TensorInfo:
    """Where one tensor's bytes are and what they mean."""

    name: str
    dtype: str  # torch dtype name: bfloat16 float16 float32 float64 int64 int32 int16 int8 uint8 bool
    shape: tuple[int, ...]
    stride: tuple[int, ...]
    storage_key: str
    storage_offset: int  # elements
    data_offset: int  # absolute byte offset of the tensor's first byte in the file
    nbytes: int  # numel * itemsize

    @property
    def numel(self) -> int:
        """Number of elements."""
        return _numel(self.shape)

    @property
    def itemsize(self) -> int:
        """Bytes per element."""
        return DTYPE_ITEMSIZE[self.dtype]


@dataclass
class Checkpoint:
    """An opened weight file: its tensors (in file/pickle order) and where their bytes are."""

    kind: str  # "torch-zip" | "safetensors"
    writer: str  # "torch" | "lightning" | "safetensors" | "unknown" (heuristic from entry set/order)
    prefix: str  # zip prefix folder ("" for safetensors)
    tensors: dict[str, TensorInfo]
    miss_manifest: bytes | None  # raw bytes of <prefix>/miss.json if present
    source: ByteSource
    _entries: list[str] = field(default_factory=list, repr=False)
    _owns_source: bool = field(default=False, repr=False)

    def tensor_bytes(self, name: str) -> bytes | memoryview:
        """Raw little-endian bytes of tensor ``name`` (a zero-copy slice for a MemorySource)."""
        info = self.tensors[name]
        return self.source.read(info.data_offset, info.nbytes)

    def entry_names(self) -> list[str]:
        """Zip entry names in central-directory order (empty for safetensors)."""
        return list(self._entries)

    def close(self) -> None:
        """Close the file if :func:`open_checkpoint` opened it from a path."""
        if self._owns_source and isinstance(self.source, FileSource):
            self.source.close()

    def __enter__(self) -> Checkpoint:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


# --- detection ---------------------------------------------------------------------------------


def sniff_kind(head: bytes) -> str:
    """Guess a file's kind from its first bytes (at least 9 are needed for safetensors).

    Returns ``"torch-zip"`` (zip magic), ``"safetensors"`` (8-byte little-endian header length,
    then ``{``), ``"lfs-pointer"`` (Git LFS pointer text) or ``"unknown"``.
    """
    head = bytes(head[:64])
    if looks_like_lfs_pointer(head):
        return "lfs-pointer"
    if head[:4] in (b"PK\x03\x04", b"PK\x05\x06"):
        return "torch-zip"
    if len(head) >= 9 and head[8:9] == b"{":
        return "safetensors"
    return "unknown"


def _to_source(src: object) -> tuple[ByteSource, bool, str]:
    """(source, owned, display path) for what open_checkpoint was given."""
    if isinstance(src, str | os.PathLike):
        source = FileSource(src)
        return source, True, source.path
    if isinstance(src, bytes | bytearray | memoryview | mmap.mmap):
        return MemorySource(src), False, "<memory>"
    if isinstance(src, ByteSource):
        return src, False, str(getattr(src, "path", "<source>"))
    raise UsageError(
        f"open_checkpoint takes a path, bytes or a ByteSource, not {type(src).__name__}",
        hint="Pass the file's path (str or pathlib.Path), its bytes, or a FileSource/MemorySource over it.",
    )


def open_checkpoint(
    src: str | os.PathLike | bytes | bytearray | memoryview | ByteSource, *, verify_crc: str = "metadata"
) -> Checkpoint:
    """Open a weight file and check it, without executing anything.

    ``src`` is a path, a buffer, or a :class:`ByteSource`. The kind is detected from the content:
    a zip (torch ``.pth``) or an 8-byte length + JSON header (``.safetensors``); a Git LFS pointer
    raises LFS001. ``verify_crc`` picks which zip entries have their CRC-32 checked: ``"none"``,
    ``"metadata"`` (every entry except the ``data/*`` storages; the default and cheap) or
    ``"all"``. The first broken rule raises :class:`CheckpointError` with its code, a message
    quoting the offending value, ``path`` set to the file and ``hint`` set to the rule's fix.
    """
    if verify_crc not in _VERIFY_MODES:
        raise UsageError(
            f"verify_crc must be one of {', '.join(_VERIFY_MODES)}, not {verify_crc!r}",
            hint='Pass verify_crc="metadata" (the default), "all" to check the tensor data too, or "none".',
        )
    source, owned, path = _to_source(src)
    try:
        head = bytes(source.read(0, min(source.size, MAX_POINTER_SIZE)))
        kind = sniff_kind(head)
        if kind == "lfs-pointer":
            pointer = parse_lfs_pointer(head)
            if pointer is None:
                raise refusal("LFS001", "file starts like a Git LFS pointer (malformed) instead of weights")
            raise refusal(
                "LFS001",
                f"file is a Git LFS pointer (oid sha256:{pointer.oid}, size {pointer.size} bytes), not the weights",
            )
        if kind == "torch-zip":
            ckpt = _open_zip(source, verify_crc)
        elif kind == "safetensors":
            ckpt = _open_safetensors(source)
        elif source.size == 0:
            raise refusal("PTH001", "file is empty")
        elif path.endswith(".safetensors"):
            raise refusal("PTH012", f"file does not start with a safetensors header (first bytes {head[:9]!r})")
        else:
            raise refusal("PTH001", f"not a zip archive nor safetensors (first bytes {head[:8]!r})")
    except BaseException as exc:
        if owned and isinstance(source, FileSource):
            source.close()
        if isinstance(exc, CheckpointError):
            exc.path = exc.path or path
        raise
    ckpt._owns_source = owned
    return ckpt


# --- torch zip archives ------------------------------------------------------------------------


def _split_names(names: list[str]) -> tuple[str, list[str]]:
    """Check entry names (PTH008, PTH005); the shared prefix and the names below it."""
    prefix: str | None = None
    rel: list[str] = []
    for name in names:
        if name.startswith("/") or re.match(r"[A-Za-z]:", name):
            raise refusal("PTH008", f"entry {clip(name)!r} has an absolute path")
        if "\\" in name:
            raise refusal("PTH008", f"entry {clip(name)!r} contains a backslash")
        if any(ord(c) < 0x20 or c == "\x7f" for c in name) or len(name) > 1024:
            raise refusal("PTH008", f"entry {clip(name)!r} contains control characters or is too long")
        parts = name.split("/")
        if any(p in ("", ".", "..") for p in parts):
            raise refusal("PTH008", f"entry {clip(name)!r} has an empty, '.' or '..' path component")
        if len(parts) < 2:
            raise refusal("PTH008", f"entry {clip(name)!r} is not inside a prefix folder")
        if prefix is None:
            prefix = parts[0]
        elif parts[0] != prefix:
            raise refusal("PTH008", f"entries use several prefix folders: {clip(prefix)!r} and {clip(parts[0])!r}")
        rel.append(name[len(prefix) + 1 :])
    for name in rel:
        if name in _TORCHSCRIPT_FILES or name.startswith(_TORCHSCRIPT_DIRS):
            raise refusal("PTH005", f"entry {clip(f'{prefix}/{name}')} marks a TorchScript archive, not a checkpoint")
    for name in rel:
        if name == "miss.json" and prefix != _MISS_PREFIX:
            raise refusal(
                "PTH019",
                f"entry {clip(f'{prefix}/{name}')} is a MiSS manifest under another prefix than {_MISS_PREFIX}/: the "
                f"server reads the manifest only as {_MISS_PREFIX}/miss.json (exact name) and torch never reads it, so "
                "no reader of weights reads this one",
            )
        if name in _MEMBERS or _STORAGE_NAME.match(name):
            continue
        raise refusal(
            "PTH019", f"entry {clip(f'{prefix}/{name}')} is no member torch.save or rwkv_lightning_cuda writes"
        )
    if "data.pkl" not in rel:
        raise refusal("PTH001", f"archive has no {clip(prefix or 'archive')}/data.pkl: not a torch checkpoint")
    return prefix or "", rel


def _entry_limit(name: str) -> tuple[int, str]:
    if name == "data.pkl":
        return MAX_DATA_PKL, "PTH010"
    if name == "miss.json":
        return MAX_MISS_MANIFEST, "MIS002"
    if name in _KNOWN_METADATA:
        return MAX_METADATA_ENTRY, "PTH010"
    return MAX_EXTRA_ENTRY, "PTH010"


def _crc32(source: ByteSource, entry: ZipEntry) -> int:
    crc = 0
    for start in range(entry.data_offset, entry.data_offset + entry.size, _CRC_CHUNK):
        length = min(_CRC_CHUNK, entry.data_offset + entry.size - start)
        crc = zlib.crc32(source.read(start, length), crc)
    return crc


def _check_crc(source: ByteSource, prefix: str, name: str, entry: ZipEntry) -> None:
    actual = _crc32(source, entry)
    if actual != entry.crc32:
        raise refusal(
            "PTH002",
            f"entry {prefix}/{name} has CRC-32 {actual:08x}, the directory records {entry.crc32:08x}",
        )


def _check_metadata(source: ByteSource, prefix: str, rel: dict[str, ZipEntry]) -> None:
    """The small records torch parses when it loads must parse (else torch.load fails on a file we pass)."""
    for name, form in _METADATA_FORMS.items():
        entry = rel.get(name)
        if entry is None:
            continue
        value = bytes(source.read(entry.data_offset, entry.size))
        m = form.match(value)
        if m is None or (name in ("version", ".data/version") and not 1 <= int(m.group(1)) <= MAX_RECORD_VERSION):
            raise refusal("PTH001", f"entry {prefix}/{name} holds {value[:40]!r}, which torch cannot read")


def _guess_writer(prefix: str, names: list[str]) -> str:
    if names and names[0] == "data.pkl":
        return "torch"
    n = sum(1 for name in names if name.startswith("data/"))
    expected = [f"data/{i}" for i in range(n)] + ["data.pkl", "byteorder", "version"]
    if prefix == "archive" and names in (expected, [*expected, "miss.json"]):
        return "lightning"
    return "unknown"


def _is_contiguous(shape: tuple[int, ...], stride: tuple[int, ...]) -> bool:
    """torch's rule: dimensions of size 1 may have any stride; an empty tensor is contiguous."""
    if 0 in shape:
        return True
    expected = 1
    for dim, step in zip(reversed(shape), reversed(stride), strict=True):
        if dim != 1:
            if step != expected:
                return False
            expected *= dim
    return True


def _open_zip(source: ByteSource, verify_crc: str) -> Checkpoint:
    entries = read_zip(source, check_names=_split_names)
    prefix, _ = _split_names([e.name for e in entries])
    rel = {e.name[len(prefix) + 1 :]: e for e in entries}
    for name, entry in rel.items():
        if _STORAGE_NAME.match(name):
            continue
        limit, code = _entry_limit(name)
        if entry.size > limit:
            hint = MANIFEST_TOO_LARGE_HINT if code == "MIS002" else ""  # MIS002: a MiSS rule (checks/miss.py)
            raise refusal(code, f"entry {prefix}/{name} holds {entry.size} bytes (limit {limit})", hint=hint)
    if verify_crc != "none":
        for name, entry in rel.items():
            if not _STORAGE_NAME.match(name):
                _check_crc(source, prefix, name, entry)
    if "byteorder" in rel:
        order = bytes(source.read(rel["byteorder"].data_offset, rel["byteorder"].size))
        if order != b"little":
            raise refusal("PTH013", f"byteorder entry says {order.decode('latin-1')!r}, not 'little'")
    _check_metadata(source, prefix, rel)
    if not any(v in rel for v in _VERSION_RECORDS):
        raise refusal("PTH020", f"archive has no {prefix}/version (nor {prefix}/.data/version): torch.load refuses it")
    pkl = rel["data.pkl"]
    parsed = parse_tensor_pickle(source.read(pkl.data_offset, pkl.size))

    tensors: dict[str, TensorInfo] = {}
    used: set[str] = set()
    for name, ref in parsed.items:
        storage = ref.storage
        stored = rel.get(f"data/{storage.key}")
        if stored is None:
            raise refusal(
                "PTH006",
                f"tensor {name!r} uses storage {storage.key!r} but the archive has no {prefix}/data/{storage.key}",
            )
        itemsize = DTYPE_ITEMSIZE[storage.dtype]
        if storage.numel * itemsize != stored.size:
            raise refusal(
                "PTH006",
                f"storage {storage.key!r} declares {storage.numel} x {storage.dtype} ({storage.numel * itemsize} "
                f"bytes) but {prefix}/data/{storage.key} holds {stored.size} bytes",
            )
        if len(ref.shape) > MAX_NDIM:
            raise refusal("PTH013", f"tensor {name!r} has {len(ref.shape)} dimensions (limit {MAX_NDIM})")
        if not _is_contiguous(ref.shape, ref.stride):
            raise refusal(
                "PTH013", f"tensor {name!r} of shape {list(ref.shape)} has non-contiguous stride {list(ref.stride)}"
            )
        numel = _numel(ref.shape)
        if ref.storage_offset + numel > storage.numel or ref.storage_offset > storage.numel:
            raise refusal(
                "PTH006",
                f"tensor {name!r} spans elements {ref.storage_offset}..{ref.storage_offset + numel} of storage "
                f"{storage.key!r}, which has {storage.numel}",
            )
        used.add(storage.key)
        tensors[name] = TensorInfo(
            name=name,
            dtype=storage.dtype,
            shape=ref.shape,
            stride=contiguous_stride(ref.shape),
            storage_key=storage.key,
            storage_offset=ref.storage_offset,
            data_offset=stored.data_offset + ref.storage_offset * itemsize,
            nbytes=numel * itemsize,
        )
    for name in rel:
        match = _STORAGE_NAME.match(name)
        if match and match.group(1) not in used:
            raise refusal("PTH008", f"entry {prefix}/{name} is a storage no tensor uses")
    if verify_crc == "all":
        for name, entry in rel.items():
            if _STORAGE_NAME.match(name):
                _check_crc(source, prefix, name, entry)
    miss = rel.get("miss.json")
    manifest = bytes(source.read(miss.data_offset, miss.size)) if miss is not None else None
    names = [e.name[len(prefix) + 1 :] for e in entries]
    return Checkpoint(
        kind="torch-zip",
        writer=_guess_writer(prefix, names),
        prefix=prefix,
        tensors=tensors,
        miss_manifest=manifest,
        source=source,
        _entries=[e.name for e in entries],
    )


# --- safetensors -------------------------------------------------------------------------------


class _Pairs(list):
    """A JSON object kept as its list of (key, value) pairs, so duplicates stay visible."""


class _TooManyObjects(Exception):
    """Raised from the JSON parser's object hook past :data:`MAX_SAFETENSORS_TENSORS` objects."""


def _reject_constant(name: str) -> object:
    raise ValueError(f"{name} is not JSON")


_MAX_COLONS = 4 * MAX_SAFETENSORS_TENSORS + 65_536  # a tensor's entry has 4 (its name, dtype, shape, offsets)


def _safetensors_header(source: ByteSource) -> tuple[int, _Pairs]:
    """The header's length and its JSON object as pairs.

    Bounds (docs/security.md, "Output and memory bombs"): the safetensors library (huggingface/safetensors
    ``safetensors/src/tensor.rs``, ``MAX_HEADER_SIZE = 100_000_000``, ``read_metadata``) reads headers of up to
    100 MB; parsed in Python such a header costs three times its size and more (its bytes, their text, the parsed
    values: 311 MB for 99 MB of spaces, 292 MB and 3 s for 200,000 empty tensors). What the registry holds in a
    safetensors file is a State: one ``blocks.N.att.time_state`` per layer (64 layers at most among the RWKV-7
    bases: a header under 10 KB), and add-base could read a base's (some 45 tensors a layer: a few hundred KB). So
    a header is refused (PTH012) past :data:`MAX_SAFETENSORS_HEADER` bytes (8 MiB, the bound of a MiSS manifest
    too), past :data:`MAX_SAFETENSORS_TENSORS` tensors (objects counted as the parser makes them), and, before it
    is parsed, when it has more ``:`` than that many tensors and 65,536 metadata keys need (each key has one):
    the peak stays under about five times the bound whatever the header holds."""
    if source.size < 8:
        raise refusal("PTH012", f"file of {source.size} bytes is too short for a safetensors header")
    (length,) = struct.unpack("<Q", bytes(source.read(0, 8)))
    if length > MAX_SAFETENSORS_HEADER:
        raise refusal(
            "PTH012",
            f"header length {length:,} exceeds the {MAX_SAFETENSORS_HEADER:,}-byte bound of a State's header",
        )
    if 8 + length > source.size:
        raise refusal("PTH012", f"header length {length} runs past the end of the file ({source.size} bytes)")
    raw = bytes(source.read(8, length))
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise refusal("PTH012", f"header is not UTF-8 ({exc.reason} at byte {exc.start})") from None
    del raw  # the text alone from here on
    colons = text.count(":")  # every key of the header has one (a string may hold more: it only counts more)
    if colons > _MAX_COLONS:  # 700,000 keys of plain values in 8 MiB would cost 160 MB parsed: refused unparsed
        raise refusal(
            "PTH012",
            f"header has {colons:,} ':' (keys), more than {MAX_SAFETENSORS_TENSORS:,} tensors and their metadata "
            f"hold ({_MAX_COLONS:,})",
        )
    made = 0

    def pairs(items: list[tuple[str, object]]) -> _Pairs:
        nonlocal made
        made += 1
        if made > MAX_SAFETENSORS_TENSORS + 2:  # the tensors, __metadata__ and the header itself
            raise _TooManyObjects
        return _Pairs(items)

    try:
        header = json.loads(text, object_pairs_hook=pairs, parse_constant=_reject_constant)
    except _TooManyObjects:
        raise refusal("PTH012", f"header holds more than {MAX_SAFETENSORS_TENSORS:,} objects (tensors)") from None
    except RecursionError:
        raise refusal("PTH012", "header JSON nests too deeply") from None
    except ValueError as exc:
        raise refusal("PTH012", f"header is not valid JSON: {clip(str(exc))}") from None
    if not isinstance(header, _Pairs):
        raise refusal("PTH012", f"header is a JSON {type(header).__name__}, not an object")
    if sum(1 for key, _ in header if key != "__metadata__") > MAX_SAFETENSORS_TENSORS:
        raise refusal("PTH012", f"header holds more than {MAX_SAFETENSORS_TENSORS:,} objects (tensors)")
    return length, header


def _is_uint_list(value: object) -> bool:
    return isinstance(value, list) and all(type(v) is int and v >= 0 for v in value)


def _shape_overflows(shape: list[int], itemsize: int) -> bool:
    """True where safetensors or torch cannot hold ``shape``: safetensors multiplies the dimensions left
    to right in unsigned 64 bits with an overflow check, then by the dtype's size in bits
    (huggingface/safetensors safetensors/src/tensor.rs ``Metadata::validate``: a dimension of 2**64
    already fails its JSON parse into ``usize``), and torch keeps every dimension in an int64. So
    ``[0, 2**64]`` holds no byte and is still refused by both; found by bench/fuzz_differential.py."""
    count = 1
    for dim in shape:
        count *= dim
        if dim >= 1 << 63 or count >= 1 << 64:
            return True
    return count * itemsize * 8 >= 1 << 64


def _open_safetensors(source: ByteSource) -> Checkpoint:
    length, header = _safetensors_header(source)
    data_start = 8 + length
    data_len = source.size - data_start
    seen: set[str] = set()
    found: list[tuple[int, int, int, TensorInfo]] = []
    for order, (name, info) in enumerate(header):
        if name in seen:
            raise refusal("PTH007", f"tensor name {clip(name)!r} appears twice in the safetensors header")
        seen.add(name)
        if name == "__metadata__":
            if not isinstance(info, _Pairs) or not all(isinstance(v, str) for _, v in info):
                raise refusal("PTH012", "__metadata__ must be an object of string values")
            continue
        if not isinstance(info, _Pairs) or sorted(k for k, _ in info) != ["data_offsets", "dtype", "shape"]:
            raise refusal("PTH012", f"entry {clip(name)!r} must be an object with dtype, shape and data_offsets")
        fields = dict(info)
        dtype, shape, offsets = fields["dtype"], fields["shape"], fields["data_offsets"]
        if not isinstance(dtype, str):
            raise refusal("PTH012", f"entry {clip(name)!r} has dtype {clip(repr(dtype))}, not a string")
        if dtype not in SAFETENSORS_DTYPES:
            raise refusal("PTH013", f"tensor {clip(name)!r} has unsupported dtype {clip(dtype)!r}")
        if not _is_uint_list(shape) or len(shape) > MAX_NDIM:
            raise refusal("PTH012", f"entry {clip(name)!r} has shape {shape!r:.80}, not a list of non-negative ints")
        if _shape_overflows(shape, DTYPE_ITEMSIZE[SAFETENSORS_DTYPES[dtype]]):
            raise refusal(
                "PTH012",
                f"tensor {clip(name)!r} has shape {shape!r:.80}, whose size overflows 64 bits (safetensors refuses it)",
            )
        if not _is_uint_list(offsets) or len(offsets) != 2:
            raise refusal("PTH012", f"entry {clip(name)!r} has data_offsets {offsets!r:.80}, not [begin, end]")
        begin, end = offsets
        torch_dtype = SAFETENSORS_DTYPES[dtype]
        shape_t = tuple(shape)
        nbytes = _numel(shape_t) * DTYPE_ITEMSIZE[torch_dtype]
        if begin > end or end > data_len:
            raise refusal(
                "PTH012",
                f"tensor {clip(name)!r} data_offsets [{begin}, {end}] fall outside the {data_len}-byte data area",
            )
        if end - begin != nbytes:
            raise refusal(
                "PTH012",
                f"tensor {clip(name)!r} of shape {shape} {dtype} needs {nbytes} bytes, data_offsets give {end - begin}",
            )
        info_t = TensorInfo(
            name=name,
            dtype=torch_dtype,
            shape=shape_t,
            stride=contiguous_stride(shape_t),
            storage_key=name,
            storage_offset=0,
            data_offset=data_start + begin,
            nbytes=nbytes,
        )
        found.append((begin, end, order, info_t))
    found.sort(key=lambda t: (t[0], t[1], t[2]))
    cursor = 0
    for begin, end, _, info_t in found:
        if begin < cursor:
            raise refusal("PTH012", f"tensor {clip(info_t.name)!r} overlaps the tensor before it (offset {begin})")
        if begin > cursor:
            raise refusal("PTH012", f"{begin - cursor} unused bytes before tensor {clip(info_t.name)!r}")
        cursor = end
    if cursor != data_len:
        raise refusal("PTH012", f"{data_len - cursor} bytes after the last tensor are not described")
    return Checkpoint(
        kind="safetensors",
        writer="safetensors",
        prefix="",
        tensors={t[3].name: t[3] for t in found},
        miss_manifest=None,
        source=source,
    )
