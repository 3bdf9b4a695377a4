"""Replay a fixed-shape step (one decode token, say) as a CUDA graph: one launch instead of one per op.

Usage::

    from rwkv_registry.kernels.graph import GraphedStep

    step = GraphedStep(model.forward, tokens, state)   # warms up, then captures (CUDA only)
    logits, state = step(tokens, state)                 # copies the inputs in, replays the graph

Inputs and outputs may be tensors nested in tuples, lists, dicts and dataclasses (such as the
model's ``RWKV7State``); other leaves (ints, None, strings) are constants that must not change
between calls. Each call copies the input tensors into the graph's static buffers (skipped for an
input that already is that buffer) and returns the graph's static outputs, which the next call
overwrites: clone what must outlive it. Feeding the returned state back in costs one copy of it
per step. On a CPU (or any non-CUDA device) ``GraphedStep`` simply calls ``fn``, with the same
argument checks, so code using it runs everywhere.

Capture needs a ``fn`` that never synchronises with the host (no ``.item()``, ``.tolist()`` or
``int(tensor)``) and allocates the same way on every call. Triton kernels compile during the
warm-up calls, outside the capture.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import torch

__all__ = ["GraphedStep", "flatten", "unflatten"]

# A spec mirrors the nesting: ("tensor", (shape, dtype, device)) | ("const", value) |
# ("tuple" | "list", [specs]) | ("dict", [(key, spec)]) | ("dataclass", (type, [(field, spec)]))
Spec = tuple[str, Any]


def flatten(tree: Any) -> tuple[list[torch.Tensor], Spec]:
    """The tensors of ``tree`` in a fixed order, and a spec to rebuild it (:func:`unflatten`)."""
    leaves: list[torch.Tensor] = []

    def walk(node: Any) -> Spec:
        if isinstance(node, torch.Tensor):
            leaves.append(node)
            return ("tensor", (tuple(node.shape), node.dtype, node.device))
        if isinstance(node, tuple | list):
            return ("tuple" if isinstance(node, tuple) else "list", [walk(x) for x in node])
        if isinstance(node, dict):
            return ("dict", [(k, walk(v)) for k, v in node.items()])
        if dataclasses.is_dataclass(node) and not isinstance(node, type):
            fields = [(f.name, walk(getattr(node, f.name))) for f in dataclasses.fields(node) if f.init]
            return ("dataclass", (type(node), fields))
        return ("const", node)

    return leaves, walk(tree)


def unflatten(spec: Spec, leaves: list[torch.Tensor]) -> Any:
    """Rebuild the tree of ``spec`` with ``leaves`` (in :func:`flatten`'s order) as its tensors."""
    it = iter(leaves)

    def build(node: Spec) -> Any:
        kind, body = node
        if kind == "tensor":
            return next(it)
        if kind == "const":
            return body
        if kind in ("tuple", "list"):
            items = [build(x) for x in body]
            return tuple(items) if kind == "tuple" else items
        if kind == "dict":
            return {k: build(v) for k, v in body}
        cls, fields = body
        return cls(**{name: build(v) for name, v in fields})

    return build(spec)


def _assert_no_host_sync(fn: Callable[..., Any], args: tuple[Any, ...]) -> None:
    """Run ``fn`` once with CUDA sync debugging set to "error": an op that waits for the device
    (``.item()``, ``int(tensor)``, ``.tolist()`` ...) raises here, before a capture could fail."""
    previous = torch.cuda.get_sync_debug_mode()
    torch.cuda.set_sync_debug_mode("error")
    try:
        fn(*args)
    except RuntimeError as exc:
        raise RuntimeError(
            f"GraphedStep: the step synchronises with the host, so it cannot be captured: {exc}"
        ) from exc
    finally:
        torch.cuda.set_sync_debug_mode(previous)


class GraphedStep:
    """``fn(*args)`` captured once as a CUDA graph for the shapes of ``example_args``."""

    def __init__(self, fn: Callable[..., Any], *example_args: Any, warmup: int = 2) -> None:
        """Warm ``fn`` up ``warmup`` times on copies of ``example_args`` and capture it (CUDA only)."""
        self.fn = fn
        leaves, self._spec = flatten(example_args)
        devices = {t.device.type for t in leaves}
        self.captured = devices == {"cuda"}
        self.graph: torch.cuda.CUDAGraph | None = None
        if not self.captured:
            return
        self._static_in = [t.clone() for t in leaves]
        args = unflatten(self._spec, self._static_in)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(warmup):
                fn(*args)
            _assert_no_host_sync(fn, args)
        torch.cuda.current_stream().wait_stream(side)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self._static_out = fn(*args)

    def _check(self, args: tuple[Any, ...]) -> list[torch.Tensor]:
        leaves, spec = flatten(args)
        if spec != self._spec:
            got = [tuple(t.shape) for t in leaves]
            want = [tuple(t.shape) for t in self._static_in] if self.captured else "see the example arguments"
            raise ValueError(
                "GraphedStep: the arguments differ from those it was captured for (nesting, constants, "
                f"shapes, dtypes or devices); tensor shapes {got}, captured {want}. Build one GraphedStep "
                "per shape (e.g. per batch size)."
            )
        return leaves

    def __call__(self, *args: Any) -> Any:
        """Copy the input tensors in, replay, and return the static outputs (overwritten next call)."""
        leaves = self._check(args)
        if not self.captured or self.graph is None:
            return self.fn(*args)
        for dst, src in zip(self._static_in, leaves, strict=True):
            if src.data_ptr() != dst.data_ptr():
                dst.copy_(src)
        self.graph.replay()
        return self._static_out
