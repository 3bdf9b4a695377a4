"""``add_layer_norm``: checks, backend choice (as :mod:`rwkv_registry.kernels.timemix`) and launch."""

from __future__ import annotations

import functools
from types import ModuleType

import torch

from .._triton import KERNEL_DTYPES, load_kernel_module, use_triton
from ..miss import TUNING as MISS_TUNING
from ..miss import add_layer_norm_miss, miss_term_
from .reference import add_layer_norm_ref

__all__ = ["MAX_WIDTH", "TUNING", "add_layer_norm"]

MAX_WIDTH = 16384  # one program holds a row; wider rows use the reference
TUNING: dict[str, int] = {"num_warps": 8}


@functools.cache
def _kernels(interpret: bool) -> ModuleType:
    return load_kernel_module(__package__, "fused", interpret)


def add_layer_norm(
    x: torch.Tensor,
    dx: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor,
    eps: float,
    *,
    miss: tuple[torch.Tensor, torch.Tensor, float] | None = None,
    backend: str = "auto",
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(s, y) = (x + dx, LayerNorm(x + dx))`` over the last dimension C, both in ``x``'s dtype.

    ``miss=(xm, D, scale)``: ``dx`` is the base output of a linear map with a MiSS adapter on the
    fly, whose term ``scale * S(xm) @ D^T`` (:func:`rwkv_registry.kernels.miss.miss_term_`) is
    added to ``dx`` first: in the same launch for decode rows (``kernels.miss``'s
    ``add_layer_norm_kernel``, at most its ``TUNING["max_rows"]`` under "auto"), else one launch
    before. ``dx`` is not modified.

    ``x`` and ``dx``: one shape ``[..., C]``, dtype and device; ``weight``, ``bias``: C values.
    ``backend``: "auto" (Triton on CUDA, or on the CPU under ``TRITON_INTERPRET=1``; the
    reference when gradients are needed), "reference" or "triton". ``ValueError`` for bad
    arguments, naming them with their shapes.
    """
    for name, t in (("x", x), ("dx", dx), ("weight", weight), ("bias", bias)):
        if not isinstance(t, torch.Tensor):
            raise ValueError(f"add_layer_norm: {name} must be a torch.Tensor, got {type(t).__name__}")
    if x.dim() < 1 or x.shape != dx.shape or x.dtype != dx.dtype or x.device != dx.device:
        raise ValueError(
            f"add_layer_norm: x and dx must share one shape [..., C], dtype and device; got "
            f"x={x.dtype} {list(x.shape)} on {x.device}, dx={dx.dtype} {list(dx.shape)} on {dx.device}"
        )
    C = x.shape[-1]
    for name, p in (("weight", weight), ("bias", bias)):
        if p.numel() != C or p.device != x.device:
            raise ValueError(f"add_layer_norm: {name} must hold C={C} values on {x.device}; got {list(p.shape)}")
    extra = () if miss is None else tuple(t for t in miss[:2] if isinstance(t, torch.Tensor))
    use = use_triton("add_layer_norm", backend, x.device, (x, dx, weight, bias, *extra))
    use = use and x.dtype in KERNEL_DTYPES and C <= MAX_WIDTH and x.numel() > 0
    if miss is not None:
        rows = x.numel() // C if C else 0
        if use and (backend == "triton" or rows <= MISS_TUNING["max_rows"]):  # one launch for all of it
            return add_layer_norm_miss(x.contiguous(), dx.contiguous(), weight, bias, eps, miss)
        # else the term first, into a copy of dx
        dx = miss_term_(dx.clone(memory_format=torch.contiguous_format), *miss, backend=backend)
    if not use:
        return add_layer_norm_ref(x, dx, weight, bias, eps)
    x, dx = x.contiguous(), dx.contiguous()
    s, y = torch.empty_like(x), torch.empty_like(x)
    _kernels(x.device.type != "cuda").add_layer_norm_kernel[(x.numel() // C,)](
        x, dx, weight.reshape(-1).contiguous(), bias.reshape(-1).contiguous(), s, y, C, float(eps),
        BLOCK_C=1 << (C - 1).bit_length(), num_warps=TUNING["num_warps"],
    )  # fmt: skip
    return s, y
