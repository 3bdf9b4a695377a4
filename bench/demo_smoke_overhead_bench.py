"""What demo8's changes add to ``make demo`` (``demo --smoke``), step by step, as medians of ``--runs`` runs in
wall and CPU (user+sys) time: the CPU run-time estimate of each tiny entry (``check_cpu_time``: a token count,
no rate measured for a tiny model), the ownership check of the tiny weights' folder (``check_weights_dir``),
and the tiny base drawn under ``training_numerics()`` (one thread) against the plain draw::

    .venv/bin/python bench/demo_smoke_overhead_bench.py build/demo-registry-smoke/weights --runs 5

Nothing is written. A whole ``make demo`` on the shared 2-core machine varies by minutes with the load; these
steps are what changed on its path.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path


def _timed(fn: Callable[[], object], runs: int) -> tuple[float, float]:
    wall, cpu = [], []
    for _ in range(runs):
        t0, c0 = time.perf_counter(), os.times()
        fn()
        c1 = os.times()
        wall.append(time.perf_counter() - t0)
        cpu.append((c1.user - c0.user) + (c1.system - c0.system))
    return statistics.median(wall), statistics.median(cpu)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("weights", type=Path, help="a folder holding the demo's tiny weights (manifest.json)")
    p.add_argument("--runs", type=int, default=5)
    args = p.parse_args()

    from rwkv_registry.index.smoke_cases import TINY_CASES, builtin_path, load_cases
    from rwkv_registry.model.profiles import get_profile
    from rwkv_registry.model.smoke import evaluate
    from rwkv_registry.model.smoke.demo import DEMO_THINK_TOKENS
    from rwkv_registry.model.smoke.prompt import PromptBuilder
    from rwkv_registry.model.smoke.train_tiny import (
        TrainConfig,
        check_weights_dir,
        demo_base_tensors,
        training_numerics,
    )
    from rwkv_registry.model.tiny import tiny_config
    from rwkv_registry.model.tokenizer import get_tokenizer

    cfg = tiny_config()
    base = {"name": "tiny", "architecture": {"n_layer": 2, "n_embd": 128, "vocab_size": cfg.vocab_size}}
    cases = load_cases(builtin_path(TINY_CASES))
    settings = evaluate.Settings(think_tokens=DEMO_THINK_TOKENS)
    builders = [PromptBuilder(get_profile(n), get_tokenizer()) for n in ("g1k", "g1k-think")]

    def estimate() -> None:
        for b in builders:
            assert evaluate.check_cpu_time(base, b, cases, settings) is None

    def under_numerics() -> None:
        with training_numerics():
            demo_base_tensors(TrainConfig())

    out = {}
    for name, fn in [
        ("cpu_estimate_both_entries", estimate),
        ("check_weights_dir", lambda: check_weights_dir(args.weights)),
        ("base_draw_plain", lambda: demo_base_tensors(TrainConfig())),
        ("base_draw_under_training_numerics", under_numerics),
    ]:
        wall, cpu = _timed(fn, args.runs)
        out[name] = {"wall_s": round(wall, 4), "cpu_s": round(cpu, 4)}
    print(json.dumps({"runs": args.runs, "median": out}, indent=2))


if __name__ == "__main__":
    main()
