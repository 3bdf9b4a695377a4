"""LAY017: two names of one directory that differ only in letter case or Unicode normalization (NFC/NFD) are one
file on macOS and Windows. ``validate`` reports them (an error, from its one tree walk) and ``add`` refuses to
create such a twin (the check is in the atomic write layer, so every writer refuses alike)."""

from __future__ import annotations

import json
import shutil
import unicodedata
from pathlib import Path

import pytest
from regtools import TINY_BASE, codes, miss_train, state_train, write_miss, write_state

from rwkv_registry.cli.main import main
from rwkv_registry.engine.validate import validate_registry

V1 = f"{TINY_BASE}/state/v1"
NFC = unicodedata.normalize("NFC", "café.pth")
NFD = unicodedata.normalize("NFD", "café.pth")


def _lay017(root: Path) -> list[tuple[str, str]]:
    return [(f.path, f.message) for f in validate_registry(root).findings if f.code == "LAY017"]


def test_a_clean_registry_has_no_twins(reg: Path) -> None:
    assert _lay017(reg) == []
    assert codes(validate_registry(reg)) == []


@pytest.mark.parametrize(
    ("first", "second"),
    [("s1.pth", "S1.pth"), (NFC, NFD), ("s1.pth", "S1.PTH")],
    ids=["case", "nfc-nfd", "extension-case"],
)
def test_validate_reports_files_that_differ_only_in_case_or_normalization(reg: Path, first: str, second: str) -> None:
    assert NFC != NFD  # two different names to Linux, one to macOS
    if first != "s1.pth":
        shutil.copy(reg / V1 / "s1.pth", reg / V1 / first)
    shutil.copy(reg / V1 / "s1.pth", reg / V1 / second)
    found = _lay017(reg)
    assert len(found) == 1
    path, message = found[0]
    assert path in (f"{V1}/{first}", f"{V1}/{second}")
    assert repr(first) in message and repr(second) in message and "on macOS and Windows they are one file" in message
    assert "LAY017" in codes(validate_registry(reg))


def test_validate_reports_directories_that_differ_only_in_case(reg: Path) -> None:
    shutil.copytree(reg / V1, reg / TINY_BASE / "state" / "V1")
    found = _lay017(reg)
    assert [p for p, _ in found] == [V1]  # "V1" sorts first: the later twin is named
    assert "'v1' and 'V1' differ only in letter case" in found[0][1]


def test_names_that_differ_otherwise_are_no_twins(reg: Path) -> None:
    shutil.copy(reg / V1 / "s1.pth", reg / V1 / "s1b.pth")
    assert _lay017(reg) == []


def test_add_refuses_a_file_that_is_the_case_twin_of_one_there(
    reg: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = write_state(tmp_path / "in" / "S1.pth", seed=7)
    train = tmp_path / "train.json"
    train.write_text(json.dumps(state_train("v1")))
    before = sorted(p.relative_to(reg).as_posix() for p in reg.rglob("*"))
    index = (reg / "index.json").read_bytes()
    argv = ["add", str(reg), str(src), "--base", TINY_BASE, "--data-version", "v1", "--train", str(train)]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert f"'{V1}/S1.pth' and '{V1}/s1.pth' differ only in letter case or Unicode normalization (LAY017)" in err
    assert "nothing was written" in err
    assert sorted(p.relative_to(reg).as_posix() for p in reg.rglob("*") if p.name != ".rwkv-registry.lock") == [
        x for x in before if not x.endswith(".rwkv-registry.lock")
    ]
    assert (reg / "index.json").read_bytes() == index


def test_add_refuses_a_run_folder_that_is_the_case_twin_of_one_there(
    reg: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "in" / "R4-A" / "adapter-final.pth"
    write_miss(src, seed=5)
    train = tmp_path / "train.json"
    train.write_text(json.dumps(miss_train(groups=("r4-a", "r4-b", "R4-A"))))
    index = (reg / "index.json").read_bytes()
    argv = ["add", str(reg), str(src), "--base", TINY_BASE, "--data-version", "v2", "--group", "R4-A", "--train",
            str(train)]  # fmt: skip
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "differ only in letter case or Unicode normalization (LAY017)" in err
    assert not (reg / TINY_BASE / "miss" / "v2" / "R4-A").exists()
    assert (reg / "index.json").read_bytes() == index
