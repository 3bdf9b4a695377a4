"""Compute kernels for RWKV-7 inference (see docs/kernels.md).

- ``rwkv_registry.kernels.wkv7``: the WKV7 recurrence, ``y, state = wkv7(r, w, k, v, a, b, state)``:
  a plain reference and Triton kernels for chunked prefill and the decode step.
- ``timemix``, ``lora``, ``add_norm``, ``miss``: the element-wise work around a block's matmuls as
  fused Triton kernels, each beside its PyTorch reference (token mix, gates, output; the grouped
  LoRA projections; residual add + LayerNorm (+ the next token mix); the MiSS term on the fly, relu²).
- ``graph``: ``GraphedStep``, a fixed-shape step replayed as a CUDA graph.
- ``launches``: ``count_launches``, the kernels a call launches.

Importing this package needs neither Triton nor a GPU; the Triton kernels load on first use.
"""

from __future__ import annotations

__all__ = ["add_norm", "graph", "launches", "lora", "miss", "timemix", "wkv7"]
