"""`rwkv-registry demo PATH --smoke` and the deterministic training script."""

from __future__ import annotations

import hashlib
import json
import shlex
from dataclasses import replace

import pytest

from rwkv_registry.cli.main import main
from rwkv_registry.engine.validate import validate_registry
from rwkv_registry.model.smoke.demo import MISS_ID, STATE_ID
from rwkv_registry.model.smoke.train_tiny import TrainConfig, build_tiny_weights, cache_key


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
    # the base file `smoke --base-file` needs is printed, with the command that runs each smoke again
    lines = out.splitlines()
    base = tiny_weights.base
    assert lines.count(f"smoke demo: base file (for smoke --base-file): {base}") == 2
    for eid in (STATE_ID, MISS_ID):
        command = f"rwkv-registry smoke {reg} {eid} --base-file {base} --device cpu --think-tokens 64"
        assert f"smoke demo: run this smoke again: {command}" in lines
    assert main(shlex.split(command)[1:]) == 0  # the MiSS's, as printed: it runs and passes
    assert "PASS" in capsys.readouterr().out


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
    from rwkv_registry.store.ops import init_registry

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
    from rwkv_registry.store.ops import init_registry

    init_registry(tmp_path / "registry", name="demo/tiny-smoke")
    check_tiny_registry_dir(tmp_path)  # no error: the demo wrote every file there
    check_tiny_registry_dir(tmp_path / "absent")


@pytest.mark.parametrize("given", [".", "./", "demo", "demo/."])
def test_the_tiny_registry_goes_beside_the_demo_not_inside_it(tmp_path, monkeypatch, given):
    from rwkv_registry.model.smoke.demo import smoke_work_dir

    (tmp_path / "demo").mkdir()
    monkeypatch.chdir(tmp_path / "demo" if given.startswith(".") else tmp_path)
    assert smoke_work_dir(given) == tmp_path / "demo-smoke"


@pytest.fixture
def fake_parts(monkeypatch):
    """build_tiny_weights whose training only writes its file (no torch training)."""
    from rwkv_registry.model.smoke import train_tiny

    def fake_part(part: str, base: str, out: str, config: TrainConfig) -> list[str]:
        from pathlib import Path

        Path(out).write_bytes(part.encode())
        return []

    monkeypatch.setattr(train_tiny, "_train_part", fake_part)
    return replace(TrainConfig(), n_embd=64)


def _user_file(out, name: str) -> None:
    out.mkdir(parents=True, exist_ok=True)
    if name == "link":
        (out / "tiny-state.pth").symlink_to(out.parent / "elsewhere.pth")
    elif name == "folder":
        (out / "tiny-miss.pth").mkdir()
    else:
        (out / name).write_text("precious\n")


def _tree(root) -> dict[str, bytes | str]:
    return {
        p.relative_to(root).as_posix(): (str(p.readlink()) if p.is_symlink() else b"" if p.is_dir() else p.read_bytes())
        for p in sorted(root.rglob("*"))
    }


@pytest.mark.parametrize(
    "name", ["rwkv7-tiny-demo.pth", "tiny-state.pth", "tiny-miss.pth", "manifest.json", "link", "folder"]
)
def test_tiny_weights_never_replace_a_file_the_demo_did_not_write(tmp_path, fake_parts, name):
    """A file of one of the names the tiny weights are written under, with no manifest of the demo's listing it,
    is refused (UsageError naming it) and left as it was."""
    from rwkv_registry.core.errors import UsageError

    out = tmp_path / "w"
    _user_file(out, name)
    before = _tree(out)
    with pytest.raises(UsageError) as e:
        build_tiny_weights(out, config=fake_parts, parallel=False)
    shown = {"link": "tiny-state.pth", "folder": "tiny-miss.pth"}.get(name, name)
    msg = str(e.value)
    assert shown in msg and ("is not the demo's" in msg or "not written by the demo" in msg)
    assert "Nothing was touched" in (e.value.hint or "")
    assert _tree(out) == before


def test_tiny_weights_replace_what_an_earlier_run_wrote_even_interrupted(tmp_path, fake_parts, monkeypatch):
    """The manifest claims the names before the first file is written: what an interrupted run left is the
    demo's, and the next run replaces it; a user file beside them is never touched."""
    from rwkv_registry.model.smoke import train_tiny

    out = tmp_path / "w"
    (tmp_path / "w").mkdir()
    (out / "notes.txt").write_text("mine\n")

    def interrupted(part: str, base: str, o: str, config: TrainConfig) -> list[str]:
        raise KeyboardInterrupt

    real = train_tiny._train_part
    monkeypatch.setattr(train_tiny, "_train_part", interrupted)
    with pytest.raises(KeyboardInterrupt):
        build_tiny_weights(out, config=fake_parts, parallel=False)
    assert (out / "rwkv7-tiny-demo.pth").is_file()  # written before the training was interrupted
    monkeypatch.setattr(train_tiny, "_train_part", real)
    w = build_tiny_weights(out, config=fake_parts, parallel=False)
    assert not w.reused and w.state.read_bytes() == b"state"
    assert build_tiny_weights(out, config=fake_parts, parallel=False).reused
    assert (out / "notes.txt").read_text() == "mine\n"


def test_demo_smoke_refuses_a_user_file_among_the_tiny_weights_before_writing(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("RWKV_REGISTRY_SMOKE_WEIGHTS", raising=False)
    mine = tmp_path / "mine-smoke" / "weights" / "tiny-state.pth"
    mine.parent.mkdir(parents=True)
    mine.write_text("precious\n")
    assert main(["demo", str(tmp_path / "mine"), "--smoke"]) == 2
    err = capsys.readouterr().err
    assert "tiny-state.pth was not written by the demo" in err
    assert mine.read_text() == "precious\n" and sorted(p.name for p in mine.parent.iterdir()) == ["tiny-state.pth"]
    assert not (tmp_path / "mine").exists()  # refused before the demo registry was built


def _no_traceback(err: str) -> None:
    assert "Traceback" not in err and "KeyboardInterrupt" not in err


def test_ctrl_c_while_the_tiny_weights_train_says_the_demo_registry_is_complete(tmp_path, monkeypatch, capsys):
    """Ctrl-C in the smoke part: the demo registry is complete and valid (not "incomplete"), exit 130."""
    from rwkv_registry.model.smoke import demo as smoke_demo

    def interrupted(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.delenv("RWKV_REGISTRY_SMOKE_WEIGHTS", raising=False)
    monkeypatch.setattr(smoke_demo, "build_tiny_weights", interrupted)
    path = tmp_path / "d"
    assert main(["demo", str(path), "--smoke"]) == 130
    err = capsys.readouterr().err
    _no_traceback(err)
    assert f"the demo registry in {path} is complete and valid; the smoke demo was not finished: " in err
    assert f"the tiny weights in {tmp_path / 'd-smoke' / 'weights'} were not finished" in err
    assert "incomplete" not in err.split("not finished:")[0]
    assert validate_registry(path).ok


def test_ctrl_c_while_the_tiny_registry_is_built_says_it_is_incomplete(tmp_path, monkeypatch, capsys):
    from rwkv_registry.model.smoke import demo as smoke_demo
    from rwkv_registry.model.smoke.train_tiny import TinyWeights

    def interrupted(*a, **k):
        raise KeyboardInterrupt

    fake = TinyWeights(tmp_path / "b.pth", tmp_path / "s.pth", tmp_path / "m.pth", "key", True)
    monkeypatch.setattr(smoke_demo, "build_tiny_weights", lambda *a, **k: fake)
    monkeypatch.setattr(smoke_demo, "build_tiny_registry", interrupted)
    assert main(["demo", str(tmp_path / "d"), "--smoke"]) == 130
    err = capsys.readouterr().err
    _no_traceback(err)
    assert "is complete and valid; the smoke demo was not finished: the tiny registry in" in err
    assert "is incomplete (a rerun rebuilds it)" in err


@pytest.mark.slow
def test_ctrl_c_during_a_smoke_run_names_the_command_that_finishes_it(tiny_weights, tmp_path, monkeypatch, capsys):
    """Ctrl-C while an entry is smoke-tested: the demo and tiny registries are complete and valid, that entry's
    report is not written, and the command the message gives runs it and records it."""
    import shlex

    from rwkv_registry.model.smoke import evaluate

    def interrupted(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setenv("RWKV_REGISTRY_SMOKE_WEIGHTS", str(tiny_weights.base.parent))
    monkeypatch.setattr(evaluate, "run_smoke", interrupted)
    assert main(["demo", str(tmp_path / "d"), "--smoke"]) == 130
    err = " ".join(capsys.readouterr().err.split())  # rich may wrap nothing here: stderr is plain
    _no_traceback(err)
    reg = tmp_path / "d-smoke" / "registry"
    assert f"the tiny registry in {reg} is complete and valid, but the smoke report of {STATE_ID} was not" in err
    index = json.loads((reg / "index.json").read_text())
    assert validate_registry(reg).ok and not any(e.get("smoke") for e in index["entries"])
    monkeypatch.undo()
    command = shlex.split(err.split("run it with `")[1].split("`")[0])
    assert command[:2] == ["rwkv-registry", "smoke"]
    assert main(command[1:]) == 0
    index = json.loads((reg / "index.json").read_text())
    assert [len(e.get("smoke") or []) for e in index["entries"] if e["id"] == STATE_ID] == [1]
