"""The public WKV7 entry point: validation, backend choice and the Triton launches.

The Triton kernel modules are imported lazily, on first use, so that importing this package needs
neither Triton nor a GPU. Triton decides between compiling and interpreting when a kernel module is
imported, so CPU tensors get their own interpreted copy of the kernels (see
:func:`rwkv_registry.kernels._triton.load_kernel_module`) and CUDA tensors the compiled one,
whatever the order of first use.
"""

from __future__ import annotations

import functools
from types import ModuleType

import torch

from .._triton import interpret_requested, kernels_run_on, load_kernel_module, triton_installed
from .naive import wkv7_naive
from .validate import NAMES, Wkv7Shape, validate

# Tokens per chunk of the chunked kernel. Not 32: with keys repeated inside a chunk (a = -kk,
# b = kk) the entries of the in-chunk inverse (I - Aab)^-1 grow like 2^(C-1), which at C = 32 is
# past fp32's 24-bit mantissa (relative errors of 7e-2 measured in fp32); 16 also keeps the decay
# clamp at e^-8 (see chunk.py).
CHUNK_SIZE = 16


def dot_precisions(dtype: torch.dtype, device_type: str) -> tuple[str, str]:
    """``(PRECISION, PRECISION_INV)``: the chunk kernel's ``tl.dot`` input precisions. On CUDA the
    products that build and apply the in-chunk inverse run in "tf32x3" (three tf32 products, about
    fp32) whatever the dtype: with repeated keys its entries reach 2^15 and plain tf32's 10-bit
    mantissa left the state wrong by 40 % (an emulation of its rounding); the other products run in
    "tf32" for bf16/fp16 inputs (below their own rounding) and "tf32x3" for fp32. The interpreter
    computes in fp32 ("ieee")."""
    if device_type != "cuda":
        return "ieee", "ieee"
    return ("tf32x3" if dtype == torch.float32 else "tf32"), "tf32x3"


# Launch configuration, read at every launch (bench/gpu_engine.py sweeps it on the GPU):
# block_v = rows of the state one program owns (None: chosen from the GPU's SM count), num_warps.
# The chunk kernel takes 8 warps: compiled for sm_90 (Triton 3.6 and 3.9, bf16 inputs, head 64)
# it spills nothing at block_v 16 and 32 with 8 warps, and 24-168 bytes of stack with 4.
TUNING: dict[str, dict[str, int | None]] = {
    "chunk": {"block_v": None, "num_warps": 8},
    "step": {"block_v": None, "num_warps": 4},
}


@functools.cache
def _triton_modules(interpret: bool) -> tuple[ModuleType, ModuleType] | None:
    """The (chunk, fused_recurrent) kernel modules, compiled or interpreted; ``None`` without Triton."""
    if not triton_installed():
        return None
    return load_kernel_module(__package__, "chunk", interpret), load_kernel_module(
        __package__, "fused_recurrent", interpret
    )


def triton_available(device: torch.device) -> bool:
    """Whether the Triton kernels can run on tensors of ``device``: on CUDA with Triton installed, and
    on the CPU through Triton's interpreter (slow; ``backend="auto"`` uses it only when
    ``TRITON_INTERPRET=1`` is set)."""
    return kernels_run_on(device)


def pick_backend(device: torch.device, seq_len: int, head_size: int = 64) -> str:
    """The backend ``backend="auto"`` resolves to: "step" for T == 1 and "chunk" for T > 1 where the
    Triton kernels run (CUDA, or the CPU under ``TRITON_INTERPRET=1``) and take the head size
    (a power of two from 16 to 128), else "naive"."""
    n = head_size
    if n < 16 or n > 128 or n & (n - 1) or not triton_available(device):
        return "naive"
    if device.type == "cpu" and not interpret_requested():
        return "naive"
    return "step" if seq_len == 1 else "chunk"


@functools.cache
def _sm_count(index: int) -> int:
    return torch.cuda.get_device_properties(index).multi_processor_count


def _block_v(shape: Wkv7Shape, device: torch.device, kind: str) -> int:
    """Rows of the state one program owns: enough programs to fill the GPU, few under the interpreter."""
    n = shape.head_size
    if device.type != "cuda":
        return n
    fixed = TUNING[kind]["block_v"]
    if fixed is not None:
        return min(n, max(16, fixed))
    pairs = shape.num_seqs * shape.heads
    sms = _sm_count(device.index if device.index is not None else torch.cuda.current_device())
    bv = min(n, 32 if kind == "chunk" else 64)
    while bv > 16 and pairs * (n // bv) < 2 * sms:
        bv //= 2
    return bv


def _prepare(
    tensors: dict[str, torch.Tensor],
    state: torch.Tensor | None,
    shape: Wkv7Shape,
    out: torch.Tensor | None,
    state_out: torch.Tensor | None,
) -> tuple[list[torch.Tensor], torch.Tensor | None, torch.Tensor, torch.Tensor]:
    r = tensors["r"]
    ins = [tensors[name].contiguous() for name in NAMES]
    s0 = None if state is None else state.to(torch.float32).contiguous()
    y = out if out is not None else torch.empty_like(r, memory_format=torch.contiguous_format)
    n = shape.head_size
    st = (
        state_out
        if state_out is not None
        else torch.empty(shape.num_seqs, shape.heads, n, n, dtype=torch.float32, device=r.device)
    )
    return ins, s0, y, st


def _launch(
    kind: str,
    tensors: dict[str, torch.Tensor],
    state: torch.Tensor | None,
    cu_seqlens: torch.Tensor | None,
    shape: Wkv7Shape,
    out: torch.Tensor | None,
    state_out: torch.Tensor | None,
) -> tuple[torch.Tensor, torch.Tensor]:
    device = tensors["r"].device
    mods = _triton_modules(device.type != "cuda") if triton_available(device) else None
    if mods is None:
        raise RuntimeError(
            f"wkv7: backend {kind!r} needs Triton (pip install triton) and CUDA or CPU tensors; "
            f"these tensors are on {device}. Use backend='naive' or 'auto'."
        )
    if any(t.requires_grad for t in tensors.values()) and torch.is_grad_enabled():
        raise ValueError("wkv7: the Triton kernels are forward-only; use torch.no_grad() or backend='naive'")
    ins, s0, y, st = _prepare(tensors, state, shape, out, state_out)
    if shape.seq_len == 0:  # nothing to run: the state passes through
        if s0 is None:
            st.zero_()
        elif st is not s0:
            st.copy_(s0)
        return y, st
    n = shape.head_size
    bv = _block_v(shape, device, kind)
    num_warps = TUNING[kind]["num_warps"] or 4
    grid = (n // bv, shape.num_seqs * shape.heads)
    common = dict(
        seq_len=shape.seq_len,
        H=shape.heads,
        K=n,
        V=n,
        BV=bv,
        USE_INITIAL_STATE=s0 is not None,
        IS_VARLEN=cu_seqlens is not None,
    )
    s0_arg = s0 if s0 is not None else st  # never read when USE_INITIAL_STATE is False
    cu_arg = cu_seqlens.contiguous() if cu_seqlens is not None else y  # the kernels index it as a flat array
    if kind == "chunk":
        chunk, _ = mods
        precision, precision_inv = dot_precisions(ins[0].dtype, device.type)
        chunk.wkv7_chunk_fwd_kernel[grid](
            *ins, y, s0_arg, st, cu_arg,
            BT=CHUNK_SIZE,
            LOG2_BT=CHUNK_SIZE.bit_length() - 1,
            LOG_DECAY_MIN=chunk.log_decay_min(CHUNK_SIZE),
            PRECISION=precision,
            PRECISION_INV=precision_inv,
            num_warps=num_warps,
            **common,
        )  # fmt: skip
    else:
        _, fused = mods
        fused.wkv7_fused_recurrent_fwd_kernel[grid](*ins, y, s0_arg, st, cu_arg, num_warps=num_warps, **common)
    return y, st


def wkv7(
    r: torch.Tensor,
    w: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    a: torch.Tensor,
    b: torch.Tensor,
    state: torch.Tensor | None = None,
    *,
    cu_seqlens: torch.Tensor | None = None,
    backend: str = "auto",
    out: torch.Tensor | None = None,
    state_out: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """WKV7 forward: ``y, final_state = wkv7(r, w, k, v, a, b, state)``.

    Per head, with S [V, K] fp32: ``S_t = S_{t-1} diag(exp(-exp(w_t))) + (S_{t-1} a_t) b_t^T + v_t k_t^T``
    and ``y_t = S_t r_t`` (RWKV-7 passes ``a = -kk``, ``b = kk * a_gate`` and ``w <= -0.5``).

    Args:
        r, w, k, v, a, b: ``[B, T, H, N]`` on one device, one dtype (bf16, fp16 or fp32; fp64 for
            "naive"), except that ``w`` may be fp32 with bf16/fp16 others (a more exact decay).
        state: initial state ``[B, H, N, N]`` (V rows, K columns), any float dtype (computed in fp32),
            or ``None`` for zeros. With ``cu_seqlens`` it is ``[num_seqs, H, N, N]``.
        cu_seqlens: optional int32/int64 ``[num_seqs + 1]`` offsets of sequences packed along T
            (then B must be 1), fla's convention. Each sequence starts from its own state.
        backend: "auto" (Triton "chunk" when T > 1 and "step" when T == 1 on CUDA or under
            ``TRITON_INTERPRET=1``, "naive" on a plain CPU), "naive", "chunk" or "step"
            (the fused-recurrent kernel; it takes any T, one token at a time).
        out: optional preallocated ``y`` (contiguous, shape and dtype of ``r``).
        state_out: optional preallocated final state (contiguous fp32 ``[num_seqs, H, N, N]``); it may be
            ``state`` itself for an in-place update (useful for CUDA graphs).

    Returns:
        ``y`` ``[B, T, H, N]`` in the dtype of ``r`` and the final state ``[num_seqs, H, N, N]`` fp32.

    Raises:
        ValueError: a shape, dtype, device or argument is wrong (the message prints the shapes).
        RuntimeError: "chunk" or "step" was asked for where Triton cannot run.

    The Triton backends are forward-only (inference); "naive" is differentiable.
    """
    tensors = {"r": r, "w": w, "k": k, "v": v, "a": a, "b": b}
    shape = validate(tensors, state, cu_seqlens, backend, out, state_out)
    if backend == "auto":
        backend = pick_backend(r.device, shape.seq_len, shape.head_size)
    if backend == "naive":
        y, st = wkv7_naive(r, w, k, v, a, b, state, cu_seqlens=cu_seqlens)
        st = st.to(torch.float32)
        if out is not None:
            y = out.copy_(y)
        if state_out is not None:
            st = state_out.copy_(st)
        return y, st
    return _launch(backend, tensors, state, cu_seqlens, shape, out, state_out)
