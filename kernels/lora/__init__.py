"""The LoRA matmuls of RWKV-7's time mix, grouped: all down-projections in one launch, all
up-projections in another.

Usage::

    from rwkv_registry.kernels.lora import lora_down, lora_up

    hw, ha, hg = lora_down((xw, xa, xg), (w1, a1, g1), ("tanh", "none", "sigmoid"))
    wz, az, g = lora_up((hw, ha, hg), (w2, a2, g2))

Modules: ``reference`` (plain PyTorch), ``fused`` (the Triton kernel, imported lazily),
``launch`` (checks, backend choice, launches). See docs/kernels.md.
"""

from __future__ import annotations

from .launch import ACTS, BACKENDS, MAX_SEGMENTS, TUNING, lora_down, lora_up
from .reference import lora_down_ref, lora_up_ref

__all__ = ["ACTS", "BACKENDS", "MAX_SEGMENTS", "TUNING", "lora_down", "lora_down_ref", "lora_up", "lora_up_ref"]
