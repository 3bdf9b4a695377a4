"""The zip and pickle primitives of rwkv_lightning_cuda's two ``.pth`` writers, as test helpers.

Alic-Li/rwkv_lightning_cuda defines the same helpers twice, line for line, in
``src/state_tuning/state_checkpoint.cpp`` (commit ae88abf17e97, the fp32 ``rwkv_state_tune``) and
``src/io/pth_writer.cpp`` (commit 43ceb306039f, ``llm_infer::write_pth``, which the bf16 trainer and the MiSS
exporter call), each in an anonymous namespace:

- ``u16`` / ``u32``: little-endian integers;
- ``crc32``: the reflected CRC-32 (polynomial 0xEDB88320, initial value 0xFFFFFFFF, final complement), the
  CRC of zlib, which :func:`zlib.crc32` computes;
- ``pickle_string``: ``'X'`` (BINUNICODE), u32 length, the bytes;
- ``pickle_int(int32_t)``: ``'K'`` + u8 for 0..255, ``'M'`` + u16 for 256..65535, else ``'J'`` + u32 of the
  value's two's complement;
- ``pickle_global``: ``'c'``, module, ``'\\n'``, name, ``'\\n'``;
- ``pickle_tuple3``: ``'('``, three ``pickle_int``, ``'t'``;
- ``write_zip``: per entry a local header (signature 0x04034b50, version 20, flags 0, method 0 (stored),
  time 0, date 0, crc, size, size, name length, extra length 0), the name, the data (so no data descriptor,
  no extra field and therefore no 64-byte alignment); then a central directory (0x02014b50, made by 20,
  needed 20, flags, method, time, date 0, crc, sizes, name length, extra 0, comment 0, disk 0, internal 0,
  external 0, local header offset) and an end record (0x06054b50, disks 0, 0, count, count, directory size,
  directory offset, comment 0). It throws "checkpoint exceeds non-ZIP64 limits" when an entry or the output
  so far passes 4 GiB (no zip64 ever) and "too many checkpoint entries" past 65535 entries.

Nothing here comes from ``rwkv_registry`` (``registry/formats/pthwrite.py`` is the project's own writer; these files
check it, not the reverse).
"""

from __future__ import annotations

import os
import struct
import zlib
from collections.abc import Sequence

U32_MAX = 0xFFFFFFFF
U16_MAX = 0xFFFF


def u16(value: int) -> bytes:
    return struct.pack("<H", value & U16_MAX)


def u32(value: int) -> bytes:
    return struct.pack("<I", value & U32_MAX)


def pickle_string(value: str) -> bytes:
    raw = value.encode("utf-8")
    return b"X" + u32(len(raw)) + raw


def pickle_int(value: int) -> bytes:
    """``pickle_int(std::int32_t)``: the argument is an int32 in the C++; a caller passing more is a bug there."""
    if not -(2**31) <= value < 2**31:
        raise OverflowError(f"pickle_int takes an int32, not {value}")
    if 0 <= value <= 255:
        return b"K" + bytes([value])
    if 0 <= value <= 65535:
        return b"M" + u16(value)
    return b"J" + u32(value)


def pickle_global(module: str, name: str) -> bytes:
    return b"c" + module.encode() + b"\n" + name.encode() + b"\n"


def pickle_tuple(values: Sequence[int]) -> bytes:
    """``pickle_tuple3`` (state_checkpoint.cpp) and the shape/stride loops of ``write_pth`` (pth_writer.cpp)."""
    return b"(" + b"".join(pickle_int(v) for v in values) + b"t"


def tensor_record(name: str, storage: str, key: str, shape: Sequence[int]) -> bytes:
    """One ``name: _rebuild_tensor_v2((storage-id), 0, shape, stride, False, {})`` item, as both writers emit it:
    BINUNICODE name, GLOBAL torch._utils _rebuild_tensor_v2, MARK, MARK 'storage' GLOBAL torch <storage> key 'cpu'
    numel TUPLE BINPERSID, storage offset 0, shape tuple, contiguous stride tuple, NEWFALSE, EMPTY_DICT, TUPLE,
    REDUCE."""
    numel = 1
    for d in shape:
        numel *= d
    stride = [0] * len(shape)
    step = 1
    for j in range(len(shape) - 1, -1, -1):
        stride[j] = step
        step *= shape[j]
    return b"".join(
        [
            pickle_string(name),
            pickle_global("torch._utils", "_rebuild_tensor_v2"),
            b"((",
            pickle_string("storage"),
            pickle_global("torch", storage),
            pickle_string(key),
            pickle_string("cpu"),
            pickle_int(numel),
            b"tQ",
            pickle_int(0),
            pickle_tuple(shape),
            pickle_tuple(stride),
            b"\x89}tR",
        ]
    )


def pickle_dict(records: Sequence[bytes]) -> bytes:
    """``{0x80, 2, '}', '('}`` + the records + ``'u'`` (SETITEMS) + ``'.'`` (STOP): a plain dict, no memo."""
    return b"\x80\x02}(" + b"".join(records) + b"u."


def write_zip(entries: Sequence[tuple[str, bytes]]) -> bytes:
    """``write_zip``'s bytes for ``entries`` in the given order."""
    if len(entries) > U16_MAX:
        raise RuntimeError("too many checkpoint entries")
    out = bytearray()
    central = bytearray()
    for name, data in entries:
        raw_name = name.encode("utf-8")
        if len(data) > U32_MAX or len(out) > U32_MAX or len(raw_name) > U16_MAX:
            raise RuntimeError("checkpoint exceeds non-ZIP64 limits")
        crc = zlib.crc32(data) & U32_MAX
        offset = len(out)
        out += u32(0x04034B50) + u16(20) + u16(0) + u16(0) + u16(0) + u16(0)
        out += u32(crc) + u32(len(data)) + u32(len(data)) + u16(len(raw_name)) + u16(0)
        out += raw_name + data
        central += u32(0x02014B50) + u16(20) + u16(20) + u16(0) + u16(0) + u16(0) + u16(0)
        central += u32(crc) + u32(len(data)) + u32(len(data)) + u16(len(raw_name)) + u16(0) + u16(0)
        central += u16(0) + u16(0) + u32(0) + u32(offset) + raw_name
    central_offset = len(out)
    out += central
    out += u32(0x06054B50) + u16(0) + u16(0) + u16(len(entries)) + u16(len(entries))
    out += u32(len(central)) + u32(central_offset) + u16(0)
    return bytes(out)


class Zeros:
    """``n`` zero bytes of an entry, written as a hole by :func:`write_zip_file` (a 512 MiB State costs no disk)."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __len__(self) -> int:
        return self.n

    def crc32(self) -> int:
        crc, block, left = 0, bytes(1 << 24), self.n
        while left:
            step = min(left, len(block))
            crc = zlib.crc32(block[:step], crc)
            left -= step
        return crc & U32_MAX


def write_zip_file(path: str | os.PathLike[str], entries: Sequence[tuple[str, bytes | Zeros]]) -> int:
    """The bytes of :func:`write_zip` for ``entries`` written to ``path``, a :class:`Zeros` entry as a hole;
    returns the file's size."""
    central = bytearray()
    with open(path, "wb") as f:
        for name, data in entries:
            raw_name = name.encode("utf-8")
            offset = f.tell()
            if len(data) > U32_MAX or offset > U32_MAX or len(raw_name) > U16_MAX:
                raise RuntimeError("checkpoint exceeds non-ZIP64 limits")
            crc = data.crc32() if isinstance(data, Zeros) else zlib.crc32(data) & U32_MAX
            f.write(u32(0x04034B50) + u16(20) + u16(0) + u16(0) + u16(0) + u16(0))
            f.write(u32(crc) + u32(len(data)) + u32(len(data)) + u16(len(raw_name)) + u16(0) + raw_name)
            if isinstance(data, Zeros):
                f.seek(data.n, os.SEEK_CUR)
            else:
                f.write(data)
            central += u32(0x02014B50) + u16(20) + u16(20) + u16(0) + u16(0) + u16(0) + u16(0)
            central += u32(crc) + u32(len(data)) + u32(len(data)) + u16(len(raw_name)) + u16(0) + u16(0)
            central += u16(0) + u16(0) + u32(0) + u32(offset) + raw_name
        central_offset = f.tell()
        f.write(central)
        f.write(u32(0x06054B50) + u16(0) + u16(0) + u16(len(entries)) + u16(len(entries)))
        f.write(u32(len(central)) + u32(central_offset) + u16(0))
        return f.tell()
