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


@pytest.mark.parametrize("kind", ["user-files", "earlier-demo-plus-file", "file", "other-registry"])
def test_demo_smoke_never_deletes_what_it_did_not_write(tmp_path, kind, capsys):
    """`demo PATH --smoke` rebuilds `<PATH>-smoke/registry`: a folder there that the demo did not write is refused
    (exit 2) before anything is written, and left as it was."""
    from rwkv_registry.ops import init_registry

    work = tmp_path / "mine-smoke"
    reg = work / "registry"
    if kind == "file":
        work.parent.mkdir(parents=True, exist_ok=True)
        work.write_text("precious\n")
        mine = work
    else:
        if kind == "user-files":
            reg.mkdir(parents=True)
        else:
            init_registry(reg, name="demo/tiny-smoke" if kind == "earlier-demo-plus-file" else "me/real")
        mine = reg / "notes.txt"
        mine.write_text("precious\n")
    assert main(["demo", str(tmp_path / "mine"), "--smoke"]) == 2
    err = capsys.readouterr().err
    assert "is not an earlier tiny demo registry" in err or "is a file" in err
    assert mine.read_text() == "precious\n"
    assert not (tmp_path / "mine").exists()  # refused before the demo registry was built


def test_an_earlier_tiny_demo_registry_may_be_replaced(tmp_path):
    from rwkv_registry.model.smoke.demo import check_tiny_registry_dir
    from rwkv_registry.ops import init_registry

    init_registry(tmp_path / "registry", name="demo/tiny-smoke")
    check_tiny_registry_dir(tmp_path)  # no error: the demo wrote every file there
    check_tiny_registry_dir(tmp_path / "absent")


@pytest.mark.parametrize("given", [".", "./", "demo", "demo/."])
def test_the_tiny_registry_goes_beside_the_demo_not_inside_it(tmp_path, monkeypatch, given):
    from rwkv_registry.model.smoke.demo import smoke_work_dir

    (tmp_path / "demo").mkdir()
    monkeypatch.chdir(tmp_path / "demo" if given.startswith(".") else tmp_path)
    assert smoke_work_dir(given) == tmp_path / "demo-smoke"
