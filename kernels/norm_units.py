"""The references' side of the norms' range (docs/kernels.md, "Range of the norms").

The fused kernels norm a row (LayerNorm) or head (GroupNorm, the key's L2 norm) whose largest
|value| exceeds 2^50 in units of that value, so that no fp32 square overflows. PyTorch's own
``F.layer_norm``, ``F.group_norm`` and ``F.normalize`` sum the squares in fp32 and overflow above
about 1.8e19 / sqrt(width): the references scale such rows first, by a power of two that brings
their largest |value| to about 2^50. A norm does not change when its input is scaled, but for its
eps: LayerNorm's and GroupNorm's eps (<= 1e-3) is then below 1e-14 of the variance, even of an
fp32 row of 65,536 values that differs from a constant by one unit in the last place, and
``normalize``'s 1e-12 floor is far below the norm (>= 2^49); below
2^50 the factor is exactly 1: the result is bit for bit what the plain call gives. The factor is
detached (the norm's gradient does not depend on it) and computed without a branch on the data,
so the references stay differentiable, graph-capturable and ``torch.compile``-able.
"""

from __future__ import annotations

import torch

__all__ = ["NORM_UNIT_ABOVE", "in_norm_units"]

NORM_UNIT_ABOVE = 2.0**50  # the fused kernels' threshold (``BIG`` in add_norm/fused.py, timemix/fused.py)


def in_norm_units(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """``x`` with each slice along ``dim`` whose largest |value| exceeds 2^50 multiplied by a power
    of two that brings that value to [2^49, 2^51); every other slice unchanged (times exactly 1).

    On the CPU, outside ``torch.compile``, ``x`` itself when no value exceeds 2^50 (one reduction
    and a read that costs no synchronisation there: the CPU reference path runs ~10 more small ops
    per norm otherwise, +30% on a tiny model's decode step, ``bench/norm_units_bench.py``)."""
    xd = x.detach()
    cpu_eager = x.device.type == "cpu" and not torch.compiler.is_compiling()
    if cpu_eager and not float(torch.linalg.vector_norm(xd, float("inf"))) > NORM_UNIT_ABOVE:  # NaN: as it is
        return x
    top = torch.linalg.vector_norm(xd, float("inf"), dim=dim, keepdim=True)
    top = top.to(torch.promote_types(x.dtype, torch.float32))
    factor = torch.where(top > NORM_UNIT_ABOVE, torch.exp2(50.0 - torch.floor(torch.log2(top))), 1.0)
    return x * factor.to(x.dtype)
