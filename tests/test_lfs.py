"""Git LFS pointer detection."""

from __future__ import annotations

import pytest

from rwkv_registry.formats.lfs import LfsPointer, looks_like_lfs_pointer, parse_lfs_pointer

OID = "4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393"
GOOD = f"version https://git-lfs.github.com/spec/v1\noid sha256:{OID}\nsize 12345\n".encode()


def test_parses_a_real_pointer():
    assert parse_lfs_pointer(GOOD) == LfsPointer(oid=OID, size=12345)


def test_accepts_extension_lines_crlf_and_missing_final_newline():
    ext = GOOD.replace(b"oid ", b"ext-0-foo sha256:" + b"1" * 64 + b"\noid ")
    assert parse_lfs_pointer(ext) == LfsPointer(OID, 12345)
    assert parse_lfs_pointer(GOOD.replace(b"\n", b"\r\n")) == LfsPointer(OID, 12345)
    assert parse_lfs_pointer(GOOD[:-1]) == LfsPointer(OID, 12345)


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"PK\x03\x04",
        GOOD.replace(b"spec/v1", b"spec/v2"),
        GOOD.replace(b"sha256:", b"sha1:"),
        GOOD.replace(OID.encode(), OID.upper().encode()),
        GOOD.replace(OID.encode(), OID[:-1].encode()),
        GOOD.replace(b"size 12345", b"size -1"),
        GOOD.replace(b"size 12345", b"size 012"),
        GOOD.replace(b"size 12345", b"size 1e3"),
        GOOD.replace(b"size 12345\n", b""),
        GOOD.replace(b"oid sha256:" + OID.encode() + b"\n", b""),
        GOOD + b"size 1\n",  # duplicate key
        GOOD + b"garbage\n",
        GOOD + b"\n" * 2,
        GOOD + b"x-pad " + b"a" * 1024 + b"\n",  # not under 1024 bytes
        GOOD.replace(b"size", b"\xffsize"),
    ],
    ids=lambda d: repr(d[:20]) + str(len(d)),
)
def test_rejects_malformed_pointers(data):
    assert parse_lfs_pointer(data) is None


def test_cheap_check_on_the_head_only():
    assert looks_like_lfs_pointer(GOOD[:60])
    assert looks_like_lfs_pointer(b"version https://git-lfs.github.com/spec/v9")
    assert not looks_like_lfs_pointer(b"PK\x03\x04\x00\x00")
    assert not looks_like_lfs_pointer(b"version 1")
    assert not looks_like_lfs_pointer(b"")
