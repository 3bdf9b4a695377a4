"""Smoke evaluation of a registry entry on its base (``rwkv-registry smoke``); see docs/smoke.md.

Usage::

    from rwkv_registry.model.smoke import run_smoke, build_report, render

    result = run_smoke("registry/", "v141b-s1224", "rwkv7-g1k-7.2b-20260930-ctx25600.pth")  # CUDA bf16 or CPU
    report = build_report(result)          # dict, valid against schemas/smoke-report.schema.json
    report["verdict"], report["comparison"]["p_value"]

Modules, one concept each (the case-file format itself is ``rwkv_registry.index.smoke_cases``,
torch-free, so the CLI checks ``--cases`` before importing torch): ``casegen`` (the shipped case files'
source), ``prompt`` (RWKV-Agent's tool-call prompt), ``scoring`` (one call against its case),
``engine`` (batched runs), ``evaluate`` (checks, loading, both sides twice), ``report`` (JSON,
verdict, index record, text), ``hashcache`` (cached sha256), ``cli`` (the command),
``train_tiny`` / ``chunked`` (the demo's tiny trained weights), ``demo`` (``demo --smoke``).
"""

from __future__ import annotations

from rwkv_registry.index.smoke_cases import load_cases
from rwkv_registry.model.smoke.evaluate import run_smoke
from rwkv_registry.model.smoke.report import build_report, render

__all__ = ["build_report", "load_cases", "render", "run_smoke"]
