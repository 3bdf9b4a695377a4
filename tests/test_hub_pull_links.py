"""pull and symbolic links: pull writes nothing through ``Transaction`` (it downloads beside PATH, checks, then
moves the files into PATH, which must be empty), so the link refusal of the other writers
(``atomic.refuse_link``, tests/test_links_written.py) is reached another way: a link in PATH makes it non-empty."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hub_server import FakeHub, new_repo
from regtools import same_tree

from rwkv_registry.cli.main import main

pytestmark = pytest.mark.usefixtures("hub_env")  # every test talks to the Hub look-alike


@pytest.mark.parametrize("name", ["index.json", "README.md", "SHA256SUMS"])
def test_pull_refuses_a_destination_holding_a_link(
    hub: FakeHub, tiny: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    """A link where pull would write a registry file (dangling or not): refused before any request, the link kept,
    nothing written beside PATH either."""
    repo_id = new_repo(hub, tiny)
    dest = tmp_path / "dest"
    dest.mkdir()
    (tmp_path / "elsewhere").write_bytes(b"the user's file\n")
    (dest / name).symlink_to("../elsewhere")
    hub.log.clear()
    assert main(["pull", repo_id, str(dest)]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "Traceback" not in err and f"{dest} exists and is not empty" in err, err
    assert "Pull into a new or empty directory" in err, err
    assert os.readlink(dest / name) == "../elsewhere" and (tmp_path / "elsewhere").read_bytes() == b"the user's file\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dest", "elsewhere"] and os.listdir(dest) == [name]
    assert not hub.log  # refused before asking the Hub anything


def test_pull_into_a_link_to_an_empty_directory_fills_that_directory(
    hub: FakeHub, tiny: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """PATH itself a link to an empty directory: the files go into the directory, the link stays a link."""
    repo_id = new_repo(hub, tiny)
    target = tmp_path / "target"
    target.mkdir()
    dest = tmp_path / "dest"
    dest.symlink_to("target")
    assert main(["pull", repo_id, str(dest)]) == 0, capsys.readouterr().err
    assert dest.is_symlink() and os.readlink(dest) == "target"
    assert same_tree(target, hub.files(repo_id))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dest", "target"]  # no staging left beside
