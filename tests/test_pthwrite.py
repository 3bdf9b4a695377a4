"""The torch-free checkpoint writer, checked against torch.save and the independent lightning writer."""

from __future__ import annotations

import collections
import io
import struct
import zipfile

import pytest
import torch
from conformance.lightning_cpp import lightning_bytes
from regtools import without_serialization_id

from rwkv_registry.core.errors import CheckpointError, UsageError
from rwkv_registry.formats import pthwrite
from rwkv_registry.formats.ckpt import open_checkpoint
from rwkv_registry.formats.pthwrite import RawTensor, write_pth


def raw(t: torch.Tensor) -> RawTensor:
    data = t.contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()
    return RawTensor(str(t.dtype).removeprefix("torch."), tuple(t.shape), data)


def mixed() -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(3)
    return {
        "emb.weight": torch.randn(5, 3, generator=g).to(torch.bfloat16),
        "half": torch.randn(7, generator=g).to(torch.float16),
        "four.dims": torch.randn(1, 2, 3, 4, generator=g),
        "scalar": torch.tensor(-1.25, dtype=torch.float64),
        "empty": torch.zeros(0, 3, dtype=torch.float16),
        "long": torch.tensor([-(2**40), 2**40 + 3]),
        "int": torch.arange(-2, 2, dtype=torch.int32),
        "short": torch.arange(3, dtype=torch.int16),
        "char": torch.tensor([-128, 127], dtype=torch.int8),
        "byte": torch.arange(250, 256, dtype=torch.uint8),
        "flag": torch.tensor([True, False]),
        "numel 70000": torch.zeros(70000, dtype=torch.int8),
    }


def assert_loads_equal(path_or_buf, tensors: dict[str, torch.Tensor]) -> None:
    loaded = torch.load(path_or_buf, weights_only=True)
    assert list(loaded) == list(tensors)
    for name, t in tensors.items():
        assert loaded[name].dtype == t.dtype and torch.equal(loaded[name], t), name


@pytest.mark.parametrize(
    "tensors",
    [
        pytest.param(mixed(), id="mixed"),
        pytest.param({"one": torch.ones(1)}, id="one"),
        pytest.param({}, id="none"),
        pytest.param({f"w{i}": torch.full((2,), float(i)) for i in range(1001)}, id="1001"),
    ],
)
def test_torch_layout_is_what_torch_save_writes(tmp_path, tensors):
    (tmp_path / "torch").mkdir()
    (tmp_path / "ours").mkdir()
    torch.save(collections.OrderedDict(tensors), tmp_path / "torch" / "model.pth")
    write_pth(tmp_path / "ours" / "model.pth", {k: raw(v) for k, v in tensors.items()})
    theirs = (tmp_path / "torch" / "model.pth").read_bytes()
    ours = (tmp_path / "ours" / "model.pth").read_bytes()
    assert without_serialization_id(ours, "model") == without_serialization_id(theirs, "model")
    assert_loads_equal(tmp_path / "ours" / "model.pth", tensors)


def test_torch_layout_round_trip_and_prefixes(tmp_path):
    tensors = mixed()
    path = tmp_path / "state.v1.pth"
    write_pth(path, {k: raw(v) for k, v in tensors.items()})
    ckpt = open_checkpoint(path, verify_crc="all")
    assert (ckpt.writer, ckpt.prefix, ckpt.miss_manifest) == ("torch", "state.v1", None)
    for name, t in tensors.items():
        info = ckpt.tensors[name]
        assert (info.dtype, info.shape) == (raw(t).dtype, tuple(t.shape))
        assert bytes(ckpt.tensor_bytes(name)) == raw(t).data
    assert all(ckpt.tensors[n].data_offset % 64 == 0 for n in tensors)
    assert_loads_equal(path, tensors)
    buf = io.BytesIO()
    write_pth(buf, {"x": raw(torch.ones(2))})
    assert open_checkpoint(buf.getvalue()).prefix == "archive"


def test_a_manifest_is_read_only_as_archive_miss_json(tmp_path):
    """The server reads archive/miss.json alone: under the torch layout's default prefix (the file's stem) the
    manifest is a member no reader reads (PTH019); with prefix archive it is the manifest."""
    tensors = {"x": raw(torch.ones(2))}
    path = tmp_path / "state.v1.pth"
    write_pth(path, tensors, extra_entries={"miss.json": b'{"a":1}'})
    with pytest.raises(CheckpointError) as info:
        open_checkpoint(path)
    assert info.value.code == "PTH019" and "state.v1/miss.json" in info.value.message
    write_pth(path, tensors, prefix="archive", extra_entries={"miss.json": b'{"a":1}'})
    assert open_checkpoint(path).miss_manifest == b'{"a":1}'
    write_pth(path, {"x": raw(torch.ones(2))}, prefix="custom")
    assert open_checkpoint(path).prefix == "custom"


def test_torch_layout_is_deterministic(tmp_path):
    tensors = {k: raw(v) for k, v in mixed().items()}
    write_pth(tmp_path / "a.pth", tensors)
    write_pth(tmp_path / "a2.pth", tensors, prefix="a")
    assert (tmp_path / "a.pth").read_bytes() == (tmp_path / "a2.pth").read_bytes()
    changed = dict(tensors, half=RawTensor("float16", (7,), bytes(14)))
    write_pth(tmp_path / "a3.pth", changed, prefix="a")
    assert (tmp_path / "a3.pth").read_bytes() != (tmp_path / "a.pth").read_bytes()


def test_lightning_layout_matches_the_independent_writer(tmp_path):
    g = torch.Generator().manual_seed(5)
    tensors = {
        "blocks.0.att.receptance.weight.D": torch.randn(300, 16, generator=g).to(torch.bfloat16),
        "blocks.0.ffn.key.weight.D": torch.randn(70000, 1, generator=g).to(torch.float16),
        "blocks.1.att.time_state": torch.randn(2, 3, 4, 5, generator=g),
    }
    manifest = b'{"format_version":1,"method":"miss"}'
    path = tmp_path / "adapter-final.pth"
    write_pth(path, {k: raw(v) for k, v in tensors.items()}, layout="lightning", extra_entries={"miss.json": manifest})
    assert path.read_bytes() == lightning_bytes(tensors, miss_json=manifest)
    ckpt = open_checkpoint(path, verify_crc="all")
    assert (ckpt.writer, ckpt.prefix, ckpt.miss_manifest) == ("lightning", "archive", manifest)
    assert_loads_equal(path, tensors)


def test_zip64_records_load_everywhere(tmp_path, monkeypatch):
    """Force the >4 GiB code path (zip64 extras, 64-bit descriptors) on a small file."""
    monkeypatch.setattr(pthwrite, "_ZIP64_LIMIT", 100)
    tensors = {"small": torch.ones(3), "big": torch.arange(200, dtype=torch.int16), "after": torch.ones(2)}
    path = tmp_path / "z.pth"
    write_pth(path, {k: raw(v) for k, v in tensors.items()})
    data = path.read_bytes()
    assert b"PK\x06\x06" in data and data.count(struct.pack("<HH", 1, 8)) >= 2  # offset-only zip64 extras
    with zipfile.ZipFile(path) as z:
        assert z.testzip() is None
    ckpt = open_checkpoint(path, verify_crc="all")
    assert bytes(ckpt.tensor_bytes("big")) == raw(tensors["big"]).data
    assert_loads_equal(path, tensors)


def test_memoryview_data(tmp_path):
    data = memoryview(bytearray(struct.pack("<3f", 1, 2, 3)))
    write_pth(tmp_path / "m.pth", {"m": RawTensor("float32", (3,), data)})
    assert_loads_equal(tmp_path / "m.pth", {"m": torch.tensor([1.0, 2.0, 3.0])})


@pytest.mark.parametrize(
    ("tensors", "kw"),
    [
        ({"x": RawTensor("complex64", (1,), bytes(8))}, {}),
        ({"x": RawTensor("float32", (2,), bytes(4))}, {}),
        ({"x": RawTensor("float32", (-1,), b"")}, {}),
        ({"x": RawTensor("int64", (1,), bytes(8))}, {"layout": "lightning"}),
        ({"x": RawTensor("float32", (0,), b"")}, {"layout": "lightning"}),
        ({"x": RawTensor("float32", (1,), bytes(4))}, {"layout": "safetensors"}),
        ({"x": RawTensor("float32", (1,), bytes(4))}, {"prefix": "../up"}),
        ({"x": RawTensor("float32", (1,), bytes(4))}, {"prefix": ""}),
        ({"x": RawTensor("float32", (1,), bytes(4))}, {"extra_entries": {"data.pkl": b""}}),
        ({"x": RawTensor("float32", (1,), bytes(4))}, {"extra_entries": {"sub/x.json": b""}}),
    ],
)
def test_bad_arguments(tmp_path, tensors, kw):
    with pytest.raises(UsageError):
        write_pth(tmp_path / "bad.pth", tensors, **kw)
    assert not (tmp_path / "bad.pth").exists()
