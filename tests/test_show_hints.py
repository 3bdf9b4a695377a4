"""Errors carry their fix and name their file: `show --format json` gives a hint beside each error field (train.json
and the MiSS manifest), and the CLI prints RegistryError.path where the message does not name the file already."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import pytest

from rwkv_registry.checks.catalogue import RULES
from rwkv_registry.cli import main as cli
from rwkv_registry.cli.main import main
from rwkv_registry.core.errors import RefusedError, UsageError
from rwkv_registry.engine.validate import validate_registry


def _entries(reg: Path) -> list[dict[str, object]]:
    return list(json.loads((reg / "index.json").read_text())["entries"])


def _show(reg: Path, eid: str, capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    capsys.readouterr()
    assert main(["show", eid, "--path", str(reg), "--format", "json"]) == 0
    out: dict[str, object] = json.loads(capsys.readouterr().out)
    return out


def test_show_json_gives_the_fix_of_a_train_json_that_is_missing_or_broken(
    reg: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    e = next(e for e in _entries(reg) if e["method"] == "state")
    train = reg / "/".join(str(e["path"]).split("/")[:3]) / "train.json"
    good = _show(reg, str(e["id"]), capsys)["train"]
    assert isinstance(good, dict) and good["error"] is None and good["hint"] is None
    train.write_text("{ not json")
    broken = _show(reg, str(e["id"]), capsys)["train"]
    assert isinstance(broken, dict) and broken["error"] and broken["hint"]
    train.unlink()
    gone = _show(reg, str(e["id"]), capsys)["train"]
    assert isinstance(gone, dict) and "does not exist" in str(gone["error"])
    assert gone["hint"] == RULES["TRN001"].hint


@pytest.mark.parametrize("validated", [False, True])
def test_show_json_gives_the_fix_of_a_miss_file_that_cannot_be_summarized(
    reg: Path, capsys: pytest.CaptureFixture[str], validated: bool
) -> None:
    """From the zip header (no validation yet) and from the validation cache alike."""
    e = next(e for e in _entries(reg) if e["method"] == "miss")
    good = _show(reg, str(e["id"]), capsys)["miss"]
    assert isinstance(good, dict) and good["error"] is None and good["hint"] is None
    (reg / str(e["path"])).write_bytes(b"not a zip archive at all" * 64)
    if validated:
        validate_registry(reg)
    miss = _show(reg, str(e["id"]), capsys)["miss"]
    assert isinstance(miss, dict) and miss["error"]
    assert miss["source"] == ("validation cache" if validated else "header")
    assert miss["hint"] == RULES["PTH001"].hint
    (reg / str(e["path"])).unlink()
    gone = _show(reg, str(e["id"]), capsys)["miss"]
    assert isinstance(gone, dict) and gone["hint"] == RULES["LAY008"].hint


def _fail_with(monkeypatch: pytest.MonkeyPatch, error: Exception) -> None:
    def handler(args: argparse.Namespace) -> int:
        raise error

    monkeypatch.setattr(cli, "cmd_validate", handler)


def test_the_cli_names_the_file_of_an_error_whose_message_does_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _fail_with(monkeypatch, RefusedError("one base file registered twice", hint="Check it.", path="index.json"))
    assert main(["validate", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "error: index.json: one base file registered twice" in err and "hint: Check it." in err


def test_the_cli_does_not_name_the_file_twice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    where = os.fspath(tmp_path / "x.json")
    _fail_with(monkeypatch, UsageError(f"{where}: not a JSON object", hint="Fix it.", path=where))
    assert main(["validate", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"error: {where}: not a JSON object" in err and err.count(where) == 1
    _fail_with(monkeypatch, UsageError("no path at all", hint="Fix it."))
    assert main(["validate", str(tmp_path)]) == 2
    assert "error: no path at all" in capsys.readouterr().err


def test_a_base_file_registered_twice_names_index_json(reg: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A real error whose message names no file (ops.add_base's IDX010 refusal)."""
    base = json.loads((reg / "index.json").read_text())["bases"][0]
    a = base["architecture"]
    arch = f"n_layer={a['n_layer']},n_embd={a['n_embd']},vocab_size={a['vocab_size']}"
    twin = ["--name", "rwkv7-twin-20260102-ctx4096", "--sha256", base["sha256"], "--source", "a/b"]
    code = main(["add-base", str(reg), *twin, "--arch", arch])
    err = capsys.readouterr().err
    assert code == 1, err
    assert "error: index.json: base " in err and "registered twice (IDX010)" in err
