"""The public ``wkv7`` API: argument checks (ValueError naming the shapes), backend choice, the
lazy Triton import, and the reference checked against closed forms that share none of its code."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
import torch
from wkv7_helpers import TOL, assert_close, new_seed, random_state, reference, rwkv_inputs

from rwkv_registry.kernels.wkv7 import BACKENDS, pick_backend, wkv7, wkv7_naive

NAMES = ("r", "w", "k", "v", "a", "b")


def _ins(shape: tuple[int, ...] = (1, 5, 2, 16), dtype: torch.dtype = torch.float32) -> dict[str, torch.Tensor]:
    return rwkv_inputs(*shape, dtype, seed=0)


# ------------------------------------------------------------------------------ argument checks


def test_mismatched_shapes_name_every_shape() -> None:
    ins = _ins()
    ins["v"] = torch.zeros(1, 5, 2, 32)
    with pytest.raises(ValueError) as err:
        wkv7(*ins.values())
    assert str(err.value) == (
        "wkv7: r, w, k, v, a, b must share one shape [B, T, H, N]; got r=[1, 5, 2, 16], w=[1, 5, 2, 16], "
        "k=[1, 5, 2, 16], v=[1, 5, 2, 32], a=[1, 5, 2, 16], b=[1, 5, 2, 16]"
    )


def test_three_dimensional_input() -> None:
    ins = {k: t[0] for k, t in _ins().items()}
    with pytest.raises(ValueError, match=r"must be \[B, T, H, N\]; got r=\[5, 2, 16\]"):
        wkv7(*ins.values())


def test_wrong_state_shape_prints_both_shapes() -> None:
    ins = _ins()
    with pytest.raises(ValueError) as err:
        wkv7(*ins.values(), torch.zeros(1, 2, 16, 8))
    assert str(err.value) == (
        "wkv7: state must be [num_seqs, H, N, N] = [1, 2, 16, 16] for r=[1, 5, 2, 16]; got [1, 2, 16, 8]"
    )


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"k": torch.bfloat16}, r"share one dtype, and w that dtype or float32"),
        ({"r": torch.bfloat16, "k": torch.bfloat16, "v": torch.bfloat16, "a": torch.bfloat16}, r"share one dtype"),
    ],
    ids=["k-bf16", "b-fp32-alone"],
)
def test_mixed_dtypes(change: dict[str, torch.dtype], message: str) -> None:
    ins = _ins()
    for name, dtype in change.items():
        ins[name] = ins[name].to(dtype)
    with pytest.raises(ValueError, match=message):
        wkv7(*ins.values())


def test_int_inputs_rejected() -> None:
    ins = {k: torch.zeros(1, 3, 1, 16, dtype=torch.int32) for k in NAMES}
    with pytest.raises(ValueError, match=r"dtype torch.int32 is not supported by backend 'auto'"):
        wkv7(*ins.values())


def test_fp64_only_for_naive() -> None:
    ins = _ins(dtype=torch.float64)
    with pytest.raises(ValueError, match=r"not supported by backend 'chunk'"):
        wkv7(*ins.values(), backend="chunk")
    y, _ = wkv7(*ins.values(), backend="naive")
    assert y.dtype == torch.float64


@pytest.mark.parametrize("n", [8, 24, 256])
def test_head_size_limits_of_triton(n: int) -> None:
    ins = _ins((1, 3, 1, n))
    with pytest.raises(ValueError, match=rf"head size N={n} is not supported by the Triton kernels"):
        wkv7(*ins.values(), backend="chunk")
    assert pick_backend(torch.device("cpu"), 3, n) == "naive"


def test_unknown_backend() -> None:
    with pytest.raises(ValueError, match=r"backend must be one of \('auto', 'naive', 'chunk', 'step'\); got 'cuda'"):
        wkv7(*_ins().values(), backend="cuda")
    assert BACKENDS == ("auto", "naive", "chunk", "step")


@pytest.mark.parametrize(
    ("offsets", "message"),
    [
        ([0, 3, 2, 5], r"must rise from 0 to T=5 and never fall; got \[0, 3, 2, 5\]"),
        ([0, 3, 4], r"must rise from 0 to T=5"),
        ([1, 5], r"must rise from 0"),
        ([5], r"at least 2 entries; got \[1\]"),
    ],
    ids=["falls", "short", "not-from-0", "one-entry"],
)
def test_bad_cu_seqlens(offsets: list[int], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        wkv7(*_ins().values(), cu_seqlens=torch.tensor(offsets))


def test_cu_seqlens_needs_batch_one_and_ints() -> None:
    with pytest.raises(ValueError, match=r"B must be 1; got r=\[2, 5, 2, 16\]"):
        wkv7(*_ins((2, 5, 2, 16)).values(), cu_seqlens=torch.tensor([0, 5]))
    with pytest.raises(ValueError, match=r"cu_seqlens must be int32 or int64, got torch.float32"):
        wkv7(*_ins().values(), cu_seqlens=torch.tensor([0.0, 5.0]))


def test_state_out_must_be_fp32_contiguous() -> None:
    ins = _ins()
    with pytest.raises(ValueError, match=r"state_out must be a contiguous float32 tensor; got torch.bfloat16"):
        wkv7(*ins.values(), state_out=torch.zeros(1, 2, 16, 16, dtype=torch.bfloat16))
    with pytest.raises(ValueError, match=r"out must match r=\[1, 5, 2, 16\] torch.float32; got \[1, 5, 2, 8\]"):
        wkv7(*ins.values(), out=torch.zeros(1, 5, 2, 8))


def test_triton_backends_are_forward_only() -> None:
    pytest.importorskip("triton")
    ins = _ins()
    ins["r"].requires_grad_(True)
    with pytest.raises(ValueError, match=r"forward-only"):
        wkv7(*ins.values(), backend="chunk")
    with torch.no_grad():
        wkv7(*ins.values(), backend="chunk")


# --------------------------------------------------------------------------------- backends


def test_auto_is_naive_on_plain_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    assert pick_backend(torch.device("cpu"), 7) == "naive"
    assert pick_backend(torch.device("cpu"), 1) == "naive"


def test_auto_uses_triton_under_interpreter(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("triton")
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    assert pick_backend(torch.device("cpu"), 7) == "chunk"
    assert pick_backend(torch.device("cpu"), 1) == "step"
    seed = new_seed()
    ins = rwkv_inputs(1, 19, 2, 16, torch.float32, seed)
    s0 = random_state(1, 2, 16, seed)
    y, st = wkv7(*ins.values(), s0)
    y_ref, st_ref = reference(ins, s0)
    assert_close("y", y, y_ref, TOL[torch.float32], seed)
    assert_close("final state", st, st_ref, TOL[torch.float32], seed)


@pytest.mark.parametrize("backend", ["naive", "chunk", "step"])
def test_empty_sequence_passes_the_state_through(backend: str) -> None:
    if backend != "naive":
        pytest.importorskip("triton")
    ins = _ins((1, 0, 2, 16))
    s0 = random_state(1, 2, 16, seed=3)
    y, st = wkv7(*ins.values(), s0, backend=backend)
    assert y.shape == (1, 0, 2, 16)
    assert torch.equal(st, s0)


def test_import_needs_no_triton() -> None:
    """Importing the package (and running the reference) leaves Triton unimported."""
    code = (
        "import sys, torch\n"
        "from rwkv_registry.kernels.wkv7 import wkv7\n"
        "x = torch.zeros(1, 2, 1, 16)\n"
        "wkv7(x, x - 1, x, x, x, x)\n"
        "print('triton' in sys.modules)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert done.stdout.strip() == "False"


# -------------------------------------------------------------------- the reference itself


def test_reference_without_removal_is_decayed_linear_attention() -> None:
    """With a = b = 0: y_t = sum_{s<=t} v_s * sum_k r_t[k] k_s[k] prod_{s<i<=t} d_i[k], in closed form."""
    seed = new_seed()
    ins = rwkv_inputs(1, 9, 1, 16, torch.float64, seed)
    ins["a"].zero_()
    ins["b"].zero_()
    y, _ = wkv7_naive(*ins.values())
    r, w, k, v = (ins[n][0, :, 0] for n in "rwkv")  # (T, N)
    log_d = -torch.exp(w)
    g = torch.cumsum(log_d, 0)  # (T, K)
    decay = torch.exp(g[:, None, :] - g[None, :, :])  # (t, s, K): prod_{s<i<=t} d_i
    scores = torch.einsum("tk,sk,tsk->ts", r, k, decay).tril()  # (t, s)
    want = scores @ v  # (T, V)
    assert torch.allclose(y[0, :, 0], want, rtol=1e-10, atol=1e-10), f"seed {seed}"


def test_reference_one_step_by_explicit_matrices() -> None:
    """One token from a random state: S1 = S0 (D + a b^T) + v k^T and y = S1 r, written with numpy."""
    seed = new_seed()
    ins = rwkv_inputs(1, 1, 1, 16, torch.float64, seed)
    s0 = random_state(1, 1, 16, seed).double()
    y, s1 = wkv7_naive(*ins.values(), s0)
    r, w, k, v, a, b = (ins[n][0, 0, 0].numpy() for n in NAMES)
    transition = np.diag(np.exp(-np.exp(w))) + np.outer(a, b)
    s1_want = s0[0, 0].numpy() @ transition + np.outer(v, k)
    assert np.allclose(s1[0, 0].numpy(), s1_want, rtol=1e-12, atol=1e-12), f"seed {seed}"
    assert np.allclose(y[0, 0, 0].numpy(), s1_want @ r, rtol=1e-12, atol=1e-12), f"seed {seed}"


# ------------------------------------------------------------------------------ mutation audit of validate.py
# Each test below kills a hand-made mutant of kernels/wkv7/validate.py that the rest of the suite let live.


@pytest.mark.parametrize("shape", [(1, 4, 2, 16), (2, 5, 2, 16), (1, 5, 1, 16)], ids=["T", "B", "H"])
def test_inputs_differing_in_any_size_are_refused(shape: tuple[int, ...]) -> None:
    """W02: the shapes compared by their head size N alone; k of another length, batch or head count passed."""
    ins = _ins()
    ins["k"] = torch.zeros(shape)
    with pytest.raises(ValueError, match=rf"must share one shape .* k={list(shape)}".replace("[", r"\[")):
        wkv7(*ins.values(), backend="naive")


def test_w_of_another_dtype_than_r_and_not_float32_is_refused() -> None:
    """W03: without the check of w's dtype, a bfloat16 w beside float32 r, k, v, a, b passed."""
    ins = _ins()
    ins["w"] = ins["w"].to(torch.bfloat16)
    with pytest.raises(ValueError, match=r"and w that dtype or float32; got .*'w': torch.bfloat16"):
        wkv7(*ins.values(), backend="naive")
    ins = _ins(dtype=torch.bfloat16)
    ins["w"] = ins["w"].float()  # w in float32 beside bfloat16 inputs is allowed
    y, _ = wkv7(*ins.values(), backend="naive")
    assert y.dtype == torch.bfloat16


@pytest.mark.parametrize("n", [8, 24, 256])
def test_head_size_limits_of_the_step_kernel_too(n: int) -> None:
    """W10: the head-size check for backend 'chunk' only; 'step' runs the same Triton limits."""
    with pytest.raises(ValueError, match=rf"head size N={n} is not supported by the Triton kernels \(backend 'step'\)"):
        wkv7(*_ins((1, 3, 1, n)).values(), backend="step")


def test_arguments_on_another_device_are_refused_naming_it() -> None:
    """W06, W13, W20: inputs, cu_seqlens and state on another device (meta stands for a GPU) were let through."""
    ins = _ins()
    ins["a"] = ins["a"].to("meta")
    with pytest.raises(ValueError, match=r"must be on one device; got .*'a': device\(type='meta'\)"):
        wkv7(*ins.values(), backend="naive")
    with pytest.raises(ValueError, match=r"cu_seqlens is on meta but the inputs are on cpu"):
        wkv7(*_ins().values(), cu_seqlens=torch.tensor([0, 5], device="meta"), backend="naive")
    with pytest.raises(ValueError, match=r"state is on meta but the inputs are on cpu"):
        wkv7(*_ins().values(), torch.zeros(1, 2, 16, 16, device="meta"), backend="naive")


def test_state_of_another_number_of_sequences_is_refused() -> None:
    """W19: the state's first size (num_seqs) not compared: a state for two sequences went with one."""
    with pytest.raises(
        ValueError, match=r"state must be \[num_seqs, H, N, N\] = \[1, 2, 16, 16\] .*; got \[2, 2, 16, 16\]"
    ):
        wkv7(*_ins().values(), torch.zeros(2, 2, 16, 16), backend="naive")
    with pytest.raises(ValueError, match=r"= \[2, 2, 16, 16\] .*; got \[1, 2, 16, 16\]"):  # packed: two sequences
        wkv7(*_ins().values(), torch.zeros(1, 2, 16, 16), cu_seqlens=torch.tensor([0, 2, 5]), backend="naive")


def test_state_out_must_be_contiguous_and_state_floating_point() -> None:
    """W21: state_out's contiguity not checked (the kernels write it as a flat buffer); W23: an integer state
    passed on the naive backend."""
    ins = _ins()
    strided = torch.zeros(1, 2, 16, 16).transpose(2, 3)
    with pytest.raises(ValueError, match=r"state_out must be a contiguous float32 tensor; got torch.float32"):
        wkv7(*ins.values(), state_out=strided, backend="naive")
    with pytest.raises(ValueError, match=r"state must be floating point; got torch.int32"):
        wkv7(*ins.values(), torch.zeros(1, 2, 16, 16, dtype=torch.int32), backend="naive")


def test_out_must_have_the_inputs_dtype_and_be_contiguous() -> None:
    """W28: out's dtype not compared (a float64 out for float32 inputs); W30: a strided out passed."""
    ins = _ins()
    with pytest.raises(
        ValueError, match=r"out must match r=\[1, 5, 2, 16\] torch.float32; got \[1, 5, 2, 16\] torch.float64"
    ):
        wkv7(*ins.values(), out=torch.zeros(1, 5, 2, 16, dtype=torch.float64), backend="naive")
    strided = torch.zeros(1, 5, 16, 2).transpose(2, 3)
    with pytest.raises(ValueError, match=r"out must be contiguous and on cpu"):
        wkv7(*ins.values(), out=strided, backend="naive")


def test_out_sharing_storage_with_state_out_or_an_input_at_an_offset_is_refused() -> None:
    """W25: out over state_out not checked; W35: only the first element's address compared, so an out in
    the same storage as r but at another offset passed."""
    ins = _ins()
    buf = torch.zeros(160 + 512)
    out, state_out = buf[:160].view(1, 5, 2, 16), buf[160:].view(1, 2, 16, 16)
    with pytest.raises(ValueError, match=r"out shares memory with state_out"):
        wkv7(*ins.values(), out=out, state_out=state_out, backend="naive")
    both = torch.zeros(2, 5, 2, 16)
    ins["r"] = both[0:1]
    with pytest.raises(ValueError, match=r"out shares memory with r"):
        wkv7(*ins.values(), out=both[1:2], backend="naive")


def test_empty_outputs_share_no_memory_with_empty_inputs() -> None:
    """W24: empty tensors (T = 0) all report storage address 0; without the numel() == 0 case of _same_memory an
    empty out was refused as sharing memory with r."""
    ins = _ins((1, 0, 2, 16))
    y, st = wkv7(*ins.values(), out=torch.empty(1, 0, 2, 16), backend="naive")
    assert y.shape == (1, 0, 2, 16) and st.shape == (1, 2, 16, 16)
