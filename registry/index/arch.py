"""RWKV-7 (x070, "G1") architecture read from tensor names and shapes, never assumed (FORMATS §2).

``architecture_from_shapes({"emb.weight": (65536, 4096), ...})`` returns the ``architecture``
object of a base in index.json. Only shapes are needed, so a multi-GB base is described from the
few hundred KB of its pickle.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from rwkv_registry.core.errors import UsageError

HEAD_SIZE = 64
_ARCH_EXAMPLE = "e.g. --arch n_layer=32,n_embd=4096,vocab_size=65536"

_BLOCK = re.compile(r"^blocks\.(\d+)\.")

ARCH_KEYS = ("n_layer", "n_embd", "head_size", "n_head", "vocab_size", "ffn_size")


def _shape(shapes: Mapping[str, tuple[int, ...]], name: str) -> tuple[int, int]:
    """The shape of a 2-D tensor of the base (every one read here is a matrix)."""
    try:
        shape = tuple(shapes[name])
    except KeyError:
        raise UsageError(
            f"not an RWKV-7 checkpoint: tensor {name!r} is missing",
            hint="add-base takes an RWKV-7 (x070) base .pth such as BlinkDL/rwkv7-g1's files.",
        ) from None
    if len(shape) != 2:
        raise UsageError(
            f"not an RWKV-7 checkpoint: tensor {name!r} has shape {list(shape)}, not 2 dimensions",
            hint="add-base takes an RWKV-7 (x070) base .pth such as BlinkDL/rwkv7-g1's files.",
        )
    return shape[0], shape[1]


def architecture_from_shapes(shapes: Mapping[str, tuple[int, ...]], dtype: str | None = None) -> dict[str, Any]:
    """Describe an RWKV-7 base from its tensor shapes; raise :class:`UsageError` if it is not one."""
    layers = {int(m.group(1)) for name in shapes if (m := _BLOCK.match(name))}
    if not layers:
        raise UsageError(
            "not an RWKV-7 checkpoint: no blocks.N.* tensors", hint="add-base takes an RWKV-7 (x070) base .pth."
        )
    n_layer = max(layers) + 1
    if layers != set(range(n_layer)):
        missing = sorted(set(range(n_layer)) - layers)
        raise UsageError(
            f"not an RWKV-7 checkpoint: blocks {missing} are missing",
            hint="The file is cut or partial: give the complete RWKV-7 (x070) base .pth as released.",
        )
    vocab, n_embd = _shape(shapes, "emb.weight")
    n_head, head_size = _shape(shapes, "blocks.0.att.r_k")
    if n_head * head_size != n_embd:
        raise UsageError(
            f"inconsistent checkpoint: r_k is [{n_head}, {head_size}] but n_embd is {n_embd}",
            hint="The file is not an RWKV-7 (x070) base as released: give the original base .pth.",
        )
    ffn_size = _shape(shapes, "blocks.0.ffn.key.weight")[0]
    lora = {
        "decay": _shape(shapes, "blocks.0.att.w1")[1],
        "aaa": _shape(shapes, "blocks.0.att.a1")[1],
        "mv": _shape(shapes, "blocks.1.att.v1")[1] if n_layer > 1 and "blocks.1.att.v1" in shapes else None,
        "gate": _shape(shapes, "blocks.0.att.g1")[1],
    }
    arch: dict[str, Any] = {
        "n_layer": n_layer,
        "n_embd": n_embd,
        "head_size": head_size,
        "n_head": n_head,
        "vocab_size": vocab,
        "ffn_size": ffn_size,
        "lora": lora,
    }
    if dtype is not None:
        arch["dtype"] = dtype
    return arch


def _arch_maxima() -> dict[str, int]:
    """The largest value of each --arch key that index.json's schema accepts (its ``maximum``s)."""
    from rwkv_registry.schemas import load_schema

    props = load_schema("index")["$defs"]["base"]["properties"]["architecture"]["properties"]
    tops = {k: int(props[k]["maximum"]) for k in ARCH_KEYS}
    tops.update({f"lora_{k}": int(v["maximum"]) for k, v in props["lora"]["properties"].items()})
    return tops


def parse_arch_option(text: str) -> dict[str, Any]:
    """Parse ``n_layer=32,n_embd=4096,...`` (the ``--arch`` option of add-base).

    Required: n_layer, n_embd, vocab_size. Defaults: head_size 64, n_head n_embd/64,
    ffn_size 4*n_embd, LoRA widths by RWKV-LM's width formula (decay, aaa, mv, gate keys may be
    given as lora_decay=…), dtype bfloat16.
    """
    values: dict[str, str] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        key, sep, val = part.partition("=")
        if not sep or not val:
            raise UsageError(f"--arch: {part!r} is not KEY=VALUE", hint=_ARCH_EXAMPLE)
        values[key.strip()] = val.strip()
    ints: dict[str, int] = {}
    for key, val in values.items():
        if key == "dtype":
            continue
        try:
            ints[key] = int(val)
        except ValueError:
            raise UsageError(f"--arch: {key}={val!r} is not an integer", hint=_ARCH_EXAMPLE) from None
    for key in ("n_layer", "n_embd", "vocab_size"):
        if key not in ints:
            raise UsageError(f"--arch needs {key}", hint=_ARCH_EXAMPLE)
    unknown = set(ints) - {*ARCH_KEYS, "lora_decay", "lora_aaa", "lora_mv", "lora_gate"}
    if unknown:
        raise UsageError(
            f"--arch: unknown keys {sorted(unknown)}",
            hint=f"Known keys: {', '.join(ARCH_KEYS)}, lora_decay, lora_aaa, lora_mv, lora_gate and dtype.",
        )
    tops = _arch_maxima()
    for key, n in ints.items():
        top = tops[key]
        if not 1 <= n <= top:
            raise UsageError(
                f"--arch: {key}={n} is out of range: give a whole number from 1 to {top}",
                hint=_ARCH_EXAMPLE,
            )
    c = ints["n_embd"]
    head_size = ints.get("head_size", HEAD_SIZE)
    if head_size != HEAD_SIZE:
        raise UsageError(
            f"--arch: head_size={head_size}: RWKV-7 heads are {HEAD_SIZE} wide (FORMATS §2: N = {HEAD_SIZE}, "
            f"H = n_embd / {HEAD_SIZE}; a State is [H, {HEAD_SIZE}, {HEAD_SIZE}] per layer, STA002)",
            hint=f"Drop head_size (it is {HEAD_SIZE}), and give an n_embd that is a multiple of {HEAD_SIZE}.",
        )
    dtype = values.get("dtype", "bfloat16")
    if dtype not in ("bfloat16", "float16", "float32"):
        raise UsageError(
            f"--arch: dtype {dtype!r} is not bfloat16, float16 or float32", hint="e.g. dtype=bfloat16 (the default)"
        )
    defaults = default_lora_widths(c)
    arch: dict[str, Any] = {
        "n_layer": ints["n_layer"],
        "n_embd": c,
        "head_size": head_size,
        "n_head": ints.get("n_head", c // head_size),
        "vocab_size": ints["vocab_size"],
        "ffn_size": ints.get("ffn_size", 4 * c),
        "lora": {k: ints.get(f"lora_{k}", defaults[k]) for k in ("decay", "aaa", "mv", "gate")},
        "dtype": dtype,
    }
    if c % head_size:
        raise UsageError(
            f"--arch: n_embd {c} is not a multiple of the head size {head_size}",
            hint=f"RWKV-7 has n_embd / {head_size} heads of {head_size}: give an n_embd that is a multiple of "
            f"{head_size}, e.g. n_embd={max(head_size, round(c / head_size) * head_size)}.",
        )
    if arch["n_head"] * head_size != c:
        raise UsageError(
            f"--arch: n_head {arch['n_head']} x head_size {head_size} != n_embd {c}",
            hint=f"n_head is n_embd / {head_size} = {c // head_size}: drop n_head (it defaults to that).",
        )
    if arch["ffn_size"] > tops["ffn_size"]:
        raise UsageError(
            f"--arch: ffn_size {arch['ffn_size']} (4 x n_embd unless given) is above {tops['ffn_size']}",
            hint="Give ffn_size, or a smaller n_embd.",
        )
    return arch


def default_lora_widths(n_embd: int) -> dict[str, int]:
    """LoRA widths of RWKV-LM's RWKV-7 training code for width ``n_embd`` (e.g. 4096 -> 128/128/96/480)."""

    def width(factor: float, power: float) -> int:
        return max(32, round(factor * (n_embd**power) / 32) * 32)

    return {"decay": width(1.8, 0.5), "aaa": width(1.8, 0.5), "mv": width(1.3, 0.5), "gate": width(0.6, 0.8)}


def miss_target_shape(arch: Mapping[str, Any], target: str) -> tuple[int, int]:
    """(out_features, in_features) of a MiSS target linear layer in a base of architecture ``arch``."""
    c, f = int(arch["n_embd"]), int(arch["ffn_size"])
    if target.startswith("att."):
        return c, c
    if target == "ffn.key.weight":
        return f, c
    if target == "ffn.value.weight":
        return c, f
    raise KeyError(target)


def state_shape(arch: Mapping[str, Any]) -> tuple[int, int, int]:
    """Shape [H, V, K] of one ``blocks.N.att.time_state`` tensor for a base of architecture ``arch``."""
    n = int(arch["head_size"])
    return int(arch["n_head"]), n, n
