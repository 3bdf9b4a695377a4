"""Shared helpers of the State conformance tests: a fresh registry whose base fits, and the CLI as a user runs it.

``fresh_registry`` makes a registry with one base of the given architecture (registered by metadata, as
``add-base --sha256 --arch`` does: the State rules need only its shape); ``run`` calls the ``rwkv-registry``
entry point in this process and returns its exit code and output; ``add_and_validate`` is the check every
producer's file goes through: ``add`` it, then ``validate --format json`` the registry.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from regtools import TINY_ARCH, TINY_SHA, state_train

from rwkv_registry.cli.main import main

BASE = "rwkv7-tiny-20260101-ctx4096"


@dataclass
class Run:
    rc: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


def run(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> Run:
    capsys.readouterr()
    rc = main([str(a) for a in argv])
    got = capsys.readouterr()
    return Run(rc, got.out, got.err)


def arch_of(n_layer: int, n_embd: int) -> dict[str, Any]:
    """TINY_ARCH with another depth and width (H = n_embd / 64 heads)."""
    return dict(TINY_ARCH, n_layer=n_layer, n_embd=n_embd, n_head=n_embd // 64, ffn_size=4 * n_embd)


def fresh_registry(root: Path, arch: dict[str, Any] | None = None) -> Path:
    from rwkv_registry.store.ops import add_base, init_registry

    init_registry(root, name="test/state-conformance")
    add_base(root, name=BASE, source="BlinkDL/rwkv7-g1", sha256=TINY_SHA, size=1234, arch=dict(arch or TINY_ARCH))
    return root


def train_file(tmp: Path, version: str = "v1") -> Path:
    path = tmp / f"train-{version}.json"
    path.write_text(json.dumps(state_train(version)))
    return path


def runtime_values(layers: int, heads: int, n: int = 64, seed: int = 0) -> list[float]:
    """A trained State's values in the trainers' runtime layout ``[L][H][K][V]``: small, finite, deterministic."""
    rng = random.Random(seed)
    return [rng.gauss(0.0, 0.1) for _ in range(layers * heads * n * n)]


@dataclass
class Verdict:
    add: Run
    validate: Run

    @property
    def findings(self) -> list[tuple[str, str, str]]:
        """(code, severity, message) of every finding ``validate`` reports on the State's own file."""
        report = self.validate.json()
        return [
            (f["code"], f["severity"], f["message"])
            for f in report["findings"]
            if f["path"].endswith((".pth", ".safetensors"))
        ]


def add_and_validate(
    capsys: pytest.CaptureFixture[str], tmp: Path, state: Path, arch: dict[str, Any] | None = None
) -> Verdict:
    """``add`` ``state`` to a fresh registry under ``tmp`` whose base has ``arch``; then ``validate`` it."""
    root = fresh_registry(tmp / "reg", arch)
    added = run(capsys, "add", root, state, "--base", BASE, "--data-version", "v1", "--train", train_file(tmp))
    checked = run(capsys, "validate", root, "--format", "json", "--no-cache")
    return Verdict(added, checked)


def republish(root: Path, rel: str) -> None:
    """Record the file now at ``rel`` (put there by a test, however large) in index.json and SHA256SUMS, as an
    ``add`` of it would have: the file rules then judge its content alone."""
    import hashlib

    from regtools import edit_index, resum

    h = hashlib.sha256()
    with open(root / rel, "rb") as f:
        while chunk := f.read(1 << 24):
            h.update(chunk)
    size = (root / rel).stat().st_size
    edit_index(
        root,
        lambda ix: [e.update(file={"sha256": h.hexdigest(), "size": size}) for e in ix["entries"] if e["path"] == rel],
    )
    resum(root)
