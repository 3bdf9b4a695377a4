"""The LoRA matmuls of an RWKV-7 time mix in plain PyTorch (the reference).

Each layer squeezes four mixed inputs through narrow LoRA pairs (checkpoint layout, ``W1 [C, D]``,
``W2 [D, C]``; ``D`` differs per pair)::

    wz = tanh(xw @ w1) @ w2        # decay
    az = (xa @ a1) @ a2            # in-context learning rate
    g  = sigmoid(xg @ g1) @ g2     # output gate
    vz = (xv @ v1) @ v2            # value residual (layers after the first)

``lora_down`` is the first half of each line with its activation, ``lora_up`` the second. These are
the model's own expressions, in the inputs' dtype and differentiable; ``fused.py`` does the same in
one Triton launch per half, and ``launch.py`` chooses between them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

__all__ = ["ACTIVATIONS", "lora_down_ref", "lora_up_ref"]

ACTIVATIONS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "none": lambda t: t,
    "tanh": torch.tanh,
    "sigmoid": torch.sigmoid,
}


def lora_down_ref(
    xs: Sequence[torch.Tensor], weights: Sequence[torch.Tensor], acts: Sequence[str]
) -> list[torch.Tensor]:
    """``[act(x @ W) for x, W, act in zip(xs, weights, acts)]``: ``x`` [..., K], ``W`` [K, D]."""
    return [ACTIVATIONS[act](x @ w) for x, w, act in zip(xs, weights, acts, strict=True)]


def lora_up_ref(hs: Sequence[torch.Tensor], weights: Sequence[torch.Tensor]) -> list[torch.Tensor]:
    """``[h @ W for h, W in zip(hs, weights)]``: ``h`` [..., D], ``W`` [D, C]."""
    return [h @ w for h, w in zip(hs, weights, strict=True)]
