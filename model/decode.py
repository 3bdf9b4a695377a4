"""One-token decode steps for a fixed batch size, replayed as a CUDA graph on a GPU.

Usage::

    from rwkv_registry.model.decode import Decoder

    decoder = Decoder(model, batch=64)        # captures model.advance once for B = 64 (CUDA)
    decoder.load(state)                        # the prefilled state of the 64 rows
    for _ in range(n):
        logits = decoder.step(tokens)          # tokens [64, 1] (or [64]) -> logits [64, V] fp32
        tokens = logits.argmax(-1, keepdim=True)

The decoder owns its state (``decoder.state``, updated in place by every step) and, on CUDA, one
captured graph of :meth:`RWKV7.advance <rwkv_registry.model.rwkv7.RWKV7.advance>`: a step is one
copy of the tokens and one graph launch, with no per-op launch overhead and no copy of the state.
The logits returned on CUDA are the graph's own buffer, overwritten by the next step: clone them
to keep them. Applying or removing a MiSS adapter changes weight tensors; the next step notices
(``model.weights_version``) and captures again, keeping the state. On a CPU, or with
``graphs=False``, the same steps run eagerly through the same in-place code, so the decoder
behaves the same everywhere. One decoder per batch size: rows that finish early keep their slot
(feed any token, ignore the output).
"""

from __future__ import annotations

import warnings

import torch

from rwkv_registry.kernels.graph import GraphedStep
from rwkv_registry.model.errors import ModelError, ShapeMismatchError
from rwkv_registry.model.rwkv7 import RWKV7
from rwkv_registry.model.state import RWKV7State


class Decoder:
    """Greedy-loop building block: ``logits = decoder.step(tokens)`` for ``batch`` rows."""

    def __init__(self, model: RWKV7, batch: int, *, graphs: bool | None = None, compile: bool | str = False) -> None:
        """``graphs``: capture a CUDA graph (default: when the model is on CUDA). ``compile``:
        run the step through ``torch.compile`` first (``True`` for the inductor backend, or a
        backend name), which fuses the element-wise work around the matmuls into few kernels; the
        first step then pays the compilation (seconds to minutes on a large model)."""
        if batch < 1:
            raise ModelError(
                f"a decoder needs a batch of at least 1, got {batch}",
                hint="Pass batch=N with N >= 1, the number of rows decoded together.",
            )
        self.model = model
        self.batch = batch
        self.state = model.new_state(batch)
        cuda = model.device.type == "cuda"
        self.graphs = cuda if graphs is None else bool(graphs and cuda)
        self._graph: GraphedStep | None = None
        self._version = -1
        self.captures = 0  # how many times a graph was captured (for tests and benchmarks)
        self.capture_error: str | None = None  # why steps run eagerly although graphs were asked for
        self._fn = self._advance
        if compile:
            backend = "inductor" if compile is True else str(compile)
            self._fn = torch.compile(self._advance, backend=backend, fullgraph=True, dynamic=False)

    @property
    def captured(self) -> bool:
        """Whether steps replay a CUDA graph (else they run eagerly)."""
        return self._graph is not None and self._graph.captured

    def load(self, state: RWKV7State) -> None:
        """Copy ``state`` (``batch`` rows, same model) into the decoder's state."""
        if state.batch_size != self.batch or len(state.layers) != len(self.state.layers):
            raise ShapeMismatchError(
                f"the decoder holds {len(self.state.layers)} layers x batch {self.batch}; the state to load "
                f"has {len(state.layers)} layers x batch {state.batch_size}",
                hint="Load a state made by this model for as many rows: model.new_state(decoder.batch), or the "
                "decoder's own saved state.",
            )
        for mine, theirs in zip(self.state.layers, state.layers, strict=True):
            mine.att_shift.copy_(theirs.att_shift)
            mine.wkv.copy_(theirs.wkv)
            mine.ffn_shift.copy_(theirs.ffn_shift)

    def _advance(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.model.advance(tokens, self.state, check=False)  # step() checked the tokens

    def _capture(self, tokens: torch.Tensor) -> None:
        """Capture ``advance`` on the decoder's state, keeping its values (the warm-up runs before
        the capture advance the state, so it is saved and put back). A compilation or capture that
        fails leaves the decoder eager and uncompiled, with the reason in :attr:`capture_error` and
        a warning."""
        saved = self.state.copy()
        self._graph = None
        try:
            self._graph = GraphedStep(self._fn, tokens)
            self.captures += 1
        except Exception as exc:  # an op that cannot be compiled or captured here: decode eagerly
            self.graphs = False
            self._fn = self._advance
            self.capture_error = f"{type(exc).__name__}: {exc}"
            warnings.warn(
                f"compiling or capturing the step failed, decoding eagerly: {self.capture_error}", stacklevel=3
            )
            if torch.cuda.is_available():
                torch.cuda.synchronize()
        finally:
            self.load(saved)

    def step(self, tokens: torch.Tensor) -> torch.Tensor:
        """Feed one token per row (``[B, 1]`` or ``[B]`` int64); returns the logits ``[B, V]`` fp32
        and advances :attr:`state`."""
        if tokens.dim() == 1:
            tokens = tokens.view(-1, 1)
        if tuple(tokens.shape) != (self.batch, 1) or tokens.dtype != torch.long:
            raise ModelError(
                f"decoder step: tokens must be int64 [{self.batch}, 1], got {tokens.dtype} {list(tokens.shape)}",
                hint="Pass one token id per row: torch.tensor(ids, dtype=torch.long).view(-1, 1).",
            )
        if tokens.device.type == "cpu":
            self.model.check_tokens(tokens)  # ids in range (on the GPU that would wait for it)
        tokens = tokens.to(self.model.device)
        if self.graphs and self._version != self.model.weights_version:
            self._capture(tokens)
            self._version = self.model.weights_version
        if not self.graphs or self._graph is None:
            return self._fn(tokens)
        return self._graph(tokens)
