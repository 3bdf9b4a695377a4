"""Mutation audit of registry/hub/resume.py and Fetcher.resume: cases the Range tests (test_hub_pull_range.py)
left open, each killing a hand-made mutant that survived them (named in each test)."""

from __future__ import annotations

import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest
import test_hub
from hub_server import FakeHub
from test_hub import new_repo
from test_hub_pull import STATE, quiet, same_tree
from test_hub_pull_range import cut_at, is_state, state_gets, stop_in_state

from rwkv_registry.core.errors import RegistryIOError
from rwkv_registry.hub import resume as _hub_resume
from rwkv_registry.hub import transport as _hub_http
from rwkv_registry.hub.commands import pull_registry
from rwkv_registry.hub.remote import RemoteRepo

hub = test_hub.hub
hub_env = test_hub.hub_env
tiny = test_hub.tiny


@pytest.fixture(autouse=True)
def _large_weights(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_hub_resume, "RESUMABLE_BYTES", 20_000)  # the tiny weights (23-34 KB) count as large
    monkeypatch.setattr(time, "sleep", lambda seconds: None)


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

    with hub.rewriting(_answer_ranged(hub, repo_id, from_zero)), pytest.raises(RegistryIOError) as e:
        pull_registry(repo_id, dest, log=quiet)
    assert f"does not answer bytes {half}-" in e.value.message, e.value.message
    (part,) = (staging / _hub_resume.PARTIAL_DIR).glob("*.part")
    assert part.stat().st_size == half


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

    with hub.rewriting(_answer_ranged(hub, repo_id, other)), pytest.raises(RegistryIOError) as e:
        pull_registry(repo_id, dest, log=quiet)
    assert f"does not answer bytes {half}-" in e.value.message, e.value.message
    (part,) = (staging / _hub_resume.PARTIAL_DIR).glob("*.part")
    assert part.stat().st_size == half


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
    from test_hub import MISS_A

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
