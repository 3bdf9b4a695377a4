"""The Triton kernels compile for an H100/H200 (sm_90) without a GPU: Triton's front end, its
passes and the bundled ptxas run on the CPU, so a kernel that only the interpreter accepts fails here.
Register spills are reported, not failed on."""

from __future__ import annotations

import os

import pytest
import torch

triton = pytest.importorskip("triton")
pytestmark = pytest.mark.skipif(
    os.environ.get("TRITON_INTERPRET", "0") not in ("", "0"), reason="TRITON_INTERPRET=1 makes every kernel interpreted"
)

from wkv7_helpers import compile_for_sm90  # noqa: E402

from rwkv_registry.kernels.wkv7 import launch  # noqa: E402

torch_dtype = {"bf16": torch.bfloat16, "fp32": torch.float32}

POINTERS = ("r_ptr", "w_ptr", "k_ptr", "v_ptr", "a_ptr", "b_ptr", "y_ptr")


def _compile(kernel: object, dtype: str, constants: dict[str, object], num_warps: int) -> object:
    signature = {name: f"*{dtype}" for name in POINTERS}
    signature.update({"s0_ptr": "*fp32", "st_ptr": "*fp32", "cu_seqlens_ptr": "*i32", "seq_len": "i32"})
    return compile_for_sm90(kernel, signature, constants, num_warps)


@pytest.mark.slow
@pytest.mark.parametrize(("dtype", "varlen"), [("bf16", False), ("fp32", True)], ids=["bf16", "fp32-varlen"])
def test_chunk_kernel_compiles_for_sm90(dtype: str, varlen: bool) -> None:
    """At the 7.2B shape, with the dot precision the launcher uses on CUDA."""
    chunk, _ = launch._triton_modules(False)
    constants = {
        "H": 64,
        "K": 64,
        "V": 64,
        "BT": 16,
        "LOG2_BT": 4,
        "BV": 32,
        "LOG_DECAY_MIN": chunk.log_decay_min(16),
        "USE_INITIAL_STATE": True,
        "IS_VARLEN": varlen,
        **dict(zip(("PRECISION", "PRECISION_INV"), launch.dot_precisions(torch_dtype[dtype], "cuda"), strict=True)),
    }
    compiled = _compile(chunk.wkv7_chunk_fwd_kernel, dtype, constants, num_warps=launch.TUNING["chunk"]["num_warps"])
    assert compiled.asm["cubin"]


@pytest.mark.slow
def test_step_kernel_compiles_for_sm90() -> None:
    _, fused = launch._triton_modules(False)
    constants = {"H": 64, "K": 64, "V": 64, "BV": 64, "USE_INITIAL_STATE": True, "IS_VARLEN": False}
    compiled = _compile(fused.wkv7_fused_recurrent_fwd_kernel, "bf16", constants, num_warps=4)
    assert compiled.asm["cubin"]
