"""RWKV-7 channel mixing: ``value(relu(key(x + (shift(x) - x) * x_k)) ** 2)``."""

from __future__ import annotations

import torch
from torch import nn

from rwkv_registry.kernels.timemix import token_mix
from rwkv_registry.model.config import RWKV7Config
from rwkv_registry.model.wkv import elementwise_backend


class ChannelMix(nn.Module):
    """Squared-ReLU feed-forward with one token-shift mix."""

    def __init__(self, config: RWKV7Config) -> None:
        super().__init__()
        C, F = config.n_embd, config.dim_ffn
        self.x_k = nn.Parameter(torch.empty(1, 1, C))  # [1, 1, C]
        self.key = nn.Linear(C, F, bias=False)  # weight [F, C]
        self.value = nn.Linear(F, C, bias=False)  # weight [C, F]

    def forward(self, x: torch.Tensor, shift: torch.Tensor, inplace: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
        """``x`` [B, T, C], ``shift`` [B, C] -> ``(out [B, T, C], new shift [B, C])``; with
        ``inplace`` the new shift is written into ``shift``."""
        (xk,), new_shift = token_mix(
            x, shift, (self.x_k,), shift_out=shift if inplace else None, backend=elementwise_backend(x)
        )
        k = self.key(xk)  # [B, T, F]
        # inference: in place, no [B, T, F] temporaries
        k = torch.relu(k) ** 2 if torch.is_grad_enabled() else torch.relu_(k).square_()
        return self.value(k), new_shift
