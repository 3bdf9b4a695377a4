"""A connection cut in the middle of a body read by ``Fetcher.get`` (registry/hub/transport.py): ``validate hf://`` (its
small files, Range reads of the weights, ``--full``'s MiSS download) and ``push``/``pull --base`` (the Hub's
index.json), against the Hub look-alike (tests/support/hub_server.py).

Before, the cut reached huggingface_hub's ``http_stream_backoff`` generator: it slept, sent the whole request again
and, yielding a second answer to a context manager that takes one, failed with ``RuntimeError: generator didn't stop
after throw()``, the message the user saw. Now the cut is raised inside the stream, as ``Fetcher.resume`` does: one
request, and an error naming the file and how many of its bytes had arrived."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from hub_server import FakeHub, new_repo
from regtools import MISS_A, STATE, TINY_BASE

from rwkv_registry.cli.main import main
from rwkv_registry.hub.transport import DownloadCut, Fetcher

pytestmark = pytest.mark.usefixtures("hub_env")  # every test talks to the Hub look-alike


@pytest.fixture(autouse=True)
def _no_backoff_sleep(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(time, "sleep", lambda seconds: None)  # huggingface_hub's back-off, were it to retry


def _start(headers: dict[str, str]) -> int:
    span = headers.get("Content-Range", "")
    return int(span.split(" ", 1)[1].split("-", 1)[0]) if span.startswith("bytes ") else 0


def cut(match: Any, at: int) -> Any:
    """A rewrite hook: GET answers whose path ``match`` accepts end at byte ``at`` of the file (Content-Length still
    promising the rest, so the server hangs up: a cut connection)."""

    def hook(server: str, method: str, path: str, status: int, body: bytes, headers: dict[str, str]) -> tuple:
        if method == "GET" and status in (200, 206) and match(server, path):
            return status, body[: max(0, at - _start(headers))], headers
        return status, body, headers

    return hook


def gets(hub: FakeHub, match: Any) -> list[dict[str, Any]]:
    return [e for e in hub.log if e["method"] == "GET" and match(e["server"], e["path"])]


def test_get_raises_the_cut_itself_after_one_request(hub: FakeHub, tiny: Path) -> None:
    """The unit: a whole body cut at 10 of its bytes is a DownloadCut saying so, after ONE request (before: two, and
    a RuntimeError from huggingface_hub's generator)."""
    repo_id = new_repo(hub, tiny)
    data = hub.files(repo_id)["README.md"]
    url = f"{hub.endpoint}/{repo_id}/resolve/{hub.head(repo_id)}/README.md"
    readme = lambda server, path: server == "api" and path.endswith("/README.md")  # noqa: E731
    fetcher = Fetcher(hub.endpoint)
    hub.log.clear()
    with hub.rewriting(cut(readme, 10)), pytest.raises(DownloadCut) as e:
        fetcher.get(url, size=len(data))
    assert f"cut after 10 of the {len(data)} bytes" in e.value.message, e.value.message
    assert "RuntimeError" not in e.value.message and "generator" not in e.value.message
    assert len(gets(hub, readme)) == 1 and fetcher.bytes_fetched == 10
    # a Range read names the range
    with hub.rewriting(cut(readme, 12)), pytest.raises(DownloadCut) as e:
        fetcher.get(url, start=4, end=len(data) - 1, total=len(data))
    assert f"cut after 8 of the {len(data) - 4} bytes asked for at offset 4" in e.value.message, e.value.message


def test_validate_hf_a_small_file_cut_is_a_clear_error(
    hub: FakeHub, tiny: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo_id = new_repo(hub, tiny)
    size = len(hub.files(repo_id)["README.md"])
    readme = lambda server, path: server == "api" and path.endswith("/README.md")  # noqa: E731
    hub.log.clear()
    with hub.rewriting(cut(readme, size // 2)):
        assert main(["validate", f"hf://{repo_id}"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "RuntimeError" not in err and "generator" not in err, err
    assert "README.md: " in err and f"cut after {size // 2} of the {size} bytes" in err, err
    assert "Try again" in err, err
    assert len(gets(hub, readme)) == 1  # not sent again from byte 0


def test_validate_hf_full_a_miss_download_cut_leaves_nothing(
    hub: FakeHub, tiny: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--full`` downloads each MiSS adapter whole (a sink): the cut names the file and the bytes received, and the
    partial download is removed. A cut is no finding against the repository (before: LAY010 "cannot read", whose
    fix told to check local permissions, exit 1 as for a broken registry), but no verdict either: exit 2."""
    repo_id = new_repo(hub, tiny)
    blob = hub.repos[repo_id].commits[hub.head(repo_id)][MISS_A]
    size = len(hub.files(repo_id)[MISS_A])
    whole = lambda server, path: server == "cdn" and path.endswith("/" + blob.sha256)  # noqa: E731

    def hook(server: str, method: str, path: str, status: int, body: bytes, headers: dict[str, str]) -> tuple:
        # Range reads of the headers are served; the one request for the whole file (from byte 0) is cut
        if (
            method == "GET"
            and whole(server, path)
            and headers.get("Content-Range", "").startswith(f"bytes 0-{size - 1}/")
        ):
            return status, body[: size // 3], headers
        return status, body, headers

    monkeypatch.chdir(tmp_path)
    hub.log.clear()
    with hub.rewriting(hook):
        assert main(["validate", f"hf://{repo_id}", "--full"]) == 2
    out = capsys.readouterr()
    text = out.out + out.err
    assert "Traceback" not in text and "RuntimeError" not in text and "generator" not in text, text
    assert MISS_A in text and f"cut after {size // 3} of the {size} bytes" in text, text
    assert not list(Path(tmp_path).rglob("full-*.pth"))
    assert len([e for e in gets(hub, whole) if e["range"] == f"bytes=0-{size - 1}"]) == 1


def test_validate_hf_a_range_read_cut_is_a_clear_error(
    hub: FakeHub, tiny: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without --full the weights are read by Range requests (their headers): a cut there is exit 2 too, naming the
    file, not a LAY010 finding."""
    repo_id = new_repo(hub, tiny)
    blob = hub.repos[repo_id].commits[hub.head(repo_id)][STATE]
    state = lambda server, path: server == "cdn" and path.endswith("/" + blob.sha256)  # noqa: E731

    def hook(server: str, method: str, path: str, status: int, body: bytes, headers: dict[str, str]) -> tuple:
        if method == "GET" and status == 206 and state(server, path):
            return status, body[:5], headers
        return status, body, headers

    with hub.rewriting(hook):
        assert main(["validate", f"hf://{repo_id}"]) == 2
    out = capsys.readouterr()
    text = out.out + out.err
    assert "Traceback" not in text and "RuntimeError" not in text and "LAY010" not in text, text
    assert f"{STATE}: " in text and "the connection was cut after 5 of the " in text, text


def test_pull_base_the_hubs_index_cut_is_a_clear_error(
    hub: FakeHub, tiny: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """pull --base (as push) reads the Hub's index.json with ``Fetcher.get``, before any download: a cut there stops
    the pull with the file and the bytes named, and nothing is written."""
    repo_id = new_repo(hub, tiny)
    size = len(hub.files(repo_id)["index.json"])
    index = lambda server, path: server == "api" and path.endswith("/index.json")  # noqa: E731
    dest = tmp_path / "dest"
    hub.log.clear()
    with hub.rewriting(cut(index, size // 2)):
        assert main(["pull", repo_id, str(dest), "--base", TINY_BASE]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "RuntimeError" not in err and "generator" not in err, err
    assert "index.json: " in err and f"cut after {size // 2} of the {size} bytes" in err, err
    assert list(tmp_path.iterdir()) == []
    assert len(gets(hub, index)) == 1
