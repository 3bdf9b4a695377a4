"""The architecture of an RWKV-7 (x070) checkpoint, read from its tensor shapes.

Nothing here is assumed: layer count from the block indices, (vocabulary, width) from
``emb.weight``, (heads, head size) from ``blocks.0.att.r_k``, the LoRA widths from
``w1``/``a1``/``g1`` and ``blocks.1.att.v1`` (layer 0 carries a value LoRA that is never used).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from rwkv_registry.model.errors import WeightsFormatError

_BLOCK_RE = re.compile(r"^blocks\.(\d+)\.")


@dataclass(frozen=True)
class RWKV7Config:
    """Shapes of one RWKV-7 model. ``n_embd == n_head * head_size``."""

    n_layer: int  # number of blocks
    n_embd: int  # C, model width
    vocab_size: int  # V, rows of emb.weight and head.weight
    n_head: int  # H, heads of the time mix (rows of r_k)
    head_size: int  # N, 64 in every released model
    dim_ffn: int  # F, hidden width of the channel mix (4C in released models)
    d_decay: int  # Dw, LoRA width of the decay (w1/w2)
    d_aaa: int  # Da, LoRA width of the in-context learning rate (a1/a2)
    d_mv: int  # Dv, LoRA width of the value residual (v1/v2, layers >= 1)
    d_gate: int  # Dg, LoRA width of the output gate (g1/g2)
    d_mv0: int | None = None  # width of layer 0's unused v1/v2 when the file has them, else None

    @classmethod
    def from_shapes(cls, shapes: Mapping[str, Sequence[int]], *, source: str = "checkpoint") -> RWKV7Config:
        """Read the architecture from ``{tensor name: shape}``.

        Raises :class:`WeightsFormatError` naming ``source`` when a tensor needed to read a
        dimension is missing or has an unexpected rank.
        """

        def shape(name: str, rank: int) -> tuple[int, ...]:
            if name not in shapes:
                raise WeightsFormatError(
                    f"{source}: not an RWKV-7 (x070) checkpoint: tensor {name!r} is missing",
                    hint="Point to a G1/x070 base .pth (emb.weight, blocks.N.att.r_k, … as BlinkDL saves them).",
                    path=source,
                )
            got = tuple(int(d) for d in shapes[name])
            if len(got) != rank:
                raise WeightsFormatError(
                    f"{source}: tensor {name!r} has shape {list(got)}, expected {rank} dimensions",
                    hint="The file is not an RWKV-7 (x070) checkpoint or is damaged.",
                    path=source,
                )
            return got

        layers = {int(m.group(1)) for name in shapes if (m := _BLOCK_RE.match(name))}
        if not layers:
            raise WeightsFormatError(
                f"{source}: no 'blocks.N.*' tensors; not an RWKV checkpoint",
                hint="Point to a G1/x070 base .pth.",
                path=source,
            )
        n_layer = max(layers) + 1
        missing = sorted(set(range(n_layer)) - layers)
        if missing:
            raise WeightsFormatError(
                f"{source}: block indices are not contiguous (missing layers {missing})",
                hint="The checkpoint is incomplete or damaged.",
                path=source,
            )
        vocab_size, n_embd = shape("emb.weight", 2)
        n_head, head_size = shape("blocks.0.att.r_k", 2)
        if n_head * head_size != n_embd:
            raise WeightsFormatError(
                f"{source}: r_k shape {[n_head, head_size]} does not split width {n_embd} into heads",
                hint="The checkpoint is not an RWKV-7 (x070) model.",
                path=source,
            )
        dim_ffn = shape("blocks.0.ffn.key.weight", 2)[0]
        d_decay = shape("blocks.0.att.w1", 2)[1]
        d_aaa = shape("blocks.0.att.a1", 2)[1]
        d_gate = shape("blocks.0.att.g1", 2)[1]
        # Layer 0 has no value residual: its v0/v1/v2 are optional and ignored. Dv comes from layer 1.
        d_mv0 = shape("blocks.0.att.v1", 2)[1] if "blocks.0.att.v1" in shapes else None
        d_mv = shape("blocks.1.att.v1", 2)[1] if n_layer > 1 else (d_mv0 or 0)
        return cls(
            n_layer=n_layer,
            n_embd=n_embd,
            vocab_size=vocab_size,
            n_head=n_head,
            head_size=head_size,
            dim_ffn=dim_ffn,
            d_decay=d_decay,
            d_aaa=d_aaa,
            d_mv=d_mv,
            d_gate=d_gate,
            d_mv0=d_mv0,
        )

    def layer_d_mv(self, layer: int) -> int | None:
        """Width of the value-residual LoRA of ``layer`` (None: layer 0 without v0/v1/v2)."""
        return self.d_mv0 if layer == 0 else self.d_mv

    def expected_shapes(self) -> dict[str, tuple[int, ...]]:
        """Every tensor of a checkpoint with this architecture and its shape (the file layout)."""
        C, V, H, N, F = self.n_embd, self.vocab_size, self.n_head, self.head_size, self.dim_ffn
        out: dict[str, tuple[int, ...]] = {
            "emb.weight": (V, C),
            "blocks.0.ln0.weight": (C,),
            "blocks.0.ln0.bias": (C,),
            "ln_out.weight": (C,),
            "ln_out.bias": (C,),
            "head.weight": (V, C),
        }
        for i in range(self.n_layer):
            p = f"blocks.{i}."
            for ln in ("ln1", "ln2"):
                out[p + ln + ".weight"] = (C,)
                out[p + ln + ".bias"] = (C,)
            for mix in ("x_r", "x_w", "x_k", "x_v", "x_a", "x_g", "w0", "a0", "k_k", "k_a"):
                out[p + "att." + mix] = (1, 1, C)
            for lora, width in (("w", self.d_decay), ("a", self.d_aaa), ("g", self.d_gate)):
                out[p + f"att.{lora}1"] = (C, width)
                out[p + f"att.{lora}2"] = (width, C)
            d_v = self.layer_d_mv(i)
            if d_v is not None:
                out[p + "att.v0"] = (1, 1, C)
                out[p + "att.v1"] = (C, d_v)
                out[p + "att.v2"] = (d_v, C)
            out[p + "att.r_k"] = (H, N)
            for lin in ("receptance", "key", "value", "output"):
                out[p + f"att.{lin}.weight"] = (C, C)
            out[p + "att.ln_x.weight"] = (C,)
            out[p + "att.ln_x.bias"] = (C,)
            out[p + "ffn.x_k"] = (1, 1, C)
            out[p + "ffn.key.weight"] = (F, C)
            out[p + "ffn.value.weight"] = (C, F)
        return out
