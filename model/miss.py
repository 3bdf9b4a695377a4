"""MiSS adapters (FORMATS §4): reading a package and the two ways to apply it.

For a linear map with input width ``K``, rank ``r`` and ``D`` of shape ``[out, r]``::

    S[t, j] = sum(X[t, k] for k % r == j)        # last partial block zero padded
    Y       = base(X) + scale * S @ D^T           # scale = alpha / rank

- **on the fly** (:class:`MissLinear`): wraps the base ``nn.Linear`` and adds the term above;
- **merged**: ``W += scale * D @ P`` with ``P`` the ``[r, K]`` 0/1 matrix ``P[j, k] = (k % r == j)``,
  i.e. column ``k`` of ``W`` gains ``scale * D[:, k % r]``. The original weight is kept aside so
  that removing the adapter restores it bit for bit.

A package is either one torch zip archive with tensors ``blocks.L.<target>.D`` and the extra
entry ``archive/miss.json`` (rwkv_lightning_cuda; the server looks up that exact name), or a legacy folder with
``adapter.json`` and ``adapter.pth``. ``targets[].name`` is the tensor's name, with its ``.D`` (adapter.cpp
``tensor_name``; the server refuses any other: "adapter target name mismatch"), and so is it here.
Tensors are read with ``torch.load(weights_only=True)`` (no pickled code runs).
"""

from __future__ import annotations

import json
import re
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import nn

from rwkv_registry.checks.miss import MANIFEST_ENTRY, MISS_TARGETS, TENSOR_SOURCES, tensor_name
from rwkv_registry.formats.jsonload import is_finite_number
from rwkv_registry.kernels.miss import MissTerm, miss_term_
from rwkv_registry.model.errors import WeightsFormatError
from rwkv_registry.model.loading import torch_load_dict
from rwkv_registry.model.wkv import elementwise_backend

# The six targets (the registry's list) and the (sub-module, linear) each names inside a block:
# "att.key.weight" -> ("att", "key").
TARGET_MODULES: dict[str, tuple[str, str]] = {t: (t.split(".")[0], t.split(".")[1]) for t in MISS_TARGETS}
_NAME_RE = re.compile(r"^blocks\.(\d+)\.(.+?)(?:\.D)?$")
_HEX64 = re.compile(r"^[0-9a-f]{64}$")
_FLOAT_DTYPES = (torch.bfloat16, torch.float16, torch.float32)


@dataclass(frozen=True)
class MissTarget:
    """One adapted linear map."""

    layer: int
    target: str  # one of TARGET_MODULES, e.g. "att.key.weight"
    in_features: int  # K
    D: torch.Tensor = field(repr=False)  # [out, rank], dtype as stored

    @property
    def name(self) -> str:
        """The tensor name in the package: ``blocks.L.<target>.D``."""
        return tensor_name(self.layer, self.target)


@dataclass(frozen=True)
class MissAdapter:
    """A MiSS package as read from disk."""

    rank: int
    alpha: float
    scale: float
    base_fingerprint: str  # sha256 of the base file it was trained on
    content_version: str
    targets: tuple[MissTarget, ...]
    manifest: dict[str, Any] = field(repr=False)
    path: str = ""

    @classmethod
    def from_tensors(
        cls,
        tensors: dict[str, torch.Tensor],
        in_features: dict[str, int],
        *,
        rank: int,
        alpha: float,
        base_fingerprint: str = "0" * 64,
    ) -> MissAdapter:
        """An in-memory adapter from ``{"blocks.L.<target>.D": D}`` (tests, training loops)."""
        targets = []
        for name, D in tensors.items():
            m = _NAME_RE.match(name)
            if not m or m.group(2) not in TARGET_MODULES or D.dim() != 2 or D.shape[1] != rank:
                raise ValueError(f"{name!r} {list(D.shape)} is not a MiSS tensor blocks.L.<target>.D [out, {rank}]")
            targets.append(MissTarget(int(m.group(1)), m.group(2), int(in_features[name]), D))
        manifest = {"method": "miss", "layout": "modulo_rank_zero_pad", "rank": rank, "alpha": alpha}
        return cls(rank, float(alpha), alpha / rank, base_fingerprint, "", tuple(targets), manifest)


def add_miss_term_(out: torch.Tensor, x: torch.Tensor, D: torch.Tensor, scale: float) -> torch.Tensor:
    """``out += scale * S @ D^T`` in place, for ``x`` ``[..., K]``, ``D`` ``[out, r]`` and ``out``
    ``[..., out]`` contiguous (``x``'s leading dimensions, one dtype); ``S[..., j]`` sums
    ``x[..., k]`` over ``k % r == j`` (``x @ P^T``). Returns ``out``.

    Where the model runs its kernels (:func:`~rwkv_registry.model.wkv.elementwise_backend`), small
    inputs (decode) take one fused Triton kernel (:func:`rwkv_registry.kernels.miss.miss_term_`);
    otherwise two PyTorch kernels: the block sum (accumulated in fp32 inside the reduction) and one
    ``addmm_`` that scales and adds in a single pass. Inputs that need gradients take the PyTorch
    path, differentiable in ``x`` and ``D``.
    """
    return miss_term_(out, x, D, scale, backend=elementwise_backend(out))


def linear_open(lin: nn.Module, x: torch.Tensor, backend: str) -> tuple[torch.Tensor, MissTerm | None]:
    """``(lin(x), None)``; but for an adapter on the fly (:class:`MissLinear`) where the fused
    kernels run (``backend`` not "reference"), ``(base(x), (x, D, scale))``: the MiSS term is left
    for the kernel that consumes the output to add (the gates' grouped term, relu², add +
    LayerNorm), so it costs no launch of its own. The consumer must add it on every path."""
    if isinstance(lin, MissLinear) and backend != "reference":
        return lin.base(x), (x, lin.D, lin.scale)
    return lin(x), None


def merged_weight(W: torch.Tensor, D: torch.Tensor, scale: float) -> torch.Tensor:
    """``W + scale * D @ P`` computed in fp32 and returned in ``W``'s dtype (a new tensor)."""
    K = W.shape[1]
    cols = torch.arange(K, device=W.device) % D.shape[1]  # k % r
    return (W.float() + scale * D.to(W.device).float()[:, cols]).to(W.dtype)


class MissLinear(nn.Module):
    """A base ``nn.Linear`` plus the MiSS term, computed on the fly. ``D`` may be trained."""

    def __init__(self, base: nn.Linear, D: torch.Tensor, scale: float) -> None:
        super().__init__()
        if D.dim() != 2 or D.shape[0] != base.out_features:
            raise ValueError(f"MiSS D shape {list(D.shape)} does not fit linear [out={base.out_features}, rank]")
        self.base = base
        self.D = nn.Parameter(D.to(device=base.weight.device, dtype=base.weight.dtype), requires_grad=False)
        self.scale = float(scale)

    @property
    def in_features(self) -> int:
        """Input width of the wrapped map."""
        return self.base.in_features

    @property
    def out_features(self) -> int:
        """Output width of the wrapped map."""
        return self.base.out_features

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``base(x) + scale * S(x) @ D^T`` (the term added into the base output in place)."""
        return add_miss_term_(self.base(x), x, self.D, self.scale)


def load_miss(path: str | Path) -> MissAdapter:
    """Read a MiSS package: a single ``.pth`` with ``miss.json`` inside, or a legacy folder.

    Checks what the model needs (method, layout, rank, scale, fingerprint form, one tensor of
    shape ``[out, rank]`` per target, finite values). The registry validator checks the rest.
    Raises :class:`WeightsFormatError` naming the file and the problem.
    """
    p = Path(path)
    if p.is_dir():
        manifest_path, tensors_path = p / "adapter.json", p / "adapter.pth"
        if not manifest_path.is_file() or not tensors_path.is_file():
            raise WeightsFormatError(
                f"{p}: a legacy MiSS folder needs adapter.json and adapter.pth",
                hint="Point to the adapter-final.pth package or to a folder holding both files.",
                path=str(p),
            )
        raw = manifest_path.read_bytes()
        tensors = torch_load_dict(tensors_path, what="MiSS tensor file", mmap=False)
    else:
        raw = _read_manifest_entry(p)
        tensors = torch_load_dict(p, what="MiSS package", mmap=False)
    try:
        manifest = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise WeightsFormatError(
            f"{p}: the MiSS manifest is not valid JSON ({exc})",
            hint="Re-export the adapter with rwkv_miss_tune.",
            path=str(p),
        ) from None
    return _adapter_from(p, manifest, tensors)


def _read_manifest_entry(p: Path) -> bytes:
    if not p.is_file():
        raise WeightsFormatError(f"{p}: no such MiSS package", hint="Check the path.", path=str(p))
    try:
        with zipfile.ZipFile(p) as zf:
            names = [n for n in zf.namelist() if n == MANIFEST_ENTRY]  # find_entry("archive/miss.json"): exact
            if len(names) != 1:
                raise WeightsFormatError(
                    f"{p}: no '{MANIFEST_ENTRY}' entry (the only name the server reads); this is not a single-file "
                    "MiSS package",
                    hint="Use the adapter-final.pth written by rwkv_miss_tune (it embeds archive/miss.json).",
                    path=str(p),
                )
            return zf.read(names[0])
    except zipfile.BadZipFile:
        raise WeightsFormatError(
            f"{p}: not a zip archive; a MiSS package is a torch zip with an embedded miss.json",
            hint="Check the file is complete (not a Git LFS pointer or a partial download).",
            path=str(p),
        ) from None


def _adapter_from(p: Path, m: Any, tensors: dict[str, object]) -> MissAdapter:
    def bad(problem: str) -> WeightsFormatError:
        return WeightsFormatError(
            f"{p}: MiSS manifest: {problem}",
            hint="Re-export the adapter with rwkv_miss_tune (v1.8.1 or later).",
            path=str(p),
        )

    if not isinstance(m, dict):
        raise bad("the top level is not an object")
    source = m.get("tensor_source", "D")
    if source == "master":
        raise WeightsFormatError(
            f'{p}: a rwkv_miss_tune training checkpoint (tensor_source "master"), not an inference adapter',
            hint="Load the adapter-final.pth the trainer wrote when training ended.",
            path=str(p),
        )
    if not (isinstance(source, str) and source in TENSOR_SOURCES):
        raise bad(f'tensor_source is {source!r}, expected "D" (the server refuses any other)')
    for key, want in (("method", "miss"), ("layout", "modulo_rank_zero_pad")):
        if m.get(key) != want:
            raise bad(f"{key} is {m.get(key)!r}, expected {want!r}")
    rank = m.get("rank")
    if not isinstance(rank, int) or isinstance(rank, bool) or not 1 <= rank <= 1024:
        raise bad(f"rank is {rank!r}, expected an integer in 1..1024")
    alpha = m.get("alpha")
    if not is_finite_number(alpha):
        raise bad(f"alpha is {alpha!r}, expected a finite number")
    scale = m.get("scale", alpha / rank)
    if not is_finite_number(scale):
        raise bad(f"scale is {scale!r}, expected a finite number")
    fp = m.get("base_fingerprint")
    if not isinstance(fp, str) or not _HEX64.match(fp):
        raise bad(f"base_fingerprint is {fp!r}, expected 64 lower-case hex digits (sha256 of the base file)")
    entries = m.get("targets")
    if not isinstance(entries, list) or not entries:
        raise bad("targets is missing or empty")
    seen: set[tuple[int, str]] = set()
    targets: list[MissTarget] = []
    for e in entries:
        if not isinstance(e, dict):
            raise bad(f"a targets item is not an object: {e!r}")
        layer, target = e.get("layer"), e.get("target")
        if not isinstance(layer, int) or not isinstance(target, str):  # older manifests: from the name
            mt = _NAME_RE.match(str(e.get("name", "")))
            layer, target = (int(mt.group(1)), mt.group(2)) if mt else (None, None)
        if not isinstance(layer, int) or layer < 0 or target not in TARGET_MODULES:
            raise bad(f"target {e.get('name')!r}: layer/target not one of {sorted(TARGET_MODULES)} in a block")
        name = tensor_name(layer, target)
        if "name" in e and e["name"] != name:
            raise bad(f"target name {e['name']!r}: its layer and target say {name!r} (the server refuses it)")
        if (layer, target) in seen:
            raise bad(f"target {name!r} appears twice")
        seen.add((layer, target))
        t = tensors.get(name)
        if not isinstance(t, torch.Tensor):
            raise bad(f"tensor {name!r} listed in targets is missing from the archive")
        in_features = e.get("in_features")
        if not isinstance(in_features, int) or in_features < 1:
            raise bad(f"{name}: in_features is {in_features!r}, expected a positive integer")
        if t.dim() != 2 or t.shape[1] != rank or t.dtype not in _FLOAT_DTYPES:
            raise bad(f"{name}: tensor is {t.dtype} {list(t.shape)}, expected [out, rank={rank}] in bf16, fp16 or fp32")
        if not bool(torch.isfinite(t).all()):
            raise bad(f"{name}: tensor has non-finite values")
        targets.append(MissTarget(layer, target, in_features, t))
    extra = sorted(set(tensors) - {t.name for t in targets})
    if extra:
        raise bad(f"tensors not listed in targets: {extra[:5]}")
    return MissAdapter(
        rank=rank,
        alpha=float(alpha),
        scale=float(scale),
        base_fingerprint=fp,
        content_version=str(m.get("content_version", "")),
        targets=tuple(targets),
        manifest=m,
        path=str(p),
    )
