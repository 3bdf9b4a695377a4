"""The fused time-mix kernels compile for an H100/H200 (sm_90) without a
GPU, at the 7.2B shape's constants: a kernel that only Triton's interpreter accepts fails here."""

from __future__ import annotations

import os

import pytest

pytest.importorskip("triton")
pytestmark = pytest.mark.skipif(
    os.environ.get("TRITON_INTERPRET", "0") not in ("", "0"), reason="TRITON_INTERPRET=1 makes every kernel interpreted"
)

from wkv7_helpers import compile_for_sm90  # noqa: E402

from rwkv_registry.kernels.timemix import launch as tm_launch  # noqa: E402

DTYPES = ["bf16", "fp16", "fp32"]


def pointers(dtype: str, *names: str) -> dict[str, str]:
    return {name: f"*{dtype}" for name in names}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n_mix", [6, 1])
def test_token_mix_compiles(dtype: str, n_mix: int) -> None:
    sig = pointers(dtype, "x_ptr", "shift_ptr", "shift_out_ptr", *(f"mu{i}_ptr" for i in range(6)))
    sig.update(pointers(dtype, *(f"out{i}_ptr" for i in range(6))))
    sig.update({"T": "i32", "C": "i32"})
    constants = {"N_MIX": n_mix, "BLOCK_C": tm_launch.TUNING["block_c"]}
    assert compile_for_sm90(tm_launch._kernels(False).token_mix_kernel, sig, constants, tm_launch.TUNING["num_warps"])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("has_v", [False, True])
def test_gates_compile(dtype: str, has_v: bool) -> None:
    sig = pointers(dtype, "k_ptr", "v_ptr", "wz_ptr", "az_ptr", "vz_ptr", "v_first_ptr")
    sig.update(pointers(dtype, "w0_ptr", "a0_ptr", "v0_ptr", "k_k_ptr", "k_a_ptr"))
    sig.update({"w_out_ptr": "*fp32", **pointers(dtype, "k_out_ptr", "v_out_ptr", "a_out_ptr", "b_out_ptr")})
    sig["C"] = "i32"
    constants = {"N": 64, "HB": tm_launch._heads_per_program(64), "HAS_V": has_v}
    assert compile_for_sm90(tm_launch._kernels(False).tm_gates_kernel, sig, constants, tm_launch.TUNING["num_warps"])


@pytest.mark.parametrize("dtype", DTYPES)
def test_output_compiles(dtype: str) -> None:
    sig = pointers(dtype, "y_ptr", "r_ptr", "k_ptr", "v_ptr", "g_ptr", "ln_w_ptr", "ln_b_ptr", "r_k_ptr", "out_ptr")
    sig.update({"C": "i32", "eps": "fp32"})
    constants = {"N": 64, "HB": tm_launch._heads_per_program(64)}
    assert compile_for_sm90(tm_launch._kernels(False).tm_output_kernel, sig, constants, tm_launch.TUNING["num_warps"])
