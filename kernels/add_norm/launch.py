"""``add_layer_norm``: checks, backend choice (as :mod:`rwkv_registry.kernels.timemix`) and launch."""

from __future__ import annotations

import functools
from types import ModuleType

import torch

from .._triton import load_kernel_module, use_triton
from ..timemix.launch import KERNEL_DTYPES
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
    backend: str = "auto",
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(s, y) = (x + dx, LayerNorm(x + dx))`` over the last dimension C, both in ``x``'s dtype.

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
    use = use_triton("add_layer_norm", backend, x.device, (x, dx, weight, bias))
    if not use or x.dtype not in KERNEL_DTYPES or C > MAX_WIDTH or x.numel() == 0:
        return add_layer_norm_ref(x, dx, weight, bias, eps)
    x, dx = x.contiguous(), dx.contiguous()
    s, y = torch.empty_like(x), torch.empty_like(x)
    _kernels(x.device.type != "cuda").add_layer_norm_kernel[(x.numel() // C,)](
        x, dx, weight.reshape(-1).contiguous(), bias.reshape(-1).contiguous(), s, y, C, float(eps),
        BLOCK_C=1 << (C - 1).bit_length(), num_warps=TUNING["num_warps"],
    )  # fmt: skip
    return s, y
