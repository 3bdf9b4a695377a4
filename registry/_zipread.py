"""Bounds-checked reader of the zip container of torch checkpoints.

Reads the end records (plain and zip64), the central directory and every local header
itself, without :mod:`zipfile` and without decompressing anything, so that every offset and
size is checked against the file before it is used. Only what torch and rwkv_lightning_cuda
write is accepted: stored (uncompressed), unencrypted, single-disk archives; zip64 records are
read (torch always writes them, and needs them past 4 GiB).

Rule codes raised (:class:`rwkv_registry.errors.CheckpointError`): PTH001 structure broken or
truncated, PTH008 undecodable or duplicate entry name, PTH010 resource bound, PTH011 unsupported
zip feature.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from rwkv_registry.errors import CheckpointError

__all__ = ["MAX_CENTRAL_DIR", "MAX_ENTRIES", "ZipEntry", "read_zip"]

MAX_ENTRIES = 10_000
MAX_CENTRAL_DIR = 16 * 1024 * 1024

_EOCD = struct.Struct("<4sHHHHIIH")  # end of central directory record, 22 bytes
_LOCATOR = struct.Struct("<4sIQI")  # zip64 end of central directory locator, 20 bytes
_EOCD64 = struct.Struct("<4sQHHIIQQQQ")  # zip64 end of central directory record, 56 bytes
_CENTRAL = struct.Struct("<4sHHHHHHIIIHHHHHII")  # central directory header, 46 bytes
_LOCAL = struct.Struct("<4sHHHHHIIIHH")  # local file header, 30 bytes

_SIG_EOCD = b"PK\x05\x06"
_SIG_LOCATOR = b"PK\x06\x07"
_SIG_EOCD64 = b"PK\x06\x06"
_SIG_CENTRAL = b"PK\x01\x02"
_SIG_LOCAL = b"PK\x03\x04"

_U16_MAX = 0xFFFF
_U32_MAX = 0xFFFFFFFF
_FLAG_ENCRYPTED = 0x0001
_FLAG_STRONG_ENCRYPTION = 0x0040
_FLAG_MASKED_HEADER = 0x2000
_FLAG_PATCHED = 0x0020  # "compressed patched data": miniz (torch's reader) refuses it
_FLAG_DATA_DESCRIPTOR = 0x0008
_DESCRIPTOR_SIZES = (12, 16, 20, 24)  # CRC and sizes (32- or 64-bit), with or without a signature
_ATTR_DOS_DIRECTORY = 0x10
_EXTRA_ZIP64 = 0x0001
_EXTRA_ENCRYPTION = {0x0017: "strong encryption header", 0x9901: "AES encryption"}
_METHODS = {8: "deflate", 9: "deflate64", 12: "bzip2", 14: "lzma", 93: "zstd", 95: "xz", 99: "AES-encrypted"}


class _Source(Protocol):
    size: int

    def read(self, offset: int, length: int) -> bytes | memoryview: ...


@dataclass(frozen=True)
class ZipEntry:
    """One stored entry: where its bytes are and what the central directory says of them."""

    name: str
    index: int  # position in the central directory
    header_offset: int  # offset of the local header
    data_offset: int  # offset of the first byte of the (stored) data
    size: int  # bytes (stored: compressed size == uncompressed size)
    crc32: int  # CRC-32 recorded in the central directory
    flags: int


def _fail(code: str, message: str) -> CheckpointError:
    return CheckpointError(code, message)


def _find_eocd(src: _Source) -> tuple[int, tuple]:
    """Locate the end record; its comment must run exactly to the end of the file."""
    size = src.size
    if size < _EOCD.size:
        raise _fail("PTH001", f"file of {size} bytes is too short to be a zip archive (truncated?)")
    last = bytes(src.read(size - _EOCD.size, _EOCD.size))
    if last[:4] == _SIG_EOCD and last[-2:] == b"\0\0":  # the usual case: no comment
        return size - _EOCD.size, _EOCD.unpack(last)
    tail_len = min(size, _EOCD.size + _U16_MAX)
    tail_start = size - tail_len
    tail = bytes(src.read(tail_start, tail_len))
    pos = tail.rfind(_SIG_EOCD, 0, tail_len - _EOCD.size + len(_SIG_EOCD))
    while pos >= 0:
        record = _EOCD.unpack_from(tail, pos)
        if pos + _EOCD.size + record[7] == tail_len:
            return tail_start + pos, record
        pos = tail.rfind(_SIG_EOCD, 0, pos + len(_SIG_EOCD) - 1)
    raise _fail("PTH001", "no end-of-central-directory record: the file is truncated or not a zip archive")


def _read_zip64(src: _Source, eocd_pos: int) -> tuple | None:
    """The zip64 end record if a locator sits right before the end record, else ``None``."""
    loc_pos = eocd_pos - _LOCATOR.size
    if loc_pos < 0:
        return None
    loc = _LOCATOR.unpack(bytes(src.read(loc_pos, _LOCATOR.size)))
    if loc[0] != _SIG_LOCATOR:
        return None
    _, disk, rec_pos, total_disks = loc
    if disk != 0 or total_disks != 1:  # miniz (torch's reader) insists on exactly one disk
        raise _fail("PTH011", f"multi-disk zip (zip64 locator: disk {disk}, {total_disks} disks)")
    if rec_pos + _EOCD64.size > loc_pos:
        raise _fail("PTH001", f"zip64 end record offset {rec_pos} lies outside the archive")
    rec = _EOCD64.unpack(bytes(src.read(rec_pos, _EOCD64.size)))
    if rec[0] != _SIG_EOCD64:
        raise _fail("PTH001", f"no zip64 end record at offset {rec_pos} where the locator points")
    if rec[1] < _EOCD64.size - 12 or rec_pos + 12 + rec[1] != loc_pos:  # no bytes hidden before the locator
        raise _fail(
            "PTH001",
            f"zip64 end record at offset {rec_pos} declares size {rec[1]}, but the locator follows at {loc_pos}",
        )
    return (rec_pos, *rec[4:])  # (pos, disk, cd_disk, n_disk, n_total, cd_size, cd_offset)


def _directory_bounds(src: _Source) -> tuple[int, int, int]:
    """(central directory offset, size, entry count), cross-checked between plain and zip64 records."""
    eocd_pos, (_, disk, cd_disk, n_disk, n_total, cd_size, cd_offset, _) = _find_eocd(src)
    z64 = _read_zip64(src, eocd_pos)
    if z64 is None:
        if disk != 0 or cd_disk != 0 or n_disk != n_total:
            raise _fail("PTH011", f"multi-disk zip (disk {disk}, directory on disk {cd_disk})")
        if cd_offset == _U32_MAX or cd_size == _U32_MAX:
            raise _fail("PTH001", "end record needs zip64 values but no zip64 locator precedes it")
        end = eocd_pos
    else:
        end, z_disk, z_cd_disk, z_n_disk, z_n_total, z_cd_size, z_cd_offset = z64
        if z_disk != 0 or z_cd_disk != 0 or z_n_disk != z_n_total:
            raise _fail("PTH011", f"multi-disk zip (zip64 record: disk {z_disk}, directory on disk {z_cd_disk})")
        pairs = (
            ("disk number", disk, 0, _U16_MAX),
            ("directory disk", cd_disk, 0, _U16_MAX),
            ("entry count", n_total, z_n_total, _U16_MAX),
            ("entry count on disk", n_disk, z_n_total, _U16_MAX),
            ("directory size", cd_size, z_cd_size, _U32_MAX),
            ("directory offset", cd_offset, z_cd_offset, _U32_MAX),
        )
        for what, plain, wide, sentinel in pairs:
            if plain not in (wide, sentinel):
                raise _fail("PTH001", f"end record {what} {plain} disagrees with the zip64 record ({wide})")
        n_total, cd_size, cd_offset = z_n_total, z_cd_size, z_cd_offset
    if n_total > MAX_ENTRIES:
        raise _fail("PTH010", f"archive declares {n_total} entries (limit {MAX_ENTRIES})")
    if cd_size > MAX_CENTRAL_DIR:
        raise _fail("PTH010", f"central directory of {cd_size} bytes (limit {MAX_CENTRAL_DIR})")
    if cd_offset + cd_size != end:
        raise _fail(
            "PTH001",
            f"central directory at offset {cd_offset} of {cd_size} bytes does not end where the end "
            f"record starts ({end}): truncated, prefixed or corrupt archive",
        )
    return cd_offset, cd_size, n_total


def _zip64_values(extra: bytes, need: list[str], name: str) -> tuple[dict[str, int], str]:
    """Read the zip64 extra field of one central header; also name any encryption extra found."""
    found: dict[str, int] = {}
    encryption = ""
    pos = 0
    while pos + 4 <= len(extra):
        tag, length = struct.unpack_from("<HH", extra, pos)
        body = extra[pos + 4 : pos + 4 + length]
        if len(body) != length:
            raise _fail("PTH001", f"entry {name!r}: extra field 0x{tag:04x} runs past its header")
        encryption = encryption or _EXTRA_ENCRYPTION.get(tag, "")
        if tag == _EXTRA_ZIP64 and need:
            q = 0
            for field in need:
                width = 4 if field == "disk" else 8
                if q + width > length:
                    raise _fail("PTH001", f"entry {name!r}: zip64 extra field lacks the {field}")
                found[field] = int.from_bytes(body[q : q + width], "little")
                q += width
        pos += 4 + length
    missing = [f for f in need if f not in found]
    if missing:
        raise _fail("PTH001", f"entry {name!r} needs zip64 values ({', '.join(missing)}) but has none")
    return found, encryption


@dataclass(frozen=True)
class _Central:
    name: str
    raw: bytes
    flags: int
    method: int
    crc: int
    csize: int
    usize: int
    offset: int
    disk: int
    encryption: str
    attrs: int  # external file attributes

    def check_features(self) -> None:
        """Refuse what torch never writes: encryption, compression, other disks (PTH011)."""
        name = self.name
        if self.flags & (_FLAG_ENCRYPTED | _FLAG_STRONG_ENCRYPTION | _FLAG_MASKED_HEADER) or self.encryption:
            how = self.encryption or f"flags 0x{self.flags:04x}"
            raise _fail("PTH011", f"entry {name!r} is encrypted ({how})")
        if self.flags & _FLAG_PATCHED:
            raise _fail("PTH011", f"entry {name!r} holds patched data (flags 0x{self.flags:04x})")
        if self.attrs & _ATTR_DOS_DIRECTORY:  # miniz (torch's reader) then extracts nothing for it
            raise _fail("PTH011", f"entry {name!r} is marked as a directory (attributes 0x{self.attrs:08x})")
        if self.method != 0:
            what = _METHODS.get(self.method, "unknown")
            raise _fail("PTH011", f"entry {name!r} is compressed (method {self.method}, {what}); torch stores entries")
        if self.disk != 0:
            raise _fail("PTH011", f"entry {name!r} starts on disk {self.disk} (multi-disk zip)")
        if self.csize != self.usize:
            raise _fail("PTH001", f"stored entry {name!r} has compressed size {self.csize} != size {self.usize}")


def _central_entries(cd: bytes, n_total: int) -> list[_Central]:
    """Parse the central directory (structure only; features are checked later)."""
    out: list[_Central] = []
    seen: set[str] = set()
    pos = 0
    for index in range(n_total):
        if pos + _CENTRAL.size > len(cd):
            raise _fail("PTH001", f"central directory ends inside entry #{index}")
        (sig, _made, _needed, flags, method, _t, _d, crc, csize, usize, nlen, elen, clen, disk, _ia, attrs, offset) = (
            _CENTRAL.unpack_from(cd, pos)
        )
        if sig != _SIG_CENTRAL:
            raise _fail("PTH001", f"bad central directory signature for entry #{index} at offset {pos}")
        end = pos + _CENTRAL.size + nlen + elen + clen
        if end > len(cd):
            raise _fail("PTH001", f"central directory entry #{index} runs past the directory")
        raw = cd[pos + _CENTRAL.size : pos + _CENTRAL.size + nlen]
        extra = cd[pos + _CENTRAL.size + nlen : pos + _CENTRAL.size + nlen + elen]
        try:
            name = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise _fail("PTH008", f"entry #{index} has a name that is not UTF-8: {raw!r}") from None
        need = [f for f, v in (("usize", usize), ("csize", csize), ("offset", offset)) if v == _U32_MAX]
        if disk == _U16_MAX:  # the disk number moved to a zip64 field: miniz (torch's reader) refuses that
            raise _fail("PTH011", f"entry {name!r} has its disk number in a zip64 field (multi-disk zip)")
        wide, encryption = _zip64_values(extra, need, name)
        usize, csize = wide.get("usize", usize), wide.get("csize", csize)
        offset, disk = wide.get("offset", offset), wide.get("disk", disk)
        if name in seen:
            raise _fail("PTH008", f"entry name {name!r} appears twice in the central directory")
        seen.add(name)
        out.append(_Central(name, raw, flags, method, crc, csize, usize, offset, disk, encryption, attrs))
        pos = end
    if pos != len(cd):
        raise _fail("PTH001", f"{len(cd) - pos} unexplained bytes at the end of the central directory")
    return out


def read_zip(src: _Source, check_names: Callable[[list[str]], object] | None = None) -> list[ZipEntry]:
    """Parse and bounds-check a stored zip archive; entries in central-directory order.

    Checks: end records found and consistent, at most :data:`MAX_ENTRIES` entries, then
    ``check_names`` on the entry names (before any feature check, so that a TorchScript or
    path-traversal archive is named as such), then every entry stored, unencrypted and on disk 0,
    its local header present where the directory says with the same name, its data inside the
    file and before the central directory, no two entries overlapping, and no bytes between
    entries that no entry (or its data descriptor) explains. CRCs are not checked
    here (the caller decides which entries to check).
    """
    cd_offset, cd_size, n_total = _directory_bounds(src)
    cd = bytes(src.read(cd_offset, cd_size))
    central = _central_entries(cd, n_total)
    if check_names is not None:
        check_names([c.name for c in central])
    for c in central:
        c.check_features()
    entries: list[ZipEntry] = []
    for index, c in enumerate(central):
        name, raw, flags, crc, size, offset = c.name, c.raw, c.flags, c.crc, c.usize, c.offset
        head_len = _LOCAL.size + len(raw)
        if offset + head_len > cd_offset:
            raise _fail("PTH001", f"local header of {name!r} at offset {offset} lies outside the data area")
        head = bytes(src.read(offset, head_len))
        sig, _needed, lflags, method, _t, _d, lcrc, lcsize, lusize, nlen, elen = _LOCAL.unpack_from(head)
        if sig != _SIG_LOCAL:
            raise _fail("PTH001", f"no local header for {name!r} at offset {offset}")
        if head[_LOCAL.size :] != raw or nlen != len(raw):
            raise _fail("PTH001", f"local header at offset {offset} names another entry than {name!r}")
        if lflags & (_FLAG_ENCRYPTED | _FLAG_STRONG_ENCRYPTION | _FLAG_MASKED_HEADER):
            raise _fail("PTH011", f"entry {name!r} is encrypted (local flags 0x{lflags:04x})")
        if lflags & _FLAG_PATCHED:
            raise _fail("PTH011", f"entry {name!r} holds patched data (local flags 0x{lflags:04x})")
        if method != 0:
            raise _fail("PTH011", f"entry {name!r} is compressed (local header method {method})")
        data_offset = offset + _LOCAL.size + nlen + elen
        if data_offset + size > src.size:
            raise _fail(
                "PTH010",
                f"entry {name!r} declares {size} bytes at offset {data_offset}, beyond the end of the "
                f"file ({src.size} bytes)",
            )
        if data_offset + size > cd_offset:
            raise _fail("PTH001", f"data of entry {name!r} overlaps the central directory")
        if not lflags & _FLAG_DATA_DESCRIPTOR:
            for what, local, in_dir in (("CRC", lcrc, crc), ("size", lcsize, size), ("size", lusize, size)):
                if local != in_dir and not (what == "size" and local == _U32_MAX):
                    raise _fail("PTH001", f"local header of {name!r} disagrees with the directory on its {what}")
        entries.append(ZipEntry(name, index, offset, data_offset, size, crc, flags))
    previous: ZipEntry | None = None
    for entry in sorted(entries, key=lambda e: e.header_offset):
        if previous is not None and previous.data_offset + previous.size > entry.header_offset:
            raise _fail("PTH001", f"entries {previous.name!r} and {entry.name!r} overlap")
        _check_gap(previous, entry.header_offset, repr(entry.name))
        previous = entry
    _check_gap(previous, cd_offset, "the central directory")
    return entries


def _check_gap(previous: ZipEntry | None, start: int, what: str) -> None:
    """Every byte before the central directory belongs to an entry: bytes no entry explains (a
    pickle or a second archive hidden between entries, a polyglot's prefix) are refused (PTH001).
    After an entry with a data descriptor (flag 0x08) the descriptor's 12 to 24 bytes are allowed."""
    end = 0 if previous is None else previous.data_offset + previous.size
    gap = start - end
    if gap == 0 or (previous is not None and previous.flags & _FLAG_DATA_DESCRIPTOR and gap in _DESCRIPTOR_SIZES):
        return
    after = "the start of the file" if previous is None else f"entry {previous.name!r}"
    raise _fail("PTH001", f"{gap} bytes between {after} and {what} belong to no entry (hidden data)")
