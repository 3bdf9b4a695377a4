"""``add_layer_norm``: checks, backend choice (as :mod:`rwkv_registry.kernels.timemix`) and launch."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from types import ModuleType

import torch

from .._triton import KERNEL_DTYPES, as_rows, load_kernel_module, next_pow2, norm_param_dtype_ok, use_triton
from ..miss import TUNING as MISS_TUNING
from ..miss import MissTerm, miss_term_
from ..miss.launch import check_miss_term
from ..timemix import token_mix
from .reference import add_layer_norm_ref

__all__ = ["MAX_WIDTH", "TUNING", "add_layer_norm", "add_layer_norm_mix"]

MAX_WIDTH = 16384  # one program holds a row; wider rows use the reference
# Launch configuration: the largest chunk of a row per step (block_c), the elements of D's tile with
# a MiSS term ([tile // rank channels, rank]), and warps.
TUNING: dict[str, int] = {"block_c": 4096, "tile": 16384, "num_warps": 8}


@functools.cache
def _kernels(interpret: bool) -> ModuleType:
    return load_kernel_module(__package__, "fused", interpret)


def _check(op: str, x: torch.Tensor, dx: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> int:
    for name, t in (("x", x), ("dx", dx), ("weight", weight), ("bias", bias)):
        if not isinstance(t, torch.Tensor):
            raise ValueError(f"{op}: {name} must be a torch.Tensor, got {type(t).__name__}")
    if x.dim() < 1 or x.shape != dx.shape or x.dtype != dx.dtype or x.device != dx.device:
        raise ValueError(
            f"{op}: x and dx must share one shape [..., C], dtype and device; got "
            f"x={x.dtype} {list(x.shape)} on {x.device}, dx={dx.dtype} {list(dx.shape)} on {dx.device}"
        )
    if not x.is_floating_point():
        raise ValueError(f"{op}: x and dx must be floating point; got {x.dtype}")
    C = x.shape[-1]
    for name, p in (("weight", weight), ("bias", bias)):
        if p.numel() != C or p.device != x.device:
            raise ValueError(f"{op}: {name} must hold C={C} values on {x.device}; got {list(p.shape)} on {p.device}")
        if not norm_param_dtype_ok(x.dtype, p.dtype):
            raise ValueError(f"{op}: {name} must be {x.dtype} (or float32 for bf16/fp16 x); got {p.dtype}")
    return C


def _kernel_applies(
    op: str, backend: str, x: torch.Tensor, tensors: tuple[torch.Tensor, ...], miss: MissTerm | None
) -> bool:
    """Whether the Triton kernel runs: the fused ops' rule, a kernel dtype, a row that fits, and with
    a MiSS term at most ``kernels.miss.TUNING["max_rows"]`` rows under "auto" (else cuBLAS adds it)."""
    extra = () if miss is None else tuple(t for t in miss[:2] if isinstance(t, torch.Tensor))
    C = x.shape[-1]
    if not use_triton(op, backend, x.device, (*tensors, *extra)):
        return False
    if x.dtype not in KERNEL_DTYPES or C > MAX_WIDTH or x.numel() == 0:
        return False
    return miss is None or backend == "triton" or x.numel() // C <= MISS_TUNING["max_rows"]


def _launch(
    x: torch.Tensor,
    dx: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor,
    eps: float,
    miss: MissTerm | None,
    y: torch.Tensor,
    shift: torch.Tensor | None = None,
    mus: Sequence[torch.Tensor] = (),
) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """One launch: returns ``(s, mixes)``; ``y`` receives the norm (the new shift when mixing)."""
    C = x.shape[-1]
    rows = x.numel() // C
    s = torch.empty_like(x)
    flat = [mu.reshape(-1).contiguous() for mu in mus]
    outs = [torch.empty_like(x) for _ in mus]
    pad = 6 - len(mus)
    block_c = min(next_pow2(C), TUNING["block_c"])
    xm, D, scale, K, r, sx, block_r, block_n = x, x, 0.0, 0, 1, 0, 1, 1
    if miss is not None:
        check_miss_term("add_layer_norm", dx, *miss, ("dx", "miss x", "miss D", "miss scale"))
        xm, D, scale = as_rows(miss[0], rows), miss[1].contiguous(), float(miss[2])
        K, r, sx = xm.shape[-1], D.shape[1], xm.stride(0)
        block_r = next_pow2(r)  # the whole rank (at most 1024)
        block_c = min(block_c, max(16, TUNING["tile"] // block_r))
        block_n = max(1, min(4096 // block_r, next_pow2(-(-K // r))))
    _kernels(x.device.type != "cuda").add_layer_norm_kernel[(rows,)](
        x, dx, weight.reshape(-1).contiguous(), bias.reshape(-1).contiguous(), s, y, xm, D,
        shift if shift is not None else x, *flat, *[x] * pad, *outs, *[x] * pad,
        C, K, r, sx, scale, float(eps),
        BLOCK_C=block_c, HAS_MISS=miss is not None, BLOCK_R=block_r, BLOCK_N=block_n, N_MIX=len(mus),
        num_warps=TUNING["num_warps"],
    )  # fmt: skip
    return s, outs


def add_layer_norm(
    x: torch.Tensor,
    dx: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor,
    eps: float,
    *,
    miss: MissTerm | None = None,
    backend: str = "auto",
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(s, y) = (x + dx, LayerNorm(x + dx))`` over the last dimension C, both in ``x``'s dtype.

    ``miss=(xm, D, scale)``: ``dx`` is the base output of a linear map with a MiSS adapter on the
    fly, whose term ``scale * S(xm) @ D^T`` (:func:`rwkv_registry.kernels.miss.miss_term_`) is
    added to ``dx`` first: in the same launch for decode rows (at most ``kernels.miss``'s
    ``TUNING["max_rows"]`` under "auto"), else by cuBLAS in a launch before. ``dx`` is not modified.

    ``x`` and ``dx``: one shape ``[..., C]``, dtype and device; ``weight``, ``bias``: C values.
    ``backend``: "auto" (Triton on CUDA, or on the CPU under ``TRITON_INTERPRET=1``; the
    reference when gradients are needed), "reference" or "triton". ``ValueError`` for bad
    arguments, naming them with their shapes.
    """
    _check("add_layer_norm", x, dx, weight, bias)
    if _kernel_applies("add_layer_norm", backend, x, (x, dx, weight, bias), miss):
        x, dx = x.contiguous(), dx.contiguous()
        y = torch.empty_like(x)
        return _launch(x, dx, weight, bias, eps, miss, y)[0], y
    if miss is not None:  # the term first, into a copy of dx
        dx = miss_term_(dx.clone(memory_format=torch.contiguous_format), *miss, backend=backend)
    if not _kernel_applies("add_layer_norm", backend, x, (x, dx, weight, bias), None):
        return add_layer_norm_ref(x, dx, weight, bias, eps)
    x, dx = x.contiguous(), dx.contiguous()
    y = torch.empty_like(x)
    return _launch(x, dx, weight, bias, eps, None, y)[0], y


def add_layer_norm_mix(
    x: torch.Tensor,
    dx: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor,
    eps: float,
    shift: torch.Tensor,
    mus: Sequence[torch.Tensor],
    *,
    miss: MissTerm | None = None,
    shift_out: torch.Tensor | None = None,
    backend: str = "auto",
) -> tuple[torch.Tensor, list[torch.Tensor], torch.Tensor]:
    """:func:`add_layer_norm` followed by :func:`rwkv_registry.kernels.timemix.token_mix` of the
    normed ``y``: returns ``(s, [y + (prev - y) * mu for mu in mus], new shift)``.

    ``x``, ``dx`` [B, T, C]; ``shift`` [B, C] (the previous token's normed input); ``mus``: 1 to 6
    tensors of C values; ``shift_out``: a contiguous [B, C] tensor (``shift`` itself allowed) for
    the new shift ``y[:, -1]``, else a fresh one. One launch for a decode step (T == 1) where the
    kernel runs; otherwise the two ops one after the other (the same results).
    """
    op = "add_layer_norm_mix"
    C = _check(op, x, dx, weight, bias)
    if x.dim() != 3:
        raise ValueError(f"{op}: x must be [B, T, C]; got {list(x.shape)}")
    B, T, _ = x.shape
    fused = T == 1 and 1 <= len(mus) <= 6 and _kernel_applies(op, backend, x, (x, dx, weight, bias, shift, *mus), miss)
    for t in (shift, shift_out):  # token_mix names any problem
        if t is not None and (tuple(t.shape) != (B, C) or t.dtype != x.dtype or t.device != x.device):
            fused = False
    if shift_out is not None and not shift_out.is_contiguous():
        fused = False
    if any(not isinstance(mu, torch.Tensor) or mu.numel() != C or mu.device != x.device for mu in mus):
        fused = False
    if not fused:
        s, y = add_layer_norm(x, dx, weight, bias, eps, miss=miss, backend=backend)
        mixed, new_shift = token_mix(y, shift, mus, shift_out=shift_out, backend=backend)
        return s, mixed, new_shift
    new_shift = shift_out if shift_out is not None else torch.empty_like(shift)
    s, mixed = _launch(x.contiguous(), dx.contiguous(), weight, bias, eps, miss, new_shift, shift.contiguous(), mus)
    return s, mixed, new_shift
