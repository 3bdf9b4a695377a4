"""`pull` downloads its large files several at a time (registry/_hub_sync._fetch_large: LARGE_WORKERS threads
sharing one stop flag), against the Hub look-alike playing a slow link (a cap on each answer's bytes per second,
sent 1 KB at a time). Ctrl-C in the main thread stops every worker within about a second, keeps what arrived as
partial files (never at the file's own path, where it would look complete), and exits 130 with the usual message;
a worker that fails stops the others, and its error is the one reported.

The tiny registry's weights are 23-34 KB: RESUMABLE_BYTES is lowered so that they take this path."""

from __future__ import annotations

import _thread
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hub_server import FakeHub, new_repo
from regtools import quiet, same_tree

from rwkv_registry.cli.main import main
from rwkv_registry.hub import resume as _hub_resume
from rwkv_registry.hub import sync as _hub_sync
from rwkv_registry.hub.commands import pull_registry

pytestmark = pytest.mark.usefixtures("hub_env")  # every test talks to the Hub look-alike


LARGE = 20_000  # RESUMABLE_BYTES here: every tiny weight file is a large file
SLOW = 4_000  # bytes per second of each answer while the large files download: 6-9 s per tiny weight


@pytest.fixture(autouse=True)
def _large_weights(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_hub_resume, "RESUMABLE_BYTES", LARGE)


def large_files(hub: FakeHub, repo_id: str) -> dict[str, bytes]:
    files = {r: b for r, b in hub.files(repo_id).items() if len(b) >= LARGE}
    assert len(files) >= 2, sorted(files)
    return files


class Slow:
    """What :func:`slow_large` did: when each large download phase began; ``enabled``: slow the next ones too."""

    def __init__(self) -> None:
        self.began: list[float] = []
        self.enabled = True


@pytest.fixture
def slow_large(hub: FakeHub, monkeypatch: pytest.MonkeyPatch) -> Iterator[Slow]:
    """The link is slow (SLOW bytes per second per answer, 1 KB pieces) while pull fetches its large files, and fast
    for everything else (and for the large files too once ``enabled`` is False)."""
    real = _hub_sync._fetch_large
    slow = Slow()
    active = [0]  # large fetches under way: the link turns fast when the last one ends, not the first
    lock = threading.Lock()

    def slowly(*args: Any, **kwargs: Any) -> Any:
        with lock:
            active[0] += 1
            if slow.enabled:
                hub.chunk, hub.bandwidth = 1024, SLOW
        slow.began.append(time.monotonic())
        try:
            return real(*args, **kwargs)
        finally:
            with lock:
                active[0] -= 1
                if not active[0]:
                    hub.bandwidth = 0

    monkeypatch.setattr(_hub_sync, "_fetch_large", slowly)
    yield slow
    hub.bandwidth, hub.chunk = 0, 64 * 1024


def workers_alive() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("rwkv-registry-pull-") and t.is_alive()]


def staging_of(dest: Path) -> Path:
    (staging,) = [p for p in dest.parent.iterdir() if p.name.startswith(f".{dest.name}.rwkv-registry-pull-")]
    return staging


def partials(staging: Path) -> dict[str, int]:
    """The partial files kept under ``staging``: the file each continues (from its KEY.json) -> bytes kept."""
    out = {}
    for part in (staging / _hub_resume.PARTIAL_DIR).glob("*.part"):
        identity = json.loads(part.with_suffix(".json").read_text())
        out[identity["path"]] = part.stat().st_size
    return out


def no_file_looks_complete(staging: Path, files: dict[str, bytes]) -> None:
    """Every file at its own path under ``staging`` is the listing's whole file; partial bytes are only .part files."""
    for p in staging.rglob("*"):
        rel = p.relative_to(staging).as_posix()
        if p.is_file() and not rel.startswith(".cache/"):
            assert p.read_bytes() == files[rel], rel


def test_large_files_are_fetched_several_at_a_time(
    hub: FakeHub, tiny: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """min(LARGE_WORKERS, files) downloads run at once (before: one after another), and the pull is whole and
    clean."""
    repo_id = new_repo(hub, tiny)
    files = hub.files(repo_id)
    large = large_files(hub, repo_id)
    real = _hub_sync.fetch_resumable
    lock = threading.Lock()
    now, most = [0], [0]

    def counted(*args: Any, **kwargs: Any) -> int:
        with lock:
            now[0] += 1
            most[0] = max(most[0], now[0])
        try:
            time.sleep(0.3)  # long enough for the others to start meanwhile
            return real(*args, **kwargs)
        finally:
            with lock:
                now[0] -= 1

    monkeypatch.setattr(_hub_sync, "fetch_resumable", counted)
    report = pull_registry(repo_id, tmp_path / "dest", log=quiet)
    assert report.ok and report.stats["bytes_hashed"] == 0  # each checked once, by its worker, and not again
    assert most[0] == min(_hub_sync.LARGE_WORKERS, len(large)) > 1
    assert same_tree(tmp_path / "dest", files) and not workers_alive()


@pytest.mark.usefixtures("sigint_as_at_a_terminal")  # interrupt_main() does nothing while SIGINT is ignored
def test_ctrl_c_stops_every_worker_within_a_second(
    hub: FakeHub,
    tiny: Path,
    tmp_path: Path,
    slow_large: Slow,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Ctrl-C (KeyboardInterrupt in the main thread) half a second into the large downloads: exit 130 with the usual
    message about a second later at most, no worker left running, every download cut short kept as a partial file
    (never at its own path) and continued by the next pull."""
    repo_id = new_repo(hub, tiny)
    files = hub.files(repo_id)
    large = large_files(hub, repo_id)
    dest = tmp_path / "dest"
    fired: list[float] = []

    def ctrl_c() -> None:
        fired.append(time.monotonic())
        _thread.interrupt_main()

    timer = threading.Timer(0.5, ctrl_c)
    real = _hub_sync._fetch_large

    def armed(*args: Any, **kwargs: Any) -> Any:
        if not timer.is_alive() and not fired:
            timer.start()
        return real(*args, **kwargs)

    monkeypatch.setattr(_hub_sync, "_fetch_large", armed)
    try:
        assert main(["pull", repo_id, str(dest)]) == 130
        ended = time.monotonic()
    finally:
        timer.cancel()
    assert fired and ended - fired[0] < 2.0, ended - fired[0]  # about one second: STOP_WAIT_S, and chunks of 1 KB
    assert not workers_alive()
    err = capsys.readouterr().err
    assert "Traceback" not in err and f"interrupted: nothing was written to {dest}" in err, err
    assert "run the same pull again to resume" in err and "cut short" in err, err
    assert not dest.exists()
    staging = staging_of(dest)
    no_file_looks_complete(staging, files)
    kept = partials(staging)
    assert set(kept) == set(large)  # all were downloading at once; each stopped part-way
    # each stopped part-way; on a busy machine one may not have had its first piece yet (an empty partial file)
    assert all(0 <= n < len(large[rel]) for rel, n in kept.items()) and any(kept.values()), kept
    hub.log.clear()
    slow_large.enabled = False
    assert pull_registry(repo_id, dest, log=quiet).ok  # and the next pull continues each from its bytes
    ranges = {e["range"] for e in hub.log if e["server"] == "cdn" and e["method"] == "GET"}
    assert {f"bytes={n}-" for n in kept.values() if n} <= ranges
    assert same_tree(dest, files)


def test_a_failing_download_stops_the_others_and_is_the_error_reported(
    hub: FakeHub,
    tiny: Path,
    tmp_path: Path,
    slow_large: Slow,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The storage answers 403 to one large file (after a second) while the others arrive slowly: the pull stops at
    once (not after the others' 6-9 s), exit 2 naming that file and its status, the others' bytes kept as partial
    files for the next pull, no worker left running."""
    repo_id = new_repo(hub, tiny)
    files = hub.files(repo_id)
    large = large_files(hub, repo_id)
    failing = sorted(large)[-1]  # the last one queued: the others are downloading when it fails
    blob = hub.repos[repo_id].commits[hub.head(repo_id)][failing]
    dest = tmp_path / "dest"

    def forbid(server: str, method: str, path: str, status: int, body: bytes, headers: dict[str, str]) -> tuple:
        if server == "cdn" and method == "GET" and path.endswith("/" + blob.sha256):
            time.sleep(1.0)  # meanwhile the others receive their first KBs
            return 403, b"AccessDenied", {"Content-Length": "12"}
        return status, body, headers

    with hub.rewriting(forbid):
        assert main(["pull", repo_id, str(dest)]) == 2
    ended = time.monotonic()
    assert ended - slow_large.began[0] < 3.0, ended - slow_large.began[0]  # the others would take 6-9 s each
    assert not workers_alive()
    err = capsys.readouterr().err
    assert "Traceback" not in err and f"pull refused: {repo_id}@{hub.head(repo_id)[:12]}: {failing}: " in err, err
    assert "403" in err and "run the same pull again to resume" in err, err
    staging = staging_of(dest)
    no_file_looks_complete(staging, files)
    kept = partials(staging)
    others = set(large) - {failing}
    assert others <= set(kept) and all(0 < kept[r] < len(large[r]) for r in others), kept


def test_ctrl_c_while_the_workers_start(
    hub: FakeHub,
    tiny: Path,
    tmp_path: Path,
    slow_large: Slow,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Ctrl-C while the workers are being started (Thread.start waits for each new thread to run: a KeyboardInterrupt
    lands there): the pull is interrupted as anywhere else, exit 130. Before the fix, the workers not started yet were
    joined too, and their RuntimeError ("cannot join thread before it is started") was reported as the download's
    failure instead."""
    repo_id = new_repo(hub, tiny)
    large_files(hub, repo_id)
    dest = tmp_path / "dest"
    real_start = threading.Thread.start

    def start(self: threading.Thread) -> None:
        if self.name == "rwkv-registry-pull-1":
            raise KeyboardInterrupt  # as Ctrl-C arriving in the main thread before this worker starts
        real_start(self)

    monkeypatch.setattr(threading.Thread, "start", start)
    assert main(["pull", repo_id, str(dest)]) == 130
    err = capsys.readouterr().err
    assert "Traceback" not in err and f"interrupted: nothing was written to {dest}" in err, err
    monkeypatch.setattr(threading.Thread, "start", real_start)
    deadline = time.monotonic() + 5
    while workers_alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not workers_alive()  # the one started stops at its next chunk
    assert not dest.exists()
