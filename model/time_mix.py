"""RWKV-7 time mixing (the attention-like half of a block), FORMATS §2.

For one layer, with ``x`` the ln1-normalised input ``[B, T, C]``:

- token shift ``xx = shift(x) - x`` and six mixes ``x_* = x + xx * mu_*`` (r, w, k, v, a, g);
- ``r, k, v`` from linear maps; decay ``w`` from a tanh LoRA with a soft clamp (log-log form);
- value residual: layer 0 keeps ``v_first = v``, later layers move ``v`` towards it;
- in-context learning rate ``a`` (sigmoid LoRA); gate ``g``;
- ``kk = normalize(k * k_k)`` per head; ``k = k * (1 + (a - 1) * k_a)``;
- WKV-7 with ``(a, b) = (-kk, kk * a)``; GroupNorm ``ln_x`` (eps 64e-5); the bonus
  ``(r * k * r_k).sum per head * v``; ``output((y + bonus) * g)``.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from rwkv_registry.model.config import RWKV7Config
from rwkv_registry.model.lora import decay_lora, gate_lora, sigmoid_lora
from rwkv_registry.model.wkv import wkv7

LN_X_EPS = 64e-5


def token_shift(x: torch.Tensor, last: torch.Tensor) -> torch.Tensor:
    """``x`` shifted one step right with ``last`` ``[B, C]`` in front: ``[B, T, C]``."""
    return torch.cat((last.unsqueeze(1), x[:, :-1]), dim=1)


def last_input(x: torch.Tensor, into: torch.Tensor | None = None) -> torch.Tensor:
    """The new token-shift state ``x[:, -1]`` ``[B, C]``: copied into ``into`` when given, else a
    fresh tensor (a view would keep the whole ``[B, T, C]`` activation alive inside the state)."""
    return x[:, -1].clone() if into is None else into.copy_(x[:, -1])


class TimeMix(nn.Module):
    """Time mix of one layer. Parameter names and shapes are those of the checkpoint."""

    def __init__(self, config: RWKV7Config, layer_id: int) -> None:
        super().__init__()
        C, H, N = config.n_embd, config.n_head, config.head_size
        self.layer_id = layer_id
        self.n_head, self.head_size = H, N
        for name in ("x_r", "x_w", "x_k", "x_v", "x_a", "x_g", "w0", "a0", "k_k", "k_a"):
            setattr(self, name, nn.Parameter(torch.empty(1, 1, C)))  # [1, 1, C]
        self.w1 = nn.Parameter(torch.empty(C, config.d_decay))
        self.w2 = nn.Parameter(torch.empty(config.d_decay, C))
        self.a1 = nn.Parameter(torch.empty(C, config.d_aaa))
        self.a2 = nn.Parameter(torch.empty(config.d_aaa, C))
        self.g1 = nn.Parameter(torch.empty(C, config.d_gate))
        self.g2 = nn.Parameter(torch.empty(config.d_gate, C))
        d_v = config.layer_d_mv(layer_id)
        self.has_v_lora = d_v is not None  # layer 0 may carry an unused v0/v1/v2
        if d_v is not None:
            self.v0 = nn.Parameter(torch.empty(1, 1, C))
            self.v1 = nn.Parameter(torch.empty(C, d_v))
            self.v2 = nn.Parameter(torch.empty(d_v, C))
        self.r_k = nn.Parameter(torch.empty(H, N))  # [H, N]
        self.receptance = nn.Linear(C, C, bias=False)
        self.key = nn.Linear(C, C, bias=False)
        self.value = nn.Linear(C, C, bias=False)
        self.output = nn.Linear(C, C, bias=False)
        self.ln_x = nn.GroupNorm(H, C, eps=LN_X_EPS)

    def forward(
        self,
        x: torch.Tensor,
        shift: torch.Tensor,
        wkv: torch.Tensor,
        v_first: torch.Tensor | None,
        inplace: bool = False,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """``x`` [B, T, C], ``shift`` [B, C], ``wkv`` [B, H, N, N] fp32, ``v_first`` [B, T, C] (None in layer 0).

        Returns ``(out [B, T, C], new shift [B, C], new wkv, v_first)``; with ``inplace`` the new
        shift and wkv are written into ``shift`` and ``wkv`` (contiguous fp32), which are returned.
        """
        B, T, C = x.shape
        H, N = self.n_head, self.head_size
        xx = token_shift(x, shift) - x  # [B, T, C]
        xr, xw, xk = x + xx * self.x_r, x + xx * self.x_w, x + xx * self.x_k
        xv, xa, xg = x + xx * self.x_v, x + xx * self.x_a, x + xx * self.x_g

        r = self.receptance(xr)  # [B, T, C]
        w = decay_lora(xw, self.w0, self.w1, self.w2)  # [B, T, C] fp32, log-log decay
        k = self.key(xk)
        v = self.value(xv)
        if self.layer_id == 0 or v_first is None:
            v_first = v
        else:
            v = v + (v_first - v) * sigmoid_lora(xv, self.v0, self.v1, self.v2)
        a = sigmoid_lora(xa, self.a0, self.a1, self.a2)  # in-context learning rate
        g = gate_lora(xg, self.g1, self.g2)

        kk = F.normalize((k * self.k_k).view(B, T, H, N), dim=-1, p=2.0).view(B, T, C)
        k = k * (1 + (a - 1) * self.k_a)

        def heads(t: torch.Tensor) -> torch.Tensor:
            return t.view(B, T, H, N)  # [B, T, H, N]

        y, wkv = wkv7(
            heads(r), heads(w), heads(k), heads(v), heads(-kk), heads(kk * a), wkv, state_out=wkv if inplace else None
        )
        y = y.to(x.dtype).reshape(B * T, C)  # [B*T, C]
        y = self.ln_x(y).view(B, T, C)
        bonus = (heads(r * k * self.r_k.view(1, 1, C)).sum(dim=-1, keepdim=True) * heads(v)).view(B, T, C)
        out = self.output((y + bonus) * g)  # [B, T, C]
        return out, last_input(x, shift if inplace else None), wkv, v_first
