"""Cost of the references' norm units (``kernels/norm_units.py``) on the CPU reference path.

The references of ``add_layer_norm``, ``tm_output`` and ``tm_gates`` scale rows beyond 2^50 before
their norm (a few element-wise ops per norm, no branch on the data). This times a tiny model's decode
step (B=1, the PyTorch references everywhere, as the CPU smoke engine runs it) with the units and with
them replaced by the identity (the code before), alternating, and reports medians of CPU time
(user+sys) per step::

    .venv/bin/python bench/norm_units_bench.py --layers 2 --width 128 --rounds 7 --steps 50
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from typing import Any

import torch

from rwkv_registry.kernels import norm_units
from rwkv_registry.kernels.add_norm import reference as add_norm_ref
from rwkv_registry.kernels.timemix import reference as timemix_ref
from rwkv_registry.model import RWKV7, set_wkv_backend
from rwkv_registry.model.tiny import tiny_base_tensors, tiny_config


def _identity(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
    return x


def _use(fn: Any) -> None:
    add_norm_ref.in_norm_units = fn
    timemix_ref.in_norm_units = fn


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--width", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--steps", type=int, default=50)
    args = parser.parse_args()
    torch.set_grad_enabled(False)
    set_wkv_backend("reference")
    config = tiny_config(n_layer=args.layers, n_embd=args.width, vocab=1024)
    model = RWKV7.from_state_dict(tiny_base_tensors(config), device="cpu", dtype=torch.float32)
    state = model.new_state(1)
    tok = torch.zeros(1, 1, dtype=torch.long)
    per_step: dict[str, list[float]] = {"without units": [], "with units": []}
    for _ in range(args.rounds):
        for name, fn in (("without units", _identity), ("with units", norm_units.in_norm_units)):
            _use(fn)
            model.advance(tok, state)  # warm
            c0 = os.times()
            for _ in range(args.steps):
                model.advance(tok, state)
            c1 = os.times()
            per_step[name].append(((c1.user - c0.user) + (c1.system - c0.system)) / args.steps)
    _use(norm_units.in_norm_units)
    out = {name: round(1e6 * statistics.median(v), 1) for name, v in per_step.items()}
    out["overhead_pct"] = round(100 * (out["with units"] / out["without units"] - 1), 1)
    print(json.dumps({"us_per_step_cpu": out, "layers": args.layers, "width": args.width, "time": time.ctime()}))


if __name__ == "__main__":
    main()
