"""The chunked kernel's numerics on inputs that stress them, against the fp64 reference.

Random inputs keep the in-chunk matrix ``Aab`` small, so its inverse ``T = (I - Aab)^-1`` is close
to the identity and a wrong or imprecise inverse hardly shows. Keys repeated over a chunk (RWKV-7's
``a = -kk``, ``b = kk · gate`` with gate near 1, as on a run of identical tokens) make every
``Aab[t,s]`` near -1 and the entries of ``T`` grow like ``2^(t-s-1)``, while the outputs stay of
order one. Here the kernel runs on such input in the interpreter, in fp32, and then with the
``tl.dot`` precisions it uses on CUDA, whose tf32 rounding the interpreter does not model on its
own: the test rounds the products' inputs as the tensor cores do.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
import torch
import torch.nn.functional as F

pytest.importorskip("triton")

from wkv7_helpers import TOL, assert_close, nan_like, nan_state, new_seed, random_state, reference, tf32

from rwkv_registry.kernels.wkv7 import launch, wkv7


def repeated_keys(T: int, H: int, N: int, dtype: torch.dtype, seed: int, *, w: float, gate: float) -> dict:
    """One unit key per head for every token (a = -kk, b = gate * kk), the decay ``w`` everywhere."""
    gen = torch.Generator().manual_seed(seed)
    kk = F.normalize(torch.randn(1, 1, H, N, generator=gen), dim=-1).expand(1, T, H, N)
    ins = {
        "r": torch.randn(1, T, H, N, generator=gen),
        "w": torch.full((1, T, H, N), w),
        "k": torch.randn(1, T, H, N, generator=gen) * 0.5,
        "v": torch.randn(1, T, H, N, generator=gen),
        "a": -kk,
        "b": kk * gate,
    }
    return {name: t.to(dtype).contiguous() for name, t in ins.items()}


def run_chunk(ins: dict[str, torch.Tensor], s0: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    _, _, h, n = ins["r"].shape
    out, state_out = nan_like(ins["r"]), nan_state(1, h, n)
    return wkv7(*ins.values(), s0, backend="chunk", out=out, state_out=state_out)


@pytest.mark.parametrize(("w", "gate"), [(-3.0, 1.0), (-6.0, 0.95), (-0.6, 1.0)])
def test_repeated_keys_in_fp32(w: float, gate: float) -> None:
    """The exact inverse matters here: one factor fewer of its product left errors of 1e8."""
    seed = new_seed()
    ins = repeated_keys(48, 2, 32, torch.float32, seed, w=w, gate=gate)
    s0 = random_state(1, 2, 32, seed)
    y, st = run_chunk(ins, s0)
    y_ref, st_ref = reference(ins, s0)
    # the chunked form is less exact than a token-by-token fp32 loop on this input (up to ~1e-5
    # against ~2e-7): the inverse's large entries cancel
    assert_close("y", y, y_ref, 1e-4, seed)
    assert_close("final state", st, st_ref, 1e-4, seed)


@pytest.mark.parametrize("w", [2.5, 6.0])
@pytest.mark.filterwarnings("ignore:overflow encountered in matmul:RuntimeWarning")  # masked-out entries
def test_every_token_decaying_fast_stays_finite(w: float) -> None:
    """Every token past the clamp (decay below e^-8): the factors around the chunk's middle must not
    overflow, which a reference point at the chunk's start does (NaN)."""
    seed = new_seed()
    gen = torch.Generator().manual_seed(seed)
    shape = (1, 40, 2, 16)
    kk = F.normalize(torch.randn(shape, generator=gen), dim=-1)
    ins = {
        "r": torch.randn(shape, generator=gen),
        "w": torch.full(shape, w),
        "k": torch.randn(shape, generator=gen) * 0.5,
        "v": torch.randn(shape, generator=gen),
        "a": -kk,
        "b": kk * 0.5,
    }
    s0 = random_state(1, 2, 16, seed)
    y, st = run_chunk(ins, s0)
    y_ref, st_ref = reference(ins, s0)
    assert_close("y", y, y_ref, 2e-3, seed)
    assert_close("final state", st, st_ref, 2e-3, seed)


# ------------------------------------------------------------- the CUDA precisions, emulated


@pytest.fixture
def cuda_precisions(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The launcher picks its CUDA precisions, and the interpreter's ``tl.dot`` rounds like tf32
    ("tf32": one product of rounded inputs; "tf32x3": the three-product split). Yields the
    precisions the kernel's products were asked for."""
    interpreter = pytest.importorskip("triton.runtime.interpreter")
    builder = getattr(interpreter, "InterpreterBuilder", None)
    handle = getattr(interpreter, "TensorHandle", None)
    if builder is None or handle is None or not hasattr(builder, "create_dot"):
        pytest.skip("this Triton's interpreter has no InterpreterBuilder.create_dot to emulate tf32 in")
    real_dot = builder.create_dot
    seen: list[str] = []

    def create_dot(self: object, a: object, b: object, d: object, precision: object, max_imprecise: object) -> object:
        name = getattr(precision, "name", str(precision)).upper()
        seen.append(name)
        x, y = a.data, b.data  # type: ignore[attr-defined]
        if x.dtype == np.float32 and y.dtype == np.float32 and name in ("TF32", "TF32X3"):
            xh, yh = tf32(x), tf32(y)
            acc = np.matmul(xh, yh, dtype=np.float32)
            if name == "TF32X3":
                acc = (
                    acc + np.matmul(xh, tf32(y - yh), dtype=np.float32) + np.matmul(tf32(x - xh), yh, dtype=np.float32)
                )
            return handle(acc + d.data, d.dtype.scalar)  # type: ignore[attr-defined]
        return real_dot(self, a, b, d, precision, max_imprecise)

    real_choice = launch.dot_precisions
    monkeypatch.setattr(builder, "create_dot", create_dot)
    monkeypatch.setattr(launch, "dot_precisions", lambda dtype, device_type: real_choice(dtype, "cuda"))
    yield seen


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32], ids=["bf16", "fp32"])
@pytest.mark.parametrize(("w", "gate"), [(-3.0, 1.0), (-6.0, 1.0)])
def test_repeated_keys_at_the_cuda_precisions(
    cuda_precisions: list[str], dtype: torch.dtype, w: float, gate: float
) -> None:
    """With plain tf32 everywhere this input gave y off by 9e-2 and the state by 0.4 (bf16)."""
    seed = new_seed()
    ins = repeated_keys(64, 2, 64, dtype, seed, w=w, gate=gate)
    s0 = random_state(1, 2, 64, seed)
    y, st = run_chunk(ins, s0)
    y_ref, st_ref = reference(ins, s0)
    assert cuda_precisions and set(cuda_precisions) <= {"TF32", "TF32X3"}  # the emulated CUDA path ran
    if dtype == torch.float32:
        assert_close("y", y, y_ref, 1e-4, seed)
        assert_close("final state", st, st_ref, 1e-4, seed)
    else:
        assert_close("y", y, y_ref, 2.5e-3, seed)  # bf16's own rounding of y is ~1.7e-3
        assert_close("final state", st, st_ref, 1e-3, seed)


def test_random_inputs_at_the_cuda_precisions(cuda_precisions: list[str]) -> None:
    from wkv7_helpers import rwkv_inputs

    seed = new_seed()
    ins = rwkv_inputs(1, 96, 2, 64, torch.bfloat16, seed)
    s0 = random_state(1, 2, 64, seed)
    y, st = run_chunk(ins, s0)
    y_ref, st_ref = reference(ins, s0)
    assert cuda_precisions and set(cuda_precisions) <= {"TF32", "TF32X3"}
    assert_close("y", y, y_ref, TOL[torch.bfloat16], seed)
    assert_close("final state", st, st_ref, 1e-3, seed)
