"""The MiSS on-the-fly term in plain PyTorch (the reference).

For ``x`` ``[..., K]``, ``D`` ``[O, r]`` and ``out`` ``[..., O]``::

    S[..., j] = sum(x[..., k] for k % r == j)     # the last partial block of x zero padded
    out      += scale * S @ D^T                   # in place

Two PyTorch kernels: the block sum (accumulated in fp32 inside the reduction, whatever ``x``'s
dtype, then rounded to it) and one ``addmm_`` that scales and adds in a single pass. This is the
model's own arithmetic, differentiable in ``x`` and ``D``, and what the Triton kernel in
``fused.py`` is tested against; ``launch.py`` chooses between them.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

__all__ = ["miss_term_ref"]


def miss_term_ref(out: torch.Tensor, x: torch.Tensor, D: torch.Tensor, scale: float) -> torch.Tensor:
    """``out += scale * S @ D^T`` in place and returns ``out`` (viewable as ``[rows, O]``)."""
    r = D.shape[1]
    pad = -x.shape[-1] % r
    if pad:  # zero padding of the last partial block
        x = F.pad(x, (0, pad))
    S = x.unflatten(-1, (-1, r)).sum(dim=-2)  # [..., r]
    out.view(-1, out.shape[-1]).addmm_(S.reshape(-1, r), D.t(), alpha=scale)
    return out
