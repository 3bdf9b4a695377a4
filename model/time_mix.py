"""RWKV-7 time mixing (the attention-like half of a block), FORMATS §2.

For one layer, with ``x`` the ln1-normalised input ``[B, T, C]``:

- token shift ``xx = shift(x) - x`` and six mixes ``x_* = x + xx * mu_*`` (r, w, k, v, a, g);
- ``r, k, v`` from linear maps; decay ``w`` from a tanh LoRA with a soft clamp (log-log form);
- value residual: layer 0 keeps ``v_first = v``, later layers move ``v`` towards it;
- in-context learning rate ``a`` (sigmoid LoRA); gate ``g``;
- ``kk = normalize(k * k_k)`` per head; ``k = k * (1 + (a - 1) * k_a)``;
- WKV-7 with ``(a, b) = (-kk, kk * a)``; GroupNorm ``ln_x`` (eps 64e-5); the bonus
  ``(r * k * r_k).sum per head * v``; ``output((y + bonus) * g)``.

The token shift and mixes are made by the block (fused with the LayerNorm before them on a
decode step) and passed in. The matmuls (the four r/k/v/output maps; the LoRA pairs, each
``x @ A`` squeezed to a narrow width and expanded with ``@ B``, checkpoint layout, grouped by
:mod:`rwkv_registry.kernels.lora`) run here; the element-wise work between them is two ops of
:mod:`rwkv_registry.kernels.timemix` (gates, output), fused Triton kernels where the WKV kernels
run and their PyTorch reference elsewhere.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from rwkv_registry.kernels.lora import lora_down, lora_up
from rwkv_registry.kernels.miss import miss_terms_
from rwkv_registry.kernels.timemix import tm_gates, tm_output
from rwkv_registry.model.config import RWKV7Config
from rwkv_registry.model.miss import MissTerm, linear_open
from rwkv_registry.model.wkv import elementwise_backend, wkv7

LN_X_EPS = 64e-5


class TimeMix(nn.Module):
    """Time mix of one layer. Parameter names and shapes are those of the checkpoint."""

    # set with setattr in __init__, [1, 1, C] each
    x_r: nn.Parameter
    x_w: nn.Parameter
    x_k: nn.Parameter
    x_v: nn.Parameter
    x_a: nn.Parameter
    x_g: nn.Parameter
    w0: nn.Parameter
    a0: nn.Parameter
    k_k: nn.Parameter
    k_a: nn.Parameter

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

    def mus(self) -> tuple[torch.Tensor, ...]:
        """The six token-mix coefficients (r, w, k, v, a, g), in the order :meth:`forward` takes the mixes."""
        return (self.x_r, self.x_w, self.x_k, self.x_v, self.x_a, self.x_g)

    def forward(
        self,
        mixes: Sequence[torch.Tensor],
        new_shift: torch.Tensor,
        wkv: torch.Tensor,
        v_first: torch.Tensor | None,
        inplace: bool = False,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, MissTerm | None]:
        """From the token mixes ``(xr, xw, xk, xv, xa, xg)`` [B, T, C] of the ln1-normalised input
        with :meth:`mus` (the block makes them, with the new token-shift state ``new_shift`` [B, C]:
        :func:`~rwkv_registry.kernels.timemix.token_mix`, or on a decode step the fused add +
        LayerNorm + mix), ``wkv`` [B, H, N, N] fp32 and ``v_first`` [B, T, C] (None in layer 0).

        Returns ``(out [B, T, C], new_shift, new wkv, v_first, out_miss)``; with ``inplace`` the
        new wkv is written into ``wkv`` (contiguous fp32), which is returned. ``out_miss``: the MiSS
        term of the output map still to be added to ``out`` (an adapter on the fly, fused kernels;
        see :func:`~rwkv_registry.model.miss.linear_open`), else None.
        """
        xr, xw, xk, xv, xa, xg = mixes
        B, T, _ = xr.shape
        H, N = self.n_head, self.head_size
        backend = elementwise_backend(xr)
        # r, k, v; MiSS terms of an adapter on the fly are added in one launch
        r, r_miss = linear_open(self.receptance, xr, backend)  # [B, T, C]
        k, k_miss = linear_open(self.key, xk, backend)
        v, v_miss = linear_open(self.value, xv, backend)
        open_terms = [(out, term) for out, term in ((r, r_miss), (k, k_miss), (v, v_miss)) if term is not None]
        if open_terms:
            miss_terms_(*_segments(open_terms), backend=backend)
        # the LoRA pairs, all down-projections in one launch and all up-projections in another:
        # decay tanh(xw @ w1) @ w2 (soft clamp in tm_gates), in-context learning rate (xa @ a1) @ a2,
        # output gate sigmoid(xg @ g1) @ g2 and, after layer 0, value residual (xv @ v1) @ v2
        first = self.layer_id == 0 or v_first is None
        ins, downs, acts, ups = (
            [xw, xa, xg],
            [self.w1, self.a1, self.g1],
            ["tanh", "none", "sigmoid"],
            [self.w2, self.a2, self.g2],
        )
        if not first:
            ins, downs, acts, ups = [*ins, xv], [*downs, self.v1], [*acts, "none"], [*ups, self.v2]
        wz, az, g, *vz = lora_up(lora_down(ins, downs, acts, backend=backend), ups, backend=backend)
        if first:
            v_first = v
            w, k, v, a, b = tm_gates(k, v, wz, az, self.w0, self.a0, self.k_k, self.k_a, H, backend=backend)
        else:
            w, k, v, a, b = tm_gates(
                k, v, wz, az, self.w0, self.a0, self.k_k, self.k_a, H, v_first, vz[0], self.v0, backend=backend
            )

        def heads(t: torch.Tensor) -> torch.Tensor:
            return t.view(B, T, H, N)  # [B, T, H, N]

        y, wkv = wkv7(
            heads(r), heads(w), heads(k), heads(v), heads(a), heads(b), wkv, state_out=wkv if inplace else None
        )
        mixed = tm_output(y, r, k, v, g, self.ln_x.weight, self.ln_x.bias, self.r_k, self.ln_x.eps, backend=backend)
        out, out_miss = linear_open(self.output, mixed, backend)
        return out, new_shift, wkv, v_first, out_miss  # type: ignore[return-value]  # v_first: v when it was None


def _segments(
    terms: list[tuple[torch.Tensor, MissTerm]],
) -> tuple[list[torch.Tensor], list[torch.Tensor], list[torch.Tensor], list[float]]:
    """``(outs, xs, Ds, scales)`` of open MiSS terms, for :func:`miss_terms_`."""
    return [o for o, _ in terms], [t[0] for _, t in terms], [t[1] for _, t in terms], [t[2] for _, t in terms]
