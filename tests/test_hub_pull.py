"""`pull` against the Hub look-alike (tests/support/hub_server.py): each file hashed once, and the ways a pull can go
wrong for a user (a destination that cannot take it, a Hub that fails half-way), each a clear refusal that leaves
PATH as it was."""

from __future__ import annotations

import glob
import os
import shutil
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hub_server import FakeHub, new_repo, plain_git_repo
from regtools import STATE, TINY_BASE, errors, quiet, same_tree

from rwkv_registry.core.errors import RegistryIOError
from rwkv_registry.engine import facts, validate
from rwkv_registry.hub import sync as _hub_sync
from rwkv_registry.hub.commands import pull_registry

pytestmark = pytest.mark.usefixtures("hub_env")  # every test talks to the Hub look-alike


def weights_of(hub: FakeHub, repo_id: str) -> list[str]:
    return sorted(r for r in hub.files(repo_id) if r.endswith(".pth"))


def repo_of(hub: FakeHub, tiny: Path, storage: str) -> str:
    return new_repo(hub, tiny) if storage == "lfs" else plain_git_repo(hub, tiny)


@pytest.mark.parametrize("storage", ["lfs", "plain git"])
@pytest.mark.parametrize("how", ["new", "empty", "one base"])
def test_pull_hashes_each_weight_file_once(
    hub: FakeHub, tiny: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str, storage: str
) -> None:
    """The download check reads each weight file once (its sha256, or its sha256 and git blob id for a file in
    plain git, and the facts validation needs: one mmap) and the validation that follows reuses those facts:
    before, the check hashed every file and validation again (still so for weights in plain git until their blob
    id and sha256 came from one read)."""
    repo_id = repo_of(hub, tiny, storage)
    tree = hub.repos[repo_id].commits[hub.head(repo_id)]
    assert {tree[w].lfs for w in weights_of(hub, repo_id)} == {storage == "lfs"}
    weights = weights_of(hub, repo_id)
    assert len(weights) >= 3
    reads: Counter[str] = Counter()

    def which(path: Any) -> str:
        return next((w for w in weights if Path(path).as_posix().endswith("/" + w)), "(not a weight)")

    def counted(module: Any, name: str) -> None:
        real = getattr(module, name, None)
        if real is None:  # a module that does not use this way
            return

        def wrapper(path: Any, *args: Any, **kwargs: Any) -> Any:
            reads[which(path)] += 1
            return real(path, *args, **kwargs)

        monkeypatch.setattr(module, name, wrapper)

    # every way a file's bytes get hashed on the way: the check, validation's facts, SHA256SUMS, push's compare
    counted(_hub_sync, "compute_facts")
    counted(_hub_sync, "compute_facts_and_blob_id")
    counted(_hub_sync, "file_digests")
    counted(_hub_sync, "sha256_file")
    counted(facts, "compute_facts")
    counted(facts, "sha256_file")
    counted(validate, "sha256_file")
    dest = tmp_path / "dest"
    if how == "empty":
        dest.mkdir()  # the files are moved in one by one (_move_into), not renamed as one directory
    report = pull_registry(repo_id, dest, base=TINY_BASE if how == "one base" else None, log=quiet)
    assert report.ok, [(f.code, f.path, f.message) for f in report.findings if str(f.severity) == "error"]
    assert {w: reads[w] for w in weights} == {w: 1 for w in weights}
    assert report.stats["bytes_hashed"] == 0 and report.stats["cache_hits"] == len(weights)
    # the facts are cached under PATH's keys: a later validate of PATH reads nothing either
    again = validate.validate_registry(dest)
    assert again.ok and again.stats["bytes_hashed"] == 0


def _flip_a_byte(path: Path) -> None:
    """Change one byte in place, same size, and put the old mtime back (what `touch -r` would hide)."""
    st = path.stat()
    time.sleep(0.01)  # past the kernel's timestamp granularity: the write gets a ctime of its own
    with open(path, "r+b") as f:
        f.seek(st.st_size - 100)
        byte = f.read(1)
        f.seek(st.st_size - 100)
        f.write(bytes([byte[0] ^ 0xFF]))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert path.stat().st_size == st.st_size and path.stat().st_mtime_ns == st.st_mtime_ns


@pytest.mark.parametrize("storage", ["lfs", "plain git"])
@pytest.mark.parametrize("when", ["before the move", "after the move", "after seeding"])
def test_a_weight_changed_after_the_check_is_read_again(
    hub: FakeHub, tiny: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, when: str, storage: str
) -> None:
    """The facts the check read are reused only for the very bytes it read: a file written between the check and
    validation (in the staging directory, in PATH before the cache is seeded, or after) is hashed again, and its
    sha256 no longer matches index.json. Alike for a weight in plain git, checked by its git blob id."""
    repo_id = repo_of(hub, tiny, storage)
    dest = tmp_path / "dest"
    real_check, real_seed = _hub_sync._check_download, _hub_sync._seeded_cache

    def check(remote: Any, staging: Path, wanted: list[str], *args: Any) -> Any:
        out = real_check(remote, staging, wanted, *args)
        if when == "before the move":
            _flip_a_byte(staging / STATE)
        return out

    def seed(where: Path, read: Any) -> Any:
        if when == "after the move":
            _flip_a_byte(where / STATE)
        cache = real_seed(where, read)
        if when == "after seeding":
            _flip_a_byte(where / STATE)
        return cache

    monkeypatch.setattr(_hub_sync, "_check_download", check)
    monkeypatch.setattr(_hub_sync, "_seeded_cache", seed)
    report = pull_registry(repo_id, dest, log=quiet)
    assert {"HSH001", "HSH006"} <= set(errors(report))
    assert any(f.code == "HSH001" and f.path == STATE for f in report.findings)
    assert report.stats["bytes_hashed"] == (dest / STATE).stat().st_size  # that file only, read again


@pytest.mark.parametrize(
    "names, named",
    [
        # two files: the second download overwrites the first, under the first one's name
        (("notes/README.md", "notes/Readme.md"), ("notes/README.md", "notes/Readme.md")),
        # two folders: the second one's files land in the first one
        (("Notes/a.md", "notes/b.md"), ("Notes", "notes")),
    ],
)
def test_a_case_only_name_clash_names_both_paths(
    hub: FakeHub,
    tiny: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    names: tuple[str, str],
    named: tuple[str, str],
) -> None:
    """Before, a pull onto a case-insensitive file system said "X is in the Hub's tree listing but was not
    downloaded" without naming the file X clashes with (and a folder clash read as a listing that changed)."""
    import huggingface_hub

    from rwkv_registry.cli.main import main
    from rwkv_registry.core.errors import RegistryIOError

    repo_id = new_repo(hub, tiny)
    hub.commit_files(repo_id, {n: f"{n}\n".encode() for n in names})
    real = huggingface_hub.snapshot_download

    def case_insensitive(*args: Any, local_dir: Path, **kwargs: Any) -> str:
        """What a case-insensitive file system makes of the download: the second name is the first one."""
        out = real(*args, local_dir=local_dir, **kwargs)
        first, second = (Path(local_dir) / n for n in names)
        kept = first.parent.parent / named[0] / second.name if first.parent != second.parent else first
        os.replace(second, kept)
        if first.parent != second.parent:
            second.parent.rmdir()
        return out

    monkeypatch.setattr(huggingface_hub, "snapshot_download", case_insensitive)
    with pytest.raises(RegistryIOError) as e:
        pull_registry(repo_id, tmp_path / "dest", log=quiet)
    message = e.value.message
    assert f"{named[0]} and {named[1]} differ only in case" in message or (
        f"{named[1]} and {named[0]} differ only in case" in message
    )
    assert "case-insensitive" in message and "case-sensitive file system" in e.value.hint
    assert list(tmp_path.iterdir()) == []
    assert main(["pull", repo_id, str(tmp_path / "dest")]) == 2
    err = capsys.readouterr().err
    assert named[0] in err and named[1] in err and "Traceback" not in err
    assert list(tmp_path.iterdir()) == []


# --- a demanding user: what can go wrong on the way, each a clear refusal that leaves PATH as it was -----------


def _refused_cleanly(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, argv: list[str], before: list[Path], *needles: str
) -> str:
    """``rwkv-registry pull`` exits 2 with every needle in its message, no traceback, and tmp_path as before."""
    from rwkv_registry.cli.main import main

    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "pull refused: " in err and "Nothing was written to" in err
    for needle in needles:
        assert needle in err, err
    after = sorted(tmp_path.iterdir())
    kept = [p for p in after if p not in before]
    # the files downloaded before the error are kept beside PATH, named, for the same pull to resume from
    assert after == sorted(before + kept) and len(kept) <= 1
    for staging in kept:
        assert staging.name.startswith(f".{Path(argv[2]).name}.rwkv-registry-pull-")
        assert str(staging) in err and "run the same pull again to resume" in err
        shutil.rmtree(staging)
    return err


def test_ctrl_c_while_moving_into_an_existing_path_leaves_it_empty(
    hub: FakeHub, tiny: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before the fix the files moved into an existing empty PATH stayed there when Ctrl-C came half-way through the
    move (only an OSError put them back), and the staging directory was left beside it."""
    repo_id = new_repo(hub, tiny)
    dest = tmp_path / "dest"
    dest.mkdir()
    real = Path.rename
    moves = []

    def interrupted(self: Path, target: Any) -> Any:
        if Path(target).parent == dest:
            moves.append(target)
            if len(moves) == 3:
                raise KeyboardInterrupt
        return real(self, target)

    monkeypatch.setattr(Path, "rename", interrupted)
    with pytest.raises(KeyboardInterrupt) as e:
        pull_registry(repo_id, dest, log=quiet)
    assert len(moves) == 3
    assert list(dest.iterdir()) == []
    # the checked download stays beside PATH, named, for the next pull to resume from
    (staging,) = [p for p in tmp_path.iterdir() if p != dest]
    assert str(staging) in str(e.value) and "run the same pull again to resume" in str(e.value)
    monkeypatch.setattr(Path, "rename", real)
    assert pull_registry(repo_id, dest, log=quiet).ok
    assert sorted(tmp_path.iterdir()) == [dest]


def test_a_download_of_another_length_than_announced_names_the_file(
    hub: FakeHub, tiny: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The storage announces (Content-Length) and sends fewer bytes than the resolve answer said. Before, this read
    "cannot reach http://… : OSError: Consistency check failed …" with "Check the network", naming no file."""
    repo_id = new_repo(hub, tiny)
    miss = f"{TINY_BASE}/miss/v2/r4-a/adapter-final.pth"
    sha = hub.repos[repo_id].commits[hub.head(repo_id)][miss].sha256

    def short(server: str, method: str, path: str, status: int, body: bytes, headers: dict[str, str]) -> tuple:
        if server == "cdn" and method == "GET" and path.endswith(sha):
            return status, body[:-10], {**headers, "Content-Length": str(len(body) - 10)}
        return status, body, headers

    with hub.rewriting(short):
        err = _refused_cleanly(
            capsys, tmp_path, ["pull", repo_id, str(tmp_path / "dest")], [], miss, "another size than the Hub announced"
        )
    assert "cannot reach" not in err and "Try again" in err


def test_a_server_error_half_way_names_the_file(
    hub: FakeHub, tiny: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The storage answers 500 for the second weight file, after others arrived. Before, the message gave only the
    storage URL (…/blobs/<sha256>), not which file of the repository failed."""
    repo_id = new_repo(hub, tiny)
    served: list[str] = []

    def fail_second(server: str, method: str, path: str, status: int, body: bytes, headers: dict[str, str]) -> tuple:
        if server == "cdn" and method == "GET":
            served.append(path)
            if len(served) == 2:
                return 500, b"Internal Error", {"Content-Length": "14"}
        return status, body, headers

    with hub.rewriting(fail_second):
        err = _refused_cleanly(capsys, tmp_path, ["pull", repo_id, str(tmp_path / "dest")], [], "500")
    failed = served[1].rsplit("/", 1)[-1]
    name = next(r for r, b in hub.repos[repo_id].commits[hub.head(repo_id)].items() if b.sha256 == failed)
    assert f": {name}: the Hub answered" in err


@pytest.mark.parametrize(
    "code, needle, hint",
    [("ENOSPC", "No space left on device", "Free some space"), ("EROFS", "Read-only file system", "writable")],
)
def test_a_disk_that_fails_the_download_is_named_not_the_network(
    hub: FakeHub,
    tiny: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    code: str,
    needle: str,
    hint: str,
) -> None:
    """A full disk (or a mount that turns read-only) while the download is written. Before, this read "cannot reach
    http://…: OSError …" with the hint "Check the network, a proxy, or HF_ENDPOINT"."""
    import errno

    import huggingface_hub

    repo_id = new_repo(hub, tiny)
    real = huggingface_hub.snapshot_download

    def disk_fails(*args: Any, local_dir: Path, **kwargs: Any) -> str:
        real(*args, local_dir=local_dir, **{**kwargs, "allow_patterns": ["index.json"]})  # a part arrived
        number = getattr(errno, code)
        raise OSError(number, os.strerror(number), str(Path(local_dir) / STATE))

    monkeypatch.setattr(huggingface_hub, "snapshot_download", disk_fails)
    err = _refused_cleanly(capsys, tmp_path, ["pull", repo_id, str(tmp_path / "dest")], [], needle, hint, STATE)
    assert "cannot reach" not in err and "network" not in err


def test_a_path_that_cannot_be_written_is_refused_before_any_request(
    hub: FakeHub, tiny: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """PATH (or the directory that holds it, where the download is staged) on a read-only mount or without write
    permission: refused before anything is downloaded. Before, the whole download ran and then failed (on its first
    file, or at the final move, leaving the staging directory behind)."""
    from rwkv_registry.cli.main import main

    repo_id = new_repo(hub, tiny)
    parent = tmp_path / "ro"
    parent.mkdir()
    empty = tmp_path / "empty"
    empty.mkdir()
    read_only = {parent, empty}
    real = os.access
    # root ignores permissions: a read-only mount, simulated (access(2) answers EROFS as False for W_OK)
    monkeypatch.setattr(os, "access", lambda p, mode, **kw: False if Path(p) in read_only else real(p, mode, **kw))
    for dest in (parent / "dest", empty):
        requests = len(hub.log)
        assert main(["pull", repo_id, str(dest)]) == 2
        err = capsys.readouterr().err
        assert f"cannot write in {dest if dest == empty else parent}" in err and "writable" in err
        assert len(hub.log) == requests  # nothing asked of the Hub
        assert sorted(tmp_path.iterdir()) == [empty, parent] and not list(parent.iterdir())
        assert list(empty.iterdir()) == []


@pytest.mark.parametrize("existed", [True, False])
def test_a_path_filled_by_another_command_during_the_pull_is_never_overwritten(
    hub: FakeHub, tiny: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, existed: bool
) -> None:
    """PATH was empty (or absent) when the pull began; another command (a second pull, `init`) wrote index.json
    there while the pull downloaded. Before the fix, moving into an existing PATH replaced that file silently
    (rename() replaces) and the pull validated clean."""
    import huggingface_hub

    from rwkv_registry.core.errors import RegistryIOError

    repo_id = new_repo(hub, tiny)
    dest = tmp_path / "dest"
    if existed:
        dest.mkdir()
    real = huggingface_hub.snapshot_download
    theirs = b'{"written": "by another command"}\n'

    def someone_writes_into_path(*args: Any, **kwargs: Any) -> str:
        out = real(*args, **kwargs)
        dest.mkdir(exist_ok=True)
        (dest / "index.json").write_bytes(theirs)
        return out

    monkeypatch.setattr(huggingface_hub, "snapshot_download", someone_writes_into_path)
    with pytest.raises(RegistryIOError) as e:
        pull_registry(repo_id, dest, log=quiet)
    assert f"{dest / 'index.json'} appeared there during the pull" in e.value.message
    assert [p.name for p in dest.iterdir()] == ["index.json"] and (dest / "index.json").read_bytes() == theirs
    staging = [p for p in tmp_path.iterdir() if p != dest]
    assert len(staging) == 1 and str(staging[0]) in e.value.hint  # the checked download is kept, and named
    assert (staging[0] / "index.json").read_bytes() == (tiny / "index.json").read_bytes()


def _free_pid() -> int:
    """A pid no process can have (pid_max + 1): the owner of a killed pull's staging directory; skips without /proc."""
    pid_max = Path("/proc/sys/kernel/pid_max")
    if not pid_max.exists():
        pytest.skip("no /proc/sys/kernel/pid_max: no pid known to be free")
    return int(pid_max.read_text()) + 1


def test_the_staging_directory_of_a_killed_pull_is_resumed_from(hub: FakeHub, tiny: Path, tmp_path: Path) -> None:
    """A pull killed outright (SIGKILL, power loss) leaves its hidden staging directory, possibly gigabytes, beside
    PATH. Before, the next pull only named it ("delete it") and downloaded everything again; now it takes over the
    newest one (its process no longer runs), keeps the files that match the listing and fetches the rest; an older
    one is named, and a running pull's is left alone."""
    repo_id = new_repo(hub, tiny)
    dead = _free_pid()
    files = hub.files(repo_id)
    older = tmp_path / f".dest{_hub_sync.PULL_STAGING}{dead + 1}"
    (older / TINY_BASE).mkdir(parents=True)
    left = tmp_path / f".dest{_hub_sync.PULL_STAGING}{dead}"
    (left / STATE).parent.mkdir(parents=True)
    (left / STATE).write_bytes(files[STATE])  # complete
    (left / MISS).parent.mkdir(parents=True)
    (left / MISS).write_bytes(files[MISS][:1000])  # cut short by the kill
    (left / "index.json").write_bytes(files["index.json"])
    (left / ".cache/huggingface/download").mkdir(parents=True)  # huggingface_hub's temporary file of the kill
    (left / ".cache/huggingface/download/x.abc.incomplete").write_bytes(b"half")
    os.utime(older, (1, 1))
    running = tmp_path / f".dest{_hub_sync.PULL_STAGING}{os.getppid()}"  # a pull still running: not named
    running.mkdir()
    said: list[str] = []
    hub.log.clear()
    assert pull_registry(repo_id, tmp_path / "dest", log=said.append).ok
    notes = [m for m in said if m.startswith("note: ")]
    assert len(notes) == 1 and str(older) in notes[0] and "delete it" in notes[0]
    assert any(m.startswith("resuming") and str(left) in m for m in said)
    got = fetched(hub, repo_id)
    assert set(got) == fetchable(files) - {STATE, "index.json"} and set(got.values()) == {1}
    assert not left.exists() and older.is_dir() and running.is_dir()
    assert same_tree(tmp_path / "dest", files)


def test_a_staging_directory_locked_by_a_running_pull_is_never_taken_over(
    hub: FakeHub, tiny: Path, tmp_path: Path
) -> None:
    """A pull whose pid looks free here (another pid namespace sharing the disk) but that still runs holds the lock
    of its staging directory: the next pull neither takes that directory over (it would delete files being written)
    nor names it for deletion, and downloads into its own."""
    import fcntl

    repo_id = new_repo(hub, tiny)
    dead = _free_pid()
    files = hub.files(repo_id)
    running = tmp_path / f".dest{_hub_sync.PULL_STAGING}{dead}"
    (running / STATE).parent.mkdir(parents=True)
    (running / STATE).write_bytes(files[STATE][:1000])  # being written
    fd = os.open(running, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        said: list[str] = []
        assert pull_registry(repo_id, tmp_path / "dest", log=said.append).ok
    finally:
        os.close(fd)
    assert not [m for m in said if str(running) in m]
    assert (running / STATE).read_bytes() == files[STATE][:1000]
    assert same_tree(tmp_path / "dest", files)


# --- resume: a second pull of the same repository into the same PATH -------------------------------------------

MISS = f"{TINY_BASE}/miss/v2/r4-a/adapter-final.pth"


def fetched(hub: FakeHub, repo_id: str) -> Counter[str]:
    """How many times the content of each file of ``repo_id`` was sent (a whole GET of its ``resolve`` URL, or of
    its storage blob), by the server's log; HEAD requests (metadata) are not counted."""
    by_sha: dict[str, set[str]] = {}
    for commit in hub.repos[repo_id].commits.values():
        for rel, blob in commit.items():
            if blob.lfs:
                by_sha.setdefault(blob.sha256, set()).add(rel)
    out: Counter[str] = Counter()
    prefix = f"/{repo_id}/resolve/"
    for e in hub.log:
        if e["method"] != "GET" or e["status"] not in (200, 206):
            continue
        if e["server"] == "api" and e["path"].startswith(prefix):
            out[e["path"][len(prefix) :].split("/", 1)[1]] += 1
        elif e["server"] == "cdn":
            for rel in by_sha.get(e["path"].rsplit("/", 1)[-1], ()):
                out[rel] += 1
    return out


def fetchable(files: dict[str, bytes]) -> set[str]:
    """The files whose content a download asks for: huggingface_hub creates an empty file (.gitkeep) without it."""
    return {r for r, data in files.items() if data}


@pytest.mark.parametrize("storage", ["lfs", "plain git"])
def test_large_files_are_hashed_once_too(
    hub: FakeHub, tiny: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, storage: str
) -> None:
    """The files pull downloads itself (over RESUMABLE_BYTES: hub/resume.py continues them with Range requests)
    keep the property of the others: one read each (the check, whose facts validation reuses)."""
    from rwkv_registry.hub import resume

    monkeypatch.setattr(resume, "RESUMABLE_BYTES", 20_000)  # the tiny weights (23-34 KB) count as large
    monkeypatch.setattr(time, "sleep", lambda seconds: None)  # the back-off between continuations
    test_pull_hashes_each_weight_file_once(hub, tiny, tmp_path, monkeypatch, "new", storage)


def stop_after(monkeypatch: pytest.MonkeyPatch, hub: FakeHub, k: int | None) -> None:
    """Make the next pull download ``k`` files (all when None), in sorted order, then get Ctrl-C."""
    import huggingface_hub

    real = huggingface_hub.snapshot_download

    def interrupted(repo_id: str, *, revision: str, allow_patterns: Any = None, **kwargs: Any) -> str:
        names = sorted(hub.files(repo_id, revision))
        if allow_patterns is not None:
            names = [n for n in names if glob.escape(n) in allow_patterns]
        real(repo_id, revision=revision, allow_patterns=[glob.escape(n) for n in names[:k]], **kwargs)
        monkeypatch.setattr(huggingface_hub, "snapshot_download", real)
        raise KeyboardInterrupt

    monkeypatch.setattr(huggingface_hub, "snapshot_download", interrupted)


@pytest.mark.parametrize("how", ["Ctrl-C after 5 files", "the storage failing on the MiSS files"])
def test_a_pull_stopped_half_way_resumes_fetching_only_the_missing_files(
    hub: FakeHub, tiny: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    """Before, an interrupted pull deleted its staging directory (a server error half-way too) and the next one
    fetched every file again: gigabytes for a real registry. Now the second pull of the same repository into the
    same PATH keeps each file the first one completed (checked again against the listing) and fetches only the
    others, once each; the result is that of a clean pull."""
    repo_id = new_repo(hub, tiny)
    files = hub.files(repo_id)
    dest = tmp_path / "dest"
    if how.startswith("Ctrl-C"):
        stop_after(monkeypatch, hub, 5)
        with pytest.raises(KeyboardInterrupt) as e:
            pull_registry(repo_id, dest, log=quiet)
        message = str(e.value)
    else:
        miss_shas = {hub.repos[repo_id].commits[hub.head(repo_id)][r].sha256 for r in files if "/miss/v2/r4" in r}

        def forbidden(server: str, method: str, path: str, status: int, body: bytes, headers: dict[str, str]) -> tuple:
            if server == "cdn" and method == "GET" and path.rsplit("/", 1)[-1] in miss_shas:
                return 403, b"AccessDenied", {"Content-Length": "12"}
            return status, body, headers

        with hub.rewriting(forbidden), pytest.raises(RegistryIOError) as e2:
            pull_registry(repo_id, dest, log=quiet)
        message = f"{e2.value.message} {e2.value.hint}"
    assert not dest.exists()
    (staging,) = tmp_path.iterdir()
    assert str(staging) in message and "run the same pull again to resume" in message
    kept = {p.relative_to(staging).as_posix() for p in staging.rglob("*") if p.is_file()}
    assert kept and kept < set(files) and all((staging / r).read_bytes() == files[r] for r in kept)
    if how.startswith("Ctrl-C"):
        assert len(kept) == 5
    else:
        assert not kept & {r for r in files if "/miss/v2/r4" in r}
    hub.log.clear()
    said: list[str] = []
    report = pull_registry(repo_id, dest, log=said.append)
    assert report.ok and report.stats["bytes_hashed"] == 0  # kept weights were read once, by the resume's check
    got = fetched(hub, repo_id)
    assert set(got) == fetchable(files) - kept and set(got.values()) == {1}
    assert any(f"{len(kept)} file(s)" in m and "resuming" in m for m in said)
    assert same_tree(dest, files) and [p.name for p in tmp_path.iterdir()] == ["dest"]
    clean = tmp_path / "clean"
    assert pull_registry(repo_id, clean, log=quiet).ok
    assert same_tree(clean, files)


def test_a_resumed_pull_of_another_revision_reuses_nothing_stale(
    hub: FakeHub, tiny: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first pull (of the commit main was at) got every file, then Ctrl-C; main moved on, changing README.md
    and a State file. The second pull (main, now the new commit) checks what was kept against the NEW listing:
    the two changed files are fetched again, the others kept, and PATH holds the new commit exactly."""
    repo_id = new_repo(hub, tiny)
    dest = tmp_path / "dest"
    stop_after(monkeypatch, hub, None)
    with pytest.raises(KeyboardInterrupt):
        pull_registry(repo_id, dest, log=quiet)
    old = hub.files(repo_id)
    new_state = bytearray(old[STATE])
    new_state[-100] ^= 0xFF  # same size: only its sha256 tells it from the kept one
    hub.commit_files(repo_id, {"README.md": old["README.md"] + b"\nchanged\n", STATE: bytes(new_state)})
    files = hub.files(repo_id)
    hub.log.clear()
    report = pull_registry(repo_id, dest, log=quiet)
    assert set(fetched(hub, repo_id)) == {"README.md", STATE}
    assert same_tree(dest, files)
    assert any(f.code == "HSH001" and f.path == STATE for f in report.findings)  # the new bytes were validated


def test_a_kept_file_altered_or_cut_short_is_fetched_again(
    hub: FakeHub, tiny: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """What an interrupted pull left is never trusted: a kept file whose bytes changed since (same size, mtime put
    back), one cut short, and one the listing does not name are dropped; those two are fetched again, nothing
    else. The CLI's message of the interrupted pull says that rerunning it resumes (exit 130)."""
    from rwkv_registry.cli.main import main

    repo_id = new_repo(hub, tiny)
    files = hub.files(repo_id)
    dest = tmp_path / "dest"
    stop_after(monkeypatch, hub, None)
    assert main(["pull", repo_id, str(dest)]) == 130
    err = capsys.readouterr().err
    (staging,) = tmp_path.iterdir()
    assert f"interrupted: nothing was written to {dest}" in err and str(staging) in err
    assert "run the same pull again to resume" in err and "Traceback" not in err
    _flip_a_byte(staging / STATE)
    with open(staging / MISS, "r+b") as f:
        f.truncate(len(files[MISS]) // 2)
    (staging / "notes.md").write_bytes(b"not in the listing")
    hub.log.clear()
    assert main(["pull", repo_id, str(dest)]) == 0
    assert fetched(hub, repo_id) == Counter({STATE: 1, MISS: 1})
    assert same_tree(dest, files)


# --- push: an error answer to the commit request ---------------------------------------------------------------


def test_a_push_whose_commit_landed_behind_an_error_answer_reports_it(
    hub: FakeHub, tiny: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The Hub commits, then its answer is lost (500). Before the fix push said "OWNER/REPO@main moved during the
    push: it was at C, it is now at D; nothing was committed" (exit 1), D being the push's own commit, and told the
    user to pull and redo the change."""
    import shutil

    from rwkv_registry.cli.main import main

    repo_id = new_repo(hub)
    reg = tmp_path / "reg"
    shutil.copytree(tiny, reg, ignore=shutil.ignore_patterns(".rwkv-registry*"))
    parent = hub.head(repo_id)

    def lost_answer(server: str, method: str, path: str, status: int, body: bytes, headers: dict[str, str]) -> tuple:
        if server == "api" and method == "POST" and "/commit/" in path:
            return 500, b"Internal Error", {"Content-Length": "14"}
        return status, body, headers

    with hub.rewriting(lost_answer):
        assert main(["push", str(reg), "--repo", repo_id]) == 0
    out = capsys.readouterr().out
    head = hub.head(repo_id)
    assert head != parent and f"committed {head[:12]}" in out and "the Hub answered an error" in out
    local = {p.relative_to(reg).as_posix(): p.read_bytes() for p in reg.rglob("*") if p.is_file()}
    assert hub.files(repo_id) == {r: b for r, b in local.items() if not r.startswith(".rwkv-registry")}


def test_a_push_refused_by_a_server_error_says_nothing_was_committed(
    hub: FakeHub, tiny: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import shutil

    from hub_server import _Reply

    from rwkv_registry.cli.main import main

    repo_id = new_repo(hub)
    reg = tmp_path / "reg"
    shutil.copytree(tiny, reg, ignore=shutil.ignore_patterns(".rwkv-registry*"))
    parent = hub.head(repo_id)

    def fail(repo: str) -> None:
        raise _Reply(500, {"error": "Internal Error"})

    hub.before_commit = fail
    try:
        assert main(["push", str(reg), "--repo", repo_id]) == 2
    finally:
        hub.before_commit = None
    err = capsys.readouterr().err
    assert hub.head(repo_id) == parent
    assert "500" in err and f"Nothing was committed ({repo_id}@main is still at {parent[:12]})" in err
    assert "moved during the push" not in err


def test_validate_hf_names_the_file_the_hub_failed_to_serve(
    hub: FakeHub, tiny: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 500 on a small file of `validate hf://`. Before, "error: cannot fetch http://…/resolve/<commit>/index.json:
    Server error …" and no hint."""
    from rwkv_registry.cli.main import main

    repo_id = new_repo(hub, tiny)
    monkeypatch.setattr(time, "sleep", lambda seconds: None)  # huggingface_hub's back-off between its 5 retries

    def fail(server: str, method: str, path: str, status: int, body: bytes, headers: dict[str, str]) -> tuple:
        if server == "api" and method == "GET" and path.endswith("/resolve/" + hub.head(repo_id) + "/index.json"):
            return 500, b"Internal Error", {"Content-Length": "14"}
        return status, body, headers

    with hub.rewriting(fail):
        assert main(["validate", f"hf://{repo_id}"]) == 2
    err = capsys.readouterr().err
    assert f"{repo_id}@{hub.head(repo_id)[:12]}: index.json: {hub.endpoint}/" in err and "HTTP 500" in err, err
    assert "hint: " in err and "Try again later" in err and "Traceback" not in err


def test_a_commit_force_pushed_away_during_the_pull_is_said_so(
    hub: FakeHub, tiny: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The branch is rewritten between the listing and the download: the commit the pull pinned is gone. Before:
    "revision '<commit>' does not exist" with the hint "Give an existing branch, tag or commit" (the user gave
    none)."""
    import huggingface_hub

    repo_id = new_repo(hub, tiny)
    real = huggingface_hub.snapshot_download

    def force_push(*args: Any, **kwargs: Any) -> str:
        repo = hub.repos[repo_id]
        gone = repo.refs["main"]
        repo.refs["main"] = hub.commit_files(repo_id, {"README.md": b"rewritten\n"}, base=None)
        del repo.commits[gone]
        return real(*args, **kwargs)

    monkeypatch.setattr(huggingface_hub, "snapshot_download", force_push)
    commit = hub.head(repo_id)
    err = _refused_cleanly(
        capsys, tmp_path, ["pull", repo_id, str(tmp_path / "dest")], [], f"the commit {commit}", "is gone", "Pull again"
    )
    assert "Give an existing branch" not in err


def test_a_connection_cut_half_way_names_the_file(
    hub: FakeHub, tiny: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The storage hangs up half-way through one weight file, every time (huggingface_hub retries, then gives up).
    Before: "cannot reach http://…: RemoteProtocolError: peer closed connection …", naming no file."""
    repo_id = new_repo(hub, tiny)
    monkeypatch.setattr(time, "sleep", lambda seconds: None)  # huggingface_hub's back-off between retries
    sha = hub.repos[repo_id].commits[hub.head(repo_id)][STATE].sha256

    def hang_up(server: str, method: str, path: str, status: int, body: bytes, headers: dict[str, str]) -> tuple:
        if server == "cdn" and method == "GET" and path.endswith(sha):
            return status, body[: len(body) // 2], headers  # Content-Length still promises the whole file
        return status, body, headers

    with hub.rewriting(hang_up):
        err = _refused_cleanly(capsys, tmp_path, ["pull", repo_id, str(tmp_path / "dest")], [], f": {STATE}: ")
    assert "(or one of" not in err


def test_ctrl_c_while_the_kept_files_are_checked_keeps_them(
    hub: FakeHub, tiny: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Checking what an interrupted pull kept reads every file (gigabytes, for a real registry): Ctrl-C then says, as
    during the download, where the files are and that the same pull resumes, and the next pull still keeps them."""
    from rwkv_registry.hub.sync import PullInterrupted

    repo_id = new_repo(hub, tiny)
    files = hub.files(repo_id)
    dest = tmp_path / "dest"
    stop_after(monkeypatch, hub, None)
    with pytest.raises(KeyboardInterrupt):
        pull_registry(repo_id, dest, log=quiet)
    real = _hub_sync._check_file

    def stopped(remote: Any, staging: Path, rel: str) -> Any:
        if rel == STATE:
            raise KeyboardInterrupt
        return real(remote, staging, rel)

    monkeypatch.setattr(_hub_sync, "_check_file", stopped)
    with pytest.raises(KeyboardInterrupt) as e:
        pull_registry(repo_id, dest, log=quiet)
    assert isinstance(e.value, PullInterrupted) and "run the same pull again to resume" in e.value.message
    monkeypatch.setattr(_hub_sync, "_check_file", real)
    hub.log.clear()
    assert pull_registry(repo_id, dest, log=quiet).ok
    assert not fetched(hub, repo_id) and same_tree(dest, files)


# --- third mutation audit -----------------------------------------------------------------------------------


def test_ctrl_c_just_after_the_staging_directory_became_path_is_still_a_ctrl_c(
    hub: FakeHub, tiny: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C that lands right after the checked download was renamed to PATH: the pull ends as interrupted
    (exit 130), not with a FileNotFoundError about the staging directory that no longer exists."""
    repo_id = new_repo(hub, tiny)
    dest = tmp_path / "dest"
    real = Path.rename

    def then_interrupted(self: Path, target: Any) -> Any:
        moved = real(self, target)
        if Path(target) == dest:
            raise KeyboardInterrupt
        return moved

    monkeypatch.setattr(Path, "rename", then_interrupted)
    with pytest.raises(KeyboardInterrupt):
        pull_registry(repo_id, dest, log=quiet)
    assert (dest / "index.json").read_bytes() == (tiny / "index.json").read_bytes()  # the whole checked download
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dest"]


def test_the_staging_directory_of_a_running_pull_is_only_probed(tmp_path: Path) -> None:
    """Whether the pull that left a staging directory still runs is asked with signal 0: the process is not
    signalled, and its directory is not named as left over; a directory of a process that is gone is."""
    import subprocess
    import sys

    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        dest = tmp_path / "dest"
        running = tmp_path / f".dest{_hub_sync.PULL_STAGING}{child.pid}"
        running.mkdir()
        pid_max = Path("/proc/sys/kernel/pid_max")
        gone = int(pid_max.read_text()) + 1 if pid_max.exists() else 0  # no process can have it
        if not gone:
            pytest.skip("no /proc/sys/kernel/pid_max: no pid known to be free")
        left = tmp_path / f".dest{_hub_sync.PULL_STAGING}{gone}"
        left.mkdir()
        (tmp_path / f".dest{_hub_sync.PULL_STAGING}not-a-pid").mkdir()
        assert _hub_sync._left_by_killed_pulls(dest) == [left]
        time.sleep(0.2)
        assert child.poll() is None  # still running: not signalled
    finally:
        child.kill()
        child.wait()


def test_a_commit_of_the_same_paths_with_other_bytes_behind_an_error_answer_is_not_taken_for_the_push(
    hub: FakeHub, tiny: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The commit request fails (500) after someone else committed the very paths this push writes, one of them
    with other bytes: that commit is not this push's, and push says nothing was committed (exit 1)."""
    import shutil

    from hub_server import _Reply

    from rwkv_registry.cli.main import main

    repo_id = new_repo(hub)
    reg = tmp_path / "reg"
    shutil.copytree(tiny, reg, ignore=shutil.ignore_patterns(".rwkv-registry*"))
    parent = hub.head(repo_id)
    local = {p.relative_to(reg).as_posix(): p.read_bytes() for p in reg.rglob("*") if p.is_file()}
    theirs = {**local, "README.md": local["README.md"] + b"\nanother publisher's line\n"}

    def someone_else_first(repo: str) -> None:
        hub.commit_files(repo, dict(theirs))
        raise _Reply(500, {"error": "Internal Error"})

    hub.before_commit = someone_else_first
    try:
        assert main(["push", str(reg), "--repo", repo_id]) == 1
    finally:
        hub.before_commit = None
    captured = capsys.readouterr()
    assert hub.head(repo_id) != parent and hub.files(repo_id)["README.md"] == theirs["README.md"]
    assert "moved during the push" in captured.err and "nothing was committed" in captured.err
    assert "committed " not in captured.out


def test_two_files_missing_from_the_download_are_counted_and_a_missing_parent_is_named(
    hub: FakeHub, tiny: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The refusal of a download that lacks listed files names the first and counts the rest ("and 1 more"
    for two); a PATH whose parent directory does not exist is refused before any download."""
    import huggingface_hub

    from rwkv_registry.core.errors import RegistryIOError, UsageError

    repo_id = new_repo(hub, tiny)
    with pytest.raises(UsageError, match=r"the directory .*no-such-folder does not exist"):
        pull_registry(repo_id, tmp_path / "no-such-folder" / "dest", log=quiet)
    assert list(tmp_path.iterdir()) == []
    real = huggingface_hub.snapshot_download

    def two_missing(*args: object, local_dir: Path, **kwargs: object) -> str:
        out = real(*args, local_dir=local_dir, **kwargs)  # type: ignore[arg-type]
        (Path(local_dir) / STATE).unlink()
        (Path(local_dir) / "README.md").unlink()
        return out

    monkeypatch.setattr(huggingface_hub, "snapshot_download", two_missing)
    with pytest.raises(RegistryIOError, match=r"README\.md \(and 1 more\) is in the Hub's tree listing but was not"):
        pull_registry(repo_id, tmp_path / "dest", log=quiet)
    assert list(tmp_path.iterdir()) == []


def test_a_second_push_whose_commit_landed_behind_an_error_answer_reports_it(
    hub: FakeHub, tiny: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """As test_a_push_whose_commit_landed_behind_an_error_answer_reports_it, for a push that changes two files of a
    published registry: the files it leaves alone are compared with the listing before the push, and match."""
    import shutil

    from regtools import resum

    from rwkv_registry.cli.main import main

    repo_id = new_repo(hub)
    reg = tmp_path / "reg"
    shutil.copytree(tiny, reg, ignore=shutil.ignore_patterns(".rwkv-registry*"))
    assert main(["push", str(reg), "--repo", repo_id]) == 0
    parent = hub.head(repo_id)
    (reg / "README.md").write_bytes((reg / "README.md").read_bytes() + b"\nA line of the publisher's.\n")
    resum(reg)

    def lost_answer(server: str, method: str, path: str, status: int, body: bytes, headers: dict[str, str]) -> tuple:
        if server == "api" and method == "POST" and "/commit/" in path:
            return 500, b"Internal Error", {"Content-Length": "14"}
        return status, body, headers

    capsys.readouterr()
    with hub.rewriting(lost_answer):
        assert main(["push", str(reg), "--repo", repo_id]) == 0
    out = capsys.readouterr().out
    head = hub.head(repo_id)
    assert head != parent and f"committed {head[:12]}" in out and "the Hub answered an error" in out
    assert hub.files(repo_id)["README.md"] == (reg / "README.md").read_bytes()


def test_a_parent_that_cannot_be_listed_hides_no_pull_behind_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Looking for the leftovers of killed pulls is a courtesy: a parent directory whose listing fails (an I/O
    error) names none, and the pull goes on."""
    import errno

    def unreadable(self: Path, pattern: str) -> Any:
        raise OSError(errno.EIO, os.strerror(errno.EIO), str(self))

    monkeypatch.setattr(Path, "glob", unreadable)
    assert _hub_sync._left_by_killed_pulls(tmp_path / "dest") == []


# --- fourth mutation audit ----------------------------------------------------------------------------------


def test_an_interrupted_pull_counts_the_files_and_bytes_it_keeps(
    hub: FakeHub, tiny: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo_id = new_repo(hub, tiny)
    dest = tmp_path / "dest"
    stop_after(monkeypatch, hub, 3)
    with pytest.raises(KeyboardInterrupt) as e:
        pull_registry(repo_id, dest, log=quiet)
    (staging,) = tmp_path.iterdir()
    kept = [p for p in staging.rglob("*") if p.is_file()]
    size = sum(p.stat().st_size for p in kept)
    assert len(kept) == 3
    assert f"The 3 file(s) downloaded so far ({size / 1e6:.1f} MB) are kept in {staging}" in str(e.value)


def test_a_staging_directory_whose_lock_fails_is_refused_without_a_leaked_descriptor(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """flock failing otherwise than 'held by another' (ENOLCK on some network file systems): the OSError comes out,
    and the directory's descriptor is closed."""
    import errno
    import fcntl

    def no_locks(fd: int, op: int) -> None:
        raise OSError(errno.ENOLCK, os.strerror(errno.ENOLCK))

    monkeypatch.setattr(fcntl, "flock", no_locks)
    before = len(os.listdir("/proc/self/fd"))
    for _ in range(3):
        with pytest.raises(OSError) as e:
            _hub_sync._flock_dir(tmp_path)
        assert e.value.errno == errno.ENOLCK
    assert len(os.listdir("/proc/self/fd")) == before


def test_a_download_failing_before_any_file_says_nothing_of_files_kept(
    hub: FakeHub, tiny: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nothing downloaded: the hint is the error's own, no resume note (nor a stray 'None'), and no staging
    directory is left."""
    import huggingface_hub

    repo_id = new_repo(hub, tiny)

    def refused(*args: Any, **kwargs: Any) -> str:
        raise ConnectionError("connection refused")

    monkeypatch.setattr(huggingface_hub, "snapshot_download", refused)
    with pytest.raises(RegistryIOError) as e:
        pull_registry(repo_id, tmp_path / "dest", log=quiet)
    assert e.value.hint and "None" not in e.value.hint and "kept" not in e.value.hint, e.value.hint
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("strays", [0, 2, "metadata"])
def test_a_resumed_pull_counts_the_other_files_it_deleted(
    hub: FakeHub, tiny: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, strays: int | str
) -> None:
    """The resume note counts the kept files, the files to download and the other files deleted: none when there
    were none. huggingface_hub's download metadata (left by a pull killed outright) is no such file: dropped
    silently."""
    repo_id = new_repo(hub, tiny)
    files = hub.files(repo_id)
    dest = tmp_path / "dest"
    stop_after(monkeypatch, hub, 4)
    with pytest.raises(KeyboardInterrupt):
        pull_registry(repo_id, dest, log=quiet)
    (staging,) = tmp_path.iterdir()
    if strays == "metadata":
        meta = staging / ".cache" / "huggingface" / "download" / "README.md.metadata"
        meta.parent.mkdir(parents=True)
        meta.write_text("0123abc\n")
    else:
        for i in range(int(strays)):
            (staging / f"stray-{i}.md").write_bytes(b"not in the listing")
    said: list[str] = []
    assert pull_registry(repo_id, dest, log=said.append).ok
    (note,) = [m for m in said if m.startswith("resuming:")]
    assert "4 file(s)" in note and f"{len(files) - 4} to download" in note, note
    if strays in (0, "metadata"):
        assert "deleted" not in note, note
        assert not (dest / ".cache").exists()
    else:
        assert note.endswith(f"; {strays} other file(s) left there deleted (changed, partial, or not in this commit)")


def test_a_leftover_staging_directory_that_vanishes_while_sorted_does_not_stop_the_pull(
    hub: FakeHub, tiny: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two killed pulls' staging directories; one cannot be stat'ed when they are sorted by age (deleted meanwhile):
    it counts as the oldest, the other is resumed from, and the pull completes."""
    import sys

    repo_id = new_repo(hub, tiny)
    dead = _free_pid()
    files = hub.files(repo_id)
    gone = tmp_path / f".dest{_hub_sync.PULL_STAGING}{dead + 1}"
    gone.mkdir()
    left = tmp_path / f".dest{_hub_sync.PULL_STAGING}{dead}"
    (left / STATE).parent.mkdir(parents=True)
    (left / STATE).write_bytes(files[STATE])
    real = Path.stat
    hit: list[Path] = []

    def vanished(self: Path, **kw: Any) -> os.stat_result:
        if self == gone and sys._getframe(1).f_code.co_name == "mtime":  # listed alive, gone when sorted by age
            hit.append(self)
            raise FileNotFoundError(2, "No such file or directory", str(self))
        return real(self, **kw)

    monkeypatch.setattr(Path, "stat", vanished)
    said: list[str] = []
    assert pull_registry(repo_id, tmp_path / "dest", log=said.append).ok
    assert hit, "the sort by age no longer stats through a function named mtime: aim this test anew"
    assert any(m.startswith("resuming the interrupted pull") and str(left) in m for m in said), said
    assert same_tree(tmp_path / "dest", files)


def test_an_interrupted_pull_counts_the_kept_files_it_can_still_stat(
    hub: FakeHub, tiny: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A kept file that cannot be stat'ed when the message is written (deleted meanwhile) is left out of the count;
    the files after it, in the same folder, are still counted."""
    import sys

    repo_id = new_repo(hub, tiny)
    stop_after(monkeypatch, hub, 3)
    real = os.lstat
    failed: list[str] = []

    def first_gone(path: Any, *args: Any, **kw: Any) -> os.stat_result:
        if sys._getframe(1).f_code.co_name == "_staged_files" and failed in ([], [str(path)]):
            failed[:] = [str(path)]  # the first file it looks at, each time
            raise FileNotFoundError(2, "No such file or directory", str(path))
        return real(path, *args, **kw)

    monkeypatch.setattr(os, "lstat", first_gone)
    with pytest.raises(KeyboardInterrupt) as e:
        pull_registry(repo_id, tmp_path / "dest", log=quiet)
    assert failed and "The 2 file(s) downloaded so far" in str(e.value), str(e.value)
