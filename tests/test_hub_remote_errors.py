"""``validate hf://`` over a bad network, against the Hub look-alike (tests/support/hub_server.py):

- ``--full``'s download of a large MiSS adapter cut mid-file is continued with an HTTP Range request, as ``pull``
  does (files of ``RESUMABLE_BYTES`` or more, a bounded number of tries, the whole file's sha256 checked against the
  listing), where before the command stopped (exit 2) and the bytes received were thrown away;
- an error status of the Hub or its storage (403, 404 after the listing, 5xx after huggingface_hub's retries) is an
  error of the command naming the URL and the status, with what to do (token, revision, try later), exit 2, where
  before it was a LAY010 finding ("cannot read") whose fix told to check local permissions;
- a full disk while ``Fetcher.get`` writes to its sink is a local write error naming the destination and the errno
  text, exit 2, nothing left behind, where before it read "cannot fetch URL" (a Hub problem)."""

from __future__ import annotations

import errno
import os
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from hub_server import FakeHub, new_repo
from regtools import MISS_A, STATE

from rwkv_registry.cli.main import main
from rwkv_registry.hub import resume as _hub_resume
from rwkv_registry.hub import transport as _hub_http
from rwkv_registry.hub.commands import validate_hub
from rwkv_registry.hub.transport import (
    Fetcher,
    LocalWriteError,
    RemoteStatusError,
    error_reason,
    error_status,
    public_url,
    status_hint,
    write_hint,
)

pytestmark = pytest.mark.usefixtures("hub_env")  # every test talks to the Hub look-alike


@pytest.fixture(autouse=True)
def _no_sleep(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(time, "sleep", lambda seconds: None)  # huggingface_hub's back-off and the tries' pause


def _start(headers: dict[str, str]) -> int:
    span = headers.get("Content-Range", "")
    return int(span.split(" ", 1)[1].split("-", 1)[0]) if span.startswith("bytes ") else 0


def _blob(hub: FakeHub, repo_id: str, rel: str) -> Any:
    return hub.repos[repo_id].commits[hub.head(repo_id)][rel]


def _miss_gets(hub: FakeHub, repo_id: str) -> list[dict[str, Any]]:
    """The storage GETs of MISS_A that are not the header Range reads: the whole download and its continuations."""
    sha = _blob(hub, repo_id, MISS_A).sha256
    size = _blob(hub, repo_id, MISS_A).size
    return [
        e
        for e in hub.log
        if e["method"] == "GET"
        and e["server"] == "cdn"
        and e["path"].endswith("/" + sha)
        and (e["range"] is None or e["range"] == f"bytes=0-{size - 1}" or e["range"].endswith("-"))
    ]


def _download(headers: dict[str, str], size: int) -> bool:
    """Whether an answer of the storage is the whole download or a continuation (to the file's end, from before its
    last TAIL_BYTES), not a header read (the tail, the central directory, the local headers)."""
    span = headers.get("Content-Range", "")
    return span.endswith(f"-{size - 1}/{size}") and _start(headers) < size - _hub_http.TAIL_BYTES


def _cut_miss(hub: FakeHub, repo_id: str, at: int, *, times: int = 1, other: bool = False) -> Any:
    """Answers for MISS_A's whole download (from byte 0 to its end) and its continuations (``bytes=N-``) end at byte
    ``at`` of the file, the first ``times`` of them (Content-Length promising the rest: a cut connection); the header
    Range reads are served. ``other``: the continuations' bytes are not the file's (a storage error)."""
    size = _blob(hub, repo_id, MISS_A).size
    sha = _blob(hub, repo_id, MISS_A).sha256
    calls: list[int] = []

    def hook(server: str, method: str, path: str, status: int, body: bytes, headers: dict[str, str]) -> tuple:
        if method != "GET" or server != "cdn" or not path.endswith("/" + sha) or status not in (200, 206):
            return status, body, headers
        start = _start(headers)
        if not _download(headers, size):
            return status, body, headers  # a header read
        calls.append(start)
        if other and start > 0:
            body = bytes(b ^ 0xFF for b in body)
        if len(calls) <= times:
            return status, body[: max(0, at - start)], headers
        return status, body, headers

    return hook


def test_full_continues_a_large_miss_download_cut_mid_file(
    hub: FakeHub, tiny: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The download of MISS_A (large enough to continue) is cut at a third: the same command asks for the rest only
    (``Range: bytes=THIRD-``) and validates clean (before: exit 2, "the connection was cut", the bytes lost)."""
    monkeypatch.setattr(_hub_resume, "RESUMABLE_BYTES", 20_000)  # the tiny MiSS adapters count as large
    repo_id = new_repo(hub, tiny)
    size = _blob(hub, repo_id, MISS_A).size
    assert size >= 20_000
    hub.log.clear()
    with hub.rewriting(_cut_miss(hub, repo_id, size // 3)):
        assert main(["validate", f"hf://{repo_id}", "--full"]) == 0, capsys.readouterr()
    gets = _miss_gets(hub, repo_id)
    assert [g["range"] for g in gets] == [f"bytes=0-{size - 1}", f"bytes={size // 3}-"], gets
    assert gets[1]["sent"] == size - size // 3


def test_full_a_continued_file_is_checked_whole_and_fetched_again_if_wrong(
    hub: FakeHub, tiny: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The continuation brings bytes that are not the file's: the whole file's sha256 disagrees with the listing, so
    it is fetched whole once more and judged as usual (clean here). Without the check the spliced bytes would be
    read as the file: an HSH001 against a sound repository."""
    monkeypatch.setattr(_hub_resume, "RESUMABLE_BYTES", 20_000)
    repo_id = new_repo(hub, tiny)
    size = _blob(hub, repo_id, MISS_A).size
    hub.log.clear()
    with hub.rewriting(_cut_miss(hub, repo_id, size // 2, other=True)):
        report = validate_hub(f"hf://{repo_id}", full=True)
    assert report.ok, [(f.code, f.path, f.message) for f in report.findings]
    # every MiSS adapter hashed once, MISS_A twice (the spliced bytes, then the whole file)
    miss = sum(len(b) for r, b in hub.files(repo_id).items() if "/miss/" in r and r.endswith(".pth"))
    assert report.stats["bytes_hashed"] == miss + size
    assert [g["range"] for g in _miss_gets(hub, repo_id)] == [
        f"bytes=0-{size - 1}",
        f"bytes={size // 2}-",
        f"bytes=0-{size - 1}",
    ]


def test_full_gives_up_when_a_continuation_brings_nothing(
    hub: FakeHub, tiny: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every answer ends at half of the file: one continuation, which brings no byte, then exit 2 naming the file and
    the bytes received (bounded: not RETRIES tries, never a loop), and no download left behind."""
    monkeypatch.setattr(_hub_resume, "RESUMABLE_BYTES", 20_000)
    monkeypatch.chdir(tmp_path)
    repo_id = new_repo(hub, tiny)
    size = _blob(hub, repo_id, MISS_A).size
    hub.log.clear()
    with hub.rewriting(_cut_miss(hub, repo_id, size // 2, times=99)):
        assert main(["validate", f"hf://{repo_id}", "--full"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and f"{MISS_A}: " in err and f"cut after {size // 2} of the file's {size}" in err
    assert [g["range"] for g in _miss_gets(hub, repo_id)] == [f"bytes=0-{size - 1}", f"bytes={size // 2}-"]
    assert not list(tmp_path.rglob("full-*.pth"))


def test_full_a_flaky_link_is_continued_a_bounded_number_of_times(
    hub: FakeHub, tiny: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each answer brings a few more bytes and is cut again: continued while it brings bytes, at most RETRIES times
    after the first request, then exit 2."""
    monkeypatch.setattr(_hub_resume, "RESUMABLE_BYTES", 20_000)
    repo_id = new_repo(hub, tiny)
    size = _blob(hub, repo_id, MISS_A).size
    sha = _blob(hub, repo_id, MISS_A).sha256

    def trickle(server: str, method: str, path: str, status: int, body: bytes, headers: dict[str, str]) -> tuple:
        if method == "GET" and server == "cdn" and path.endswith("/" + sha) and _download(headers, size):
            return status, body[:100], headers
        return status, body, headers

    hub.log.clear()
    with hub.rewriting(trickle):
        assert main(["validate", f"hf://{repo_id}", "--full"]) == 2
    assert len(_miss_gets(hub, repo_id)) == 1 + _hub_resume.RETRIES
    assert "cut after" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("server", "status", "advice"),
    [
        ("cdn", 403, "token"),
        ("cdn", 500, "Try again later"),
        ("api", 404, "Check the revision"),
    ],
)
def test_an_error_status_reading_a_weight_is_a_hub_error_not_lay010(
    hub: FakeHub, tiny: Path, capsys: pytest.CaptureFixture[str], server: str, status: int, advice: str
) -> None:
    """The storage refuses (403) or fails (500, after huggingface_hub's retries) the Range reads of the weights, or
    the Hub answers 404 for a file of its own listing: exit 2, the file, the URL and the status named, and the fix
    for that status; no LAY010 (whose fix is local permissions)."""
    repo_id = new_repo(hub, tiny)

    def fail(srv: str, method: str, path: str, st: int, body: bytes, headers: dict[str, str]) -> tuple:
        if srv == server and path.endswith(STATE if server == "api" else "/" + _blob(hub, repo_id, STATE).sha256):
            return status, b"nope", {"Content-Length": "4"}
        return st, body, headers

    with hub.rewriting(fail):
        assert main(["validate", f"hf://{repo_id}"]) == 2
    out = capsys.readouterr()
    text = out.out + out.err
    assert "Traceback" not in text and "LAY010" not in text and "permissions" not in text, text
    assert f"{STATE}: " in text and f"HTTP {status}" in text and advice in text, text
    host = hub.storage if server == "cdn" else hub.endpoint
    assert host in text, text


def test_get_names_the_status_and_the_url_without_its_query(hub: FakeHub, tiny: Path) -> None:
    """The unit: an error status is a RemoteStatusError with the status, and the URL shown without its query (a
    storage URL's signature)."""
    repo_id = new_repo(hub, tiny)
    sha = _blob(hub, repo_id, STATE).sha256
    url = f"{hub.storage}/blobs/{sha}?X-Amz-Signature=secret"

    def forbid(server: str, method: str, path: str, status: int, body: bytes, headers: dict[str, str]) -> tuple:
        return (403, b"no", {"Content-Length": "2"}) if server == "cdn" else (status, body, headers)

    with hub.rewriting(forbid), pytest.raises(RemoteStatusError) as e:
        Fetcher(hub.endpoint).get(url, start=0, end=9, total=100)
    assert e.value.status == 403 and "HTTP 403" in e.value.message and "secret" not in e.value.message
    assert f"{hub.storage}/blobs/{sha}" in e.value.message and "token" in e.value.hint


class _Full:
    """A file whose writes fail as on a full disk."""

    def __init__(self, name: str) -> None:
        self.name = name

    def write(self, data: bytes) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), self.name)


def test_get_a_full_disk_is_a_local_write_error(hub: FakeHub, tiny: Path, tmp_path: Path) -> None:
    """The unit: an OSError of the sink is said as a local write error naming the destination and the errno text,
    not "cannot fetch" (a Hub problem)."""
    repo_id = new_repo(hub, tiny)
    data = hub.files(repo_id)["README.md"]
    url = f"{hub.endpoint}/{repo_id}/resolve/{hub.head(repo_id)}/README.md"
    dest = str(tmp_path / "out.bin")
    with pytest.raises(LocalWriteError) as e:
        Fetcher(hub.endpoint).get(url, size=len(data), sink=_Full(dest))  # type: ignore[arg-type]
    assert e.value.errno == errno.ENOSPC and e.value.path == dest
    assert dest in e.value.message and "No space left on device" in e.value.message, e.value.message
    assert "cannot fetch" not in e.value.message and "Free space" in e.value.hint


def test_validate_full_on_a_full_disk_is_exit_2_and_leaves_nothing(
    hub: FakeHub, tiny: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--full`` downloads a MiSS adapter onto a full disk: exit 2, the temporary file and "No space left on device"
    named, no LAY010, and the download removed."""
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr("tempfile.tempdir", None)
    repo_id = new_repo(hub, tiny)
    real = _hub_http.Fetcher.get

    def get(self: Fetcher, url: str, **kw: Any) -> bytes:
        if kw.get("sink") is not None:
            kw["sink"] = _Full(kw["sink"].name)
        return real(self, url, **kw)

    monkeypatch.setattr(_hub_http.Fetcher, "get", get)
    assert main(["validate", f"hf://{repo_id}", "--full"]) == 2
    out = capsys.readouterr()
    text = out.out + out.err
    assert "Traceback" not in text and "LAY010" not in text and "cannot fetch" not in text, text
    assert "No space left on device" in text and "full-" in text and "cannot write the download to" in text, text
    assert list(tmp_path.iterdir()) == []


def test_full_an_error_status_to_the_continuation_is_a_hub_error(
    hub: FakeHub, tiny: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The storage refuses (403) the Range request continuing a cut MiSS download: an error status of the Hub, with
    the status's fix, as for the first request; before, huggingface_hub's HfHubHTTPError (an OSError) went past
    Fetcher.resume's own handler and was said as a full local disk ("cannot write the download", "Free space")."""
    monkeypatch.setattr(_hub_resume, "RESUMABLE_BYTES", 20_000)
    repo_id = new_repo(hub, tiny)
    size = _blob(hub, repo_id, MISS_A).size
    cut = _cut_miss(hub, repo_id, size // 3)

    sha = _blob(hub, repo_id, MISS_A).sha256

    def refuse_continuation(
        server: str, method: str, path: str, status: int, body: bytes, headers: dict[str, str]
    ) -> tuple:
        continuation = status == 206 and _start(headers) > 0 and _download(headers, size)
        if method == "GET" and continuation and path.endswith("/" + sha):
            return 403, b"nope", {"Content-Length": "4"}
        return cut(server, method, path, status, body, headers)

    with hub.rewriting(refuse_continuation):
        assert main(["validate", f"hf://{repo_id}", "--full"]) == 2
    out = capsys.readouterr()
    text = out.out + out.err
    assert "Traceback" not in text and "cannot write" not in text and "Free space" not in text, text
    assert "HTTP 403" in text and _hub_http.status_hint(403)[:40] in text, text


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


SIGNED = "https://cdn.example/repo/blob?X-Amz-Signature=secret#frag"


def test_a_status_error_names_the_url_without_its_query_and_the_status() -> None:
    e = RemoteStatusError(SIGNED, 403, "Forbidden", hint="h")
    assert str(e.message) == "https://cdn.example/repo/blob: the server answered HTTP 403 Forbidden"
    assert e.status == 403 and e.url == "https://cdn.example/repo/blob" and e.path == e.url and e.hint == "h"
    assert "secret" not in str(e)
    unknown = RemoteStatusError(SIGNED, None, "HfHubHTTPError", hint="h")
    assert "answered an error status HfHubHTTPError" in unknown.message and unknown.status is None


def test_a_local_write_error_says_the_destination_and_the_os_error() -> None:
    e = LocalWriteError("/tmp/x.pth", OSError(errno.ENOSPC, "No space left on device"), hint=write_hint("/tmp/x.pth"))
    assert e.message == "cannot write the download to /tmp/x.pth: No space left on device"
    assert e.errno == errno.ENOSPC and e.path == "/tmp/x.pth" and "/tmp/x.pth" in (e.hint or "")
    bare = LocalWriteError("/d", OSError("disk gone"), hint="h")
    assert bare.message == "cannot write the download to /d: disk gone" and bare.errno is None


@pytest.mark.parametrize(
    ("status", "says"),
    [
        (401, "refused access"),
        (403, "refused access"),
        (404, "is not served"),
        (410, "is not served"),
        (429, "rate-limiting"),
        (500, "failed this request after its retries"),
        (None, "failed this request after its retries"),
    ],
)
def test_each_status_gets_its_hint(status: int | None, says: str) -> None:
    assert says in status_hint(status)


def test_status_and_reason_are_read_from_the_response() -> None:
    e = Exception("x")
    e.response = SimpleNamespace(status_code=404, reason_phrase="Not Found")  # type: ignore[attr-defined]
    assert error_status(e) == 404 and error_reason(e) == "Not Found"
    odd = ValueError("x")
    odd.response = SimpleNamespace(status_code="404", reason_phrase="")  # type: ignore[attr-defined]
    assert error_status(odd) is None and error_reason(odd) == "ValueError"
    assert error_status(KeyError()) is None and error_reason(KeyError()) == "KeyError"


def test_public_url_drops_the_query_and_the_fragment() -> None:
    assert public_url(SIGNED) == "https://cdn.example/repo/blob"
