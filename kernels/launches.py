"""Counting the kernels one call launches: PyTorch ops that run a kernel, plus Triton launches.

Usage::

    from rwkv_registry.kernels.launches import count_launches

    counts = count_launches(lambda: model.advance(tokens, state))
    counts.total(), counts["aten.mm.default"], counts.triton()

On a decode step, where every kernel is tiny, the launch count is what a CUDA graph replays and
what bounds the step time from below (a few microseconds each); the tests keep it from growing and
``bench/gpu_engine.py`` reports it. Views and allocations are not counted (no kernel runs); a
Triton launch counts once, as ``triton:<kernel name>``, whether compiled or interpreted (what the
interpreter does inside it is not counted). Eager code only: inside a CUDA graph replay or a
compiled function nothing is dispatched op by op.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode, _disable_current_modes

__all__ = ["LaunchCounts", "count_launches"]

# ops that allocate, reshape or alias but run no kernel (views are recognised by their schema)
_NO_KERNEL = frozenset(
    {
        "aten.empty.memory_format",
        "aten.empty_like.default",
        "aten.empty_strided.default",
        "aten.new_empty.default",
        "aten._unsafe_view.default",
        "aten.lift_fresh.default",
        "aten.set_.source_Storage",
        "aten.set_.source_Storage_storage_offset",
    }
)


class LaunchCounts(Counter[str]):
    """Launches per op name (``aten.*`` or ``triton:*``)."""

    def total(self) -> int:
        """All launches."""
        return sum(self.values())

    def triton(self) -> int:
        """Triton kernel launches."""
        return sum(n for name, n in self.items() if name.startswith("triton:"))


class _Counter(TorchDispatchMode):
    def __init__(self, counts: LaunchCounts) -> None:
        super().__init__()
        self.counts = counts

    def __torch_dispatch__(
        self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None
    ) -> Any:
        name = str(func)
        if not func.is_view and name not in _NO_KERNEL:
            self.counts[name] += 1
        return func(*args, **(kwargs or {}))


@contextlib.contextmanager
def _triton_hooks(counts: LaunchCounts) -> Iterator[None]:
    """Count each Triton launch once and hide what runs inside it from the dispatch counter."""
    try:
        from triton.runtime import interpreter, jit
    except ImportError:  # no Triton: nothing to hook
        yield
        return
    originals = [(cls, cls.run) for cls in (jit.JITFunction, interpreter.InterpretedFunction)]

    def hooked(original: Callable[..., Any]) -> Callable[..., Any]:
        def run(self: Any, *args: Any, **kwargs: Any) -> Any:
            if not kwargs.get("warmup", False):
                counts[f"triton:{getattr(self.fn, '__name__', getattr(self, '__name__', '?'))}"] += 1
            with _disable_current_modes():
                return original(self, *args, **kwargs)

        return run

    for cls, original in originals:
        cls.run = hooked(original)
    try:
        yield
    finally:
        for cls, original in originals:
            cls.run = original


def count_launches(fn: Callable[[], object]) -> LaunchCounts:
    """Run ``fn()`` once (eagerly, under ``torch.no_grad``) and count the kernels it launches."""
    counts = LaunchCounts()
    with torch.no_grad(), _triton_hooks(counts), _Counter(counts):
        fn()
    return counts
