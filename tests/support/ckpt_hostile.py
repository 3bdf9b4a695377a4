"""Builders of hostile and unusual weight files for the safe-reader tests.

Everything here is written with :mod:`struct`/:mod:`zlib` (and :mod:`pickle` only to *produce*
malicious pickles; nothing here loads one). ``build_zip`` writes a stored zip with per-entry
knobs (compression method, flags, CRC, zip64 sentinels), so each test can break exactly one
thing in an otherwise valid archive.
"""

from __future__ import annotations

import json
import os
import pickle
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from conformance.lightning_cpp import lightning_pickle


@dataclass
class Entry:
    """One zip entry and what to falsify about it."""

    name: str
    data: bytes
    method: int = 0  # 0 stored; 8 deflate (data is then compressed here)
    flags: int = 0
    crc: int | None = None  # None: the real CRC
    zip64: bool = False  # put sizes and offset in a zip64 extra field, 0xFFFFFFFF in the headers


def build_zip(
    entries: list[Entry], *, disk: int = 0, cd_disk: int = 0, zip64_end: bool = False, comment: bytes = b""
) -> bytes:
    """A zip archive of ``entries``; ``zip64_end`` adds zip64 end records like torch does."""
    body = bytearray()
    directory = bytearray()
    for e in entries:
        raw = e.name.encode("utf-8")
        stored = zlib.compress(e.data)[2:-4] if e.method == 8 else e.data
        crc = zlib.crc32(e.data) if e.crc is None else e.crc
        offset = len(body)
        extra = struct.pack("<HHQQQ", 1, 24, len(e.data), len(stored), offset) if e.zip64 else b""
        csize = 0xFFFFFFFF if e.zip64 else len(stored)
        usize = 0xFFFFFFFF if e.zip64 else len(e.data)
        body += struct.pack("<4sHHHHHIIIHH", b"PK\x03\x04", 20, e.flags, e.method, 0, 0, crc, csize, usize,
                            len(raw), 0)  # fmt: skip
        body += raw + stored
        # version needed: 45 (Python's zipfile ZIP64_VERSION) with zip64 values only, else 20 (as the reader wants)
        directory += struct.pack("<4sHHHHHHIIIHHHHHII", b"PK\x01\x02", 45, 45 if e.zip64 else 20, e.flags, e.method,
                                 0, 0, crc,
                                 csize, usize, len(raw), len(extra), 0, 0, 0, 0,
                                 0xFFFFFFFF if e.zip64 else offset)  # fmt: skip
        directory += raw + extra
    tail = b""
    n = len(entries)
    if zip64_end:
        record = len(body) + len(directory)
        tail += struct.pack("<4sQHHIIQQQQ", b"PK\x06\x06", 44, 45, 45, disk, cd_disk, n, n, len(directory), len(body))
        tail += struct.pack("<4sIQI", b"PK\x06\x07", 0, record, 1)
    tail += struct.pack("<4sHHHHIIH", b"PK\x05\x06", disk, cd_disk, n, n, len(directory), len(body), len(comment))
    return bytes(body + directory + tail + comment)


def _int(v: int) -> bytes:
    if 0 <= v < 256:
        return b"K" + bytes([v])
    if -(2**31) <= v < 2**31:
        return b"J" + struct.pack("<i", v)
    raw = v.to_bytes((v.bit_length() + 8) // 8, "little", signed=True)
    return b"\x8a" + bytes([len(raw)]) + raw


def _str(s: str) -> bytes:
    raw = s.encode()
    return b"X" + struct.pack("<I", len(raw)) + raw


@dataclass
class T:
    """One tensor of a hand-built pickle; every field can lie."""

    name: str
    key: str = "0"
    numel: int = 2
    shape: tuple[int, ...] = (2,)
    stride: tuple[int, ...] = (1,)
    offset: int = 0
    storage: str = "FloatStorage"
    location: str = "cpu"


def tensor_pickle(tensors: list[T], *, top: bytes = b"}") -> bytes:
    """A protocol-2 pickle of a dict (or what ``top`` opens) name -> tensor, no memo."""
    out = bytearray(b"\x80\x02" + top + b"(")
    for t in tensors:
        out += _str(t.name) + b"ctorch._utils\n_rebuild_tensor_v2\n(("
        out += _str("storage") + f"ctorch\n{t.storage}\n".encode() + _str(t.key) + _str(t.location)
        out += _int(t.numel) + b"tQ" + _int(t.offset)
        out += b"(" + b"".join(_int(d) for d in t.shape) + b"t"
        out += b"(" + b"".join(_int(d) for d in t.stride) + b"t"
        out += b"\x89}tR"
    return bytes(out + b"u.")


def simple_pickle(n: int = 1, dtype: str = "float32", shape: tuple[int, ...] = (2,)) -> bytes:
    """data.pkl for tensors t0..t{n-1}, storage i for tensor i."""
    return lightning_pickle([(f"t{i}", dtype, shape) for i in range(n)])


def checkpoint_entries(pkl: bytes, storages: dict[str, bytes], *, prefix: str = "archive",
                       extra: list[Entry] | None = None) -> list[Entry]:  # fmt: skip
    """Entries of a lightning-style archive with a given pickle and storages."""
    out = [Entry(f"{prefix}/data/{k}", v) for k, v in storages.items()]
    out += [Entry(f"{prefix}/data.pkl", pkl), Entry(f"{prefix}/byteorder", b"little"),
            Entry(f"{prefix}/version", b"3\n")]  # fmt: skip
    return out + (extra or [])


def with_pickle(pkl: bytes, storages: dict[str, bytes] | None = None) -> bytes:
    """A stored archive around ``pkl`` (default storage: '0' of two float32)."""
    return build_zip(checkpoint_entries(pkl, {"0": bytes(8)} if storages is None else storages))


# --- malicious pickles ---------------------------------------------------------------------------


class _Reduce:
    """An object whose unpickling calls ``func(*args)``; used only to *write* pickles."""

    def __init__(self, func: Any, args: tuple) -> None:
        self.func, self.args = func, args

    def __reduce__(self) -> tuple:
        return self.func, self.args


def evil_pickle(kind: str, marker: Path) -> bytes:
    """A protocol-2 pickle that, if loaded, would create ``marker``. Never load it."""
    import builtins
    import subprocess

    cmd = f"touch {marker}"
    if kind == "posix system":
        return pickle.dumps({"w": _Reduce(os.system, (cmd,))}, protocol=2)
    if kind in ("builtins eval", "__builtin__ eval"):  # protocol 2 maps builtins to __builtin__ by default
        evil = {"w": _Reduce(builtins.eval, (f"open({str(marker)!r}, 'w')",))}
        return pickle.dumps(evil, protocol=2, fix_imports=kind.startswith("__"))
    if kind == "subprocess Popen":
        return pickle.dumps({"w": _Reduce(subprocess.Popen, (["touch", str(marker)],))}, protocol=2, fix_imports=False)
    if kind == "os system":  # hand-written: GLOBAL 'os system' (what Windows-made pickles hold)
        arg = cmd.encode()
        return b"\x80\x02}(X\x01\x00\x00\x00wcos\nsystem\nX" + struct.pack("<I", len(arg)) + arg + b"\x85Ru."
    raise ValueError(kind)


# --- safetensors -----------------------------------------------------------------------------------


def safetensors_bytes(header: Any, data: bytes, *, raw_header: bytes | None = None,
                      length: int | None = None) -> bytes:  # fmt: skip
    """A safetensors file from a header object (or raw header bytes) and a data area."""
    head = raw_header if raw_header is not None else json.dumps(header).encode()
    head += b" " * (-len(head) % 8)
    return struct.pack("<Q", len(head) if length is None else length) + head + data


# --- big archives ----------------------------------------------------------------------------------


def write_sparse_zip64(path: Path, numel: int) -> int:
    """A torch-style archive (as torch 2.13 writes past 4 GiB) whose bf16 storage of ``numel``
    elements is a hole in a sparse file; returns the file size. Layout copied from a real
    4.4 GB ``torch.save``: zip64 extra fields in local and central headers for the big entry
    (sizes; the local copy has compressed size 0) and for every entry after it (offset),
    64-bit data descriptors, zip64 end records.
    The CRC of the hole is not computed (0): read it with ``verify_crc="metadata"``."""
    pkl = tensor_pickle([T("big", "0", numel, (numel,), storage="BFloat16Storage"), T("after", "1")])
    after = struct.pack("<2f", 1.5, -2.0)
    entries = [("big/data.pkl", pkl, None), ("big/data/0", None, numel * 2), ("big/data/1", after, None),
               ("big/byteorder", b"little", None), ("big/version", b"3\n", None)]  # fmt: skip
    central = bytearray()
    pos = 0
    with open(path, "wb") as f:
        for name, data, hole in entries:
            raw = name.encode()
            size = hole if data is None else len(data)
            big_size, big_off = size >= 0xFFFFFFFF, pos >= 0xFFFFFFFF
            z = (struct.pack("<QQ", size, size) if big_size else b"") + (struct.pack("<Q", pos) if big_off else b"")
            z64 = struct.pack("<HH", 1, len(z)) + z if z else b""
            start = pos + 30 + len(raw) + len(z64) + 4
            pad = -start % 64
            local64 = z64.replace(struct.pack("<QQ", size, size), struct.pack("<QQ", size, 0), 1)  # csize 0 locally
            extra = local64 + b"FB" + struct.pack("<H", pad) + b"Z" * pad
            crc = 0 if data is None else zlib.crc32(data)
            f.write(struct.pack("<4sHHHHHIIIHH", b"PK\x03\x04", 0, 0x0808, 0, 0, 0, 0, 0, 0, len(raw), len(extra)))
            f.write(raw + extra)
            if data is None:
                f.seek(size, os.SEEK_CUR)
            else:
                f.write(data)
            f.write(struct.pack("<4sIQQ" if z64 else "<4sIII", b"PK\x07\x08", crc, size, size))
            central += struct.pack("<4sHHHHHHIIIHHHHHII", b"PK\x01\x02", 0, 0, 0x0808, 0, 0, 0, crc,
                                   min(size, 0xFFFFFFFF), min(size, 0xFFFFFFFF), len(raw), len(z64), 0, 0, 0, 0,
                                   min(pos, 0xFFFFFFFF))  # fmt: skip
            central += raw + z64
            pos = f.tell()
        cd_offset = pos
        f.write(central)
        record = f.tell()
        n = len(entries)
        f.write(struct.pack("<4sQHHIIQQQQ", b"PK\x06\x06", 44, 0x031E, 0x2D, 0, 0, n, n, len(central), cd_offset))
        f.write(struct.pack("<4sIQI", b"PK\x06\x07", 0, record, 1))
        f.write(struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, n, n, len(central), min(cd_offset, 0xFFFFFFFF), 0))
        return f.tell()
