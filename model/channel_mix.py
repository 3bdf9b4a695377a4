"""RWKV-7 channel mixing: ``value(relu(key(x + (shift(x) - x) * x_k)) ** 2)``."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from rwkv_registry.kernels.miss import relu_square_
from rwkv_registry.model.config import RWKV7Config
from rwkv_registry.model.miss import MissTerm, linear_open
from rwkv_registry.model.wkv import elementwise_backend


class ChannelMix(nn.Module):
    """Squared-ReLU feed-forward with one token-shift mix."""

    def __init__(self, config: RWKV7Config) -> None:
        super().__init__()
        C, F = config.n_embd, config.dim_ffn
        self.x_k = nn.Parameter(torch.empty(1, 1, C))  # [1, 1, C]
        self.key = nn.Linear(C, F, bias=False)  # weight [F, C]
        self.value = nn.Linear(F, C, bias=False)  # weight [C, F]

    def mus(self) -> tuple[torch.Tensor]:
        """The token-mix coefficient, as :meth:`forward` takes its one mix."""
        return (self.x_k,)

    def forward(
        self, mixes: Sequence[torch.Tensor], new_shift: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, MissTerm | None]:
        """From the token mix ``(xk,)`` [B, T, C] of the ln2-normalised input with :meth:`mus` and
        the new token-shift state ``new_shift`` [B, C] (the block makes both) -> ``(out [B, T, C],
        new_shift, out_miss)``. ``out_miss``: the value map's MiSS term still to be added to ``out``
        (see :func:`~rwkv_registry.model.miss.linear_open`), else None."""
        (xk,) = mixes
        backend = elementwise_backend(xk)
        k, k_miss = linear_open(self.key, xk, backend)  # [B, T, F]
        k = relu_square_(k, k_miss, backend=backend)  # in place (a new tensor when gradients flow)
        out, out_miss = linear_open(self.value, k, backend)
        return out, new_shift, out_miss
