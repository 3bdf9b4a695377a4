"""Reading weight files with ``torch.load(weights_only=True, mmap=True)``, and base fingerprints.

``mmap=True`` maps the file instead of reading it: a 14 GB bf16 base loaded as bf16 on CPU
shares the page cache and is never copied. Tensors are converted one at a time, so at most one
converted tensor exists beside the mapping while loading to another dtype or device.
"""

from __future__ import annotations

import hashlib
import pickle
import re
import zipfile
from pathlib import Path

import torch

from rwkv_registry.model.errors import WeightsFormatError

_LFS_MAGIC = b"version https://git-lfs.github.com/spec/"
_CHUNK = 8 << 20


def sha256_file(path: str | Path) -> str:
    """The sha256 of a whole file (hex), read in 8 MiB chunks: the base fingerprint of FORMATS §4."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            h.update(chunk)
    return h.hexdigest()


def torch_load_dict(path: str | Path, *, what: str = "checkpoint", mmap: bool = True) -> dict[str, object]:
    """``torch.load`` a flat dict of tensors safely; every failure becomes :class:`WeightsFormatError`.

    ``what`` names the kind of file in messages ("base checkpoint", "State file", …).
    """
    p = Path(path)
    if p.is_dir():
        raise WeightsFormatError(f"{p}: is a directory, not a {what}", hint="Give the .pth file itself.", path=str(p))
    if not p.is_file():
        raise WeightsFormatError(f"{p}: no such {what}", hint="Check the path.", path=str(p))
    with open(p, "rb") as f:
        head = f.read(len(_LFS_MAGIC))
    if head == _LFS_MAGIC:
        raise WeightsFormatError(
            f"{p}: this {what} is a Git LFS pointer, not the weights",
            hint="Fetch the real file (git lfs pull, or download it from the Hub).",
            path=str(p),
        )
    if not zipfile.is_zipfile(p):  # torch's own message would be about mmap and serialization flags
        raise WeightsFormatError(
            f"{p}: this {what} is not a PyTorch zip checkpoint (a legacy pickle, another format, or a damaged file)",
            hint="Re-save it with torch.save (PyTorch ≥ 1.6 writes the zip format), or re-download it.",
            path=str(p),
        )
    try:
        obj = torch.load(p, map_location="cpu", weights_only=True, mmap=mmap)
    except pickle.UnpicklingError as exc:  # weights_only refused something: never retried without it
        # torch names the refused global: "…unsupported GLOBAL posix.system…" (wording varies by release)
        m = re.search(r"[Uu]nsupported (?:global:? )?GLOBAL (\S+)|[Uu]nsupported operand \S+", str(exc))
        found = f": {m.group(1) or m.group(0)}" if m else ""
        raise WeightsFormatError(
            f"{p}: this {what} holds pickled objects other than tensors{found}; refused, never run",
            hint="Use a checkpoint of plain tensors (torch.save of a dict of tensors); never load this one with "
            "weights_only=False unless you trust whoever made it.",
            path=str(p),
        ) from None
    except Exception as exc:  # torch raises many exception types for a bad archive
        first = (str(exc).splitlines() or [""])[0][:200]
        raise WeightsFormatError(
            f"{p}: cannot read this {what} as a PyTorch checkpoint ({type(exc).__name__}: {first})",
            hint="Check that the file is a complete .pth zip archive (not truncated, not a legacy pickle).",
            path=str(p),
        ) from None
    if not isinstance(obj, dict) or not all(isinstance(k, str) for k in obj):
        raise WeightsFormatError(
            f"{p}: the {what} holds a {type(obj).__name__}, expected a flat dict of named tensors",
            hint="Save the weights as a flat dict {name: tensor}.",
            path=str(p),
        )
    return obj
