"""One RWKV-7 block: (ln0 in layer 0), ``x += att(ln1(x))``, ``x += ffn(ln2(x))``."""

from __future__ import annotations

import torch
from torch import nn

from rwkv_registry.model.channel_mix import ChannelMix
from rwkv_registry.model.config import RWKV7Config
from rwkv_registry.model.state import LayerState
from rwkv_registry.model.time_mix import TimeMix


class Block(nn.Module):
    """A residual block; layer 0 also owns ``ln0``, applied to the embedding."""

    def __init__(self, config: RWKV7Config, layer_id: int) -> None:
        super().__init__()
        C = config.n_embd
        self.layer_id = layer_id
        if layer_id == 0:
            self.ln0 = nn.LayerNorm(C)
        self.ln1 = nn.LayerNorm(C)
        self.ln2 = nn.LayerNorm(C)
        self.att = TimeMix(config, layer_id)
        self.ffn = ChannelMix(config)

    def forward(
        self, x: torch.Tensor, state: LayerState, v_first: torch.Tensor | None, inplace: bool = False
    ) -> tuple[torch.Tensor, LayerState, torch.Tensor]:
        """``x`` [B, T, C] -> ``(x [B, T, C], new layer state, v_first [B, T, C])``; with
        ``inplace`` the new state is written into ``state``'s tensors and ``state`` is returned."""
        if self.layer_id == 0:
            x = self.ln0(x)
        dx, att_shift, wkv, v_first = self.att(self.ln1(x), state.att_shift, state.wkv, v_first, inplace)
        x = x + dx
        dx, ffn_shift = self.ffn(self.ln2(x), state.ffn_shift, inplace)
        x = x + dx
        return x, (state if inplace else LayerState(att_shift, wkv, ffn_shift)), v_first
