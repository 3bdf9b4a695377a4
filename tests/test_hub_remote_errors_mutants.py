"""Mutation audit of validate hf:// --full's whole download (_hub_facts._download_whole): a file of exactly
RESUMABLE_BYTES is continued after a cut, as `pull` continues it.

A third audit of _download_whole and its continuation in remote_weight_facts (the earlier survivors are named
nowhere, so these were written again), run against test_hub_remote_errors.py, this file (before its last test),
test_hub_mutants.py's and test_hub.py's --full tests:

- H01 ``size < RESUMABLE_BYTES`` -> ``<=``: killed (this file); H02 a whole download called continued: killed
  (this file); H05 an error status of the continuation not said as one: killed; H06 the bytes fetched again not
  counted: killed; H07 the whole file fetched again to ``end=size``: killed; H08 the download's own
  RegistryIOError taken for a local write error: killed; H09 the download not deleted: killed (test_hub_mutants);
  H10 the continuation opens the file ``wb``: killed; H11 a continued file that disagrees not fetched again:
  killed; H12 a continued download called whole: killed; H13 the continued file not checked: killed; H14 checked
  against the listing's own size and sha256: killed (all test_hub_remote_errors.py but where named)
- H03 the 416 of a continuation not caught (no fetch from byte 0), H04 fetched again from the same offset:
  survived; killed by test_full_a_continuation_answered_416_fetches_the_file_whole_once
"""

from __future__ import annotations

from pathlib import Path

import pytest
import test_hub_remote_errors
from hub_server import FakeHub
from test_hub import MISS_A, new_repo
from test_hub_remote_errors import _blob, _cut_miss, _download, _miss_gets, _start

from rwkv_registry.cli.main import main
from rwkv_registry.hub import resume as _hub_resume
from rwkv_registry.hub.commands import validate_hub

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


def test_full_a_whole_download_with_wrong_bytes_is_a_transfer_error_fetched_once(
    hub: FakeHub, tiny: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A MiSS adapter downloaded whole (no cut) by ``--full`` whose bytes are not the listing's LFS sha256: the
    transfer's fault, said as such (exit 2, the file, both sha256), with one request and nothing fetched again.
    Before, the bytes were judged as the file's: an HSH001 (index hash mismatch) blaming a sound registry."""
    from rwkv_registry.core.errors import RegistryIOError
    from rwkv_registry.hub.commands import validate_hub

    repo_id = new_repo(hub, tiny)
    blob = _blob(hub, repo_id, MISS_A)

    def hook(server: str, method: str, path: str, status: int, body: bytes, headers: dict[str, str]) -> tuple:
        ours = method == "GET" and server == "cdn" and path.endswith("/" + blob.sha256) and status in (200, 206)
        if ours and _download(headers, blob.size) and _start(headers) == 0:
            return status, body[:-1] + bytes([body[-1] ^ 0xFF]), headers
        return status, body, headers

    hub.log.clear()
    with hub.rewriting(hook):
        with pytest.raises(RegistryIOError) as e:
            validate_hub(f"hf://{repo_id}", full=True)
        assert [g["range"] for g in _miss_gets(hub, repo_id)] == [f"bytes=0-{blob.size - 1}"]
        assert e.value.message.startswith(f"{repo_id}@{hub.head(repo_id)[:12]}: {MISS_A}: the Hub served ")
        assert f"its tree listing says {blob.sha256[:12]}" in e.value.message and e.value.path == MISS_A
        capsys.readouterr()
        assert main(["validate", f"hf://{repo_id}", "--full"]) == 2
    err = capsys.readouterr()
    assert "HSH001" not in err.out + err.err and "whose sha256 is" in err.err, err


def test_full_a_continuation_answered_416_fetches_the_file_whole_once(
    hub: FakeHub, tiny: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The storage answers 416 to the Range request continuing a cut download (it holds fewer bytes than were
    received): the file is fetched once more from its first byte, without a Range header, and validates clean
    (H03: the 416 not caught, exit 2; H04: asked again from the same offset, a second 416)."""
    monkeypatch.setattr(_hub_resume, "RESUMABLE_BYTES", 20_000)
    repo_id = new_repo(hub, tiny)
    blob = _blob(hub, repo_id, MISS_A)
    cut = _cut_miss(hub, repo_id, blob.size // 3)

    def refuse_continuation(
        server: str, method: str, path: str, status: int, body: bytes, headers: dict[str, str]
    ) -> tuple:
        ours = method == "GET" and server == "cdn" and path.endswith("/" + blob.sha256)
        if ours and status == 206 and _start(headers) > 0 and _download(headers, blob.size):
            return 416, b"", {"Content-Length": "0", "Content-Range": f"bytes */{blob.size}"}
        return cut(server, method, path, status, body, headers)

    hub.log.clear()
    with hub.rewriting(refuse_continuation):
        report = validate_hub(f"hf://{repo_id}", full=True)
    assert report.ok, [(f.code, f.path, f.message) for f in report.findings]
    assert [g["range"] for g in _miss_gets(hub, repo_id)] == [
        f"bytes=0-{blob.size - 1}",
        f"bytes={blob.size // 3}-",
        None,
    ]
    miss = sum(len(b) for r, b in hub.files(repo_id).items() if "/miss/" in r and r.endswith(".pth"))
    assert report.stats["bytes_hashed"] == miss
