"""Mutation audit of the demo's tiny-weights ownership check (train_tiny.check_weights_dir, _claimed) called
directly: what the weights' folder may be, which manifests claim which files, and the refusal's wording."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rwkv_registry.core.errors import UsageError
from rwkv_registry.model.smoke.train_tiny import MANIFEST, WRITER, WRITTEN, check_weights_dir


def _refused(out: Path) -> str:
    with pytest.raises(UsageError) as e:
        check_weights_dir(out)
    assert "Nothing was touched" in (e.value.hint or "")
    return str(e.value)


def test_a_file_or_a_link_in_place_of_the_folder_is_refused(tmp_path: Path) -> None:
    f = tmp_path / "file"
    f.write_text("mine")
    assert "is not a directory" in _refused(f)
    (tmp_path / "real").mkdir()
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "real")
    assert "is not a directory" in _refused(link)
    check_weights_dir(tmp_path / "real")  # a folder: fine
    check_weights_dir(tmp_path / "absent")  # made later: fine


def test_a_dangling_link_named_manifest_is_refused(tmp_path: Path) -> None:
    (tmp_path / MANIFEST).symlink_to(tmp_path / "nowhere.json")
    assert "not a plain file" in _refused(tmp_path)


def test_a_manifest_without_the_demo_mark_claims_nothing(tmp_path: Path) -> None:
    (tmp_path / MANIFEST).write_text(json.dumps({"writer": "someone else", "writes": list(WRITTEN)}))
    assert "not the demo's" in _refused(tmp_path)


def test_a_demo_manifest_claims_only_what_it_lists(tmp_path: Path) -> None:
    (tmp_path / MANIFEST).write_text(json.dumps({"writer": WRITER, "writes": [WRITTEN[0], "other.pth"]}))
    (tmp_path / WRITTEN[0]).write_bytes(b"demo's")
    check_weights_dir(tmp_path)
    (tmp_path / WRITTEN[1]).write_bytes(b"user's")
    msg = _refused(tmp_path)
    assert f"{WRITTEN[1]} was not written by the demo" in msg and "lists it)" in msg


def test_two_foreign_files_are_said_in_the_plural(tmp_path: Path) -> None:
    (tmp_path / WRITTEN[1]).write_bytes(b"user's")
    (tmp_path / WRITTEN[2]).write_bytes(b"user's")
    msg = _refused(tmp_path)
    assert f"{WRITTEN[1]}, {WRITTEN[2]} were not written by the demo" in msg and "lists them)" in msg


def test_an_older_manifest_is_recognised_by_its_key_and_all_three_files(tmp_path: Path) -> None:
    files = {name: {"size": 1, "sha256": "0" * 64} for name in WRITTEN}
    (tmp_path / MANIFEST).write_text(json.dumps({"key": "k", "files": files}))
    for name in WRITTEN:
        (tmp_path / name).write_bytes(b"demo's")
    check_weights_dir(tmp_path)
    (tmp_path / MANIFEST).write_text(json.dumps({"files": files}))  # no key: not the demo's
    assert "not the demo's" in _refused(tmp_path)
    two = {name: files[name] for name in WRITTEN[:2]}
    (tmp_path / MANIFEST).write_text(json.dumps({"key": "k", "files": two}))  # not the three files
    assert "not the demo's" in _refused(tmp_path)


def test_a_claimed_name_that_is_a_folder_or_a_link_is_refused(tmp_path: Path) -> None:
    (tmp_path / MANIFEST).write_text(json.dumps({"writer": WRITER, "writes": list(WRITTEN)}))
    (tmp_path / WRITTEN[0]).mkdir()
    assert f"{WRITTEN[0]} was not written by the demo" in _refused(tmp_path)
    (tmp_path / WRITTEN[0]).rmdir()
    (tmp_path / "target.pth").write_bytes(b"x")
    (tmp_path / WRITTEN[1]).symlink_to(tmp_path / "target.pth")
    assert f"{WRITTEN[1]} was not written by the demo" in _refused(tmp_path)


def test_a_manifest_that_cannot_be_read_is_refused(tmp_path: Path) -> None:
    (tmp_path / MANIFEST).mkdir()  # not a plain file
    assert "not a plain file" in _refused(tmp_path)


def test_a_manifest_that_raises_on_read_is_a_usage_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """EACCES (which root never meets) reading the manifest: a UsageError naming it, no traceback."""
    (tmp_path / MANIFEST).write_text("{}")
    real = Path.read_bytes

    def read_bytes(self: Path) -> bytes:
        if self.name == MANIFEST:
            raise PermissionError(13, "Permission denied")
        return real(self)

    monkeypatch.setattr(Path, "read_bytes", read_bytes)
    assert "Permission denied" in _refused(tmp_path)


def test_a_link_to_a_demo_manifest_is_refused(tmp_path: Path) -> None:
    """The manifest must be the folder's own file: a link to one of the demo's elsewhere claims nothing here."""
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text(json.dumps({"writer": WRITER, "writes": list(WRITTEN)}))
    out = tmp_path / "w"
    out.mkdir()
    (out / MANIFEST).symlink_to(elsewhere)
    assert "not a plain file" in _refused(out)
