"""``rwkv-registry demo PATH --smoke``: a CPU smoke evaluation of tiny trained weights.

The demo registry of PATH mirrors the user's repository (a 7.2B base registered by metadata, no
real weights), so nothing in it can run. Beside it (``<PATH>-smoke/``) this builds a tiny
registry that can: the tiny base, State and MiSS of :mod:`~rwkv_registry.model.smoke.train_tiny`
(trained once, then reused from ``<PATH>-smoke/weights/`` while their inputs are unchanged;
``RWKV_REGISTRY_SMOKE_WEIGHTS=DIR`` keeps them in DIR instead) are registered with ``add-base``
and ``add``, and both entries are smoke-tested on the tiny case set, each result recorded in the
tiny registry's index.json. Each entry beats the base alone significantly (the random base never
writes a valid call), and the tiny registry then validates with its smoke records.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from rwkv_registry.index.smoke_cases import TINY_CASES, builtin_path
from rwkv_registry.model.smoke.train_tiny import TinyWeights, TrainConfig, build_tiny_weights

TINY_REGISTRY_NAME = "demo/tiny-smoke"
STATE_ID = "tiny-state-v1"
MISS_ID = "tiny-miss-v1"
MISS_GROUP = "r32-demo"
DEMO_THINK_TOKENS = 64  # the trained MiSS closes its thinking at once; the random base never does


class DemoSmokeInterrupted(KeyboardInterrupt):
    """Ctrl-C during the smoke part of ``demo --smoke``; ``what`` says what that part left."""

    def __init__(self, what: str) -> None:
        super().__init__(what)
        self.what = what


def _train_json(method: str, weights: TinyWeights, config: TrainConfig, data_sha: str, rows: int) -> dict[str, Any]:
    hyper: dict[str, Any]
    if method == "state":
        hyper = {"lr": config.state_lr, "steps": config.state_steps, "optimizer": "adam, cosine"}
    else:
        hyper = {
            "rank": config.miss_rank,
            "alpha": config.miss_alpha,
            "steps": config.miss_steps,
            "optimizer": "adam, cosine",
        }
    train: dict[str, Any] = {
        "trainer": {
            "name": "rwkv_registry_train_tiny",
            "version": "1.8.1",
            "commit": None,
            "x-note": "rwkv-registry's demo trainer; loss on the answer only, as rwkv_lightning_cuda's "
            "segments mask since v1.8.1",
        },
        "method": method,
        "data": {"version": "v1", "rows": rows, "sha256": data_sha},
        "hyperparameters": hyper,
        "command": "python -m rwkv_registry.model.smoke.train_tiny OUT_DIR",
        "started": "2026-10-18T00:00:00Z",
        "finished": "2026-10-18T00:01:00Z",
        "x-cache-key": weights.key,
    }
    if method == "miss":
        train["runs"] = [
            {
                "group": MISS_GROUP,
                "lr": config.miss_lr,
                "lr_final": config.miss_lr * config.min_lr_ratio,
                "started": "2026-10-18T00:00:30Z",
                "finished": "2026-10-18T00:01:00Z",
            }
        ]
    return train


def smoke_work_dir(root: str | Path) -> Path:
    """Where ``demo ROOT --smoke`` builds its tiny registry and weights: ``<ROOT>-smoke`` beside ROOT."""
    root = Path(root).absolute()  # `demo .` in d/ builds d-smoke/ beside it, not `-smoke` inside the demo
    return root.parent / f"{root.name}-smoke"


def check_tiny_registry_dir(work: Path) -> None:
    """Refuse (:class:`UsageError`, exit 2) when ``work/registry`` holds anything but an earlier tiny demo registry.

    The demo replaces ``work/registry`` on every run; it may delete only what it wrote there: a registry
    whose index.json names :data:`TINY_REGISTRY_NAME`, with no entry but the demo's two, no git repository,
    and no file outside its SHA256SUMS (its lock and interrupted-write files aside).
    """
    from rwkv_registry.core.errors import UsageError
    from rwkv_registry.fs.atomic import TMP_PREFIX, TRANSIENT_NAMES
    from rwkv_registry.index.sums import parse_sums
    from rwkv_registry.store.ops import GITIGNORE, PRECOMMIT

    # the housekeeping files init wrote, which SHA256SUMS does not list: the demo's while they are as written
    housekeeping = {".gitignore": GITIGNORE.encode(), ".pre-commit-config.yaml": PRECOMMIT.encode()}

    reg = work / "registry"
    hint = (
        f"Nothing was touched. Move {reg} away (or give the demo another PATH), then run the command again: "
        "the demo rebuilds that folder on every run."
    )
    if work.exists() and not work.is_dir():
        raise UsageError(f"{work} is a file: demo --smoke builds its tiny registry in that folder", hint=hint)
    if not reg.exists() and not reg.is_symlink():
        return
    why = None
    try:
        if reg.is_symlink() or not reg.is_dir():
            why = "it is not a directory"
        elif (reg / ".git").exists():
            why = "it is a git repository"
        else:
            index = json.loads((reg / "index.json").read_text("utf-8"))
            ids = {e.get("id") for e in index.get("entries", []) if isinstance(e, dict)}
            if (index.get("registry") or {}).get("name") != TINY_REGISTRY_NAME or not ids <= {STATE_ID, MISS_ID}:
                why = f"its index.json is not the tiny demo's ({TINY_REGISTRY_NAME}, entries {STATE_ID}, {MISS_ID})"
            else:
                sums, bad = parse_sums((reg / "SHA256SUMS").read_bytes())
                if bad:
                    raise ValueError(f"SHA256SUMS line {bad[0][0]} is not a sha256sum line")
                listed = {line.path for line in sums}
                extra = [
                    p.relative_to(reg).as_posix()
                    for p in sorted(reg.rglob("*"))
                    if (p.is_symlink() or not p.is_dir())
                    and p.name != "SHA256SUMS"
                    and p.name not in TRANSIENT_NAMES
                    and not p.name.startswith(TMP_PREFIX)
                    and p.relative_to(reg).as_posix() not in listed
                    and not (p.is_file() and housekeeping.get(p.relative_to(reg).as_posix()) == p.read_bytes())
                ]
                if extra:
                    why = "it holds files the demo did not write (" + ", ".join(extra[:3]) + ")"
    except (OSError, ValueError, AttributeError) as e:
        why = f"it is not a tiny demo registry that can be read ({e})"
    if why is not None:
        raise UsageError(f"{reg} is not an earlier tiny demo registry: {why}", hint=hint, path=str(reg))


def tiny_weights_dir(work: Path) -> Path:
    """Where ``demo --smoke`` keeps the tiny weights: ``RWKV_REGISTRY_SMOKE_WEIGHTS`` (a shared cache: tests,
    CI) or ``work/weights``."""
    import os

    env = os.environ.get("RWKV_REGISTRY_SMOKE_WEIGHTS")
    return Path(env) if env else work / "weights"


def check_demo_smoke_dirs(work: Path) -> None:
    """Refuse (exit 2) before anything is written when ``demo --smoke`` would replace what it did not write:
    in ``work/registry`` (:func:`check_tiny_registry_dir`) or among the tiny weights' files
    (:func:`~rwkv_registry.model.smoke.train_tiny.check_weights_dir`)."""
    from rwkv_registry.model.smoke.train_tiny import check_weights_dir

    check_tiny_registry_dir(work)
    check_weights_dir(tiny_weights_dir(work))


def build_tiny_registry(work: Path, weights: TinyWeights, config: TrainConfig | None = None) -> Path:
    """A fresh registry in ``work/registry`` with the tiny base, State and MiSS; returns its root.

    An earlier tiny demo registry there is replaced; anything else is refused (:func:`check_tiny_registry_dir`).
    """
    import hashlib

    from rwkv_registry.index.smoke_cases import load_cases
    from rwkv_registry.store.ops import add_base, add_entry, init_registry

    config = config or TrainConfig()
    root = work / "registry"
    check_tiny_registry_dir(work)
    if root.exists():
        shutil.rmtree(root)
    init_registry(root, name=TINY_REGISTRY_NAME, title="Tiny smoke demo")
    base = add_base(
        root,
        name=None,
        source="rwkv-registry/tiny-demo",
        base_file=weights.base,
        notes="A tiny random RWKV-7 made by rwkv_registry.model.smoke.train_tiny.",
    )
    data = builtin_path(TINY_CASES)
    data_sha = hashlib.sha256(data.read_bytes()).hexdigest()
    rows = len(load_cases(data))
    add_entry(
        root,
        weights.state,
        base=base["name"],
        data_version="v1",
        entry_id=STATE_ID,
        recommended=True,
        train=_train_json("state", weights, config, data_sha, rows),
        description="tiny State trained on the tiny smoke set",
    )
    add_entry(
        root,
        weights.miss,
        base=base["name"],
        data_version="v1",
        group=MISS_GROUP,
        entry_id=MISS_ID,
        recommended=True,
        train=_train_json("miss", weights, config, data_sha, rows),
        description="tiny MiSS r32 trained on the tiny smoke set",
    )
    return root


def rerun_command(reg: Path, entry_id: str, base: Path, *, record: bool = False) -> str:
    """The ``rwkv-registry smoke`` command that runs the demo's smoke of ``entry_id`` again (shell-quoted)."""
    import shlex

    argv = ["rwkv-registry", "smoke", str(reg), entry_id, "--base-file", str(base), "--device", "cpu"]
    argv += ["--think-tokens", str(DEMO_THINK_TOKENS)] + (["--record"] if record else [])
    return shlex.join(argv)


def run_demo_smoke(root: Path, *, console: Any, work_dir: Path | None = None, weights_dir: Path | None = None) -> int:
    """Build (or reuse) the tiny weights and registry beside ``root`` and smoke-test both entries.

    Returns 0 when both entries pass and each beats the base significantly, else 1. Ctrl-C raises
    :class:`DemoSmokeInterrupted`, which says what the interrupted phase left and how to finish it.
    """
    from rich.markup import escape

    from rwkv_registry.engine.validate import validate_registry
    from rwkv_registry.model.smoke.evaluate import Settings, run_smoke
    from rwkv_registry.model.smoke.report import append_record, build_report, recordable, render, smoke_record

    root = Path(root)
    work = work_dir or smoke_work_dir(root)
    check_tiny_registry_dir(work)
    wdir = weights_dir or tiny_weights_dir(work)

    def log(msg: str) -> None:
        console.print(f"[dim]smoke demo:[/] {msg}")

    reg = work / "registry"
    # what an interruption leaves, said for the phase it comes in (every file is written whole, or not at all)
    stage = f"the tiny weights in {wdir} were not finished (a rerun trains them again)"
    try:
        weights = build_tiny_weights(wdir, log=log)
        stage = f"the tiny registry in {reg} is incomplete (a rerun rebuilds it)"
        reg = build_tiny_registry(work, weights)
        log(f"tiny registry in {reg} (base {weights.base.name}, entries {STATE_ID}, {MISS_ID})")
        code = 0
        recorded: list[str] = []
        for entry_id in (STATE_ID, MISS_ID):
            stage = (
                f"the tiny registry in {reg} is complete and valid"
                + (f" (smoke record of {', '.join(recorded)} written)" if recorded else "")
                + f", but the smoke report of {entry_id} was not written nor recorded; run it with "
                f"`{rerun_command(reg, entry_id, weights.base, record=True)}`"
            )
            result = run_smoke(
                reg,
                entry_id,
                weights.base,
                device="cpu",
                cases_path=builtin_path(TINY_CASES),
                settings=Settings(think_tokens=DEMO_THINK_TOKENS),
            )
            report = build_report(result)
            if recordable(report):
                append_record(reg, entry_id, smoke_record(report))
                recorded.append(entry_id)
            stage = f"the tiny registry in {reg} is complete and valid" + (
                f" (smoke record of {', '.join(recorded)} written)" if recorded else ""
            )
            console.rule(f"smoke: {entry_id}")
            render(report, console)
            # the tiny base is in the weights folder, not the registry: say where, and how to run this again
            console.print(
                f"[dim]smoke demo:[/] base file (for smoke --base-file): {escape(str(weights.base))}", soft_wrap=True
            )
            console.print(
                f"[dim]smoke demo:[/] run this smoke again: {escape(rerun_command(reg, entry_id, weights.base))}",
                soft_wrap=True,
            )
            cmp_ = report["comparison"]
            significant = cmp_["p_value"] < report["settings"]["alpha"] and cmp_["wins"] > cmp_["losses"]
            if report["exit_code"] or not significant:
                code = 1
                log(f"[red]{entry_id} does not significantly beat the base[/]")
        report_v = validate_registry(reg)
    except KeyboardInterrupt:
        raise DemoSmokeInterrupted(stage) from None
    errors = report_v.counts.get("error", 0)
    log(f"tiny registry validates with its smoke records: {'ok' if report_v.ok else f'{errors} error(s)'}")
    return code if report_v.ok else 1
