"""`pull` continues a file cut short with an HTTP Range request (registry/hub/resume.py), against the Hub
look-alike: the bytes received stay in the staging directory, tied to the commit, path, size and digest, and the
next run of the same pull fetches only the rest, then checks the whole file against the listing.

The tiny registry's weights are 23-34 KB: RESUMABLE_BYTES is lowered so that they take this path."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest
from hub_server import FakeHub, new_repo, plain_git_repo
from regtools import STATE, quiet, same_tree

from rwkv_registry.core.errors import RegistryIOError
from rwkv_registry.hub import resume as _hub_resume
from rwkv_registry.hub import transport as _hub_http
from rwkv_registry.hub.commands import pull_registry
from rwkv_registry.hub.remote import RemoteRepo

pytestmark = pytest.mark.usefixtures("hub_env")  # every test talks to the Hub look-alike


TOKEN = "hf_test_token_for_the_local_server"  # conftest.hub_env's HF_TOKEN

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


def test_a_file_of_exactly_resumable_bytes_is_downloaded_resumably(monkeypatch: pytest.MonkeyPatch) -> None:
    """RESUMABLE_BYTES or more (kills the mutant ``size > RESUMABLE_BYTES``)."""
    monkeypatch.setattr(_hub_resume, "RESUMABLE_BYTES", 100)
    sizes = {"a.pth": 99, "b.pth": 100, "c.pth": 101}
    remote = cast(RemoteRepo, SimpleNamespace(files={r: SimpleNamespace(size=s) for r, s in sizes.items()}))
    assert _hub_resume.resumable(remote, list(sizes)) == ["b.pth", "c.pth"]


def test_a_complete_partial_file_is_used_without_a_download(
    hub: FakeHub, tiny: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A partial file holding all the listed bytes (a pull stopped between its last byte and the move into place)
    is moved into place and checked: no request for the file (kills the mutants ``size < listed`` in
    prune_partials and ``offset >= entry.size`` in fetch_resumable, which fetched it whole again)."""
    repo_id = new_repo(hub, tiny)
    files = hub.files(repo_id)
    dest = tmp_path / "dest"
    staging, _ = stop_in_state(hub, repo_id, dest, capsys)
    (part,) = (staging / _hub_resume.PARTIAL_DIR).glob("*.part")
    part.write_bytes(files[STATE])
    hub.log.clear()
    said: list[str] = []
    assert pull_registry(repo_id, dest, log=said.append).ok
    assert state_gets(hub, repo_id) == []
    assert any(m.startswith("resuming: 1 file(s) cut short") for m in said), said
    assert same_tree(dest, files)


@pytest.mark.parametrize("how", ["identity saying otherwise", "a link"])
def test_a_partial_file_not_continuable_is_dropped_before_the_pull(
    hub: FakeHub, tiny: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], how: str
) -> None:
    """KEY.json present but naming other bytes, or KEY.part a symbolic link (to the very bytes received):
    prune_partials deletes the partial file (not announced as resumed), and the file is fetched whole (kills the
    mutants of prune_partials without ``meta.read_bytes() == identity`` and without ``is_file(follow_symlinks=False)``
    for a .part)."""
    repo_id = new_repo(hub, tiny)
    files = hub.files(repo_id)
    dest = tmp_path / "dest"
    staging, _ = stop_in_state(hub, repo_id, dest, capsys)
    (part,) = (staging / _hub_resume.PARTIAL_DIR).glob("*.part")
    if how == "a link":
        elsewhere = tmp_path / "elsewhere.part"
        part.rename(elsewhere)
        part.symlink_to(elsewhere)
    else:
        meta = part.with_suffix(".json")
        meta.write_bytes(meta.read_bytes().replace(b'"size": ', b'"size": 1'))
    hub.log.clear()
    said: list[str] = []
    assert pull_registry(repo_id, dest, log=said.append).ok
    assert not [m for m in said if "cut short" in m], said
    (get,) = state_gets(hub, repo_id)
    assert get["range"] is None and get["sent"] == len(files[STATE])
    assert same_tree(dest, files)


def test_a_continuation_that_brings_no_byte_ends_the_tries(
    hub: FakeHub, tiny: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Within one pull, a cut download is continued while each try brings new bytes: a storage that sends nothing
    past the cut is asked once more, not RETRIES times (kills the mutant ``st_size < have`` in _continue_cut)."""
    repo_id = new_repo(hub, tiny)
    hub.log.clear()
    _, half = stop_in_state(hub, repo_id, tmp_path / "dest", capsys)
    first, again = state_gets(hub, repo_id)
    assert first["range"] is None and again["range"] == f"bytes={half}-"


def test_a_file_cut_and_continued_within_its_first_download_is_not_said_resumed(
    hub: FakeHub, tiny: Path, tmp_path: Path
) -> None:
    """A download started at byte 0 and continued after a cut within the same pull was fetched whole by this pull:
    fetch_resumable returns 0 and says nothing of resuming (kills the mutant returning the continuation's offset
    in _continue_cut, which said 'resumed ... from byte HALF' and would fetch a failing file a third time)."""
    repo_id = new_repo(hub, tiny)
    files = hub.files(repo_id)
    said: list[str] = []
    hub.log.clear()  # the module's hub served STATE's blob (the same bytes, the same storage path) to earlier tests
    with hub.rewriting(cut_at(hub, repo_id, len(files[STATE]) // 2, once=True)):
        assert pull_registry(repo_id, tmp_path / "dest", log=said.append).ok
    assert len(state_gets(hub, repo_id)) == 2
    assert not [m for m in said if m.startswith(f"resumed {STATE}")], said


def test_partial_bytes_counts_the_partial_files_only(tmp_path: Path) -> None:
    """Only KEY.part files count (an identity KEY.json alone, written before the first byte, is nothing to resume
    from: the pull then removes its staging directory); a link named .part is not followed (kills the mutant
    counting every file of the folder)."""
    assert _hub_resume.partial_bytes(tmp_path) == 0  # no folder
    folder = tmp_path / _hub_resume.PARTIAL_DIR
    folder.mkdir(parents=True)
    (folder / "k1.json").write_bytes(b"{}" * 50)
    assert _hub_resume.partial_bytes(tmp_path) == 0
    (folder / "k1.part").write_bytes(b"x" * 10)
    (tmp_path / "big").write_bytes(b"y" * 1000)
    (folder / "k2.part").symlink_to(tmp_path / "big")
    assert _hub_resume.partial_bytes(tmp_path) == 10


def test_a_flaky_link_is_continued_while_each_try_brings_bytes(hub: FakeHub, tiny: Path, tmp_path: Path) -> None:
    """Every answer is cut after a third of the file: the same pull continues twice (a Range request from each
    cut), not once (kills the mutant giving up after one continuation, RETRIES = 1)."""
    repo_id = new_repo(hub, tiny)
    files = hub.files(repo_id)
    third = len(files[STATE]) // 3 + 1

    def thirds(server: str, method: str, path: str, status: int, body: bytes, headers: dict[str, str]) -> tuple:
        if method == "GET" and status in (200, 206) and is_state(hub, repo_id, server, path):
            return status, body[:third], headers
        return status, body, headers

    hub.log.clear()
    with hub.rewriting(thirds):
        assert pull_registry(repo_id, tmp_path / "dest", log=quiet).ok
    assert [g["range"] for g in state_gets(hub, repo_id)] == [None, f"bytes={third}-", f"bytes={2 * third}-"]
    assert same_tree(tmp_path / "dest", files)


def _answer_ranged(hub: FakeHub, repo_id: str, change: Any) -> Any:
    """A rewrite hook applying ``change(body, headers, size)`` to the Range answers (206) for STATE."""

    def hook(server: str, method: str, path: str, status: int, body: bytes, headers: dict[str, str]) -> tuple:
        if method == "GET" and status == 206 and is_state(hub, repo_id, server, path):
            return (206, *change(body, headers, len(hub.files(repo_id)[STATE])))
        return status, body, headers

    return hook


def _refused_before_appending(hub: FakeHub, repo_id: str, dest: Path, staging: Path, half: int, change: Any) -> None:
    """The continued pull, its Range answers rewritten by ``change``, is refused for its Content-Range, and the
    partial file still holds the ``half`` bytes kept: nothing of the answer was appended."""
    with hub.rewriting(_answer_ranged(hub, repo_id, change)), pytest.raises(RegistryIOError) as e:
        pull_registry(repo_id, dest, log=quiet)
    assert f"does not answer bytes {half}-" in e.value.message, e.value.message
    (part,) = (staging / _hub_resume.PARTIAL_DIR).glob("*.part")
    assert part.stat().st_size == half


def test_a_range_answer_for_other_bytes_is_refused(
    hub: FakeHub, tiny: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A 206 whose Content-Range names bytes from 0 (a storage ignoring the start) is refused for its
    Content-Range, before a byte is appended (kills the mutant without the Content-Range check, which appended
    the whole body after the half and stopped only at 'more than the bytes listed')."""
    repo_id = new_repo(hub, tiny)
    dest = tmp_path / "dest"
    staging, half = stop_in_state(hub, repo_id, dest, capsys)
    whole = hub.files(repo_id)[STATE]

    def from_zero(body: bytes, headers: dict[str, str], size: int) -> tuple[bytes, dict[str, str]]:
        return whole, {**headers, "Content-Range": f"bytes 0-{size - 1}/{size}", "Content-Length": str(size)}

    _refused_before_appending(hub, repo_id, dest, staging, half, from_zero)


def test_a_range_answer_one_byte_too_long_is_refused_at_that_byte(
    hub: FakeHub, tiny: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A body one byte longer than the listed size is refused as soon as the byte arrives, never written (kills
    the mutant ``got > size + 1``)."""
    repo_id = new_repo(hub, tiny)
    dest = tmp_path / "dest"
    staging, _ = stop_in_state(hub, repo_id, dest, capsys)

    def longer(body: bytes, headers: dict[str, str], size: int) -> tuple[bytes, dict[str, str]]:
        return body + b"!", {**headers, "Content-Length": str(len(body) + 1)}

    with hub.rewriting(_answer_ranged(hub, repo_id, longer)), pytest.raises(RegistryIOError) as e:
        pull_registry(repo_id, dest, log=quiet)
    assert "the server sent more than the" in e.value.message, e.value.message
    for part in (staging / _hub_resume.PARTIAL_DIR).glob("*.part"):
        assert part.stat().st_size <= len(hub.files(repo_id)[STATE])


def test_a_full_disk_inside_the_download_is_said_as_such(
    hub: FakeHub, tiny: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The disk fills on a write of the body itself (inside Fetcher.resume's reading loop): the local error is
    said, not taken for a cut connection and retried (kills the mutant catching only RegistryIOError there)."""
    import errno
    import os

    repo_id = new_repo(hub, tiny)
    dest = tmp_path / "dest"
    staging, half = stop_in_state(hub, repo_id, dest, capsys)
    real = _hub_http.Fetcher.resume

    class Full:
        def __init__(self, sink: Any) -> None:
            self.sink = sink

        def __getattr__(self, name: str) -> Any:
            return getattr(self.sink, name)

        def write(self, data: bytes) -> int:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(self.sink.name))

    def resume(self: _hub_http.Fetcher, url: str, sink: Any, offset: int, size: int, *more: Any) -> int:
        return real(self, url, Full(sink), offset, size, *more)

    monkeypatch.setattr(_hub_http.Fetcher, "resume", resume)
    hub.log.clear()
    with pytest.raises(RegistryIOError) as e:
        pull_registry(repo_id, dest, log=quiet)
    assert "No space left on device" in e.value.message and "cut" not in e.value.message, e.value.message
    assert len(state_gets(hub, repo_id)) == 1  # not retried
    (part,) = (staging / _hub_resume.PARTIAL_DIR).glob("*.part")
    assert part.stat().st_size == half


# --- Fetcher.resume: mutants that survived the tests above (a second audit; the earlier audit's names for two of them,
# h07 and h08, are recorded nowhere in the repository, so every mutant of resume was written again and run:
# Accept-Encoding dropped, requests not counted, the Content-Range total or end not checked, no truncate, the 416
# test without `offset`, no check of a body ending early and its written_from; each is killed below, or shown
# equivalent at the end of this file)


def test_a_continuation_asks_for_the_bytes_uncompressed(
    hub: FakeHub, tiny: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A Range request counts bytes of the file as stored: asked with ``Accept-Encoding: identity``, else a proxy
    may gzip the answer and the offsets would be of the compressed stream (kills the mutant without the header)."""
    repo_id = new_repo(hub, tiny)
    dest = tmp_path / "dest"
    stop_in_state(hub, repo_id, dest, capsys)
    hub.log.clear()
    assert pull_registry(repo_id, dest, log=quiet).ok
    (get,) = state_gets(hub, repo_id)
    assert get["range"] is not None and get["accept_encoding"] == "identity"


@pytest.mark.parametrize(
    "span",
    ["bytes {half}-{last}/{more}", "bytes {half}-{short}/{size}", "bytes {half}-{last}/*"],
    ids=["another total", "an end short of the file's", "an unknown total"],
)
def test_a_range_answer_naming_another_end_or_total_is_refused(
    hub: FakeHub, tiny: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], span: str
) -> None:
    """The continuation's Content-Range must name the rest of THIS file: from the bytes kept to its last byte, of
    its listed size. Another total (the storage holds another file), an end short of the file's or an unknown total
    are refused before a byte is appended (kills the mutants comparing only the start and the end, or only the start
    and the total)."""
    repo_id = new_repo(hub, tiny)
    dest = tmp_path / "dest"
    staging, half = stop_in_state(hub, repo_id, dest, capsys)

    def other(body: bytes, headers: dict[str, str], size: int) -> tuple[bytes, dict[str, str]]:
        text = span.format(half=half, last=size - 1, short=size - 2, size=size, more=size + 1)
        return body, {**headers, "Content-Range": text}

    _refused_before_appending(hub, repo_id, dest, staging, half, other)


def test_a_whole_answer_cut_before_the_bytes_kept_drops_the_stale_rest(
    hub: FakeHub, tiny: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A partial file of half the bytes; the storage ignores the Range request (200, the whole file, written from
    byte 0) and that answer is cut at a quarter: the file holds the quarter just received, not the quarter followed by
    the old bytes up to the half, so the next try asks from the quarter (kills the mutant without sink.truncate(),
    which asked from the half: bytes of two answers spliced)."""
    repo_id = new_repo(hub, tiny)
    files = hub.files(repo_id)
    dest = tmp_path / "dest"
    _, half = stop_in_state(hub, repo_id, dest, capsys)
    quarter = len(files[STATE]) // 4
    calls: list[int] = []

    def whole_cut_once(server: str, method: str, path: str, status: int, body: bytes, headers: dict[str, str]) -> tuple:
        if method == "GET" and status in (200, 206) and is_state(hub, repo_id, server, path):
            calls.append(status)
            if len(calls) == 1:
                return 200, files[STATE][:quarter], {**headers, "Content-Length": str(len(files[STATE]))}
        return status, body, headers

    hub.log.clear()
    with hub.rewriting(whole_cut_once):
        assert pull_registry(repo_id, dest, log=quiet).ok
    assert [g["range"] for g in state_gets(hub, repo_id)] == [f"bytes={half}-", f"bytes={quarter}-"]
    assert same_tree(dest, files)


def test_an_answer_ending_early_without_a_cut_is_continued(hub: FakeHub, tiny: Path, tmp_path: Path) -> None:
    """A first download whose answer ends cleanly before the file's end (its Content-Length says so: no cut
    connection) is continued from the bytes received, like a cut, and the file completes (kills the mutant without
    the ``got != size`` check, which took the short file as complete: refused by the listing check, exit 2)."""
    repo_id = new_repo(hub, tiny)
    files = hub.files(repo_id)
    third = len(files[STATE]) // 3
    calls: list[int] = []

    def short_once(server: str, method: str, path: str, status: int, body: bytes, headers: dict[str, str]) -> tuple:
        if method == "GET" and status in (200, 206) and is_state(hub, repo_id, server, path):
            calls.append(status)
            if len(calls) == 1:
                return status, body[:third], {**headers, "Content-Length": str(third)}
        return status, body, headers

    hub.log.clear()
    with hub.rewriting(short_once):
        assert pull_registry(repo_id, tmp_path / "dest", log=quiet).ok
    assert [g["range"] for g in state_gets(hub, repo_id)] == [None, f"bytes={third}-"]
    assert same_tree(tmp_path / "dest", files)


def test_a_whole_answer_ending_early_is_not_said_resumed(
    hub: FakeHub, tiny: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A rerun with a partial file: the storage ignores the Range request and its whole answer ends early (honest
    Content-Length); the continuation completes it. The file was written from byte 0 by this pull: said fetched
    whole, never "resumed ... from byte HALF" (kills the mutant giving the early end written_from=offset)."""
    repo_id = new_repo(hub, tiny)
    files = hub.files(repo_id)
    dest = tmp_path / "dest"
    stop_in_state(hub, repo_id, dest, capsys)
    third = len(files[STATE]) // 3
    calls: list[int] = []

    def whole_short_once(
        server: str, method: str, path: str, status: int, body: bytes, headers: dict[str, str]
    ) -> tuple:
        if method == "GET" and status in (200, 206) and is_state(hub, repo_id, server, path):
            calls.append(status)
            if len(calls) == 1:
                return 200, files[STATE][:third], {**headers, "Content-Length": str(third)}
        return status, body, headers

    said: list[str] = []
    with hub.rewriting(whole_short_once):
        assert pull_registry(repo_id, dest, log=said.append).ok
    assert not [m for m in said if m.startswith(f"resumed {STATE}")], said
    assert any("ignored or refused the Range request" in m for m in said), said
    assert same_tree(dest, files)


def test_a_416_to_a_request_without_range_is_said_as_the_status(hub: FakeHub, tiny: Path, tmp_path: Path) -> None:
    """A broken proxy answers 416 to a first download, which sent no Range header: an error status of the Hub, not
    "HTTP 416 to a Range request from byte 0" (kills the mutant testing ``status == 416`` without ``offset``)."""
    repo_id = new_repo(hub, tiny)

    def refuse(server: str, method: str, path: str, status: int, body: bytes, headers: dict[str, str]) -> tuple:
        if method == "GET" and is_state(hub, repo_id, server, path):
            return 416, b"", {"Content-Length": "0"}
        return status, body, headers

    with hub.rewriting(refuse), pytest.raises(RegistryIOError) as e:
        pull_registry(repo_id, tmp_path / "dest", log=quiet)
    assert "416" in e.value.message and "Range request" not in e.value.message, e.value.message


def test_validate_full_counts_the_continuation_requests(hub: FakeHub, tiny: Path) -> None:
    """``stats["requests"]`` of ``validate hf:// --full`` counts every GET of file bytes, the continuation of a
    download cut mid-file included (kills the mutant of Fetcher.resume not counting its request)."""
    from regtools import MISS_A

    from rwkv_registry.hub.commands import validate_hub

    repo_id = new_repo(hub, tiny)
    blob = hub.repos[repo_id].commits[hub.head(repo_id)][MISS_A]
    calls: list[int] = []

    def cut_whole_once(server: str, method: str, path: str, status: int, body: bytes, headers: dict[str, str]) -> tuple:
        whole = headers.get("Content-Range", "").startswith(f"bytes 0-{blob.size - 1}/")
        if method == "GET" and server == "cdn" and path.endswith("/" + blob.sha256) and whole:
            calls.append(1)
            if len(calls) == 1:
                return status, body[: blob.size // 2], headers
        return status, body, headers

    hub.log.clear()
    with hub.rewriting(cut_whole_once):
        report = validate_hub(f"hf://{repo_id}", full=True)
    assert report.ok, [(f.code, f.path, f.message) for f in report.findings]
    file_gets = [
        e
        for e in hub.log
        if e["method"] == "GET" and (e["server"] == "cdn" or "/resolve/" in e["path"])  # not the API's JSON
    ]
    assert any(e["range"] == f"bytes={blob.size // 2}-" for e in file_gets)
    assert report.stats["requests"] == len(file_gets)


# Equivalent mutants of Fetcher.resume (run, not killed, and why no test can tell them apart):
# - ``elif status == 206 and offset`` -> ``elif status == 206``: differs only on a 206 answering a request that sent
#   no Range header (offset 0), which HTTP forbids; the mutant then accepts a Content-Range naming the whole file,
#   whose bytes the listing check judges anyway. No server this code talks to (the Hub, its CDN, the look-alike)
#   answers so.
# - ``written_from=start`` -> ``written_from=offset`` in the outer ``except Exception`` (a transport error outside
#   the body loop): ``start`` differs from ``offset`` only once a 200 answer's headers have arrived, and from then
#   on every error of the body read is raised by the inner handler (with ``written_from=start``); what is left
#   outside it (closing the answer) raises nothing the client can provoke.


def test_an_error_status_to_the_continuation_keeps_the_status_hint(
    hub: FakeHub, tiny: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A 403 to the Range request continuing a cut download is no cut connection: the hint says what to do about the
    status (the token), not "run the same pull again: it continues this file", which would fail the same way."""
    repo_id = new_repo(hub, tiny)
    dest = tmp_path / "dest"
    stop_in_state(hub, repo_id, dest, capsys)

    def forbid(server: str, method: str, path: str, status: int, body: bytes, headers: dict[str, str]) -> tuple:
        if method == "GET" and status == 206 and is_state(hub, repo_id, server, path):  # the continuation only
            return 403, b"", {"Content-Length": "0"}
        return status, body, headers

    with hub.rewriting(forbid), pytest.raises(RegistryIOError) as e:
        pull_registry(repo_id, dest, log=quiet)
    assert "403" in e.value.message, e.value.message
    assert e.value.hint.startswith(_hub_http.status_hint(403)), e.value.hint
