"""Write torch ``.pth`` zip archives without torch, in either of the two layouts the registry reads.

- ``layout="torch"``: what ``torch.save(OrderedDict(...), path)`` writes with torch 2.13, byte
  for byte except ``.data/serialization_id`` (random in torch, derived from the content here so
  that equal tensors give equal files): entries ``data.pkl``, ``.format_version``,
  ``.storage_alignment``, ``byteorder``, ``data/0..n-1``, ``version``,
  ``.data/serialization_id``; every entry's data 64-byte aligned through an ``FB`` padding extra
  field; local headers with a data descriptor; zip64 end records always, zip64 extra fields for
  entries past 4 GiB (as PyTorch's miniz does). The pickle is an OrderedDict with memo opcodes.
- ``layout="lightning"``: rwkv_lightning_cuda's ``src/io/pth_writer.cpp``: entries
  ``data/0..n-1``, ``data.pkl``, ``byteorder``, ``version`` then the extra entries
  (``miss.json``); no alignment, no data descriptor, no zip64; a plain-dict pickle without memo
  opcodes. Only bfloat16, float16 and float32 tensors with non-zero dimensions, like the trainer.

Both load with ``torch.load(weights_only=True)`` and :func:`rwkv_registry.formats.ckpt.open_checkpoint`.
"""

from __future__ import annotations

import hashlib
import os
import struct
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import BinaryIO

from rwkv_registry.core.errors import RegistryIOError, UsageError, os_error_hint
from rwkv_registry.formats.ckpt import contiguous_stride
from rwkv_registry.formats.unpickle import DTYPE_ITEMSIZE, STORAGE_DTYPES

__all__ = ["LAYOUTS", "RawTensor", "write_pth"]

LAYOUTS = ("torch", "lightning")

_STORAGE_CLASS = {dtype: cls for cls, dtype in STORAGE_DTYPES.items()}
_LIGHTNING_DTYPES = ("bfloat16", "float16", "float32")
_RESERVED = {
    "data.pkl",
    "byteorder",
    "version",
    ".format_version",
    ".storage_alignment",
    ".data",
    "data",
    ".data/serialization_id",
}
_ALIGNMENT = 64
_ZIP64_LIMIT = 0xFFFFFFFF  # miniz switches to zip64 fields at this value (patchable for tests)
_U32_SENTINEL = 0xFFFFFFFF  # "see the zip64 field" in a 32-bit header field
_BATCH = 1000  # pickle's SETITEMS batch size


@dataclass(frozen=True)
class RawTensor:
    """A tensor as contiguous little-endian bytes."""

    dtype: str  # torch dtype name: bfloat16 float16 float32 float64 int64 int32 int16 int8 uint8 bool
    shape: tuple[int, ...]
    data: bytes | memoryview


# --- pickles -------------------------------------------------------------------------------------


def _int(value: int) -> bytes:
    """An int as CPython's protocol-2 pickler writes it."""
    if 0 <= value <= 0xFF:
        return b"K" + bytes([value])
    if 0 <= value <= 0xFFFF:
        return b"M" + struct.pack("<H", value)
    if -(2**31) <= value < 2**31:
        return b"J" + struct.pack("<i", value)
    raw = value.to_bytes((value.bit_length() + 8) // 8, "little", signed=True)
    return b"\x8a" + bytes([len(raw)]) + raw


def _unicode(text: str) -> bytes:
    raw = text.encode("utf-8", "surrogatepass")
    return b"X" + struct.pack("<I", len(raw)) + raw


def _global(module: str, name: str) -> bytes:
    return b"c" + module.encode() + b"\n" + name.encode() + b"\n"


class _MemoPickler:
    """Emits the opcodes CPython's pickler writes for torch.save, memo indices included."""

    def __init__(self) -> None:
        self.out = bytearray(b"\x80\x02")
        self.memo: dict[tuple[str, str], int] = {}
        self.next = 0

    def put(self, key: tuple[str, str] | None = None) -> None:
        index = self.next
        self.next += 1
        if key is not None:
            self.memo[key] = index
        self.out += b"q" + bytes([index]) if index < 256 else b"r" + struct.pack("<I", index)

    def shared(self, key: tuple[str, str], opcodes: bytes) -> None:
        """An object the pickler memoizes by identity: written once, then BINGET."""
        index = self.memo.get(key)
        if index is None:
            self.out += opcodes
            self.put(key)
        else:
            self.out += b"h" + bytes([index]) if index < 256 else b"j" + struct.pack("<I", index)

    def tuple_(self, items: Iterable[int]) -> None:
        values = list(items)
        if not values:
            self.out += b")"
            return
        if len(values) <= 3:
            self.out += b"".join(_int(v) for v in values) + bytes([0x84 + len(values)])
        else:
            self.out += b"(" + b"".join(_int(v) for v in values) + b"t"
        self.put()

    def tensor(self, key: str, tensor: RawTensor) -> None:
        numel = _numel(tensor.shape)
        self.shared(("g", "rebuild"), _global("torch._utils", "_rebuild_tensor_v2"))
        self.out += b"(("
        self.shared(("s", "storage"), _unicode("storage"))
        self.shared(("g", tensor.dtype), _global("torch", _STORAGE_CLASS[tensor.dtype]))
        self.out += _unicode(key)
        self.put()
        self.shared(("s", "cpu"), _unicode("cpu"))
        self.out += _int(numel) + b"t"
        self.put()
        self.out += b"Q" + _int(0)
        self.tuple_(tensor.shape)
        self.tuple_(contiguous_stride(tensor.shape))
        self.out += b"\x89"
        self.shared(("g", "odict"), _global("collections", "OrderedDict"))
        self.out += b")R"
        self.put()
        self.out += b"t"
        self.put()
        self.out += b"R"
        self.put()


def _torch_pickle(tensors: Mapping[str, RawTensor]) -> bytes:
    p = _MemoPickler()
    p.shared(("g", "odict"), _global("collections", "OrderedDict"))
    p.out += b")R"
    p.put()
    items = list(tensors.items())
    for start in range(0, len(items), _BATCH):
        batch = items[start : start + _BATCH]
        if len(batch) > 1:
            p.out += b"("
        for i, (name, tensor) in enumerate(batch, start):
            p.out += _unicode(name)
            p.put()
            p.tensor(str(i), tensor)
        p.out += b"u" if len(batch) > 1 else b"s"
    p.out += b"."
    return bytes(p.out)


def _lightning_int(value: int) -> bytes:
    if 0 <= value <= 255:
        return b"K" + bytes([value])
    if 0 <= value <= 65535:
        return b"M" + struct.pack("<H", value)
    return b"J" + struct.pack("<I", value & 0xFFFFFFFF)


def _lightning_pickle(tensors: Mapping[str, RawTensor]) -> bytes:
    out = bytearray(b"\x80\x02}(")
    for i, (name, tensor) in enumerate(tensors.items()):
        out += _unicode(name) + _global("torch._utils", "_rebuild_tensor_v2") + b"(("
        out += _unicode("storage") + _global("torch", _STORAGE_CLASS[tensor.dtype])
        out += _unicode(str(i)) + _unicode("cpu") + _lightning_int(_numel(tensor.shape)) + b"t"
        out += b"Q" + _lightning_int(0)
        out += b"(" + b"".join(_lightning_int(d) for d in tensor.shape) + b"t"
        out += b"(" + b"".join(_lightning_int(s) for s in contiguous_stride(tensor.shape)) + b"t"
        out += b"\x89}tR"
    out += b"u."
    return bytes(out)


# --- zip writers ---------------------------------------------------------------------------------


class _Out:
    """Sequential writer that knows its position."""

    def __init__(self, f: BinaryIO) -> None:
        self.f = f
        self.pos = 0

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.f.write(data)
        self.pos += len(data)


def _zip64_extra(size: int | None, offset: int | None, *, local: bool) -> bytes:
    """miniz's zip64 extra field; in a local header the compressed size is still 0."""
    body = b""
    if size is not None:
        body += struct.pack("<QQ", size, 0 if local else size)
    if offset is not None:
        body += struct.pack("<Q", offset)
    return struct.pack("<HH", 1, len(body)) + body if body else b""


def _write_torch_zip(out: _Out, entries: list[tuple[str, bytes | memoryview]]) -> None:
    central = bytearray()
    for name, data in entries:
        raw = name.encode("utf-8")
        size, offset = len(data), out.pos
        big_size = size >= _ZIP64_LIMIT
        big_offset = offset >= _ZIP64_LIMIT
        z64 = _zip64_extra(size if big_size else None, offset if big_offset else None, local=False)
        z64_local = _zip64_extra(size if big_size else None, offset if big_offset else None, local=True)
        start = offset + 30 + len(raw) + len(z64) + 4
        padding = (-start) % _ALIGNMENT
        extra = z64_local + b"FB" + struct.pack("<H", padding) + b"Z" * padding
        crc = zlib.crc32(data)
        flags = 0x0808 if size else 0x0800  # miniz: data descriptor only after non-empty data
        out.write(struct.pack("<4sHHHHHIIIHH", b"PK\x03\x04", 0, flags, 0, 0, 0, 0, 0, 0, len(raw), len(extra)))
        out.write(raw + extra)
        out.write(data)
        if size:
            out.write(struct.pack("<4sIQQ" if z64 else "<4sIII", b"PK\x07\x08", crc, size, size))
        small = _U32_SENTINEL if big_size else size
        central += struct.pack("<4sHHHHHHIIIHHHHHII", b"PK\x01\x02", 0, 0, flags, 0, 0, 0, crc, small, small,
                               len(raw), len(z64), 0, 0, 0, 0, _U32_SENTINEL if big_offset else offset)  # fmt: skip
        central += raw + z64
    cd_offset = out.pos
    out.write(central)
    n = len(entries)
    record_pos = out.pos
    out.write(struct.pack("<4sQHHIIQQQQ", b"PK\x06\x06", 44, 0x031E, 0x2D, 0, 0, n, n, len(central), cd_offset))
    out.write(struct.pack("<4sIQI", b"PK\x06\x07", 0, record_pos, 1))
    cd_size = _U32_SENTINEL if len(central) >= _ZIP64_LIMIT else len(central)
    cd_at = _U32_SENTINEL if cd_offset >= _ZIP64_LIMIT else cd_offset
    out.write(struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, min(n, 0xFFFF), min(n, 0xFFFF), cd_size, cd_at, 0))


def _write_lightning_zip(out: _Out, entries: list[tuple[str, bytes | memoryview]]) -> None:
    if len(entries) > 0xFFFF:
        raise UsageError(
            f"{len(entries)} entries exceed the lightning layout's limit of 65535",
            hint='Write it with layout="torch" (zip64), or split the tensors over several files.',
        )
    central = bytearray()
    for name, data in entries:
        raw = name.encode("utf-8")
        size, offset = len(data), out.pos
        if size > 0xFFFFFFFF or offset > 0xFFFFFFFF:
            raise UsageError(
                "the lightning layout has no zip64: the file would pass 4 GiB",
                hint='Write it with layout="torch" (zip64), or split the tensors over several files.',
            )
        crc = zlib.crc32(data)
        out.write(struct.pack("<4sHHHHHIIIHH", b"PK\x03\x04", 20, 0, 0, 0, 0, crc, size, size, len(raw), 0))
        out.write(raw)
        out.write(data)
        central += struct.pack(
            "<4sHHHHHHIIIHHHHHII", b"PK\x01\x02", 20, 20, 0, 0, 0, 0, crc, size, size, len(raw), 0, 0, 0, 0, 0, offset
        )
        central += raw
    cd_offset = out.pos
    if cd_offset + len(central) > 0xFFFFFFFF:
        raise UsageError(
            "the lightning layout has no zip64: the file would pass 4 GiB",
            hint='Write it with layout="torch" (zip64), or split the tensors over several files.',
        )
    out.write(central)
    n = len(entries)
    out.write(struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, n, n, len(central), cd_offset, 0))


# --- public --------------------------------------------------------------------------------------


def _numel(shape: tuple[int, ...]) -> int:
    n = 1
    for dim in shape:
        n *= dim
    return n


def _check_tensors(tensors: Mapping[str, RawTensor], layout: str) -> dict[str, RawTensor]:
    checked: dict[str, RawTensor] = {}
    for name, tensor in tensors.items():
        if not isinstance(name, str):
            raise UsageError(
                f"tensor name {name!r} is not a string",
                hint='Key the tensors by their state-dict names, e.g. "blocks.0.att.time_state".',
            )
        if tensor.dtype not in DTYPE_ITEMSIZE:
            raise UsageError(
                f"tensor {name!r}: unsupported dtype {tensor.dtype!r}",
                hint=f"Convert it to one of {', '.join(sorted(DTYPE_ITEMSIZE))} first.",
            )
        shape = tuple(tensor.shape)
        if not all(type(d) is int and d >= 0 for d in shape):
            raise UsageError(
                f"tensor {name!r}: shape {shape!r} is not a tuple of non-negative ints",
                hint="Pass shape as a tuple of Python ints, e.g. tuple(t.shape).",
            )
        expected = _numel(shape) * DTYPE_ITEMSIZE[tensor.dtype]
        data = memoryview(tensor.data).cast("B")
        if data.nbytes != expected:
            raise UsageError(
                f"tensor {name!r}: {data.nbytes} bytes given, shape {list(shape)} of {tensor.dtype} needs {expected}",
                hint="Pass the tensor's own contiguous bytes (t.contiguous() first) with its shape and dtype.",
            )
        if layout == "lightning":
            if tensor.dtype not in _LIGHTNING_DTYPES:
                raise UsageError(
                    f"tensor {name!r}: the lightning layout holds only {', '.join(_LIGHTNING_DTYPES)}",
                    hint='Convert the tensor to one of those, or write it with layout="torch".',
                )
            if 0 in shape or _numel(shape) > 2**31 - 1:
                raise UsageError(
                    f"tensor {name!r}: the lightning layout needs 1 <= numel < 2**31 and no zero dims",
                    hint='Write it with layout="torch", or leave the empty (or huge) tensor out.',
                )
        checked[name] = RawTensor(tensor.dtype, shape, data)
    return checked


def _check_extras(extra_entries: Mapping[str, bytes] | None) -> list[tuple[str, bytes]]:
    out: list[tuple[str, bytes]] = []
    for name, data in (extra_entries or {}).items():
        if name in _RESERVED or "/" in name or "\\" in name or name.startswith(".") or not name:
            raise UsageError(
                f"extra entry name {name!r} is reserved or not a plain file name",
                hint=f"Name it like miss.json: no '/', no leading '.', none of {', '.join(sorted(_RESERVED))}.",
            )
        out.append((name, bytes(data)))
    return out


def _default_prefix(dest: object, layout: str) -> str:
    if layout == "lightning" or not isinstance(dest, str | os.PathLike):
        return "archive"
    base = os.path.basename(os.fspath(dest))
    dot = base.rfind(".")
    stem = base[:dot] if dot > 0 else base
    return stem or "archive"


def _serialization_id(pickle: bytes, tensors: Mapping[str, RawTensor]) -> bytes:
    h = hashlib.sha256(pickle)
    for tensor in tensors.values():
        h.update(struct.pack("<I", zlib.crc32(tensor.data)))
    return str(int.from_bytes(h.digest()[:16], "big")).zfill(40).encode()


def write_pth(
    dest: str | os.PathLike | BinaryIO,
    tensors: Mapping[str, RawTensor],
    *,
    layout: str = "torch",
    prefix: str | None = None,
    extra_entries: Mapping[str, bytes] | None = None,
) -> None:
    """Write ``tensors`` as a torch zip checkpoint to a path or a binary file object.

    ``layout`` is ``"torch"`` (like ``torch.save(OrderedDict)`` to a path: prefix = file stem)
    or ``"lightning"`` (rwkv_lightning_cuda's writer: prefix ``archive``). ``prefix`` overrides
    the folder name; ``extra_entries`` adds plain entries such as ``{"miss.json": b"..."}``
    as ``<prefix>/miss.json``. A path is opened, written, flushed and fsynced (callers wanting
    atomic replacement write to a temporary name and rename). Raises :class:`UsageError` for bad
    tensors or names and :class:`RegistryIOError` when the file cannot be written.
    """
    if layout not in LAYOUTS:
        raise UsageError(
            f"layout must be one of {', '.join(LAYOUTS)}, not {layout!r}",
            hint='Pass layout="torch" (as torch.save writes) or layout="lightning" (as rwkv_lightning_cuda writes).',
        )
    checked = _check_tensors(tensors, layout)
    extras = _check_extras(extra_entries)
    folder = _default_prefix(dest, layout) if prefix is None else prefix
    if not folder or folder in (".", "..") or any(c in folder for c in "/\\:") or any(ord(c) < 0x20 for c in folder):
        raise UsageError(
            f"prefix {folder!r} is not a plain folder name",
            hint="Pass a folder name without / \\ : or control characters, or none (the file's stem).",
        )
    storages = [(f"{folder}/data/{i}", t.data) for i, t in enumerate(checked.values())]
    if layout == "torch":
        pickle = _torch_pickle(checked)
        entries = [
            (f"{folder}/data.pkl", pickle),
            (f"{folder}/.format_version", b"1"),
            (f"{folder}/.storage_alignment", b"64"),
            (f"{folder}/byteorder", b"little"),
            *storages,
            (f"{folder}/version", b"3\n"),
            (f"{folder}/.data/serialization_id", _serialization_id(pickle, checked)),
        ]
        writer = _write_torch_zip
    else:
        entries = [*storages, (f"{folder}/data.pkl", _lightning_pickle(checked))]
        entries += [(f"{folder}/byteorder", b"little"), (f"{folder}/version", b"3\n")]
        writer = _write_lightning_zip
    entries += [(f"{folder}/{name}", data) for name, data in extras]
    if isinstance(dest, str | os.PathLike):
        try:
            with open(dest, "wb") as f:
                writer(_Out(f), entries)
                f.flush()
                os.fsync(f.fileno())
        except OSError as exc:
            raise RegistryIOError(
                f"cannot write {os.fspath(dest)}: {exc.strerror or exc}",
                hint=os_error_hint(exc, os.fspath(dest)),
                path=os.fspath(dest),
            ) from exc
    else:
        writer(_Out(dest), entries)
