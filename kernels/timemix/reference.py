"""The element-wise work of an RWKV-7 block around its matmuls, in plain PyTorch (the reference).

Three ops, FORMATS §2. ``x`` is ``[B, T, C]`` with ``C = H * N`` (H heads of N channels):

``token_mix(x, shift, mus)`` (the token shift and its mixes; time mix: six, channel mix: one)::

    xx    = cat(shift, x[:, :-1]) - x            # shift [B, C]: the last input of the previous call
    out_i = x + xx * mu_i                        # new shift: x[:, -1]

``tm_gates(k, v, wz, az, ...)`` (after the r/k/v and LoRA matmuls; ``wz = tanh(xw@w1)@w2``,
``az = (xa@a1)@a2``, ``vz = (xv@v1)@v2``)::

    w  = -softplus(-(w0 + wz)) - 0.5             # fp32 log-log decay, w < -0.5
    a  = sigmoid(a0 + az)                        # in-context learning rate
    v  = v + (v_first - v) * sigmoid(v0 + vz)    # value residual (not in layer 0)
    kk = normalize(k * k_k) per head             # L2, eps 1e-12
    k  = k * (1 + (a - 1) * k_a)
    returns w, k, v, -kk, kk * a                 # the WKV7 inputs w, k, v, a, b

``tm_output(y, r, k, v, g, ...)`` (after WKV7; ``g = sigmoid(xg@g1)@g2``)::

    out = (GroupNorm_H(y; ln_w, ln_b, eps) + sum_n(r * k * r_k) per head * v) * g

This file is the model's own arithmetic (dtype steps included) and what the Triton kernels in
``fused.py`` are tested against; ``launch.py`` chooses between them.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F

from ..norm_units import in_norm_units

__all__ = ["tm_gates_ref", "tm_output_ref", "token_mix_ref"]


def token_mix_ref(
    x: torch.Tensor, shift: torch.Tensor, mus: Sequence[torch.Tensor], shift_out: torch.Tensor | None = None
) -> tuple[list[torch.Tensor], torch.Tensor]:
    """``([x + xx * mu for mu in mus], new shift)`` for ``x`` [B, T, C], ``shift`` [B, C] and
    each ``mu`` broadcastable to [B, T, C]. The new shift ``x[:, -1]`` is copied into
    ``shift_out`` when given (it may be ``shift``), else a fresh tensor."""
    xx = torch.cat((shift.unsqueeze(1), x[:, :-1]), dim=1) - x  # [B, T, C]
    mixed = [x + xx * mu for mu in mus]
    new_shift = x[:, -1].clone() if shift_out is None else shift_out.copy_(x[:, -1])
    return mixed, new_shift


def tm_gates_ref(
    k: torch.Tensor,
    v: torch.Tensor,
    wz: torch.Tensor,
    az: torch.Tensor,
    w0: torch.Tensor,
    a0: torch.Tensor,
    k_k: torch.Tensor,
    k_a: torch.Tensor,
    heads: int,
    v_first: torch.Tensor | None = None,
    vz: torch.Tensor | None = None,
    v0: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(w fp32, k, v, -kk, kk * a)``, all [B, T, C]; ``v`` moves towards ``v_first`` when
    ``vz`` is given (layers after the first)."""
    B, T, C = k.shape
    w = -F.softplus(-(w0 + wz).float()) - 0.5
    a = torch.sigmoid(a0 + az)
    if vz is not None:
        assert v_first is not None and v0 is not None
        v = v + (v_first - v) * torch.sigmoid(v0 + vz)
    # a head whose largest |value| exceeds 2^50 in units of it (as the kernel; kernels/norm_units.py)
    kk = F.normalize(in_norm_units((k * k_k).view(B, T, heads, C // heads)), dim=-1, p=2.0).view(B, T, C)
    k = k * (1 + (a - 1) * k_a)
    return w, k, v, -kk, kk * a


def tm_output_ref(
    y: torch.Tensor,
    r: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    ln_weight: torch.Tensor,
    ln_bias: torch.Tensor,
    r_k: torch.Tensor,
    eps: float,
) -> torch.Tensor:
    """``(GroupNorm(y) + bonus) * g`` [B, T, C] for ``y`` the WKV7 output [B, T, C] (or [B, T, H, N]),
    ``r_k`` [H, N]."""
    B, T, C = r.shape
    H, N = r_k.shape
    # a head whose largest |value| exceeds 2^50 in units of it (as the kernel; kernels/norm_units.py)
    y = in_norm_units(y.reshape(B * T, H, C // H)).view(B * T, C)
    y = F.group_norm(y, H, ln_weight, ln_bias, eps).view(B, T, C)
    bonus = ((r * k * r_k.view(1, 1, C)).view(B, T, H, N).sum(dim=-1, keepdim=True) * v.view(B, T, H, N)).view(B, T, C)
    return (y + bonus) * g
