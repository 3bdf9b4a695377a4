"""The small low-rank projections of the RWKV-7 time mix.

Each is ``x @ A`` squeezed to a narrow width and expanded back with ``@ B``; they differ only in
the non-linearity and where the bias sits. ``x`` is ``[..., C]``, ``A`` is ``[C, D]``, ``B`` is
``[D, C]`` (the checkpoint layout, no transpose).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def decay_lora(x: torch.Tensor, w0: torch.Tensor, w1: torch.Tensor, w2: torch.Tensor) -> torch.Tensor:
    """Log-log decay with the soft clamp: ``w = -softplus(-(w0 + tanh(x@w1)@w2)) - 0.5``, in fp32.

    ``w`` lies in ``(-inf, -0.5)``, so the per-channel decay ``exp(-exp(w))`` lies in
    ``(exp(-e^-0.5), 1) ≈ (0.545, 1)``.
    """
    z = (w0 + torch.tanh(x @ w1) @ w2).float()  # [..., C]
    return -F.softplus(-z) - 0.5


def sigmoid_lora(x: torch.Tensor, b0: torch.Tensor, b1: torch.Tensor, b2: torch.Tensor) -> torch.Tensor:
    """``sigmoid(b0 + (x@b1)@b2)``: the in-context learning rate ``a`` and the value-residual mix."""
    return torch.sigmoid(b0 + (x @ b1) @ b2)


def gate_lora(x: torch.Tensor, g1: torch.Tensor, g2: torch.Tensor) -> torch.Tensor:
    """Output gate ``sigmoid(x@g1)@g2`` (the non-linearity sits inside, no bias)."""
    return torch.sigmoid(x @ g1) @ g2
