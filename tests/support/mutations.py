"""Mutations of the tiny registry (regtools.build_registry) shared by the rule tests: each edits it the way a
careless publisher would (a file replaced, an index record changed, a score added), keeping its sums in step
where the point is another rule. The table of every rule's failing case is tests/test_validate_rules.py."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from regtools import MISS_A, STATE, TINY_BASE, bf16_bytes, custom_miss, edit_index, refresh, resum, write_state

from rwkv_registry.engine.validate import validate_registry


def json_edit(root: Path, rel: str, fn: Callable[[dict], None]) -> None:
    p = root / rel
    data = json.loads(p.read_text())
    fn(data)
    p.write_text(json.dumps(data, indent=2))


def replace_state(root: Path, **kw: Any) -> None:
    write_state(root / STATE, **kw)
    refresh(root, STATE)


def replace_miss(root: Path, **kw: Any) -> None:
    custom_miss(root / MISS_A, **kw)
    refresh(root, MISS_A)


def entry_edit(rel: str, fn: Callable[[dict], None]) -> Callable[[Path], None]:
    def mutate(root: Path) -> None:
        def edit(index: dict) -> None:
            for e in index["entries"]:
                if e["path"] == rel:
                    fn(e)

        edit_index(root, edit)

    return mutate


def set_key(d: dict, key: str, value: Any) -> None:
    d[key] = value


def non_state_file(root: Path) -> None:
    import torch

    torch.save({"foo": torch.zeros(2)}, root / STATE)
    refresh(root, STATE)


def miss_tensor_dtype(tensors: dict) -> None:
    from rwkv_registry.formats.pthwrite import RawTensor

    name = next(iter(tensors))
    t = tensors[name]
    tensors[name] = RawTensor("float16", t.shape, t.data)


def miss_no_manifest(root: Path) -> None:
    from rwkv_registry.formats.pthwrite import RawTensor, write_pth

    write_pth(
        root / MISS_A,
        {"blocks.0.att.key.weight.D": RawTensor("bfloat16", (128, 4), bf16_bytes(512, 0))},
        layout="lightning",
    )
    refresh(root, MISS_A)


def same_base_file_twice(root: Path) -> None:
    """The base registered a second time under another name (its sha256 copied along)."""

    def add(index: dict[str, Any]) -> None:
        b = json.loads(json.dumps(index["bases"][0]))
        b.update(name=f"{TINY_BASE}-copy", source=dict(b["source"], file=f"{TINY_BASE}-copy.pth"))
        index["bases"].append(b)

    edit_index(root, add)


def same_bytes_twice(root: Path) -> None:
    """The State copied to a second name and registered as a second entry."""
    copy = STATE.replace("s1.pth", "s1-copy.pth")
    shutil.copy(root / STATE, root / copy)

    def add(index: dict[str, Any]) -> None:
        e = json.loads(json.dumps(next(e for e in index["entries"] if e["path"] == STATE)))
        e.update(id="s1-copy", path=copy, recommended=False)
        index["entries"].append(e)

    edit_index(root, add)
    from rwkv_registry.store.ops import write_readme

    write_readme(root)
    resum(root)


def score_record(**more: Any) -> dict[str, Any]:
    return {
        "benchmark": "exam",
        "date": "2026-10-17",
        "score": 52.2,
        "unit": "percent",
        "solved": 296.5,
        "total": 568,
        "runs": 2,
        "backend": None,
        "note": None,
        "report": None,
        **more,
    }


def vs_state(wins: int, losses: int, p: float) -> dict[str, Any]:
    return {"against": "s1", "wins": wins, "losses": losses, "p_value": p}


def scores_codes(reg: Path, *scores: dict[str, Any]) -> set[str]:
    edit_index(reg, lambda i: next(e for e in i["entries"] if e["path"] == MISS_A).update(scores=list(scores)))
    refresh(reg, MISS_A)
    return {f.code for f in validate_registry(reg, use_cache=False).findings}
