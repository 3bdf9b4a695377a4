"""Mutation audit of validate's LAY016 'not a registry' decision (Validator.not_a_registry): what keeps a directory
a registry (a base directory holding state/ as well as miss/), what does not (a name merely beginning with state
or miss), and a root that cannot be listed, which keeps its LAY010."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from regtools import TINY_BASE

from rwkv_registry.engine import validate as validate_mod
from rwkv_registry.engine.validate import validate_registry


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
