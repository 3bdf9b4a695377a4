"""One RWKV-7 block: (ln0 in layer 0), ``x += att(ln1(x))``, ``x += ffn(ln2(x))``."""

from __future__ import annotations

import torch
from torch import nn

from rwkv_registry.kernels.add_norm import add_layer_norm
from rwkv_registry.model.channel_mix import ChannelMix
from rwkv_registry.model.config import RWKV7Config
from rwkv_registry.model.state import LayerState
from rwkv_registry.model.time_mix import TimeMix
from rwkv_registry.model.wkv import elementwise_backend


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
        x, dx, state, v_first = self.step(x, None, state, v_first, inplace)
        return x + dx, state, v_first

    def step(
        self,
        x: torch.Tensor,
        pending: torch.Tensor | None,
        state: LayerState,
        v_first: torch.Tensor | None,
        inplace: bool = False,
    ) -> tuple[torch.Tensor, torch.Tensor, LayerState, torch.Tensor]:
        """The block with its residual additions left open, so that each add is fused with the
        LayerNorm after it: the input is ``x + pending`` (``x`` when ``pending`` is None), the
        output ``x_out + dx_out``, returned as ``(x_out, dx_out, new layer state, v_first)``."""
        backend = elementwise_backend(x)
        if self.layer_id == 0:
            x = self.ln0(x if pending is None else x + pending)
            pending = None
        if pending is None:
            xn = self.ln1(x)
        else:
            x, xn = add_layer_norm(x, pending, self.ln1.weight, self.ln1.bias, self.ln1.eps, backend=backend)
        dx, att_shift, wkv, v_first = self.att(xn, state.att_shift, state.wkv, v_first, inplace)
        x, xn = add_layer_norm(x, dx, self.ln2.weight, self.ln2.bias, self.ln2.eps, backend=backend)
        dx, ffn_shift = self.ffn(xn, state.ffn_shift, inplace)
        return x, dx, (state if inplace else LayerState(att_shift, wkv, ffn_shift)), v_first
