"""Tests of the JSON Schemas (schemas/*.schema.json) and of rwkv_registry.schemas."""

from __future__ import annotations

import contextlib
import copy
import hashlib
import json
import re
import socket
import subprocess
import sys
import urllib.request
from typing import Any

import pytest

from rwkv_registry import schemas
from rwkv_registry.checks.miss import MISS_TARGETS
from rwkv_registry.schemas import SCHEMA_NAMES, load_schema, schema_digest, schema_errors

BASE = "rwkv7-g1k-7.2b-20260930-ctx25600"
BACKEND_16 = "App harness, inference backend of 2026-10-16"
BACKEND_17 = "App harness, inference backend of 2026-10-17"


def hexd(c: str) -> str:
    return c * 64


def score(
    benchmark: str,
    date: str,
    value: float,
    unit: str = "percent",
    solved: float | None = None,
    total: int | None = 568,
    runs: int | None = 2,
    backend: str | None = BACKEND_17,
    note: str | None = None,
    report: str | None = None,
    **more: Any,
) -> dict[str, Any]:
    return {
        "benchmark": benchmark,
        "date": date,
        "score": value,
        "unit": unit,
        "solved": solved,
        "total": total,
        "runs": runs,
        "backend": backend,
        "note": note,
        "report": report,
        **more,
    }


SMOKE = {
    "date": "2026-10-18T09:30:00Z",
    "device": "NVIDIA H200",
    "torch": "2.13.0",
    "cuda": "12.8",
    "cases_sha256": hexd("c"),
    "cases": 40,
    "profile": "g1k",
    "entry_score": {
        "solved": 30,
        "total": 40,
        "by_category": {"easy selection": {"solved": 8, "total": 8}, "abstention": {"solved": 5, "total": 8}},
    },
    "base_score": {"solved": 12, "total": 40, "by_category": {}},
    "wins": 20,
    "losses": 2,
    "p_value": 0.0001,
    "verdict": "pass",
    "tool_version": "0.1.0",
}


def miss_entry(
    lr: str, content_version: str, recommended: bool, description: str, scores: list[dict[str, Any]]
) -> dict[str, Any]:
    group = f"r16-lr{lr}-e2"
    return {
        "id": f"v21-lr{lr}-e2",
        "path": f"{BASE}/miss/v2.1/{group}/adapter-final.pth",
        "base": BASE,
        "method": "miss",
        "group": group,
        "data": {"version": "v2.1", "rows": 5512, "sha256": "2fbf6760" + "0" * 56},
        "file": {"sha256": hexd("e"), "size": 36_000_000},
        "train": f"{BASE}/miss/v2.1/train.json",
        "profile": "g1k-think",
        "sampling": "g1k-agent",
        "recommended": recommended,
        "description": description,
        "step": 1378,
        "total_steps": 1378,
        "miss": {"content_version": content_version, "rank": 16, "alpha": 32, "scale": 2.0, "dtype": "bfloat16"},
        "scores": scores,
        "smoke": [],
        "known_issues": [],
    }


def seed_index() -> dict[str, Any]:
    """Everything in the seed README (seeds/000), as index.json."""
    state = {
        "id": "v141b-s1224",
        "path": f"{BASE}/state/v1.41/v141b-s1224.pth",
        "base": BASE,
        "method": "state",
        "data": {"version": "v1.41", "rows": 3662, "sha256": "feb2fd6b" + "0" * 56},
        "file": {"sha256": hexd("d"), "size": 16_780_000},
        "train": f"{BASE}/state/v1.41/train.json",
        "profile": "g1k",
        "sampling": "g1k-agent",
        "recommended": True,
        "description": "lr 0.01→0.00167, step 1224 of 1374",
        "step": 1224,
        "total_steps": 1374,
        "scores": [
            score("exam", "2026-10-16", 46.9, backend=BACKEND_16, report="docs/evaluations/exam-3arm-20261016"),
            score(
                "workbank-clean",
                "2026-10-13",
                25.0,
                "points",
                25.0,
                None,
                3,
                None,
                "older bank",
                "docs/evaluations/state-v141-20261013",
            ),
            score(
                "bfcl-product",
                "2026-10-13",
                41.0,
                "points",
                41.0,
                60,
                3,
                None,
                None,
                "docs/evaluations/state-v141-20261013",
            ),
            score(
                "bash-probes",
                "2026-10-13",
                9.0,
                "points",
                9.0,
                26,
                3,
                None,
                None,
                "docs/evaluations/state-v141-20261013",
            ),
        ],
        "smoke": [copy.deepcopy(SMOKE)],
        "known_issues": ["80 rows of training data v1.41 were adapted from test questions."],
    }
    return {
        "schema_version": 1,
        "registry": {
            "name": "No-22/rwkv-agent-weights",
            "title": "RWKV-Agent weights (State and MiSS adapters)",
            "description": "Light weights trained on an RWKV-7 base, attached per request at inference.",
            "training_data": "No-22/rwkv-agent-distill",
            "server": "rwkv_lightning inference server v1.8.1 or later, with State upload and /v1/adapters",
            "license": None,
        },
        "bases": [
            {
                "name": BASE,
                "family": "rwkv7-g1k-7.2b",
                "source": {"repo": "BlinkDL/rwkv7-g1", "file": f"{BASE}.pth", "revision": None},
                "sha256": "0853d4ce2e4e0629762797d05036a84cc69fb2fb9eff5590dd22aeb518a4c842",
                "size": None,
                "vocab": "rwkv_vocab_v20230424.txt",
                "architecture": {
                    "n_layer": 32,
                    "n_embd": 4096,
                    "head_size": 64,
                    "n_head": 64,
                    "vocab_size": 65536,
                    "ffn_size": 16384,
                    "lora": {"decay": 128, "aaa": 128, "mv": 96, "gate": 480},
                    "dtype": "bfloat16",
                },
                "status": "active",
                "added": "2026-10-12",
                "scores": [
                    score(
                        "exam",
                        "2026-10-16",
                        21.4,
                        backend=BACKEND_16,
                        note="base alone",
                        report="docs/evaluations/exam-3arm-20261016",
                    ),
                    score("bfcl-product", "2026-10-13", 44, "points", 44, 60, 3, None, "older bank", None),
                ],
                "notes": "Architecture read from the base's tensors.",
            }
        ],
        "entries": [
            state,
            miss_entry(
                "2e-5",
                "360fa110a40e324bd1bf2976a7b31739e46379752c6ebc4bf8c370c77d93daa5",
                True,
                "lr 2e-5→2e-6, 2 epochs, 1378 steps, final weights",
                [
                    score(
                        "exam",
                        "2026-10-17",
                        52.2,
                        solved=296.5,
                        report="docs/evaluations/exam-v21-20261017",
                        comparison={"against": "miss-v2.0-r16-lr3e-5", "wins": 95, "losses": 54, "p_value": 0.001},
                    )
                ],
            ),
            miss_entry(
                "1e-5",
                "3935b51573ca92350ceb783958171a54b765f09b79ad29be5422ea338dd59ee7",
                False,
                "lr 1e-5→1e-6, control",
                [score("exam", "2026-10-17", 51.3, solved=291.5, note="indistinguishable from 2e-5")],
            ),
            miss_entry(
                "3e-5",
                "a5d0b1b11d2f11efeeebc50f2290b5b0dd3978adeaaf8095f017b857429a5782",
                False,
                "lr 3e-5→3e-6, control",
                [
                    score(
                        "exam",
                        "2026-10-17",
                        49.4,
                        solved=280.5,
                        note="more questions read right but with wrong values taken",
                    )
                ],
            ),
        ],
        "unpublished": [
            {
                "id": "miss-v2.0-r16-lr3e-5",
                "base": BASE,
                "method": "miss",
                "data": {"version": "v2.0", "rows": None, "sha256": None},
                "description": "MiSS v2.0 r16 lr3e-5, never uploaded",
                "scores": [score("exam", "2026-10-17", 46.0, solved=261.0)],
            },
            {
                "id": "state-v1.3",
                "base": BASE,
                "method": "state",
                "data": {"version": "v1.3"},
                "description": "previous State, three-run means on the older banks",
                "scores": [
                    score("workbank-clean", "2026-10-13", 22.7, "points", 22.7, None, 3, None),
                    score("bfcl-product", "2026-10-13", 24.3, "points", 24.3, 60, 3, None),
                    score("bash-probes", "2026-10-13", 2.0, "points", 2.0, 26, 3, None),
                ],
            },
        ],
        "known_issues": [
            "MiSS models asked about their identity may call themselves Qwen.",
            "v2.1 regressions: web questions and questions needing no tool.",
        ],
        "links": [
            {"title": "Full reports", "url": "docs/evaluations/"},
            {"title": "Training data", "url": "https://huggingface.co/datasets/No-22/rwkv-agent-distill"},
        ],
        "signing": {
            "trusted_keys": [
                {
                    "id": "no22-2026",
                    "public_key": "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=",
                    "comment": "release key",
                }
            ]
        },
    }


def state_train() -> dict[str, Any]:
    return {
        "trainer": {"name": "rwkv_state_tune", "version": "1.8.1", "commit": None},
        "method": "state",
        "data": {"version": "v1.41", "rows": 3662, "sha256": hexd("f")},
        "hyperparameters": {
            "lr": 0.01,
            "lr_final": 0.00167,
            "ctx": 4096,
            "grad_cp": True,
            "precision": "bf16",
            "betas": [0.9, 0.99],
        },
        "command": "rwkv_state_tune --model base.pth --lr 0.01",
        "started": "2026-10-12T08:00:00Z",
        "finished": "2026-10-12T10:00:00+08:00",
    }


def miss_train() -> dict[str, Any]:
    t = state_train()
    t["trainer"] = {"name": "rwkv_miss_tune", "version": "v1.8.1", "commit": "47df608"}
    t["method"] = "miss"
    t["runs"] = [
        {
            "group": f"r16-lr{lr}-e2",
            "lr": float(lr),
            "lr_final": float(lr) / 10,
            "started": "2026-10-14T08:00:00Z",
            "finished": "2026-10-14T11:00:00.5Z",
            "steps": 1378,
            "epochs": 2,
        }
        for lr in ("1e-5", "2e-5", "3e-5")
    ]
    return t


def miss_manifest() -> dict[str, Any]:
    shapes = {"ffn.key.weight": (16384, 4096), "ffn.value.weight": (4096, 16384)}
    return {
        "format_version": 1,
        "method": "miss",
        "dtype": "bfloat16",
        "layout": "modulo_rank_zero_pad",
        "kind": "inference_adapter",
        "rank": 16,
        "alpha": 32.0,
        "scale": 2.0,
        "base_fingerprint": "0853d4ce2e4e0629762797d05036a84cc69fb2fb9eff5590dd22aeb518a4c842",
        "content_version": "360fa110a40e324bd1bf2976a7b31739e46379752c6ebc4bf8c370c77d93daa5",
        "targets": [
            {
                "name": f"blocks.{layer}.{t}.D",
                "layer": layer,
                "target": t,
                "in_features": shapes.get(t, (4096, 4096))[1],
                "shape": [shapes.get(t, (4096, 4096))[0], 16],
            }
            for layer in range(2)
            for t in MISS_TARGETS
        ],
        "trainer": "rwkv_miss_tune 1.8.1",
    }


def report() -> dict[str, Any]:
    return {
        "tool": {"name": "rwkv-registry", "version": "0.1.0"},
        "target": "hf://No-22/rwkv-agent-weights",
        "ok": False,
        "counts": {"error": 1, "warning": 0, "info": 1},
        "findings": [
            {
                "code": "HSH002",
                "severity": "error",
                "path": "a/b.pth",
                "message": "sha256 differs",
                "hint": "Fix it.",
                "extra": {"expected": hexd("a")},
            },
            {"code": "TRN006", "severity": "info", "path": "", "message": "commit not recorded", "hint": "-"},
        ],
        "stats": {"files": 12, "bytes_hashed": 10**10, "cache_hits": 3, "elapsed_s": 1.5, "bytes_fetched": None},
    }


def smoke_case() -> dict[str, Any]:
    """One line of a smoke case file (a case with inline tools)."""
    return {
        "id": "hard-01",
        "category": "hard-selection",
        "tools": [
            {
                "name": "archive_card",
                "description": "Archive a card; it can be restored.",
                "arguments": {"type": "object", "properties": {"card_id": {"type": "string"}}, "required": ["card_id"]},
            },
            {
                "name": "delete_card",
                "description": "Delete a card for good.",
                "arguments": {"type": "object", "properties": {"card_id": {"type": "string"}}, "required": ["card_id"]},
            },
        ],
        "messages": [{"role": "user", "content": "Archive card c-88, we might need it later."}],
        "expected": {"name": "archive_card", "arguments": {"card_id": "c-88"}},
        "check_values": ["card_id"],
        "note": "archive vs delete",
    }


def smoke_report() -> dict[str, Any]:
    """A `rwkv-registry smoke --format json` report with one case."""
    side = {
        "solved": 1,
        "total": 1,
        "by_category": {"hard-selection": {"solved": 1, "total": 1}},
        "parse_failures": 0,
        "false_refusals": 0,
        "unknown_tools": 0,
        "abstention": {"solved": 0, "total": 0},
        "mean_loss": 0.12,
        "deterministic": True,
        "finite": True,
        "tokens": {"prefill": 400, "fed": 60, "generated": 24},
        "tokens_per_s": 812.5,
        "seconds": 0.6,
        "cuda_graphs": False,
    }
    case_side = {
        "correct": True,
        "parse_failure": False,
        "parse_error": "",
        "name": "archive_card",
        "arguments": {"card_id": "c-88"},
        "name_ok": True,
        "unknown_tool": False,
        "missing": [],
        "invented": [],
        "wrong_values": [],
        "false_refusal": False,
        "output": 'archive_card","arguments":{"card_id":"c-88"}}\n',
        "thinking": None,
        "tokens": 12,
        "finish": "stop_string",
        "loss": 0.1,
        "deterministic": True,
        "finite": True,
    }
    base_side = dict(
        side, solved=0, by_category={"hard-selection": {"solved": 0, "total": 1}}, parse_failures=1, mean_loss=None
    )
    return {
        "kind": "rwkv-registry-smoke",
        "format_version": 1,
        "tool_version": "0.1.0",
        "date": "2026-10-18T09:30:00Z",
        "registry": "build/reg",
        "entry": {
            "id": "v141b-s1224",
            "method": "state",
            "path": f"{BASE}/state/v1.41/v141b-s1224.pth",
            "base": BASE,
            "profile": "g1k",
            "sha256": hexd("d"),
        },
        "base": {"name": BASE, "file": "/models/base.pth", "sha256": hexd("0"), "hash_cached": True},
        "environment": {
            "device": "cuda",
            "device_name": "NVIDIA H200",
            "dtype": "bfloat16",
            "torch": "2.13.0",
            "cuda": "12.8",
        },
        "cases_file": {"source": "builtin:default_cases.jsonl", "sha256": hexd("c"), "count": 1},
        "settings": {
            "max_call_tokens": 96,
            "think_tokens": 256,
            "parse_failure_threshold": 0.2,
            "alpha": 0.05,
            "runs": 2,
        },
        "sides": {"entry": side, "base": base_side},
        "comparison": {"wins": 1, "losses": 0, "ties": 0, "p_value": 1.0, "won": ["hard-01"], "lost": []},
        "timing": {"hash_s": 0.01, "load_s": 2.5, "eval_s": 1.2, "wall_s": 4.0},
        "cases": [
            {
                "id": "hard-01",
                "category": "hard-selection",
                "outcome": "win",
                "entry": case_side,
                "base": dict(
                    case_side,
                    correct=False,
                    parse_failure=True,
                    parse_error="not JSON",
                    name=None,
                    arguments=None,
                    name_ok=False,
                    output="zz",
                    loss=None,
                ),
            }
        ],
        "verdict": "pass",
        "reasons": [],
        "exit_code": 0,
    }


VALID = {
    "index": seed_index,
    "train": state_train,
    "miss": miss_manifest,
    "report": report,
    "score": lambda: {
        **score("exam", "2026-10-17", 52.2, solved=296.5),
        "by_category": {"abstention": {"solved": 12, "total": 17}, "arguments": {"solved": 19.5, "total": 22}},
        "run_scores": [52.0, 52.4],
    },
    "smoke-record": lambda: copy.deepcopy(SMOKE),
    "results": lambda: {
        "format": "rwkv-registry-results/1",
        "name": "v21-lr2e-5-e2",
        "benchmark": "exam",
        "results": [{"id": "q001", "category": "web", "score": 0.5}, {"id": "q002", "score": 1}],
    },
    "smoke-case": smoke_case,
    "smoke-report": smoke_report,
}

# --------------------------------------------------------------------------------------------------
# helpers to edit an instance by a path like "entries.0.file.sha256"


def _walk_to(doc: Any, path: str) -> tuple[Any, Any]:
    parts: list[Any] = [int(p) if p.isdigit() else p for p in path.split(".")]
    for p in parts[:-1]:
        doc = doc[p]
    return doc, parts[-1]


def set_(doc: Any, path: str, value: Any) -> Any:
    parent, key = _walk_to(doc, path)
    parent[key] = value
    return doc


def del_(doc: Any, path: str) -> Any:
    parent, key = _walk_to(doc, path)
    del parent[key]
    return doc


_DEL = object()

# (schema, edit path, new value or _DEL, JSON path of the expected error, text in the message)
INVALID: list[tuple[str, str, Any, str, str]] = [
    # top level
    ("index", "schema_version", 2, "$.schema_version", "expected 1, got 2"),
    ("index", "registry", _DEL, "$", 'missing required property "registry"'),
    ("index", "entires", [], "$.entires", 'did you mean "entries"'),
    ("index", "bad key", 1, '$["bad key"]', 'extension keys start with "x-"'),
    ("index", "registry.license", 3, "$.registry.license", "expected string or null, got integer 3"),
    ("index", "registry.licence", "MIT", "$.registry.licence", 'did you mean "license"'),
    ("index", "registry.name", "", "$.registry.name", "shorter than 1"),
    ("index", "known_issues.0", 5, "$.known_issues[0]", "expected string"),
    ("index", "links.0.url", _DEL, "$.links[0]", '"url"'),
    ("index", "signing.trusted_keys.0.public_key", "AAEC", "$.signing.trusted_keys[0].public_key", "form"),
    (
        "index",
        "signing.trusted_keys.0.public_key",
        "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh9=",
        "$.signing.trusted_keys[0].public_key",
        "Ed25519",
    ),
    ("index", "signing.trusted_keys.0.id", _DEL, "$.signing.trusted_keys[0]", '"id"'),
    ("index", "unpublished", _DEL, "$", '"unpublished"'),
    # bases
    ("index", "bases.0.name", ".", "$.bases[0].name", "form"),
    ("index", "bases.0.name", "..", "$.bases[0].name", "form"),
    ("index", "bases.0.name", "a/b", "$.bases[0].name", "form"),
    ("index", "bases.0.name", "abc\n", "$.bases[0].name", "form"),
    ("index", "bases.0.name", "a" * 129, "$.bases[0].name", "form"),
    ("index", "bases.0.family", None, "$.bases[0].family", "expected string, got null"),
    ("index", "bases.0.source.repo", "rwkv7-g1", "$.bases[0].source.repo", "OWNER/REPO"),
    ("index", "bases.0.source.repo", "a/b/c", "$.bases[0].source.repo", "OWNER/REPO"),
    ("index", "bases.0.source.revision", "", "$.bases[0].source.revision", "shorter"),
    ("index", "bases.0.source.file", "../x.pth", "$.bases[0].source.file", "relative POSIX path"),
    ("index", "bases.0.sha256", "0853D4CE" + "0" * 56, "$.bases[0].sha256", "64 lower-case hex"),
    ("index", "bases.0.sha256", "0" * 63, "$.bases[0].sha256", "64 lower-case hex"),
    ("index", "bases.0.sha256", "0" * 64 + "\n", "$.bases[0].sha256", "64 lower-case hex"),
    ("index", "bases.0.size", -1, "$.bases[0].size", "less than the minimum 0"),
    ("index", "bases.0.size", 1.5, "$.bases[0].size", "expected integer or null, got number 1.5"),
    ("index", "bases.0.vocab", _DEL, "$.bases[0]", '"vocab"'),
    ("index", "bases.0.architecture.n_layer", 0, "$.bases[0].architecture.n_layer", "minimum 1"),
    ("index", "bases.0.architecture.ffn_size", "16384", "$.bases[0].architecture.ffn_size", 'string "16384"'),
    ("index", "bases.0.architecture.lora.gate", 0, "$.bases[0].architecture.lora.gate", "minimum 1"),
    ("index", "bases.0.architecture.lora.mv", 0, "$.bases[0].architecture.lora.mv", "minimum 1"),
    (
        "index",
        "bases.0.architecture.lora.decay",
        None,
        "$.bases[0].architecture.lora.decay",
        "expected integer, got null",
    ),
    ("index", "bases.0.architecture.dtype", "int8", "$.bases[0].architecture.dtype", "not one of"),
    ("index", "bases.0.architecture.head", 64, "$.bases[0].architecture.head", "unknown property"),
    ("index", "bases.0.status", "retired", "$.bases[0].status", '"active", "frozen"'),
    ("index", "bases.0.added", "2026-13-01", "$.bases[0].added", "not a valid date"),
    ("index", "bases.0.added", "2026-10-12T00:00:00Z", "$.bases[0].added", "not a valid date"),
    ("index", "bases.0.scores", None, "$.bases[0].scores", "expected array"),
    ("index", "bases.0.notes", _DEL, "$.bases[0]", '"notes"'),
    ("index", "bases.0.known_issues", [""], "$.bases[0].known_issues[0]", "shorter"),
    ("index", "bases.0.sha265", hexd("a"), "$.bases[0].sha265", 'did you mean "sha256"'),
    # entries
    ("index", "entries.0.id", "-x", "$.entries[0].id", "form"),
    ("index", "entries.0.path", "/abs/x.pth", "$.entries[0].path", "form"),
    ("index", "entries.0.path", "a//x.pth", "$.entries[0].path", "form"),
    ("index", "entries.0.path", "a/./x.pth", "$.entries[0].path", "form"),
    ("index", "entries.0.path", "a/../x.pth", "$.entries[0].path", "form"),
    ("index", "entries.0.path", "..", "$.entries[0].path", "form"),
    ("index", "entries.0.path", "a\\x.pth", "$.entries[0].path", "form"),
    ("index", "entries.0.path", "a/x/", "$.entries[0].path", "form"),
    ("index", "entries.0.path", "", "$.entries[0].path", "form"),
    ("index", "entries.0.path", "a/x\n", "$.entries[0].path", "form"),
    ("index", "entries.0.path", "a/\x01x", "$.entries[0].path", "form"),
    ("index", "entries.0.train", "C:\\train.json", "$.entries[0].train", "form"),
    ("index", "entries.0.base", _DEL, "$.entries[0]", '"base"'),
    ("index", "entries.0.method", "lora", "$.entries[0].method", '"lora" is not one of "state", "miss"'),
    ("index", "entries.0.group", "r16", "$.entries[0].group", "not allowed here: only MiSS entries"),
    (
        "index",
        "entries.0.miss",
        {"content_version": hexd("1"), "rank": 16, "alpha": 32, "scale": 2.0, "dtype": "bfloat16"},
        "$.entries[0].miss",
        "not allowed here",
    ),
    ("index", "entries.0.adapter_id", "x", "$.entries[0].adapter_id", "not allowed here"),
    ("index", "entries.1.group", _DEL, "$.entries[1]", 'missing required property "group" (required for a MiSS'),
    ("index", "entries.1.miss", _DEL, "$.entries[1]", 'missing required property "miss"'),
    ("index", "entries.1.adapter_id", "a/b", "$.entries[1].adapter_id", "form"),
    ("index", "entries.0.data.version", "1.41", "$.entries[0].data.version", "form"),
    ("index", "entries.0.data.version", "v", "$.entries[0].data.version", "form"),
    ("index", "entries.0.data.rows", -1, "$.entries[0].data.rows", "minimum 0"),
    ("index", "entries.0.data.sha256", "feb2fd6b", "$.entries[0].data.sha256", "64 lower-case hex"),
    ("index", "entries.0.data.rows", _DEL, "$.entries[0].data", '"rows"'),
    ("index", "entries.0.file.sha256", _DEL, "$.entries[0].file", '"sha256"'),
    ("index", "entries.0.file.size", -1, "$.entries[0].file.size", "minimum 0"),
    ("index", "entries.0.file.size", None, "$.entries[0].file.size", "expected integer, got null"),
    ("index", "entries.0.profile", "g2k", "$.entries[0].profile", "not one of"),
    ("index", "entries.0.sampling", 5, "$.entries[0].sampling", "expected string"),  # a name: validate's PRF003
    ("score", "by_category.abstention.solved", _DEL, "$.by_category.abstention", '"solved"'),
    ("score", "by_category.abstention.total", 1.5, "$.by_category.abstention.total", "expected integer"),
    ("score", "by_category.abstention.rate", 1, "$.by_category.abstention.rate", "unknown property"),
    ("score", "run_scores", [], "$.run_scores", "at least 1 item"),
    ("score", "run_scores", ["57"], "$.run_scores[0]", "expected number"),
    ("index", "entries.0.recommended", "yes", "$.entries[0].recommended", "expected boolean"),
    ("index", "entries.0.description", None, "$.entries[0].description", "expected string"),
    ("index", "entries.0.step", -1, "$.entries[0].step", "minimum 0"),
    ("index", "entries.0.total_steps", 0, "$.entries[0].total_steps", "minimum 1"),
    ("index", "entries.0.smoke", _DEL, "$.entries[0]", '"smoke"'),
    ("index", "entries.0.known_issues", _DEL, "$.entries[0]", '"known_issues"'),
    ("index", "entries.0.train", None, "$.entries[0].train", "expected string, got null"),
    ("index", "entries.1.miss.rank", 0, "$.entries[1].miss.rank", "minimum 1"),
    ("index", "entries.1.miss.rank", 1025, "$.entries[1].miss.rank", "maximum 1024"),
    ("index", "entries.1.miss.alpha", "32", "$.entries[1].miss.alpha", "expected number"),
    ("index", "entries.1.miss.dtype", "float32", "$.entries[1].miss.dtype", "not one of"),
    ("index", "entries.1.miss.content_version", "<64 hex>", "$.entries[1].miss.content_version", "hex"),
    ("index", "entries.1.miss.scale", _DEL, "$.entries[1].miss", '"scale"'),
    ("index", "entries.1.miss.rnak", 16, "$.entries[1].miss.rnak", 'did you mean "rank"'),
    ("index", "entries.0.smoke.0.verdict", "maybe", "$.entries[0].smoke[0].verdict", "not one of"),
    ("index", "entries.0.smoke.0.date", "2026-10-18", "$.entries[0].smoke[0].date", "not a valid date-time"),
    ("index", "entries.0.smoke.0.p_value", 1.5, "$.entries[0].smoke[0].p_value", "maximum 1"),
    (
        "index",
        "entries.0.smoke.0.entry_score.by_category.abstention.total",
        _DEL,
        "$.entries[0].smoke[0].entry_score.by_category.abstention",
        '"total"',
    ),
    ("index", "entries.0.smoke.0.cases_sha256", "x", "$.entries[0].smoke[0].cases_sha256", "form"),
    ("index", "entries.0.smoke.0.wins", -1, "$.entries[0].smoke[0].wins", "minimum 0"),
    ("index", "entries.0.smoke.0.extra", 1, "$.entries[0].smoke[0].extra", "unknown property"),
    # scores (through index)
    ("index", "entries.0.scores.0.unit", "pct", "$.entries[0].scores[0].unit", '"percent", "points"'),
    ("index", "entries.0.scores.0.date", "16/10/2026", "$.entries[0].scores[0].date", "YYYY-MM-DD"),
    ("index", "entries.0.scores.0.score", 146.9, "$.entries[0].scores[0].score", "maximum 100"),
    ("index", "entries.0.scores.0.solved", -1, "$.entries[0].scores[0].solved", "minimum 0"),
    ("index", "entries.0.scores.0.total", 568.5, "$.entries[0].scores[0].total", "expected integer or null"),
    ("index", "entries.0.scores.0.runs", 0, "$.entries[0].scores[0].runs", "minimum 1"),
    ("index", "entries.0.scores.0.note", _DEL, "$.entries[0].scores[0]", '"note"'),
    ("index", "entries.1.scores.0.comparison.p_value", 2, "$.entries[1].scores[0].comparison.p_value", "maximum 1"),
    ("index", "entries.1.scores.0.comparison.wins", _DEL, "$.entries[1].scores[0].comparison", '"wins"'),
    ("index", "entries.1.scores.0.comparison.against", "", "$.entries[1].scores[0].comparison.against", "shorter"),
    # unpublished
    ("index", "unpublished.0.data.version", _DEL, "$.unpublished[0].data", '"version"'),
    ("index", "unpublished.0.data.sha256", "0", "$.unpublished[0].data.sha256", "hex"),
    ("index", "unpublished.0.file", {}, "$.unpublished[0].file", "unknown property"),
    ("index", "unpublished.0.scores.0.benchmark", "", "$.unpublished[0].scores[0].benchmark", "shorter"),
    # train.json
    ("train", "trainer.name", "Rwkv State", "$.trainer.name", "form"),
    ("train", "trainer.version", "1.8", "$.trainer.version", "form"),
    ("train", "trainer.version", "1.8.1\n", "$.trainer.version", "form"),
    ("train", "trainer.commit", "47DF608", "$.trainer.commit", "form"),
    ("train", "trainer.commit", "47df6", "$.trainer.commit", "form"),
    ("train", "trainer.comit", "47df608", "$.trainer.comit", 'did you mean "commit"'),
    ("train", "method", "lora", "$.method", "not one of"),
    ("train", "data.sha256", _DEL, "$.data", '"sha256"'),
    ("train", "data.version", "1.41", "$.data.version", "form"),
    (
        "train",
        "hyperparameters.lr",
        {"a": 1},
        "$.hyperparameters.lr",
        'expected number, string, boolean, null or array, got object {"a": 1}',
    ),
    ("train", "hyperparameters.betas", [[0.9]], "$.hyperparameters.betas[0]", "got array"),
    ("train", "command", "", "$.command", "shorter"),
    ("train", "started", "yesterday", "$.started", "not a valid date-time"),
    ("train", "method", "miss", "$", 'missing required property "runs"'),
    # miss.json
    ("miss", "format_version", 2, "$.format_version", "expected 1, got 2"),
    ("miss", "method", "lora", "$.method", 'expected "miss"'),
    ("miss", "dtype", "float32", "$.dtype", "not one of"),
    ("miss", "layout", "block", "$.layout", 'expected "modulo_rank_zero_pad"'),
    ("miss", "kind", "adapter", "$.kind", 'expected "inference_adapter"'),
    ("miss", "rank", 0, "$.rank", "minimum 1"),
    ("miss", "rank", 1025, "$.rank", "maximum 1024"),
    ("miss", "alpha", None, "$.alpha", "expected number"),
    ("miss", "base_fingerprint", hexd("A"), "$.base_fingerprint", "form"),
    ("miss", "content_version", _DEL, "$", '"content_version"'),
    ("miss", "targets", [], "$.targets", "at least 1 item"),
    ("miss", "targets.3.target", "att.gate.weight", "$.targets[3].target", "not one of"),
    ("miss", "targets.3.layer", -1, "$.targets[3].layer", "minimum 0"),
    ("miss", "targets.3.in_features", 0, "$.targets[3].in_features", "minimum 1"),
    ("miss", "targets.3.shape", [4096], "$.targets[3].shape", "at least 2 items"),
    ("miss", "targets.3.shape", [4096, 16, 1], "$.targets[3].shape", "at most 2 items"),
    ("miss", "targets.3.shape", [0, 16], "$.targets[3].shape[0]", "minimum 1"),
    ("miss", "targets.3.shape", [4096, 16.5], "$.targets[3].shape[1]", "expected integer"),
    ("miss", "targets.3.name", _DEL, "$.targets[3]", '"name"'),
    # report.json
    ("report", "findings.0.code", "HSH02", "$.findings[0].code", "form"),
    ("report", "findings.0.severity", "fatal", "$.findings[0].severity", "not one of"),
    ("report", "findings.0.hint", _DEL, "$.findings[0]", '"hint"'),
    ("report", "counts.info", _DEL, "$.counts", '"info"'),
    ("report", "stats.bytes_fetched", -1, "$.stats.bytes_fetched", "minimum 0"),
    ("report", "tool.name", "other", "$.tool.name", 'expected "rwkv-registry"'),
    ("report", "ok", "no", "$.ok", "expected boolean"),
    ("report", "surprise", 1, "$.surprise", "unknown property"),
    # score and smoke-record on their own
    ("score", "score", -0.5, "$.score", "minimum 0"),
    ("score", "backend", _DEL, "$", '"backend"'),
    ("smoke-record", "cuda", _DEL, "$", '"cuda"'),
    ("smoke-record", "base_score.by_category", [], "$.base_score.by_category", "expected object"),
    ("smoke-record", "date", "2026-10-18T09:30:00", "$.date", "not a valid date-time"),
]


def _case_id(case: tuple[str, str, Any, str, str]) -> str:
    name, path, value, _, _ = case
    shown = "DEL" if value is _DEL else json.dumps(value)[:20]
    return f"{name}:{path}={shown}"


@pytest.mark.parametrize("name", SCHEMA_NAMES)
def test_valid_examples_have_no_errors(name):
    assert schema_errors(name, VALID[name]()) == []


def test_seed_example_with_variants_is_valid():
    doc = seed_index()
    doc["x-generator"] = {"any": ["thing"]}
    doc["entries"][0]["x-note"] = "kept"
    doc["bases"][0]["known_issues"] = ["one"]
    doc["bases"][0]["size"] = 15_000_000_000
    doc["bases"][0]["architecture"]["lora"]["mv"] = None  # a 1-layer model
    doc["entries"][0]["step"] = None
    doc["entries"][0]["data"]["sha256"] = None
    doc["entries"][1]["adapter_id"] = "v21-lr2e-5-e2"
    doc["entries"][0]["path"] = f"{BASE}/state/v1.41/.hidden/..x/.../v141b-s1224.pth"
    doc["entries"][1]["scores"][0]["score"] = 100
    doc["entries"][1]["scores"][0]["unit"] = "points"
    doc["entries"][1]["scores"][0]["score"] = 296.5
    del doc["signing"]
    assert schema_errors("index", doc) == []


@pytest.mark.parametrize("case", INVALID, ids=_case_id)
def test_each_constraint_has_a_failing_case(case):
    name, path, value, json_path, text = case
    doc = VALID[name]()
    if value is _DEL:
        del_(doc, path)
    else:
        set_(doc, path, value)
    errors = schema_errors(name, doc)
    assert [p for p, _ in errors] == [json_path], errors
    assert text in errors[0][1]


def test_all_errors_are_reported_at_once():
    doc = seed_index()
    doc["bases"][0]["sha256"] = "nope"
    doc["entries"][2]["file"]["size"] = -5
    del doc["links"]
    errors = schema_errors("index", doc)
    assert errors == [
        ("$", 'missing required property "links"'),
        ("$.bases[0].sha256", '"nope" does not have the expected form (a SHA-256 digest: 64 lower-case hex digits)'),
        ("$.entries[2].file.size", "-5 is less than the minimum 0"),
    ]


def test_each_missing_key_is_its_own_error():
    doc = seed_index()
    doc["entries"][1]["miss"] = {"rank": 16}
    assert schema_errors("index", doc) == [
        ("$.entries[1].miss", 'missing required property "alpha"'),
        ("$.entries[1].miss", 'missing required property "content_version"'),
        ("$.entries[1].miss", 'missing required property "dtype"'),
        ("$.entries[1].miss", 'missing required property "scale"'),
    ]


def test_each_unknown_key_is_its_own_error():
    doc = seed_index()
    doc["entries"][0].update({"bogus": 1, "x-ok": 2, "recomended": False})
    errors = schema_errors("index", doc)
    assert errors == [
        ("$.entries[0].bogus", 'unknown property "bogus" (extension keys start with "x-")'),
        ("$.entries[0].recomended", 'unknown property "recomended" (did you mean "recommended"?)'),
    ]


def test_errors_sorted_by_path_with_numeric_indices():
    doc = seed_index()
    doc["entries"] = [copy.deepcopy(doc["entries"][0]) for _ in range(12)]
    doc["entries"][10]["file"]["size"] = -1
    doc["entries"][2]["file"]["size"] = -1
    doc["bases"][0]["size"] = -1
    paths = [p for p, _ in schema_errors("index", doc)]
    assert paths == ["$.bases[0].size", "$.entries[2].file.size", "$.entries[10].file.size"]


def test_long_values_are_shortened_and_json_quoted():
    doc = seed_index()
    doc["bases"][0]["sha256"] = "z" * 5000
    doc["bases"][0]["family"] = {"a": None, "b": True}
    errors = dict(schema_errors("index", doc))
    assert errors["$.bases[0].family"] == 'expected string, got object {"a": null, "b": true}'
    msg = errors["$.bases[0].sha256"]
    assert len(msg) < 160
    assert msg.startswith('"zzzz') and "…" in msg


def test_a_non_object_instance_gives_one_clear_error():
    assert schema_errors("index", []) == [("$", "expected object, got array []")]


@pytest.mark.parametrize(
    "value",
    ["2026-10-12T08:00:00Z", "2026-10-12t08:00:00z", "2026-10-12T08:00:00.123456+08:00", "2026-10-12T23:59:59-05:30"],
)
def test_date_time_accepted(value):
    doc = state_train()
    doc["started"] = value
    assert schema_errors("train", doc) == []


@pytest.mark.parametrize(
    "value",
    [
        "2026-10-12 08:00:00Z",
        "2026-10-12T08:00:00",
        "2026-02-30T00:00:00Z",
        "2026-10-12T25:00:00Z",
        "2026-10-12T08:00Z",
        "2026-10-12T08:00:00+0800",
        "2026-10-12T08:00:00Z\n",
        "２０２６-10-12T08:00:00Z",
    ],
)
def test_date_time_refused(value):
    doc = state_train()
    doc["started"] = value
    assert [p for p, _ in schema_errors("train", doc)] == ["$.started"]


@pytest.mark.parametrize(
    "value", ["2026-02-29", "20261012", "2026-W42-1", "2026-10-1", "２０２６-10-12", "2026-10-12\n"]
)
def test_date_refused(value):
    doc = score("exam", value, 1.0)
    assert [p for p, _ in schema_errors("score", doc)] == ["$.date"]


def test_date_leap_day_accepted():
    assert schema_errors("score", score("exam", "2028-02-29", 1.0)) == []


def test_train_commit_may_be_absent_and_runs_are_open():
    doc = miss_train()
    del doc["trainer"]["commit"]
    doc["runs"][0]["ctx"] = 8192  # a per-run override
    doc["extra_top_level"] = {"anything": [1]}
    assert schema_errors("train", doc) == []


def test_times_are_required_for_miss_training_only():
    """The user's State train.json records no times (seed 000); a MiSS one records when it ran."""
    doc = state_train()
    del doc["started"], doc["finished"]
    assert schema_errors("train", doc) == []
    doc = miss_train()
    del doc["finished"]
    for run in doc["runs"]:
        del run["started"], run["finished"]  # per-run times are optional
    assert schema_errors("train", doc) == [
        ("$", 'missing required property "finished" (required for MiSS training: the runs and the start and end times)')
    ]


def test_miss_manifest_allows_unknown_keys():
    doc = miss_manifest()
    doc["future_field"] = 1
    doc["targets"][0]["note"] = "x"
    assert schema_errors("miss", doc) == []


def test_unknown_schema_name():
    with pytest.raises(ValueError, match="unknown schema 'nope'"):
        schema_errors("nope", {})
    with pytest.raises(ValueError, match="unknown schema"):
        load_schema("index.schema.json")


# --------------------------------------------------------------------------------------------------
# the schema files themselves


def _subschemas(node: Any, where: str):
    """Yield (location, schema) for every schema object inside ``node``."""
    if not isinstance(node, dict):
        return
    yield where, node
    for key in ("properties", "patternProperties", "$defs"):
        for name, sub in node.get(key, {}).items():
            yield from _subschemas(sub, f"{where}/{key}/{name}")
    for key in ("additionalProperties", "items", "if", "then", "else", "not", "propertyNames"):
        if isinstance(node.get(key), dict):
            yield from _subschemas(node[key], f"{where}/{key}")
    for key in ("prefixItems", "allOf", "anyOf", "oneOf"):
        for i, sub in enumerate(node.get(key, [])):
            yield from _subschemas(sub, f"{where}/{key}/{i}")


@pytest.mark.parametrize("name", SCHEMA_NAMES)
def test_every_property_has_a_description(name):
    missing = []
    count = 0
    for where, sch in _subschemas(load_schema(name), name):
        for key in ("properties", "patternProperties", "$defs"):
            for prop, sub in sch.get(key, {}).items():
                count += 1
                if not (isinstance(sub, dict) and isinstance(sub.get("description"), str) and sub["description"]):
                    missing.append(f"{where}/{key}/{prop}")
        for key in ("additionalProperties", "items"):
            if isinstance(sch.get(key), dict) and not sch[key].get("description"):
                missing.append(f"{where}/{key}")
    assert count > 5
    assert missing == []


def test_the_description_walk_sees_deep_properties():
    # The walk must reach nested objects, conditional branches, $defs and items, or the test above is weak.
    seen = {where for where, _ in _subschemas(load_schema("index"), "index")}
    assert "index/$defs/entry/properties/miss/properties/rank" in seen
    assert "index/$defs/entry/allOf/1/then/properties/group" in seen
    assert "index/properties/signing/properties/trusted_keys/items/properties/public_key" in seen
    seen = {where for where, _ in _subschemas(load_schema("miss"), "miss")}
    assert "miss/properties/targets/items/properties/shape/prefixItems/1" in seen


@pytest.mark.parametrize("name", SCHEMA_NAMES)
def test_schema_header_and_metaschema(name):
    from jsonschema import Draft202012Validator

    sch = load_schema(name)
    assert sch["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert sch["$id"] == f"https://rwkv-registry.github.io/schemas/v1/{name}.schema.json"
    assert sch["title"] and sch["description"]
    Draft202012Validator.check_schema(sch)


def test_ids_are_absolute_and_unique():
    ids = [load_schema(n)["$id"] for n in SCHEMA_NAMES]
    assert len(set(ids)) == len(SCHEMA_NAMES)
    assert all(re.fullmatch(r"https://[a-z0-9.-]+/[A-Za-z0-9/._-]+\.schema\.json", i) for i in ids)


def test_every_ref_is_local_or_a_known_id():
    ids = {load_schema(n)["$id"] for n in SCHEMA_NAMES}
    refs = []
    for name in SCHEMA_NAMES:
        for _, sch in _subschemas(load_schema(name), name):
            if "$ref" in sch:
                refs.append(sch["$ref"])
    assert refs
    for ref in refs:
        assert ref.startswith("#/$defs/") or ref in ids, ref
    assert {r for r in refs if not r.startswith("#")} == {schemas.schema_id("score"), schemas.schema_id("smoke-record")}


def test_load_schema_returns_a_copy():
    a = load_schema("score")
    a["properties"].clear()
    assert load_schema("score")["properties"]


def test_schema_files_are_strict_json_on_disk():
    # Each schema file parses with the strict loader (no duplicate keys) and is the package's data.
    from importlib import resources

    from rwkv_registry.formats.jsonload import load_json_bytes

    folder = resources.files("rwkv_registry.schemas")
    files = sorted(p.name for p in folder.iterdir() if p.name.endswith(".schema.json"))
    assert files == sorted(f"{n}.schema.json" for n in SCHEMA_NAMES)
    for n in SCHEMA_NAMES:
        assert load_json_bytes(folder.joinpath(f"{n}.schema.json").read_bytes()) == load_schema(n)


def test_schema_digest(monkeypatch):
    d = schema_digest()
    assert re.fullmatch(r"[0-9a-f]{64}", d)
    assert schema_digest() == d
    real = schemas._schema_bytes
    monkeypatch.setattr(schemas, "_schema_bytes", lambda n: real(n) + (b" " if n == "miss" else b""))
    assert schema_digest() != d
    # not simply the hash of one file
    assert d not in {hashlib.sha256(real(n)).hexdigest() for n in SCHEMA_NAMES}


def test_validation_touches_no_network(monkeypatch):
    def refuse(*a, **k):
        raise AssertionError("network access during validation")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(urllib.request, "urlopen", refuse)
    schemas._validator.cache_clear()
    try:
        assert schema_errors("index", seed_index()) == []
    finally:
        schemas._validator.cache_clear()


def test_import_is_light():
    code = (
        "import sys, rwkv_registry.schemas, rwkv_registry.formats.jsonload; "
        "print(sorted(m for m in ('jsonschema', 'referencing', 'torch', 'textual') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def _whole_document_errors(instance: Any) -> list[tuple[str, str]]:
    """schema_errors as it was before index entries were validated one by one: the whole document at once."""
    found = schemas._leaf_errors(schemas._validator("index"), instance)
    found.sort(key=lambda pm: (schemas._sort_key(pm[0]), pm[1]))
    out: list[tuple[str, str]] = []
    for parts, message in found:
        item = (schemas._json_path(parts), message)
        if not out or out[-1] != item:
            out.append(item)
    return out


def test_split_arrays_schema_is_only_items_of_a_def():
    # what makes item-by-item validation give exactly the whole document's errors
    for name, (key, item) in schemas.SPLIT_ARRAYS.items():
        prop = dict(load_schema(name)["properties"][key])
        prop.pop("description", None)
        items = dict(prop.pop("items"))
        items.pop("description", None)
        assert prop == {"type": "array"} and items == {"$ref": f"#/$defs/{item}"}
        assert key in load_schema(name)["required"]


def test_index_entries_validated_one_by_one_give_the_whole_documents_errors():
    import random

    rng = random.Random(7)
    base = seed_index()
    mutations = [
        lambda e: e.pop("file"),
        lambda e: e.update(profile="x"),
        lambda e: e.update(extra=1),
        lambda e: e["file"].update(sha256="ab"),
        lambda e: e.update(recommended=1),
        lambda e: e.update(id=""),
        lambda e: e["data"].pop("rows"),
        lambda e: e.update(scores=[{"benchmark": 1}]),
        lambda e: e.update(step=-1),
        lambda e: e.update(miss={"rank": "x"}),
        lambda e: e.update(scores=[{**e["scores"][0], "date": "2026-13-01"}] if e.get("scores") else []),
        lambda e: e.update(recommended=True),  # same content as another entry's: a memo hit
    ]
    compared = 0
    for _ in range(200):
        doc = copy.deepcopy(base)
        doc["entries"] = [copy.deepcopy(rng.choice(base["entries"])) for _ in range(rng.randint(0, 6))]
        for e in doc["entries"]:
            for _ in range(rng.randint(0, 2)):
                with contextlib.suppress(KeyError, TypeError):  # a key an earlier mutation removed
                    rng.choice(mutations)(e)
        if rng.random() < 0.2:
            doc["entries"].append(rng.choice([1, "x", None, [], {}]))
        if rng.random() < 0.2:
            doc["registry"] = 5
        if rng.random() < 0.1:
            doc["x-bogus"] = 1
            doc["bogus"] = 1
        whole = _whole_document_errors(doc)
        assert schema_errors("index", doc) == whole
        memo: dict[str, Any] = {}
        assert schema_errors("index", doc, memo=memo) == whole
        # as the validation cache keeps it (JSON), read by a fresh process
        memo = json.loads(json.dumps(memo))
        schemas.forget_results()
        assert schema_errors("index", doc, memo=memo) == whole
        compared += len(whole)
    assert compared > 500
    # entries not a list: the whole document at once, as before
    doc = seed_index()
    doc["entries"] = {"a": 1}
    assert schema_errors("index", doc) == _whole_document_errors(doc) != []


def test_memo_is_keyed_by_content_and_schema():
    doc = seed_index()
    memo: dict[str, Any] = {}
    assert schema_errors("index", doc, memo=memo) == []
    assert len(memo) == 1 + len({repr(e) for e in doc["entries"]})  # the rest of the index, then each entry
    rest_key, key = list(memo)[:2]
    # a poisoned memo entry is used (the cache is trusted like the facts cache) only for that exact content
    memo[rest_key] = [[["links"], "planted in the rest"]]
    schemas.forget_results()
    assert schema_errors("index", doc, memo=memo) == [("$.links", "planted in the rest")]
    memo[rest_key] = []
    memo[key] = [[["id"], "planted"]]
    schemas.forget_results()
    assert ("$.entries[0].id", "planted") in schema_errors("index", doc, memo=memo)
    changed = copy.deepcopy(doc)
    changed["entries"][0]["description"] += "!"
    schemas.forget_results()
    assert schema_errors("index", changed, memo=memo) == []
    schemas.forget_results()


def test_memo_key_tells_equal_values_of_other_types_apart():
    """True == 1 == 1.0 in Python, and "1" is the same text in other quotes: the memo's key must still tell them
    apart (the schema refuses all but the bool), and two copies of one content share a key."""
    doc = seed_index()
    memo: dict[str, Any] = {}
    schemas.forget_results()
    assert schema_errors("index", doc, memo=memo) == []
    for bad in (1, 1.0, "True", [True], {"x": True}):
        changed = copy.deepcopy(doc)
        changed["entries"][0]["recommended"] = bad
        errors = schema_errors("index", changed, memo=memo)
        assert [p for p, _ in errors] == ["$.entries[0].recommended"], bad
    same = copy.deepcopy(doc)
    keys = set(memo)
    schemas.forget_results()
    assert schema_errors("index", same, memo=memo) == [] and set(memo) == keys  # nothing new: every key known
    # the key of a value marshal refuses (no JSON parser makes one) is its repr's, apart from every marshal key
    odd = schemas._content_key("p", [range(1)])
    assert odd == schemas._content_key("p", [range(1)]) != schemas._content_key("p", [[0]])


def test_the_index_schema_lists_every_sampling_preset_as_its_examples() -> None:
    """entries[].sampling is any string to the schema (validate's PRF003 judges the name, with a did-you-mean); its
    examples and description name the presets RWKV-Agent's presets.go defines, the table the tool uses."""
    from rwkv_registry.index.sampling import SAMPLING_PRESETS

    prop = load_schema("index")["$defs"]["entry"]["properties"]["sampling"]
    assert prop["type"] == "string" and "enum" not in prop
    assert prop["examples"] == list(SAMPLING_PRESETS)
    assert "presets.go" in prop["description"] and "PRF003" in prop["description"]
