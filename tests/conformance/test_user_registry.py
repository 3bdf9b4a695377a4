"""The user's registry (seed 000, No-22/rwkv-agent-weights) built from the producers' own files, through the CLI.

Base ``rwkv7-g1k-7.2b-20260930-ctx25600`` registered by metadata with its real sha256, but a tiny architecture
(2 layers, n_embd 128) so that the weights are small; the State ``state/v1.41/v141b-s1224.pth`` is what the fp32
``rwkv_state_tune`` writes at step 1224 (:mod:`state_tune_writer`, ``state-step-00001224.pth``, renamed as the
user did); the three MiSS adapters ``miss/v2.1/r16-lr{1,2,3}e-5-e2/adapter-final.pth`` are what ``rwkv_miss_tune``
writes (:mod:`conformance.miss_tune_adapter`, rank 16, alpha 32, ``base_fingerprint`` the base's sha256). The
train.json files are the seed's (:mod:`rwkv_registry.store.demo`'s ``STATE_TRAIN``, ``MISS_TRAIN``). Everything goes
through ``init``, ``add-base`` and ``add`` as the user would type them; ``validate`` must then be clean.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from conformance.miss_adapter_cpp import export_input, trainer_targets
from conformance.miss_tune_adapter import save_adapter_pth
from state_registry import run, runtime_values
from state_tune_writer import write_state_tune

from rwkv_registry.store.demo import BASE, BASE_SHA256, MISS_ENTRIES, MISS_TRAIN, REGISTRY_NAME, STATE_TRAIN

LAYERS, EMBD = 2, 128
STATE = f"{BASE}/state/v1.41/v141b-s1224.pth"
GROUPS = ("r16-lr1e-5-e2", "r16-lr2e-5-e2", "r16-lr3e-5-e2")


def _miss_file(path: Path, seed: int) -> Path:
    """rwkv_miss_tune's adapter-final.pth for the tiny base: bf16 D of small normal values (fp32 truncated)."""
    ts = trainer_targets(LAYERS, EMBD, 4 * EMBD, 16)
    count = sum(t.out * t.rank for t in ts)
    values = (np.random.default_rng(seed).standard_normal(count) * 0.01).astype(np.float32)
    data = (values.view(np.uint32) >> 16).astype("<u2").tobytes()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(save_adapter_pth(export_input(16, 32.0, BASE_SHA256, bf16=True), ts, data))
    return path


def test_the_seed_registry_from_the_producers_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "rwkv-agent-weights"
    src = tmp_path / "outputs"
    src.mkdir()
    (src / "state.json").write_text(json.dumps(STATE_TRAIN))
    (src / "miss.json").write_text(json.dumps(MISS_TRAIN))
    arch = f"n_layer={LAYERS},n_embd={EMBD},vocab_size=65536"

    assert run(capsys, "init", root, "--name", REGISTRY_NAME).rc == 0
    based = run(
        capsys,
        "add-base",
        root,
        "--name",
        BASE,
        "--source",
        "BlinkDL/rwkv7-g1",
        "--sha256",
        BASE_SHA256,
        "--arch",
        arch,
    )
    assert based.rc == 0, based.err

    written = write_state_tune(src / "state-run", LAYERS, EMBD // 64, 64, runtime_values(LAYERS, EMBD // 64), step=1224)
    assert written.name == "state-step-00001224.pth"
    state = shutil.copyfile(written, src / "v141b-s1224.pth")  # the name the user gave it
    added = run(
        capsys,
        "add",
        root,
        state,
        "--base",
        BASE,
        "--data-version",
        "v1.41",
        "--train",
        src / "state.json",
        "--recommended",
        "--description",
        "step 1224 of 1374, lr 0.01 -> 0.00167",
    )
    assert added.rc == 0, added.err

    descriptions = {group: description for group, _id, _rec, description, _scores in MISS_ENTRIES}
    for seed, group in enumerate(GROUPS):
        adapter = _miss_file(src / group / "adapter-final.pth", seed)
        args = ["--group", group, "--description", descriptions[group]]
        if group == "r16-lr2e-5-e2":
            args.append("--recommended")
        added = run(
            capsys, "add", root, adapter, "--base", BASE, "--data-version", "v2.1", "--train", src / "miss.json", *args
        )
        assert added.rc == 0, added.err

    report = run(capsys, "validate", root, "--format", "json", "--no-cache")
    errors = [f for f in report.json()["findings"] if f["severity"] == "error"]
    assert report.rc == 0 and errors == []
    # the rest: the registry is no git clone (GIT004) and the seed never recorded the trainers' commit (TRN006)
    assert {f["code"] for f in report.json()["findings"]} == {"GIT004", "TRN006"}

    index = json.loads((root / "index.json").read_text())
    assert [b["name"] for b in index["bases"]] == [BASE] and index["bases"][0]["sha256"] == BASE_SHA256
    paths = sorted(e["path"] for e in index["entries"])
    assert paths == sorted([STATE, *(f"{BASE}/miss/v2.1/{g}/adapter-final.pth" for g in GROUPS)])
    assert {e["path"]: e["recommended"] for e in index["entries"]} == {
        STATE: True,
        **{f"{BASE}/miss/v2.1/{g}/adapter-final.pth": g == "r16-lr2e-5-e2" for g in GROUPS},
    }
    for e in index["entries"]:
        source = state if e["method"] == "state" else src / e["path"].split("/")[-2] / "adapter-final.pth"
        assert (root / e["path"]).read_bytes() == source.read_bytes()
        assert e["file"]["sha256"] == hashlib.sha256(source.read_bytes()).hexdigest()
    for version in ("state/v1.41", "miss/v2.1"):
        assert (root / BASE / version / "train.json").is_file()
    sums = (root / "SHA256SUMS").read_text()
    for rel in [*paths, "index.json", "README.md", f"{BASE}/state/v1.41/train.json", f"{BASE}/miss/v2.1/train.json"]:
        assert f"{hashlib.sha256((root / rel).read_bytes()).hexdigest()}  {rel}\n" in sums
    readme = (root / "README.md").read_text()
    assert BASE in readme and "v141b-s1224" in readme and "r16-lr2e-5-e2" in readme
    assert run(capsys, "sums", root, "--check").rc == 0
