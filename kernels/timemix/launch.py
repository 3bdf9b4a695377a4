"""The fused time-mix ops: argument checks, backend choice and the Triton launches.

``backend="auto"`` runs the Triton kernels (``fused.py``) on CUDA tensors and under
``TRITON_INTERPRET=1`` on the CPU, and the PyTorch reference (``reference.py``) elsewhere;
"reference" and "triton" force one. The Triton kernels are forward-only: inputs that require grad
while grad is enabled are refused (``ValueError``). Every bad argument is a ``ValueError`` that
names it and prints the shapes.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from types import ModuleType

import torch

from .._triton import KERNEL_DTYPES, load_kernel_module, next_pow2, norm_param_dtype_ok, use_triton
from .reference import tm_gates_ref, tm_output_ref, token_mix_ref

MAX_MIX = 6

# Launch configuration, read at every launch: channels per token_mix program, heads per program of
# the two per-head kernels (capped by H and rounded down to a power of two dividing it), warps.
TUNING: dict[str, int] = {"block_c": 1024, "heads_per_program": 4, "num_warps": 4}


@functools.cache
def _kernels(interpret: bool) -> ModuleType:
    return load_kernel_module(__package__, "fused", interpret)


def _check_rows(op: str, names: Sequence[str], tensors: Sequence[torch.Tensor | None]) -> torch.Tensor:
    """All given tensors: [B, T, C], one shape, dtype and device; returns the first."""
    given = [(n, t) for n, t in zip(names, tensors, strict=True) if t is not None]
    for name, t in given:
        if not isinstance(t, torch.Tensor):
            raise ValueError(f"{op}: {name} must be a torch.Tensor, got {type(t).__name__}")
    first = given[0][1]
    shapes = ", ".join(f"{n}={list(t.shape)}" for n, t in given)
    if first.dim() != 3 or first.numel() == 0:
        raise ValueError(f"{op}: {given[0][0]} must be a non-empty [B, T, C]; got {shapes}")
    if any(t.shape != first.shape for _, t in given):
        raise ValueError(f"{op}: {', '.join(n for n, _ in given)} must share one shape [B, T, C]; got {shapes}")
    if any(t.device != first.device for _, t in given):
        raise ValueError(f"{op}: all tensors must be on one device; got {[str(t.device) for _, t in given]}")
    return first


def _check_params(op: str, C: int, device: torch.device, params: dict[str, torch.Tensor | None]) -> None:
    for name, p in params.items():
        if p is None:
            continue
        if not isinstance(p, torch.Tensor) or p.numel() != C or p.device != device:
            got = f"{list(p.shape)} on {p.device}" if isinstance(p, torch.Tensor) else type(p).__name__
            raise ValueError(f"{op}: {name} must hold C={C} values on {device}; got {got}")


def _flat(p: torch.Tensor) -> torch.Tensor:
    return p.reshape(-1).contiguous()


def _heads_per_program(H: int) -> int:
    hb = 1
    while hb * 2 <= min(H, TUNING["heads_per_program"]) and H % (hb * 2) == 0:
        hb *= 2
    return hb


def _check_heads(op: str, C: int, heads: int) -> int:
    if heads < 1 or C % heads:
        raise ValueError(f"{op}: C={C} is not a multiple of heads={heads}")
    n = C // heads
    if n & (n - 1):
        raise ValueError(f"{op}: head size N={n} must be a power of two (RWKV-7 uses 64)")
    return n


def token_mix(
    x: torch.Tensor,
    shift: torch.Tensor,
    mus: Sequence[torch.Tensor],
    *,
    shift_out: torch.Tensor | None = None,
    backend: str = "auto",
) -> tuple[list[torch.Tensor], torch.Tensor]:
    """Token shift and mixes: ``([x + (prev - x) * mu for mu in mus], x[:, -1])``.

    ``x`` [B, T, C]; ``shift`` [B, C], the previous call's last input (``prev`` at t = 0);
    ``mus``: 1 to 6 tensors of C values (any shape, e.g. the checkpoint's [1, 1, C]).
    ``shift_out``: a contiguous [B, C] tensor (``shift`` itself allowed) that receives the new
    shift; else a fresh one is returned. Outputs have ``x``'s dtype.
    """
    op = "token_mix"
    _check_rows(op, ("x",), (x,))
    B, T, C = x.shape
    if not 1 <= len(mus) <= MAX_MIX:
        raise ValueError(f"{op}: 1 to {MAX_MIX} mixes, got {len(mus)}")
    for name, s in (("shift", shift), ("shift_out", shift_out)):
        if s is not None and (tuple(s.shape) != (B, C) or s.dtype != x.dtype or s.device != x.device):
            raise ValueError(
                f"{op}: {name} must be {x.dtype} [B, C] = {[B, C]} on {x.device}; got {s.dtype} {list(s.shape)}"
            )
    if shift_out is not None and not shift_out.is_contiguous():
        raise ValueError(f"{op}: shift_out must be contiguous")
    _check_params(op, C, x.device, {f"mus[{i}]": mu for i, mu in enumerate(mus)})
    if not use_triton(op, backend, x.device, (x, shift, *mus)) or x.dtype not in KERNEL_DTYPES:
        return token_mix_ref(x, shift, mus, shift_out)
    x = x.contiguous()
    shift = shift.contiguous()
    new_shift = shift_out if shift_out is not None else torch.empty_like(shift)
    outs = [torch.empty_like(x) for _ in mus]
    flat = [_flat(mu) for mu in mus]
    pad = MAX_MIX - len(mus)
    block = min(TUNING["block_c"], next_pow2(C))
    grid = (B * T, (C + block - 1) // block)
    _kernels(x.device.type != "cuda").token_mix_kernel[grid](
        x, shift, new_shift, *flat, *[flat[0]] * pad, *outs, *[outs[0]] * pad, T, C,
        N_MIX=len(mus), BLOCK_C=block, num_warps=TUNING["num_warps"],
    )  # fmt: skip
    return outs, new_shift


def tm_gates(
    k: torch.Tensor,
    v: torch.Tensor,
    wz: torch.Tensor,
    az: torch.Tensor,
    w0: torch.Tensor,
    a0: torch.Tensor,
    k_k: torch.Tensor,
    k_a: torch.Tensor,
    heads: int,
    v_first: torch.Tensor | None = None,
    vz: torch.Tensor | None = None,
    v0: torch.Tensor | None = None,
    *,
    backend: str = "auto",
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """The WKV7 inputs ``(w fp32, k, v, a=-kk, b=kk*a_gate)`` [B, T, C] from the matmul outputs
    ``k, v, wz, az`` (and ``vz``, ``v_first``, ``v0`` for the value residual of layers after the
    first; all three or none). Parameters ``w0, a0, k_k, k_a, v0``: C values each."""
    op = "tm_gates"
    if (vz is None) != (v_first is None) or (vz is None) != (v0 is None):
        raise ValueError(f"{op}: give vz, v_first and v0 together (layers after the first) or none of them")
    first = _check_rows(op, ("k", "v", "wz", "az", "vz", "v_first"), (k, v, wz, az, vz, v_first))
    B, T, C = first.shape
    n = _check_heads(op, C, heads)
    _check_params(op, C, k.device, {"w0": w0, "a0": a0, "k_k": k_k, "k_a": k_a, "v0": v0})
    tensors = (k, v, wz, az, vz, v_first, w0, a0, k_k, k_a, v0)
    dtypes = {t.dtype for t in (k, v, v_first) if t is not None}
    if not use_triton(op, backend, k.device, tensors) or len(dtypes) != 1 or k.dtype not in KERNEL_DTYPES:
        return tm_gates_ref(k, v, wz, az, w0, a0, k_k, k_a, heads, v_first, vz, v0)
    ins = [t.contiguous() for t in (k, v, wz, az)]
    has_v = vz is not None
    extra = [vz.contiguous(), v_first.contiguous()] if has_v else [ins[0], ins[0]]  # type: ignore[union-attr]
    params = [_flat(p) for p in (w0, a0)] + [_flat(v0) if has_v else _flat(w0)] + [_flat(k_k), _flat(k_a)]  # type: ignore[arg-type]
    w = torch.empty(B, T, C, dtype=torch.float32, device=k.device)
    k_out, v_out, a_out, b_out = (torch.empty_like(ins[0]) for _ in range(4))
    hb = _heads_per_program(heads)
    _kernels(k.device.type != "cuda").tm_gates_kernel[(B * T, heads // hb)](
        *ins, *extra, *params, w, k_out, v_out, a_out, b_out, C,
        N=n, HB=hb, HAS_V=has_v, num_warps=TUNING["num_warps"],
    )  # fmt: skip
    return w, k_out, v_out, a_out, b_out


def tm_output(
    y: torch.Tensor,
    r: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    ln_weight: torch.Tensor,
    ln_bias: torch.Tensor,
    r_k: torch.Tensor,
    eps: float,
    *,
    backend: str = "auto",
) -> torch.Tensor:
    """``(GroupNorm_H(y) + sum_n(r * k * r_k) * v) * g`` [B, T, C] in ``r``'s dtype; ``y`` is the
    WKV7 output ([B, T, C] or [B, T, H, N]), ``r_k`` [H, N] gives the heads."""
    op = "tm_output"
    if y.dim() == 4:
        y = y.flatten(2)
    first = _check_rows(op, ("y", "r", "k", "v", "g"), (y, r, k, v, g))
    B, T, C = first.shape
    if r_k.dim() != 2 or r_k.numel() != C:
        raise ValueError(f"{op}: r_k must be [H, N] with H*N = C = {C}; got {list(r_k.shape)}")
    heads = r_k.shape[0]
    n = _check_heads(op, C, heads)
    _check_params(op, C, r.device, {"ln_weight": ln_weight, "ln_bias": ln_bias, "r_k": r_k})
    if y.dtype != r.dtype or not y.is_floating_point():
        raise ValueError(f"{op}: y (the WKV7 output) must have r's dtype {r.dtype}; got {y.dtype}")
    for name, p in (("ln_weight", ln_weight), ("ln_bias", ln_bias)):
        if not norm_param_dtype_ok(y.dtype, p.dtype):
            raise ValueError(f"{op}: {name} must be {y.dtype} (or float32 for bf16/fp16 y); got {p.dtype}")
    tensors = (y, r, k, v, g, ln_weight, ln_bias, r_k)
    if not use_triton(op, backend, r.device, tensors) or r.dtype not in KERNEL_DTYPES:
        return tm_output_ref(y, r, k, v, g, ln_weight, ln_bias, r_k, eps)
    ins = [t.contiguous() for t in (y, r, k, v, g)]
    out = torch.empty_like(ins[1])
    hb = _heads_per_program(heads)
    _kernels(r.device.type != "cuda").tm_output_kernel[(B * T, heads // hb)](
        *ins, _flat(ln_weight), _flat(ln_bias), _flat(r_k), out, C, float(eps),
        N=n, HB=hb, num_warps=TUNING["num_warps"],
    )  # fmt: skip
    return out
