"""One RWKV-7 block: (ln0 in layer 0), ``x += att(ln1(x))``, ``x += ffn(ln2(x))``."""

from __future__ import annotations

import torch
from torch import nn

from rwkv_registry.kernels.add_norm import add_layer_norm_mix
from rwkv_registry.kernels.miss import miss_term_
from rwkv_registry.kernels.timemix import token_mix
from rwkv_registry.model.channel_mix import ChannelMix
from rwkv_registry.model.config import RWKV7Config
from rwkv_registry.model.errors import ModelError
from rwkv_registry.model.miss import MissTerm
from rwkv_registry.model.state import LayerState
from rwkv_registry.model.time_mix import TimeMix
from rwkv_registry.model.wkv import elementwise_backend

Residual = tuple[torch.Tensor, MissTerm | None]  # a residual add not yet done: (dx, MiSS term of dx)


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
        x, (dx, dx_miss), state, v_first = self.step(x, None, state, v_first, inplace)
        if dx_miss is not None:
            dx = miss_term_(dx, *dx_miss, backend=elementwise_backend(x))
        return x + dx, state, v_first

    def step(
        self,
        x: torch.Tensor,
        pending: Residual | None,
        state: LayerState,
        v_first: torch.Tensor | None,
        inplace: bool = False,
    ) -> tuple[torch.Tensor, Residual, LayerState, torch.Tensor]:
        """The block with its residual additions left open, so that each add is fused with the
        LayerNorm after it (and, on a decode step, with the token mix after that): the input is
        ``x + pending`` (``x`` when ``pending`` is None), the output ``x_out + dx_out``, returned
        as ``(x_out, (dx_out, miss), new layer state, v_first)``.
        A :data:`Residual` ``(dx, miss)`` may carry the MiSS term of the map that made ``dx`` (an
        adapter on the fly), added by the same fused add + LayerNorm."""
        backend = elementwise_backend(x)
        att, ffn = self.att, self.ffn
        if self.layer_id == 0:
            if pending is not None:
                raise ModelError(
                    "block 0 takes the embedding itself, not a pending residual add",
                    hint="Call block 0 with pending=None (RWKV7.forward does); a pending add starts at block 1.",
                )
            x = self.ln0(x)
        # each norm is fused with the residual add before it and the token mix after it (one launch
        # per decode step; the ops one after the other otherwise)
        att_shift = state.att_shift if inplace else None
        if pending is None:
            mixes, att_shift = token_mix(self.ln1(x), state.att_shift, att.mus(), shift_out=att_shift, backend=backend)
        else:
            ln = self.ln1
            x, mixes, att_shift = add_layer_norm_mix(
                x, pending[0], ln.weight, ln.bias, ln.eps, state.att_shift, att.mus(),
                miss=pending[1], shift_out=att_shift, backend=backend,
            )  # fmt: skip
        dx, att_shift, wkv, v_first, dx_miss = att(mixes, att_shift, state.wkv, v_first, inplace)
        ln = self.ln2
        x, mixes, ffn_shift = add_layer_norm_mix(
            x, dx, ln.weight, ln.bias, ln.eps, state.ffn_shift, ffn.mus(),
            miss=dx_miss, shift_out=state.ffn_shift if inplace else None, backend=backend,
        )  # fmt: skip
        dx, ffn_shift, dx_miss = ffn(mixes, ffn_shift)
        new_state = state if inplace else LayerState(att_shift, wkv, ffn_shift)
        return x, (dx, dx_miss), new_state, v_first
