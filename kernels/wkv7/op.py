"""``torch.ops.rwkv_registry.wkv7_inplace``: the WKV7 forward as a PyTorch custom operator.

``y = torch.ops.rwkv_registry.wkv7_inplace(r, w, k, v, a, b, state)`` runs :func:`wkv7` (the
kernels' own backend choice) and writes the final state into ``state`` (contiguous fp32
``[B, H, N, N]``), returning ``y``. To ``torch.compile`` the op is one opaque call with a declared
mutation and output shape, so a compiled decode step keeps the Triton kernels and fuses everything
around them; the eager model calls :func:`wkv7` directly. Registered when this module is imported.
"""

from __future__ import annotations

import torch

from .launch import wkv7

__all__ = ["wkv7_inplace"]


@torch.library.custom_op("rwkv_registry::wkv7_inplace", mutates_args=("state",))
def wkv7_inplace(
    r: torch.Tensor,
    w: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    a: torch.Tensor,
    b: torch.Tensor,
    state: torch.Tensor,
) -> torch.Tensor:
    """WKV7 forward from ``state``, which receives the final state; returns ``y`` (dtype of ``r``)."""
    y, _ = wkv7(r, w, k, v, a, b, state, state_out=state)
    return y


@wkv7_inplace.register_fake
def _shape_only(r: torch.Tensor, *others: torch.Tensor) -> torch.Tensor:
    """What the compiler needs to know: ``y`` has the shape and dtype of ``r``."""
    return torch.empty_like(r, memory_format=torch.contiguous_format)
