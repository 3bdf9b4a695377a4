"""`validate` of a directory that is plainly no registry (empty, or a wrong path): one LAY016, not the findings of
each file a registry has (SCH004 twice, RDM001, LFS002 twice) and of everything else lying there; a registry that is
merely damaged keeps its detailed findings."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from regtools import TINY_BASE

from rwkv_registry.checks.catalogue import RULES
from rwkv_registry.cli.main import main
from rwkv_registry.engine import validate as validate_mod
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


def _codes(root: Path) -> list[str]:
    return [f.code for f in validate_registry(root, use_cache=False).findings]


@pytest.mark.parametrize("method", ["state", "miss"])
def test_a_base_directory_holding_state_or_miss_alone_is_a_registry(tmp_path: Path, method: str) -> None:
    (tmp_path / TINY_BASE / method).mkdir(parents=True)
    assert "LAY016" not in _codes(tmp_path)


def test_names_that_merely_begin_with_state_or_miss_are_no_base_directory(tmp_path: Path) -> None:
    """`docs/statements/` and `notes/missing.txt` are not `<base>/state` or `<base>/miss`."""
    (tmp_path / "docs" / "statements").mkdir(parents=True)
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "missing.txt").write_text("x")
    report = validate_registry(tmp_path, use_cache=False)
    assert [f.code for f in report.findings] == ["LAY016"]
    assert report.findings[0].message.endswith("it holds 2 other entries ('docs', 'notes')")


def test_one_other_entry_is_said_in_the_singular(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("x")
    report = validate_registry(tmp_path, use_cache=False)
    assert report.findings[0].message.endswith("it holds 1 other entry ('notes.txt')")


def test_three_other_entries_are_all_named_without_an_ellipsis(tmp_path: Path) -> None:
    for name in ("a", "b", "c"):
        (tmp_path / name).write_text("x")
    report = validate_registry(tmp_path, use_cache=False)
    assert report.findings[0].message.endswith("it holds 3 other entries ('a', 'b', 'c')")


def test_a_root_that_cannot_be_listed_keeps_its_lay010(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No verdict on what cannot be seen: LAY010 'cannot list the directory', not LAY016 'not a registry'."""
    real = os.scandir
    root = os.fspath(tmp_path)

    def scandir(path: Any) -> Any:
        if os.fspath(path) == root:
            raise PermissionError(13, "Permission denied")
        return real(path)

    monkeypatch.setattr(validate_mod.os, "scandir", scandir)
    codes = _codes(tmp_path)
    assert "LAY010" in codes and "LAY016" not in codes


def test_a_fifo_in_place_of_a_registry_file_is_no_lay016(tmp_path: Path) -> None:
    """A FIFO named README.md (LAY015, never opened) is a registry file in another form: not 'not a registry'."""
    os.mkfifo(tmp_path / "README.md")
    codes = _codes(tmp_path)
    assert "LAY015" in codes and "LAY016" not in codes


def _deep(root: Path) -> None:
    """A wrong path with a deep tree under it (a home or data directory given by mistake)."""
    deep = root / "photos"
    for i in range(30):
        deep = deep / f"d{i}"
    deep.mkdir(parents=True)
    (deep / "state").mkdir()  # deep down, a directory named state: not a base directory at the root
    (deep / "x.pth").write_bytes(b"not a checkpoint")
    (root / "docs" / "a" / "b").mkdir(parents=True)
    (root / "notes.txt").write_text("hello")


def test_a_wrong_path_is_decided_from_its_root_without_walking_the_tree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """LAY016 was decided after the whole walk: `validate ~` listed every directory of the home directory first.
    Now only the root and the directories at its root are listed (all that decides it), and the one finding is
    the same."""
    _deep(tmp_path)
    listed: list[str] = []
    real = os.scandir

    def scandir(path: Any) -> Any:
        listed.append(os.path.relpath(os.fspath(path), tmp_path))
        return real(path)

    monkeypatch.setattr(validate_mod.os, "scandir", scandir)
    report = validate_registry(tmp_path, use_cache=False)
    assert [f.code for f in report.findings] == ["LAY016"]
    assert report.findings[0].message.endswith("it holds 3 other entries ('docs', 'notes.txt', 'photos')")
    assert sorted(listed) == [".", "docs", "photos"]


def test_a_subtree_that_cannot_be_listed_is_not_looked_at(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A subtree deep under a wrong path that would fail (or take hours) to list is never listed."""
    _deep(tmp_path)
    real = os.scandir

    def scandir(path: Any) -> Any:
        if os.fspath(path).startswith(os.fspath(tmp_path / "photos" / "d0")):
            raise AssertionError(f"walked into {path}")
        return real(path)

    monkeypatch.setattr(validate_mod.os, "scandir", scandir)
    assert _codes(tmp_path) == ["LAY016"]


def test_a_damaged_registry_is_still_walked(reg: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Only the base directory left (index.json, README.md and SHA256SUMS gone): decided a registry before the walk,
    so it is walked and keeps its detailed findings."""
    for name in ("index.json", "README.md", "SHA256SUMS"):
        (reg / name).unlink()
    listed: list[str] = []
    real = os.scandir

    def scandir(path: Any) -> Any:
        listed.append(os.fspath(path))
        return real(path)

    monkeypatch.setattr(validate_mod.os, "scandir", scandir)
    codes = _codes(reg)
    assert "LAY016" not in codes and "SCH004" in codes
    assert any(p.endswith("/state") for p in listed)
