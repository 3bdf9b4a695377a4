"""Seeded generators of weight files for the differential check (tests/support/diffcheck.py).

Every sample is built from ``(class, seed)`` alone, so a disagreement found by the campaign
(bench/fuzz_differential.py) or the test sample (tests/differential/) is replayed by its pair::

    from diffgen import generate
    sample = generate("eocd-in-comment", 7000000123)   # sample.data: the file's bytes

A sample starts from a valid file, written the way a real producer writes it:

- ``torch``: ``torch.save`` of a random State-shaped (``blocks.N.att.time_state`` [H, N, N]) or
  MiSS-shaped (``blocks.L.<target>.D`` [out, rank]) dict, bf16 / fp32 / fp16, to a buffer
  (prefix ``archive``) or to a named file (prefix = the file's stem); also an ``OrderedDict``
  with ``_metadata`` (what ``module.state_dict()`` pickles) and tensors that share a storage;
- ``lightning``: rwkv_lightning_cuda's own writer, transcribed from Alic-Li/rwkv_lightning_cuda
  ``src/io/pth_writer.cpp`` (``write_pth``: pickle protocol 2, plain dict, no memo; ``write_zip``:
  version 20, no flags, zero times, entries ``archive/data/0..n-1``, ``data.pkl``, ``byteorder``,
  ``version``, then ``miss.json``; no zip64). tests/differential checks that this transcription
  writes the same bytes as the project's other one (tests/lightning_writer.py).

then changes it at the level of the zip structure (:class:`Archive` is a parsed archive that
serializes back to the identical bytes; a mutation edits fields and lets the rest follow), or
at the level of ``data.pkl``, or at random header offsets. :data:`CLASSES` lists the mutation
classes; :data:`SAFETENSORS_CLASSES` those of ``.safetensors`` files.

This module imports nothing from tests/ (the test suite imports it by path, and so does the
bench script): tests/malicious's corpus is added by the callers.
"""

from __future__ import annotations

import io
import json
import random
import struct
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

__all__ = [
    "CLASSES",
    "SAFETENSORS_CLASSES",
    "Archive",
    "Member",
    "Sample",
    "base_archive",
    "generate",
    "generate_safetensors",
    "lightning_archive",
    "lightning_pickle",
    "parse_archive",
    "tensor_pickle",
]

LOCAL = struct.Struct("<4sHHHHHIIIHH")  # local file header, 30 bytes
CENTRAL = struct.Struct("<4sHHHHHHIIIHHHHHII")  # central directory header, 46 bytes
EOCD = struct.Struct("<4sHHHHIIH")  # end of central directory record, 22 bytes
EOCD64 = struct.Struct("<4sQHHIIQQQQ")  # zip64 end of central directory record, 56 bytes
LOCATOR = struct.Struct("<4sIQI")  # zip64 end of central directory locator, 20 bytes
DESCRIPTOR = struct.Struct("<4sIII")  # data descriptor with its signature, 32-bit sizes
SIG_LOCAL, SIG_CENTRAL, SIG_EOCD = b"PK\x03\x04", b"PK\x01\x02", b"PK\x05\x06"
SIG_EOCD64, SIG_LOCATOR, SIG_DESCRIPTOR = b"PK\x06\x06", b"PK\x06\x07", b"PK\x07\x08"
FLAG_DESCRIPTOR = 0x0008
U16, U32 = 0xFFFF, 0xFFFFFFFF
INTERESTING = [0, 1, 2, 7, 8, 0x7F, 0x80, 0xFF, 0x100, 0x7FFF, 0x8000, 0xFFFF, 0x10000, 0x7FFFFFFF, 0x80000000, U32]

# storage class -> (dtype name, itemsize): what torch.save writes for each dtype
STORAGES: dict[str, tuple[str, int]] = {
    "BFloat16Storage": ("bfloat16", 2),
    "HalfStorage": ("float16", 2),
    "FloatStorage": ("float32", 4),
    "DoubleStorage": ("float64", 8),
    "LongStorage": ("int64", 8),
    "IntStorage": ("int32", 4),
    "ShortStorage": ("int16", 2),
    "CharStorage": ("int8", 1),
    "ByteStorage": ("uint8", 1),
    "BoolStorage": ("bool", 1),
}
STORAGE_OF = {dtype: cls for cls, (dtype, _) in STORAGES.items()}
MISS_TARGETS = [
    "att.receptance.weight",
    "att.key.weight",
    "att.value.weight",
    "att.output.weight",
    "ffn.key.weight",
    "ffn.value.weight",
]


# --- the zip model --------------------------------------------------------------------------------


@dataclass
class Member:
    """One zip entry, as its local header, data, descriptor and central header will be written.

    Fields left ``None`` are derived when the archive is serialized (offsets, sizes, CRC-32,
    torch's alignment padding, the data descriptor); set one to make the header lie.
    """

    name: str
    data: bytes
    version: int = 20  # local "version needed"
    flags: int = 0
    method: int = 0
    time: int = 0
    date: int = 0
    extra: bytes | None = b""  # local extra field; None: torch's "FB" padding to the archive's alignment
    descriptor: bytes | None = None  # after the data; None: a signed 16-byte one when flags has 0x08
    made_by: int = 20
    c_version: int = 20
    c_flags: int | None = None  # None: the local flags
    c_method: int | None = None
    c_extra: bytes = b""
    comment: bytes = b""
    disk: int = 0
    iattr: int = 0
    eattr: int = 0
    gap_before: bytes = b""  # bytes no entry owns, written before the local header
    raw_name: bytes | None = None  # the name's bytes (default: UTF-8 of name), in both headers
    l_name: bytes | None = None  # the local header's name if it differs from the central one
    l_crc: int | None = None
    l_csize: int | None = None
    l_usize: int | None = None
    c_crc: int | None = None
    c_csize: int | None = None
    c_usize: int | None = None
    c_offset: int | None = None

    def name_bytes(self) -> bytes:
        return self.raw_name if self.raw_name is not None else self.name.encode("utf-8")


@dataclass
class Archive:
    """A zip archive as a list of members in file order, plus its end records."""

    members: list[Member]
    central_order: list[int] | None = None  # member indices in central-directory order (None: file order)
    central_extra: list[Member] = field(default_factory=list)  # central headers with no local entry
    zip64: bool = False  # torch writes a zip64 end record and locator before the end record
    z64_made: int = 0x031E
    z64_needed: int = 45
    align: int = 64  # torch's storage alignment (for members whose extra is None)
    comment: bytes = b""
    comment_len: int | None = None  # None: len(comment)
    head: bytes = b""  # bytes before the first entry
    before_end: bytes = b""  # bytes between the central directory and the end records
    tail: bytes = b""  # bytes after the end record (not counted as its comment)
    n_entries: int | None = None
    n_disk: int | None = None
    cd_size: int | None = None
    cd_offset: int | None = None
    z64_n_entries: int | None = None
    z64_cd_size: int | None = None
    z64_cd_offset: int | None = None
    z64_record_offset: int | None = None

    def names(self) -> list[str]:
        return [m.name for m in self.members]

    def find(self, rel: str) -> int | None:
        """Index of the member ``<prefix>/<rel>``, or None."""
        for k, m in enumerate(self.members):
            if m.name.split("/", 1)[-1] == rel:
                return k
        return None

    def prefix(self) -> str:
        return self.members[0].name.split("/", 1)[0] if self.members else "archive"

    def copy(self) -> Archive:
        return replace(
            self,
            members=[replace(m) for m in self.members],
            central_order=None if self.central_order is None else list(self.central_order),
            central_extra=[replace(m) for m in self.central_extra],
        )

    def to_bytes(self, layout: list[tuple[str, int, struct.Struct]] | None = None) -> bytes:
        """Serialize; ``layout`` (if given) receives (what, offset, struct) of every header written."""
        out = bytearray(self.head)
        offsets: list[int] = []
        for k, m in enumerate(self.members):
            out += m.gap_before
            at = len(out)
            offsets.append(at)
            name = m.name_bytes()
            lname = m.l_name if m.l_name is not None else name
            extra = m.extra if m.extra is not None else torch_padding(at, len(lname), self.align)
            crc = zlib.crc32(m.data)
            deferred = m.flags & FLAG_DESCRIPTOR
            lcrc = m.l_crc if m.l_crc is not None else (0 if deferred else crc)
            lcs = m.l_csize if m.l_csize is not None else (0 if deferred else len(m.data))
            lus = m.l_usize if m.l_usize is not None else (0 if deferred else len(m.data))
            if layout is not None:
                layout.append((f"local {k}", at, LOCAL))
            out += LOCAL.pack(SIG_LOCAL, m.version, m.flags, m.method, m.time, m.date, lcrc, lcs, lus,
                              len(lname), len(extra))  # fmt: skip
            out += lname + extra + m.data
            if m.descriptor is not None:
                out += m.descriptor
            elif deferred:
                if layout is not None:
                    layout.append((f"descriptor {k}", len(out), DESCRIPTOR))
                out += DESCRIPTOR.pack(SIG_DESCRIPTOR, crc, len(m.data), len(m.data))
        cd_start = len(out)
        order = self.central_order if self.central_order is not None else list(range(len(self.members)))
        heads = [(self.members[i], offsets[i]) for i in order] + [(m, 0) for m in self.central_extra]
        for k, (m, at) in enumerate(heads):
            name = m.name_bytes()
            if layout is not None:
                layout.append((f"central {k}", len(out), CENTRAL))
            out += CENTRAL.pack(
                SIG_CENTRAL, m.made_by, m.c_version, m.flags if m.c_flags is None else m.c_flags,
                m.method if m.c_method is None else m.c_method, m.time, m.date,
                zlib.crc32(m.data) if m.c_crc is None else m.c_crc,
                len(m.data) if m.c_csize is None else m.c_csize, len(m.data) if m.c_usize is None else m.c_usize,
                len(name), len(m.c_extra), len(m.comment), m.disk, m.iattr, m.eattr,
                at if m.c_offset is None else m.c_offset,
            )  # fmt: skip
            out += name + m.c_extra + m.comment
        cd_size = len(out) - cd_start
        out += self.before_end
        n = len(heads)
        if self.zip64:
            z64_at = len(out)
            if layout is not None:
                layout.append(("zip64 end record", z64_at, EOCD64))
            out += EOCD64.pack(
                SIG_EOCD64, 44, self.z64_made, self.z64_needed, 0, 0,
                n if self.z64_n_entries is None else self.z64_n_entries,
                n if self.z64_n_entries is None else self.z64_n_entries,
                cd_size if self.z64_cd_size is None else self.z64_cd_size,
                cd_start if self.z64_cd_offset is None else self.z64_cd_offset,
            )  # fmt: skip
            if layout is not None:
                layout.append(("zip64 locator", len(out), LOCATOR))
            out += LOCATOR.pack(SIG_LOCATOR, 0, z64_at if self.z64_record_offset is None else self.z64_record_offset, 1)
        if layout is not None:
            layout.append(("end record", len(out), EOCD))
        out += EOCD.pack(
            SIG_EOCD, 0, 0, n if self.n_disk is None else self.n_disk, n if self.n_entries is None else self.n_entries,
            cd_size if self.cd_size is None else self.cd_size, cd_start if self.cd_offset is None else self.cd_offset,
            len(self.comment) if self.comment_len is None else self.comment_len,
        )  # fmt: skip
        out += self.comment + self.tail
        return bytes(out)


def torch_padding(offset: int, name_len: int, align: int) -> bytes:
    """The local extra field torch's writer adds so that an entry's data starts at a multiple of
    ``align``: tag ``FB``, its length, then ``Z`` bytes (pytorch caffe2/serialize/inline_container.cc,
    ``getPadding``; every entry gets one, 4 bytes when no padding is needed)."""
    start = offset + LOCAL.size + name_len + 4
    pad = -start % align
    return b"FB" + struct.pack("<H", pad) + b"Z" * pad


def parse_archive(data: bytes) -> Archive:
    """Parse an archive written by torch.save or rwkv_lightning_cuda (or one of the project's test
    writers) into an :class:`Archive` whose :meth:`~Archive.to_bytes` gives back ``data``.
    Not a reader of hostile files: it assumes the archive is well formed and raises otherwise."""
    eocd_at = len(data) - EOCD.size
    _, _, _, _, n, _cd_size, cd_offset, clen = EOCD.unpack_from(data, eocd_at)
    if clen:
        raise ValueError("parse_archive: archives with a comment are not a starting point")
    zip64 = data[eocd_at - LOCATOR.size : eocd_at - LOCATOR.size + 4] == SIG_LOCATOR
    arch = Archive(members=[], zip64=zip64)
    if zip64:
        rec = EOCD64.unpack_from(data, eocd_at - LOCATOR.size - EOCD64.size)
        arch.z64_made, arch.z64_needed = rec[2], rec[3]
    pos = cd_offset
    heads: list[tuple[int, Member]] = []
    for _ in range(n):
        (_, made, cver, cflags, cmethod, t, d, crc, csize, usize, nlen, elen, comlen, disk, iattr, eattr, off) = (
            CENTRAL.unpack_from(data, pos)
        )
        raw = data[pos + 46 : pos + 46 + nlen]
        m = Member(
            name=raw.decode("utf-8"),
            data=b"",
            made_by=made,
            c_version=cver,
            c_flags=cflags,
            c_method=cmethod,
            time=t,
            date=d,
            c_extra=data[pos + 46 + nlen : pos + 46 + nlen + elen],
            comment=data[pos + 46 + nlen + elen : pos + 46 + nlen + elen + comlen],
            disk=disk,
            iattr=iattr,
            eattr=eattr,
        )
        m.c_crc, m.c_csize, m.c_usize = crc, csize, usize
        heads.append((off, m))
        pos += 46 + nlen + elen + comlen
    by_offset = sorted(range(n), key=lambda k: heads[k][0])
    arch.central_order = [by_offset.index(k) for k in range(n)]
    if arch.central_order == list(range(n)):
        arch.central_order = None
    end_of_last = 0
    for k in by_offset:
        off, m = heads[k]
        m.gap_before = data[end_of_last:off]
        _, ver, flags, method, _t, _d, lcrc, lcs, lus, nlen, elen = LOCAL.unpack_from(data, off)
        m.version, m.flags, m.method = ver, flags, method
        extra = data[off + 30 + nlen : off + 30 + nlen + elen]
        m.extra = None if extra == torch_padding(off, nlen, arch.align) else extra
        start = off + 30 + nlen + elen
        m.data = data[start : start + (m.c_csize or 0)]
        end = start + len(m.data)
        if flags & FLAG_DESCRIPTOR:
            auto = DESCRIPTOR.pack(SIG_DESCRIPTOR, zlib.crc32(m.data), len(m.data), len(m.data))
            if data[end : end + 16] == auto:
                end += 16
            else:
                size = 16 if data[end : end + 4] == SIG_DESCRIPTOR else 12
                m.descriptor = data[end : end + size]
                end += size
        end_of_last = end
        # the derived values, dropped where they equal what to_bytes computes
        deferred = flags & FLAG_DESCRIPTOR
        if lcrc != (0 if deferred else zlib.crc32(m.data)):
            m.l_crc = lcrc
        if lcs != (0 if deferred else len(m.data)):
            m.l_csize = lcs
        if lus != (0 if deferred else len(m.data)):
            m.l_usize = lus
        if m.c_crc == zlib.crc32(m.data):
            m.c_crc = None
        if m.c_csize == len(m.data):
            m.c_csize = None
        if m.c_usize == len(m.data):
            m.c_usize = None
        if m.c_flags == flags:
            m.c_flags = None
        if m.c_method == method:
            m.c_method = None
    arch.members = [heads[k][1] for k in by_offset]
    arch.head = arch.members[0].gap_before if arch.members else b""
    if arch.members:
        arch.members[0].gap_before = b""
    if arch.to_bytes() != data:
        raise ValueError("parse_archive: the archive does not serialize back to the same bytes")
    return arch


# --- pickles ----------------------------------------------------------------------------------------


def _pint(v: int) -> bytes:
    """An int as the C++ writer picks it (pth_writer.cpp ``pickle_int``): BININT1, BININT2, BININT;
    LONG1 beyond 32 bits (torch's own pickler)."""
    if 0 <= v < 0x100:
        return b"K" + bytes([v])
    if 0 <= v < 0x10000:
        return b"M" + struct.pack("<H", v)
    if -(2**31) <= v < 2**31:
        return b"J" + struct.pack("<i", v)
    raw = v.to_bytes((v.bit_length() + 8) // 8, "little", signed=True)
    return b"\x8a" + bytes([len(raw)]) + raw


def _pstr(s: str) -> bytes:
    raw = s.encode("utf-8", "surrogatepass")
    return b"X" + struct.pack("<I", len(raw)) + raw


def _pglobal(module: str, name: str) -> bytes:
    return b"c" + module.encode() + b"\n" + name.encode() + b"\n"


@dataclass(frozen=True)
class TensorSpec:
    """One tensor of a pickle: what ``_rebuild_tensor_v2`` gets."""

    name: str
    storage: str  # storage class, e.g. "BFloat16Storage"
    key: str
    numel: int  # the storage's element count
    shape: tuple[int, ...]
    offset: int = 0
    stride: tuple[int, ...] | None = None  # None: contiguous
    location: str = "cpu"
    requires_grad: bool = False


def contiguous(shape: tuple[int, ...]) -> tuple[int, ...]:
    out: list[int] = []
    step = 1
    for d in reversed(shape):
        out.insert(0, step)
        step *= d
    return tuple(out)


def tensor_pickle(specs: list[TensorSpec]) -> bytes:
    """``data.pkl`` of a plain dict of tensors with the opcodes of rwkv_lightning_cuda's writer
    (pth_writer.cpp ``write_pth``: PROTO 2, EMPTY_DICT, MARK, per tensor BINUNICODE name, GLOBAL
    _rebuild_tensor_v2, the persistent id tuple, BINPERSID, offset, shape and stride tuples,
    NEWFALSE, EMPTY_DICT, TUPLE, REDUCE; SETITEMS, STOP), for any storage class, key and location."""
    parts = [b"\x80\x02}("]
    for t in specs:
        stride = t.stride if t.stride is not None else contiguous(t.shape)
        parts += [
            _pstr(t.name),
            _pglobal("torch._utils", "_rebuild_tensor_v2"),
            b"((",
            _pstr("storage"),
            _pglobal("torch", t.storage),
            _pstr(t.key),
            _pstr(t.location),
            _pint(t.numel),
            b"tQ",
            _pint(t.offset),
            b"(" + b"".join(map(_pint, t.shape)) + b"t",
            b"(" + b"".join(map(_pint, stride)) + b"t",
            b"\x88" if t.requires_grad else b"\x89",
            b"}tR",
        ]
    parts.append(b"u.")
    return b"".join(parts)


def lightning_pickle(tensors: list[tuple[str, str, tuple[int, ...]]]) -> bytes:
    """data.pkl exactly as ``write_pth`` writes it for (name, dtype, shape) items, storage i for item i."""
    specs = []
    for i, (name, dtype, shape) in enumerate(tensors):
        numel = 1
        for d in shape:
            numel *= d
        specs.append(TensorSpec(name, STORAGE_OF[dtype], str(i), numel, shape))
    return tensor_pickle(specs)


def lightning_members(tensors: list[tuple[str, str, tuple[int, ...], bytes]], miss_json: bytes | None) -> list[Member]:
    """``write_pth``'s entries: storages, data.pkl, byteorder, version, then miss.json if given."""
    members = [Member(f"archive/data/{i}", raw) for i, (_, _, _, raw) in enumerate(tensors)]
    members.append(Member("archive/data.pkl", lightning_pickle([t[:3] for t in tensors])))
    members.append(Member("archive/byteorder", b"little"))
    members.append(Member("archive/version", b"3\n"))
    if miss_json is not None:
        members.append(Member("archive/miss.json", miss_json))
    return members


def lightning_archive(tensors: list[tuple[str, str, tuple[int, ...], bytes]], miss_json: bytes | None = None) -> bytes:
    """A file as rwkv_lightning_cuda writes it (``write_zip``: local and central version 20, no
    flags, no extras, zero times, a plain end record, no zip64)."""
    return Archive(lightning_members(tensors, miss_json)).to_bytes()


# --- base files ---------------------------------------------------------------------------------------


@dataclass
class Base:
    """A valid starting file, and what it was made of."""

    kind: str  # one of BASE_KINDS
    data: bytes
    tensors: list[tuple[str, str, tuple[int, ...], bytes]]  # (name, dtype, shape, raw bytes) as written
    miss_json: bytes | None = None


def _random_tensors(rng: random.Random, miss: bool, dtypes: list[str]) -> list[tuple[str, str, tuple[int, ...], bytes]]:
    itemsize = {"bfloat16": 2, "float16": 2, "float32": 4}
    dtype = rng.choice(dtypes)
    out: list[tuple[str, str, tuple[int, ...], bytes]] = []
    shape: tuple[int, ...]
    if miss:
        rank = rng.choice([1, 2, 4])
        for layer in range(rng.randint(1, 2)):
            for target in rng.sample(MISS_TARGETS, rng.randint(1, 3)):
                shape = (rng.choice([2, 4, 8]), rank)
                out.append(
                    (f"blocks.{layer}.{target}.D", dtype, shape, rng.randbytes(shape[0] * rank * itemsize[dtype]))
                )
    else:
        heads, n = rng.choice([1, 2]), rng.choice([1, 2, 4])
        for layer in range(rng.randint(1, 4)):
            shape = (heads, n, n)
            out.append((f"blocks.{layer}.att.time_state", dtype, shape, rng.randbytes(heads * n * n * itemsize[dtype])))
    return out


def _miss_json(tensors: list[tuple[str, str, tuple[int, ...], bytes]]) -> bytes:
    targets = []
    for name, _, shape, _ in tensors:
        layer, target = name.split(".", 2)[1], name.split(".", 2)[2][: -len(".D")]
        targets.append({"name": name, "layer": int(layer), "target": target, "in_features": 8, "shape": list(shape)})
    dtype = tensors[0][1] if tensors else "bfloat16"
    manifest = {"format_version": 1, "method": "miss", "dtype": dtype, "layout": "modulo_rank_zero_pad",
                "kind": "inference_adapter", "rank": tensors[0][2][1] if tensors else 1, "alpha": 32.0,
                "scale": 1.0, "base_fingerprint": "0" * 64, "content_version": "1" * 64,
                "targets": targets}  # fmt: skip
    return json.dumps(manifest, separators=(",", ":"), sort_keys=True).encode()


def _torch_tensor(dtype: str, shape: tuple[int, ...], raw: bytes) -> Any:
    import torch

    t = torch.frombuffer(bytearray(raw), dtype=torch.uint8) if raw else torch.empty(0, dtype=torch.uint8)
    return t.view(getattr(torch, dtype)).reshape(shape)


def _torch_save(obj: Any, stem: str | None = None) -> bytes:
    """``torch.save`` to a buffer (prefix ``archive``) or, with ``stem``, as if to ``<stem>.pth``:
    torch names the prefix folder after the file's stem (serialization.py ``_open_zipfile_writer``)."""
    import tempfile

    import torch

    if stem is None:
        buf = io.BytesIO()
        torch.save(obj, buf)
        return buf.getvalue()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"{stem}.pth"
        torch.save(obj, path)
        return path.read_bytes()


BASE_KINDS = ["torch-state", "torch-miss", "torch-state-dict", "torch-views", "torch-named", "torch-odd",
              "lightning-state", "lightning-miss"]  # fmt: skip


def base_archive(rng: random.Random, kind: str | None = None) -> Base:
    """A valid file of ``kind`` (random when None) with random State- or MiSS-shaped tensors."""
    kind = kind or rng.choice(BASE_KINDS)
    miss = kind.endswith("miss") or (kind in ("torch-state-dict", "torch-named") and rng.random() < 0.5)
    if kind.startswith("lightning"):
        tensors = _random_tensors(rng, miss, ["bfloat16", "float32", "float16"] if miss else ["bfloat16", "float32"])
        manifest = _miss_json(tensors) if miss else None
        return Base(kind, lightning_archive(tensors, manifest), tensors, manifest)
    from collections import OrderedDict

    tensors = _random_tensors(rng, miss, ["bfloat16", "float32", "float16"])
    if kind == "torch-odd":  # what else a torch.save dict holds: 0-dim, empty, bool, integer tensors
        odd = [("scalar", "float32", (), rng.randbytes(4)), ("empty", "bfloat16", (0,), b""),
               ("flags", "bool", (3,), bytes(rng.randrange(2) for _ in range(3))),
               ("ids", "int64", (2,), rng.randbytes(16)),
               ("half", "float16", (1, 2), rng.randbytes(4)), ("wide", "float64", (1,), rng.randbytes(8))]  # fmt: skip
        tensors = tensors[:1] + rng.sample(odd, rng.randint(1, len(odd)))
    objs = {name: _torch_tensor(dtype, shape, raw) for name, dtype, shape, raw in tensors}
    if kind == "torch-views":  # two tensors over one storage: the second a slice at an element offset
        name, dtype, _shape, raw = tensors[0]
        whole = objs[name].reshape(-1)
        cut = rng.randrange(whole.numel()) if whole.numel() else 0
        objs[name + ".tail"] = whole[cut:]
        itemsize = len(raw) // max(1, whole.numel())
        tensors.append((name + ".tail", dtype, (whole.numel() - cut,), raw[cut * itemsize :]))
    obj: Any = objs
    if kind == "torch-state-dict":
        od: Any = OrderedDict(objs)
        od._metadata = OrderedDict({"": {"version": 1}})
        obj = od
    stem = rng.choice(["s1", "state-final", "adapter-final", "v141b-s1224"]) if kind == "torch-named" else None
    return Base(kind, _torch_save(obj, stem), tensors)


# --- samples --------------------------------------------------------------------------------------------


@dataclass
class Sample:
    """One generated file."""

    klass: str
    seed: int
    base: str  # the base kind, or the corpus case it came from
    note: str  # what the mutation did
    data: bytes
    suffix: str = ".pth"

    @property
    def replay(self) -> str:
        return f"{self.klass}:{self.seed}"


Mutator = Callable[[random.Random, Base], tuple[str, bytes]]


def _pick(rng: random.Random, arch: Archive, rels: list[str]) -> int:
    found = [k for k in (arch.find(r) for r in rels) if k is not None]
    return rng.choice(found) if found else rng.randrange(len(arch.members))


def _alt_pickle(rng: random.Random, base: Base, arch: Archive) -> bytes:
    """A different, valid data.pkl over the same storages: every storage read as raw bytes under
    another name (what a reader that picks the wrong data.pkl would return)."""
    specs = []
    for k, m in enumerate(arch.members):
        rel = m.name.split("/", 1)[-1]
        if rel.startswith("data/"):
            key = rel[len("data/") :]
            specs.append(TensorSpec(f"evil.{k}", "ByteStorage", key, len(m.data), (len(m.data),)))
    if not specs or rng.random() < 0.3:
        return tensor_pickle([])  # an empty dict
    return tensor_pickle(specs)


def _case_variants(rel: str) -> list[str]:
    parts = [rel.upper(), rel.capitalize(), rel.swapcase(), rel[:-1] + rel[-1].upper()]
    return [p for p in parts if p != rel] or [rel + "X"]


def m_eocd_in_comment(rng: random.Random, base: Base) -> tuple[str, bytes]:
    """A second end record inside the archive comment (readers that search from the end find it first)."""
    arch = parse_archive(base.data)
    real = arch.to_bytes()
    trailing = rng.randbytes(rng.choice([1, 5, 21, 22, 40]))
    how = rng.choice(["alt-archive", "alt-archive", "copy", "signature", "zip64-locator"])
    if how == "alt-archive":
        # the comment holds a whole other archive (same storages, another data.pkl) and its end
        # record; a reader that takes the last end record with 22 bytes after it reads that one
        alt = arch.copy()
        k = _pick(rng, alt, ["data.pkl"])
        alt.members[k].data = _alt_pickle(rng, base, alt)
        comment_start = len(real)  # the comment starts where the end record ends
        arch.comment = _shift(alt, comment_start)[comment_start:] + trailing
        note = f"comment holds another archive (data.pkl replaced) and its end record, then {len(trailing)} bytes"
    elif how == "copy":
        arch.comment = real[-EOCD.size :] + trailing
        note = f"comment is a copy of the end record, then {len(trailing)} bytes"
    elif how == "signature":
        arch.comment = rng.randbytes(rng.randint(0, 40)) + SIG_EOCD + rng.randbytes(rng.randint(0, 40))
        note = "comment contains an end-record signature"
    else:
        arch.comment = real[-EOCD.size - LOCATOR.size - EOCD64.size :] if arch.zip64 else SIG_LOCATOR + bytes(16)
        arch.comment += trailing
        note = "comment holds zip64 end records"
    if rng.random() < 0.2:
        arch.comment_len = len(arch.comment) + rng.choice([-1, 1])
        note += f" (comment length lies: {arch.comment_len})"
    return note, arch.to_bytes()


def _shift(arch: Archive, start: int) -> bytes:
    """``arch`` serialized as if its first byte sat at offset ``start`` of a file: the returned bytes
    are ``start`` zero bytes then the archive, with every offset absolute (the caller cuts the head)."""
    moved = arch.copy()
    moved.head = bytes(start)
    return moved.to_bytes()


def m_comment_length(rng: random.Random, base: Base) -> tuple[str, bytes]:
    """The end record's comment length disagrees with the bytes after it."""
    arch = parse_archive(base.data)
    arch.comment = rng.randbytes(rng.choice([0, 1, 10, 100]))
    arch.comment_len = rng.choice([len(arch.comment) + d for d in (-2, -1, 1, 2, 100)] + [U16, 0])
    arch.comment_len = max(0, min(U16, arch.comment_len))
    return f"comment of {len(arch.comment)} bytes, length field {arch.comment_len}", arch.to_bytes()


def m_trailing_junk(rng: random.Random, base: Base) -> tuple[str, bytes]:
    """Bytes after the end record that its comment length does not cover (up to 64 KiB and past)."""
    arch = parse_archive(base.data)
    size = rng.choice([1, 21, 22, 100, 4096, 65535, 65536, 65536 + 22, 70000])
    fill = rng.choice(["zeros", "random", "signatures"])
    if fill == "zeros":
        junk = bytes(size)
    elif fill == "random":
        junk = rng.randbytes(size)
    else:
        junk = (SIG_EOCD + bytes(18) + SIG_LOCAL) * (size // 26 + 1)
        junk = junk[:size]
    arch.tail = junk
    return f"{size} bytes of {fill} after the end record", arch.to_bytes()


def m_case_collision(rng: random.Random, base: Base) -> tuple[str, bytes]:
    """A second entry whose name differs from one only in case (or is the same name)."""
    arch = parse_archive(base.data)
    prefix = arch.prefix()
    rels = ["data.pkl", "version", "byteorder"] + [m.name.split("/", 1)[1] for m in arch.members if "/data/" in m.name]
    if base.miss_json is not None:
        rels.append("miss.json")
    rel = rng.choice(rels)
    k = arch.find(rel)
    twin_rel = rng.choice([*_case_variants(rel), rel]) if rng.random() < 0.85 else rel
    twin_prefix = prefix if rng.random() < 0.8 else rng.choice(_case_variants(prefix))
    if rel == "data.pkl":
        data = _alt_pickle(rng, base, arch)
    elif rel == "version":
        data = rng.choice([b"3\n", b"2\n", b"99\n", b"x"])
    elif rel == "byteorder":
        data = rng.choice([b"big", b"little"])
    elif rel == "miss.json":
        data = base.miss_json.replace(b'"alpha":32.0', b'"alpha":64.0') if base.miss_json else b"{}"
    else:
        original = arch.members[k].data if k is not None else b""
        data = rng.randbytes(len(original))
    twin = replace(arch.members[k] if k is not None else Member("", b""), name=f"{twin_prefix}/{twin_rel}", data=data)
    twin.gap_before = b""
    at = rng.choice([0, len(arch.members), (k or 0), (k or 0) + 1])
    arch.members.insert(at, twin)
    if arch.central_order is not None:
        arch.central_order = None
    if rng.random() < 0.3:  # central directory in another order than the file
        order = list(range(len(arch.members)))
        rng.shuffle(order)
        arch.central_order = order
    return f"{twin.name!r} added at {at} beside {prefix}/{rel}", arch.to_bytes()


def m_zip64_extra(rng: random.Random, base: Base) -> tuple[str, bytes]:
    """zip64 extra fields: repeated tags with other values, tags where none is needed, a decoy
    local header hidden in a storage and reached through the first of two tags."""
    arch = parse_archive(base.data)
    k = rng.randrange(len(arch.members))
    m = arch.members[k]
    how = rng.choice(["repeat-offset", "repeat-sizes", "unneeded", "local", "decoy"])
    real_size = len(m.data)

    def tag(*values: int) -> bytes:
        body = b"".join(struct.pack("<Q", v) for v in values)
        return struct.pack("<HH", 1, len(body)) + body

    if how == "repeat-sizes":
        m.c_usize = m.c_csize = U32
        other = real_size + rng.choice([1, -1 if real_size else 2, 64])
        first, second = (other, real_size) if rng.random() < 0.5 else (real_size, other)
        m.c_extra = tag(first, first) + tag(second, second)
        note = f"{m.name}: sizes in two zip64 tags ({first}, then {second}; real {real_size})"
    elif how == "repeat-offset":
        m.c_offset = U32
        offsets = _local_offsets(arch)
        other = rng.choice([o for o in offsets if o != offsets[k]] or [offsets[k] + 1])
        first, second = (other, offsets[k]) if rng.random() < 0.5 else (offsets[k], other)
        m.c_extra = tag(first) + tag(second)
        note = f"{m.name}: local header offset in two zip64 tags ({first}, then {second}; real {offsets[k]})"
    elif how == "unneeded":
        m.c_extra = tag(real_size + 1, real_size + 1, 0)
        note = f"{m.name}: zip64 tag with other values though the 32-bit fields are real"
    elif how == "local":
        m.extra = tag(real_size + rng.choice([0, 1]), real_size) + (m.extra or b"")
        note = f"{m.name}: zip64 tag in the local header only"
    else:
        # data.pkl's central offset is 0xFFFFFFFF; the first zip64 tag points at a local header
        # hidden inside storage data/0's bytes (another data.pkl), the second at the real one
        s = arch.find("data/0")
        p = arch.find("data.pkl")
        if s is None or p is None:
            return "no storage to hide a header in", base.data
        arch.members[s].data += bytes(2048)  # room for the decoy; data.pkl rewritten to fit
        _fix_storage_numel(arch, s)
        alt = _alt_pickle(rng, base, arch)
        pm = arch.members[p]
        name = pm.name_bytes()
        decoy = LOCAL.pack(SIG_LOCAL, 20, 0, 0, 0, 0, zlib.crc32(alt), len(alt), len(alt), len(name), 0) + name + alt
        sm = arch.members[s]
        sm.data = decoy + sm.data[len(decoy) :]
        offsets = _local_offsets(arch)
        hidden = offsets[s] + LOCAL.size + len(sm.name_bytes()) + len(_extra_of(arch, s))
        wide = rng.random() < 0.5
        pm.c_offset = U32
        if wide:
            pm.c_csize = pm.c_usize = U32
        first_tag = [len(alt), len(alt), hidden] if wide else [hidden]
        second_tag = [len(pm.data), len(pm.data), offsets[p]] if wide else [offsets[p]]
        pm.c_extra = tag(*first_tag) + tag(*second_tag)
        note = f"{pm.name}: first zip64 tag points at a decoy data.pkl inside {sm.name}, the second at the real one"
    return note, arch.to_bytes()


def _extra_of(arch: Archive, k: int) -> bytes:
    offsets = _local_offsets(arch)
    m = arch.members[k]
    name = m.l_name if m.l_name is not None else m.name_bytes()
    return m.extra if m.extra is not None else torch_padding(offsets[k], len(name), arch.align)


def _local_offsets(arch: Archive) -> list[int]:
    layout: list[tuple[str, int, struct.Struct]] = []
    arch.to_bytes(layout)
    return [at for what, at, _ in layout if what.startswith("local ")]


def _fix_storage_numel(arch: Archive, s: int) -> None:
    """After storage member ``s`` changed size, rewrite data.pkl so its tensors still fit (raw bytes)."""
    p = arch.find("data.pkl")
    if p is None:
        return
    specs = []
    for m in arch.members:
        rel = m.name.split("/", 1)[-1]
        if rel.startswith("data/"):
            specs.append(TensorSpec(f"t.{rel[5:]}", "ByteStorage", rel[5:], len(m.data), (len(m.data),)))
    arch.members[p].data = tensor_pickle(specs)


def m_unowned_bytes(rng: random.Random, base: Base) -> tuple[str, bytes]:
    """Bytes no entry owns: gaps, data descriptors, local extras unlike the central ones, comments."""
    arch = parse_archive(base.data)
    k = rng.randrange(len(arch.members))
    m = arch.members[k]
    hidden = rng.choice([b"\x80\x02}.", rng.randbytes(rng.randint(1, 40)), SIG_LOCAL + bytes(26)])
    how = rng.choice(["gap", "head", "before-directory", "descriptor", "descriptor-lies", "local-extra",
                      "central-extra", "entry-comment", "local-name"])  # fmt: skip
    if how == "gap":
        m.gap_before = hidden
        note = f"{len(hidden)} bytes before {m.name}"
    elif how == "head":
        arch.head = hidden
        note = f"{len(hidden)} bytes before the first entry"
    elif how == "before-directory":
        arch.before_end = hidden
        note = f"{len(hidden)} bytes between the central directory and the end records"
    elif how == "descriptor":
        m.flags |= FLAG_DESCRIPTOR
        size = rng.choice([12, 16, 20, 24])
        m.descriptor = (hidden + bytes(size))[:size]
        note = f"{m.name}: a {size}-byte data descriptor of arbitrary bytes"
    elif how == "descriptor-lies":
        m.flags |= FLAG_DESCRIPTOR
        m.descriptor = DESCRIPTOR.pack(SIG_DESCRIPTOR, rng.getrandbits(32), len(m.data) + 1, len(m.data) + 1)
        note = f"{m.name}: data descriptor with another CRC and size"
    elif how == "local-extra":
        m.extra = struct.pack("<HH", 0xCAFE, len(hidden)) + hidden + (m.extra if m.extra is not None else b"")
        note = f"{m.name}: local extra field of {len(hidden)} bytes the central header lacks"
    elif how == "central-extra":
        m.c_extra = struct.pack("<HH", 0xCAFE, len(hidden)) + hidden
        note = f"{m.name}: central extra field of {len(hidden)} bytes"
    elif how == "entry-comment":
        m.comment = hidden
        note = f"{m.name}: entry comment of {len(hidden)} bytes"
    else:
        rel = m.name.split("/", 1)[-1]
        m.l_name = f"{m.name.split('/', 1)[0]}/{rng.choice(_case_variants(rel))}".encode()
        note = f"{m.name}: local header names {m.l_name!r}"
    return note, arch.to_bytes()


def m_extra_member(rng: random.Random, base: Base) -> tuple[str, bytes]:
    """Members torch and the server ignore (or that mark another kind of archive)."""
    arch = parse_archive(base.data)
    prefix = arch.prefix()
    rel, data = rng.choice([
        ("payload.pkl", b"\x80\x02}."), ("extra.bin", rng.randbytes(16)), ("data/99", bytes(8)),
        (".data/extra", b"x"), ("code/x.py", b"pass"), ("constants.pkl", b"\x80\x02)."),
        ("miss.json", b"{}"), ("data.pkl.bak", b"\x80\x02}."), ("nested/data.pkl", b"\x80\x02}."),
        (".data/version", b"3\n"), ("README", b"hello"),
    ])  # fmt: skip
    name = f"{prefix}/{rel}" if rng.random() < 0.9 else f"other/{rel}"
    extra = replace(arch.members[0], name=name, data=data, gap_before=b"")
    at = rng.randint(0, len(arch.members))
    arch.members.insert(at, extra)
    arch.central_order = None
    return f"{name!r} added at {at}", arch.to_bytes()


def m_missing_record(rng: random.Random, base: Base) -> tuple[str, bytes]:
    """A record dropped: version, byteorder, data.pkl, a storage, torch's metadata."""
    arch = parse_archive(base.data)
    rel = rng.choice(["version", "version", "byteorder", "data.pkl", "data/0", ".format_version",
                      ".storage_alignment", ".data/serialization_id"])  # fmt: skip
    k = arch.find(rel)
    if k is None:
        return m_record_values(rng, base)
    del arch.members[k]
    arch.central_order = None
    return f"{arch.prefix()}/{rel} removed", arch.to_bytes()


def m_record_values(rng: random.Random, base: Base) -> tuple[str, bytes]:
    """The small records torch parses, with other values (or added where the writer has none)."""
    arch = parse_archive(base.data)
    rel, values = rng.choice([
        ("version", [b"3", b"3\n", b"03\n", b"1\n", b"10\n", b"11\n", b"0\n", b" 3\n", b"+3\n", b"3 \n", b"3\r\n",
                     b"", b"x", b"3x", b"9999999999999999999999\n", b"-1\n", b"2\n", b"\n3"]),
        ("byteorder", [b"big", b"little\n", b"LITTLE", b"", b"middle", b"little "]),
        (".format_version", [b"0", b"2", b"10", b"a", b"", b"1\n"]),
        (".storage_alignment", [b"0", b"1", b"63", b"128", b"abc", b"", b" 64", b"64\n", b"-64", b"4096"]),
        (".data/serialization_id", [b"", b"x" * 300, b"\x00", "é".encode()]),
        (".data/version", [b"3\n", b"99\n", b"x"]),
    ])  # fmt: skip
    value = rng.choice(values)
    k = arch.find(rel)
    if k is None:
        added = replace(arch.members[0], name=f"{arch.prefix()}/{rel}", data=value, gap_before=b"")
        arch.members.insert(rng.randint(0, len(arch.members)), added)
        arch.central_order = None
        return f"{arch.prefix()}/{rel} added holding {value!r}", arch.to_bytes()
    arch.members[k].data = value
    return f"{arch.prefix()}/{rel} holds {value!r}", arch.to_bytes()


def _replace_pickle(
    rng: random.Random, base: Base, change: Callable[[TensorSpec], TensorSpec]
) -> tuple[Archive, bytes]:
    """The base with data.pkl rewritten (lightning opcodes) from its tensors after ``change``."""
    arch = parse_archive(base.data)
    p = arch.find("data.pkl")
    assert p is not None
    keys = _storage_keys(arch, base)
    specs = []
    for (name, dtype, shape, raw), key in zip(base.tensors, keys, strict=False):
        itemsize = STORAGES[STORAGE_OF[dtype]][1]
        specs.append(change(TensorSpec(name, STORAGE_OF[dtype], key, len(raw) // itemsize, shape)))
    pkl = tensor_pickle(specs)
    arch.members[p].data = pkl
    return arch, pkl


def _storage_keys(arch: Archive, base: Base) -> list[str]:
    """The storage key of each base tensor (views share one: those get fresh raw storages)."""
    keys = [m.name.split("/data/", 1)[1] for m in arch.members if "/data/" in m.name]
    keys.sort(key=lambda k: int(k) if k.isdigit() else 0)
    if len(keys) < len(base.tensors):  # torch-views: make every tensor its own storage
        p = arch.find("data.pkl")
        for k in [k for k, m in enumerate(arch.members) if "/data/" in m.name][::-1]:
            del arch.members[k]
        arch.central_order = None
        keys = [str(i) for i in range(len(base.tensors))]
        storages = [replace(arch.members[0], name=f"{arch.prefix()}/data/{i}", data=t[3], gap_before=b"")
                    for i, t in enumerate(base.tensors)]  # fmt: skip
        at = arch.find("data.pkl") if p is not None else 0
        arch.members[(at or 0) + 1 : (at or 0) + 1] = storages
    return keys


def m_storage_location(rng: random.Random, base: Base) -> tuple[str, bytes]:
    """A storage's location tag other than "cpu" (``meta`` gives tensors without data)."""
    loc = rng.choice(["meta", "meta", "cuda", "cuda:0", "cuda:1", "mps", "xla", "hpu", "cpu:0", "privateuseone",
                      "CPU", "cpu ", "", "ipu", "xpu", "lazy"])  # fmt: skip
    every = rng.random() < 0.5
    first = True

    def change(t: TensorSpec) -> TensorSpec:
        nonlocal first
        hit = every or first
        first = False
        return replace(t, location=loc) if hit else t

    arch, _ = _replace_pickle(rng, base, change)
    return f"location {loc!r} on {'every storage' if every else 'the first storage'}", arch.to_bytes()


def m_pickle_edits(rng: random.Random, base: Base) -> tuple[str, bytes]:
    """Tensors described otherwise: names, storage classes, offsets, shapes, strides, sharing."""
    how = rng.choice(["name", "dtype", "offset", "shape", "stride", "share", "requires-grad", "numel", "key"])
    notes: list[str] = []

    def change(t: TensorSpec) -> TensorSpec:
        if rng.random() < 0.5 and notes:
            return t
        itemsize = STORAGES[t.storage][1]
        nbytes = t.numel * itemsize
        if how == "name":
            new = replace(t, name=rng.choice(["", t.name.upper(), t.name + "\x00", "é" * 3, t.name + " ", "a" * 5000,
                                              "\ud800", t.name.replace(".", "/")]))  # fmt: skip
        elif how == "dtype":
            cls = rng.choice(list(STORAGES))
            size = STORAGES[cls][1]
            new = replace(t, storage=cls, numel=nbytes // size, shape=(nbytes // size,)) if nbytes % size == 0 else t
        elif how == "offset":
            off = rng.choice([1, t.numel, t.numel + 1, 2**40])
            new = replace(t, offset=off, shape=(max(0, t.numel - off),))
        elif how == "shape":
            new = replace(t, shape=rng.choice([(), (0,), (t.numel, 0), (t.numel + 1,), (1,) * 70, (t.numel, 1, 1),
                                               (2**62, 0), (2**63, 0), (2**64, 0)]))  # fmt: skip
        elif how == "stride":
            new = replace(t, shape=(t.numel, 1), stride=rng.choice([(1, 1), (0, 1), (1, 0), (2, 1), (1, 5)]))
        elif how == "share":
            new = replace(t, key="0")
        elif how == "requires-grad":
            new = replace(t, requires_grad=True)
        elif how == "numel":
            new = replace(t, numel=t.numel + rng.choice([-1, 1, 2**32]))
        else:
            new = replace(t, key=rng.choice(["00", "0" + t.key, t.key + " ", "a" * 65, "x"]))
        notes.append(f"{t.name}: {how} -> {new.name!r} {new.storage} key {new.key!r} numel {new.numel} "
                     f"offset {new.offset} shape {new.shape[:4]} stride {new.stride}")  # fmt: skip
        return new

    arch, _ = _replace_pickle(rng, base, change)
    return "; ".join(notes)[:300], arch.to_bytes()


def m_header_fields(rng: random.Random, base: Base) -> tuple[str, bytes]:
    """One field of one header (local, central, descriptor, end records) set to another value."""
    arch = parse_archive(base.data)
    layout: list[tuple[str, int, struct.Struct]] = []
    data = bytearray(arch.to_bytes(layout))
    edits = []
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        what, at, st = rng.choice(layout)
        fields = _fields(st)
        index = rng.randrange(1, len(fields))  # never the signature
        off, fmt = fields[index]
        width = struct.calcsize("<" + fmt)
        old = int.from_bytes(data[at + off : at + off + width], "little")
        value = rng.choice([*INTERESTING, old + 1, old - 1, old ^ (1 << rng.randrange(8 * width)),
                            rng.getrandbits(8 * width)]) % (1 << (8 * width))  # fmt: skip
        data[at + off : at + off + width] = value.to_bytes(width, "little")
        edits.append(f"{what} field {index} {old}->{value}")
    return ", ".join(edits), bytes(data)


def m_version_needed(rng: random.Random, base: Base) -> tuple[str, bytes]:
    """The "version needed to extract" of one entry's local header, central header or both: the producers' values
    (torch 0, rwkv_lightning_cuda 20, zipfile 45 with zip64), the bounds of what Python's zipfile opens (63, 64),
    a host system in the high byte, anything."""
    arch = parse_archive(base.data)
    m = rng.choice(arch.members)
    value = rng.choice([0, 10, 20, 45, 46, 63, 64, 0x0314, 0x0A14, 0xFF, 0xFFFF, rng.randrange(256),
                        rng.getrandbits(16)])  # fmt: skip
    where = rng.choice(["central", "central", "local", "both"])
    if where in ("central", "both"):
        m.c_version = value
    if where in ("local", "both"):
        m.version = value
    return f"{m.name}: {where} version needed {value:#06x}", arch.to_bytes()


def _fields(st: struct.Struct) -> list[tuple[int, str]]:
    out = []
    pos = 0
    for ch in st.format.lstrip("<"):
        if ch.isdigit():
            continue
        width = 4 if ch == "s" else struct.calcsize("<" + ch)
        out.append((pos, "I" if ch == "s" else ch))
        pos += width
    return out


def m_bytes(rng: random.Random, base: Base) -> tuple[str, bytes]:
    """Generic damage: byte flips, 32-bit values, truncation, deletion, insertion, splices."""
    data = bytearray(base.data)
    edits = []
    for _ in range(rng.randint(1, 4)):
        pos = rng.randrange(len(data)) if data else 0
        r = rng.random()
        if r < 0.35:
            data[pos : pos + 1] = bytes([rng.randrange(256)])
            edits.append(f"byte {pos}")
        elif r < 0.55:
            data[pos : pos + 4] = struct.pack("<I", rng.choice(INTERESTING))
            edits.append(f"u32 at {pos}")
        elif r < 0.65:
            del data[pos:]
            edits.append(f"cut at {pos}")
        elif r < 0.8:
            n = rng.randint(1, 16)
            del data[pos : pos + n]
            edits.append(f"-{n} at {pos}")
        elif r < 0.9:
            n = rng.randint(1, 16)
            data[pos:pos] = rng.randbytes(n)
            edits.append(f"+{n} at {pos}")
        else:
            src = rng.randrange(len(data)) if data else 0
            n = rng.randint(1, 64)
            data[pos:pos] = data[src : src + n]
            edits.append(f"splice {src}+{n} at {pos}")
    return ", ".join(edits), bytes(data)


def m_valid(rng: random.Random, base: Base) -> tuple[str, bytes]:
    """The base file unchanged (the control: every one must be accepted and read identically)."""
    return "unchanged", base.data


CLASSES: dict[str, Mutator] = {
    "valid": m_valid,
    "eocd-in-comment": m_eocd_in_comment,
    "comment-length": m_comment_length,
    "trailing-junk": m_trailing_junk,
    "case-collision": m_case_collision,
    "zip64-extra": m_zip64_extra,
    "unowned-bytes": m_unowned_bytes,
    "extra-member": m_extra_member,
    "missing-record": m_missing_record,
    "record-values": m_record_values,
    "storage-location": m_storage_location,
    "pickle-edits": m_pickle_edits,
    "header-fields": m_header_fields,
    "version-needed": m_version_needed,
    "bytes": m_bytes,
}
# the classes the strict zip reader (helper `zip`, issue 26) owns; the others are checked here
ZIP_OWNED = frozenset({"eocd-in-comment", "comment-length", "trailing-junk", "case-collision", "zip64-extra",
                       "unowned-bytes", "extra-member", "missing-record", "storage-location",
                       "version-needed"})  # fmt: skip


def generate(klass: str, seed: int) -> Sample:
    """The sample of ``klass`` for ``seed`` (the same bytes every time)."""
    if klass in SAFETENSORS_CLASSES:
        return generate_safetensors(klass, seed)
    rng = random.Random(f"{klass}/{seed}")
    base = base_archive(rng)
    note, data = CLASSES[klass](rng, base)
    return Sample(klass, seed, base.kind, note, data)


# --- safetensors ------------------------------------------------------------------------------------------

ST_DTYPES = {"BOOL": 1, "U8": 1, "I8": 1, "F8_E4M3": 1, "F8_E5M2": 1, "I16": 2, "U16": 2, "F16": 2, "BF16": 2,
             "I32": 4, "U32": 4, "F32": 4, "I64": 8, "U64": 8, "F64": 8, "C64": 8}  # fmt: skip
ST_COMMON = ["BF16", "F16", "F32", "F32", "BF16", "I64", "U8", "BOOL", "F64", "I32", "I16", "I8"]


@dataclass
class StTensor:
    name: str
    dtype: str
    shape: list[Any]
    offsets: list[Any]


def _st_base(rng: random.Random) -> tuple[list[StTensor], bytes, dict[str, str] | None]:
    tensors = []
    data = bytearray()
    names = [f"blocks.{i}.att.time_state" for i in range(rng.randint(0, 4))]
    if rng.random() < 0.3:
        names = [f"w{i}" for i in range(rng.randint(1, 3))]
    for name in names:
        dtype = rng.choice(ST_COMMON)
        shape = rng.choice([[2, 2, 2], [1, 4, 4], [3], [], [0], [2, 0, 3]])
        numel = 1
        for d in shape:
            numel *= d
        raw = rng.randbytes(numel * ST_DTYPES[dtype])
        if dtype == "BOOL":
            raw = bytes(b & 1 for b in raw)
        tensors.append(StTensor(name, dtype, shape, [len(data), len(data) + len(raw)]))
        data += raw
    meta = {"format": "pt"} if rng.random() < 0.5 else None
    return tensors, bytes(data), meta


def st_header(tensors: list[StTensor], meta: Any, *, pairs: list[tuple[str, Any]] | None = None) -> bytes:
    """The JSON header as safetensors writes it (compact, ``__metadata__`` first), padded with spaces to
    a multiple of 8; ``pairs`` are emitted instead when given (for duplicate keys)."""
    items: list[tuple[str, Any]] = []
    if meta is not None:
        items.append(("__metadata__", meta))
    for t in tensors:
        items.append((t.name, {"dtype": t.dtype, "shape": t.shape, "data_offsets": t.offsets}))
    if pairs is not None:
        items = pairs
    text = "{" + ",".join(json.dumps(k) + ":" + json.dumps(v, separators=(",", ":")) for k, v in items) + "}"
    raw = text.encode()
    return raw + b" " * (-len(raw) % 8)


def st_file(header: bytes, data: bytes, length: int | None = None) -> bytes:
    return struct.pack("<Q", len(header) if length is None else length) + header + data


def generate_safetensors(klass: str, seed: int) -> Sample:
    """A ``.safetensors`` sample: a valid file (``st-valid``) or one with its header changed."""
    rng = random.Random(f"{klass}/{seed}")
    tensors, data, meta = _st_base(rng)
    note, out = SAFETENSORS_CLASSES[klass](rng, tensors, data, meta)
    return Sample(klass, seed, "safetensors", note, out, suffix=".safetensors")


StMutator = Callable[[random.Random, list[StTensor], bytes, Any], tuple[str, bytes]]


def st_valid(rng: random.Random, tensors: list[StTensor], data: bytes, meta: Any) -> tuple[str, bytes]:
    return "unchanged", st_file(st_header(tensors, meta), data)


def st_duplicates(rng: random.Random, tensors: list[StTensor], data: bytes, meta: Any) -> tuple[str, bytes]:
    """A key twice (the same or another value), spelled the same or through a JSON escape."""
    pairs: list[tuple[str, Any]] = [("__metadata__", meta)] if meta is not None else []
    pairs += [(t.name, {"dtype": t.dtype, "shape": t.shape, "data_offsets": t.offsets}) for t in tensors]
    if not pairs:
        pairs = [("__metadata__", {"a": "b"})]
    k, v = rng.choice(pairs)
    twin = v if rng.random() < 0.5 else (dict(v, dtype="U8", shape=[0], data_offsets=[0, 0]) if k != "__metadata__"
                                         else {"x": "y"})  # fmt: skip
    pairs.insert(rng.randint(0, len(pairs)), (k, twin))
    header = st_header([], None, pairs=pairs)
    if rng.random() < 0.3 and k:  # the second spelling as \\u escapes: equal after decoding
        escaped = "".join(f"\\u{ord(c):04x}" for c in k)
        first = header.find(json.dumps(k).encode())
        second = header.find(json.dumps(k).encode(), first + 1)
        if second > 0:
            header = header[:second] + b'"' + escaped.encode() + b'"' + header[second + len(json.dumps(k).encode()) :]
            header = header.rstrip(b" ")
            header += b" " * (-len(header) % 8)
    return f"key {k!r} twice", st_file(header, data)


def st_offsets(rng: random.Random, tensors: list[StTensor], data: bytes, meta: Any) -> tuple[str, bytes]:
    """data_offsets overlapping, with gaps, out of order, past the end, reversed; bytes after the data."""
    how = rng.choice(["overlap", "gap", "swap", "past-end", "reversed", "trailing", "short", "first-not-zero"])
    ts = [replace(t, offsets=list(t.offsets)) for t in tensors]
    extra = b""
    if not ts:
        ts = [StTensor("w", "U8", [0], [0, 0])]
    t = rng.choice(ts)
    if how == "overlap" and len(ts) > 1:
        t.offsets = [max(0, t.offsets[0] - 1), t.offsets[1] - 1]
    elif how == "gap":
        t.offsets = [t.offsets[0] + 1, t.offsets[1] + 1]
        extra = b"\0"
    elif how == "swap" and len(ts) > 1:
        a, b = rng.sample(ts, 2)
        a.offsets, b.offsets = b.offsets, a.offsets
    elif how == "past-end":
        t.offsets = [t.offsets[0], t.offsets[1] + rng.choice([1, 8, 2**40])]
    elif how == "reversed":
        t.offsets = [t.offsets[1], t.offsets[0]]
    elif how == "trailing":
        extra = rng.randbytes(rng.choice([1, 7, 8]))
    elif how == "short":
        data = data[:-1] if data else data
    else:
        for u in ts:
            u.offsets = [u.offsets[0] + 4, u.offsets[1] + 4]
        extra = b""
        data = bytes(4) + data
    return f"{how} ({t.name})", st_file(st_header(ts, meta), data + extra)


def st_fields(rng: random.Random, tensors: list[StTensor], data: bytes, meta: Any) -> tuple[str, bytes]:
    """dtype strings, shapes and offsets of other JSON types or values; extra or missing keys."""
    ts = [replace(t) for t in tensors] or [StTensor("w", "U8", [0], [0, 0])]
    t = rng.choice(ts)
    how = rng.choice(["dtype", "shape", "offsets", "extra-key", "missing-key"])
    pairs: list[tuple[str, Any]] = [("__metadata__", meta)] if meta is not None else []
    info: dict[str, Any] = {}
    for u in ts:
        entry: dict[str, Any] = {"dtype": u.dtype, "shape": u.shape, "data_offsets": u.offsets}
        if u is t:
            info = entry
        pairs.append((u.name, entry))
    if how == "dtype":
        info["dtype"] = rng.choice(["bf16", "F32 ", "float32", "", "F8_E4M3", "F8_E5M2", "U16", "U32", "U64", "C64",
                                    "F4", "I4", 1, None, ["F32"]])  # fmt: skip
    elif how == "shape":
        numel_bytes = t.offsets[1] - t.offsets[0]
        info["shape"] = rng.choice([[-1], [2.0], [True], ["2"], [[2]], None, 2, [2**64], [2**64, 0], [0, 2**64],
                                    [2**63, 0], [0, 2**70], [numel_bytes], [1] * 70, []])  # fmt: skip
    elif how == "offsets":
        b, e = t.offsets
        info["data_offsets"] = rng.choice([[b], [b, e, e], [float(b), e], [-1, e], [b, 2**64], None, [str(b), e],
                                           [True, e] if b == 1 else [b, e + 0.0]])  # fmt: skip
    elif how == "extra-key":
        info["extra"] = rng.choice([1, "x", None])
    else:
        del info[rng.choice(["dtype", "shape", "data_offsets"])]
    header = st_header([], None, pairs=pairs)
    return f"{t.name}: {how} -> {json.dumps(info)[:120]}", st_file(header, data)


def st_metadata(rng: random.Random, tensors: list[StTensor], data: bytes, meta: Any) -> tuple[str, bytes]:
    """``__metadata__`` of other shapes: non-string values, nested, null, a list, empty, like a tensor."""
    value: Any = rng.choice([{"a": 1}, {"a": None}, {"a": {"b": "c"}}, None, [], {}, "x", {"": ""}, {"dtype": "F32"},
                        {"dtype": "U8", "shape": [0], "data_offsets": [0, 0]}, {"a": "é\u0000"}])  # fmt: skip
    return f"__metadata__ = {json.dumps(value)}", st_file(st_header(tensors, value), data)


def st_header_bytes(rng: random.Random, tensors: list[StTensor], data: bytes, meta: Any) -> tuple[str, bytes]:
    """The header's length and text: lies, padding, leading bytes, non-UTF-8, huge lengths, deep nesting."""
    header = st_header(tensors, meta)
    how = rng.choice(["length+", "length-", "huge", "limit", "nul-pad", "leading-space", "bom", "trailing-garbage",
                      "newline-pad", "non-utf8", "not-object", "deep", "empty"])  # fmt: skip
    length: int | None = None
    if how == "length+":
        length = len(header) + rng.choice([1, 8, 1000])
    elif how == "length-":
        length = max(0, len(header) - rng.choice([1, 8]))
    elif how == "huge":
        length = rng.choice([2**32, 2**63, 2**64 - 1, 100_000_001])
    elif how == "limit":
        header = header.rstrip(b" ")
        header += b" " * (rng.choice([100_000_000, 100_000_001]) - len(header)) if rng.random() < 0.05 else b""
        header += b" " * (-len(header) % 8)
    elif how == "nul-pad":
        header = header.rstrip(b" ") + b"\0" * rng.choice([1, 8])
    elif how == "leading-space":
        header = b" " + header
    elif how == "bom":
        header = "\ufeff".encode() + header
    elif how == "trailing-garbage":
        header = header.rstrip(b" ") + rng.choice([b"x", b"}", b",", b"{}"])
    elif how == "newline-pad":
        header = header.rstrip(b" ") + b"\n" * rng.choice([1, 3])
    elif how == "non-utf8":
        header = header.replace(b'"', b'"\xff', 1) if tensors else b'{"\xff":1}'
    elif how == "not-object":
        header = rng.choice([b"[]", b"null", b"1", b'"x"'])
    elif how == "deep":
        header = b'{"w":' + b"[" * 2000 + b"]" * 2000 + b"}"
    else:
        header = b"{}" + b" " * 6
        data = b""
    return f"header {how} (length {length})", st_file(header, data, length)


def st_bytes(rng: random.Random, tensors: list[StTensor], data: bytes, meta: Any) -> tuple[str, bytes]:
    base = Base("safetensors", st_file(st_header(tensors, meta), data), [])
    return m_bytes(rng, base)


SAFETENSORS_CLASSES: dict[str, StMutator] = {
    "st-valid": st_valid,
    "st-duplicates": st_duplicates,
    "st-offsets": st_offsets,
    "st-fields": st_fields,
    "st-metadata": st_metadata,
    "st-header": st_header_bytes,
    "st-bytes": st_bytes,
}
