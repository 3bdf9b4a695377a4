"""The safe checkpoint reader: round trips with torch and safetensors, and hostile files.

Expected values come from torch / safetensors themselves (names, dtypes, shapes, bytes), never
from the reader. Each hostile case asserts the exact rule code.
"""

from __future__ import annotations

import collections
import io
import mmap
import struct
import sys
import zipfile

import pytest
import torch
from ckpt_hostile import (
    Entry,
    T,
    build_zip,
    checkpoint_entries,
    evil_pickle,
    safetensors_bytes,
    simple_pickle,
    tensor_pickle,
    with_pickle,
    write_sparse_zip64,
)
from conformance.lightning_cpp import lightning_bytes, write_lightning
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rwkv_registry.core.errors import CheckpointError, RegistryIOError
from rwkv_registry.core.rules import RULES
from rwkv_registry.formats.ckpt import (
    Checkpoint,
    FileSource,
    MemorySource,
    open_checkpoint,
    sniff_kind,
)

OID = "ab" * 32


def raw_bytes(t: torch.Tensor) -> bytes:
    return t.contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()


def dtype_name(t: torch.Tensor) -> str:
    return str(t.dtype).removeprefix("torch.")


def assert_same(ckpt: Checkpoint, tensors: dict[str, torch.Tensor]) -> None:
    assert list(ckpt.tensors) == list(tensors)
    for name, t in tensors.items():
        info = ckpt.tensors[name]
        assert (info.dtype, info.shape) == (dtype_name(t), tuple(t.shape)), name
        assert info.numel == t.numel() and info.itemsize == t.element_size()
        assert info.nbytes == t.numel() * t.element_size()
        assert bytes(ckpt.tensor_bytes(name)) == raw_bytes(t), name


def code_of(src, **kw) -> str:
    with pytest.raises(CheckpointError) as info:
        open_checkpoint(src, **kw)
    return info.value.code


def mixed() -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(7)
    return {
        "emb.weight": torch.randn(5, 3, generator=g).to(torch.bfloat16),
        "half": torch.randn(4, generator=g).to(torch.float16),
        "single": torch.randn(2, 2, 2, 2, generator=g),
        "double": torch.randn(3, generator=g).to(torch.float64),
        "scalar": torch.tensor(2.5),
        "empty": torch.zeros(0, 3, dtype=torch.bfloat16),
        "long": torch.arange(-3, 3, dtype=torch.int64),
        "int": torch.arange(4, dtype=torch.int32),
        "short": torch.arange(4, dtype=torch.int16),
        "char": torch.arange(-2, 2, dtype=torch.int8),
        "byte": torch.arange(250, 256, dtype=torch.uint8),
        "flag": torch.tensor([True, False, True]),
    }


@pytest.fixture(scope="module")
def torch_file(tmp_path_factory) -> tuple[bytes, dict[str, torch.Tensor]]:
    path = tmp_path_factory.mktemp("t") / "plain.pth"
    tensors = mixed()
    torch.save(tensors, path)
    return path.read_bytes(), tensors


# --- round trips -------------------------------------------------------------------------------


def test_torch_save_dict_to_path(tmp_path):
    tensors = mixed()
    path = tmp_path / "my.weights.pth"
    torch.save(tensors, path)
    with open_checkpoint(path, verify_crc="all") as ckpt:
        assert (ckpt.kind, ckpt.writer, ckpt.prefix) == ("torch-zip", "torch", "my.weights")
        assert ckpt.miss_manifest is None
        assert ckpt.entry_names() == zipfile.ZipFile(path).namelist()
        assert_same(ckpt, tensors)
        assert isinstance(ckpt.source, FileSource)


def test_torch_save_to_buffer_has_archive_prefix():
    tensors = mixed()
    buf = io.BytesIO()
    torch.save(tensors, buf)
    ckpt = open_checkpoint(buf.getvalue())
    assert (ckpt.prefix, ckpt.writer) == ("archive", "torch")
    assert_same(ckpt, tensors)
    assert isinstance(ckpt.tensor_bytes("half"), memoryview)  # zero copy over memory


def test_state_dict_of_a_module(tmp_path):
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.LayerNorm(3), torch.nn.Linear(3, 2, bias=False))
    model.to(torch.bfloat16)
    sd = model.state_dict()
    assert isinstance(sd, collections.OrderedDict) and hasattr(sd, "_metadata")
    torch.save(sd, tmp_path / "sd.pth")
    ckpt = open_checkpoint(tmp_path / "sd.pth")
    assert_same(ckpt, dict(sd))


def test_views_share_a_storage(tmp_path):
    base = torch.arange(10, dtype=torch.float32)
    tensors = {
        "all": base,
        "tail": base[6:],
        "block": base[2:8].view(2, 3),
        "requires_grad": torch.ones(2).requires_grad_(),
    }
    torch.save(tensors, tmp_path / "v.pth")
    ckpt = open_checkpoint(tmp_path / "v.pth")
    assert_same(ckpt, {k: v.detach() for k, v in tensors.items()})
    assert ckpt.tensors["tail"].storage_key == ckpt.tensors["all"].storage_key
    assert ckpt.tensors["tail"].storage_offset == 6
    assert ckpt.tensors["block"].stride == (3, 1)


def test_many_tensors_use_long_memo_and_batches(tmp_path):
    tensors = {f"w{i}": torch.full((2,), float(i)) for i in range(1001)}
    torch.save(tensors, tmp_path / "many.pth")
    assert_same(open_checkpoint(tmp_path / "many.pth"), tensors)


def test_lightning_layout(tmp_path):
    g = torch.Generator().manual_seed(1)
    tensors = {
        "blocks.0.att.key.weight.D": torch.randn(8, 4, generator=g).to(torch.bfloat16),
        "blocks.0.ffn.value.weight.D": torch.randn(300, 2, generator=g).to(torch.float16),
        "blocks.1.att.time_state": torch.randn(2, 4, 4, generator=g),
    }
    manifest = b'{"format_version":1,"method":"miss"}'
    path = write_lightning(tmp_path / "adapter-final.pth", tensors, miss_json=manifest)
    ckpt = open_checkpoint(path, verify_crc="all")
    assert (ckpt.kind, ckpt.writer, ckpt.prefix) == ("torch-zip", "lightning", "archive")
    assert ckpt.miss_manifest == manifest
    assert ckpt.entry_names()[-1] == "archive/miss.json"
    assert_same(ckpt, tensors)
    loaded = torch.load(path, weights_only=True)  # FORMATS §4: torch ignores miss.json
    assert list(loaded) == list(tensors)
    assert all(torch.equal(loaded[k], v) and loaded[k].dtype == v.dtype for k, v in tensors.items())


def test_safetensors_round_trip(tmp_path):
    from safetensors.torch import save_file

    tensors = {k: v for k, v in mixed().items()}
    save_file(tensors, tmp_path / "m.safetensors", metadata={"format": "pt"})
    ckpt = open_checkpoint(tmp_path / "m.safetensors")
    assert (ckpt.kind, ckpt.writer, ckpt.prefix, ckpt.entry_names()) == ("safetensors", "safetensors", "", [])
    assert sorted(ckpt.tensors) == sorted(tensors)
    offsets = [i.data_offset for i in ckpt.tensors.values()]
    assert offsets == sorted(offsets)  # file order
    assert_same(ckpt, {k: tensors[k] for k in ckpt.tensors})


def test_memory_source_over_mmap(tmp_path, torch_file):
    data, tensors = torch_file
    path = tmp_path / "m.pth"
    path.write_bytes(data)
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        src = MemorySource(mm)
        ckpt = open_checkpoint(src)
        assert_same(ckpt, tensors)
        del ckpt
        src.release()


def test_big_sparse_zip64_reads_only_headers(tmp_path):
    path = tmp_path / "big.pth"
    numel = 2_200_000_000  # 4.4 GB of bf16, a hole in a sparse file
    size = write_sparse_zip64(path, numel)
    assert size > 2**32
    with FileSource(path) as src:
        ckpt = open_checkpoint(src)
        assert ckpt.tensors["big"].shape == (numel,)
        assert ckpt.tensors["after"].data_offset > 2**32
        assert struct.unpack("<2f", ckpt.tensor_bytes("after")) == (1.5, -2.0)
        assert src.bytes_read < 64 * 1024


def test_zip64_fields_for_small_entries_are_read():
    pkl = simple_pickle(1)
    entries = [Entry(e.name, e.data, zip64=True) for e in checkpoint_entries(pkl, {"0": struct.pack("<2f", 1, 2)})]
    ckpt = open_checkpoint(build_zip(entries, zip64_end=True), verify_crc="all")
    assert bytes(ckpt.tensor_bytes("t0")) == struct.pack("<2f", 1, 2)


def test_archive_comment_is_refused():
    """Accepted until issue 26: torch (miniz) takes the last end-record signature, here the one in the comment,
    while this reader took the record whose comment fits. Neither producer writes a comment (PTH014)."""
    data = build_zip(checkpoint_entries(simple_pickle(1), {"0": bytes(8)}), comment=b"PK\x05\x06 comment")
    assert code_of(data) == "PTH014"


def test_sniff_kind(torch_file):
    data, _ = torch_file
    assert sniff_kind(data[:16]) == "torch-zip"
    assert sniff_kind(safetensors_bytes({}, b"")[:16]) == "safetensors"
    assert sniff_kind(b"version https://git-lfs.github.com/spec/v1\n") == "lfs-pointer"
    assert sniff_kind(b"\x80\x02}q\x00.") == "unknown"
    assert sniff_kind(b"") == "unknown"


# --- hostile files: zip structure --------------------------------------------------------------


@pytest.mark.parametrize("cut", [1, 10, 100, 0.5, -1, -22, -42, -60])
def test_truncated_archive(torch_file, cut):
    data, _ = torch_file
    end = int(len(data) * cut) if isinstance(cut, float) else cut if cut > 0 else len(data) + cut
    assert code_of(data[:end]) == "PTH001"


@pytest.mark.parametrize("data", [b"\0" * 100, b"PK\x03\x04" + b"\xab" * 200, b"hello world, not weights"])
def test_garbage(data):
    assert code_of(data) == "PTH001"


def test_empty_file(tmp_path):
    (tmp_path / "e.pth").write_bytes(b"")
    assert code_of(tmp_path / "e.pth") == "PTH001"


def test_bad_crc_in_data_pkl(torch_file):
    data, _ = torch_file
    pos = data.index(b"emb.weight")
    bad = data[:pos] + b"EMB" + data[pos + 3 :]  # still a valid pickle, other name
    assert code_of(bad) == "PTH002"
    assert "EMB.weight" in open_checkpoint(bad, verify_crc="none").tensors


def test_bad_crc_in_a_storage_only_found_with_all(torch_file):
    data, tensors = torch_file
    ckpt = open_checkpoint(data)
    pos = ckpt.tensors["single"].data_offset
    bad = data[:pos] + bytes([data[pos] ^ 0xFF]) + data[pos + 1 :]
    assert list(open_checkpoint(bad).tensors) == list(tensors)
    with pytest.raises(CheckpointError) as info:
        open_checkpoint(bad, verify_crc="all")
    assert info.value.code == "PTH002"
    assert "plain/data/" in info.value.message


def test_compressed_entries(tmp_path):
    assert code_of(build_zip([Entry("archive/data.pkl", simple_pickle(0), method=8)])) == "PTH011"
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("archive/data.pkl", simple_pickle(0))
    with pytest.raises(CheckpointError) as info:
        open_checkpoint(buf.getvalue())
    assert info.value.code == "PTH011"
    assert info.value.message == ("entry 'archive/data.pkl' is compressed (method 8, deflate); torch stores entries")


def test_encrypted_and_multi_disk():
    entries = checkpoint_entries(simple_pickle(1), {"0": bytes(8)})
    entries[0].flags = 1
    assert code_of(build_zip(entries)) == "PTH011"
    plain = checkpoint_entries(simple_pickle(1), {"0": bytes(8)})
    assert code_of(build_zip(plain, disk=1, cd_disk=1)) == "PTH011"
    assert code_of(build_zip(plain, disk=1, cd_disk=1, zip64_end=True)) == "PTH011"


def test_too_many_entries():
    entries = [Entry(f"archive/x{i}", b"") for i in range(10_001)]
    assert code_of(build_zip(entries)) == "PTH010"


def test_size_declared_beyond_the_file():
    data = bytearray(with_pickle(simple_pickle(1)))
    cd = data.index(b"PK\x01\x02")
    data[cd + 20 : cd + 28] = struct.pack("<II", 10**9, 10**9)  # central sizes of archive/data/0
    assert code_of(bytes(data)) == "PTH010"


def test_local_header_disagreeing_with_directory():
    data = bytearray(with_pickle(simple_pickle(1)))
    data[18:26] = struct.pack("<II", 4, 4)  # local sizes of archive/data/0
    assert code_of(bytes(data)) == "PTH018"


def test_overlapping_entries():
    good = with_pickle(simple_pickle(1))
    data = bytearray(good)
    second = data.index(b"PK\x01\x02", data.index(b"PK\x01\x02") + 4)
    data[second + 42 : second + 46] = struct.pack("<I", 0)  # data.pkl's header offset -> data/0's
    assert code_of(bytes(data)) == "PTH018"  # that local header names archive/data/0


# --- hostile files: entry names ----------------------------------------------------------------


@pytest.mark.parametrize(
    "names",
    [
        ["../evil"],
        ["archive/../evil"],
        ["/etc/passwd"],
        ["C:/evil"],
        ["archive\\data.pkl"],
        ["archive/./x"],
        ["data.pkl"],
        ["other/extra.txt"],
        ["archive/x\x01"],
    ],
)
def test_unsafe_entry_names(names):
    entries = checkpoint_entries(simple_pickle(1), {"0": bytes(8)})
    entries += [Entry(n, b"x") for n in names]
    with pytest.raises(CheckpointError) as info:
        open_checkpoint(build_zip(entries))
    assert info.value.code == "PTH008"


def test_entry_name_evil_quoted_in_message():
    entries = [*checkpoint_entries(simple_pickle(1), {"0": bytes(8)}), Entry("../evil", b"")]
    with pytest.raises(CheckpointError) as info:
        open_checkpoint(build_zip(entries))
    assert info.value.message == "entry '../evil' has an empty, '.' or '..' path component"


def test_duplicate_entry_and_unused_storage():
    entries = checkpoint_entries(simple_pickle(1), {"0": bytes(8)})
    assert code_of(build_zip([*entries, Entry("archive/version", b"3\n")])) == "PTH008"
    assert code_of(build_zip(checkpoint_entries(simple_pickle(1), {"0": bytes(8), "1": bytes(8)}))) == "PTH008"


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_torchscript_archive(tmp_path):
    module = torch.jit.script(torch.nn.Linear(2, 2))
    torch.jit.save(module, tmp_path / "ts.pt")
    assert code_of(tmp_path / "ts.pt") == "PTH005"
    stored = [*checkpoint_entries(simple_pickle(1), {"0": bytes(8)}), Entry("archive/constants.pkl", b"")]
    assert code_of(build_zip(stored)) == "PTH005"


def test_no_data_pkl():
    assert code_of(build_zip([Entry("archive/version", b"3\n")])) == "PTH001"


def test_big_endian_byteorder():
    entries = checkpoint_entries(simple_pickle(1), {"0": bytes(8)})
    entries[2] = Entry("archive/byteorder", b"big")
    with pytest.raises(CheckpointError) as info:
        open_checkpoint(build_zip(entries))
    assert (info.value.code, info.value.message) == ("PTH013", "byteorder entry says 'big', not 'little'")


def test_miss_json_over_8_mib():
    entries = checkpoint_entries(
        simple_pickle(1), {"0": bytes(8)}, extra=[Entry("archive/miss.json", b" " * (8 * 1024 * 1024 + 1))]
    )
    assert code_of(build_zip(entries)) == "MIS002"
    ok = checkpoint_entries(simple_pickle(1), {"0": bytes(8)}, extra=[Entry("archive/miss.json", b"{}")])
    assert open_checkpoint(build_zip(ok)).miss_manifest == b"{}"


def test_data_pkl_over_64_mib():
    entries = [Entry("archive/data.pkl", bytes(64 * 1024 * 1024 + 1))]
    assert code_of(build_zip(entries)) == "PTH010"


# --- hostile files: pickles --------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["os system", "posix system", "builtins eval", "__builtin__ eval", "subprocess Popen"])
def test_code_execution_globals(tmp_path, kind):
    marker = tmp_path / "pwned"
    pkl = evil_pickle(kind, marker)
    if kind == "posix system" and sys.platform == "win32":  # pragma: no cover
        pytest.skip("os.system pickles as 'nt system' on Windows")
    assert f"c{kind.replace(' ', chr(10))}\n".encode() in pkl  # the pickle really names that global
    path = tmp_path / "evil.pth"
    path.write_bytes(with_pickle(pkl))
    with pytest.raises(CheckpointError) as info:
        open_checkpoint(path)
    assert info.value.code == "PTH003"
    assert f"'{kind}'" in info.value.message
    assert info.value.path == str(path)
    assert info.value.hint == RULES["PTH003"].hint
    assert not marker.exists()


def test_parameter_is_outside_the_allow_list(tmp_path):
    torch.save({"p": torch.nn.Parameter(torch.ones(2))}, tmp_path / "p.pth")
    with pytest.raises(CheckpointError) as info:
        open_checkpoint(tmp_path / "p.pth")
    assert info.value.code == "PTH003"
    assert info.value.message.startswith("pickle global 'torch._utils _rebuild_parameter' at offset ")


@pytest.mark.parametrize(
    "pkl",
    [
        b"\x80\x02\x8c\x03abc\x94.",  # SHORT_BINUNICODE, MEMOIZE (protocol 4)
        b"\x80\x02X\x02\x00\x00\x00osX\x06\x00\x00\x00system\x93.",  # STACK_GLOBAL
        b"\x80\x02(ios\nsystem\n.",  # INST
        b"\x80\x02]q\x00.",  # EMPTY_LIST
        b"\x80\x02\xff.",
        b"\x80\x04}.",  # PROTO 4
        b"\x80\x02G\x3f\xf0\x00\x00\x00\x00\x00\x00.",  # BINFLOAT
    ],
)
def test_opcodes_outside_the_allow_list(pkl):
    assert code_of(with_pickle(pkl)) == "PTH004"


def test_opcode_message_quotes_byte_and_offset():
    with pytest.raises(CheckpointError) as info:
        open_checkpoint(with_pickle(b"\x80\x02}\x93."))
    assert info.value.message == "pickle opcode 0x93 (STACK_GLOBAL) at offset 3 is outside the allow-list"


def test_storage_missing_or_short():
    assert code_of(with_pickle(simple_pickle(1), {})) == "PTH006"
    assert code_of(with_pickle(simple_pickle(1), {"0": bytes(4)})) == "PTH006"  # 2 floats need 8 bytes
    beyond = tensor_pickle([T("w", numel=2, shape=(2,), offset=1)])
    assert code_of(with_pickle(beyond, {"0": bytes(8)})) == "PTH006"
    wide = tensor_pickle([T("w", numel=2, shape=(3,))])
    assert code_of(with_pickle(wide, {"0": bytes(8)})) == "PTH006"
    twice = tensor_pickle([T("a", numel=2), T("b", numel=3, shape=(3,))])
    assert code_of(with_pickle(twice, {"0": bytes(8)})) == "PTH006"


def test_storage_declared_twice_with_different_sizes():
    """Storage '0' declared as 2 floats, then as 1: the second tensor fits either, so only the comparison of the
    two declarations refuses it (not the storage's size or the tensor's bounds)."""
    twice = tensor_pickle([T("a", numel=2), T("b", numel=1, shape=(1,))])
    with pytest.raises(CheckpointError) as info:
        open_checkpoint(with_pickle(twice, {"0": bytes(8)}))
    assert (info.value.code, info.value.message) == (
        "PTH006",
        "storage '0' declared as 2 x float32 and as 1 x float32",
    )
    same = tensor_pickle([T("a", numel=2), T("b", numel=2, shape=(1,), offset=1)])  # one storage, two views
    assert open_checkpoint(with_pickle(same, {"0": bytes(8)})).tensors["b"].storage_offset == 1


def test_negative_storage_offset():
    """A storage offset of -1 would read the byte before the storage: PTH009, not a read out of bounds."""
    pkl = tensor_pickle([T("w", numel=2, shape=(1,), offset=-1)])
    with pytest.raises(CheckpointError) as info:
        open_checkpoint(with_pickle(pkl, {"0": bytes(8)}))
    assert info.value.code == "PTH009"
    assert info.value.message.endswith(": storage offset is int -1")


def test_duplicate_tensor_names():
    pkl = tensor_pickle([T("w"), T("w")])
    with pytest.raises(CheckpointError) as info:
        open_checkpoint(with_pickle(pkl, {"0": bytes(8)}))
    assert info.value.code == "PTH007"
    assert "'w'" in info.value.message


@pytest.mark.parametrize(
    "pkl",
    [
        b"\x80\x02K\x01.",  # an int
        b"\x80\x02).",  # a tuple
        b"\x80\x02}(X\x01\x00\x00\x00aK\x01u.",  # dict of an int
        b"\x80\x02}(X\x01\x00\x00\x00a}u.",  # nested dict
        b"\x80\x02}(K\x01K\x01u.",  # int key
        b"\x80\x02}K\x01.",  # two values left
        b"\x80\x02}u.",  # SETITEMS without MARK
        b"\x80\x02}(X\x01\x00\x00\x00a.",  # STOP inside a MARK
        b"\x80\x02}",  # no STOP
        b"\x80\x02}.junk",  # bytes after STOP
        b"}.",  # no PROTO
        b"\x80\x02}q\x00h\x01.",  # BINGET of an unwritten memo
        b"\x80\x02}q\x00(X\x01\x00\x00\x00ah\x00u.",  # dict inserted into itself
        b"\x80\x02ccollections\nOrderedDict\nK\x01\x85R.",  # OrderedDict(1)
        b"\x80\x02ctorch\nFloatStorage\n)R.",  # calling a storage class
        b"\x80\x02ccollections\nOrderedDict\n)R}b.",  # BUILD without _metadata
        b"\x80\x02}}b.",  # BUILD on a plain dict
        b"\x80\x02}(X\x01\x00\x00\x00a(X\x07\x00\x00\x00storageK\x01tQu.",  # bad persistent id
        b"\x80\x02X\x03\x00\x00\x00\xff\xfe\xfd.",  # BINUNICODE not UTF-8
    ],
)
def test_not_a_flat_dict_of_tensors(pkl):
    assert code_of(with_pickle(pkl)) == "PTH009"


@pytest.mark.parametrize(
    ("field", "value", "code"),
    [
        ("storage", "DoubleTensor", "PTH003"),
        ("location", "../x", "PTH009"),
        ("key", "../0", "PTH009"),
        ("stride", (1, 1), "PTH009"),
        ("numel", -1, "PTH009"),
    ],
)
def test_bad_tensor_arguments(field, value, code):
    t = T("w")
    setattr(t, field, value)
    assert code_of(with_pickle(tensor_pickle([t]))) == code


def test_non_contiguous_tensor(tmp_path):
    torch.save({"t": torch.zeros(3, 4).T}, tmp_path / "nc.pth")
    assert code_of(tmp_path / "nc.pth") == "PTH013"
    ok = tensor_pickle([T("w", numel=2, shape=(2, 1), stride=(1, 7))])  # size-1 dims may have any stride
    assert open_checkpoint(with_pickle(ok)).tensors["w"].shape == (2, 1)


def test_huge_binunicode_length():
    with pytest.raises(CheckpointError) as info:
        open_checkpoint(with_pickle(b"\x80\x02X\xff\xff\xff\x7f" + b"a" * 10))
    assert info.value.code == "PTH010"
    assert "2147483647" in info.value.message


@pytest.mark.parametrize(
    "pkl",
    [
        b"\x80\x02" + b"(" * 1001,  # MARK nesting
        b"\x80\x02)" + b"\x85" * 1001,  # tuple nesting
        b"\x80\x02" + b"N" * 100_001,  # stack size
    ],
    ids=["marks", "tuples", "stack"],
)
def test_pickle_resource_bounds(pkl):
    assert code_of(with_pickle(pkl + b".")) == "PTH010"


def test_memo_bound():
    puts = b"".join(b"r" + struct.pack("<I", i) for i in range(1_000_001))
    assert code_of(with_pickle(b"\x80\x02N" + puts + b".")) == "PTH010"


# --- safetensors and LFS -----------------------------------------------------------------------

GOOD_ST = {"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}


@pytest.mark.parametrize(
    "blob",
    [
        safetensors_bytes(GOOD_ST, bytes(8), length=200_000_000),
        safetensors_bytes(GOOD_ST, bytes(8), length=10_000),
        safetensors_bytes(None, bytes(8), raw_header=b"{not json"),
        safetensors_bytes(None, b"", raw_header=b'{"a": NaN}'),
        safetensors_bytes(None, b"", raw_header=b"{\xff}"),
        safetensors_bytes(None, b"", raw_header=b"{" * 5000 + b"}" * 5000),
        safetensors_bytes(None, b"", raw_header=b"{}[]"),
        safetensors_bytes({"a": {"dtype": 1, "shape": [2], "data_offsets": [0, 8]}}, bytes(8)),
        safetensors_bytes({"a": {"dtype": "F32", "shape": [-2], "data_offsets": [0, 8]}}, bytes(8)),
        safetensors_bytes({"a": {"dtype": "F32", "shape": [True], "data_offsets": [0, 4]}}, bytes(4)),
        safetensors_bytes({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 16]}}, bytes(8)),
        safetensors_bytes({"a": {"dtype": "F32", "shape": [2], "data_offsets": [8, 0]}}, bytes(8)),
        safetensors_bytes({"a": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}}, bytes(8)),
        safetensors_bytes({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8], "x": 1}}, bytes(8)),
        safetensors_bytes({**GOOD_ST, "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}}, bytes(12)),
        safetensors_bytes({"a": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}}, bytes(12)),
        safetensors_bytes(GOOD_ST, bytes(9)),
        safetensors_bytes({**GOOD_ST, "__metadata__": {"k": 1}}, bytes(8)),
        safetensors_bytes(None, bytes(8), raw_header=b'{"a": []}'),
    ],
)
def test_bad_safetensors_headers(blob):
    assert code_of(blob) == "PTH012"


def test_safetensors_named_file_that_is_not_one(tmp_path):
    (tmp_path / "x.safetensors").write_bytes(b"\x00" * 64)
    assert code_of(tmp_path / "x.safetensors") == "PTH012"


def test_safetensors_duplicate_and_dtype():
    one = b'{"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}'
    raw = b'{"a": ' + one + b', "a": ' + one + b"}"
    assert code_of(safetensors_bytes(None, bytes(8), raw_header=raw)) == "PTH007"
    fp8 = {"a": {"dtype": "F8_E4M3", "shape": [2], "data_offsets": [0, 2]}}
    assert code_of(safetensors_bytes(fp8, bytes(2))) == "PTH013"


def test_safetensors_metadata_and_empty_tensor():
    header = {
        "__metadata__": {"format": "pt"},
        "e": {"dtype": "BF16", "shape": [0, 4], "data_offsets": [0, 0]},
        **GOOD_ST,
    }
    ckpt = open_checkpoint(safetensors_bytes(header, struct.pack("<2f", 1, 2)))
    assert list(ckpt.tensors) == ["e", "a"]
    assert ckpt.tensors["e"].nbytes == 0
    assert struct.unpack("<2f", ckpt.tensor_bytes("a")) == (1.0, 2.0)


def test_lfs_pointer(tmp_path):
    pointer = f"version https://git-lfs.github.com/spec/v1\noid sha256:{OID}\nsize 36000000\n".encode()
    (tmp_path / "adapter-final.pth").write_bytes(pointer)
    with pytest.raises(CheckpointError) as info:
        open_checkpoint(tmp_path / "adapter-final.pth")
    assert info.value.code == "LFS001"
    assert OID in info.value.message and "36000000" in info.value.message
    assert info.value.path == str(tmp_path / "adapter-final.pth")
    assert code_of(pointer.replace(b"size 36000000", b"size ?")) == "LFS001"


def test_unreadable_paths_raise_io_errors(tmp_path):
    with pytest.raises(RegistryIOError, match="cannot read"):
        open_checkpoint(tmp_path / "missing.pth")
    with pytest.raises(RegistryIOError):
        open_checkpoint(tmp_path)


def test_file_source_reads_exactly(tmp_path):
    (tmp_path / "f").write_bytes(b"0123456789")
    with FileSource(tmp_path / "f") as src:
        assert (src.size, src.read(2, 3), src.bytes_read) == (10, b"234", 3)
        with pytest.raises(CheckpointError):
            src.read(8, 3)


def test_bad_verify_mode():
    with pytest.raises(ValueError, match="verify_crc"):
        open_checkpoint(b"", verify_crc="some")


# --- fuzzing -------------------------------------------------------------------------------------


def _fuzz_seeds() -> list[bytes]:
    buf = io.BytesIO()
    torch.save({"a": torch.ones(2, 3, dtype=torch.bfloat16), "b": torch.arange(3.0)}, buf)
    sd = torch.nn.Linear(2, 2).state_dict()
    buf2 = io.BytesIO()
    torch.save(sd, buf2)
    light = lightning_bytes({"x": torch.ones(4, dtype=torch.float16)}, miss_json=b"{}")
    st = safetensors_bytes(GOOD_ST, struct.pack("<2f", 1, 2))
    return [buf.getvalue(), buf2.getvalue(), light, st]


SEEDS = _fuzz_seeds()


@st.composite
def mutated(draw) -> tuple[bytes, str]:
    data = bytearray(draw(st.sampled_from(SEEDS)))
    for _ in range(draw(st.integers(1, 6))):
        action = draw(st.sampled_from(["set", "set", "cut", "insert", "delete"]))
        pos = draw(st.integers(0, max(len(data) - 1, 0)))
        if action == "set" and data:
            data[pos] = draw(st.integers(0, 255))
        elif action == "cut":
            del data[pos:]
        elif action == "insert":
            data[pos:pos] = draw(st.binary(min_size=1, max_size=8))
        elif data:
            del data[pos : pos + draw(st.integers(1, 8))]
    return bytes(data), draw(st.sampled_from(["none", "metadata", "all"]))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(mutated())
def test_mutations_only_raise_checkpoint_error(case):
    data, mode = case
    try:
        ckpt = open_checkpoint(data, verify_crc=mode)
    except CheckpointError as exc:
        assert exc.code in RULES and exc.message
        return
    for name in ckpt.tensors:
        assert len(ckpt.tensor_bytes(name)) == ckpt.tensors[name].nbytes


PICKLE_SEED = tensor_pickle([T("w"), T("v", numel=2, key="0")])


@settings(max_examples=200, deadline=None, derandomize=True)
@given(st.data())
def test_pickle_mutations_only_raise_checkpoint_error(data):
    pkl = bytearray(PICKLE_SEED)
    for _ in range(data.draw(st.integers(1, 4))):
        pos = data.draw(st.integers(0, len(pkl) - 1))
        if data.draw(st.booleans()):
            pkl[pos] = data.draw(st.integers(0, 255))
        else:
            pkl[pos:pos] = data.draw(st.sampled_from([b"(", b"t", b"u", b"s", b"R", b"b", b"Q", b"h\x00", b"q\x00",
                                                      b"}", b")", b"\x85", b"N", b"\x88"]))  # fmt: skip
    try:
        open_checkpoint(with_pickle(bytes(pkl)))
    except CheckpointError as exc:
        assert exc.code in RULES


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16"])
@pytest.mark.parametrize("n", [0, 1, 7, 1000, 65_537])
@pytest.mark.parametrize("route", ["bytes", "numpy"])
def test_count_nonfinite_is_numpys_count(dtype, n, route, monkeypatch):
    """facts.count_nonfinite counts what numpy's isfinite counts, on both of its routes (C passes over the bytes
    below _NUMPY_FROM, numpy from there)."""
    import numpy as np

    from rwkv_registry.engine import facts
    from rwkv_registry.engine.facts import count_nonfinite

    monkeypatch.setattr(facts, "_NUMPY_FROM", 0 if route == "numpy" else 1 << 30)

    rng = np.random.default_rng(n)
    bits = rng.integers(0, 2**32 if dtype == "float32" else 2**16, size=n, dtype=np.uint64)
    # every exponent pattern around all-ones, and plain values, so that NaN, ±Inf and near misses all occur
    if n:
        bits[rng.integers(0, n, size=max(1, n // 5))] |= 0x7F800000 if dtype == "float32" else 0x7F80
        bits[rng.integers(0, n, size=max(1, n // 7))] &= ~np.uint64(0x00800000 if dtype == "float32" else 0x0080)
    if dtype == "float32":
        data = bits.astype("<u4").tobytes()
        expected = int(np.count_nonzero(~np.isfinite(np.frombuffer(data, dtype="<f4"))))
    elif dtype == "float16":
        data = bits.astype("<u2").tobytes()
        expected = int(np.count_nonzero(~np.isfinite(np.frombuffer(data, dtype="<f2"))))
    else:
        data = bits.astype("<u2").tobytes()
        as_f32 = (np.frombuffer(data, dtype="<u2").astype("<u4") << 16).view("<f4")
        expected = int(np.count_nonzero(~np.isfinite(as_f32)))
    assert count_nonfinite(data, dtype) == expected
    assert count_nonfinite(memoryview(data), dtype) == expected
    assert n < 1000 or 0 < expected < n  # the test data holds both kinds
