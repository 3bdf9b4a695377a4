"""The grouped LoRA matmuls: argument checks, backend choice and the Triton launch.

``lora_down`` runs up to four down-projections with their activations (``act(x @ W1)``) in one
launch, ``lora_up`` up to four up-projections (``h @ W2``) in another; a time-mix layer's four
LoRA pairs (decay, learning rate, gate, value residual) are then two launches instead of 8-10
kernels. The kernel is a small-M design (decode): ``backend="auto"`` runs it on CUDA tensors (and
under ``TRITON_INTERPRET=1`` on the CPU) for at most ``TUNING["max_rows"]`` rows, and the PyTorch
reference (``reference.py``: cuBLAS on CUDA) elsewhere; "reference" and "triton" force one. The
kernel is forward-only: inputs that require grad while grad is enabled are refused (``ValueError``)
by "triton" and sent to the reference by "auto". Every bad argument is a ``ValueError`` that names
it and prints the shapes.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from types import ModuleType

import torch

from .._triton import BACKENDS, KERNEL_DTYPES, as_rows, load_kernel_module, next_pow2, use_triton
from .reference import ACTIVATIONS, lora_down_ref, lora_up_ref

__all__ = ["ACTS", "BACKENDS", "KERNEL_DTYPES", "MAX_SEGMENTS", "TUNING", "lora_down", "lora_up"]

ACTS = tuple(ACTIVATIONS)  # "none", "tanh", "sigmoid"
_ACT_CODES = {"none": 0, "tanh": 1, "sigmoid": 2}  # fused.ACT_NONE, ACT_TANH, ACT_SIGMOID
MAX_SEGMENTS = 4

# Launch configuration, read at every launch:
# - max_rows: "auto" runs the kernel for M = prod(leading dims) <= max_rows, cuBLAS above;
# - dot_rows: from this M on, BLOCK_M rows per program through tl.dot (BLOCK_M: the next power of
#   two >= M, between 16 and block_m); below it one row per program (broadcast product);
# - block_n, block_k: the largest output and reduction tiles (capped by the widths, at least 16;
#   block_k at most 32 for an fp32 tl.dot, which runs on FMAs);
#   block_n is halved (down to 16) while the grid has fewer than min_programs programs, so that a
#   down-projection (N = D small, K = C large) still spreads over the GPU;
# - num_warps: warps per program.
# With tl.dot tiles (BLOCK_M > 1) block_k is also halved until the x and W tiles of the software
# pipeline's stages fit in SMEM_BUDGET bytes of shared memory (an H100/H200 block has 227 KB), so
# a larger TUNING entry cannot fail to launch for want of shared memory.
TUNING: dict[str, int] = {
    "max_rows": 64,
    "dot_rows": 8,
    "block_m": 64,
    "block_n": 64,
    "block_k": 128,
    "min_programs": 128,
    "num_warps": 4,
}


SMEM_BUDGET = 160 * 1024  # bytes of shared memory the pipelined x and W tiles may take
PIPELINE_STAGES = 3  # Triton's default num_stages on CUDA


def tile_smem_bytes(block_m: int, block_n: int, block_k: int, dtype: torch.dtype) -> int:
    """Shared memory of the pipelined ``x`` [BLOCK_M, BLOCK_K] and ``W`` [BLOCK_K, BLOCK_N] tiles."""
    return (block_m * block_k + block_k * block_n) * dtype.itemsize * PIPELINE_STAGES


@functools.cache
def dot_in_fp32(dtype: torch.dtype, device_type: str) -> bool:
    """Whether the kernel's ``tl.dot`` gets fp32 operands (``DOT_F32``): for fp32 inputs, at IEEE
    precision, never tf32; for bf16 off CUDA, whose interpreter cannot multiply bf16 tiles (see
    fused.py). bf16 and fp16 tiles on CUDA go to the tensor cores as they are."""
    return dtype == torch.float32 or (device_type != "cuda" and dtype == torch.bfloat16)


def _kernels(interpret: bool) -> ModuleType:
    return load_kernel_module(__package__, "fused", interpret)


def _use_triton(op: str, backend: str, device: torch.device, tensors: Sequence[torch.Tensor], rows: int) -> bool:
    """The fused ops' rule (``kernels._triton.use_triton``), and "auto" leaves ``rows > max_rows`` to cuBLAS."""
    return use_triton(op, backend, device, tensors) and (backend == "triton" or rows <= TUNING["max_rows"])


def _shapes(name: str, ts: Sequence[object]) -> str:
    return ", ".join(
        f"{name}[{i}]={list(t.shape) if isinstance(t, torch.Tensor) else type(t).__name__}" for i, t in enumerate(ts)
    )


def _check(
    op: str, in_name: str, xs: Sequence[torch.Tensor], weights: Sequence[torch.Tensor], acts: Sequence[str] | None
) -> tuple[int, torch.Size]:
    """Segment count, types, shapes, dtype, device and activations; returns ``(M, leading dims)``."""
    # callers' arguments checked at run time, whatever the annotations say
    if isinstance(xs, torch.Tensor) or isinstance(weights, torch.Tensor):  # type: ignore[unreachable]
        raise ValueError(f"{op}: {in_name} and weights must be sequences of tensors, one per segment")
    if isinstance(acts, str):
        raise ValueError(f"{op}: acts must be a sequence of names, one per segment; got the string {acts!r}")

    def shapes() -> str:  # for the messages only (not built on the hot path)
        return f"{_shapes(in_name, xs)}; {_shapes('weights', weights)}"

    if not 1 <= len(xs) <= MAX_SEGMENTS:
        raise ValueError(f"{op}: {in_name}: 1 to {MAX_SEGMENTS} segments, got {len(xs)}")
    if len(weights) != len(xs) or (acts is not None and len(acts) != len(xs)):
        got = f"{len(xs)} {in_name}, {len(weights)} weights" + ("" if acts is None else f", {len(acts)} acts")
        raise ValueError(f"{op}: one weight{'' if acts is None else ' and one act'} per segment; got {got}: {shapes()}")
    for name, seq in ((in_name, xs), ("weights", weights)):
        for i, t in enumerate(seq):
            if not isinstance(t, torch.Tensor):
                raise ValueError(f"{op}: {name}[{i}] must be a torch.Tensor, got {type(t).__name__}")
    for i, (x, w) in enumerate(zip(xs, weights, strict=True)):
        if x.dim() < 1:
            raise ValueError(f"{op}: {in_name}[{i}] must be [..., K]; got {shapes()}")
        if w.dim() != 2 or w.shape[0] != x.shape[-1]:
            raise ValueError(
                f"{op}: weights[{i}] must be [K, N] with K = {in_name}[{i}].shape[-1] = {x.shape[-1]}; got {shapes()}"
            )
        if x.shape[:-1] != xs[0].shape[:-1]:
            raise ValueError(f"{op}: {in_name} must share their leading dims; got {shapes()}")
    tensors = [*xs, *weights]
    dtypes = {t.dtype for t in tensors}
    if len(dtypes) != 1 or not xs[0].is_floating_point():
        got = ", ".join(str(d).removeprefix("torch.") for d in sorted(dtypes, key=str))
        raise ValueError(
            f"{op}: {in_name} and weights must share one floating dtype (bf16, fp16 or fp32 for the kernel); got {got}"
        )
    devices = {t.device for t in tensors}
    if len(devices) != 1:
        raise ValueError(f"{op}: all tensors must be on one device; got {sorted(str(d) for d in devices)}")
    for i, act in enumerate(acts or ()):
        if act not in ACTIVATIONS:
            raise ValueError(f"{op}: acts[{i}] = {act!r} is unknown; use one of {', '.join(ACTS)}")
    lead = xs[0].shape[:-1]
    return math.prod(lead), lead


def _tiles(rows: int, ks: Sequence[int], ns: Sequence[int], dtype: torch.dtype) -> tuple[int, int, int, list[int]]:
    """``(BLOCK_M, BLOCK_N, BLOCK_K, output blocks per segment)`` for the launch."""
    block_m = 1 if rows < TUNING["dot_rows"] else max(16, min(TUNING["block_m"], next_pow2(rows)))
    block_k = max(16, min(TUNING["block_k"], next_pow2(max(ks))))
    if block_m > 1 and dtype == torch.float32:
        block_k = min(block_k, 32)  # an IEEE fp32 tl.dot runs on FMAs: smaller tiles, fewer registers
    block_n = max(16, min(TUNING["block_n"], next_pow2(max(ns))))
    row_blocks = -(-rows // block_m)
    while block_n > 16 and row_blocks * sum(-(-n // block_n) for n in ns) < TUNING["min_programs"]:
        block_n //= 2
    while block_m > 1 and block_k > 16 and tile_smem_bytes(block_m, block_n, block_k, dtype) > SMEM_BUDGET:
        block_k //= 2
    return block_m, block_n, block_k, [-(-n // block_n) for n in ns]


def _launch(
    xs: Sequence[torch.Tensor], weights: Sequence[torch.Tensor], acts: Sequence[str], rows: int, lead: torch.Size
) -> list[torch.Tensor]:
    x2 = [as_rows(x, rows) for x in xs]
    ws = [w.contiguous() for w in weights]
    ks, ns = [w.shape[0] for w in ws], [w.shape[1] for w in ws]
    outs = [torch.empty((rows, n), dtype=xs[0].dtype, device=xs[0].device) for n in ns]
    if rows > 0 and sum(ns) > 0:
        block_m, block_n, block_k, blocks = _tiles(rows, ks, ns, xs[0].dtype)
        ends = [sum(blocks[: i + 1]) for i in range(len(blocks))]
        pad = MAX_SEGMENTS - len(xs)
        bounds = (ends + [ends[-1]] * pad)[:3]
        grid = (-(-rows // block_m), ends[-1])
        interpret = xs[0].device.type != "cuda"
        dot_f32 = dot_in_fp32(xs[0].dtype, xs[0].device.type)
        _kernels(interpret).lora_kernel[grid](
            *x2, *[x2[0]] * pad, *ws, *[ws[0]] * pad, *outs, *[outs[0]] * pad, rows,
            *ks, *[0] * pad, *ns, *[0] * pad, *[x.stride(0) for x in x2], *[0] * pad, *bounds,
            N_SEG=len(xs), **{f"ACT{i}": _ACT_CODES[a] for i, a in enumerate([*acts, *["none"] * pad])},
            BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k, DOT_F32=dot_f32,
            num_warps=TUNING["num_warps"],
        )  # fmt: skip
    return [out.view(*lead, n) for out, n in zip(outs, ns, strict=True)]


def _run(
    op: str,
    in_name: str,
    xs: Sequence[torch.Tensor],
    weights: Sequence[torch.Tensor],
    acts: Sequence[str] | None,
    backend: str,
) -> list[torch.Tensor] | None:
    """The kernel's outputs, or None where the reference is to run."""
    rows, lead = _check(op, in_name, xs, weights, acts)
    if not _use_triton(op, backend, xs[0].device, [*xs, *weights], rows):
        return None
    if xs[0].dtype not in KERNEL_DTYPES:
        if backend == "triton":
            raise ValueError(f"{op}: the kernel takes bf16, fp16 or fp32; got {xs[0].dtype}")
        return None
    return _launch(xs, weights, acts or ["none"] * len(xs), rows, lead)


def lora_down(
    xs: Sequence[torch.Tensor], weights: Sequence[torch.Tensor], acts: Sequence[str], *, backend: str = "auto"
) -> list[torch.Tensor]:
    """``[act(x @ W) for x, W, act in zip(xs, weights, acts)]`` in one launch: 1 to 4 segments,
    ``x`` [..., K_i] (one set of leading dims for all), ``W`` [K_i, D_i] (checkpoint layout),
    ``act`` in "none", "tanh", "sigmoid". Returns ``[..., D_i]`` tensors in the inputs' dtype."""
    out = _run("lora_down", "xs", xs, weights, acts, backend)
    return lora_down_ref(xs, weights, acts) if out is None else out


def lora_up(
    hs: Sequence[torch.Tensor], weights: Sequence[torch.Tensor], *, backend: str = "auto"
) -> list[torch.Tensor]:
    """``[h @ W for h, W in zip(hs, weights)]`` in one launch: 1 to 4 segments, ``h`` [..., D_i]
    (one set of leading dims for all), ``W`` [D_i, C_i]. Returns ``[..., C_i]`` tensors."""
    out = _run("lora_up", "hs", hs, weights, None, backend)
    return lora_up_ref(hs, weights) if out is None else out
