"""The MiSS on-the-fly term: argument checks, backend choice and the Triton launch.

``backend="auto"`` runs the Triton kernel (``fused.py``) on CUDA tensors and under
``TRITON_INTERPRET=1`` on the CPU, for at most ``TUNING["max_rows"]`` rows (decode; cuBLAS wins
at prefill sizes), and the PyTorch reference (``reference.py``) elsewhere; "reference" and
"triton" force one ("triton" for any number of rows). The Triton kernel is forward-only: inputs
that require grad while grad is enabled are refused (``ValueError``), and dtypes other than
bf16/fp16/fp32 go to the reference. Every bad argument is a ``ValueError`` that names it and
prints the shapes.
"""

from __future__ import annotations

import functools
from types import ModuleType

import torch

from .._triton import load_kernel_module, use_triton
from .reference import miss_term_ref

KERNEL_DTYPES = (torch.bfloat16, torch.float16, torch.float32)

# Launch configuration, read at every launch: output features per program (block_o), rank columns
# per step (block_r), elements of the x tile summed per step (block_x: block_x // block_r blocks of
# x), warps, and the most rows "auto" sends to the kernel (max_rows). Block sizes: powers of two.
TUNING: dict[str, int] = {"block_o": 64, "block_r": 64, "block_x": 4096, "num_warps": 4, "max_rows": 64}


@functools.cache
def _kernels(interpret: bool) -> ModuleType:
    return load_kernel_module(__package__, "fused", interpret)


def _pow2(n: int) -> int:
    """The smallest power of two >= n (n >= 1)."""
    return 1 << (max(n, 1) - 1).bit_length()


def _check(out: torch.Tensor, x: torch.Tensor, D: torch.Tensor, scale: float) -> None:
    for name, t in (("out", out), ("x", x), ("D", D)):
        if not isinstance(t, torch.Tensor):
            raise ValueError(f"miss_term_: {name} must be a torch.Tensor, got {type(t).__name__}")
    shapes = f"out={list(out.shape)}, x={list(x.shape)}, D={list(D.shape)}"
    if D.dim() != 2 or D.shape[1] < 1:
        raise ValueError(f"miss_term_: D must be [out_features, rank] with rank >= 1; got {shapes}")
    if out.dim() < 1 or out.shape[-1] != D.shape[0]:
        raise ValueError(f"miss_term_: out's last dimension must be D.shape[0] = {D.shape[0]}; got {shapes}")
    if x.dim() != out.dim() or x.shape[:-1] != out.shape[:-1]:
        raise ValueError(f"miss_term_: x [..., K] and out [..., O] must share their leading dimensions; got {shapes}")
    if not (x.dtype == out.dtype == D.dtype) or not out.dtype.is_floating_point:
        raise ValueError(
            f"miss_term_: out, x and D must share one floating dtype; got out {out.dtype}, x {x.dtype}, "
            f"D {D.dtype} ({shapes})"
        )
    if not (x.device == out.device == D.device):
        raise ValueError(
            f"miss_term_: out, x and D must be on one device; got out {out.device}, x {x.device}, D {D.device}"
        )
    if not out.is_contiguous():
        raise ValueError(f"miss_term_: out must be contiguous (it is written in place); got {shapes}")
    if isinstance(scale, bool) or not isinstance(scale, int | float):
        raise ValueError(f"miss_term_: scale must be a Python number, got {type(scale).__name__}")


def miss_term_(
    out: torch.Tensor, x: torch.Tensor, D: torch.Tensor, scale: float, *, backend: str = "auto"
) -> torch.Tensor:
    """``out += scale * S @ D^T`` in place; returns ``out``.

    ``x`` [..., K]; ``D`` [O, r] (any r >= 1); ``out`` [..., O] contiguous, with ``x``'s leading
    dimensions; one dtype for all three. ``S[..., j]`` sums ``x[..., k]`` over ``k % r == j`` (the
    last partial block zero padded). The kernel accumulates ``S`` and the product in fp32 and
    rounds once, when it stores ``out``; the reference rounds ``S`` and the product to the dtype.
    """
    _check(out, x, D, scale)
    K, n_out = x.shape[-1], D.shape[0]
    rows = out.numel() // n_out if n_out else 0
    use = use_triton("miss_term_", backend, out.device, (out, x, D))
    if backend == "auto" and rows > TUNING["max_rows"]:
        use = False
    if not use or out.dtype not in KERNEL_DTYPES:
        return miss_term_ref(out, x, D, scale)
    if rows == 0 or n_out == 0:
        return out
    r = D.shape[1]
    x2 = x.contiguous().view(rows, K)
    D = D.contiguous()
    block_o = min(TUNING["block_o"], _pow2(n_out))
    block_r = min(TUNING["block_r"], _pow2(r))
    block_n = max(1, min(TUNING["block_x"] // block_r, _pow2(-(-K // r))))
    grid = (rows, -(-n_out // block_o))
    _kernels(out.device.type != "cuda").miss_term_kernel[grid](
        x2, D, out, K, n_out, r, float(scale),
        BLOCK_O=block_o, BLOCK_R=block_r, BLOCK_N=block_n, num_warps=TUNING["num_warps"],
    )  # fmt: skip
    return out
