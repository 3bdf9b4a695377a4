"""The MiSS on-the-fly term in plain PyTorch (the reference).

For ``x`` ``[..., K]``, ``D`` ``[O, r]`` and ``out`` ``[..., O]``::

    S[..., j] = sum(x[..., k] for k % r == j)     # the last partial block of x zero padded
    out      += scale * S @ D^T                   # in place

Two PyTorch kernels: the block sum (accumulated in fp32 inside the reduction, whatever ``x``'s
dtype, then rounded to it) and one ``addmm_`` that scales and adds in a single pass. This is the
model's own arithmetic, differentiable in ``x`` and ``D``, and what the Triton kernels in
``fused.py`` are tested against; ``launch.py`` chooses between them. ``miss_terms_ref`` applies it
to each segment of a group; ``relu_square_ref`` is the squared ReLU, MiSS term optionally first.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F

__all__ = ["miss_term_ref", "miss_terms_ref", "relu_square_ref"]


def miss_term_ref(out: torch.Tensor, x: torch.Tensor, D: torch.Tensor, scale: float) -> torch.Tensor:
    """``out += scale * S @ D^T`` in place and returns ``out`` (viewable as ``[rows, O]``)."""
    r = D.shape[1]
    pad = -x.shape[-1] % r
    if pad:  # zero padding of the last partial block
        x = F.pad(x, (0, pad))
    S = x.unflatten(-1, (-1, r)).sum(dim=-2)  # [..., r]
    out.view(-1, out.shape[-1]).addmm_(S.reshape(-1, r), D.t(), alpha=scale)
    return out


def miss_terms_ref(
    outs: Sequence[torch.Tensor], xs: Sequence[torch.Tensor], Ds: Sequence[torch.Tensor], scales: Sequence[float]
) -> list[torch.Tensor]:
    """:func:`miss_term_ref` for each segment ``(out, x, D, scale)``; returns the ``outs``."""
    return [miss_term_ref(out, x, D, s) for out, x, D, s in zip(outs, xs, Ds, scales, strict=True)]


def relu_square_ref(h: torch.Tensor, miss: tuple[torch.Tensor, torch.Tensor, float] | None = None) -> torch.Tensor:
    """``relu(h + scale * S(x) @ D^T) ** 2`` (``miss=(x, D, scale)``) or ``relu(h) ** 2``: in place
    (returns ``h``) unless grad mode is on and ``h``, ``x`` or ``D`` requires grad; then a new,
    differentiable tensor (``h`` untouched)."""
    tensors = (h,) if miss is None else (h, miss[0], miss[1])
    if torch.is_grad_enabled() and any(t.requires_grad for t in tensors):
        y = h if miss is None else miss_term_ref(h.clone(), *miss)
        return torch.relu(y) ** 2
    if miss is not None:
        miss_term_ref(h, *miss)
    return torch.relu_(h).square_()
