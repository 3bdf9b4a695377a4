"""Residual add + LayerNorm in one kernel: ``s, y = add_layer_norm(x, dx, weight, bias, eps)``;
``add_layer_norm_mix`` also does the next token mix (one launch per decode step).

Modules: ``reference`` (plain PyTorch), ``fused`` (Triton, imported lazily), ``launch``.
"""

from __future__ import annotations

from .launch import MAX_WIDTH, TUNING, add_layer_norm, add_layer_norm_mix
from .reference import add_layer_norm_ref

__all__ = ["MAX_WIDTH", "TUNING", "add_layer_norm", "add_layer_norm_mix", "add_layer_norm_ref"]
