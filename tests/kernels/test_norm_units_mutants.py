"""Mutation audit of kernels/norm_units.py (``in_norm_units``), after test_kernel_edges.py's norm tests.

- N01 ``top > NORM_UNIT_ABOVE`` -> ``>=`` in the factor: equivalent (a top of exactly 2^50 gets 2^(50-50) = 1)
- N02 ``> NORM_UNIT_ABOVE`` -> ``>=`` in the CPU shortcut: equivalent in value (the no-branch path then multiplies
  by exactly 1; only a copy instead of ``x`` itself)
- N03 the largest |value| taken along the last dimension whatever ``dim``: killed here
- N04 ``exp2(49 - floor(log2(top)))``: equivalent (the top lands in [2^49, 2^50), inside the documented
  [2^49, 2^51); a power of two scales exactly, so the norm is the same)
- N05 ``x * factor`` without ``.to(x.dtype)``: killed (test_kernel_edges.py)
- N06 the CPU shortcut taken under torch.compile too: killed (tests/model/test_model_decode.py, a graph break)
- N07 ``xd = x`` (the factor not detached): equivalent (the factor's only path from ``x`` is through
  ``torch.floor``, whose gradient is zero: the same gradient, the detach saves the work)
"""

from __future__ import annotations

import pytest
import torch

from rwkv_registry.kernels.norm_units import in_norm_units

F64 = torch.float64


@pytest.mark.parametrize("compiling", [False, True], ids=["cpu-shortcut", "no-branch"])
def test_the_units_are_per_slice_along_dim(compiling: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """N03: ``dim`` picks the slices: along dim 0 only the column holding huge values is scaled, by a power of two
    that brings its largest |value| to [2^49, 2^51); the ordinary columns are unchanged (times exactly 1)."""
    if compiling:
        monkeypatch.setattr(torch.compiler, "is_compiling", lambda: True)
    gen = torch.Generator().manual_seed(3)
    x = torch.randn(40, 4, generator=gen, dtype=F64)
    x[:, 2] *= 1e25
    got = in_norm_units(x, dim=0)
    assert torch.equal(got[:, [0, 1, 3]], x[:, [0, 1, 3]])
    top = float(got[:, 2].abs().max())
    assert 2.0**49 <= top < 2.0**51
    factor = got[:, 2] / x[:, 2]
    assert torch.equal(factor, factor[:1].expand_as(factor))
    assert float(torch.frexp(factor[:1])[0]) == 0.5  # a power of two
