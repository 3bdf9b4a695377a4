"""The one reader of the zip container of torch checkpoints: strict, so that every zip reader reads it alike.

Reads the end records (plain and zip64), the central directory, every local header and data
descriptor itself, without :mod:`zipfile` and without decompressing anything, so that every offset
and size is checked against the file before it is used. Local files (:class:`rwkv_registry.formats.ckpt.FileSource`,
``MemorySource``) and the Hub's Range reads (``_hub_http.RemoteFile``, whose prefetch plan is made from
:func:`read_central_directory`) go through the same code.

Accepted is what the two producers write, and nothing another zip reader could read differently:

- torch.save (``caffe2/serialize/inline_container.cc``, ``PyTorchStreamWriter::writeRecord`` over miniz
  ``mz_zip_writer_add_mem_ex_v2``): local headers with flags 0x0808 (0x0800 for an empty record), sizes and
  CRC 0, one ``FB`` extra field of ``Z`` bytes padding the data to 64 bytes (``detail::getPadding``), a zip64
  extra field (sizes, then offset) only past 4 GiB; a data descriptor ``PK\\x07\\x08`` + CRC + sizes after
  each non-empty record (64-bit sizes when the local header has a zip64 field); central headers without
  extra field (zip64 only past 4 GiB) or comment; zip64 end record (44 bytes), locator, end record, no comment;
  "version needed to extract" 0 in every local and central header, zip64 or not
  (``mz_zip_writer_create_local_dir_header`` and ``mz_zip_writer_create_central_dir_header``:
  ``MZ_WRITE_LE16(... VERSION_NEEDED_OFS, method ? 20 : 0)``; only the zip64 end record says 45);
- rwkv_lightning_cuda (``src/io/pth_writer.cpp`` and ``src/state_tuning/state_checkpoint.cpp``, ``write_zip``):
  version 20 (made by and needed), no flags, CRC and sizes in the local header, no extra field, no descriptor,
  no zip64;
- Python's :mod:`zipfile` (what rewrites or appends to a file, and the tests): version needed 20
  (``DEFAULT_VERSION``), 45 for an entry with zip64 values (``ZIP64_VERSION``; ``ZipInfo.FileHeader``,
  ``ZipFile._write_end_record``).

What the other readers do, and why each rule is here:

- miniz (torch's reader, ``third_party/miniz-3.0.2``, ``mz_zip_reader_locate_header_sig``) and
  rwkv_lightning_cuda's ``PthArchive::open`` (``src/io/pth_archive.cpp``, ``find_eocd``) take the *last*
  end-record signature at or before the file's last 22 bytes; Python's :mod:`zipfile` takes the last 22
  bytes when they are an end record without comment. The end record must therefore be the last 22 bytes,
  without comment (PTH014): then all three read the same one.
- miniz looks names up with ``mz_zip_reader_locate_file(..., flags=0)``: a binary search over the names sorted
  case-insensitively (``MZ_TOLOWER``, ASCII only), returning whichever equal name it meets first;
  ``PthArchive::find_entry`` compares exactly and takes the first in directory order. Names equal but for
  ASCII case are refused (PTH015), exact duplicates too (PTH008).
- miniz (``mz_zip_file_stat_internal``) and ``PthArchive`` (``apply_zip64_extra``) use the first zip64 extra
  field of an entry; other readers the last: a tag repeated in one extra field is refused (PTH016).
- miniz and ``PthArchive`` locate data by the local header's name and extra lengths and the directory's
  sizes, and ignore every byte they are not pointed at: the file must be exactly the entries (local header,
  name, extra, data, descriptor when flagged) in order, then the central directory, the zip64 records and
  the end record (PTH017 for a byte no record owns: a gap, a descriptor where none is flagged, a comment, an
  extra field torch does not write), and the local header and descriptor must agree with the directory on
  name, flags, method, CRC and sizes (PTH018).
- Python's :mod:`zipfile` refuses an entry whose "version needed to extract" (its low byte) is above 63
  (``_RealGetContents``: ``if x.extract_version > MAX_EXTRACT_VERSION: raise NotImplementedError``); miniz and
  ``PthArchive`` never read the field. Only the producers' values are accepted: 0 or 20, and 45 for an entry whose
  central header gives zip64 values, in the central and the local header alike, high byte 0 (PTH022).

Rule codes raised (:class:`rwkv_registry.core.errors.CheckpointError`): PTH001 structure broken or truncated,
PTH008 undecodable or duplicate entry name, PTH010 resource bound, PTH011 unsupported zip feature, PTH014
end record not at the end, PTH015 names equal but for case, PTH016 repeated extra field, PTH017 bytes no
record owns, PTH018 local header or descriptor disagreeing with the directory, PTH022 a "version needed to
extract" no producer writes.

Public functions (stable; other modules and the differential harness use them): :func:`read_zip`,
:func:`read_central_directory`, :class:`ZipEntry`, :class:`CentralEntry`, :class:`CentralDirectory`.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from rwkv_registry.core.errors import CheckpointError
from rwkv_registry.core.textsafe import clip
from rwkv_registry.formats.rules import refusal

__all__ = [
    "DESCRIPTOR_MAX",
    "LOCAL_HEADER_SIZE",
    "MAX_CENTRAL_DIR",
    "MAX_ENTRIES",
    "CentralDirectory",
    "CentralEntry",
    "ZipEntry",
    "read_central_directory",
    "read_zip",
]

MAX_ENTRIES = 10_000
MAX_CENTRAL_DIR = 16 * 1024 * 1024
LOCAL_HEADER_SIZE = 30
DESCRIPTOR_MAX = 24  # the largest data descriptor (signature, CRC, 64-bit sizes)

_EOCD = struct.Struct("<4sHHHHIIH")  # end of central directory record, 22 bytes
_LOCATOR = struct.Struct("<4sIQI")  # zip64 end of central directory locator, 20 bytes
_EOCD64 = struct.Struct("<4sQHHIIQQQQ")  # zip64 end of central directory record, 56 bytes
_CENTRAL = struct.Struct("<4sHHHHHHIIIHHHHHII")  # central directory header, 46 bytes
_LOCAL = struct.Struct("<4sHHHHHIIIHH")  # local file header, 30 bytes
_DESCRIPTOR32 = struct.Struct("<4sIII")  # data descriptor with 32-bit sizes (miniz: 16 bytes)
_DESCRIPTOR64 = struct.Struct("<4sIQQ")  # data descriptor with 64-bit sizes (miniz: 24 bytes)

_SIG_EOCD = b"PK\x05\x06"
_SIG_LOCATOR = b"PK\x06\x07"
_SIG_EOCD64 = b"PK\x06\x06"
_SIG_CENTRAL = b"PK\x01\x02"
_SIG_LOCAL = b"PK\x03\x04"
_SIG_DESCRIPTOR = b"PK\x07\x08"

_U16_MAX = 0xFFFF
_U32_MAX = 0xFFFFFFFF
_EOCD64_BODY = _EOCD64.size - 12  # the size field torch (miniz) writes: 44, no extensible data
_FLAG_ENCRYPTED = 0x0001
_FLAG_STRONG_ENCRYPTION = 0x0040
_FLAG_MASKED_HEADER = 0x2000
_FLAG_PATCHED = 0x0020  # "compressed patched data": miniz (torch's reader) refuses it
_FLAG_DATA_DESCRIPTOR = 0x0008
_ATTR_DOS_DIRECTORY = 0x10
_EXTRA_ZIP64 = 0x0001
_EXTRA_PADDING = 0x4246  # b"FB": torch's alignment padding (inline_container.cc, detail::getPadding)
_PADDING_BYTE = ord("Z")  # what getPadding fills the padding with
_EXTRA_ENCRYPTION = {0x0017: "strong encryption header", 0x9901: "AES encryption"}
_EXTRA_NAMES = {
    0x000A: "NTFS times",
    0x5455: "extended timestamp",
    0x6375: "Info-ZIP Unicode comment",
    0x7075: "Info-ZIP Unicode path (a reader honouring it sees another name)",
    0x7875: "Unix UID/GID",
}
# "version needed to extract" (a 16-bit field: the version in the low byte, a host system in the high one) as the
# producers write it: 0 (torch: miniz ``method ? 20 : 0``), 20 (rwkv_lightning_cuda ``write_zip``: ``u16(out, 20)``;
# Python's zipfile ``DEFAULT_VERSION``) and, for an entry with zip64 values only, 45 (zipfile ``ZIP64_VERSION``)
_VERSIONS_NEEDED = frozenset({0, 20})
_VERSION_NEEDED_ZIP64 = 45
_MAX_EXTRACT_VERSION = 63  # zipfile.MAX_EXTRACT_VERSION: above it, zipfile refuses to open the archive
_METHODS = {8: "deflate", 9: "deflate64", 12: "bzip2", 14: "lzma", 93: "zstd", 95: "xz", 99: "AES-encrypted"}
_DIAGNOSE_TAIL = _EOCD.size + _U16_MAX + _LOCATOR.size  # how far back miniz and PthArchive look


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


@dataclass(frozen=True)
class CentralEntry:
    """One central directory header, zip64 values applied; nothing of its local header is known yet."""

    name: str
    raw: bytes  # the name as stored
    index: int
    flags: int
    method: int
    crc32: int
    compressed_size: int
    size: int  # uncompressed size
    header_offset: int
    disk: int
    attrs: int  # external file attributes
    encryption: str  # an encryption extra field's name, "" if none
    zip64_fields: tuple[str, ...] = ()  # the header fields given in its zip64 extra field: usize, csize, offset
    version_needed: int = 0  # "version needed to extract", the whole 16-bit field


@dataclass(frozen=True)
class CentralDirectory:
    """Where the central directory is and what it lists; ``end`` is where it must end (the zip64 end record,
    or the end record when there is none)."""

    offset: int
    size: int
    end: int
    entries: tuple[CentralEntry, ...]


def _q(name: str) -> str:
    """An entry name as a message quotes it: ``repr`` of at most ~200 characters of it (a name may be 65,535)."""
    return repr(clip(name))


def _fail(code: str, message: str) -> CheckpointError:
    return refusal(code, message)


# --- end records -------------------------------------------------------------------------------


def _end_record(src: _Source) -> tuple[int, tuple]:
    """The end record: the file's last 22 bytes, without comment (PTH014 otherwise)."""
    size = src.size
    if size < _EOCD.size:
        raise _fail("PTH001", f"file of {size} bytes is too short to be a zip archive (truncated?)")
    at = size - _EOCD.size
    last = bytes(src.read(at, _EOCD.size))
    if last[:4] == _SIG_EOCD:
        record = _EOCD.unpack(last)
        if record[7] == 0:
            return at, record
        raise _fail(
            "PTH014",
            f"the end record (offset {at}) declares a {record[7]}-byte comment, but it is the file's last 22 bytes: "
            "a comment torch never writes, whose length lies",
        )
    tail_len = min(size, _DIAGNOSE_TAIL)
    tail = bytes(src.read(size - tail_len, tail_len))
    pos = tail.rfind(_SIG_EOCD, 0, tail_len - _EOCD.size + len(_SIG_EOCD))
    if pos < 0:
        raise _fail("PTH001", "no end-of-central-directory record: the file is truncated or not a zip archive")
    found = size - tail_len + pos
    record = _EOCD.unpack_from(tail, pos)
    after = size - found - _EOCD.size
    what = "its comment" if record[7] == after else f"a comment declared as {record[7]} bytes, or appended data"
    raise _fail(
        "PTH014",
        f"{after} bytes follow the last end record (offset {found}): {what}; torch.save and rwkv_lightning_cuda "
        "end the file with the end record, and zip readers disagree on which record such a file has",
    )


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
    if rec[1] < _EOCD64_BODY or rec_pos + 12 + rec[1] != loc_pos:  # no bytes hidden before the locator
        raise _fail(
            "PTH001",
            f"zip64 end record at offset {rec_pos} declares size {rec[1]}, but the locator follows at {loc_pos}",
        )
    if rec[1] != _EOCD64_BODY:  # the "extensible data sector": no reader interprets it
        raise _fail(
            "PTH017",
            f"the zip64 end record at offset {rec_pos} carries {rec[1] - _EOCD64_BODY} bytes of extensible data "
            "(torch writes none; no reader reads them)",
        )
    return (rec_pos, *rec[4:])  # (pos, disk, cd_disk, n_disk, n_total, cd_size, cd_offset)


def _directory_bounds(src: _Source) -> tuple[int, int, int, int]:
    """(directory offset, size, entry count, end), cross-checked between plain and zip64 records."""
    eocd_pos, (_, disk, cd_disk, n_disk, n_total, cd_size, cd_offset, _) = _end_record(src)
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
        # miniz reads the zip64 values whenever the records are there; PthArchive only where a plain value is the
        # sentinel: the two must agree
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
    return cd_offset, cd_size, n_total, end


# --- extra fields ------------------------------------------------------------------------------


def _extra_fields(extra: bytes, where: str) -> dict[int, bytes]:
    """The fields of one extra area, tag -> body; each tag once (PTH016), the fields filling it exactly."""
    fields: dict[int, bytes] = {}
    pos = 0
    while pos < len(extra):
        if pos + 4 > len(extra):
            raise _fail("PTH001", f"{where}: {len(extra) - pos} bytes at the end of its extra field are no field")
        tag, length = struct.unpack_from("<HH", extra, pos)
        body = extra[pos + 4 : pos + 4 + length]
        if len(body) != length:
            raise _fail("PTH001", f"{where}: extra field 0x{tag:04x} runs past its header")
        if tag in fields:
            raise _fail(
                "PTH016",
                f"{where}: extra field 0x{tag:04x} appears twice (miniz and rwkv_lightning_cuda read the first "
                "copy, other readers the last)",
            )
        fields[tag] = body
        pos += 4 + length
    return fields


def _not_torch_extra(where: str, tag: int) -> CheckpointError:
    name = _EXTRA_NAMES.get(tag, "unknown")
    return _fail("PTH017", f"{where}: extra field 0x{tag:04x} ({name}) is not one torch writes")


def _central_zip64(fields: dict[int, bytes], need: list[str], name: str) -> dict[str, int]:
    """The zip64 values of one central header: exactly the fields whose 32-bit value is the sentinel, in the
    order uncompressed size, compressed size, local header offset (miniz ``mz_zip_file_stat_internal``)."""
    body = fields.get(_EXTRA_ZIP64)
    if body is None:
        if need:
            raise _fail("PTH001", f"entry {_q(name)} needs zip64 values ({', '.join(need)}) but has none")
        return {}
    if not need:
        raise _fail(
            "PTH017",
            f"entry {_q(name)}: a zip64 extra field of {len(body)} bytes where no header field is 0xFFFFFFFF "
            "(no reader reads it)",
        )
    found: dict[str, int] = {}
    for q, field in enumerate(need):
        if 8 * q + 8 > len(body):
            raise _fail("PTH001", f"entry {_q(name)}: zip64 extra field lacks the {field}")
        found[field] = int.from_bytes(body[8 * q : 8 * q + 8], "little")
    if len(body) != 8 * len(need):
        raise _fail(
            "PTH017",
            f"entry {_q(name)}: its zip64 extra field holds {len(body) - 8 * len(need)} bytes past the values it "
            "needs (no reader reads them)",
        )
    return found


# --- the central directory ---------------------------------------------------------------------


def _check_version_needed(value: int, c: CentralEntry, where: str) -> None:
    """``value`` (a local or central "version needed to extract") must be one the producers write (PTH022)."""
    if value in _VERSIONS_NEEDED or (value == _VERSION_NEEDED_ZIP64 and c.zip64_fields):
        return
    low, high = value & 0xFF, value >> 8
    if low > _MAX_EXTRACT_VERSION:
        why = f"Python's zipfile refuses to open the archive (it reads versions up to {_MAX_EXTRACT_VERSION / 10:.1f})"
    elif value == _VERSION_NEEDED_ZIP64:
        why = "45 (zip64) on an entry without zip64 values"
    elif high:
        why = f"a host system {high} in its high byte"
    else:
        why = "a value no writer of weight files gives"
    raise _fail(
        "PTH022",
        f"{where} says version {low / 10:.1f} (0x{value:04x}) is needed to extract it: {why}; torch writes 0, "
        "rwkv_lightning_cuda and Python's zipfile 20 (45 with zip64 values)",
    )


def _check_features(c: CentralEntry) -> None:
    """Refuse what torch never writes: encryption, compression, other disks (PTH011)."""
    name = c.name
    if c.flags & (_FLAG_ENCRYPTED | _FLAG_STRONG_ENCRYPTION | _FLAG_MASKED_HEADER) or c.encryption:
        how = c.encryption or f"flags 0x{c.flags:04x}"
        raise _fail("PTH011", f"entry {_q(name)} is encrypted ({how})")
    if c.flags & _FLAG_PATCHED:
        raise _fail("PTH011", f"entry {_q(name)} holds patched data (flags 0x{c.flags:04x})")
    if c.attrs & _ATTR_DOS_DIRECTORY:  # miniz (torch's reader) then extracts nothing for it
        raise _fail("PTH011", f"entry {_q(name)} is marked as a directory (attributes 0x{c.attrs:08x})")
    if c.method != 0:
        what = _METHODS.get(c.method, "unknown")
        raise _fail("PTH011", f"entry {_q(name)} is compressed (method {c.method}, {what}); torch stores entries")
    if c.disk != 0:
        raise _fail("PTH011", f"entry {_q(name)} starts on disk {c.disk} (multi-disk zip)")
    if c.compressed_size != c.size:
        raise _fail("PTH001", f"stored entry {_q(name)} has compressed size {c.compressed_size} != size {c.size}")
    _check_version_needed(c.version_needed, c, f"the central header of {_q(name)}")


def _central_entries(cd: bytes, n_total: int) -> list[CentralEntry]:
    """Parse the central directory (structure, names and extra fields; features are checked later)."""
    out: list[CentralEntry] = []
    seen: set[str] = set()
    folded: dict[bytes, str] = {}
    pos = 0
    for index in range(n_total):
        if pos + _CENTRAL.size > len(cd):
            raise _fail("PTH001", f"central directory ends inside entry #{index}")
        (sig, _made, needed, flags, method, _t, _d, crc, csize, usize, nlen, elen, clen, disk, _ia, attrs, offset) = (
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
            raise _fail("PTH008", f"entry #{index} has a name that is not UTF-8: {clip(repr(raw))}") from None
        if disk == _U16_MAX:  # the disk number moved to a zip64 field: miniz (torch's reader) refuses that
            raise _fail("PTH011", f"entry {_q(name)} has its disk number in a zip64 field (multi-disk zip)")
        fields = _extra_fields(extra, f"entry {_q(name)}")
        encryption = next((_EXTRA_ENCRYPTION[t] for t in fields if t in _EXTRA_ENCRYPTION), "")
        for tag in fields:
            if tag != _EXTRA_ZIP64 and tag not in _EXTRA_ENCRYPTION:
                raise _not_torch_extra(f"entry {_q(name)}", tag)
        need = [f for f, v in (("usize", usize), ("csize", csize), ("offset", offset)) if v == _U32_MAX]
        wide = _central_zip64(fields, need, name)
        usize, csize, offset = wide.get("usize", usize), wide.get("csize", csize), wide.get("offset", offset)
        if name in seen:
            raise _fail("PTH008", f"entry name {_q(name)} appears twice in the central directory")
        other = folded.get(raw.lower())  # bytes.lower: ASCII only, as miniz's MZ_TOLOWER
        if other is not None:
            raise _fail(
                "PTH015",
                f"entry names {_q(other)} and {_q(name)} differ only in case: torch (miniz) looks names up "
                "ignoring case and may read either for both, rwkv_lightning_cuda reads the exact one",
            )
        if clen:
            raise _fail("PTH017", f"entry {_q(name)} carries a {clen}-byte comment (torch writes none)")
        seen.add(name)
        folded[raw.lower()] = name
        out.append(
            CentralEntry(
                name, raw, index, flags, method, crc, csize, usize, offset, disk, attrs, encryption, tuple(wide), needed
            )
        )
        pos = end
    if pos != len(cd):
        raise _fail("PTH017", f"{len(cd) - pos} unexplained bytes at the end of the central directory")
    return out


def read_central_directory(src: _Source) -> CentralDirectory:
    """The end records and the central directory of ``src``, checked (PTH001, PTH008, PTH010, PTH011, PTH014 to
    PTH017); nothing before the directory is read. The Hub's prefetch plan is made from this."""
    cd_offset, cd_size, n_total, end = _directory_bounds(src)
    cd = bytes(src.read(cd_offset, cd_size))
    return CentralDirectory(cd_offset, cd_size, end, tuple(_central_entries(cd, n_total)))


# --- local headers and layout ------------------------------------------------------------------


def _local_zip64(fields: dict[int, bytes], c: CentralEntry, where: str) -> bool:
    """Check the local zip64 field against the directory; whether there is one (then the descriptor is 64-bit).

    miniz writes it when the size or the header offset reaches 0xFFFFFFFF, exactly when the central header gives
    them as zip64 values: the uncompressed size and the compressed size (still 0 when the header is written), then
    the header offset."""
    body = fields.get(_EXTRA_ZIP64)
    big_size, big_offset = "usize" in c.zip64_fields, "offset" in c.zip64_fields
    if body is None:
        return False
    if not (big_size or big_offset):
        raise _fail(
            "PTH017", f"{where}: a zip64 extra field though the directory gives neither its size nor its offset so"
        )
    expected = (16 if big_size else 0) + (8 if big_offset else 0)
    if len(body) != expected:
        raise _fail("PTH018", f"{where}: its zip64 extra field holds {len(body)} bytes, the entry needs {expected}")
    q = 0
    if big_size:
        usize, csize = struct.unpack_from("<QQ", body, 0)
        if usize != c.size or csize not in (0, c.size):
            raise _fail("PTH018", f"{where}: its zip64 sizes ({usize}, {csize}) disagree with the directory ({c.size})")
        q = 16
    if big_offset:
        (at,) = struct.unpack_from("<Q", body, q)
        if at != c.header_offset:
            raise _fail("PTH018", f"{where}: its zip64 offset {at} is not where it is ({c.header_offset})")
    return True


def _local_extra(extra: bytes, c: CentralEntry) -> bool:
    """Check a local header's extra field: torch's ``FB`` padding of ``Z`` bytes and a zip64 field, each once."""
    where = f"local header of {_q(c.name)}"
    fields = _extra_fields(extra, where)
    for tag, body in fields.items():
        if tag == _EXTRA_PADDING:
            if body.count(_PADDING_BYTE) != len(body):
                raise _fail(
                    "PTH017",
                    f"{where}: its FB padding field holds bytes other than torch's 'Z' filler ({body[:16]!r})",
                )
        elif tag in _EXTRA_ENCRYPTION:
            raise _fail("PTH011", f"entry {_q(c.name)} is encrypted ({_EXTRA_ENCRYPTION[tag]}, local header)")
        elif tag != _EXTRA_ZIP64:
            raise _not_torch_extra(where, tag)
    return _local_zip64(fields, c, where)


def _local_entry(src: _Source, c: CentralEntry, cd_offset: int) -> tuple[ZipEntry, int]:
    """Check the local header of ``c`` against it; the entry and the size of the descriptor that must follow."""
    name, raw, offset, size = c.name, c.raw, c.header_offset, c.size
    head_len = LOCAL_HEADER_SIZE + len(raw)
    if offset + head_len > cd_offset:
        raise _fail("PTH001", f"local header of {_q(name)} at offset {offset} lies outside the data area")
    head = bytes(src.read(offset, head_len))
    sig, needed, lflags, method, _t, _d, lcrc, lcsize, lusize, nlen, elen = _LOCAL.unpack_from(head)
    if sig != _SIG_LOCAL:
        raise _fail("PTH001", f"no local header for {_q(name)} at offset {offset}")
    if head[LOCAL_HEADER_SIZE:] != raw or nlen != len(raw):
        raise _fail("PTH018", f"local header at offset {offset} names another entry than {_q(name)}")
    if lflags & (_FLAG_ENCRYPTED | _FLAG_STRONG_ENCRYPTION | _FLAG_MASKED_HEADER):
        raise _fail("PTH011", f"entry {_q(name)} is encrypted (local flags 0x{lflags:04x})")
    if lflags & _FLAG_PATCHED:
        raise _fail("PTH011", f"entry {_q(name)} holds patched data (local flags 0x{lflags:04x})")
    if method != 0:
        raise _fail("PTH011", f"entry {_q(name)} is compressed (local header method {method})")
    _check_version_needed(needed, c, f"the local header of {_q(name)}")
    if lflags != c.flags:
        raise _fail(
            "PTH018",
            f"local header of {_q(name)} has flags 0x{lflags:04x}, the directory 0x{c.flags:04x} (a reader that "
            "trusts the local header looks for a data descriptor where there is none, or misses one)",
        )
    data_offset = offset + head_len + elen
    if data_offset > cd_offset:
        raise _fail("PTH001", f"local header of {_q(name)} at offset {offset} lies outside the data area")
    zip64 = _local_extra(bytes(src.read(offset + head_len, elen)), c) if elen else False
    if data_offset + size > src.size:
        raise _fail(
            "PTH010",
            f"entry {_q(name)} declares {size} bytes at offset {data_offset}, beyond the end of the "
            f"file ({src.size} bytes)",
        )
    if data_offset + size > cd_offset:
        raise _fail("PTH001", f"data of entry {_q(name)} overlaps the central directory")
    described = bool(lflags & _FLAG_DATA_DESCRIPTOR)
    values = (("CRC", lcrc, c.crc32), ("compressed size", lcsize, size), ("size", lusize, size))
    for what, local, in_dir in values:
        # with a descriptor the local values may be 0 (torch, zipfile); 0xFFFFFFFF stands for a zip64 size
        allowed = {in_dir} | ({0} if described else set()) | ({_U32_MAX} if what != "CRC" else set())
        if local not in allowed:
            raise _fail("PTH018", f"local header of {_q(name)} disagrees with the directory on its {what}")
    descriptor = (_DESCRIPTOR64.size if zip64 else _DESCRIPTOR32.size) if described else 0
    return ZipEntry(name, c.index, offset, data_offset, size, c.crc32, c.flags), descriptor


def _check_descriptor(src: _Source, entry: ZipEntry, width: int, cd_offset: int) -> None:
    """The data descriptor right after ``entry``'s data: signature, the directory's CRC and sizes."""
    at = entry.data_offset + entry.size
    if at + width > cd_offset:
        raise _fail("PTH001", f"the data descriptor of {_q(entry.name)} overlaps the central directory")
    raw = bytes(src.read(at, width))
    layout = _DESCRIPTOR64 if width == _DESCRIPTOR64.size else _DESCRIPTOR32
    sig, crc, csize, usize = layout.unpack(raw)
    if sig != _SIG_DESCRIPTOR:
        raise _fail(
            "PTH017",
            f"entry {_q(entry.name)} announces a data descriptor (flag 0x0008), but the {width} bytes after its data "
            f"(offset {at}) are none: {raw[:8]!r}",
        )
    if (crc, csize, usize) != (entry.crc32, entry.size, entry.size):
        raise _fail(
            "PTH018",
            f"the data descriptor of {_q(entry.name)} says CRC {crc:08x}, sizes {csize}/{usize}; the directory "
            f"{entry.crc32:08x}, {entry.size}",
        )


def read_zip(src: _Source, check_names: Callable[[list[str]], object] | None = None) -> list[ZipEntry]:
    """Parse and check a stored zip archive; entries in central-directory order.

    Checks, in order: the end records (the last 22 bytes, no comment; plain and zip64 agreeing), at most
    :data:`MAX_ENTRIES` entries, every central header (names unique even ignoring case, extra fields torch
    writes, no comment); then ``check_names`` on the entry names (before any feature check, so that a
    TorchScript or path-traversal archive is named as such); then every entry stored, unencrypted and on disk
    0; its local header where the directory says, agreeing with it (name, flags, method, CRC, sizes, zip64
    values) and carrying only torch's padding and zip64 fields; its data inside the file; and the layout: from
    byte 0, each local header, name, extra field, data and (when flagged) data descriptor, with nothing between
    or overlapping, up to the central directory. CRCs of the data are not checked here (the caller decides which
    entries to check).
    """
    directory = read_central_directory(src)
    central = directory.entries
    if check_names is not None:
        check_names([c.name for c in central])
    for c in central:
        _check_features(c)
    cd_offset = directory.offset
    located = [_local_entry(src, c, cd_offset) for c in central]
    cursor = 0
    previous: ZipEntry | None = None
    for entry, descriptor in sorted(located, key=lambda pair: pair[0].header_offset):
        _check_tiling(previous, cursor, entry.header_offset, _q(entry.name))
        if descriptor:
            _check_descriptor(src, entry, descriptor, cd_offset)
        cursor = entry.data_offset + entry.size + descriptor
        previous = entry
    _check_tiling(previous, cursor, cd_offset, "the central directory")
    return [entry for entry, _ in located]


def _check_tiling(previous: ZipEntry | None, cursor: int, start: int, what: str) -> None:
    """``start`` (the next local header, or the central directory) must be where the previous entry (and its
    descriptor) ends: bytes no entry explains (a pickle or a second archive hidden between entries, a polyglot's
    prefix) are PTH017, an entry starting inside another PTH001."""
    if start == cursor:
        return
    if previous is not None and start < cursor:
        raise _fail("PTH001", f"entries {_q(previous.name)} and {what} overlap")
    after = "the start of the file" if previous is None else f"entry {_q(previous.name)}"
    raise _fail("PTH017", f"{start - cursor} bytes between {after} and {what} belong to no entry (hidden data)")
