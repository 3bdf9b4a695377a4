"""Residual add + LayerNorm in one kernel: ``s, y = add_layer_norm(x, dx, weight, bias, eps)``.

Modules: ``reference`` (plain PyTorch), ``fused`` (Triton, imported lazily), ``launch``.
"""

from __future__ import annotations

from .launch import MAX_WIDTH, TUNING, add_layer_norm
from .reference import add_layer_norm_ref

__all__ = ["MAX_WIDTH", "TUNING", "add_layer_norm", "add_layer_norm_ref"]
