"""Residual add followed by LayerNorm, in plain PyTorch (the reference of ``fused.py``)::

    s = x + dx                               # the new residual stream, in x's dtype
    y = LayerNorm(s; weight, bias, eps)      # over the last dimension C

An RWKV-7 block adds its time-mix output and normalises for the channel mix (``ln2``), then adds
the channel-mix output, which the next block normalises (``ln1``) or the head does (``ln_out``):
three add + norm pairs per layer boundary that the Triton kernel does in one pass each.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ..norm_units import in_norm_units

__all__ = ["add_layer_norm_ref"]


def add_layer_norm_ref(
    x: torch.Tensor, dx: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, eps: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(x + dx, layer_norm(x + dx))`` over the last dimension. A row whose largest |value|
    exceeds 2^50 is normed in units of it, as the kernel does (``kernels/norm_units.py``):
    ``F.layer_norm``'s fp32 squares overflow above ~1e19."""
    s = x + dx
    return s, F.layer_norm(in_norm_units(s), (s.shape[-1],), weight, bias, eps)
