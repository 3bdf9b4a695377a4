"""Compute kernels for RWKV-7 inference (see docs/kernels.md).

- ``rwkv_registry.kernels.wkv7``: the WKV7 recurrence, ``y, state = wkv7(r, w, k, v, a, b, state)``:
  a plain reference and Triton kernels for chunked prefill and the decode step.
- ``rwkv_registry.kernels.graph``: ``GraphedStep``, a fixed-shape step replayed as a CUDA graph.

Importing this package needs neither Triton nor a GPU; the Triton kernels load on first use.
"""

from __future__ import annotations

__all__ = ["graph", "wkv7"]
