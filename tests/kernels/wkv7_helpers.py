"""Shared helpers of the WKV7 kernel tests: fresh random inputs, the fp64 reference, error measures.

Every run draws a new seed (``WKV7_TEST_SEED=<n>`` replays one); each failure message prints it.
"""

from __future__ import annotations

import os
import random

import numpy as np
import torch
import torch.nn.functional as F

from rwkv_registry.kernels.wkv7 import wkv7_naive

# relative RMS error allowed against the fp64 reference, per input dtype
TOL = {torch.float32: 1e-5, torch.bfloat16: 2e-2, torch.float16: 5e-3}
DTYPE_NAMES = {torch.float32: "fp32", torch.bfloat16: "bf16", torch.float16: "fp16"}


def new_seed() -> int:
    """A fresh seed per call, or the one in ``WKV7_TEST_SEED`` to replay a failure."""
    fixed = os.environ.get("WKV7_TEST_SEED")
    return int(fixed) if fixed else random.SystemRandom().randrange(2**31)


def case_id(batch: int, seq_len: int, heads: int, n: int, dtype: torch.dtype) -> str:
    return f"B{batch}-T{seq_len}-H{heads}-N{n}-{DTYPE_NAMES[dtype]}"


def rwkv_inputs(
    batch: int,
    seq_len: int,
    heads: int,
    n: int,
    dtype: torch.dtype,
    seed: int,
    *,
    w_fp32: bool = False,
) -> dict[str, torch.Tensor]:
    """Inputs shaped like RWKV-7's: w = -softplus(-x) - 0.5, a = -kk, b = kk * gate (kk unit per head)."""
    gen = torch.Generator().manual_seed(seed)

    def randn(scale: float = 1.0) -> torch.Tensor:
        return torch.randn(batch, seq_len, heads, n, generator=gen) * scale

    kk = F.normalize(randn(), dim=-1)
    gate = torch.sigmoid(randn())
    w = -F.softplus(-(randn(1.5) - 0.5)) - 0.5
    out = {"r": randn(), "w": w, "k": randn(0.5), "v": randn(), "a": -kk, "b": kk * gate}
    out = {name: t.to(dtype) for name, t in out.items()}
    if w_fp32:
        out["w"] = w
    return out


def random_state(num_seqs: int, heads: int, n: int, seed: int, scale: float = 0.5) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed + 1)
    return torch.randn(num_seqs, heads, n, n, generator=gen) * scale


def reference(
    ins: dict[str, torch.Tensor],
    state: torch.Tensor | None,
    cu_seqlens: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """fp64 reference on the very values the kernel sees (inputs upcast after their rounding)."""
    args = [ins[k].double() for k in ("r", "w", "k", "v", "a", "b")]
    return wkv7_naive(*args, None if state is None else state.double(), cu_seqlens=cu_seqlens)


def rel_rms(x: torch.Tensor, ref: torch.Tensor) -> float:
    """Relative RMS error; NaN (never passes a ``<=`` check) when x holds a NaN or inf."""
    x64, ref64 = x.double(), ref.double()
    if not torch.isfinite(x64).all():
        return float("nan")
    denom = ref64.pow(2).mean().sqrt().clamp_min(1e-30)
    return float((x64 - ref64).pow(2).mean().sqrt() / denom)


def nan_like(t: torch.Tensor) -> torch.Tensor:
    return torch.full_like(t, float("nan"))


def nan_state(num_seqs: int, heads: int, n: int, device: torch.device | str = "cpu") -> torch.Tensor:
    return torch.full((num_seqs, heads, n, n), float("nan"), dtype=torch.float32, device=device)


def assert_close(name: str, got: torch.Tensor, want: torch.Tensor, tol: float, seed: int) -> None:
    err = rel_rms(got, want)
    assert err <= tol, f"{name}: relative RMS error {err:.3g} > {tol:g} (replay with WKV7_TEST_SEED={seed})"


def compile_for_sm90(kernel: object, signature: dict[str, str], constants: dict[str, object], num_warps: int) -> object:
    """Compile a Triton kernel for an H100/H200 (sm_90) on the CPU: Triton's front end, passes and
    bundled ptxas, no GPU; a kernel only the interpreter accepts fails. Skips where Triton has no
    ptxas for this platform. ``signature``: the runtime parameters' types in the kernel's order;
    the constexprs are added after them, and the whole must be the kernel's parameter list."""
    import pytest
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    signature = {**signature, **dict.fromkeys(constants, "constexpr")}
    names = list(kernel.arg_names)  # type: ignore[attr-defined]
    assert list(signature) == names, f"the kernel's parameters changed ({names}): update the test"
    try:
        return triton.compile(
            ASTSource(kernel, signature, constants), target=GPUTarget("cuda", 90, 32), options={"num_warps": num_warps}
        )
    except (RuntimeError, FileNotFoundError) as exc:  # no ptxas for this platform
        if "ptxas" in str(exc):
            pytest.skip(f"Triton cannot assemble for sm_90 here: {exc}")
        raise


def spy_paths(monkeypatch: object, launch: object, reference: str) -> list[str]:
    """Record which path each call of a fused op takes: "kernel" when the ``launch`` module loads
    its Triton kernels (once per launch), "reference" when it calls its ``reference`` function."""
    seen: list[str] = []
    real_kernels, real_ref = launch._kernels, getattr(launch, reference)  # type: ignore[attr-defined]

    def kernels(interpret: bool) -> object:
        seen.append("kernel")
        return real_kernels(interpret)

    def ref(*args: object, **kwargs: object) -> object:
        seen.append("reference")
        return real_ref(*args, **kwargs)

    monkeypatch.setattr(launch, "_kernels", kernels)  # type: ignore[attr-defined]
    monkeypatch.setattr(launch, reference, ref)  # type: ignore[attr-defined]
    return seen


# relative RMS error a fused element-wise kernel may have against the fp64 truth (it rounds once)
FUSED_TOL = {torch.float32: 1e-5, torch.bfloat16: 1e-2, torch.float16: 2e-3}


def check_vs_truth(name: str, got: torch.Tensor, truth: torch.Tensor, same_dtype_ref: torch.Tensor, seed: int) -> None:
    """A fused kernel's output: the reference's dtype and the truth's shape, within the dtype's
    tolerance of the fp64 truth (``FUSED_TOL``), and no further from it than the reference computed
    in the same dtype (x1.5, plus slack for tiny errors). The kernels round once, to nearest even
    (on the CPU too: see ``kernels._triton._round_bf16_like_a_gpu``); a NaN never passes."""
    assert got.dtype == same_dtype_ref.dtype and got.shape == truth.shape, f"{name}: {got.dtype} {list(got.shape)}"
    dtype = got.dtype if got.dtype in FUSED_TOL else torch.float32
    err, ref_err = rel_rms(got, truth), rel_rms(same_dtype_ref, truth)
    tol = FUSED_TOL[dtype]
    assert err <= tol, f"{name}: rel. RMS {err:.3g} > {tol:g} (replay with WKV7_TEST_SEED={seed})"
    assert err <= 1.5 * ref_err + 1e-6, f"{name}: {err:.3g} vs the reference's {ref_err:.3g} (WKV7_TEST_SEED={seed})"


def nan_new_tensors(monkeypatch: object) -> None:
    """From here to the end of the test, every floating tensor ``torch.empty`` and ``torch.empty_like``
    give starts full of NaN, so an output a kernel leaves unwritten cannot pass (a pytest monkeypatch)."""
    empty, empty_like = torch.empty, torch.empty_like

    def nan_empty(*args: object, **kwargs: object) -> torch.Tensor:
        t = empty(*args, **kwargs)  # type: ignore[call-overload]
        return t.fill_(float("nan")) if t.is_floating_point() else t

    def nan_empty_like(*args: object, **kwargs: object) -> torch.Tensor:
        t = empty_like(*args, **kwargs)  # type: ignore[call-overload]
        return t.fill_(float("nan")) if t.is_floating_point() else t

    monkeypatch.setattr(torch, "empty", nan_empty)  # type: ignore[attr-defined]
    monkeypatch.setattr(torch, "empty_like", nan_empty_like)  # type: ignore[attr-defined]


def tf32(x: np.ndarray) -> np.ndarray:
    """Round fp32 to tf32 (10 mantissa bits, nearest even), as a tensor core reads its inputs."""
    bits = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    rounded = (bits + np.uint32(0xFFF) + ((bits >> np.uint32(13)) & np.uint32(1))) & np.uint32(0xFFFFE000)
    special = (bits & np.uint32(0x7F800000)) == np.uint32(0x7F800000)
    return np.where(special, bits, rounded).view(np.float32)
