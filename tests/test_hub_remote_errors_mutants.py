"""Mutation audit of validate hf:// --full's whole download (_hub_facts._download_whole): a file of exactly
RESUMABLE_BYTES is continued after a cut, as `pull` continues it."""

from __future__ import annotations

from pathlib import Path

import pytest
import test_hub_remote_errors
from hub_server import FakeHub
from test_hub import MISS_A, new_repo
from test_hub_remote_errors import _blob, _cut_miss, _download, _miss_gets, _start

from rwkv_registry import _hub_resume
from rwkv_registry.cli import main

hub = test_hub_remote_errors.hub
hub_env = test_hub_remote_errors.hub_env
tiny = test_hub_remote_errors.tiny
_no_sleep = test_hub_remote_errors._no_sleep


def test_full_continues_a_file_of_exactly_the_resumable_size(
    hub: FakeHub, tiny: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    repo_id = new_repo(hub, tiny)
    size = _blob(hub, repo_id, MISS_A).size
    monkeypatch.setattr(_hub_resume, "RESUMABLE_BYTES", size)  # "RESUMABLE_BYTES or more"
    hub.log.clear()
    with hub.rewriting(_cut_miss(hub, repo_id, size // 3)):
        assert main(["validate", f"hf://{repo_id}", "--full"]) == 0, capsys.readouterr()
    assert [g["range"] for g in _miss_gets(hub, repo_id)] == [f"bytes=0-{size - 1}", f"bytes={size // 3}-"]


def test_full_a_whole_download_with_wrong_bytes_is_judged_once_not_fetched_again(hub: FakeHub, tiny: Path) -> None:
    """Only a continued download is checked against the listing and fetched again: one that came whole in one
    answer is the storage's bytes, judged as they are (a finding), with one request and its bytes hashed once."""
    from rwkv_registry.hub import validate_hub

    repo_id = new_repo(hub, tiny)
    blob = _blob(hub, repo_id, MISS_A)

    def hook(server: str, method: str, path: str, status: int, body: bytes, headers: dict[str, str]) -> tuple:
        ours = method == "GET" and server == "cdn" and path.endswith("/" + blob.sha256) and status in (200, 206)
        if ours and _download(headers, blob.size) and _start(headers) == 0:
            return status, body[:-1] + bytes([body[-1] ^ 0xFF]), headers
        return status, body, headers

    hub.log.clear()
    with hub.rewriting(hook):
        report = validate_hub(f"hf://{repo_id}", full=True)
    assert not report.ok
    assert [g["range"] for g in _miss_gets(hub, repo_id)] == [f"bytes=0-{blob.size - 1}"]
    miss = sum(len(b) for r, b in hub.files(repo_id).items() if "/miss/" in r and r.endswith(".pth"))
    assert report.stats["bytes_hashed"] == miss
