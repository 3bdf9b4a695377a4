"""Loading bases: architecture from shapes, dtypes, no second copy, clear refusals."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch
from model_helpers import rel_err

from rwkv_registry.model import RWKV7, ModelError, RWKV7Config, WeightsFormatError
from rwkv_registry.model.tiny import make_tiny_base, save_tensors, tiny_base_tensors, tiny_config

TOKS = [[1, 200, 3000, 40000, 65535]]


def test_state_dict_has_the_file_keys_and_shapes(tiny_base: Path) -> None:
    raw = torch.load(tiny_base, weights_only=True)
    model = RWKV7.from_pth(tiny_base, dtype=torch.bfloat16)
    sd = model.state_dict()
    assert sd.keys() == raw.keys()
    for k, v in raw.items():
        assert sd[k].shape == v.shape and torch.equal(sd[k], v), k


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(n_layer=1, n_embd=64, d_decay=4, d_aaa=8, d_mv=2, d_gate=16, vocab=300),
        dict(n_layer=4, n_embd=192, d_decay=24, d_aaa=12, d_mv=6, d_gate=40, vocab=500, layer0_v=False),
    ],
    ids=["L1-C64", "L4-C192-no-v0"],
)
def test_architecture_is_read_from_shapes(tmp_path: Path, kwargs: dict) -> None:
    path = make_tiny_base(tmp_path / "b.pth", **kwargs)
    cfg = RWKV7.from_pth(path).config
    assert cfg.n_layer == kwargs["n_layer"] and cfg.n_embd == kwargs["n_embd"]
    assert cfg.vocab_size == kwargs["vocab"] and cfg.n_head == kwargs["n_embd"] // 64 and cfg.head_size == 64
    assert (cfg.d_decay, cfg.d_aaa, cfg.d_gate) == (kwargs["d_decay"], kwargs["d_aaa"], kwargs["d_gate"])
    if kwargs["n_layer"] > 1:
        assert cfg.d_mv == kwargs["d_mv"]
    assert cfg.dim_ffn == 4 * kwargs["n_embd"]
    assert (cfg.d_mv0 is None) == (kwargs.get("layer0_v") is False)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/maps")
def test_same_dtype_on_cpu_keeps_the_file_mapping(tiny_base: Path) -> None:
    model = RWKV7.from_pth(tiny_base, dtype=torch.bfloat16)
    ranges = []
    for line in Path("/proc/self/maps").read_text().splitlines():
        if line.endswith(str(tiny_base.resolve())):
            lo, hi = (int(x, 16) for x in line.split()[0].split("-"))
            ranges.append((lo, hi))
    assert ranges, "the base file is not memory-mapped"
    for name in ("emb.weight", "head.weight", "blocks.1.ffn.key.weight"):
        ptr = model.get_parameter(name).data_ptr()
        assert any(lo <= ptr < hi for lo, hi in ranges), name


def test_from_state_dict_does_not_copy_tensors_already_in_dtype(tiny_base: Path) -> None:
    raw = torch.load(tiny_base, weights_only=True, mmap=True)
    model = RWKV7.from_state_dict(raw, dtype=torch.bfloat16)
    assert model.emb.weight.data_ptr() == raw["emb.weight"].data_ptr()
    as_fp32 = RWKV7.from_state_dict(raw, dtype=torch.float32)
    assert as_fp32.emb.weight.dtype == torch.float32
    assert torch.equal(as_fp32.emb.weight, raw["emb.weight"].float())


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "fp16"])
def test_half_precision_runs_close_to_fp32(tiny_base: Path, dtype: torch.dtype) -> None:
    ref, _ = RWKV7.from_pth(tiny_base, dtype=torch.float32).forward(torch.tensor(TOKS))
    model = RWKV7.from_pth(tiny_base, dtype=dtype)
    logits, state = model.forward(torch.tensor(TOKS))
    assert model.dtype == dtype and logits.dtype == torch.float32
    assert state.layers[0].wkv.dtype == torch.float32 and state.layers[0].att_shift.dtype == dtype
    assert rel_err(logits, ref) < (0.3 if dtype == torch.bfloat16 else 0.05)
    assert logits.argmax() == ref.argmax()


def test_fingerprint_is_the_sha256_of_the_file(tiny_base: Path) -> None:
    import hashlib

    model = RWKV7.from_pth(tiny_base)
    assert model.base_fingerprint == hashlib.sha256(tiny_base.read_bytes()).hexdigest()
    assert RWKV7.from_pth(tiny_base, fingerprint="ab" * 32).base_fingerprint == "ab" * 32


# ------------------------------------------------------------------------------------------ refusals


def _small() -> dict[str, torch.Tensor]:
    return tiny_base_tensors(tiny_config(n_layer=2, n_embd=64, vocab=100))


def test_missing_tensor_is_named(tmp_path: Path) -> None:
    sd = _small()
    del sd["blocks.1.att.k_a"]
    path = save_tensors(tmp_path / "b.pth", sd)
    with pytest.raises(WeightsFormatError) as e:
        RWKV7.from_pth(path)
    assert str(e.value) == f"{path}: not a plain RWKV-7 (x070) base: missing ['blocks.1.att.k_a']"


def test_unknown_tensor_is_named(tmp_path: Path) -> None:
    sd = _small()
    sd["blocks.0.ffn.s_emb.weight"] = torch.zeros(100, 32)  # a DeepEmbed model
    path = save_tensors(tmp_path / "b.pth", sd)
    with pytest.raises(WeightsFormatError, match=r"unexpected \['blocks.0.ffn.s_emb.weight'\]"):
        RWKV7.from_pth(path)


def test_wrong_shape_is_named(tmp_path: Path) -> None:
    sd = _small()
    sd["blocks.1.att.g2"] = torch.zeros(3, 64)
    path = save_tensors(tmp_path / "b.pth", sd)
    with pytest.raises(WeightsFormatError) as e:
        RWKV7.from_pth(path)
    assert str(e.value) == f"{path}: tensor 'blocks.1.att.g2' has shape [3, 64], expected [32, 64]"


def test_not_rwkv7_is_refused(tmp_path: Path) -> None:
    sd = _small()
    del sd["blocks.0.att.r_k"]
    path = save_tensors(tmp_path / "v6.pth", sd)
    with pytest.raises(WeightsFormatError) as e:
        RWKV7.from_pth(path)
    assert str(e.value) == f"{path}: not an RWKV-7 (x070) checkpoint: tensor 'blocks.0.att.r_k' is missing"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (
            b"version https://git-lfs.github.com/spec/v1\noid sha256:" + b"0" * 64 + b"\nsize 9\n",
            "is a Git LFS pointer, not the weights",
        ),
        (b"PK\x03\x04 truncated", "is not a PyTorch zip checkpoint"),
        (b"just some text", "is not a PyTorch zip checkpoint"),
    ],
    ids=["lfs-pointer", "truncated", "text"],
)
def test_unreadable_files_are_refused(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "base.pth"
    path.write_bytes(content)
    with pytest.raises(WeightsFormatError, match=message) as e:
        RWKV7.from_pth(path)
    assert str(e.value).startswith(f"{path}: ")


def test_missing_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(WeightsFormatError) as e:
        RWKV7.from_pth(tmp_path / "nope.pth")
    assert str(e.value) == f"{tmp_path / 'nope.pth'}: no such base checkpoint"


def test_non_dict_checkpoint_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "list.pth"
    torch.save([torch.zeros(2)], path)
    with pytest.raises(WeightsFormatError, match="holds a list, expected a flat dict of named tensors"):
        RWKV7.from_pth(path)


@pytest.mark.parametrize(
    ("tokens", "message"),
    [
        (torch.tensor([1, 2]), r"tokens must be a LongTensor \[B, T\], got torch.int64 \[2\]"),
        (torch.tensor([[1.0]]), r"tokens must be a LongTensor \[B, T\], got torch.float32 \[1, 1\]"),
        (torch.tensor([[1, 70000]]), r"token ids must lie in \[0, 65536\), got range \[1, 70000\]"),
        (torch.zeros(1, 0, dtype=torch.long), r"tokens must not be empty, got shape \[1, 0\]"),
    ],
    ids=["1d", "float", "out-of-range", "empty"],
)
def test_bad_tokens_are_refused(model: RWKV7, tokens: torch.Tensor, message: str) -> None:
    with pytest.raises(ModelError, match=message):
        model.forward(tokens)


def test_state_of_other_batch_is_refused(model: RWKV7) -> None:
    with pytest.raises(ModelError, match="state holds 2 layers x batch 3, tokens need 2 layers x batch 1"):
        model.forward(torch.tensor([[1]]), model.new_state(3))


def test_config_from_shapes_names_the_source() -> None:
    with pytest.raises(WeightsFormatError, match=r"^x.pth: no 'blocks.N.\*' tensors; not an RWKV checkpoint$"):
        RWKV7Config.from_shapes({"emb.weight": (10, 64)}, source="x.pth")


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_bf16_matches_cpu_fp32(tiny_base: Path) -> None:
    ref, _ = RWKV7.from_pth(tiny_base).forward(torch.tensor(TOKS))
    model = RWKV7.from_pth(tiny_base, device="cuda", dtype=torch.bfloat16)
    logits, state = model.forward(torch.tensor(TOKS, device="cuda"))
    assert state.layers[0].wkv.device.type == "cuda"
    assert rel_err(logits.cpu(), ref) < 0.3


def test_a_pickle_with_code_is_refused_unrun_and_said_so(tmp_path: Path) -> None:
    import os

    class Evil:
        def __reduce__(self) -> tuple[object, tuple[str]]:
            return (os.system, (f"touch {tmp_path / 'pwned'}",))

    path = tmp_path / "base.pth"
    torch.save({"emb.weight": torch.zeros(2), "x": Evil()}, path)
    with pytest.raises(WeightsFormatError, match=r"pickled objects other than tensors: .*system; refused, never run"):
        RWKV7.from_pth(path)
    assert not (tmp_path / "pwned").exists()
    with pytest.raises(WeightsFormatError, match="is a directory"):
        RWKV7.from_pth(tmp_path)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU-only case")
def test_cuda_without_a_gpu_is_refused_before_reading(tmp_path: Path) -> None:
    from rwkv_registry.model.errors import ModelError

    missing = tmp_path / "never-read.pth"  # the check comes first: the file need not even exist
    with pytest.raises(ModelError, match="sees no CUDA device"):
        RWKV7.from_pth(missing, device="cuda")
