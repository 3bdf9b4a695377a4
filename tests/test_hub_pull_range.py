"""`pull` continues a file cut short with an HTTP Range request (registry/hub/resume.py), against the Hub
look-alike: the bytes received stay in the staging directory, tied to the commit, path, size and digest, and the
next run of the same pull fetches only the rest, then checks the whole file against the listing.

The tiny registry's weights are 23-34 KB: RESUMABLE_BYTES is lowered so that they take this path."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import test_hub
from hub_server import FakeHub
from test_hub import new_repo
from test_hub_pull import STATE, plain_git_repo, quiet, same_tree

from rwkv_registry.core.errors import RegistryIOError
from rwkv_registry.hub import resume as _hub_resume
from rwkv_registry.hub import transport as _hub_http
from rwkv_registry.hub.commands import pull_registry

hub = test_hub.hub
hub_env = test_hub.hub_env
tiny = test_hub.tiny

TOKEN = "hf_test_token_for_the_local_server"  # test_hub.hub_env's HF_TOKEN

Hook = Callable[[str, str, str, int, bytes, dict[str, str]], tuple[int, bytes, dict[str, str]]]


@pytest.fixture(autouse=True)
def _large_weights(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_hub_resume, "RESUMABLE_BYTES", 20_000)  # the tiny weights (23-34 KB) count as large
    monkeypatch.setattr(time, "sleep", lambda seconds: None)  # the back-off between continuations


def repo(hub: FakeHub, tiny: Path, storage: str) -> str:
    return new_repo(hub, tiny) if storage == "lfs" else plain_git_repo(hub, tiny)


def is_state(hub: FakeHub, repo_id: str, server: str, path: str) -> bool:
    """Whether a request of the server's log (or a rewrite hook's call) is a download of STATE's bytes: its storage
    blob (LFS) or its resolve URL (plain git)."""
    blob = hub.repos[repo_id].commits[hub.head(repo_id)][STATE]
    if blob.lfs:
        return server == "cdn" and path.endswith("/" + blob.sha256)
    return server == "api" and path.endswith("/" + STATE)


def state_gets(hub: FakeHub, repo_id: str) -> list[dict[str, Any]]:
    return [e for e in hub.log if e["method"] == "GET" and is_state(hub, repo_id, e["server"], e["path"])]


def _start(headers: dict[str, str]) -> int:
    span = headers.get("Content-Range", "")
    return int(span.split(" ", 1)[1].split("-", 1)[0]) if span.startswith("bytes ") else 0


def cut_at(hub: FakeHub, repo_id: str, at: int, *, once: bool = False) -> Hook:
    """Answers to STATE's download end at byte ``at`` of the file (Content-Length still promising the rest: the
    connection is cut); nothing past it arrives, unless ``once``: only the first answer is cut."""
    calls: list[int] = []

    def hook(server: str, method: str, path: str, status: int, body: bytes, headers: dict[str, str]) -> tuple:
        if method == "GET" and status in (200, 206) and is_state(hub, repo_id, server, path):
            calls.append(1)
            if not once or len(calls) == 1:
                return status, body[: max(0, at - _start(headers))], headers
        return status, body, headers

    return hook


def stop_in_state(hub: FakeHub, repo_id: str, dest: Path, capsys: pytest.CaptureFixture[str]) -> tuple[Path, int]:
    """A first pull (the CLI) whose download of STATE is cut at half: exit 2, naming the file and how to resume.
    Returns the staging directory and the half. The large files are fetched one at a time in that pull, so that the
    others (before STATE in sorted order) are complete when it stops: STATE's is the one partial file."""
    from rwkv_registry.cli.main import main
    from rwkv_registry.hub import sync as _hub_sync

    size = len(hub.files(repo_id)[STATE])
    half = size // 2
    workers, _hub_sync.LARGE_WORKERS = _hub_sync.LARGE_WORKERS, 1
    try:
        with hub.rewriting(cut_at(hub, repo_id, half)):
            assert main(["pull", repo_id, str(dest)]) == 2
    finally:
        _hub_sync.LARGE_WORKERS = workers
    err = capsys.readouterr().err
    (staging,) = [p for p in dest.parent.iterdir() if p.name.startswith(f".{dest.name}.rwkv-registry-pull-")]
    assert "Traceback" not in err and f": {STATE}: " in err and str(staging) in err, err
    assert "cut short" in err and "run the same pull again to resume" in err, err
    (part,) = (staging / _hub_resume.PARTIAL_DIR).glob("*.part")
    assert part.stat().st_size == half
    return staging, half


@pytest.mark.parametrize("storage", ["lfs", "plain git"])
def test_a_file_cut_short_is_continued_with_a_range_request(
    hub: FakeHub, tiny: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], storage: str
) -> None:
    """Before, the half of STATE received was deleted (by huggingface_hub) and the rerun fetched it whole: GBs for a
    real MiSS adapter. Now the rerun asks for the rest only (one Range request from the half), checks the whole
    file against the listing in the read that also gives validation its facts, and PATH is a clean pull."""
    repo_id = repo(hub, tiny, storage)
    files = hub.files(repo_id)
    dest = tmp_path / "dest"
    staging, half = stop_in_state(hub, repo_id, dest, capsys)
    hub.log.clear()
    said: list[str] = []
    report = pull_registry(repo_id, dest, log=said.append)
    assert report.ok and report.stats["bytes_hashed"] == 0
    (get,) = state_gets(hub, repo_id)
    assert get["range"] == f"bytes={half}-" and get["status"] == 206 and get["sent"] == len(files[STATE]) - half
    assert any(m.startswith(f"resumed {STATE} from byte {half}") for m in said), said
    assert same_tree(dest, files) and not staging.exists()


def test_a_connection_cut_within_one_pull_is_continued_there(hub: FakeHub, tiny: Path, tmp_path: Path) -> None:
    """A flaky link: the connection drops once, half-way through STATE; the same pull continues it from the bytes
    received (not from 0, as before: huggingface_hub's retry did that too, but its file was lost on a final
    failure)."""
    repo_id = new_repo(hub, tiny)
    files = hub.files(repo_id)
    half = len(files[STATE]) // 2
    with hub.rewriting(cut_at(hub, repo_id, half, once=True)):
        assert pull_registry(repo_id, tmp_path / "dest", log=quiet).ok
    first, second = state_gets(hub, repo_id)
    assert first["range"] is None and second["range"] == f"bytes={half}-"
    assert first["sent"] + second["sent"] == len(files[STATE])
    assert same_tree(tmp_path / "dest", files)


def test_a_server_that_ignores_range_is_read_from_byte_0(
    hub: FakeHub, tiny: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A proxy that drops the Range header answers 200 with the whole file: it is written from byte 0 over the
    partial file (appended, the file would be half + whole bytes and fail its check)."""
    repo_id = new_repo(hub, tiny)
    files = hub.files(repo_id)
    dest = tmp_path / "dest"
    stop_in_state(hub, repo_id, dest, capsys)
    hub.log.clear()
    hub.ignore_range = True  # the hub fixture serves the whole module: put it back
    said: list[str] = []
    try:
        assert pull_registry(repo_id, dest, log=said.append).ok
    finally:
        hub.ignore_range = False
    (get,) = state_gets(hub, repo_id)
    assert get["status"] == 200 and get["sent"] == len(files[STATE])
    assert any("ignored or refused the Range request" in m for m in said)
    assert same_tree(dest, files)


def test_a_whole_answer_cut_then_continued_is_said_fetched_whole(
    hub: FakeHub, tiny: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The continuation from the half is answered 200 (the whole file, Range ignored) and that answer is cut at
    three quarters; the same pull continues from there. Every byte came from this pull, from byte 0: it is said
    fetched whole, not "resumed from byte" (before, the continuation after the cut kept the first try's offset,
    the half, and the log claimed the half was reused)."""
    repo_id = new_repo(hub, tiny)
    files = hub.files(repo_id)
    size = len(files[STATE])
    dest = tmp_path / "dest"
    _, half = stop_in_state(hub, repo_id, dest, capsys)
    three_quarters = size * 3 // 4
    calls: list[int] = []

    def whole_then_cut(server: str, method: str, path: str, status: int, body: bytes, headers: dict[str, str]) -> tuple:
        if method == "GET" and status == 206 and is_state(hub, repo_id, server, path):
            calls.append(1)
            if len(calls) == 1:  # a proxy that drops the Range header, and a connection that drops
                plain = {k: v for k, v in headers.items() if k != "Content-Range"}
                return 200, files[STATE][:three_quarters], {**plain, "Content-Length": str(size)}
        return status, body, headers

    hub.log.clear()
    said: list[str] = []
    with hub.rewriting(whole_then_cut):
        assert pull_registry(repo_id, dest, log=said.append).ok
    first, second = state_gets(hub, repo_id)
    assert first["range"] == f"bytes={half}-" and second["range"] == f"bytes={three_quarters}-"
    assert not any(m.startswith(f"resumed {STATE}") for m in said), said
    assert any("ignored or refused the Range request" in m for m in said), said
    assert same_tree(dest, files)


def test_a_416_restarts_the_file_from_byte_0(
    hub: FakeHub, tiny: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The storage answers 416 (Range Not Satisfiable) to the continuation: the partial file is dropped and the
    file fetched whole, in the same pull."""
    repo_id = new_repo(hub, tiny)
    files = hub.files(repo_id)
    dest = tmp_path / "dest"
    stop_in_state(hub, repo_id, dest, capsys)

    def unsatisfiable(server: str, method: str, path: str, status: int, body: bytes, headers: dict[str, str]) -> tuple:
        if method == "GET" and status == 206 and is_state(hub, repo_id, server, path):
            return 416, b"", {"Content-Range": f"bytes */{len(files[STATE])}", "Content-Length": "0"}
        return status, body, headers

    hub.log.clear()
    with hub.rewriting(unsatisfiable):
        assert pull_registry(repo_id, dest, log=quiet).ok
    ranged, whole = state_gets(hub, repo_id)
    assert ranged["status"] == 416 and whole["range"] is None and whole["sent"] == len(files[STATE])
    assert same_tree(dest, files)


def test_a_cut_after_a_416_restart_is_continued_in_the_same_pull(
    hub: FakeHub, tiny: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The continuation is answered 416, the file is fetched from byte 0, and that download is cut at three
    quarters: the same pull continues it from there, as any other cut (before, only the next pull did)."""
    repo_id = new_repo(hub, tiny)
    files = hub.files(repo_id)
    size = len(files[STATE])
    dest = tmp_path / "dest"
    stop_in_state(hub, repo_id, dest, capsys)
    three_quarters = size * 3 // 4
    calls: list[int] = []

    def unsatisfiable_then_cut(
        server: str, method: str, path: str, status: int, body: bytes, headers: dict[str, str]
    ) -> tuple:
        if method == "GET" and status in (200, 206) and is_state(hub, repo_id, server, path):
            calls.append(1)
            if len(calls) == 1:
                return 416, b"", {"Content-Range": f"bytes */{size}", "Content-Length": "0"}
            if len(calls) == 2:
                return status, body[:three_quarters], headers
        return status, body, headers

    hub.log.clear()
    with hub.rewriting(unsatisfiable_then_cut):
        assert pull_registry(repo_id, dest, log=quiet).ok
    ranged, whole, rest = state_gets(hub, repo_id)
    assert ranged["status"] == 416 and whole["range"] is None and rest["range"] == f"bytes={three_quarters}-"
    assert same_tree(dest, files)


@pytest.mark.parametrize("how", ["larger than the file", "of another commit", "without its identity"])
def test_a_partial_file_not_of_these_bytes_is_never_continued(
    hub: FakeHub, tiny: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], how: str
) -> None:
    """A partial file is continued only under the key of the same commit, path, size and digest, with its
    identity file saying so, and never beyond the listed size: otherwise it is deleted and the file fetched
    whole (no Range request)."""
    repo_id = new_repo(hub, tiny)
    dest = tmp_path / "dest"
    staging, _ = stop_in_state(hub, repo_id, dest, capsys)
    (part,) = (staging / _hub_resume.PARTIAL_DIR).glob("*.part")
    if how == "larger than the file":
        part.write_bytes(part.read_bytes() * 3)
    elif how == "of another commit":
        hub.commit_files(repo_id, {"notes.md": b"a new commit; STATE unchanged\n"})
    else:
        part.with_suffix(".json").unlink()
    files = hub.files(repo_id)
    hub.log.clear()
    said: list[str] = []
    report = pull_registry(repo_id, dest, log=said.append)
    assert not [m for m in said if "fails its check" in m]  # dropped before, not continued then caught
    assert report.ok or how == "of another commit"  # notes.md is no registry file: a finding, not the point here
    (get,) = state_gets(hub, repo_id)
    assert get["range"] is None and get["sent"] == len(files[STATE])
    assert same_tree(dest, files)


def test_a_partial_file_with_wrong_bytes_is_fetched_whole_once(
    hub: FakeHub, tiny: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The kept half was altered (a disk error, a power loss): the continued file fails its sha256 check, is
    deleted and fetched whole, once; the pull then succeeds and says why it fetched the file again."""
    repo_id = new_repo(hub, tiny)
    files = hub.files(repo_id)
    dest = tmp_path / "dest"
    staging, half = stop_in_state(hub, repo_id, dest, capsys)
    (part,) = (staging / _hub_resume.PARTIAL_DIR).glob("*.part")
    data = bytearray(part.read_bytes())
    data[10] ^= 0xFF
    part.write_bytes(bytes(data))
    hub.log.clear()
    said: list[str] = []
    assert pull_registry(repo_id, dest, log=said.append).ok
    ranged, whole = state_gets(hub, repo_id)
    assert ranged["range"] == f"bytes={half}-" and whole["range"] is None and whole["sent"] == len(files[STATE])
    assert any(m.startswith(f"{STATE}: the file continued from byte {half} fails its check") for m in said), said
    assert same_tree(dest, files)


def test_a_storage_serving_other_bytes_is_refused_after_one_whole_fetch(
    hub: FakeHub, tiny: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The storage serves other bytes than the listing's, every time: the continued file fails, the whole one too;
    the pull is refused (exit 2) saying so, nothing is kept (bytes not to be trusted), and no third fetch."""
    from rwkv_registry.cli.main import main

    repo_id = new_repo(hub, tiny)
    dest = tmp_path / "dest"
    stop_in_state(hub, repo_id, dest, capsys)

    def tampered(server: str, method: str, path: str, status: int, body: bytes, headers: dict[str, str]) -> tuple:
        if method == "GET" and body and is_state(hub, repo_id, server, path):
            return status, body[:-1] + bytes([body[-1] ^ 1]), headers
        return status, body, headers

    hub.log.clear()
    with hub.rewriting(tampered):
        assert main(["pull", repo_id, str(dest)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and f"{STATE}: the Hub served" in err and "fetched whole, after the file" in err
    assert len(state_gets(hub, repo_id)) == 2
    assert list(tmp_path.iterdir()) == []


def test_ctrl_c_during_the_continued_part_leaves_it_continuable(
    hub: FakeHub, tiny: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C while the rest of STATE arrives: exit as interrupted, the bytes received by then are kept with the
    first half, and the third run asks only for what is still missing."""
    repo_id = new_repo(hub, tiny)
    files = hub.files(repo_id)
    size = len(files[STATE])
    dest = tmp_path / "dest"
    staging, half = stop_in_state(hub, repo_id, dest, capsys)
    (part,) = (staging / _hub_resume.PARTIAL_DIR).glob("*.part")
    real = _hub_http.Fetcher._count

    def interrupted(self: _hub_http.Fetcher, n: int) -> None:
        real(self, n)
        if part.exists() and part.stat().st_size > half:  # a chunk of the continued part is written: Ctrl-C
            raise KeyboardInterrupt

    monkeypatch.setattr(_hub_http.Fetcher, "_count", interrupted)
    monkeypatch.setattr(_hub_http.Fetcher, "resume", _small_chunks(_hub_http.Fetcher.resume))
    with pytest.raises(KeyboardInterrupt) as e:
        pull_registry(repo_id, dest, log=quiet)
    assert "run the same pull again to resume" in str(e.value) and "cut short" in str(e.value)
    more = part.stat().st_size
    assert half < more < size
    monkeypatch.setattr(_hub_http.Fetcher, "_count", real)
    hub.log.clear()
    assert pull_registry(repo_id, dest, log=quiet).ok
    (get,) = state_gets(hub, repo_id)
    assert get["range"] == f"bytes={more}-" and get["sent"] == size - more
    assert same_tree(dest, files)


def _small_chunks(real: Any) -> Any:
    """Fetcher.resume reading its body 1 KB at a time (so that a Ctrl-C can fall between two chunks of a file)."""

    def resume(self: _hub_http.Fetcher, url: str, sink: Any, offset: int, size: int, *more: Any) -> int:
        class Small:
            def __init__(self, response: Any) -> None:
                self.response = response

            def __getattr__(self, name: str) -> Any:
                return getattr(self.response, name)

            def iter_bytes(self) -> Any:
                return self.response.iter_bytes(1024)

        import huggingface_hub.utils as hf_utils

        stream = hf_utils.http_stream_backoff

        def chunked(*args: Any, **kwargs: Any) -> Any:
            from contextlib import contextmanager

            @contextmanager
            def cm() -> Any:
                with stream(*args, **kwargs) as response:
                    yield Small(response)

            return cm()

        hf_utils.http_stream_backoff = chunked
        try:
            return real(self, url, sink, offset, size, *more)
        finally:
            hf_utils.http_stream_backoff = stream

    return resume


def test_the_token_goes_to_the_hub_only_never_to_the_cdn_nor_to_disk(
    hub: FakeHub, tiny: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """LFS: the resolve URL redirects to the storage (a CDN). The continuation is asked of the storage without the
    Authorization header; the partial file's identity holds no token, nor does any message."""
    repo_id = new_repo(hub, tiny)
    dest = tmp_path / "dest"
    hub.log.clear()
    staging, half = stop_in_state(hub, repo_id, dest, capsys)
    for path in staging.rglob("*"):
        assert not path.is_file() or TOKEN.encode() not in path.read_bytes(), path
    hub.log.clear()
    said: list[str] = []
    assert pull_registry(repo_id, dest, log=said.append).ok
    assert TOKEN not in " ".join(said)
    (get,) = state_gets(hub, repo_id)
    assert get["server"] == "cdn" and get["authorization"] is None and get["range"] == f"bytes={half}-"
    heads = [e for e in hub.log if e["server"] == "api" and e["method"] == "HEAD" and e["path"].endswith(STATE)]
    assert heads and all(e["authorization"] == f"Bearer {TOKEN}" for e in heads)


def test_a_large_file_whose_resolved_size_disagrees_is_refused(
    hub: FakeHub, tiny: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The resolve answer announces another size than the tree listing: refused before any byte, naming the file."""
    repo_id = new_repo(hub, tiny)

    def other_size(server: str, method: str, path: str, status: int, body: bytes, headers: dict[str, str]) -> tuple:
        if server == "api" and method == "HEAD" and path.endswith("/" + STATE):
            return status, body, {**headers, "X-Linked-Size": "12345"}
        return status, body, headers

    hub.log.clear()
    with hub.rewriting(other_size), pytest.raises(RegistryIOError) as e:
        pull_registry(repo_id, tmp_path / "dest", log=quiet)
    assert f"{STATE}: the Hub says 12345 bytes when resolved" in e.value.message
    assert not state_gets(hub, repo_id)


@pytest.mark.parametrize("storage", ["lfs", "plain git"])
def test_large_files_are_hashed_once_too(
    hub: FakeHub, tiny: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, storage: str
) -> None:
    """The files pull downloads itself keep the property of the others: one read each (the check, whose facts
    validation reuses)."""
    import test_hub_pull

    test_hub_pull.test_pull_hashes_each_weight_file_once(hub, tiny, tmp_path, monkeypatch, "new", storage)


def test_a_full_disk_while_continuing_is_said_as_such(
    hub: FakeHub, tiny: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The disk fills while the rest of STATE is written: the local error is said (with the space the pull needs),
    not "cannot reach the Hub", and the bytes received stay for the next run."""
    import errno
    import os

    repo_id = new_repo(hub, tiny)
    dest = tmp_path / "dest"
    staging, half = stop_in_state(hub, repo_id, dest, capsys)
    real = _hub_http.Fetcher.resume

    def full(self: _hub_http.Fetcher, url: str, sink: Any, offset: int, size: int, *more: Any) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(sink.name))

    monkeypatch.setattr(_hub_http.Fetcher, "resume", full)
    with pytest.raises(RegistryIOError) as e:
        pull_registry(repo_id, dest, log=quiet)
    assert "No space left on device" in e.value.message and "Free some space" in e.value.hint
    assert "cannot reach" not in e.value.message and str(staging) in e.value.hint
    monkeypatch.setattr(_hub_http.Fetcher, "resume", real)
    (part,) = (staging / _hub_resume.PARTIAL_DIR).glob("*.part")
    assert part.stat().st_size == half
