"""A MiSS entry's default id is its data version without dots, then its group: `v2.1` and `v21` give the same id.
The second is refused (nothing written) with a message that says why and a free id to give with --id."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from regtools import TINY_BASE, miss_train, write_miss

from rwkv_registry.cli.main import main
from rwkv_registry.engine.validate import validate_registry


def _add_miss(reg: Path, tmp_path: Path, version: str, seed: int, *extra: str) -> list[str]:
    src = tmp_path / "in" / f"m{seed}" / "adapter-final.pth"
    write_miss(src, seed=seed)
    train = tmp_path / f"train-{seed}.json"
    train.write_text(json.dumps(miss_train(version, groups=("r4-a",))))
    return ["add", str(reg), str(src), "--base", TINY_BASE, "--data-version", version, "--group", "r4-a",
            "--train", str(train), *extra]  # fmt: skip


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize(
    ("first", "second", "suggested"), [("v2.1", "v21", "v21-r4-a-2"), ("v21", "v2.1", "v2.1-r4-a")]
)
def test_data_versions_that_differ_by_a_dot_are_refused_with_a_free_id(
    reg: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], first: str, second: str, suggested: str
) -> None:
    assert main(_add_miss(reg, tmp_path, first, 11)) == 0
    before = _tree(reg)
    capsys.readouterr()
    assert main(_add_miss(reg, tmp_path, second, 12)) == 1
    err = " ".join(capsys.readouterr().err.split())
    assert "entry id 'v21-r4-a' exists" in err
    assert f"data versions {first!r} and {second!r} both give 'v21-r4-a'" in err
    assert f"--id {suggested}" in err
    assert _tree(reg) == before
    assert main(_add_miss(reg, tmp_path, second, 12, "--id", suggested)) == 0  # the id suggested is free and valid
    ids = [e["id"] for e in json.loads((reg / "index.json").read_text())["entries"]]
    assert ids[-2:] == ["v21-r4-a", suggested]
    assert validate_registry(reg, use_cache=False).ok


def test_a_taken_state_id_names_the_entry_holding_it(
    reg: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from regtools import state_train, write_state

    src = write_state(tmp_path / "in" / "s1.pth", seed=5)
    train = tmp_path / "t.json"
    train.write_text(json.dumps(state_train("v7")))
    assert main(["add", str(reg), str(src), "--base", TINY_BASE, "--data-version", "v7", "--train", str(train)]) == 1
    err = " ".join(capsys.readouterr().err.split())
    assert f"entry id 's1' exists (the entry at {TINY_BASE}/state/v1/s1.pth)" in err
    assert "the default id of a State is its file name's stem (s1.pth)" in err and "--id s1-2" in err
