"""Deterministic tiny G1-format checkpoints, with matching State and MiSS files.

For tests, the demo and the smoke evaluation: the files have the real layouts (FORMATS §2–4)
and the full 65536-token vocabulary by default, but 2 layers of width 128. The same arguments
give the same bytes on every run (a seeded CPU generator; archives written through a buffer so
the file name does not enter the bytes).

Values are random with scales that keep every path of the forward busy (decays spread over
their range, gates away from 0 and 1, logits with a spread of a few units).
"""

from __future__ import annotations

import io
import math
from dataclasses import dataclass
from pathlib import Path

import torch

from rwkv_registry.checks.miss import tensor_name, write_miss_file
from rwkv_registry.formats.pthwrite import RawTensor
from rwkv_registry.fs.atomic import atomic_write_bytes
from rwkv_registry.model.config import RWKV7Config
from rwkv_registry.model.loading import sha256_file, torch_load_dict
from rwkv_registry.model.miss import TARGET_MODULES


@dataclass(frozen=True)
class TinySet:
    """Paths of a tiny base and the State and MiSS files made for it."""

    base: Path
    state: Path
    miss: Path


def tiny_config(
    *,
    n_layer: int = 2,
    n_embd: int = 128,
    vocab: int = 65536,
    head_size: int = 64,
    d_decay: int = 16,
    d_aaa: int = 16,
    d_mv: int = 8,
    d_gate: int = 32,
    dim_ffn: int | None = None,
    layer0_v: bool = True,
) -> RWKV7Config:
    """The config of a tiny model (``dim_ffn`` defaults to ``4 * n_embd``)."""
    if n_embd % head_size:
        raise ValueError(f"n_embd {n_embd} is not a multiple of head_size {head_size}")
    return RWKV7Config(
        n_layer=n_layer,
        n_embd=n_embd,
        vocab_size=vocab,
        n_head=n_embd // head_size,
        head_size=head_size,
        dim_ffn=dim_ffn or 4 * n_embd,
        d_decay=d_decay,
        d_aaa=d_aaa,
        d_mv=d_mv,
        d_gate=d_gate,
        d_mv0=d_mv if layer0_v else None,
    )


def tiny_base_tensors(
    config: RWKV7Config, *, seed: int = 0, device: str | torch.device = "cpu", dtype: torch.dtype = torch.float32
) -> dict[str, torch.Tensor]:
    """Random weights for ``config`` in the checkpoint layout (deterministic for ``seed`` and device),
    with scales that keep activations finite through 32 layers. Drawn in fp32 on ``device`` (a 7.2B
    model is built on the GPU without a file), then cast to ``dtype``."""
    g = torch.Generator(device=device).manual_seed(seed)
    C = config.n_embd

    def randn(shape: tuple[int, ...], std: float, mean: float = 0.0) -> torch.Tensor:
        return torch.randn(shape, generator=g, device=device) * std + mean

    def rand(shape: tuple[int, ...], lo: float, hi: float) -> torch.Tensor:
        return torch.rand(shape, generator=g, device=device) * (hi - lo) + lo

    out: dict[str, torch.Tensor] = {}
    for name, shape in config.expected_shapes().items():
        leaf = name.rsplit(".", 1)[-1]
        if name in ("emb.weight",):
            t = randn(shape, 1.0)
        elif name == "head.weight":
            t = randn(shape, 2.0 / math.sqrt(C))
        elif ".ln" in name or name.startswith("ln_out"):
            t = randn(shape, 0.1, 1.0) if leaf == "weight" else randn(shape, 0.1)
        elif leaf.startswith("x_"):
            t = rand(shape, 0.0, 1.0)
        elif leaf == "w0":
            t = randn(shape, 1.0, -0.5)
        elif leaf in ("a0", "v0"):
            t = randn(shape, 1.0)
        elif leaf == "k_k":
            t = rand(shape, 0.3, 1.2)
        elif leaf == "k_a":
            t = rand(shape, 0.0, 1.0)
        elif leaf[0] in "wavg" and leaf[1:] in ("1", "2"):  # LoRA factors [in, out]
            t = randn(shape, 1.0 / math.sqrt(shape[0]))
        elif leaf == "r_k":
            t = randn(shape, 0.3)
        elif leaf == "weight":  # the linear maps [out, in]
            gain = 0.5 if name.endswith("ffn.value.weight") else 1.0
            t = randn(shape, gain / math.sqrt(shape[1]))
        else:  # pragma: no cover - expected_shapes has no other kind
            raise AssertionError(name)
        out[name] = t.to(dtype).contiguous()
    return out


def save_tensors(path: str | Path, tensors: dict[str, torch.Tensor]) -> Path:
    """``torch.save`` a flat dict through a buffer (so the bytes do not depend on the file name), written
    atomically (temporary file, fsync, rename): a process killed mid-write leaves the old file or none, never a
    truncated one that a later run (the tiny weights' cache) would take for whole."""
    buf = io.BytesIO()
    torch.save({k: v.contiguous().clone() for k, v in tensors.items()}, buf)
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(p, buf.getvalue())
    return p


def make_tiny_base(
    path: str | Path,
    *,
    n_layer: int = 2,
    n_embd: int = 128,
    vocab: int = 65536,
    seed: int = 0,
    dtype: torch.dtype = torch.bfloat16,
    head_size: int = 64,
    d_decay: int = 16,
    d_aaa: int = 16,
    d_mv: int = 8,
    d_gate: int = 32,
    layer0_v: bool = True,
) -> Path:
    """Write a tiny RWKV-7 base checkpoint (G1 layout, ``dtype`` on disk) and return its path."""
    cfg = tiny_config(
        n_layer=n_layer,
        n_embd=n_embd,
        vocab=vocab,
        head_size=head_size,
        d_decay=d_decay,
        d_aaa=d_aaa,
        d_mv=d_mv,
        d_gate=d_gate,
        layer0_v=layer0_v,
    )
    tensors = {k: v.to(dtype) for k, v in tiny_base_tensors(cfg, seed=seed).items()}
    return save_tensors(path, tensors)


def read_config(base: str | Path | RWKV7Config) -> RWKV7Config:
    """The config of a base file (or the config itself)."""
    if isinstance(base, RWKV7Config):
        return base
    tensors = torch_load_dict(base, what="base checkpoint")
    return RWKV7Config.from_shapes(
        {k: tuple(v.shape) for k, v in tensors.items() if isinstance(v, torch.Tensor)}, source=str(base)
    )


def make_tiny_state(
    path: str | Path,
    base: str | Path | RWKV7Config,
    *,
    seed: int = 1,
    dtype: torch.dtype = torch.bfloat16,
    std: float = 0.5,
) -> Path:
    """Write a random State file for ``base``: ``blocks.N.att.time_state`` ``[H, V, K]``."""
    cfg = read_config(base)
    g = torch.Generator().manual_seed(seed)
    shape = (cfg.n_head, cfg.head_size, cfg.head_size)
    tensors = {
        f"blocks.{i}.att.time_state": (torch.randn(shape, generator=g) * std).to(dtype) for i in range(cfg.n_layer)
    }
    return save_tensors(path, tensors)


def miss_in_out(cfg: RWKV7Config, target: str) -> tuple[int, int]:
    """``(in_features, out_features)`` of a MiSS target in this architecture."""
    C, F = cfg.n_embd, cfg.dim_ffn
    return {"ffn.key.weight": (C, F), "ffn.value.weight": (F, C)}.get(target, (C, C))


def tiny_miss_tensors(
    cfg: RWKV7Config, *, rank: int = 4, seed: int = 2, std: float = 0.05, targets: tuple[str, ...] | None = None
) -> dict[str, torch.Tensor]:
    """Random bf16 ``D`` tensors ``[out, rank]`` named ``blocks.L.<target>.D``, every layer."""
    g = torch.Generator().manual_seed(seed)
    out = {}
    for layer in range(cfg.n_layer):
        for target in targets or tuple(TARGET_MODULES):
            _, n_out = miss_in_out(cfg, target)
            out[tensor_name(layer, target)] = (torch.randn(n_out, rank, generator=g) * std).to(torch.bfloat16)
    return out


def make_tiny_miss(
    path: str | Path,
    base_path: str | Path,
    *,
    rank: int = 4,
    alpha: float = 8.0,
    seed: int = 2,
    std: float = 0.05,
    base_fingerprint: str | None = None,
) -> Path:
    """Write a random MiSS package for ``base_path`` with the registry's writer.

    Uses :func:`rwkv_registry.checks.miss.write_miss_file` (the rwkv_lightning_cuda single-file layout
    with the embedded manifest). ``base_fingerprint`` defaults to the sha256 of ``base_path``.
    """
    cfg = read_config(base_path)
    d_tensors = tiny_miss_tensors(cfg, rank=rank, seed=seed, std=std)
    tensors = {
        name: RawTensor("bfloat16", tuple(t.shape), t.contiguous().view(torch.uint16).numpy().tobytes())
        for name, t in d_tensors.items()
    }
    in_features = {name: miss_in_out(cfg, name.split(".", 2)[2][: -len(".D")])[0] for name in d_tensors}
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    buf = io.BytesIO()  # written whole, then renamed into place (atomic, like save_tensors)
    write_miss_file(
        buf,
        tensors,
        rank=rank,
        alpha=alpha,
        base_fingerprint=base_fingerprint or sha256_file(base_path),
        dtype="bfloat16",
        in_features=in_features,
    )
    atomic_write_bytes(p, buf.getvalue())
    return p


def make_tiny_set(directory: str | Path, *, seed: int = 0, **base_kwargs: object) -> TinySet:
    """A tiny base plus State and MiSS files in ``directory``."""
    d = Path(directory)
    base = make_tiny_base(d / "rwkv7-tiny.pth", seed=seed, **base_kwargs)  # type: ignore[arg-type]
    state = make_tiny_state(d / "state.pth", base, seed=seed + 1)
    miss = make_tiny_miss(d / "adapter-final.pth", base, seed=seed + 2)
    return TinySet(base, state, miss)
