"""Loading Triton kernel files, compiled for CUDA tensors and interpreted for CPU tensors.

Triton decides between compiling and interpreting when a ``@triton.jit`` function is defined, so
:func:`load_kernel_module` imports a kernel file normally for CUDA and loads a second copy of it,
with ``TRITON_INTERPRET=1`` set only while it executes, for CPU tensors. Both can live in one
process (the CPU tests need no environment variable). Kernel files loaded this way call only
Triton builtins and their own jit functions (see docs/kernels.md).
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import torch

__all__ = [
    "BACKENDS",
    "KERNEL_DTYPES",
    "as_rows",
    "interpret_requested",
    "kernels_run_on",
    "load_kernel_module",
    "next_pow2",
    "norm_param_dtype_ok",
    "triton_installed",
    "use_triton",
]

# the backends of the fused ops (timemix, add_norm, miss, lora); wkv7 has its own (it has two kernels)
BACKENDS = ("auto", "reference", "triton")
# the dtypes their kernels take (others go to the reference)
KERNEL_DTYPES = (torch.bfloat16, torch.float16, torch.float32)


def interpret_requested() -> bool:
    """Whether ``TRITON_INTERPRET`` asks for Triton's interpreter."""
    return os.environ.get("TRITON_INTERPRET", "0").lower() in ("1", "true", "on", "yes")


def triton_installed() -> bool:
    """Whether Triton can be imported (nothing is imported)."""
    return importlib.util.find_spec("triton") is not None


def kernels_run_on(device: torch.device) -> bool:
    """Whether Triton kernels can run on tensors of ``device``: CUDA, or the CPU (interpreted)."""
    return device.type in ("cuda", "cpu") and triton_installed()


def norm_param_dtype_ok(x: torch.dtype, param: torch.dtype) -> bool:
    """Whether a norm's weight or bias of dtype ``param`` suits input of dtype ``x``: the same
    dtype, or fp32 for bf16/fp16 input (what PyTorch's layer_norm and group_norm take, so the
    reference and the kernel accept the same arguments)."""
    return param == x or (param == torch.float32 and x in (torch.bfloat16, torch.float16))


def next_pow2(n: int) -> int:
    """The smallest power of two >= ``n`` (1 for ``n`` <= 1): a Triton block size."""
    return 1 << (max(n, 1) - 1).bit_length()


def as_rows(x: torch.Tensor, rows: int) -> torch.Tensor:
    """``x`` [..., K] as [rows, K] with a unit column stride (a view where possible), for a kernel
    that walks rows by their stride."""
    x2 = x.reshape(rows, x.shape[-1])
    return x2 if x2.stride(-1) == 1 else x2.contiguous()


def use_triton(op: str, backend: str, device: torch.device, tensors: Sequence[torch.Tensor | None]) -> bool:
    """Whether a fused op runs its Triton kernel: "triton" forces it (``ValueError`` when Triton
    cannot run there, or when an input needs gradients: the kernels are forward-only);
    "reference" never; "auto" on CUDA, or on the CPU under ``TRITON_INTERPRET=1``, unless an
    input needs gradients (then the differentiable reference runs)."""
    if backend not in BACKENDS:
        raise ValueError(f"{op}: unknown backend {backend!r}; use one of {', '.join(BACKENDS)}")
    if backend == "reference":
        return False
    if torch.is_grad_enabled() and any(t is not None and t.requires_grad for t in tensors):
        if backend == "triton":
            raise ValueError(f"{op}: the Triton kernels are forward-only; use torch.no_grad() or backend='reference'")
        return False
    if backend == "triton":
        if not kernels_run_on(device):
            raise ValueError(f"{op}: backend 'triton' needs Triton and CUDA or CPU tensors; these are on {device}")
        return True
    return kernels_run_on(device) and (device.type == "cuda" or interpret_requested())


def load_kernel_module(package: str, name: str, interpret: bool) -> ModuleType:
    """Import ``package.name``; ``interpret=True`` loads a second copy of the file (registered as
    ``package._interpreted_name``) with ``TRITON_INTERPRET=1`` set while its ``@triton.jit``
    decorators run, so that CPU tensors go to Triton's interpreter while CUDA tensors in the same
    process use the compiled kernels."""
    if not interpret:
        return importlib.import_module(f"{package}.{name}")
    _fix_old_interpreter_index()
    _round_bf16_like_a_gpu()
    qualified = f"{package}._interpreted_{name}"
    if qualified in sys.modules:
        return sys.modules[qualified]
    origin = importlib.util.find_spec(f"{package}.{name}")
    if origin is None or origin.origin is None:  # pragma: no cover - the file ships with the package
        raise ImportError(f"cannot find {package}.{name} for Triton's interpreter")
    spec = importlib.util.spec_from_file_location(qualified, Path(origin.origin))
    if spec is None or spec.loader is None:  # pragma: no cover
        raise ImportError(f"cannot load {origin.origin} for Triton's interpreter")
    module = importlib.util.module_from_spec(spec)
    # Triton itself must be imported before the variable is set: its own jit helpers stay in
    # whatever mode the process chose, and Triton 3.6 checks that when it first interprets a call.
    import triton.language  # noqa: F401

    saved = os.environ.get("TRITON_INTERPRET")
    os.environ["TRITON_INTERPRET"] = "1"
    try:
        sys.modules[qualified] = module
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(qualified, None)
        raise
    finally:
        if saved is None:
            del os.environ["TRITON_INTERPRET"]
        else:
            os.environ["TRITON_INTERPRET"] = saved
    return module


def _fix_old_interpreter_index() -> None:
    """Triton <= 3.6's interpreter turns a 1-element block into a Python int with ``int(data)``,
    which numpy >= 2.4 refuses for a 1-D array, so a ``range`` over a runtime bound fails. Wrap its
    tensor patching to use ``int(data.reshape(-1)[0])``, what later Triton releases do (only for
    the interpreter; nothing changes when the helper is missing or already wrapped)."""
    from triton.runtime import interpreter

    original = getattr(interpreter, "_patch_lang_tensor", None)
    if original is None or getattr(original, "_wkv7_index_fix", False):
        return
    if list(inspect.signature(original).parameters) != ["tensor", "scope"]:  # another release: leave it
        return

    def patched(tensor: Any, scope: Any) -> None:
        original(tensor, scope)
        scope.set_attr(tensor, "__index__", lambda self: int(self.handle.data.reshape(-1)[0]))

    patched._wkv7_index_fix = True  # type: ignore[attr-defined]
    interpreter._patch_lang_tensor = patched


def _bf16_bits_nearest_even(data: Any) -> Any:
    """fp32 numpy array -> bf16 bit patterns (uint16), rounded to nearest even as a GPU does;
    NaN stays NaN (quiet, sign kept), overflow gives inf."""
    import numpy as np

    u = np.ascontiguousarray(data, dtype=np.float32).view(np.uint32)
    rounded = ((u + np.uint32(0x7FFF) + ((u >> np.uint32(16)) & np.uint32(1))) >> np.uint32(16)).astype(np.uint16)
    nan = np.isnan(data)
    if nan.any():
        rounded[nan] = ((u[nan] >> np.uint32(16)) | np.uint32(0x40)).astype(np.uint16)
    return rounded


def _round_bf16_like_a_gpu() -> None:
    """Triton's interpreter casts fp32 to bf16 by dropping the low 16 bits (rounding toward zero),
    where a GPU rounds to nearest even; toward-zero rounding alone doubles a bf16 kernel's error
    and, in a residual stream, adds up along the layers. Wrap the interpreter's cast so that CPU
    tests see the GPU's numerics (only the fp32 -> bf16 case changes; only for the interpreter)."""
    from triton.runtime import interpreter

    builder = getattr(interpreter, "InterpreterBuilder", None)
    handle = getattr(interpreter, "TensorHandle", None)
    original = getattr(builder, "cast_impl", None)
    if builder is None or handle is None or original is None or getattr(original, "_bf16_rtne", False):
        return
    import triton.language as tl

    def cast_impl(self: Any, src: Any, dst_type: Any) -> Any:
        if src.dtype.scalar == tl.float32 and dst_type.scalar == tl.bfloat16:
            return handle(_bf16_bits_nearest_even(src.data), dst_type.scalar)
        return original(self, src, dst_type)

    cast_impl._bf16_rtne = True  # type: ignore[attr-defined]
    builder.cast_impl = cast_impl
