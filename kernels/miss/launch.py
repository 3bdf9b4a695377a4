"""The MiSS on-the-fly term and the squared ReLU: argument checks, backend choice and the Triton launches.

- ``miss_terms_(outs, xs, Ds, scales)``: ``out_s += scale_s * S(x_s) @ D_s^T`` for 1 to 3
  segments in ONE launch (a time-mix layer's receptance, key and value); ``miss_term_`` is the
  one-segment case.
- ``relu_square_(h, miss=None)``: ``h = relu(h + scale * S(x) @ D^T) ** 2`` with ``miss=(x, D,
  scale)`` (the channel mix's key map and its activation), else ``h = relu(h) ** 2``: one launch.

``backend="auto"`` runs the Triton kernels (``fused.py``) on CUDA tensors and under
``TRITON_INTERPRET=1`` on the CPU, and the PyTorch reference (``reference.py``) elsewhere; with a
MiSS term only for at most ``TUNING["max_rows"]`` rows (decode; cuBLAS wins at prefill sizes),
while the plain squared ReLU (element-wise) takes the kernel for any number of rows. "reference"
and "triton" force one ("triton" for any number of rows). The kernels are forward-only: inputs that
require grad while grad is enabled are refused (``ValueError``) by "triton" and sent to the
reference by "auto"; dtypes other than bf16/fp16/fp32 go to the reference. Every bad argument is a
``ValueError`` that names it and prints the shapes.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Sequence
from types import ModuleType

import torch

from .._triton import KERNEL_DTYPES, as_rows, load_kernel_module, next_pow2, use_triton
from .reference import miss_terms_ref, relu_square_ref

__all__ = [
    "KERNEL_DTYPES",
    "MAX_SEGMENTS",
    "TUNING",
    "MissTerm",
    "check_miss_term",
    "miss_term_",
    "miss_terms_",
    "relu_square_",
]

MAX_SEGMENTS = 3
MissTerm = tuple[torch.Tensor, torch.Tensor, float]  # (x, D, scale): a MiSS term to add to an output

# Launch configuration, read at every launch: output features per program (block_o), rank columns
# per step (block_r), elements of the x tile summed per step (block_x: block_x // block_r blocks of
# x), features per program of the plain squared ReLU (block_e), warps, and the most rows "auto"
# sends to a kernel with a MiSS term (max_rows; kernels/add_norm follows it too). Block sizes:
# powers of two.
TUNING: dict[str, int] = {
    "block_o": 64,
    "block_r": 64,
    "block_x": 4096,
    "block_e": 1024,
    "num_warps": 4,
    "max_rows": 64,
}


@functools.cache
def _kernels(interpret: bool) -> ModuleType:
    return load_kernel_module(__package__, "fused", interpret)


def _shape(t: object) -> str:
    return str(list(t.shape)) if isinstance(t, torch.Tensor) else type(t).__name__


def check_miss_term(
    op: str,
    out: torch.Tensor,
    x: torch.Tensor,
    D: torch.Tensor,
    scale: float,
    names: tuple[str, str, str, str] = ("out", "x", "D", "scale"),
) -> None:
    """One segment: ``out`` [..., O] contiguous, ``x`` [..., K] (same leading dims), ``D`` [O, r],
    one floating dtype and device, ``scale`` a Python number. ``names``: how the messages call them."""
    o, xn, dn, sn = names
    for name, t in ((o, out), (xn, x), (dn, D)):
        if not isinstance(t, torch.Tensor):
            raise ValueError(f"{op}: {name} must be a torch.Tensor, got {type(t).__name__}")
    shapes = f"{o}={list(out.shape)}, {xn}={list(x.shape)}, {dn}={list(D.shape)}"
    if D.dim() != 2 or D.shape[1] < 1:
        raise ValueError(f"{op}: {dn} must be [out_features, rank] with rank >= 1; got {shapes}")
    if out.dim() < 1 or out.shape[-1] != D.shape[0]:
        raise ValueError(f"{op}: {o}'s last dimension must be {dn}.shape[0] = {D.shape[0]}; got {shapes}")
    if x.dim() != out.dim() or x.shape[:-1] != out.shape[:-1]:
        raise ValueError(f"{op}: {xn} [..., K] and {o} [..., O] must share their leading dimensions; got {shapes}")
    if not (x.dtype == out.dtype == D.dtype) or not out.dtype.is_floating_point:
        raise ValueError(
            f"{op}: {o}, {xn} and {dn} must share one floating dtype; got {o} {out.dtype}, {xn} {x.dtype}, "
            f"{dn} {D.dtype} ({shapes})"
        )
    if not (x.device == out.device == D.device):
        raise ValueError(
            f"{op}: {o}, {xn} and {dn} must be on one device; got {o} {out.device}, {xn} {x.device}, {dn} {D.device}"
        )
    if not out.is_contiguous():
        raise ValueError(f"{op}: {o} must be contiguous (it is written in place); got {shapes}")
    if isinstance(scale, bool) or not isinstance(scale, int | float):
        raise ValueError(f"{op}: {sn} must be a Python number, got {type(scale).__name__}")


def _check_group(
    op: str,
    outs: Sequence[torch.Tensor],
    xs: Sequence[torch.Tensor],
    Ds: Sequence[torch.Tensor],
    scales: Sequence[float],
) -> None:
    """Segment count, one (out, x, D, scale) per segment, each checked, and the shared leading
    dimensions, dtype and device."""
    for name, seq in (("outs", outs), ("xs", xs), ("Ds", Ds), ("scales", scales)):
        # callers' arguments checked at run time, whatever the annotations say
        if isinstance(seq, torch.Tensor | str) or not isinstance(seq, Sequence):  # type: ignore[unreachable]
            raise ValueError(f"{op}: {name} must be a sequence (list or tuple), one entry per segment")
    n = len(outs)
    if not 1 <= n <= MAX_SEGMENTS:
        raise ValueError(f"{op}: 1 to {MAX_SEGMENTS} segments, got {n} outs")
    if not len(xs) == len(Ds) == len(scales) == n:
        raise ValueError(
            f"{op}: one x, D and scale per out; got {n} outs, {len(xs)} xs, {len(Ds)} Ds, {len(scales)} scales"
        )
    for i in range(n):
        check_miss_term(op, outs[i], xs[i], Ds[i], scales[i], (f"outs[{i}]", f"xs[{i}]", f"Ds[{i}]", f"scales[{i}]"))

    def listing() -> str:
        return ", ".join(f"outs[{i}]={_shape(out)} {out.dtype} {out.device}" for i, out in enumerate(outs))

    for out in outs[1:]:
        if out.shape[:-1] != outs[0].shape[:-1]:
            raise ValueError(f"{op}: the segments must share their leading dimensions; got {listing()}")
        if out.dtype != outs[0].dtype:
            raise ValueError(f"{op}: the segments must share one dtype; got {listing()}")
        if out.device != outs[0].device:
            raise ValueError(f"{op}: the segments must be on one device; got {listing()}")
    spans = sorted((o.data_ptr(), o.data_ptr() + o.numel() * o.element_size(), i) for i, o in enumerate(outs))
    for (_, end, i), (start, _, j) in itertools.pairwise(spans):
        if start < end:  # contiguous outs: overlapping byte ranges mean shared elements
            raise ValueError(f"{op}: outs[{i}] and outs[{j}] overlap in memory; each segment needs its own output")


def _tiles(ks: Sequence[int], rs: Sequence[int], ns: Sequence[int]) -> tuple[int, int, int]:
    """``(BLOCK_O, BLOCK_R, BLOCK_N)`` for MiSS segments of widths ``ks``, ranks ``rs`` and outputs ``ns``."""
    block_o = min(TUNING["block_o"], next_pow2(max(ns)))
    block_r = min(TUNING["block_r"], next_pow2(max(rs)))
    n_blocks = max(-(-k // r) for k, r in zip(ks, rs, strict=True))
    block_n = max(1, min(TUNING["block_x"] // block_r, next_pow2(n_blocks)))
    return block_o, block_r, block_n


def miss_terms_(
    outs: Sequence[torch.Tensor],
    xs: Sequence[torch.Tensor],
    Ds: Sequence[torch.Tensor],
    scales: Sequence[float],
    *,
    backend: str = "auto",
) -> list[torch.Tensor]:
    """``out_s += scale_s * S(x_s) @ D_s^T`` in place for 1 to 3 segments, in one launch; returns
    ``list(outs)``.

    Per segment: ``x_s`` [..., K_s]; ``D_s`` [O_s, r_s] (any r_s >= 1, per segment); ``out_s``
    [..., O_s] contiguous; ``scale_s`` a Python number. All segments share the leading dimensions,
    the dtype and the device. ``S_s[..., j]`` sums ``x_s[..., k]`` over ``k % r_s == j`` (the last
    partial block zero padded). The kernel accumulates ``S`` and the product in fp32 and rounds once,
    when it stores ``out``; the reference rounds ``S`` and the product to the dtype.
    """
    _check_group("miss_terms_", outs, xs, Ds, scales)
    return _miss_terms("miss_terms_", outs, xs, Ds, scales, backend)


def miss_term_(
    out: torch.Tensor, x: torch.Tensor, D: torch.Tensor, scale: float, *, backend: str = "auto"
) -> torch.Tensor:
    """``out += scale * S @ D^T`` in place; returns ``out``: :func:`miss_terms_` for one segment.

    ``x`` [..., K]; ``D`` [O, r] (any r >= 1); ``out`` [..., O] contiguous, with ``x``'s leading
    dimensions; one dtype for all three. ``S[..., j]`` sums ``x[..., k]`` over ``k % r == j`` (the
    last partial block zero padded).
    """
    check_miss_term("miss_term_", out, x, D, scale)
    return _miss_terms("miss_term_", [out], [x], [D], [scale], backend)[0]


def _miss_terms(
    op: str,
    outs: Sequence[torch.Tensor],
    xs: Sequence[torch.Tensor],
    Ds: Sequence[torch.Tensor],
    scales: Sequence[float],
    backend: str,
) -> list[torch.Tensor]:
    """Checked segments: the backend choice and the launch."""
    ns = [D.shape[0] for D in Ds]
    rows = math.prod(outs[0].shape[:-1])
    use = use_triton(op, backend, outs[0].device, [*outs, *xs, *Ds])
    if backend == "auto" and rows > TUNING["max_rows"]:
        use = False
    if not use or outs[0].dtype not in KERNEL_DTYPES:
        return miss_terms_ref(outs, xs, Ds, scales)
    if rows == 0 or sum(ns) == 0:
        return list(outs)
    x2 = [as_rows(x, rows) for x in xs]
    ds = [D.contiguous() for D in Ds]
    ks, rs = [x.shape[-1] for x in xs], [D.shape[1] for D in Ds]
    block_o, block_r, block_n = _tiles(ks, rs, ns)
    ends = list(itertools.accumulate(-(-n // block_o) for n in ns))  # running output blocks
    pad = MAX_SEGMENTS - len(outs)
    bounds = (ends + [ends[-1]] * pad)[:2]
    _kernels(outs[0].device.type != "cuda").miss_term_kernel[(rows, ends[-1])](
        *x2, *[x2[0]] * pad, *ds, *[ds[0]] * pad, *outs, *[outs[0]] * pad,
        *ks, *[0] * pad, *ns, *[0] * pad, *rs, *[1] * pad, *[x.stride(0) for x in x2], *[0] * pad,
        *[float(s) for s in scales], *[0.0] * pad, *bounds,
        N_SEG=len(outs), BLOCK_O=block_o, BLOCK_R=block_r, BLOCK_N=block_n, num_warps=TUNING["num_warps"],
    )  # fmt: skip
    return list(outs)


def relu_square_(
    h: torch.Tensor,
    miss: MissTerm | None = None,
    *,
    backend: str = "auto",
) -> torch.Tensor:
    """``h = relu(h + scale * S(x) @ D^T) ** 2`` with ``miss=(x, D, scale)``, else ``h = relu(h) ** 2``.

    ``h`` [..., F] contiguous; ``miss``: ``x`` [..., K] with ``h``'s leading dimensions, ``D``
    [F, r], ``h``'s dtype and device, ``scale`` a Python number (as :func:`miss_term_`, ``h`` being
    ``out``). In place, returning ``h`` itself: one launch where the kernel runs (fp32 inside, one
    rounding at the store), else the reference (``miss_term_ref`` then ``torch.relu_(h).square_()``).
    With grad mode on and ``h``, ``x`` or ``D`` requiring grad, the differentiable reference returns
    a NEW tensor ``relu(h + term) ** 2`` and leaves ``h`` untouched: callers use the return value.
    """
    op = "relu_square_"
    if not isinstance(h, torch.Tensor):
        raise ValueError(f"{op}: h must be a torch.Tensor, got {type(h).__name__}")
    if h.dim() < 1 or not h.is_floating_point():
        raise ValueError(f"{op}: h must be a floating tensor [..., F]; got {list(h.shape)} {h.dtype}")
    if not h.is_contiguous():
        raise ValueError(f"{op}: h must be contiguous (it is written in place); got {list(h.shape)}")
    tensors = [h]
    if miss is not None:
        if isinstance(miss, torch.Tensor) or not isinstance(miss, tuple | list) or len(miss) != 3:
            raise ValueError(f"{op}: miss must be None or a tuple (x, D, scale); got {type(miss).__name__}")
        check_miss_term(op, h, miss[0], miss[1], miss[2], ("h", "x", "D", "scale"))
        tensors += [miss[0], miss[1]]
    n_out = h.shape[-1]
    rows = h.numel() // n_out if n_out else 0
    use = use_triton(op, backend, h.device, tensors)
    if miss is not None and backend == "auto" and rows > TUNING["max_rows"]:
        use = False
    if not use or h.dtype not in KERNEL_DTYPES:
        return relu_square_ref(h, None if miss is None else (miss[0], miss[1], miss[2]))
    if rows == 0 or n_out == 0:
        return h
    kernels = _kernels(h.device.type != "cuda")
    if miss is None:
        block = min(TUNING["block_e"], next_pow2(n_out))
        kernels.relu_square_kernel[(rows, -(-n_out // block))](
            h, h, h, n_out, 0, 1, 0, 0.0,
            HAS_MISS=False, BLOCK_O=block, BLOCK_R=1, BLOCK_N=1, num_warps=TUNING["num_warps"],
        )  # fmt: skip
        return h
    x, D, scale = miss
    x2, D = as_rows(x, rows), D.contiguous()
    K, r = x.shape[-1], D.shape[1]
    block_o, block_r, block_n = _tiles([K], [r], [n_out])
    kernels.relu_square_kernel[(rows, -(-n_out // block_o))](
        h, x2, D, n_out, K, r, x2.stride(0), float(scale),
        HAS_MISS=True, BLOCK_O=block_o, BLOCK_R=block_r, BLOCK_N=block_n, num_warps=TUNING["num_warps"],
    )  # fmt: skip
    return h
