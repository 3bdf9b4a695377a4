"""Registries for the TUI tests, built through the core's public API (no torch, deterministic bytes).

``build_small`` makes one tiny base with a State and two MiSS adapters, scores on fixed dates;
``break_registry`` damages one so that validation finds errors; every value shown on screen is
fixed (no dates of today, no absolute paths), so SVG snapshots are stable.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from regtools import DATA_SHA, TINY_ARCH
from regtools import TINY_BASE as BASE
from regtools import TINY_SHA as BASE_SHA

from rwkv_registry.store.demo import write_synthetic_miss, write_synthetic_state
from rwkv_registry.store.ops import add_base, add_entry, init_registry, update_index

NAME = "test/tui-registry"
STATE_ID = "s1"
MISS_IDS = ("v2-r4-a", "v2-r4-b")


def score(value: float, date: str, **kw: Any) -> dict[str, Any]:
    s = {
        "benchmark": "exam",
        "date": date,
        "score": value,
        "unit": "percent",
        "solved": None,
        "total": 568,
        "runs": 2,
        "backend": None,
        "note": None,
        "report": None,
    }
    s.update(kw)
    return s


def state_train() -> dict[str, Any]:
    return {
        "trainer": {"name": "rwkv_state_tune", "version": "1.8.1", "commit": "47df608"},
        "method": "state",
        "data": {"version": "v1", "rows": 100, "sha256": DATA_SHA},
        "hyperparameters": {"lr": 0.01, "lr_final": 0.001, "ctx": 4096},
        "command": "rwkv_state_tune --lr 0.01 --lr-final 0.001",
        "started": "2026-01-02T08:00:00Z",
        "finished": "2026-01-02T10:00:00Z",
    }


def miss_train() -> dict[str, Any]:
    return {
        "trainer": {"name": "rwkv_miss_tune", "version": "1.8.1", "commit": "47df608"},
        "method": "miss",
        "data": {"version": "v2", "rows": 200, "sha256": DATA_SHA},
        "hyperparameters": {"rank": 4, "alpha": 8, "ctx": 4096},
        "command": "rwkv_miss_tune --rank 4 --alpha 8 --lr $LR",
        "started": "2026-01-03T08:00:00Z",
        "finished": "2026-01-03T12:00:00Z",
        "runs": [
            {
                "group": "r4-a",
                "lr": 2e-5,
                "lr_final": 2e-6,
                "epochs": 2,
                "steps": 100,
                "started": "2026-01-03T08:00:00Z",
                "finished": "2026-01-03T10:00:00Z",
            },
            {
                "group": "r4-b",
                "lr": 3e-5,
                "lr_final": 3e-6,
                "epochs": 2,
                "steps": 100,
                "started": "2026-01-03T10:00:00Z",
                "finished": "2026-01-03T12:00:00Z",
            },
        ],
    }


def build_small(root: Path, tmp: Path) -> Path:
    """One tiny base; State ``s1`` (recommended) and MiSS ``v2-r4-a`` (recommended) / ``v2-r4-b``."""
    init_registry(root, name=NAME, title="TUI test registry")
    add_base(
        root,
        name=BASE,
        source="BlinkDL/rwkv7-g1",
        sha256=BASE_SHA,
        size=1234,
        arch=dict(TINY_ARCH),
        today="2026-01-01",
        scores=[score(20.0, "2026-01-05", note="base alone")],
    )
    src = tmp / "src"
    src.mkdir(parents=True, exist_ok=True)
    write_synthetic_state(src / "s1.pth", TINY_ARCH, seed=1)
    add_entry(
        root,
        src / "s1.pth",
        base=BASE,
        data_version="v1",
        train=state_train(),
        recommended=True,
        description="lr 0.01→0.001",
        scores=[score(40.0, "2026-01-05")],
    )
    for i, (group, eid, value) in enumerate((("r4-a", MISS_IDS[0], 50.0), ("r4-b", MISS_IDS[1], 45.5))):
        f = src / group / "adapter-final.pth"
        f.parent.mkdir(exist_ok=True)
        write_synthetic_miss(f, TINY_ARCH, rank=4, alpha=8, base_sha256=BASE_SHA, seed=i + 1)
        add_entry(
            root,
            f,
            base=BASE,
            data_version="v2",
            train=miss_train(),
            group=group,
            entry_id=eid,
            recommended=i == 0,
            description=f"lr {'2e-5' if i == 0 else '3e-5'}",
            scores=[score(value, "2026-01-06")],
        )
    return root


def miss_path(root: Path, group: str = "r4-a") -> Path:
    return root / BASE / "miss" / "v2" / group / "adapter-final.pth"


def break_registry(root: Path) -> Path:
    """Damage a small registry: MiSS r4-b's bytes changed (same size), the State's train.json gone,
    a stray file at the root."""
    p = miss_path(root, "r4-b")
    data = bytearray(p.read_bytes())
    data[len(data) // 2] ^= 0x01  # inside a D tensor: hash and content_version break, the zip still opens
    p.write_bytes(bytes(data))
    (root / BASE / "state" / "v1" / "train.json").unlink()
    (root / "notes.txt").write_text("stray\n")
    return root


def set_smoke(root: Path, entry_id: str, record: dict[str, Any]) -> None:
    """Record a smoke result on an entry through the registry's own write path."""

    def edit(index: dict[str, Any]) -> None:
        for e in index["entries"]:
            if e["id"] == entry_id:
                e["smoke"] = [record]

    update_index(root, edit)


SMOKE = {
    "date": "2026-01-07T09:30:00Z",
    "device": "cpu",
    "torch": "2.13.0",
    "cuda": None,
    "cases_sha256": hashlib.sha256(b"cases").hexdigest(),
    "cases": 20,
    "profile": "g1k-think",
    "entry_score": {"solved": 14, "total": 20, "by_category": {"easy": {"solved": 5, "total": 5}}},
    "base_score": {"solved": 9, "total": 20, "by_category": {"easy": {"solved": 4, "total": 5}}},
    "wins": 6,
    "losses": 1,
    "p_value": 0.125,
    "verdict": "pass",
    "tool_version": "0.1.0",
}


# --- driving the app -----------------------------------------------------------------------------


async def settle(pilot: Any, rounds: int = 4) -> None:
    """Let typed filter text apply and the cursor's details be drawn (both wait for the keys to pause, the details
    then for the details thread), workers finish and the messages they posted be handled (workers may start more
    workers)."""
    app = pilot.app
    await pilot.pause()
    for screen in app.screen_stack:
        for pending in ("filter_pending", "details_pending", "details_loading"):
            if getattr(screen, pending, False):
                await wait_until(pilot, lambda screen=screen, pending=pending: not getattr(screen, pending))
    for _ in range(rounds):
        await pilot.pause()
        if all(w.is_finished for w in app.workers):
            break
        await app.workers.wait_for_complete()
    await pilot.pause()


async def wait_until(pilot: Any, condition: Any, timeout: float = 10.0) -> None:
    """Pause until ``condition()`` is true (fails after ``timeout`` seconds)."""
    import time

    end = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > end:
            raise AssertionError("condition not reached in time")
        await pilot.pause(0.02)


def text_of(renderable: Any, width: int = 100) -> str:
    """A rich renderable as plain text (what a details tab shows)."""
    import io

    from rich.console import Console

    console = Console(width=width, record=True, file=io.StringIO(), color_system=None)
    console.print(renderable)
    return console.export_text()


def tab_text(app: Any, key: str, width: int = 100) -> str:
    """Plain text of one details tab of the main screen."""
    return text_of(app.main.details.section(key).content, width)


def visible_labels(tree: Any) -> list[str]:
    """Labels of the tree's lines as displayed (expanded nodes only), depth-indented by two spaces."""
    out = []
    for line in range(tree.last_line + 1):
        node = tree.get_node_at_line(line)
        if node is None:
            break
        depth = 0
        parent = node.parent
        while parent is not None:
            depth += 1
            parent = parent.parent
        out.append("  " * depth + node.label.plain)
    return out


def run_async(fn: Any) -> Any:
    """Run an ``async def`` test with asyncio.run (no pytest async plugin needed)."""
    import asyncio
    import functools

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return asyncio.run(fn(*args, **kwargs))

    return wrapper
