"""The State rules (STA001–STA007): a State file's tensors, their names, dtype, shape and values against its base."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from rwkv_registry.core.rules import E, Finding, Rule, Rulebook, W
from rwkv_registry.core.textsafe import clip
from rwkv_registry.index.arch import state_shape

STATE_UPLOAD_MAX_BYTES = 512 * 1024 * 1024  # UploadedStateStore::upload: "exceeds the 512 MiB limit"
_STATE_NAME = re.compile(r"^blocks\.(\d+)\.att\.time_state$")
_WHOLE_MODEL = frozenset({"emb.weight", "head.weight"})
_SERVER_DTYPES = ("bfloat16", "float32")  # parse_pth_tensor_records: BFloat16Storage and FloatStorage only

RULES = Rulebook(
    Rule(
        "STA001",
        E,
        "State tensor names are not exactly blocks.0…L-1.att.time_state",
        "A State file holds one `blocks.N.att.time_state` per layer of its base (N = 0 … L-1, each once); "
        "re-export it from rwkv_state_tune for this base.",
    ),
    Rule(
        "STA002",
        E,
        "State tensor shape does not match the base",
        "Each tensor is [H, 64, 64] with H = n_embd / 64 of the base; the file was trained for another base.",
    ),
    Rule(
        "STA003",
        E,
        "State dtype is not bfloat16 or float32",
        "Convert the state to bfloat16 or float32 before publishing.",
    ),
    Rule(
        "STA004",
        E,
        "State holds non-finite values",
        "NaN or Inf in the state: training diverged; use an earlier checkpoint.",
    ),
    Rule(
        "STA005",
        E,
        "State file larger than the server's 512 MiB upload limit",
        "rwkv_lightning_cuda refuses a State upload over 512 MiB; a State of a released base is far smaller "
        "(7.2B bf16: 16 MiB): keep only the blocks.N.att.time_state tensors, in bfloat16 or float32.",
    ),
    Rule(
        "STA006",
        W,
        "State file holds tensors besides blocks.N.att.time_state",
        "The server ignores them, but RWKV-PEFT's merge_state.py copies every key of a State into the base; "
        "save only the blocks.N.att.time_state tensors.",
    ),
    Rule(
        "STA007",
        W,
        "State file in safetensors format",
        "rwkv_lightning_cuda's /v1/state/upload reads only torch .pth archives, and RWKV-PEFT loads States with "
        "torch.load; publish the State as a .pth written by torch.save or the trainer.",
    ),
)
finding = RULES.finding


def time_state_name(name: str) -> bool:
    """Whether rwkv_lightning_cuda counts ``name`` as a State tensor: ``blocks.`` + something + ``.att.time_state``
    (Alic-Li/rwkv_lightning_cuda ``src/server/rwkv_uploaded_state_store.cpp``, ``is_time_state_tensor``). Whether
    the something is a layer number is the State rules' question (STA001), as it is the server's next one."""
    return len(name) > 22 and name.startswith("blocks.") and name.endswith(".att.time_state")


def holds_a_state(names: Iterable[str]) -> bool:
    """A file without a MiSS manifest is a State when it holds a time-state tensor (:func:`time_state_name`), as
    the server's upload check has it (``validate_state_pth``: the other tensors are skipped), unless it is a whole
    model (``emb.weight`` and ``head.weight``: a base, or a State merged into one) or holds MiSS ``.D`` tensors
    (an adapter without its manifest, MIS001)."""
    names = list(names)
    if not any(time_state_name(n) for n in names):
        return False
    return not (set(names) >= _WHOLE_MODEL or any(n.endswith(".D") for n in names))


def stray_state_finding(path: str, method: str | None, names: Sequence[str]) -> Finding | None:
    """STA001 for a file that is neither method (``method`` None) but holds ``blocks.N.att.time_state`` tensors
    beside others that make it no State (:func:`holds_a_state`: a whole model, or MiSS ``.D`` tensors), naming up
    to three of the others; else None."""
    others = [n for n in names if not _STATE_NAME.match(n)]
    if method is not None or not others or len(others) == len(names):
        return None
    shown = [clip(n) for n in sorted(set(others), key=lambda n: (len(n), n))[:3]]  # a 20 MB name: 200 characters
    return finding("STA001", path, f"{len(names) - len(others)} state tensors and others besides: unexpected {shown}")


def state_findings(
    path: str, size: int, kind: str, tensors: Sequence[tuple[str, str, Sequence[int]]], arch: dict[str, Any] | None
) -> list[Finding]:
    """The State rules on one State file of ``size`` bytes and ``kind`` ("pth", "safetensors") holding ``tensors``
    (name, dtype, shape), against its base's architecture ``arch`` (None: the base is unknown, only the file's
    own rules), as rwkv_lightning_cuda applies them (Alic-Li/rwkv_lightning_cuda): on upload
    (``src/server/rwkv_uploaded_state_store.cpp``, ``UploadedStateStore::upload`` and ``validate_state_pth``) and
    when a request loads the State on the running base (``src/backend/rwkv7_fast_v4.cu``,
    ``ModelBackend::load_state_from_pth``); docs/state-files.md lists each check beside ours. STA004 (the values)
    is read with the bytes, by the facts (:mod:`rwkv_registry.engine.facts`)."""
    out: list[Finding] = []
    if size > STATE_UPLOAD_MAX_BYTES:  # upload: "uploaded state file exceeds the 512 MiB limit"
        out.append(
            finding("STA005", path, f"{size} bytes; the server refuses State uploads over {STATE_UPLOAD_MAX_BYTES}")
        )
    if kind == "safetensors":  # upload: PthArchive::open, "invalid state PTH"
        out.append(finding("STA007", path, "a safetensors file: the server's State upload opens torch .pth archives"))
    states = [t for t in tensors if time_state_name(t[0])]
    others = [t for t in tensors if not time_state_name(t[0])]  # validate_state_pth skips them
    if others:
        shown = sorted({t[0] for t in others}, key=lambda n: (len(n), n))[:3]
        out.append(finding("STA006", path, f"{len(others)} tensor(s) besides the time states: {shown}"))
    for name, dtype, _shape in others:
        if dtype not in _SERVER_DTYPES:
            out.append(finding("STA003", path, f"{name} is {dtype}: the server's reader takes bfloat16 and float32"))
    names = [t[0] for t in states]
    if len(set(names)) != len(names):  # upload: "duplicate state tensor"
        out.append(finding("STA001", path, "a tensor name appears twice"))
    for name, dtype, _shape in states:  # upload and load: "invalid shape or dtype for state tensor"
        if dtype not in _SERVER_DTYPES:
            out.append(finding("STA003", path, f"{clip(name)} is {dtype}"))
    if not isinstance(arch, dict):
        return out
    n_layer = arch.get("n_layer")
    want = (  # at most 3 names more than the file holds (the message shows 3): bounded, n_layer may be 2**31
        [f"blocks.{i}.att.time_state" for i in range(min(n_layer, len(names) + 3))] if isinstance(n_layer, int) else []
    )
    if sorted(names) != sorted(want):
        missing = sorted(set(want) - set(names), key=len)[:3]
        extra = [clip(n) for n in sorted(set(names) - set(want), key=len)[:3]]  # a 20 MB name: 200 characters
        out.append(
            finding(
                "STA001",
                path,
                f"{len(names)} state tensors for a {n_layer}-layer base"
                + (f"; missing {missing}" if missing else "")
                + (f"; unexpected {extra}" if extra else ""),
            )
        )
    try:
        shape = list(state_shape(arch))
    except (KeyError, TypeError, ValueError):
        return out
    for name, _dtype, got in states:  # load: the shape must be [heads, head_size, head_size] of the base
        if list(got) != shape:
            out.append(finding("STA002", path, f"{clip(name)} has shape {list(got)}, the base needs {shape} [H, V, K]"))
            break
    return out
