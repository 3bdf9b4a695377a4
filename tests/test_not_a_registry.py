"""`validate` of a directory that is plainly no registry (empty, or a wrong path): one LAY016, not the findings of
each file a registry has (SCH004 twice, RDM001, LFS002 twice) and of everything else lying there; a registry that is
merely damaged keeps its detailed findings."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from regtools import TINY_BASE

from rwkv_registry.cli.main import main
from rwkv_registry.core.rules import RULES
from rwkv_registry.engine.validate import validate_registry


def _found(root: Path) -> list[tuple[str, str]]:
    return [(f.code, f.path) for f in validate_registry(root, use_cache=False).findings]


def test_an_empty_directory_is_one_lay016(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """It was SCH004 (index.json), SCH004 (SHA256SUMS), RDM001, LFS002 twice: five true findings, none saying that
    the path is simply not a registry."""
    empty = tmp_path / "empty"
    empty.mkdir()
    report = validate_registry(empty, use_cache=False)
    assert [(f.code, str(f.severity), f.path) for f in report.findings] == [("LAY016", "error", ".")]
    [f] = report.findings
    assert (
        f.message == f"{empty} is not a registry: no index.json, README.md, SHA256SUMS or base directory "
        "(<base>/state, <base>/miss) at its root; it is empty"
    )
    assert f.hint == RULES["LAY016"].hint and "add-base" in f.hint and "demo" in f.hint and "path" in f.hint
    assert not report.ok
    assert main(["validate", str(empty), "--format", "json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert [x["code"] for x in out["findings"]] == ["LAY016"]
    assert main(["validate", str(empty)]) == 1
    text = capsys.readouterr().out
    assert "LAY016" in text and "not a registry" in text and "SCH004" not in text


def test_a_wrong_path_full_of_other_things_is_one_lay016(tmp_path: Path) -> None:
    """A folder of other files (a home or download folder given by mistake): not one LAY001 per file, nor a
    hash of every .pth lying there."""
    d = tmp_path / "downloads"
    (d / "photos").mkdir(parents=True)
    (d / "photos" / "a.jpg").write_bytes(b"jpg")
    (d / "notes.txt").write_text("hello")
    (d / "model.pth").write_bytes(b"not a checkpoint")
    (d / ".gitattributes").write_text("*.jpg binary\n")
    (d / "out").symlink_to("/")  # a link leaving it (LAY005 in a registry)
    report = validate_registry(d, use_cache=False)
    assert [f.code for f in report.findings] == ["LAY016"]
    tail = "it holds 5 other entries ('.gitattributes', 'model.pth', 'notes.txt', …)"
    assert report.findings[0].message.endswith(tail)
    assert report.stats["files"] == 3  # the regular files at its root: the tree below is not walked


@pytest.mark.parametrize(
    ("damage", "expected"),
    [
        (["README.md"], "RDM001"),  # index.json kept: a damaged registry
        (["index.json"], "SCH004"),  # README.md kept
        (["index.json", "README.md"], "SCH004"),  # SHA256SUMS kept
        (["index.json", "README.md", "SHA256SUMS"], "SCH004"),  # the base directory kept
    ],
)
def test_a_damaged_registry_keeps_its_detailed_findings(reg: Path, damage: list[str], expected: str) -> None:
    for rel in damage:
        (reg / rel).unlink()
    found = _found(reg)
    assert expected in {c for c, _ in found}
    assert "LAY016" not in {c for c, _ in found}


def test_what_a_registry_or_its_writes_leave_is_no_lay016(tmp_path: Path) -> None:
    """Anything at the root a registry has, in any form, or an interrupted write's file: not LAY016."""
    for i, name in enumerate(
        ["index.json", "README.md", "SHA256SUMS", "SHA256SUMS.sig", ".rwkv-registry-tmp-0123-index.json"]
    ):
        d = tmp_path / f"d{i}"
        d.mkdir()
        (d / name).mkdir()  # even a directory in its place
        assert "LAY016" not in {c for c, _ in _found(d)}, name
    link = tmp_path / "link"
    link.mkdir()
    (link / "index.json").symlink_to(tmp_path / "elsewhere.json")  # a link leaving it: LAY005, not LAY016
    assert ("LAY005", "index.json") in _found(link)
    base_only = tmp_path / "base-only"
    (base_only / TINY_BASE / "miss").mkdir(parents=True)
    assert "LAY016" not in {c for c, _ in _found(base_only)}


def test_the_registry_fixture_is_not_lay016_and_emptied_it_is(reg: Path) -> None:
    assert "LAY016" not in {c for c, _ in _found(reg)}
    for p in reg.iterdir():
        shutil.rmtree(p) if p.is_dir() else p.unlink()
    assert _found(reg) == [("LAY016", ".")]


def test_a_missing_path_or_a_file_is_a_usage_error_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "nowhere"
    assert main(["validate", str(missing)]) == 2
    err = capsys.readouterr().err
    assert str(missing) in err and "Traceback" not in err
    f = tmp_path / "file.txt"
    f.write_text("x")
    assert main(["validate", str(f)]) == 2
    err = capsys.readouterr().err
    assert str(f) in err and "Traceback" not in err


def test_the_tui_live_validation_gives_the_same_one_finding(tmp_path: Path) -> None:
    pytest.importorskip("textual")
    from rwkv_registry.tui.validation import live_validate

    empty = tmp_path / "empty"
    empty.mkdir()
    assert [f.code for f in live_validate(empty, on_file=lambda *a: None).findings] == ["LAY016"]
