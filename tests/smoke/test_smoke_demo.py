"""`rwkv-registry demo PATH --smoke` and the deterministic training script."""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace

import pytest

from rwkv_registry.cli import main
from rwkv_registry.model.smoke.demo import MISS_ID, STATE_ID
from rwkv_registry.model.smoke.train_tiny import TrainConfig, build_tiny_weights, cache_key
from rwkv_registry.validate import validate_registry


@pytest.mark.slow
def test_demo_smoke_beats_the_base_and_records(tiny_weights, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("RWKV_REGISTRY_SMOKE_WEIGHTS", str(tiny_weights.base.parent))
    assert main(["demo", str(tmp_path / "demo"), "--smoke"]) == 0
    out = capsys.readouterr().out
    assert "reusing the tiny weights" in out
    assert out.count("PASS") == 2
    reg = tmp_path / "demo-smoke" / "registry"
    index = json.loads((reg / "index.json").read_text())
    records = {e["id"]: e["smoke"] for e in index["entries"]}
    for eid in (STATE_ID, MISS_ID):
        [rec] = records[eid]
        assert rec["verdict"] == "pass" and rec["p_value"] < 0.05 and rec["wins"] > rec["losses"]
        assert rec["base_score"]["solved"] == 0
    assert validate_registry(reg).ok


@pytest.mark.slow
def test_training_is_deterministic_and_cached(tmp_path):
    config = replace(TrainConfig(), state_steps=2, miss_steps=2)
    a = build_tiny_weights(tmp_path / "a", config=config, parallel=False)
    b = build_tiny_weights(tmp_path / "b", config=config, parallel=True)  # worker processes: same bytes
    for x, y in ((a.base, b.base), (a.state, b.state), (a.miss, b.miss)):
        assert hashlib.sha256(x.read_bytes()).hexdigest() == hashlib.sha256(y.read_bytes()).hexdigest()
    assert not a.reused and not b.reused
    again = build_tiny_weights(tmp_path / "a", config=config)
    assert again.reused and again.key == a.key == cache_key(config)
    assert cache_key(replace(config, state_steps=3)) != a.key
    other = build_tiny_weights(tmp_path / "a", config=replace(config, miss_steps=1), parallel=False)
    assert not other.reused  # a changed input retrains in place
