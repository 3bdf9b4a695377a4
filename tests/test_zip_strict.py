"""The strict zip reader (issue 26): files that zip readers could read differently are refused, each class with
its own rule, and what the producers really write is still accepted.

The other readers are the oracle: torch.load (miniz; run here on the files) and rwkv_lightning_cuda's PthArchive
(src/io/pth_archive.cpp: the last end-record signature, exact names, the first zip64 field), whose rules are
cited in registry/formats/zipread.py. Hostile archives are built here byte by byte (struct) or from real torch.save
output; accepted ones come from torch.save itself and from tests/conformance/lightning_cpp.py (written from
src/io/pth_writer.cpp and src/state_tuning/state_checkpoint.cpp), never from registry/formats/pthwrite.py.
"""

from __future__ import annotations

import io
import math
import pickle
import struct
import sys
import warnings
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from ckpt_hostile import T, tensor_pickle

sys.path.insert(0, str(Path(__file__).parent / "conformance"))
sys.path.insert(0, str(Path(__file__).parent / "malicious"))

from evil_cases import (
    CASES,
    GOOD_STORAGE,
    GOOD_TENSOR,
    NAN_STORAGE,
    Member,
    good_archive,
    hide_in_comment,
    tensor_dict,
    torch_members,
    write_case,
    zip_archive,
)
from lightning_cpp import lightning_bytes, lightning_pickle
from lightning_cpp import write_zip as lightning_zip

from rwkv_registry.checks.catalogue import RULES
from rwkv_registry.core.errors import CheckpointError
from rwkv_registry.formats.ckpt import open_checkpoint
from rwkv_registry.hub.transport import Fetcher, RemoteFile

STATE_NAME = "blocks.0.att.time_state"


def refusal(data: bytes) -> tuple[str, str]:
    with pytest.raises(CheckpointError) as info:
        open_checkpoint(data)
    assert info.value.hint == RULES[info.value.code].hint
    return info.value.code, info.value.message


def torch_reads(data: bytes, **kw: object) -> dict:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return torch.load(io.BytesIO(data), weights_only=True, **kw)


def torch_save(tensors: dict[str, torch.Tensor], path: Path | None = None) -> bytes:
    if path is None:
        buf = io.BytesIO()
        torch.save(tensors, buf)
        return buf.getvalue()
    torch.save(tensors, path)
    return path.read_bytes()


def local_headers(data: bytes) -> dict[str, int]:
    """name -> offset of its local header, from the central directory of a torch.save file (zip64 records)."""
    eocd = len(data) - 22
    n, _, cd_offset = struct.unpack_from("<HII", data, eocd + 10)
    out: dict[str, int] = {}
    pos = cd_offset
    for _ in range(n):
        nlen, elen, clen = struct.unpack_from("<HHH", data, pos + 28)
        out[data[pos + 46 : pos + 46 + nlen].decode()] = struct.unpack_from("<I", data, pos + 42)[0]
        pos += 46 + nlen + elen + clen
    return out


def with_local_extra(data: bytes, name: str, make: Callable[[bytes], bytes]) -> bytes:
    """``data`` with the local extra field of ``name`` replaced by ``make(old)`` (same length: nothing moves)."""
    at = local_headers(data)[name]
    nlen, elen = struct.unpack_from("<HH", data, at + 26)
    start = at + 30 + nlen
    new = make(data[start : start + elen])
    assert len(new) == elen
    return data[:start] + new + data[start + elen :]


def padded_entry(data: bytes, minimum: int) -> str:
    """The name of an entry whose FB padding holds at least ``minimum`` bytes."""
    for name, at in local_headers(data).items():
        nlen, elen = struct.unpack_from("<HH", data, at + 26)
        extra = data[at + 30 + nlen : at + 30 + nlen + elen]
        if extra[:2] == b"FB" and struct.unpack_from("<H", extra, 2)[0] >= minimum:
            return name
    raise AssertionError(f"no padding of {minimum} bytes")


STATE = {STATE_NAME: torch.tensor([0.5, -0.25])}


# --- what the producers write is accepted ---------------------------------------------------------------------


def _sized(dtype: torch.dtype, numel: int, n: int = 1) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(numel)
    return {f"blocks.{i}.att.time_state": torch.randn(numel, generator=g).to(dtype) for i in range(n)}


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
@pytest.mark.parametrize("numel", [1, 63, 1000, 40_000, 70_000])
@pytest.mark.parametrize("where", ["path", "buffer"])
def test_torch_save_outputs_are_accepted(tmp_path: Path, dtype: torch.dtype, numel: int, where: str) -> None:
    """bf16 and fp32, from one element to past 64 KiB (the end-record search window), saved to a file (prefix: the
    file's stem) or a buffer (prefix: archive); what we read is what torch and Python's zipfile read."""
    tensors = _sized(dtype, numel, n=3)
    data = torch_save(tensors, tmp_path / "v141b-s1224.pth" if where == "path" else None)
    with open_checkpoint(data, verify_crc="all") as ckpt:
        assert ckpt.prefix == ("v141b-s1224" if where == "path" else "archive")
        loaded = torch_reads(data)
        zf = zipfile.ZipFile(io.BytesIO(data))
        assert ckpt.entry_names() == zf.namelist()
        for name, t in loaded.items():
            assert bytes(ckpt.tensor_bytes(name)) == t.view(torch.uint8).numpy().tobytes()
            info = ckpt.tensors[name]
            assert zf.read(f"{ckpt.prefix}/data/{info.storage_key}") == bytes(ckpt.tensor_bytes(name))


@pytest.mark.parametrize("prefix", ["a", "adapter-final", "my.weights", "state-step-00001224", "x" * 200])
def test_torch_save_prefix_names_are_accepted(tmp_path: Path, prefix: str) -> None:
    data = torch_save(_sized(torch.bfloat16, 4096), tmp_path / f"{prefix}.pth")
    assert open_checkpoint(data).prefix == prefix


def test_torch_save_of_empty_and_shared_storages_is_accepted(tmp_path: Path) -> None:
    """An empty record has flag 0x0800 and no data descriptor (miniz writes none after no data); views share one."""
    base = torch.arange(12, dtype=torch.float32)
    tensors = {"empty": torch.zeros(0), "all": base, "view": base[4:8], "after": torch.ones(3, dtype=torch.bfloat16)}
    data = torch_save(tensors)
    flags = {name: struct.unpack_from("<H", data, at + 6)[0] for name, at in local_headers(data).items()}
    assert 0x0800 in flags.values() and 0x0808 in flags.values()
    assert list(open_checkpoint(data, verify_crc="all").tensors) == list(tensors)


def test_files_written_like_rwkv_lightning_cuda_are_accepted() -> None:
    """pth_writer.cpp (MiSS: data/0..n-1, data.pkl, byteorder, version, miss.json) and state_checkpoint.cpp
    (data.pkl, byteorder, data/0..L-1, version): version 20, no flags, no extra field, no descriptor, no zip64."""
    miss = lightning_bytes({"blocks.0.att.key.weight.D": ("bfloat16", (4, 2), bytes(16))}, miss_json=b"{}")
    assert open_checkpoint(miss, verify_crc="all").miss_manifest == b"{}"
    layers = 3
    specs = [(f"blocks.{i}.att.time_state", "float32", (1, 4, 4)) for i in range(layers)]
    entries = [("archive/data.pkl", lightning_pickle(specs)), ("archive/byteorder", b"little")]
    entries += [(f"archive/data/{i}", struct.pack("<16f", *range(16))) for i in range(layers)]
    entries.append(("archive/version", b"3\n"))
    state = lightning_zip(entries)
    assert list(open_checkpoint(state, verify_crc="all").tensors) == [s[0] for s in specs]
    assert torch_reads(state)["blocks.2.att.time_state"].flatten().tolist() == [float(i) for i in range(16)]


@pytest.mark.parametrize("location", ["cpu", "cuda", "cuda:0", "cuda:1"])
def test_cpu_and_cuda_locations_are_accepted(location: str) -> None:
    """torch.save of CUDA tensors writes 'cuda:N'; torch.load copies the same bytes to the GPU (or maps them)."""
    pkl = tensor_pickle([T(STATE_NAME, location=location)])
    ckpt = open_checkpoint(zip_archive(torch_members(pkl, GOOD_STORAGE)))
    assert struct.unpack("<2f", ckpt.tensor_bytes(STATE_NAME)) == (0.5, -0.25)


def test_a_dot_data_version_record_alone_is_accepted() -> None:
    """torch reads .data/version first and needs version only without it (PyTorchStreamReader::init)."""
    members = torch_members(tensor_dict([GOOD_TENSOR]), GOOD_STORAGE)
    members[-1].name = "archive/.data/version"
    assert STATE_NAME in open_checkpoint(zip_archive(members)).tensors


# --- PTH014: the end record is the file's last 22 bytes, without comment ----------------------------------------


def test_a_second_archive_in_the_comment_is_refused_torch_reads_it() -> None:
    """The reproduction of issue 26: a finite State whose end-record comment holds a NaN State. Before, the reader
    took the outer end record (its comment fits) and validated finite values; torch takes the last signature."""
    hidden = torch_members(tensor_dict([GOOD_TENSOR]), NAN_STORAGE)
    data = hide_in_comment(good_archive(), hidden, after=b"\0\0")
    assert all(math.isnan(x) for x in torch_reads(data)[STATE_NAME].tolist())
    code, message = refusal(data)
    assert code == "PTH014" and "bytes follow the last end record" in message


@pytest.mark.parametrize("case", ["eocd-comment-archive", "eocd-lying-comment", "eocd-64k-junk"])
def test_end_record_tricks_of_the_corpus_are_refused(case: str, tmp_path: Path) -> None:
    assert refusal(write_case(CASES[case], tmp_path).read_bytes())[0] == "PTH014"


@pytest.mark.parametrize(
    "edit",
    [
        lambda d: d[:-2] + struct.pack("<H", 7) + b"comment",  # a true comment
        lambda d: d[:-2] + struct.pack("<H", 7),  # a comment length that lies
        lambda d: d[:-2] + b"\xff\xff" + bytes(0xFFFF),  # 64 KiB of junk as comment
        lambda d: d + b"junk",  # appended bytes
    ],
    ids=["comment", "lying-length", "64k-junk", "appended"],
)
def test_comments_and_trailing_bytes_of_a_torch_file_are_refused(edit: Callable[[bytes], bytes]) -> None:
    assert refusal(edit(torch_save(STATE)))[0] == "PTH014"


# --- PTH015: names equal but for case ----------------------------------------------------------------------------


def test_data_pkl_shadowed_by_upper_case_is_refused_torch_reads_the_other() -> None:
    """miniz's case-insensitive binary search finds DATA.PKL for 'data.pkl' here: torch unpickles the shadow."""
    shadow = tensor_dict([("blocks.0.att.time_state", "FloatStorage", "0", 2, (2,), 0)], hooks=b"}")
    shadow = shadow.replace(b"blocks.0", b"blocks.9")
    data = zip_archive([Member("archive/data/0", GOOD_STORAGE["0"]), Member("archive/DATA.PKL", shadow),
                        *torch_members(tensor_dict([GOOD_TENSOR]))])  # fmt: skip
    assert list(torch_reads(data)) == ["blocks.9.att.time_state"]
    code, message = refusal(data)
    assert code == "PTH015" and "'archive/DATA.PKL' and 'archive/data.pkl' differ only in case" in message


@pytest.mark.parametrize(
    "names",
    [
        ("archive/data/0", "archive/DATA/0"),
        ("archive/miss.json", "archive/MISS.json"),
        ("archive/version", "archive/VERSION"),
    ],
)
def test_names_equal_but_for_case_are_refused(names: tuple[str, str]) -> None:
    members = torch_members(tensor_dict([GOOD_TENSOR]), GOOD_STORAGE)
    members += [Member(n, b"{}") for n in names if n not in {m.name for m in members}]
    data = zip_archive(members)
    assert refusal(data)[0] == "PTH015"


def test_a_nan_storage_in_other_case_is_what_torch_loads(tmp_path: Path) -> None:
    data = write_case(CASES["case-shadow-storage"], tmp_path).read_bytes()
    assert all(math.isnan(x) for x in torch_reads(data)[STATE_NAME].tolist())
    assert refusal(data)[0] == "PTH015"


# --- PTH016: an extra field tag repeated --------------------------------------------------------------------------


def test_a_zip64_offset_given_twice_is_refused_torch_reads_the_first(tmp_path: Path) -> None:
    """The storage hides a local header of another data.pkl; the first zip64 copy points at it (miniz, PthArchive),
    the second at the real one (what the reader used before)."""
    data = write_case(CASES["zip64-extra-twice"], tmp_path).read_bytes()
    with pytest.raises(
        pickle.UnpicklingError, match=r"GLOBAL posix\.system"
    ):  # weights_only refuses the payload torch found
        torch_reads(data)
    code, message = refusal(data)
    assert code == "PTH016" and "extra field 0x0001 appears twice" in message


def test_a_padding_field_given_twice_in_a_torch_local_header_is_refused() -> None:
    data = torch_save(STATE)
    name = padded_entry(data, 4)

    def twice(old: bytes) -> bytes:
        n = struct.unpack_from("<H", old, 2)[0]
        return b"FB\0\0" + b"FB" + struct.pack("<H", n - 4) + b"Z" * (n - 4)

    code, message = refusal(with_local_extra(data, name, twice))
    assert code == "PTH016" and f"local header of {name!r}: extra field 0x4246 appears twice" in message


# --- PTH017: bytes no record owns ---------------------------------------------------------------------------------


@pytest.mark.parametrize("case", ["entry-comment-payload", "local-extra-payload", "descriptor-gap"])
def test_unowned_bytes_of_the_corpus_are_refused(case: str, tmp_path: Path) -> None:
    data = write_case(CASES[case], tmp_path).read_bytes()
    assert torch_reads(data)[STATE_NAME].tolist() == [0.5, -0.25]  # torch reads past them
    assert refusal(data)[0] == "PTH017"


@pytest.mark.parametrize("tag", [0x7075, 0x5455, 0xCAFE])
def test_central_extra_fields_torch_does_not_write_are_refused(tag: int) -> None:
    """0x7075 (Info-ZIP Unicode path) gives a reader that honours it another name than the one checked."""
    members = torch_members(tensor_dict([GOOD_TENSOR]), GOOD_STORAGE)
    members[1].central_extra = struct.pack("<HHB", tag, 5, 1) + b"evil"
    code, message = refusal(zip_archive(members))
    assert code == "PTH017" and f"extra field 0x{tag:04x}" in message


def test_padding_other_than_torchs_filler_is_refused() -> None:
    data = torch_save(STATE)
    name = padded_entry(data, 8)
    edited = with_local_extra(data, name, lambda old: old[:4] + b"\x80\x02}." + old[8:])
    code, message = refusal(edited)
    assert code == "PTH017" and "FB padding field holds bytes other than torch's 'Z' filler" in message


def test_a_local_zip64_field_where_none_is_needed_is_refused() -> None:
    data = torch_save(STATE)
    name = padded_entry(data, 20)

    def zip64(old: bytes) -> bytes:
        n = struct.unpack_from("<H", old, 2)[0]
        return struct.pack("<HHQQ", 1, 16, 8, 8) + b"FB" + struct.pack("<H", n - 20) + b"Z" * (n - 20)

    code, message = refusal(with_local_extra(data, name, zip64))
    assert code == "PTH017" and "a zip64 extra field though the directory gives neither" in message


def test_zip64_end_record_extensible_data_is_refused() -> None:
    data = bytearray(torch_save(STATE))
    record = data.rfind(b"PK\x06\x06")
    data[record + 56 : record + 56] = b"hidden"
    struct.pack_into("<Q", data, record + 4, 44 + 6)  # the locator, 6 bytes later, still points at the record
    assert data.rfind(b"PK\x06\x07") == len(data) - 42
    assert refusal(bytes(data))[0] == "PTH017"


@pytest.mark.parametrize(
    ("extra", "need"),
    [(struct.pack("<HHQ", 1, 8, 0), False), (struct.pack("<HHQQ", 1, 16, 0, 99), True)],
    ids=["not-needed", "bytes-left-over"],
)
def test_central_zip64_fields_with_unread_bytes_are_refused(extra: bytes, need: bool) -> None:
    members = torch_members(tensor_dict([GOOD_TENSOR]), GOOD_STORAGE)
    members[0].central_extra = extra
    if need:
        members[0].central_offset = 0xFFFFFFFF
    assert refusal(zip_archive(members))[0] == "PTH017"


def test_a_torch_descriptor_turned_into_other_bytes_is_refused() -> None:
    data = bytearray(torch_save(STATE))
    at = data.index(b"PK\x07\x08")
    data[at : at + 4] = b"\x80\x02}."
    code, message = refusal(bytes(data))
    assert code == "PTH017" and "announces a data descriptor (flag 0x0008)" in message


# --- PTH018: local header or descriptor disagreeing with the directory ------------------------------------------


def test_local_flags_disagreeing_with_the_directory_are_refused(tmp_path: Path) -> None:
    data = write_case(CASES["local-flags-disagree"], tmp_path).read_bytes()
    assert refusal(data)[0] == "PTH018"


def test_a_torch_descriptor_with_another_crc_is_refused() -> None:
    data = bytearray(torch_save(STATE))
    at = data.index(b"PK\x07\x08")
    data[at + 4] ^= 1
    code, message = refusal(bytes(data))
    assert code == "PTH018" and "the data descriptor of" in message


def test_a_local_crc_other_than_0_or_the_directorys_is_refused() -> None:
    data = bytearray(torch_save(STATE))
    struct.pack_into("<I", data, 14, 0x12345678)  # the first local header (data.pkl): torch writes 0
    assert refusal(bytes(data))[0] == "PTH018"


# --- PTH019: members neither torch nor the trainer writes --------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "archive/payload.pkl",
        "archive/inner.zip",
        "archive/sub/dir/file",
        "archive/.hidden",
        "archive/data/a",
        "archive/data/01",
        "archive/adapter.json",
    ],
)
def test_members_torch_does_not_write_are_refused(name: str) -> None:
    members = torch_members(tensor_dict([GOOD_TENSOR]), GOOD_STORAGE)
    data = zip_archive([*members, Member(name, b"\x80\x02}.")])
    assert torch_reads(data)[STATE_NAME].tolist() == [0.5, -0.25]  # torch never looks at them
    code, message = refusal(data)
    assert code == "PTH019" and name in message


def test_a_manifest_under_another_prefix_is_refused_the_server_never_reads_it(tmp_path: Path) -> None:
    """torch.save names the prefix after the file; rwkv_lightning_cuda's load_package looks up only
    ``archive/miss.json`` (find_entry, exact name) and torch reads no miss.json at all: no reader of weights reads
    ``adapter-final/miss.json``, so the reader returns no manifest for it: it refuses the file."""
    from diffcheck import lightning_read  # the model of rwkv_lightning_cuda's reader (src/io/pth_archive.cpp)

    path = tmp_path / "adapter-final.pth"
    torch.save(STATE, path)
    with zipfile.ZipFile(path, "a") as zf:
        zf.writestr("adapter-final/miss.json", b'{"method": "miss"}')
    data = path.read_bytes()
    assert torch_reads(data)[STATE_NAME].tolist() == [0.5, -0.25]
    assert lightning_read(data).manifest is None
    code, message = refusal(data)
    assert code == "PTH019"
    assert message.startswith("entry adapter-final/miss.json is a MiSS manifest under another prefix than archive/")
    assert "only as archive/miss.json" in message


def test_a_manifest_under_a_prefix_in_capitals_is_refused() -> None:
    members = torch_members(tensor_dict([GOOD_TENSOR]), GOOD_STORAGE, prefix="Archive")
    code, message = refusal(zip_archive([*members, Member("Archive/miss.json", b"{}")]))
    assert code == "PTH019" and "entry Archive/miss.json is a MiSS manifest" in message


def test_the_manifest_as_the_trainer_writes_it_is_read() -> None:
    members = torch_members(tensor_dict([GOOD_TENSOR]), GOOD_STORAGE)
    assert open_checkpoint(zip_archive([*members, Member("archive/miss.json", b"{}")])).miss_manifest == b"{}"


# --- PTH020: the version record --------------------------------------------------------------------------------


def test_an_archive_without_version_record_is_refused_as_torch_does() -> None:
    data = zip_archive(torch_members(tensor_dict([GOOD_TENSOR]), GOOD_STORAGE)[:-1])
    with pytest.raises(RuntimeError, match=r'hasRecord\("version"\)'):
        torch_reads(data)
    assert refusal(data) == (
        "PTH020",
        "archive has no archive/version (nor archive/.data/version): torch.load refuses it",
    )


# --- PTH021: storage locations ---------------------------------------------------------------------------------


def test_a_meta_storage_is_refused_torch_loads_no_data() -> None:
    """torch.load returns meta tensors (no values at all) for what the server reads as bytes."""
    data = zip_archive(torch_members(tensor_pickle([T(STATE_NAME, location="meta")]), NAN_STORAGE))
    assert torch_reads(data)[STATE_NAME].is_meta
    code, message = refusal(data)
    assert code == "PTH021" and "located on 'meta'" in message


@pytest.mark.parametrize("location", ["mps", "xpu:0", "hpu", "privateuseone", "mtia"])
def test_other_locations_are_refused(location: str) -> None:
    pkl = tensor_pickle([T(STATE_NAME, location=location)])
    assert refusal(zip_archive(torch_members(pkl, GOOD_STORAGE)))[0] == "PTH021"


# --- PTH022: "version needed to extract" ----------------------------------------------------------------------


def _central_headers(data: bytes) -> dict[str, int]:
    """name -> offset of its central header (a file without zip64 end records)."""
    n, _, cd_offset = struct.unpack_from("<HII", data, len(data) - 22 + 10)
    out: dict[str, int] = {}
    pos = cd_offset
    for _ in range(n):
        nlen, elen, clen = struct.unpack_from("<HHH", data, pos + 28)
        out[data[pos + 46 : pos + 46 + nlen].decode()] = pos
        pos += 46 + nlen + elen + clen
    return out


def _needing(data: bytes, name: str, value: int, *, local: bool = False) -> bytes:
    at = local_headers(data)[name] + 4 if local else _central_headers(data)[name] + 6
    out = bytearray(data)
    struct.pack_into("<H", out, at, value)
    return bytes(out)


def test_a_version_zipfile_cannot_extract_is_refused_torch_loads_it() -> None:
    """The last class of the 100,000-file campaign: torch (miniz) never reads the field, Python's zipfile refuses
    an entry needing more than 6.3 (``_RealGetContents``)."""
    data = _needing(torch_save(STATE), "archive/data.pkl", 64)
    assert torch_reads(data)[STATE_NAME].tolist() == [0.5, -0.25]
    with pytest.raises(NotImplementedError, match=r"zip file version 6\.4"):
        zipfile.ZipFile(io.BytesIO(data))
    assert refusal(data) == (
        "PTH022",
        "the central header of 'archive/data.pkl' says version 6.4 (0x0040) is needed to extract it: Python's "
        "zipfile refuses to open the archive (it reads versions up to 6.3); torch writes 0, rwkv_lightning_cuda and "
        "Python's zipfile 20 (45 with zip64 values)",
    )


@pytest.mark.parametrize("value", [10, 45, 63, 0x00FF, 0x0314, 0xFFFF])
@pytest.mark.parametrize("local", [False, True], ids=["central", "local"])
def test_versions_no_producer_writes_are_refused(value: int, local: bool) -> None:
    """torch writes 0 (miniz: ``method ? 20 : 0``), rwkv_lightning_cuda and Python's zipfile 20, zipfile 45 only
    with zip64 values; 63 and a host system in the high byte (0x0314: Unix, 2.0) are read alike today, but no
    producer writes them."""
    code, message = refusal(_needing(torch_save(STATE), "archive/byteorder", value, local=local))
    assert code == "PTH022"
    assert message.startswith(f"the {'local' if local else 'central'} header of 'archive/byteorder' says version")


def test_what_pythons_zipfile_writes_is_accepted(tmp_path: Path) -> None:
    """A torch file rewritten by Python's zipfile (stored): version 20, no descriptor, no padding."""
    src = zipfile.ZipFile(io.BytesIO(torch_save(STATE)))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for info in src.infolist():
            zf.writestr(info.filename, src.read(info))
    data = buf.getvalue()
    assert set(struct.unpack_from("<H", data, at + 6)[0] for at in _central_headers(data).values()) == {20}
    assert struct.unpack("<2f", open_checkpoint(data, verify_crc="all").tensor_bytes(STATE_NAME)) == (0.5, -0.25)


def test_version_45_is_accepted_only_on_a_zip64_entry(tmp_path: Path) -> None:
    """Python's zipfile writes 45 (ZIP64_VERSION) for an entry with zip64 values: accepted on big/data/0 of the
    4 GiB layout, refused on big/data.pkl, which has none."""
    from ckpt_hostile import write_sparse_zip64

    from rwkv_registry.formats.ckpt import FileSource
    from rwkv_registry.formats.zipread import read_central_directory

    path = tmp_path / "big.pth"
    write_sparse_zip64(path, 2_200_000_000)
    with FileSource(path) as src:
        cd = read_central_directory(src)
    offsets, pos = {}, cd.offset
    for e in cd.entries:
        offsets[e.name] = pos
        pos += 46 + len(e.raw) + (20 if e.zip64_fields == ("offset",) else 28 if e.zip64_fields else 0)
    assert [e.zip64_fields for e in cd.entries][:2] == [(), ("usize", "csize")]

    def set_needed(name: str, value: int) -> None:
        with open(path, "r+b") as f:
            f.seek(offsets[name])
            assert f.read(4) == b"PK\x01\x02"
            f.seek(offsets[name] + 6)
            f.write(struct.pack("<H", value))

    set_needed("big/data/0", 45)
    with FileSource(path) as src:
        assert "big" in open_checkpoint(src).tensors
    set_needed("big/data.pkl", 45)
    with FileSource(path) as src, pytest.raises(CheckpointError) as info:
        open_checkpoint(src)
    assert info.value.code == "PTH022" and "45 (zip64) on an entry without zip64 values" in info.value.message


# --- messages quote at most ~200 characters of a name -------------------------------------------------------


@pytest.mark.parametrize(
    ("edit", "code"),
    [
        (lambda m: None, "PTH008"),  # the name alone: too long (over 1,024 characters)
        (lambda m: setattr(m, "comment", b"c"), "PTH017"),  # refused while the directory is read, before the names
        (lambda m: setattr(m, "central_extra", struct.pack("<HH", 0x7075, 1) + b"x"), "PTH017"),
    ],
    ids=["name", "comment", "extra"],
)
def test_a_60000_character_name_is_quoted_clipped(edit: Callable[[Member], None], code: str) -> None:
    """A zip name may hold 65,535 bytes; a message quotes the start and the end of it, a few hundred characters."""
    members = torch_members(tensor_dict([GOOD_TENSOR]), GOOD_STORAGE)
    long = Member("archive/" + "n" * 60_000 + ".pkl", b"x")
    edit(long)
    code_seen, message = refusal(zip_archive([*members, long]))
    assert code_seen == code
    assert len(message) < 600 and "characters]…" in message and ".pkl" in message, message


# --- one reader over local files and the Hub's Range reads -----------------------------------------------------


class _BytesFetcher(Fetcher):
    """A Fetcher answering Range requests from bytes in memory (the plan and the cache are RemoteFile's own)."""

    def __init__(self, data: bytes) -> None:
        super().__init__("http://127.0.0.1:9")
        self.data = data

    def get(self, url: str, *, start: int | None = None, end: int | None = None, **kw: object) -> bytes:
        assert start is not None and end is not None
        self.requests += 1
        self.bytes_fetched += end - start + 1
        return self.data[start : end + 1]


def _remote(data: bytes) -> RemoteFile:
    return RemoteFile(_BytesFetcher(data), "http://127.0.0.1:9/blob", len(data))


@pytest.mark.parametrize("case", sorted(c for c in CASES if CASES[c].source.startswith("issue 26")))
def test_range_reads_refuse_with_the_same_rule(case: str, tmp_path: Path) -> None:
    data = write_case(CASES[case], tmp_path).read_bytes()
    remote = _remote(data)
    remote.prefetch_zip_metadata()
    with pytest.raises(CheckpointError) as info:
        open_checkpoint(remote)
    assert (info.value.code, info.value.message) == refusal(data)


def test_range_reads_of_a_torch_file_need_no_request_past_the_plan(tmp_path: Path) -> None:
    """The plan covers what the strict reader reads (local extra fields, descriptors): after the prefetch, opening
    costs no request."""
    data = torch_save(_sized(torch.bfloat16, 70_000, n=20), tmp_path / "s.pth")
    remote = _remote(data)
    remote.prefetch_zip_metadata()
    before = remote.fetcher.requests
    ckpt = open_checkpoint(remote)
    assert remote.fetcher.requests == before
    assert len(ckpt.tensors) == 20 and remote.fetcher.bytes_fetched < len(data) // 10


def test_the_remote_reader_reads_what_torch_reads() -> None:
    data = torch_save(_sized(torch.float32, 1000, n=2))
    remote = _remote(data)
    remote.prefetch_zip_metadata()
    ckpt = open_checkpoint(remote)
    for name, t in torch_reads(data).items():
        assert bytes(ckpt.tensor_bytes(name)) == t.numpy().tobytes()


@pytest.mark.parametrize(("field", "code"), [("usize", "PTH018"), ("offset", "PTH018")])
def test_local_zip64_values_disagreeing_with_the_directory_are_refused(tmp_path: Path, field: str, code: str) -> None:
    """Past 4 GiB (tests/ckpt_hostile.write_sparse_zip64, the layout of a real 4.4 GB torch.save): the local zip64
    field must give the directory's size (big/data/0) and header offset (big/data/1)."""
    from ckpt_hostile import write_sparse_zip64

    from rwkv_registry.formats.ckpt import FileSource
    from rwkv_registry.formats.zipread import read_central_directory

    path = tmp_path / "big.pth"
    write_sparse_zip64(path, 2_200_000_000)
    with FileSource(path) as src:
        entries = {e.name: e for e in read_central_directory(src).entries}
    entry = entries["big/data/0" if field == "usize" else "big/data/1"]
    assert field in entry.zip64_fields
    with open(path, "r+b") as f:
        f.seek(entry.header_offset + 30 + len(entry.raw) + 4)  # the local zip64 field's first value
        value = struct.unpack("<Q", f.read(8))[0]
        f.seek(-8, 1)
        f.write(struct.pack("<Q", value + 64))
    with FileSource(path) as src, pytest.raises(CheckpointError) as info:
        open_checkpoint(src)
    assert info.value.code == code and "zip64" in info.value.message
