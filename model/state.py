"""The recurrent state of RWKV-7 and State-tuning files.

Per layer the model carries three tensors:

- ``att_shift`` ``[B, C]``: the last input of the time mix (token shift), model dtype;
- ``wkv`` ``[B, H, N, N]`` fp32: the WKV matrix, value rows and key columns (``[B, H, V, K]``);
- ``ffn_shift`` ``[B, C]``: the last input of the channel mix, model dtype.

A State file (rwkv_lightning_cuda / RWKV-PEFT, FORMATS §3) holds one tensor per layer,
``blocks.N.att.time_state`` ``[H, V, K]`` (bf16 or fp32): the initial ``wkv`` of that layer. The
``rwkv`` package keeps the same matrix in ``state[i*3+1]`` with no transpose.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

from rwkv_registry.model.errors import ShapeMismatchError, WeightsFormatError
from rwkv_registry.model.loading import torch_load_dict

_TIME_STATE_RE = re.compile(r"^blocks\.(\d+)\.att\.time_state$")
_STATE_DTYPES = (torch.bfloat16, torch.float16, torch.float32)


@dataclass
class LayerState:
    """The recurrent state of one block."""

    att_shift: torch.Tensor  # [B, C], model dtype
    wkv: torch.Tensor  # [B, H, V, K] fp32
    ffn_shift: torch.Tensor  # [B, C], model dtype


@dataclass
class RWKV7State:
    """The state of all blocks for a batch of ``B`` sequences. ``forward`` returns a new one."""

    layers: list[LayerState]

    @property
    def batch_size(self) -> int:
        """``B``, the number of sequences."""
        return int(self.layers[0].wkv.shape[0])

    def copy(self) -> RWKV7State:
        """A deep copy (new tensors); autograd history is kept."""
        return RWKV7State([LayerState(s.att_shift.clone(), s.wkv.clone(), s.ffn_shift.clone()) for s in self.layers])

    def detach(self) -> RWKV7State:
        """The same values cut from the autograd graph (for truncated back-propagation)."""
        return RWKV7State([LayerState(s.att_shift.detach(), s.wkv.detach(), s.ffn_shift.detach()) for s in self.layers])

    def to(self, device: torch.device | str) -> RWKV7State:
        """The state on another device (dtypes kept)."""
        return RWKV7State(
            [LayerState(s.att_shift.to(device), s.wkv.to(device), s.ffn_shift.to(device)) for s in self.layers]
        )

    def select(self, rows: Sequence[int] | torch.Tensor) -> RWKV7State:
        """The sub-batch of the given rows, in that order."""
        idx = torch.as_tensor(rows, dtype=torch.long, device=self.layers[0].wkv.device)
        return RWKV7State([LayerState(s.att_shift[idx], s.wkv[idx], s.ffn_shift[idx]) for s in self.layers])

    @staticmethod
    def cat(states: Sequence[RWKV7State]) -> RWKV7State:
        """Stack the batches of several states (same model) into one."""
        if not states:
            raise ValueError("RWKV7State.cat needs at least one state")
        n = len(states[0].layers)
        return RWKV7State(
            [
                LayerState(
                    torch.cat([s.layers[i].att_shift for s in states]),
                    torch.cat([s.layers[i].wkv for s in states]),
                    torch.cat([s.layers[i].ffn_shift for s in states]),
                )
                for i in range(n)
            ]
        )

    def to_rwkv_list(self, row: int = 0) -> list[torch.Tensor]:
        """One row as the ``rwkv`` package's state list: ``[att_shift, wkv, ffn_shift] * n_layer``."""
        out: list[torch.Tensor] = []
        for s in self.layers:
            out += [s.att_shift[row].clone(), s.wkv[row].clone(), s.ffn_shift[row].clone()]
        return out


@dataclass(frozen=True)
class StateWeights:
    """A State-tuning file: the initial WKV matrix of each layer, ``[H, V, K]`` each."""

    time_state: tuple[torch.Tensor, ...]  # per layer [H, V, K], dtype as stored
    path: str = ""

    @property
    def n_layer(self) -> int:
        """Number of layers in the file."""
        return len(self.time_state)

    @property
    def shape(self) -> tuple[int, ...]:
        """``(n_layer, H, V, K)``."""
        return (self.n_layer, *self.time_state[0].shape)


def load_state_weights(path: str | Path, *, check_finite: bool = True) -> StateWeights:
    """Read a State file (``blocks.N.att.time_state`` ``[H, V, K]``, bf16/fp16/fp32).

    Uses ``torch.load(weights_only=True)``: no pickled code runs. Raises
    :class:`WeightsFormatError` naming the file when a tensor is missing, extra, of another
    rank or dtype, when the layers disagree on the shape, or (``check_finite``) when a value is
    NaN or infinite.
    """
    p = Path(path)
    tensors = torch_load_dict(p, what="State file")
    layers: dict[int, torch.Tensor] = {}
    for name, t in tensors.items():
        m = _TIME_STATE_RE.match(name)
        if not m or not isinstance(t, torch.Tensor):
            raise WeightsFormatError(
                f"{p}: unexpected entry {name!r} in a State file",
                hint="A State file holds only blocks.N.att.time_state tensors [H, V, K].",
                path=str(p),
            )
        layers[int(m.group(1))] = t
    if not layers:
        raise WeightsFormatError(
            f"{p}: no blocks.N.att.time_state tensor; not a State file",
            hint="Point to the .pth written by rwkv_state_tune (or RWKV-PEFT state tuning).",
            path=str(p),
        )
    n = max(layers) + 1
    missing = sorted(set(range(n)) - set(layers))
    if missing:
        raise WeightsFormatError(
            f"{p}: State file lacks layers {missing} (has {len(layers)} of {n})",
            hint="The file is incomplete; re-export it from the trainer.",
            path=str(p),
        )
    first = layers[0]
    for i in range(n):
        t = layers[i]
        if t.dim() != 3 or t.shape[1] != t.shape[2] or t.shape != first.shape:
            raise WeightsFormatError(
                f"{p}: blocks.{i}.att.time_state has shape {list(t.shape)}, expected [H, V, K] "
                f"like layer 0 {list(first.shape)}",
                hint="State tensors are [H, V, K] with V == K == head size, the same in every layer.",
                path=str(p),
            )
        if t.dtype not in _STATE_DTYPES:
            raise WeightsFormatError(
                f"{p}: blocks.{i}.att.time_state has dtype {t.dtype}, expected bfloat16, float16 or float32",
                hint="Re-export the State in bf16 or fp32.",
                path=str(p),
            )
        if check_finite and not bool(torch.isfinite(t).all()):
            bad = int((~torch.isfinite(t)).sum())
            raise WeightsFormatError(
                f"{p}: blocks.{i}.att.time_state holds {bad} NaN/Inf value(s)",
                hint="The training diverged or the file was damaged: use an earlier checkpoint, or retrain.",
                path=str(p),
            )
    return StateWeights(tuple(layers[i] for i in range(n)), str(p))


def check_state_fits(weights: StateWeights, n_layer: int, n_head: int, head_size: int) -> None:
    """Refuse a State whose layer count or ``[H, V, K]`` differs from the model; names both shapes."""
    want = (n_layer, n_head, head_size, head_size)
    if tuple(weights.shape) != want:
        src = weights.path or "State"
        raise ShapeMismatchError(
            f"{src}: State shape [layers, H, V, K] = {list(weights.shape)} does not fit the model {list(want)}",
            hint="Use the State trained on this base (same layer count, heads and head size).",
            path=weights.path,
        )
