"""State files byte for byte as the fp32 ``rwkv_state_tune`` writes them (test helper).

Written from Alic-Li/rwkv_lightning_cuda ``src/state_tuning/state_checkpoint.cpp`` (commit ae88abf17e97; the
same lines at 47e3744daf4b), read whole:

- ``save_state_checkpoint_pth_host(path, layers, heads, n, runtime)``: refuses an empty path or a non-positive
  dimension ("invalid checkpoint arguments") and a runtime buffer of the wrong length ("checkpoint element
  count mismatch"); the entries, in this order: ``archive/data.pkl`` (``make_pickle``), ``archive/byteorder``
  (``little``), ``archive/data/0`` … ``archive/data/L-1`` (layer ``l`` as fp32, the runtime ``[H, K, V]``
  lane transposed to PyTorch's ``[H, V, K]``: ``pth[(h*n + v)*n + k] = source[(h*n + k)*n + v]``, then
  ``memcpy``: little-endian on the machines it runs on), ``archive/version`` (``3\\n``); ``write_zip`` to
  ``path + ".tmp"``, a self-check with the inference parser, then ``rename`` onto ``path``;
- ``make_pickle(layers, heads, n)``: refuses ``heads*n*n`` beyond int32 ("state tensor is too large"); a plain
  dict of ``blocks.<l>.att.time_state`` -> ``_rebuild_tensor_v2`` of ``torch.FloatStorage`` key ``str(l)``,
  numel ``heads*n*n``, offset 0, shape ``(heads, n, n)``, stride ``(n*n, n, 1)``;
- ``write_zip``: see :mod:`lightning_prims` (stored, no data descriptor, no extra field, no alignment, no zip64).

File names, from ``src/state_tuning/rwkv_state_tune_main.cpp`` (commit 68daa7f958): ``checkpoint_name`` writes
``state-step-%08d.pth`` (``std::setw(8) << std::setfill('0') << step``) every ``--save-every`` steps, and
``main`` writes ``state-final.pth`` at the end; both through ``save_state_checkpoint_pth``, which copies the
device's fp32 ``time_state`` (runtime layout ``[L][H][K][V]``) to the host first.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Sequence
from pathlib import Path

from lightning_prims import pickle_dict, tensor_record, write_zip

INT32_MAX = 2**31 - 1


def checkpoint_name(step: int | None) -> str:
    """``state-step-%08d.pth`` for a periodic save, ``state-final.pth`` for the last one."""
    return "state-final.pth" if step is None else f"state-step-{step:08d}.pth"


def make_pickle(layers: int, heads: int, n: int) -> bytes:
    lane = heads * n * n
    if lane > INT32_MAX:
        raise ValueError("state tensor is too large")
    return pickle_dict(
        [
            tensor_record(f"blocks.{layer}.att.time_state", "FloatStorage", str(layer), (heads, n, n))
            for layer in range(layers)
        ]
    )


def state_tune_bytes(layers: int, heads: int, n: int, runtime: Sequence[float]) -> bytes:
    """The file ``save_state_checkpoint_pth_host`` writes for ``runtime`` (``layers*heads*n*n`` floats in the
    runtime layout ``[L][H][K][V]``)."""
    if layers <= 0 or heads <= 0 or n <= 0:
        raise ValueError("invalid checkpoint arguments")
    lane = heads * n * n
    if len(runtime) != layers * lane:
        raise ValueError("checkpoint element count mismatch")
    entries = [("archive/data.pkl", make_pickle(layers, heads, n)), ("archive/byteorder", b"little")]
    for layer in range(layers):
        source = runtime[layer * lane : (layer + 1) * lane]
        pth = [0.0] * lane
        for h in range(heads):
            for k in range(n):
                for v in range(n):
                    pth[(h * n + v) * n + k] = source[(h * n + k) * n + v]
        entries.append((f"archive/data/{layer}", struct.pack(f"<{lane}f", *pth)))
    entries.append(("archive/version", b"3\n"))
    return write_zip(entries)


def write_state_tune(
    directory: str | os.PathLike[str], layers: int, heads: int, n: int, runtime: Sequence[float], *, step: int | None
) -> Path:
    """Write ``state-step-<step>.pth`` (or ``state-final.pth`` when ``step`` is None) into ``directory`` as the
    trainer does: to ``<name>.tmp`` first, then renamed."""
    target = Path(directory) / checkpoint_name(step)
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = Path(str(target) + ".tmp")
    temporary.write_bytes(state_tune_bytes(layers, heads, n, runtime))
    os.replace(temporary, target)
    return target
