"""State files as their producers write them go through ``add`` and ``validate``: the verdict is the server's.

Producers (the writers cite their lines): the fp32 ``rwkv_state_tune`` (:mod:`state_tune_writer`,
``src/state_tuning/state_checkpoint.cpp``), the bf16 ``rwkv_state_tune`` (:mod:`bf16_trainer_writer`,
``src/bf16_training/model.cpp`` + ``src/io/pth_writer.cpp``) and RWKV-PEFT's state tuning (:mod:`peft_writer`,
the real ``torch.save``). rwkv_lightning_cuda's server takes every one of them (bf16 or fp32, ``[H, V, K]`` per
layer, nothing else); it refuses an fp16 State ("invalid shape or dtype for state tensor",
``src/server/rwkv_uploaded_state_store.cpp``), which RWKV-PEFT writes with ``--precision fp16``.

The first tests check the writers themselves against what the C++ lines say (entry order, no data descriptor,
no extra field, no alignment, no zip64, the transposition, the bf16 rounding) and against ``torch.load``.
"""

from __future__ import annotations

import hashlib
import json
import math
import pickletools
import struct
from pathlib import Path
from typing import Any

import pytest
from bf16_trainer_writer import bf16_state_bytes, float_to_bf16_bits, write_bf16_state
from peft_writer import peft_state_dict, write_peft_state
from state_registry import BASE, add_and_validate, arch_of, runtime_values
from state_tune_writer import state_tune_bytes, write_state_tune

torch = pytest.importorskip("torch")

L, H, N = 2, 2, 64  # regtools.TINY_ARCH: 2 layers, n_embd 128


# --- the writers: what the C++ lines say ------------------------------------------------------------------------


def _zip_entries(data: bytes) -> list[dict[str, Any]]:
    """The local headers of a zip written front to back (no data descriptors: sizes are in the headers)."""
    out = []
    at = 0
    while data[at : at + 4] == b"PK\x03\x04":
        _sig, version, flags, method, _t, _d, crc, csize, usize, nlen, xlen = struct.unpack_from(
            "<IHHHHHIIIHH", data, at
        )
        name = data[at + 30 : at + 30 + nlen].decode()
        start = at + 30 + nlen + xlen
        out.append(
            dict(
                name=name,
                version=version,
                flags=flags,
                method=method,
                crc=crc,
                size=usize,
                csize=csize,
                extra=xlen,
                data_offset=start,
            )
        )
        at = start + csize
    return out


def _check_lightning_zip(data: bytes, names: list[str]) -> list[dict[str, Any]]:
    entries = _zip_entries(data)
    assert [e["name"] for e in entries] == names
    assert {(e["version"], e["flags"], e["method"], e["extra"]) for e in entries} == {(20, 0, 0, 0)}
    assert all(e["size"] == e["csize"] for e in entries)
    assert b"PK\x06\x06" not in data and b"PK\x06\x07" not in data  # no zip64 end record nor locator
    assert b"PK\x07\x08" not in data  # no data descriptor
    eocd = data.rindex(b"PK\x05\x06")
    assert eocd == len(data) - 22  # no comment
    assert struct.unpack_from("<HH", data, eocd + 8) == (len(names), len(names))
    return entries


def test_state_tune_writer_follows_state_checkpoint_cpp() -> None:
    """Entries data.pkl, byteorder, data/0..L-1, version; stored, flags 0, no extra field: the tensor data are
    not 64-byte aligned (torch.save would align them); fp32 [H, V, K], the runtime [H, K, V] transposed."""
    rt = runtime_values(L, H)
    data = state_tune_bytes(L, H, N, rt)
    entries = _check_lightning_zip(
        data, ["archive/data.pkl", "archive/byteorder", "archive/data/0", "archive/data/1", "archive/version"]
    )
    tensors = [e for e in entries if e["name"].startswith("archive/data/")]
    assert any(e["data_offset"] % 64 for e in tensors)
    pkl = data[entries[0]["data_offset"] : entries[0]["data_offset"] + entries[0]["size"]]
    assert pkl.startswith(b"\x80\x02}(") and pkl.endswith(b"u.")
    ops = [(op.name, arg) for op, arg, _pos in pickletools.genops(pkl)]  # read, never run
    assert not {name for name, _ in ops} & {"BINPUT", "LONG_BINPUT", "MEMOIZE", "BINGET", "LONG_BINGET"}
    assert ("GLOBAL", "torch FloatStorage") in ops and ("BININT2", N * N) in ops  # stride n*n via pickle_int
    loaded = torch.load(_tmp_bytes(data), weights_only=True)
    assert list(loaded) == ["blocks.0.att.time_state", "blocks.1.att.time_state"]
    for layer, t in enumerate(loaded.values()):
        assert t.dtype == torch.float32 and list(t.shape) == [H, N, N]
        lane = H * N * N
        for h, k, v in ((0, 0, 1), (1, 5, 63), (0, 63, 2)):
            want = struct.unpack("<f", struct.pack("<f", rt[layer * lane + (h * N + k) * N + v]))[0]
            assert t[h, v, k].item() == want  # pth[h][v][k] = runtime[h][k][v]


def test_bf16_writer_follows_model_cpp_and_pth_writer_cpp() -> None:
    """Entries data/0..L-1, data.pkl, byteorder, version (write_pth, no miss.json); BFloat16Storage; each value
    rounded as float_to_bf16_bits (round to nearest even, the rounding of torch's own conversion)."""
    rt = runtime_values(L, H, seed=1)
    data = bf16_state_bytes(L, H, N, rt)
    _check_lightning_zip(
        data, ["archive/data/0", "archive/data/1", "archive/data.pkl", "archive/byteorder", "archive/version"]
    )
    assert b"ctorch\nBFloat16Storage\n" in data
    loaded = torch.load(_tmp_bytes(data), weights_only=True)
    lane = H * N * N
    for layer, t in enumerate(loaded.values()):
        assert t.dtype == torch.bfloat16 and list(t.shape) == [H, N, N]
        runtime = torch.tensor(rt[layer * lane : (layer + 1) * lane], dtype=torch.float32).view(H, N, N)
        assert torch.equal(t, runtime.transpose(1, 2).to(torch.bfloat16))
    for x in (1.0, 1.00390625, 1.01171875, -3.1e-5, 3.0e38):  # ties to even, both ways; the largest finite
        assert (
            float_to_bf16_bits(x)
            == torch.tensor([x], dtype=torch.float32).to(torch.bfloat16).view(torch.int16)[0].item() & 0xFFFF
        )


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (math.nan, "nonfinite state export"),
        (math.inf, "nonfinite state export"),
        (3.4e38, "BF16 state export overflow"),
    ],
)
def test_bf16_writer_refuses_what_the_trainer_refuses(value: float, message: str) -> None:
    rt = runtime_values(1, 1)
    rt[7] = value
    with pytest.raises(ValueError, match=message):
        bf16_state_bytes(1, 1, N, rt)


def test_peft_writer_is_torch_save_of_the_time_states() -> None:
    """Only ``blocks.N.att.time_state`` (``'state' in name``) of [H, 64, 64]; with DeepSpeed's flat buffer, one
    storage for all layers, each tensor at its own offset."""
    plain = torch.load(_tmp_bytes(_saved(peft_state_dict(L, H))), weights_only=True)
    assert list(plain) == ["blocks.0.att.time_state", "blocks.1.att.time_state"]
    assert {(t.dtype, tuple(t.shape)) for t in plain.values()} == {(torch.bfloat16, (H, N, N))}
    flat = torch.load(_tmp_bytes(_saved(peft_state_dict(L, H, flat_buffer=True, pad=8))), weights_only=True)
    a, b = flat.values()
    assert a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()
    assert (a.storage_offset(), b.storage_offset()) == (0, H * N * N)
    assert a.untyped_storage().nbytes() == (2 * H * N * N + 8) * 2


def _saved(state_dict: dict[str, Any]) -> bytes:
    import io

    buf = io.BytesIO()
    torch.save(state_dict, buf)
    return buf.getvalue()


def _tmp_bytes(data: bytes) -> Any:
    import io

    return io.BytesIO(data)


# --- the verdicts: add and validate -----------------------------------------------------------------------------


def _state_tune(tmp: Path, n_layer: int, heads: int, step: int | None) -> Path:
    return write_state_tune(tmp / "out", n_layer, heads, N, runtime_values(n_layer, heads), step=step)


def _bf16(tmp: Path, n_layer: int, heads: int, step: int | None) -> Path:
    return write_bf16_state(tmp / "out", n_layer, heads, N, runtime_values(n_layer, heads, seed=2), step=step)


def _peft(tmp: Path, n_layer: int, heads: int, dtype: str, flat: bool) -> Path:
    return write_peft_state(tmp / "proj", 0, peft_state_dict(n_layer, heads, dtype=dtype, flat_buffer=flat, pad=16))


PRODUCERS = {
    "state_tune-fp32-step": lambda tmp, n, h: _state_tune(tmp, n, h, 1224),
    "state_tune-fp32-final": lambda tmp, n, h: _state_tune(tmp, n, h, None),
    "bf16-trainer-step": lambda tmp, n, h: _bf16(tmp, n, h, 1224),
    "bf16-trainer-final": lambda tmp, n, h: _bf16(tmp, n, h, None),
    "peft-bf16": lambda tmp, n, h: _peft(tmp, n, h, "bfloat16", False),
    "peft-fp32": lambda tmp, n, h: _peft(tmp, n, h, "float32", False),
    "peft-bf16-deepspeed-flat-buffer": lambda tmp, n, h: _peft(tmp, n, h, "bfloat16", True),
}
NAMES = {
    "state_tune-fp32-step": "state-step-00001224.pth",
    "state_tune-fp32-final": "state-final.pth",
    "bf16-trainer-step": "state-step-00001224.pth",
    "bf16-trainer-final": "state-final.pth",
}


@pytest.mark.parametrize("producer", sorted(PRODUCERS))
@pytest.mark.parametrize(("n_layer", "n_embd"), [(2, 128), (3, 1024)], ids=["tiny", "wide"])
def test_every_producers_state_is_accepted(
    producer: str, n_layer: int, n_embd: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The server takes each of these files (upload and load: bf16 or fp32, [H, 64, 64] for every layer of the
    base, layers 0..L-1 once each): ``add`` registers it byte for byte and ``validate`` finds nothing on it. The
    wide base (16 heads) makes the trainers write the numel 65536 as BININT (``'J'``), the tiny one as BININT2."""
    state = PRODUCERS[producer](tmp_path, n_layer, n_embd // 64)
    if producer in NAMES:
        assert state.name == NAMES[producer]
    verdict = add_and_validate(capsys, tmp_path, state, arch_of(n_layer, n_embd))
    assert verdict.add.rc == 0, verdict.add.err
    assert f"added state entry {state.stem} at {BASE}/state/v1/{state.name}" in verdict.add.out
    assert verdict.validate.rc == 0 and verdict.validate.json()["ok"] is True
    assert verdict.findings == []
    root = tmp_path / "reg"
    [entry] = json.loads((root / "index.json").read_text())["entries"]
    assert entry["method"] == "state"
    assert entry["file"]["sha256"] == hashlib.sha256(state.read_bytes()).hexdigest()
    assert (root / entry["path"]).read_bytes() == state.read_bytes()


def test_an_fp16_peft_state_is_refused_as_the_server_refuses_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """RWKV-PEFT with ``--precision fp16`` saves HalfStorage time states; the server refuses them on upload
    ("invalid shape or dtype for state tensor"): so does ``add``, and the registry is left as it was."""
    state = _peft(tmp_path, L, H, "float16", False)
    verdict = add_and_validate(capsys, tmp_path, state)
    assert verdict.add.rc == 1
    assert f"{state} refused: STA003 blocks.0.att.time_state is float16 (and 1 more: STA003)" in verdict.add.err
    assert json.loads((tmp_path / "reg" / "index.json").read_text())["entries"] == []
    assert verdict.validate.rc == 0
