"""MiSS adapters: the embedded manifest, its ``content_version``, the server's refusal rules.

A MiSS package (FORMATS §4) is a torch zip written by rwkv_lightning_cuda with one tensor
``blocks.L.<target>.D`` of shape [out, rank] per target and an extra entry ``archive/miss.json``.
``content_version`` = sha256(JsonCpp-compact(manifest without content_version) || D bytes of every
target, little-endian 16-bit, in ``targets`` order).

:func:`check_manifest` applies every refusal rule of the server loader and returns findings;
:func:`write_miss_file` writes a package exactly like the trainer does (used by the demo and the
tiny-model factory).
"""

from __future__ import annotations

import hashlib
import math
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, BinaryIO

from . import jsoncpp
from .arch import miss_target_shape
from .jsonload import is_finite_number
from .rules import Finding, finding
from .textsafe import clip

MISS_TARGETS = (
    "att.receptance.weight",
    "att.key.weight",
    "att.value.weight",
    "att.output.weight",
    "ffn.key.weight",
    "ffn.value.weight",
)
MANIFEST_MAX_BYTES = 8 * 2**20
MISS_DTYPES = ("bfloat16", "float16")
_HEX64 = re.compile(r"^[0-9a-f]{64}$")
_FIXED = {"format_version": 1, "method": "miss", "layout": "modulo_rank_zero_pad", "kind": "inference_adapter"}


def tensor_name(layer: int, target: str) -> str:
    """Name of the D tensor of ``target`` in ``layer`` inside the package."""
    return f"blocks.{layer}.{target}.D"


def content_version(manifest: Mapping[str, Any], d_chunks: Iterable[bytes | memoryview]) -> str:
    """The server's content version of a manifest and its D bytes (in ``targets`` order)."""
    body = {k: v for k, v in manifest.items() if k != "content_version"}
    h = hashlib.sha256(jsoncpp.dumps_bytes(body))
    for chunk in d_chunks:
        h.update(chunk)
    return h.hexdigest()


@dataclass(frozen=True)
class TargetSpec:
    """One usable target of a manifest (only built when the target passed the structural rules)."""

    layer: int
    target: str
    tensor: str
    in_features: int
    shape: tuple[int, int]


def check_manifest(manifest: Any, path: str) -> tuple[list[Finding], list[TargetSpec]]:
    """Structural refusal rules of the server on a parsed manifest (no tensors, no base needed).

    Returns the findings and the targets that can be checked further, in manifest order.
    """
    out: list[Finding] = []
    if not isinstance(manifest, dict):
        return [finding("MIS003", path, "miss.json is not a JSON object")], []
    for key, want in _FIXED.items():
        got = manifest.get(key)
        if got != want or type(got) is not type(want):
            out.append(finding("MIS003", path, f"miss.json {key} is {got!r}, the server requires {want!r}"))
    dtype = manifest.get("dtype")
    if dtype not in MISS_DTYPES:
        out.append(finding("MIS003", path, f"miss.json dtype is {dtype!r}, expected 'bfloat16' or 'float16'"))
    rank: Any = manifest.get("rank")  # any JSON value
    rank_ok = isinstance(rank, int) and not isinstance(rank, bool) and 1 <= rank <= 1024
    if not rank_ok:
        out.append(finding("MIS004", path, f"miss.json rank is {rank!r}, the server accepts integers 1…1024"))
    for key in ("alpha", "scale"):
        if not is_finite_number(manifest.get(key)):
            out.append(finding("MIS005", path, f"miss.json {key} is {manifest.get(key)!r}, not a finite number"))
    if rank_ok and is_finite_number(manifest.get("alpha")) and is_finite_number(manifest.get("scale")):
        expected = float(manifest["alpha"]) / rank
        if not math.isclose(float(manifest["scale"]), expected, rel_tol=1e-6, abs_tol=1e-12):
            out.append(
                finding("MIS017", path, f"miss.json scale is {manifest['scale']!r} but alpha/rank is {expected!r}")
            )
    for key in ("base_fingerprint", "content_version"):
        value = manifest.get(key)
        if not (isinstance(value, str) and _HEX64.match(value)):
            out.append(finding("MIS006", path, f"miss.json {key} is {_short(value)}, not 64 lower-case hex"))
    targets = manifest.get("targets")
    specs: list[TargetSpec] = []
    if not isinstance(targets, list) or not targets:
        out.append(finding("MIS007", path, "miss.json targets is empty or not a list"))
        return out, specs
    seen: set[tuple[int, str]] = set()
    for i, t in enumerate(targets):
        where = f"targets[{i}]"
        if not isinstance(t, dict):
            out.append(finding("MIS003", path, f"miss.json {where} is not an object"))
            continue
        layer, target = t.get("layer"), t.get("target")
        if not (isinstance(layer, int) and not isinstance(layer, bool) and layer >= 0):
            out.append(finding("MIS003", path, f"miss.json {where}.layer is {layer!r}, not an integer ≥ 0"))
            continue
        if target not in MISS_TARGETS:
            out.append(finding("MIS016", path, f"miss.json {where}.target is {_short(target)}"))
            continue
        if (layer, target) in seen:
            out.append(finding("MIS007", path, f"miss.json lists layer {layer} {target} twice"))
            continue
        seen.add((layer, target))
        stem = tensor_name(layer, target)[: -len(".D")]
        if t.get("name") != stem:
            out.append(
                finding(
                    "MIS003",
                    path,
                    f"miss.json {where}.name is {_short(t.get('name'))}, its layer and target say {stem!r}",
                )
            )
        shape = t.get("shape")
        in_features = t.get("in_features")
        if not (isinstance(shape, list) and len(shape) == 2 and all(isinstance(s, int) and s >= 1 for s in shape)):
            out.append(finding("MIS003", path, f"miss.json {where}.shape is {_short(shape)}, not [out, rank]"))
            continue
        if not (isinstance(in_features, int) and in_features >= 1):
            out.append(finding("MIS003", path, f"miss.json {where}.in_features is {in_features!r}"))
            continue
        if rank_ok and shape[1] != rank:
            out.append(
                finding("MIS008", path, f"miss.json {where}.shape {shape} has rank {shape[1]}, manifest rank is {rank}")
            )
            continue
        specs.append(TargetSpec(layer, target, tensor_name(layer, target), in_features, (shape[0], shape[1])))
    if not out:  # what the checks above do not cover, schemas/miss.schema.json has the last word
        from .schemas import schema_errors

        out += [finding("MIS003", path, f"miss.json {where}: {msg}") for where, msg in schema_errors("miss", manifest)]
    return out, specs


def check_against_base(specs: list[TargetSpec], arch: Mapping[str, Any], path: str) -> list[Finding]:
    """Target layers, out sizes and ``in_features`` must fit the base architecture."""
    out: list[Finding] = []
    n_layer = int(arch["n_layer"])
    for s in specs:
        if s.layer >= n_layer:
            out.append(finding("MIS014", path, f"target {s.tensor}: layer {s.layer} but the base has {n_layer} layers"))
            continue
        want_out, want_in = miss_target_shape(arch, s.target)
        if s.shape[0] != want_out or s.in_features != want_in:
            out.append(
                finding(
                    "MIS014",
                    path,
                    f"target {s.tensor}: out {s.shape[0]}, in_features {s.in_features}; "
                    f"the base needs out {want_out}, in_features {want_in}",
                )
            )
    return out


def scan_values(data: bytes | memoryview, dtype: str) -> tuple[int, float | None]:
    """Count values that are non-finite or beyond ±65504 in 16-bit data; return (count, first bad value)."""
    import numpy as np

    u = np.frombuffer(data, dtype="<u2")
    if dtype == "bfloat16":
        # |x| > 65504 for bf16 means (bits & 0x7fff) > 0x477f (0x477f = 65280, next is 65536); Inf/NaN included.
        bad = (u & 0x7FFF) > 0x477F
    elif dtype == "float16":
        bad = (u & 0x7C00) == 0x7C00  # every finite fp16 is within ±65504
    else:
        raise ValueError(dtype)
    count = int(np.count_nonzero(bad))
    if not count:
        return 0, None
    first = int(u[int(np.argmax(bad))])
    return count, decode_16bit(first, dtype)


def decode_16bit(bits: int, dtype: str) -> float:
    """Value of one bf16/fp16 bit pattern (for messages)."""
    import struct

    if dtype == "bfloat16":
        return struct.unpack("<f", struct.pack("<I", bits << 16))[0]
    return struct.unpack("<e", struct.pack("<H", bits))[0]


def _short(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


# --- writing ------------------------------------------------------------------------------------


def build_manifest(
    shapes: Mapping[str, tuple[int, ...]],
    *,
    rank: int,
    alpha: float,
    base_fingerprint: str,
    dtype: str = "bfloat16",
    in_features: Mapping[str, int] | None = None,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A manifest (without content_version) for D tensors named ``blocks.L.<target>.D``.

    ``in_features`` maps tensor names to the input width of their base linear layer; it must be
    given for every tensor (the D shape [out, rank] does not determine it).
    """
    if dtype not in MISS_DTYPES:
        raise ValueError(f"dtype must be one of {MISS_DTYPES}, got {dtype!r}")
    targets = []
    for name, shape in shapes.items():
        m = re.fullmatch(r"blocks\.(\d+)\.(.+)\.D", name)
        if not m or m.group(2) not in MISS_TARGETS:
            raise ValueError(f"{clip(name)!r} is not a MiSS tensor name blocks.L.<target>.D")
        if len(shape) != 2 or shape[1] != rank:
            raise ValueError(f"{name}: shape {tuple(shape)} is not [out, {rank}]")
        if in_features is None or name not in in_features:
            raise ValueError(f"in_features of {name} not given")
        targets.append(
            {
                "name": f"blocks.{m.group(1)}.{m.group(2)}",
                "layer": int(m.group(1)),
                "target": m.group(2),
                "in_features": int(in_features[name]),
                "shape": [int(shape[0]), int(shape[1])],
            }
        )
    manifest: dict[str, Any] = {
        **_FIXED,
        "dtype": dtype,
        "rank": int(rank),
        "alpha": alpha,
        "scale": alpha / rank,
        "base_fingerprint": base_fingerprint,
        "targets": targets,
    }
    if extra:
        manifest.update(extra)
    return manifest


def write_miss_file(
    dest: str | os.PathLike[str] | BinaryIO,
    tensors: Mapping[str, Any],
    *,
    rank: int,
    alpha: float,
    base_fingerprint: str,
    dtype: str = "bfloat16",
    in_features: Mapping[str, int] | None = None,
    arch: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Write a single-file MiSS package like rwkv_lightning_cuda does; return its manifest.

    ``tensors`` maps ``blocks.L.<target>.D`` to :class:`rwkv_registry.pthwrite.RawTensor` of
    ``dtype`` and shape [out, rank]. ``in_features`` per tensor, or ``arch`` (a base architecture
    dict) to derive them.
    """
    from .pthwrite import write_pth

    shapes = {name: tuple(t.shape) for name, t in tensors.items()}
    if in_features is None:
        if arch is None:
            raise ValueError("give in_features or arch")
        in_features = {}
        for name in shapes:
            target = name.split(".", 2)[2][: -len(".D")]
            in_features[name] = miss_target_shape(arch, target)[1]
    for name, t in tensors.items():
        if t.dtype != dtype:
            raise ValueError(f"{name}: dtype {t.dtype} differs from package dtype {dtype}")
    manifest = build_manifest(
        shapes, rank=rank, alpha=alpha, base_fingerprint=base_fingerprint, dtype=dtype, in_features=in_features
    )
    ordered = {t["name"] + ".D": tensors[t["name"] + ".D"] for t in manifest["targets"]}
    manifest["content_version"] = content_version(manifest, (bytes(t.data) for t in ordered.values()))
    write_pth(dest, ordered, layout="lightning", extra_entries={"miss.json": jsoncpp.dumps_bytes(manifest)})
    return manifest
