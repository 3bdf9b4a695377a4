"""Argument checks for :func:`rwkv_registry.kernels.wkv7.wkv7`: every problem is a ``ValueError``
that names the offending argument and prints the shapes involved."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import torch

BACKENDS = ("auto", "naive", "chunk", "step")
KERNEL_DTYPES = (torch.bfloat16, torch.float16, torch.float32)
NAMES = ("r", "w", "k", "v", "a", "b")


@dataclass(frozen=True)
class Wkv7Shape:
    """The problem size read from validated inputs."""

    batch: int  # B of the [B, T, H, N] inputs
    seq_len: int  # T
    heads: int  # H
    head_size: int  # N
    num_seqs: int  # B, or len(cu_seqlens) - 1 for packed sequences


def _shapes(tensors: dict[str, torch.Tensor]) -> str:
    return ", ".join(f"{name}={list(t.shape)}" for name, t in tensors.items())


def _check_inputs(tensors: dict[str, torch.Tensor], backend: str) -> None:
    for name, t in tensors.items():
        if not isinstance(t, torch.Tensor):
            raise ValueError(f"wkv7: {name} must be a torch.Tensor, got {type(t).__name__}")
    r = tensors["r"]
    if r.dim() != 4:
        raise ValueError(f"wkv7: r, w, k, v, a, b must be [B, T, H, N]; got r={list(r.shape)}")
    if any(t.shape != r.shape for t in tensors.values()):
        raise ValueError(f"wkv7: r, w, k, v, a, b must share one shape [B, T, H, N]; got {_shapes(tensors)}")
    dtypes = {name: t.dtype for name, t in tensors.items()}
    others = {dt for name, dt in dtypes.items() if name != "w"}
    if len(others) != 1 or dtypes["w"] not in (r.dtype, torch.float32):
        raise ValueError(f"wkv7: r, k, v, a, b must share one dtype, and w that dtype or float32; got {dtypes}")
    allowed = (*KERNEL_DTYPES, torch.float64) if backend == "naive" else KERNEL_DTYPES
    if r.dtype not in allowed:
        raise ValueError(f"wkv7: dtype {r.dtype} is not supported by backend {backend!r}; use {allowed}")
    devices = {name: t.device for name, t in tensors.items()}
    if len(set(devices.values())) != 1:
        raise ValueError(f"wkv7: r, w, k, v, a, b must be on one device; got {devices}")


def _check_head_size(n: int, backend: str) -> None:
    if backend in ("chunk", "step") and (n < 16 or n > 128 or n & (n - 1)):
        raise ValueError(
            f"wkv7: head size N={n} is not supported by the Triton kernels (backend {backend!r}); "
            "N must be a power of two from 16 to 128 (RWKV-7 uses 64), or use backend='naive'"
        )


def _check_cu_seqlens(cu_seqlens: torch.Tensor, r: torch.Tensor) -> int:
    if not isinstance(cu_seqlens, torch.Tensor):
        raise ValueError(f"wkv7: cu_seqlens must be a torch.Tensor, got {type(cu_seqlens).__name__}")
    if cu_seqlens.dim() != 1 or cu_seqlens.numel() < 2:
        got = list(cu_seqlens.shape)
        raise ValueError(f"wkv7: cu_seqlens must be 1-D [num_seqs + 1] with at least 2 entries; got {got}")
    if cu_seqlens.dtype not in (torch.int32, torch.int64):
        raise ValueError(f"wkv7: cu_seqlens must be int32 or int64, got {cu_seqlens.dtype}")
    if cu_seqlens.device != r.device:
        raise ValueError(f"wkv7: cu_seqlens is on {cu_seqlens.device} but the inputs are on {r.device}")
    if r.shape[0] != 1:
        raise ValueError(
            f"wkv7: with cu_seqlens the sequences are packed along T, so B must be 1; got r={list(r.shape)}"
        )
    capturing = r.is_cuda and torch.cuda.is_current_stream_capturing()
    if not capturing:  # reading the values syncs the device; skip it inside CUDA-graph capture
        offsets = cu_seqlens.tolist()
        steps_ok = all(x <= y for x, y in itertools.pairwise(offsets))
        if offsets[0] != 0 or offsets[-1] != r.shape[1] or not steps_ok:
            raise ValueError(f"wkv7: cu_seqlens must rise from 0 to T={r.shape[1]} and never fall; got {offsets}")
    return cu_seqlens.numel() - 1


def _check_state(name: str, state: torch.Tensor, want: list[int], r: torch.Tensor, *, fp32: bool) -> None:
    if not isinstance(state, torch.Tensor):
        raise ValueError(f"wkv7: {name} must be a torch.Tensor or None, got {type(state).__name__}")
    if list(state.shape) != want:
        got = list(state.shape)
        raise ValueError(f"wkv7: {name} must be [num_seqs, H, N, N] = {want} for r={list(r.shape)}; got {got}")
    if state.device != r.device:
        raise ValueError(f"wkv7: {name} is on {state.device} but the inputs are on {r.device}")
    if fp32 and (state.dtype != torch.float32 or not state.is_contiguous()):
        raise ValueError(f"wkv7: {name} must be a contiguous float32 tensor; got {state.dtype}")
    if not state.is_floating_point():
        raise ValueError(f"wkv7: {name} must be floating point; got {state.dtype}")


def _same_memory(x: torch.Tensor, y: torch.Tensor) -> bool:
    """Whether two tensors share their storage (real memory: not meta, not empty)."""
    if x.device != y.device or x.device.type == "meta" or x.numel() == 0 or y.numel() == 0:
        return False
    return x.untyped_storage().data_ptr() == y.untyped_storage().data_ptr()


def _check_no_overlap(
    tensors: dict[str, torch.Tensor],
    state: torch.Tensor | None,
    out: torch.Tensor | None,
    state_out: torch.Tensor | None,
) -> None:
    """``out`` and ``state_out`` must not share memory with an input (``state_out`` may be ``state``
    itself): the kernels' programs write their slices while others still read whole rows, so an
    output over an input is a race on the GPU, not an in-place update."""
    inputs = dict(tensors)
    for name, dst in (("out", out), ("state_out", state_out)):
        if dst is None:
            continue
        others = {**inputs, **({"state": state} if state is not None and name == "out" else {})}
        if name == "out" and state_out is not None:
            others["state_out"] = state_out
        for other, t in others.items():
            if _same_memory(dst, t):
                raise ValueError(
                    f"wkv7: {name} shares memory with {other}; give {name} a tensor of its own"
                    + (" (only state_out=state is allowed, for an in-place update)" if name == "state_out" else "")
                )


def validate(
    tensors: dict[str, torch.Tensor],
    state: torch.Tensor | None,
    cu_seqlens: torch.Tensor | None,
    backend: str,
    out: torch.Tensor | None,
    state_out: torch.Tensor | None,
) -> Wkv7Shape:
    """Check every argument of ``wkv7``; return the problem size or raise ``ValueError``."""
    if backend not in BACKENDS:
        raise ValueError(f"wkv7: backend must be one of {BACKENDS}; got {backend!r}")
    _check_inputs(tensors, backend)
    r = tensors["r"]
    batch, seq_len, heads, n = r.shape
    _check_head_size(n, backend)
    num_seqs = batch if cu_seqlens is None else _check_cu_seqlens(cu_seqlens, r)
    want = [num_seqs, heads, n, n]
    if state is not None:
        _check_state("state", state, want, r, fp32=False)
    if state_out is not None:
        _check_state("state_out", state_out, want, r, fp32=True)
    if out is not None:
        if not isinstance(out, torch.Tensor) or out.shape != r.shape or out.dtype != r.dtype:
            got = f"{list(out.shape)} {out.dtype}" if isinstance(out, torch.Tensor) else type(out).__name__
            raise ValueError(f"wkv7: out must match r={list(r.shape)} {r.dtype}; got {got}")
        if out.device != r.device or not out.is_contiguous():
            raise ValueError(f"wkv7: out must be contiguous and on {r.device}")
    _check_no_overlap(tensors, state, out, state_out)
    return Wkv7Shape(batch=batch, seq_len=seq_len, heads=heads, head_size=n, num_seqs=num_seqs)
