"""Resource-exhaustion inputs: zip bombs, huge entry counts, sizes beyond the file, deep JSON, huge JSON.

Each :class:`Bomb` writes one file into a registry (over the State file, or over a JSON file of
the registry) and names the rule ``validate`` must report there. The validator must finish with
that finding using little memory: nothing here is ever decompressed, allocated at its declared
size, or parsed recursively. Used by tests/test_bounds.py and bench/fuzz.py (figures).
"""

from __future__ import annotations

import json
import struct
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from evil_cases import GOOD_STORAGE, GOOD_TENSOR, Member, tensor_dict, torch_members, zip_archive

__all__ = ["BOMBS", "STATE", "TRAIN", "Bomb", "place"]

TINY_BASE = "rwkv7-tiny-20260101-ctx4096"  # regtools.TINY_BASE (this module is also used outside pytest)
STATE = f"{TINY_BASE}/state/v1/s1.pth"
TRAIN = f"{TINY_BASE}/state/v1/train.json"
GIB = 1024**3


@dataclass(frozen=True)
class Bomb:
    """One resource-exhaustion input."""

    id: str
    title: str
    target: str  # registry-relative file it replaces
    code: str  # the rule validate reports on ``target``
    write: Callable[[Path], None]  # writes the file at the given path
    slow: bool = False


def _bytes(build: Callable[[], bytes]) -> Callable[[Path], None]:
    return lambda path: path.write_bytes(build())


def _deflate_bomb() -> bytes:
    # data.pkl deflated: 64 MiB of zeros in ~64 KB, declared as 4 GiB uncompressed
    members = torch_members(b"")
    pkl = members[0]
    raw = zlib.compressobj(9, zlib.DEFLATED, -15)
    packed = b"".join(raw.compress(bytes(1 << 20)) for _ in range(64)) + raw.flush()
    body = bytearray()
    central = bytearray()
    for m in members:
        data, method, usize = (packed, 8, 0xFFFFFFF0) if m is pkl else (m.data, 0, len(m.data))
        name = m.name.encode()
        offset = len(body)
        crc = zlib.crc32(m.data)
        body += struct.pack("<4sHHHHHIIIHH", b"PK\x03\x04", 20, 0, method, 0, 0, crc, len(data), usize, len(name), 0)
        body += name + data
        central += struct.pack("<4sHHHHHHIIIHHHHHII", b"PK\x01\x02", 20, 20, 0, method, 0, 0, crc, len(data),
                               usize, len(name), 0, 0, 0, 0, 0, offset)  # fmt: skip
        central += name
    n = len(members)
    return bytes(body + central + struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, n, n, len(central), len(body), 0))


def _overlap_bomb() -> bytes:
    # Fifield's non-recursive bomb: 2,000 central entries whose data all run over one shared
    # kernel, each local header inside the previous entry's data (a reader that extracts them
    # all reads the kernel 2,000 times)
    n = 2000
    kernel = bytes(64 * 1024)
    names = [f"archive/data/{i}".encode() for i in range(n)]
    heads = []
    pos = 0
    for name in names:
        heads.append(pos)
        pos += 30 + len(name)
    body = bytearray()
    central = bytearray()
    total = pos + len(kernel)
    crc = 0
    for name, head in zip(names, heads, strict=True):
        size = total - (head + 30 + len(name))
        body += struct.pack("<4sHHHHHIIIHH", b"PK\x03\x04", 20, 0, 0, 0, 0, crc, size, size, len(name), 0) + name
        central += struct.pack("<4sHHHHHHIIIHHHHHII", b"PK\x01\x02", 20, 20, 0, 0, 0, 0, crc, size, size,
                               len(name), 0, 0, 0, 0, 0, head) + name  # fmt: skip
    body += kernel
    return bytes(body + central + struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, n, n, len(central), len(body), 0))


def _many_entries(n: int = 100_000) -> bytes:
    # n real one-byte entries, counted in a zip64 end record (the plain one cannot hold 100,000)
    body = bytearray()
    central = bytearray()
    for k in range(n):
        name = f"archive/x{k}".encode()
        offset = len(body)
        crc = zlib.crc32(b"x")
        body += struct.pack("<4sHHHHHIIIHH", b"PK\x03\x04", 20, 0, 0, 0, 0, crc, 1, 1, len(name), 0) + name + b"x"
        central += struct.pack("<4sHHHHHHIIIHHHHHII", b"PK\x01\x02", 45, 45, 0, 0, 0, 0, crc, 1, 1, len(name), 0,
                               0, 0, 0, 0, offset) + name  # fmt: skip
    record = len(body) + len(central)
    tail = struct.pack("<4sQHHIIQQQQ", b"PK\x06\x06", 44, 45, 45, 0, 0, n, n, len(central), len(body))
    tail += struct.pack("<4sIQI", b"PK\x06\x07", 0, record, 1)
    tail += struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, 0xFFFF, 0xFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0)
    return bytes(body + central + tail)


def _huge_directory() -> bytes:
    # an end record declaring a 64 MiB central directory in front of itself (the file is 64 MiB)
    size = 64 * 1024 * 1024
    return b"PK\x03\x04" + bytes(size - 4) + struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, 9000, 9000, size, 0, 0)


def _zip64_size_beyond_file() -> bytes:
    # a stored storage whose zip64 extra field (central directory) declares 2**62 bytes
    from ckpt_hostile import Entry, build_zip

    pkl = tensor_dict([GOOD_TENSOR])
    data = build_zip([Entry("archive/data/0", GOOD_STORAGE["0"], zip64=True), Entry("archive/data.pkl", pkl),
                      Entry("archive/byteorder", b"little"), Entry("archive/version", b"3\n")])  # fmt: skip
    real = struct.pack("<HHQQQ", 1, 24, 8, 8, 0)
    at = data.rfind(real)  # the central copy (the local header has no extra field)
    return data[:at] + struct.pack("<HHQQQ", 1, 24, 2**62, 2**62, 0) + data[at + len(real) :]


def _miss_json_beyond_file() -> bytes:
    members = [*torch_members(tensor_dict([GOOD_TENSOR]), GOOD_STORAGE), Member("archive/miss.json", b"{}")]
    data = bytearray(zip_archive(members))
    cd = data.rfind(b"PK\x01\x02")  # the last central entry: miss.json
    struct.pack_into("<II", data, cd + 20, 2 * GIB, 2 * GIB)
    return bytes(data)


def _safetensors_beyond_file() -> bytes:
    header = json.dumps({"w": {"dtype": "F32", "shape": [2**40], "data_offsets": [0, 2**42]}}).encode()
    header += b" " * (-len(header) % 8)
    return struct.pack("<Q", len(header)) + header + bytes(8)


def _safetensors_header_length() -> bytes:
    return struct.pack("<Q", 99_999_992) + b"{" + bytes(7)


def _safetensors_spaces() -> bytes:
    # a header the safetensors library would read (under its 100,000,000 bytes): "{}" and 99 MB of spaces
    header = b"{}" + b" " * (99_999_990 - 2)
    return struct.pack("<Q", len(header)) + header


def _safetensors_empty_tensors() -> bytes:
    header = json.dumps({f"t{i}": {"dtype": "F32", "shape": [0], "data_offsets": [0, 0]} for i in range(200_000)})
    raw = header.encode() + b" " * (-len(header) % 8)
    return struct.pack("<Q", len(raw)) + raw


def _sums_long_path(path: Path) -> None:
    with open(path, "ab") as f:  # one more line: a path of 20 MB
        f.write(b"0" * 64 + b"  " + b"a" * (20 * 1024 * 1024) + b"\n")


def _deep_json(depth: int = 10_000) -> bytes:
    return ("[" * depth + "]" * depth).encode()


def _deep_safetensors_header() -> bytes:
    header = b'{"w": ' + _deep_json() + b"}"
    header += b" " * (-len(header) % 8)
    return struct.pack("<Q", len(header)) + header


def _deep_miss_json() -> bytes:
    members = torch_members(tensor_dict([GOOD_TENSOR]), GOOD_STORAGE)
    return zip_archive([*members, Member("archive/miss.json", _deep_json())])


def _write_huge_json(path: Path, size: int = 500 * 1024 * 1024) -> None:
    """A ~500 MB index.json of valid JSON (an object with a long array)."""
    chunk = b"0," * (4 << 20)
    with open(path, "wb") as f:
        f.write(b'{"schema_version": 1, "padding": [')
        written = 0
        while written < size:
            f.write(chunk)
            written += len(chunk)
        f.write(b"0]}\n")


BOMBS: dict[str, Bomb] = {
    b.id: b
    for b in [
        Bomb("deflate-bomb", "data.pkl deflated, 4 GiB declared (64 MiB of zeros in 64 KB)", STATE, "PTH011",
             _bytes(_deflate_bomb)),
        Bomb("overlap-bomb", "2,000 entries overlapping one 64 KB kernel (Fifield)", STATE, "PTH001",
             _bytes(_overlap_bomb)),
        Bomb("entries-100k", "100,000 real entries (zip64 end record)", STATE, "PTH010", _bytes(_many_entries)),
        Bomb("directory-64mib", "end record declaring a 64 MiB central directory", STATE, "PTH010",
             _bytes(_huge_directory)),
        Bomb("zip64-size-2e62", "storage declaring 2**62 bytes in its zip64 extra field", STATE, "PTH010",
             _bytes(_zip64_size_beyond_file)),
        Bomb("miss-json-2gib", "miss.json declaring 2 GiB in a 1 KB file", STATE, "PTH010",
             _bytes(_miss_json_beyond_file)),
        Bomb("safetensors-offsets", "safetensors tensor of 2**40 floats in 8 bytes", STATE, "PTH012",
             _bytes(_safetensors_beyond_file)),
        Bomb("safetensors-header-100mb", "safetensors header length of 100 MB in a 16-byte file", STATE, "PTH012",
             _bytes(_safetensors_header_length)),
        Bomb("safetensors-deep", "safetensors header nested 10,000 deep", STATE, "PTH012",
             _bytes(_deep_safetensors_header)),
        Bomb("safetensors-spaces-99mb", "safetensors header of '{}' and 99 MB of spaces", STATE, "PTH012",
             _bytes(_safetensors_spaces)),
        Bomb("safetensors-200k-empty", "safetensors header of 200,000 empty tensors", STATE, "PTH012",
             _bytes(_safetensors_empty_tensors)),
        Bomb("sums-path-20mb", "SHA256SUMS line whose path is 20 MB long", "SHA256SUMS", "HSH005", _sums_long_path),
        Bomb("miss-json-deep", "miss.json nested 10,000 deep", STATE, "MIS003", _bytes(_deep_miss_json)),
        Bomb("index-json-deep", "index.json nested 10,000 deep", "index.json", "SCH001", _bytes(_deep_json)),
        Bomb("train-json-deep", "train.json nested 10,000 deep", TRAIN, "SCH001", _bytes(_deep_json)),
        Bomb("index-json-500mb", "index.json of 500 MB (valid JSON)", "index.json", "LAY010", _write_huge_json,
             slow=True),
    ]
}  # fmt: skip


def place(bomb: Bomb, registry: Path) -> Path:
    """Write ``bomb`` over its target file in ``registry``; the path written."""
    path = registry / bomb.target
    bomb.write(path)
    return path
