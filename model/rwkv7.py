"""RWKV-7 (x070, the G1 family) in PyTorch: the model, loading, State and MiSS application.

Usage::

    from rwkv_registry.model import RWKV7, load_state_weights, load_miss
    model = RWKV7.from_pth("rwkv7-g1k-7.2b-20260930-ctx25600.pth", device="cuda", dtype=torch.bfloat16)
    state = model.new_state(batch=1, time_state=load_state_weights("v141b-s1224.pth"))
    logits, state = model.forward(tokens, state)               # tokens [B, T] -> logits [B, V]
    model.apply_miss(load_miss("adapter-final.pth"), mode="merge")
    model.remove_miss()

The architecture is read from the tensor shapes (:class:`RWKV7Config`). Parameter names are the
checkpoint's, so ``model.state_dict()`` has the file's keys and shapes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import torch
from torch import nn

from rwkv_registry.kernels.add_norm import add_layer_norm
from rwkv_registry.model.block import Block, Residual
from rwkv_registry.model.config import RWKV7Config
from rwkv_registry.model.errors import FingerprintMismatchError, ModelError, ShapeMismatchError, WeightsFormatError
from rwkv_registry.model.loading import sha256_file, torch_load_dict
from rwkv_registry.model.miss import TARGET_MODULES, MissAdapter, MissLinear, merged_weight
from rwkv_registry.model.state import LayerState, RWKV7State, StateWeights, check_state_fits
from rwkv_registry.model.wkv import elementwise_backend

MissMode = Literal["merge", "fly"]


@dataclass
class _AppliedMiss:
    adapter: MissAdapter
    mode: MissMode
    # merge: (linear, original weight Parameter); fly: (parent module, attribute, original linear)
    undo: list[tuple[nn.Module, str, nn.Module | torch.Tensor]]


class RWKV7(nn.Module):
    """The RWKV-7 language model. Build it with :meth:`from_pth` or :meth:`from_state_dict`."""

    def __init__(self, config: RWKV7Config) -> None:
        super().__init__()
        self.config = config
        self.emb = nn.Embedding(config.vocab_size, config.n_embd)  # weight [V, C]
        self.blocks = nn.ModuleList(Block(config, i) for i in range(config.n_layer))
        self.ln_out = nn.LayerNorm(config.n_embd)
        self.head = nn.Linear(config.n_embd, config.vocab_size, bias=False)  # weight [V, C]
        self.source_path: str | None = None  # the base file, when loaded from one
        self._fingerprint: str | None = None
        self._miss: _AppliedMiss | None = None
        self.weights_version = 0  # bumped whenever a weight tensor is replaced (MiSS merge / on the fly)

    # ----------------------------------------------------------------------------------- building

    @classmethod
    def from_pth(
        cls,
        path: str | Path,
        device: str | torch.device = "cpu",
        dtype: torch.dtype = torch.float32,
        *,
        fingerprint: str | None = None,
    ) -> RWKV7:
        """Load a base checkpoint with ``torch.load(weights_only=True, mmap=True)``.

        Each tensor is converted to ``dtype`` and moved to ``device`` on its own; a tensor
        already in that dtype on CPU keeps the file mapping (no copy in memory). ``fingerprint``
        is the known sha256 of the file (else computed on first need, see :attr:`base_fingerprint`).
        Raises :class:`WeightsFormatError` naming the file for anything that is not an x070 base.
        """
        p = Path(path)
        if torch.device(device).type == "cuda" and not torch.cuda.is_available():  # before reading 14 GB
            raise ModelError(
                f"{p}: device {str(device)!r} asked, but this torch sees no CUDA device",
                hint="Load with device='cpu' (tiny models), or run where a GPU and a CUDA build of torch are.",
                path=str(p),
            )
        tensors = torch_load_dict(p, what="base checkpoint")
        model = cls.from_state_dict(tensors, device=device, dtype=dtype, source=str(p))
        model.source_path = str(p)
        model._fingerprint = fingerprint
        return model

    @classmethod
    def from_state_dict(
        cls,
        tensors: Mapping[str, object],
        device: str | torch.device = "cpu",
        dtype: torch.dtype = torch.float32,
        *,
        source: str = "state dict",
    ) -> RWKV7:
        """Build a model from ``{name: tensor}`` in the checkpoint layout (not copied when already
        in ``dtype`` on ``device``)."""
        if dtype not in (torch.float32, torch.bfloat16, torch.float16):
            raise ModelError(
                f"unsupported dtype {dtype}; use torch.float32, torch.bfloat16 or torch.float16",
                hint="Pass dtype=torch.bfloat16 on a GPU or dtype=torch.float32 on the CPU.",
            )
        bad = [k for k, v in tensors.items() if not isinstance(v, torch.Tensor)]
        if bad:
            raise WeightsFormatError(
                f"{source}: entries that are not tensors: {bad[:5]}",
                hint="A base checkpoint is a flat dict of tensors.",
                path=source,
            )
        shapes = {k: tuple(v.shape) for k, v in tensors.items()}  # type: ignore[attr-defined]  # all are tensors
        config = RWKV7Config.from_shapes(shapes, source=source)
        expected = config.expected_shapes()
        missing = sorted(set(expected) - set(shapes))
        extra = sorted(set(shapes) - set(expected))
        if missing or extra:
            parts = []
            if missing:
                parts.append(f"missing {missing[:6]}{' …' if len(missing) > 6 else ''}")
            if extra:
                parts.append(f"unexpected {extra[:6]}{' …' if len(extra) > 6 else ''}")
            raise WeightsFormatError(
                f"{source}: not a plain RWKV-7 (x070) base: {'; '.join(parts)}",
                hint="Only the G1/x070 layout of FORMATS §2 is supported (no DeepEmbed or other variants).",
                path=source,
            )
        for name, want in expected.items():
            if shapes[name] != want:
                raise WeightsFormatError(
                    f"{source}: tensor {name!r} has shape {list(shapes[name])}, expected {list(want)}",
                    hint="The checkpoint is damaged or not an RWKV-7 (x070) model.",
                    path=source,
                )
        with torch.device("meta"):
            model = cls(config)
        converted = {}
        for name in expected:
            t = tensors[name]
            assert isinstance(t, torch.Tensor)
            converted[name] = t.to(device=device, dtype=dtype)  # no copy when nothing changes
        model.load_state_dict(converted, strict=True, assign=True)
        model.requires_grad_(False)
        model.eval()
        return model

    # ------------------------------------------------------------------------------ properties

    @property
    def device(self) -> torch.device:
        """Where the weights live."""
        return self.emb.weight.device

    @property
    def dtype(self) -> torch.dtype:
        """The weights' dtype (the WKV state is always fp32)."""
        return self.emb.weight.dtype

    @property
    def base_fingerprint(self) -> str | None:
        """sha256 of the base file (computed once, streamed); None for a model not read from a file."""
        if self._fingerprint is None and self.source_path is not None:
            self._fingerprint = sha256_file(self.source_path)
        return self._fingerprint

    # ---------------------------------------------------------------------------------- state

    def new_state(self, batch: int = 1, time_state: StateWeights | None = None) -> RWKV7State:
        """A zero state for ``batch`` sequences; with ``time_state`` (a State file) as initial WKV.

        Raises :class:`ShapeMismatchError`, naming both shapes, when the State's layer count or
        ``[H, V, K]`` differs from the model.
        """
        cfg = self.config
        if batch < 1:
            raise ModelError(
                f"batch must be at least 1, got {batch}", hint="Pass batch=N with N >= 1, the number of sequences."
            )
        if time_state is not None:
            check_state_fits(time_state, cfg.n_layer, cfg.n_head, cfg.head_size)
        layers = []
        for i in range(cfg.n_layer):
            shift = torch.zeros(batch, cfg.n_embd, device=self.device, dtype=self.dtype)
            if time_state is None:
                wkv = torch.zeros(batch, cfg.n_head, cfg.head_size, cfg.head_size, device=self.device)
            else:
                s0 = time_state.time_state[i].to(device=self.device, dtype=torch.float32)  # [H, V, K]
                wkv = s0.unsqueeze(0).expand(batch, -1, -1, -1).clone()  # [B, H, V, K]
            layers.append(LayerState(shift, wkv, shift.clone()))
        return RWKV7State(layers)

    # -------------------------------------------------------------------------------- forward

    def forward(
        self, tokens: torch.Tensor, state: RWKV7State | None = None, full_output: bool = False
    ) -> tuple[torch.Tensor, RWKV7State]:
        """Run ``tokens`` ``[B, T]`` (int64) from ``state`` (zeros when None).

        Returns ``(logits, new state)``: logits ``[B, V]`` at the last position, or ``[B, T, V]``
        with ``full_output``; fp32. The given state is not modified. With tokens already on a CUDA
        device nothing waits for the host; ids are range-checked for CPU tokens only.
        """
        B = self.check_tokens(tokens)
        if state is None:
            state = self.new_state(B)
        self._check_state(state, B, inplace=False)
        return self._run(tokens, state, full_output, inplace=False)

    @torch.no_grad()
    def advance(
        self, tokens: torch.Tensor, state: RWKV7State, full_output: bool = False, *, check: bool = True
    ) -> torch.Tensor:
        """Like :meth:`forward`, but the new state is written into ``state``'s own tensors
        (inference only, no autograd) and only the logits are returned.

        Nothing is allocated for the state and no state is copied, so a decode step
        ``model.advance(tokens [B, 1], state)`` can be captured once as a CUDA graph and replayed
        (:class:`rwkv_registry.model.decode.Decoder` does that per batch size). The state's
        tensors must be contiguous, as :meth:`new_state`, ``select`` and ``cat`` make them.
        ``check=False`` skips the argument checks (for a caller that made both itself, such as a
        ``torch.compile``-d step, where reading CPU token ids would break the graph).
        """
        if check:
            self._check_state(state, self.check_tokens(tokens), inplace=True)
        logits, _ = self._run(tokens, state, full_output, inplace=True)
        return logits

    def check_tokens(self, tokens: torch.Tensor) -> int:
        """Refuse anything but a non-empty int64 ``[B, T]`` (ids range-checked when on the CPU,
        where that costs no device wait); returns ``B``."""
        if not isinstance(tokens, torch.Tensor) or tokens.dim() != 2 or tokens.dtype != torch.long:
            got = f"{tokens.dtype} {list(tokens.shape)}" if isinstance(tokens, torch.Tensor) else type(tokens).__name__
            raise ModelError(
                f"tokens must be a LongTensor [B, T], got {got}",
                hint="Pass torch.tensor([ids], dtype=torch.long): one row of token ids per sequence.",
            )
        B, T = tokens.shape
        if T == 0 or B == 0:
            raise ModelError(
                f"tokens must not be empty, got shape {[B, T]}", hint="Give at least one token in at least one row."
            )
        if tokens.device.type == "cpu":  # on a GPU this check would wait for the device (no CUDA graphs)
            lo, hi = int(tokens.min()), int(tokens.max())
            if lo < 0 or hi >= self.config.vocab_size:
                raise ModelError(
                    f"token ids must lie in [0, {self.config.vocab_size}), got range [{lo}, {hi}]",
                    hint="Encode the text with the base's own tokenizer (rwkv_vocab_v20230424 for the RWKV-7 bases).",
                )
        return int(B)

    def _check_state(self, state: RWKV7State, batch: int, *, inplace: bool) -> None:
        cfg = self.config
        if state.batch_size != batch or len(state.layers) != cfg.n_layer:
            raise ShapeMismatchError(
                f"state holds {len(state.layers)} layers x batch {state.batch_size}, "
                f"tokens need {cfg.n_layer} layers x batch {batch}",
                hint="Pass a state from this model's new_state(B), B being the tokens' row count (or state=None).",
            )
        if inplace:
            wkv_shape = (batch, cfg.n_head, cfg.head_size, cfg.head_size)
            for i, layer in enumerate(state.layers):
                for name, t, shape, dtype in (
                    ("att_shift", layer.att_shift, (batch, cfg.n_embd), self.dtype),
                    ("wkv", layer.wkv, wkv_shape, torch.float32),
                    ("ffn_shift", layer.ffn_shift, (batch, cfg.n_embd), self.dtype),
                ):
                    if tuple(t.shape) != shape or t.dtype != dtype or t.device != self.device or not t.is_contiguous():
                        raise ShapeMismatchError(
                            f"state layer {i} {name} is {t.dtype} {list(t.shape)} on {t.device}"
                            f"{'' if t.is_contiguous() else ' (not contiguous)'}; advance() needs a contiguous "
                            f"{dtype} {list(shape)} on {self.device}",
                            hint="Make the state with model.new_state(batch) (or copy it into one).",
                        )

    def _run(
        self, tokens: torch.Tensor, state: RWKV7State, full_output: bool, inplace: bool
    ) -> tuple[torch.Tensor, RWKV7State]:
        x = self.emb(tokens.to(self.device))  # [B, T, C]
        v_first: torch.Tensor | None = None
        pending: Residual | None = None  # each block's last residual add, fused with the next norm
        new_layers = []
        for block, layer_state in zip(self.blocks, state.layers, strict=True):
            x, pending, new_state, v_first = block.step(  # type: ignore[operator]  # a ModuleList yields nn.Module
                x, pending, layer_state, v_first, inplace
            )
            new_layers.append(new_state)
        assert pending is not None
        dx, miss = pending
        if not full_output:  # only the last position: [B, C]
            x, dx = x[:, -1], dx[:, -1]
            miss = None if miss is None else (miss[0][:, -1], miss[1], miss[2])
        ln = self.ln_out
        _, h = add_layer_norm(x, dx, ln.weight, ln.bias, ln.eps, miss=miss, backend=elementwise_backend(x))
        logits = self.head(h).float()  # [B, V] or [B, T, V]
        return logits, (state if inplace else RWKV7State(new_layers))

    # ----------------------------------------------------------------------------------- MiSS

    @property
    def miss(self) -> MissAdapter | None:
        """The applied MiSS adapter, if any."""
        return self._miss.adapter if self._miss else None

    def apply_miss(self, adapter: MissAdapter, mode: MissMode = "merge", *, force: bool = False) -> None:
        """Apply a MiSS adapter merged into the weights or on the fly.

        Refused (nothing changed) when another adapter is applied, when a target does not fit
        the model (:class:`ShapeMismatchError`), or when the adapter's ``base_fingerprint``
        differs from this base's sha256 (:class:`FingerprintMismatchError`) unless ``force``.
        """
        if mode not in ("merge", "fly"):
            raise ModelError(
                f"MiSS mode must be 'merge' or 'fly', got {mode!r}",
                hint='Pass mode="merge" (into the weights) or mode="fly" (applied at each step).',
            )
        if self._miss is not None:
            raise ModelError(
                f"a MiSS adapter is already applied ({self._miss.adapter.path or 'in memory'})",
                hint="Call remove_miss() first: one adapter at a time.",
            )
        if not force:
            mine = self.base_fingerprint
            if mine is None:
                raise FingerprintMismatchError(
                    f"{adapter.path or 'MiSS adapter'}: the model was not loaded from a file, so its base "
                    "fingerprint is unknown",
                    hint="Load the base with RWKV7.from_pth, or pass force=True.",
                    path=adapter.path,
                )
            if mine != adapter.base_fingerprint:
                raise FingerprintMismatchError(
                    f"{adapter.path or 'MiSS adapter'}: trained on base {adapter.base_fingerprint}, but the "
                    f"loaded base {self.source_path} is {mine}",
                    hint="Use the adapter trained for this base file, or pass force=True to apply it anyway.",
                    path=adapter.path,
                )
        linears = [self._target_linear(t.layer, t.target) for t in adapter.targets]
        for t, (_, _, lin) in zip(adapter.targets, linears, strict=True):
            want = (lin.out_features, adapter.rank)
            if tuple(t.D.shape) != want or t.in_features != lin.in_features:
                raise ShapeMismatchError(
                    f"{adapter.path or 'MiSS adapter'}: {t.name} is D {list(t.D.shape)} with in_features "
                    f"{t.in_features}, the model's layer needs D {list(want)} with in_features {lin.in_features}",
                    hint="Use the adapter trained for this base.",
                    path=adapter.path,
                )
        undo: list[tuple[nn.Module, str, nn.Module | torch.Tensor]] = []
        for t, (parent, attr, lin) in zip(adapter.targets, linears, strict=True):
            if mode == "merge":
                original = lin.weight
                new = merged_weight(original.detach(), t.D, adapter.scale)
                lin.weight = nn.Parameter(new, requires_grad=original.requires_grad)
                undo.append((lin, "weight", original))
            else:
                setattr(parent, attr, MissLinear(lin, t.D, adapter.scale))
                undo.append((parent, attr, lin))
        self._miss = _AppliedMiss(adapter, mode, undo)
        self.weights_version += 1

    def remove_miss(self) -> None:
        """Undo :meth:`apply_miss`: the original weight tensors come back, bit for bit."""
        if self._miss is None:
            return
        for owner, attr, original in reversed(self._miss.undo):
            setattr(owner, attr, original)
        self._miss = None
        self.weights_version += 1

    def _target_linear(self, layer: int, target: str) -> tuple[nn.Module, str, nn.Linear]:
        if not 0 <= layer < self.config.n_layer:
            raise ShapeMismatchError(
                f"MiSS target blocks.{layer}.{target}: the model has {self.config.n_layer} layers (0.."
                f"{self.config.n_layer - 1})",
                hint="Use the adapter trained for this base.",
            )
        sub, attr = TARGET_MODULES[target]
        parent = getattr(self.blocks[layer], sub)
        lin = getattr(parent, attr)
        assert isinstance(lin, nn.Linear)
        return parent, attr, lin
