"""Hub support against a Hub look-alike on 127.0.0.1 (tests/hub_server.py): huggingface_hub runs for real.

validate hf://, add-base --from-hub, push (gate, parent_commit, published files), pull (whole, one base).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import huggingface_hub.constants as hf_constants
import pytest
from hub_server import FakeHub, load_registry
from huggingface_hub.utils import disable_progress_bars, enable_progress_bars
from regtools import (
    TINY_ARCH,
    TINY_BASE,
    build_registry,
    edit_index,
    git_publish,
    resum,
    state_train,
    write_state,
    write_tiny_base,
)

from rwkv_registry.cli.main import main
from rwkv_registry.core.errors import RefusedError, UsageError
from rwkv_registry.engine.validate import validate_registry
from rwkv_registry.fs.atomic import LOCK_NAME
from rwkv_registry.hub.commands import add_base_from_hub, pull_registry, push_registry, validate_hub
from rwkv_registry.store.ops import add_base, add_entry, read_base_architecture

STATE = f"{TINY_BASE}/state/v1/s1.pth"
MISS_A = f"{TINY_BASE}/miss/v2/r4-a/adapter-final.pth"
_counter = iter(range(10**6))


@pytest.fixture(scope="module")
def hub() -> Iterator[FakeHub]:
    with FakeHub() as server:
        yield server


@pytest.fixture(autouse=True)
def hub_env(hub: FakeHub, monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Point huggingface_hub at the test server; never a real token, never the user's cache."""
    home = tmp_path_factory.mktemp("hf_home")
    monkeypatch.setenv("HF_ENDPOINT", hub.endpoint)
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
    monkeypatch.setenv("HF_HOME", str(home))
    monkeypatch.setenv("HF_TOKEN", "hf_test_token_for_the_local_server")
    # huggingface_hub read these at import time: set the module values too
    monkeypatch.setattr(hf_constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(hf_constants, "HF_HUB_CACHE", str(home / "hub"))
    monkeypatch.setattr(hf_constants, "HF_HUB_DISABLE_XET", True)  # the server speaks LFS, not Xet
    disable_progress_bars()
    yield
    enable_progress_bars()


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("tiny")
    return build_registry(tmp / "reg", tmp)


def new_repo(hub: FakeHub, root: Path | None = None) -> str:
    repo_id = f"tester/reg-{next(_counter)}"
    if root is None:
        hub.create_repo(repo_id)
    else:
        load_registry(hub, repo_id, root)
    return repo_id


def copy(root: Path, dest: Path) -> Path:
    shutil.copytree(root, dest, ignore=shutil.ignore_patterns(".rwkv-registry*"))
    return dest


def errors(report: object) -> list[str]:
    return sorted({f.code for f in report.findings if str(f.severity) == "error"})  # type: ignore[attr-defined]


# --- validate hf:// ------------------------------------------------------------------------------------------


def test_clean_hub_repo_validates_like_the_local_copy(hub: FakeHub, tiny: Path) -> None:
    repo_id = new_repo(hub, tiny)
    remote = validate_hub(f"hf://{repo_id}")
    local = validate_registry(tiny, use_cache=False)
    assert remote.ok and local.ok
    # GIT004: the local copy is no git clone; the Hub keeps its own history, so hf:// has no git rules
    assert "GIT004" in {f.code for f in local.findings}
    assert [(f.code, f.path) for f in remote.findings] == [
        (f.code, f.path) for f in local.findings if f.code != "GIT004"
    ]
    assert remote.target == f"hf://{repo_id}@{hub.head(repo_id)}"
    assert remote.stats["bytes_fetched"] > 0


def test_remote_weight_whose_lfs_sha256_differs_from_index_fails(hub: FakeHub, tiny: Path, tmp_path: Path) -> None:
    repo_id = new_repo(hub, tiny)
    other = write_state(tmp_path / "other" / "s1.pth", seed=7)  # same name, shape and size, other bytes
    assert other.stat().st_size == (tiny / STATE).stat().st_size
    hub.commit_files(repo_id, {STATE: other.read_bytes()})
    report = validate_hub(f"hf://{repo_id}")
    assert not report.ok
    f = next(f for f in report.findings if f.code == "HSH001")
    assert f.path == STATE and hub.repos[repo_id].commits[hub.head(repo_id)][STATE].sha256 in f.message
    assert "HSH006" in errors(report)  # SHA256SUMS disagrees too


def test_lying_lfs_metadata_is_caught_without_reading_the_bytes(hub: FakeHub, tiny: Path) -> None:
    repo_id = new_repo(hub, tiny)
    hub.set_lfs_sha256(repo_id, MISS_A, "ab" * 32)
    report = validate_hub(f"hf://{repo_id}")
    assert {"HSH001", "HSH006"} <= set(errors(report))


def test_manifest_rules_run_on_range_reads(hub: FakeHub, tiny: Path, tmp_path: Path) -> None:
    # a MiSS file whose manifest names another base: MIS013 needs only miss.json, read by Range requests
    from regtools import write_miss

    reg = copy(tiny, tmp_path / "reg")
    write_miss(reg / MISS_A, base_sha="cd" * 32)
    from rwkv_registry.engine.facts import compute_facts

    facts = compute_facts(reg / MISS_A)
    edit_index(
        reg,
        lambda d: [
            e.update(
                file={"sha256": facts.sha256, "size": facts.size},
                miss={**e["miss"], "content_version": facts.manifest["content_version"]},
            )
            for e in d["entries"]
            if e["path"] == MISS_A
        ],
    )
    resum(reg)
    repo_id = new_repo(hub, reg)
    report = validate_hub(f"hf://{repo_id}")
    assert "MIS013" in errors(report)


def test_content_version_needs_full(hub: FakeHub, tiny: Path, tmp_path: Path) -> None:
    reg = copy(tiny, tmp_path / "reg")
    data = bytearray((reg / MISS_A).read_bytes())
    pos = data.index(b"PK\x03\x04", 1)  # second entry: data/1 of the lightning writer, a D tensor
    data[pos - 10] ^= 0x01  # one bit of a D value: content_version no longer matches the manifest
    (reg / MISS_A).write_bytes(bytes(data))
    from rwkv_registry.engine.facts import compute_facts

    facts = compute_facts(reg / MISS_A)
    edit_index(
        reg,
        lambda d: [
            e.update(file={"sha256": facts.sha256, "size": facts.size}) for e in d["entries"] if e["path"] == MISS_A
        ],
    )
    resum(reg)
    assert "MIS011" in errors(validate_registry(reg, use_cache=False))
    repo_id = new_repo(hub, reg)
    quick = validate_hub(f"hf://{repo_id}")
    assert "MIS011" not in errors(quick)  # without --full the D bytes are not read
    full = validate_hub(f"hf://{repo_id}", full=True)
    assert "MIS011" in errors(full)
    miss_bytes = sum(p.stat().st_size for p in reg.rglob("adapter-final.pth"))
    assert full.stats["bytes_fetched"] == quick.stats["bytes_fetched"] + miss_bytes  # MiSS files, whole, once more


def test_bytes_fetched_counts_exactly_what_the_server_sent(hub: FakeHub, tiny: Path) -> None:
    repo_id = new_repo(hub, tiny)
    start = len(hub.log)
    report = validate_hub(f"hf://{repo_id}")
    requests = hub.log[start:]
    content = [r for r in requests if r["server"] == "cdn" or "/resolve/" in r["path"]]
    assert report.stats["bytes_fetched"] == sum(r["sent"] for r in content)
    ranged = [r for r in requests if r["server"] == "cdn" and r["method"] == "GET"]
    assert ranged and all(r["range"] and r["status"] == 206 for r in ranged)
    # weights are never fetched whole without --full
    for r in ranged:
        lo, hi = (int(x) for x in r["range"].removeprefix("bytes=").split("-"))
        assert r["sent"] == hi - lo + 1


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from rwkv_registry.store.demo import build_demo

    return build_demo(tmp_path_factory.mktemp("demo") / "reg", log=lambda m: None)


@pytest.mark.slow
def test_a_server_ignoring_range_never_makes_us_download_weights(hub: FakeHub, demo: Path) -> None:
    """The demo's weights (16 and 36 MiB) are larger than WHOLE_READ_BYTES: a storage answering 200 with the whole
    file is an error naming the file and what came (exit 2; before, LAY010 on each), with their bodies not read."""
    from rwkv_registry.hub.remote import connect
    from rwkv_registry.hub.transport import RangeIgnored

    repo_id = new_repo(hub, demo)
    hub.ignore_range = True
    try:
        with pytest.raises(RangeIgnored, match="ignored the Range header") as e:
            validate_hub(f"hf://{repo_id}")
        remote = connect(repo_id)
        weight = sorted(p.relative_to(demo).as_posix() for p in demo.rglob("*.pth"))[0]
        with pytest.raises(RangeIgnored):
            remote.open(weight).prefetch_zip_metadata()
    finally:
        hub.ignore_range = False
    assert e.value.path.endswith(".pth")
    assert remote.fetcher.bytes_fetched < 100_000  # the 200 bodies are not read


@pytest.mark.slow
def test_byte_budget_one_percent_on_the_seed_shaped_registry(hub: FakeHub, demo: Path) -> None:
    repo_id = new_repo(hub, demo)
    weight_bytes = sum(p.stat().st_size for p in demo.rglob("*.pth"))
    start = len(hub.log)
    report = validate_hub(f"hf://{repo_id}")
    assert report.ok, [(f.code, f.path, f.message) for f in report.findings]
    assert report.stats["weight_bytes"] == weight_bytes
    assert report.stats["bytes_fetched"] <= 0.01 * weight_bytes
    everything = sum(r["sent"] for r in hub.log[start:])  # API JSON included
    assert everything <= 0.01 * weight_bytes


def test_cli_validate_hf_json_report_and_errors(hub: FakeHub, tiny: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from rwkv_registry.schemas import schema_errors

    repo_id = new_repo(hub, tiny)
    assert main(["validate", f"hf://{repo_id}@main", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert schema_errors("report", out) == [] and out["ok"] and out["stats"]["bytes_fetched"] > 0
    assert main(["validate", f"hf://{repo_id}"]) == 0
    assert "bytes fetched" in capsys.readouterr().out
    assert main(["validate", "hf://tester/does-not-exist"]) == 2
    assert "no such repository" in capsys.readouterr().err
    assert main(["validate", f"hf://{repo_id}@no-such-branch"]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert main(["validate", "hf://not a repo"]) == 2


def test_validate_hf_checks_signatures(hub: FakeHub, tiny: Path, tmp_path: Path) -> None:
    from rwkv_registry.store.signing import generate_keypair, sign_registry

    reg = copy(tiny, tmp_path / "reg")
    key, pub, _ = generate_keypair(tmp_path / "k.key")
    sign_registry(reg, key)
    repo_id = new_repo(hub, reg)
    assert validate_hub(f"hf://{repo_id}", trusted_keys=[str(pub)]).ok
    hub.commit_files(repo_id, {"SHA256SUMS": (reg / "SHA256SUMS").read_bytes() + b"\n"})
    assert "SIG002" in errors(validate_hub(f"hf://{repo_id}", trusted_keys=[str(pub)]))


def test_tree_listing_pagination_is_followed(tiny: Path) -> None:
    with FakeHub(page_size=3) as small_pages:
        repo_id = new_repo(small_pages, tiny)
        report = validate_hub(f"hf://{repo_id}", endpoint=small_pages.endpoint)
    assert report.ok and report.stats["files"] == len(small_pages.files(repo_id))
    assert len([r for r in small_pages.log if "/tree/" in r["path"]]) > 3


# --- add-base --from-hub -------------------------------------------------------------------------------------


def test_add_base_from_hub_reads_metadata_and_headers_only(hub: FakeHub, tmp_path: Path) -> None:
    from rwkv_registry.store.ops import init_registry

    name = "rwkv7-tiny-20260301-ctx4096"
    base_file = write_tiny_base(tmp_path / f"{name}.pth", vocab=65536)  # 33 MB of zeros
    size = base_file.stat().st_size
    repo_id = f"BlinkDL/rwkv7-g1-{next(_counter)}"
    hub.create_repo(repo_id, {f"sub/{name}.pth": base_file.read_bytes()})
    local, remote = tmp_path / "local", tmp_path / "remote"
    init_registry(local)
    init_registry(remote)
    expected = add_base(local, name=None, source="BlinkDL/rwkv7-g1", base_file=base_file)
    start = len(hub.log)
    base = add_base_from_hub(remote, f"{repo_id}/sub/{name}.pth")
    requests = hub.log[start:]
    assert all(r["range"] for r in requests if r["server"] == "cdn" and r["method"] == "GET")
    assert sum(r["sent"] for r in requests) < 0.02 * size  # a base is never downloaded
    assert base["name"] == name and base["sha256"] == expected["sha256"] and base["size"] == size
    assert base["architecture"] == read_base_architecture(base_file) == expected["architecture"]
    assert base["source"] == {"repo": repo_id, "file": f"sub/{name}.pth", "revision": hub.head(repo_id)}
    assert validate_registry(remote, use_cache=False).ok


def test_add_base_from_hub_errors(hub: FakeHub, tmp_path: Path) -> None:
    from rwkv_registry.store.ops import init_registry

    reg = tmp_path / "reg"
    init_registry(reg)
    repo_id = f"BlinkDL/other-{next(_counter)}"
    hub.create_repo(repo_id, {"notes.txt": b"hello", "junk.pth": b"PK\x03\x04 not really a zip" * 100})
    with pytest.raises(UsageError, match="no file"):
        add_base_from_hub(reg, f"{repo_id}/missing.pth")
    with pytest.raises(RefusedError, match="not stored in Git LFS"):
        add_base_from_hub(reg, f"{repo_id}/notes.txt")
    with pytest.raises(RefusedError, match=r"junk\.pth: no end-of-central-directory record"):
        add_base_from_hub(reg, f"{repo_id}/junk.pth")
    with pytest.raises(UsageError, match="not OWNER/REPO/FILE"):
        add_base_from_hub(reg, "just-a-name.pth")
    assert main(["add-base", str(reg), "--from-hub", "BlinkDL/nothing-here/x.pth"]) == 2
    assert json.loads((reg / "index.json").read_text())["bases"] == []


# --- push -------------------------------------------------------------------------------------------------


def test_push_uploads_only_what_differs_in_one_commit(hub: FakeHub, tiny: Path, tmp_path: Path) -> None:
    repo_id = new_repo(hub)
    reg = copy(tiny, tmp_path / "reg")
    first = push_registry(reg, repo_id, log=lambda m: None)
    assert first.commit == hub.head(repo_id)
    pushed = hub.files(repo_id)
    for rel in first.uploaded:
        assert pushed[rel] == (reg / rel).read_bytes()
    # every file but the lock file (push holds it shared; it is never published)
    assert set(pushed) == {p.relative_to(reg).as_posix() for p in reg.rglob("*") if p.is_file()} - {LOCK_NAME}
    again = push_registry(reg, repo_id, log=lambda m: None)
    assert again.commit is None and hub.head(repo_id) == first.commit
    # a new State: only it, its train.json, index.json, README.md and SHA256SUMS change
    st = write_state(tmp_path / "src" / "s2.pth", seed=3)
    add_entry(reg, st, base=TINY_BASE, data_version="v3", train=state_train("v3"))
    start = len(hub.log)
    third = push_registry(reg, repo_id, message="add s2", log=lambda m: None)
    assert sorted(third.uploaded) == sorted(
        ["README.md", "SHA256SUMS", "index.json", f"{TINY_BASE}/state/v3/s2.pth", f"{TINY_BASE}/state/v3/train.json"]
    )
    assert third.deleted == [] and third.parent == first.commit
    commits = [r for r in hub.log[start:] if r["path"].endswith("/commit/main")]
    assert len(commits) == 1
    uploads = [r for r in hub.log[start:] if r["path"].startswith("/upload/")]
    assert len(uploads) == 1  # the one new LFS file
    assert validate_hub(f"hf://{repo_id}").ok


def test_push_gate_refuses_an_invalid_registry(hub: FakeHub, tiny: Path, tmp_path: Path) -> None:
    repo_id = new_repo(hub)
    reg = copy(tiny, tmp_path / "reg")
    (reg / "stray.txt").write_text("x")
    head, start = hub.head(repo_id), len(hub.log)
    with pytest.raises(RefusedError, match="does not validate") as err:
        push_registry(reg, repo_id, log=lambda m: None)
    assert {f.code for f in err.value.findings} >= {"LAY001"}
    assert hub.head(repo_id) == head and hub.log[start:] == []  # the Hub was not even contacted
    assert main(["push", str(reg), "--repo", repo_id]) == 1


def test_push_refuses_when_the_remote_moved_meanwhile(hub: FakeHub, tiny: Path, tmp_path: Path) -> None:
    repo_id = new_repo(hub)
    reg = copy(tiny, tmp_path / "reg")
    moved: list[str] = []

    def concurrent_push(repo: str) -> None:
        if not moved:
            moved.append(hub.commit_files(repo, {"LICENSE": b"someone else's commit\n"}))

    hub.before_commit = concurrent_push
    try:
        with pytest.raises(RefusedError, match="moved during the push") as err:
            push_registry(reg, repo_id, log=lambda m: None)
    finally:
        hub.before_commit = None
    assert hub.head(repo_id) == moved[0]  # the other commit stays, ours was not made
    assert "index.json" not in hub.files(repo_id)
    assert moved[0][:12] in err.value.message


def test_push_never_changes_published_weights(hub: FakeHub, tiny: Path, tmp_path: Path) -> None:
    reg = copy(tiny, tmp_path / "reg")
    repo_id = new_repo(hub, reg)
    head = hub.head(repo_id)
    # replace a published State by other bytes, and make the local copy consistent (it validates)
    other = write_state(tmp_path / "other" / "s1.pth", seed=9)
    shutil.copy(other, reg / STATE)
    from rwkv_registry.engine.facts import compute_facts

    f = compute_facts(reg / STATE)
    edit_index(
        reg, lambda d: [e.update(file={"sha256": f.sha256, "size": f.size}) for e in d["entries"] if e["path"] == STATE]
    )
    resum(reg)
    assert validate_registry(reg, use_cache=False).ok
    with pytest.raises(RefusedError, match="would change on the Hub"):
        push_registry(reg, repo_id, log=lambda m: None)
    # a local copy that lacks a published weight never deletes it
    reg2 = copy(tiny, tmp_path / "reg2")
    (reg2 / STATE).unlink()
    edit_index(reg2, lambda d: d.update(entries=[e for e in d["entries"] if e["path"] != STATE]))
    from rwkv_registry.store.ops import write_readme

    write_readme(reg2)
    resum(reg2)
    assert validate_registry(reg2, use_cache=False).ok
    with pytest.raises(RefusedError, match="would be deleted"):
        push_registry(reg2, repo_id, log=lambda m: None)
    assert hub.head(repo_id) == head


TRAIN = f"{TINY_BASE}/state/v1/train.json"


def _set_status(root: Path, status: str) -> None:
    from rwkv_registry.store.ops import write_readme

    edit_index(root, lambda d: [b.update(status=status) for b in d["bases"]])
    write_readme(root)
    resum(root)


def _edit_train(root: Path, tmp: Path) -> None:
    train = root / TRAIN
    train.write_bytes(train.read_bytes().replace(b"T08:00:00Z", b"T07:00:00Z", 1))
    resum(root)


def _replace_state(root: Path, tmp: Path) -> None:
    from rwkv_registry.engine.facts import compute_facts

    shutil.copy(write_state(tmp / "other" / "s1.pth", seed=9), root / STATE)
    f = compute_facts(root / STATE)
    edit_index(
        root,
        lambda d: [e.update(file={"sha256": f.sha256, "size": f.size}) for e in d["entries"] if e["path"] == STATE],
    )
    resum(root)


def _delete_state(root: Path, tmp: Path) -> None:
    from rwkv_registry.store.ops import write_readme

    (root / STATE).unlink()
    edit_index(root, lambda d: d.update(entries=[e for e in d["entries"] if e["path"] != STATE]))
    write_readme(root)
    resum(root)


def _add_under(root: Path, tmp: Path) -> None:
    """New weights under the base (reopened for the add, then its published status again)."""
    status = json.loads((root / "index.json").read_text())["bases"][0]["status"]
    _set_status(root, "active")
    add_entry(
        root, write_state(tmp / "new" / "s3.pth", seed=3), base=TINY_BASE, data_version="v3", train=state_train("v3")
    )
    _set_status(root, status)


def _gitkeep(root: Path, tmp: Path) -> None:
    (root / TINY_BASE / "state" / ".gitkeep").write_bytes(b"")
    resum(root)


IMMUTABILITY_CASES = {
    # name: (base status when published, the change, the rule it breaks or None)
    "train.json of an active base edited": ("active", _edit_train, "GIT001"),
    "a published State replaced": ("active", _replace_state, "GIT001"),
    "a published State deleted": ("active", _delete_state, "GIT002"),
    "new weights under an active base": ("active", _add_under, None),
    "new weights under a frozen base": ("frozen", _add_under, "GIT003"),
    "an empty .gitkeep under a frozen base": ("frozen", _gitkeep, None),
    "a frozen base unfrozen": ("frozen", lambda root, tmp: _set_status(root, "active"), "GIT005"),
}


@pytest.mark.skipif(shutil.which("git") is None, reason="git not installed")
@pytest.mark.parametrize("case", list(IMMUTABILITY_CASES))
def test_push_refuses_exactly_what_validate_refuses_in_a_git_clone(
    hub: FakeHub, tiny: Path, tmp_path: Path, case: str
) -> None:
    """One immutability policy: the same change to a published registry, committed in a git clone and validated,
    or pushed over the Hub's copy, breaks the same rule (or none, and the push goes ahead)."""
    status, change, code = IMMUTABILITY_CASES[case]
    published = copy(tiny, tmp_path / "published")
    (published / TINY_BASE / "state" / ".gitkeep").unlink()  # so that one can be added
    _set_status(published, status)
    repo_id = new_repo(hub, published)
    head = hub.head(repo_id)

    clone = git_publish(copy(published, tmp_path / "clone"))
    change(clone, tmp_path / "c")
    git_codes = {f.code for f in validate_registry(clone, use_cache=False).findings if f.code.startswith("GIT")}
    assert git_codes == ({code} if code else set())

    local = copy(published, tmp_path / "local")
    change(local, tmp_path / "l")
    assert validate_registry(local, use_cache=False).ok  # what the push validates first
    if code is None:
        assert push_registry(local, repo_id, log=lambda m: None).commit == hub.head(repo_id) != head
        return
    with pytest.raises(RefusedError, match=rf"\b{code}\b") as refused:
        push_registry(local, repo_id, log=lambda m: None)
    assert "push refused" in refused.value.message and hub.head(repo_id) == head


def test_push_to_a_missing_repo_or_branch_is_a_clear_error(hub: FakeHub, tiny: Path, tmp_path: Path) -> None:
    reg = copy(tiny, tmp_path / "reg")
    with pytest.raises(UsageError, match="no such repository"):
        push_registry(reg, "tester/not-created", log=lambda m: None)
    repo_id = new_repo(hub)
    with pytest.raises(UsageError, match="does not exist"):
        push_registry(reg, repo_id, revision="release", log=lambda m: None)


# --- pull ---------------------------------------------------------------------------------------------------


def test_pull_downloads_and_validates(
    hub: FakeHub, tiny: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo_id = new_repo(hub, tiny)
    dest = tmp_path / "pulled"
    assert main(["pull", repo_id, str(dest)]) == 0
    assert "OK" in capsys.readouterr().out
    assert not (dest / ".cache").exists()
    for rel, data in hub.files(repo_id).items():
        assert (dest / rel).read_bytes() == data
    assert main(["pull", repo_id, str(dest)]) == 2  # not empty
    assert "not empty" in capsys.readouterr().err


def test_pull_one_base_checks_the_others_by_metadata(hub: FakeHub, tiny: Path, tmp_path: Path) -> None:
    reg = copy(tiny, tmp_path / "reg")
    other = "rwkv7-tiny-20260401-ctx4096"
    add_base(reg, name=other, source="BlinkDL/rwkv7-g1", sha256="7" * 64, size=1234, arch=dict(TINY_ARCH))
    st = write_state(tmp_path / "src" / "o1.pth", seed=11)
    add_entry(reg, st, base=other, data_version="v1", train=state_train())
    repo_id = new_repo(hub, reg)
    report = pull_registry(repo_id, tmp_path / "one", base=other, log=lambda m: None)
    assert report.ok, [(f.code, f.path) for f in report.findings]
    assert (tmp_path / "one" / other / "state/v1/o1.pth").is_file()
    assert not (tmp_path / "one" / STATE).exists()  # weights of the other base stay on the Hub
    assert (tmp_path / "one" / f"{TINY_BASE}/state/v1/train.json").is_file()  # small files come along
    # a skipped weight whose Hub metadata disagrees with index.json still fails
    hub.set_lfs_sha256(repo_id, STATE, "ef" * 32)
    report = pull_registry(repo_id, tmp_path / "two", base=other, log=lambda m: None)
    assert "HSH001" in errors(report)
    with pytest.raises(UsageError, match="no base"):
        pull_registry(repo_id, tmp_path / "three", base="nope", log=lambda m: None)


def test_credentials_in_the_endpoint_never_reach_a_message() -> None:
    from rwkv_registry.hub.remote import hub_error

    err = hub_error(
        OSError("GET http://user:hunter2@hub.local/api failed"), "o/r", None, "http://user:hunter2@hub.local"
    )
    assert "hunter2" not in err.message and "http://***@hub.local" in err.message


def test_an_interrupted_pull_leaves_path_as_it_was_and_the_next_one_resumes(
    hub: FakeHub, tiny: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The download goes to a hidden sibling and is moved into place only when complete. Ctrl-C keeps that sibling
    (before, it was deleted and the next pull fetched everything again): the next pull checks its files and
    fetches none of them again."""
    import huggingface_hub

    from rwkv_registry.hub.sync import PullInterrupted

    repo_id = new_repo(hub, tiny)
    real = huggingface_hub.snapshot_download

    def interrupted(*args: object, **kwargs: object) -> str:
        real(*args, **kwargs)  # everything arrives, then Ctrl-C before the move
        raise KeyboardInterrupt

    monkeypatch.setattr(huggingface_hub, "snapshot_download", interrupted)
    with pytest.raises(KeyboardInterrupt) as e:
        pull_registry(repo_id, tmp_path / "dest", log=lambda m: None)
    assert isinstance(e.value, PullInterrupted) and "run the same pull again to resume" in e.value.message
    (staging,) = tmp_path.iterdir()  # no dest; the staging directory, named in the message
    assert staging.name.startswith(".dest.rwkv-registry-pull-") and str(staging) in e.value.message
    monkeypatch.setattr(huggingface_hub, "snapshot_download", real)
    hub.log.clear()
    assert pull_registry(repo_id, tmp_path / "dest", log=lambda m: None).ok
    assert not [e for e in hub.log if (e["method"] == "GET" and "/resolve/" in e["path"]) or e["server"] == "cdn"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dest"]


def test_pull_takes_the_hf_form_and_names_a_bad_destination(
    hub: FakeHub, tiny: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo_id = new_repo(hub, tiny)
    (tmp_path / "a-file").write_text("x")
    assert main(["pull", repo_id, str(tmp_path / "a-file")]) == 2
    assert "is a file, not a directory" in capsys.readouterr().err
    assert main(["pull", f"hf://{repo_id}", str(tmp_path / "dest")]) == 0


def test_push_onto_a_commit_id_is_refused_before_anything_is_sent(tiny: Path, tmp_path: Path) -> None:
    reg = copy(tiny, tmp_path / "reg")
    with pytest.raises(UsageError, match="looks like a commit id"):
        push_registry(reg, "tester/any", revision="0" * 40, log=lambda m: None)


def test_push_to_a_malformed_repo_id_is_refused_before_validation(
    tiny: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A typo in --repo is named at once: validating a registry of many GB first would cost the user minutes."""
    from rwkv_registry.hub import sync as _hub_sync

    def validate_not_expected(*a: object, **k: object) -> None:
        raise AssertionError("validated before the repository id was checked")

    monkeypatch.setattr(_hub_sync, "validate_registry", validate_not_expected)
    reg = copy(tiny, tmp_path / "reg")
    for bad in ("notarepo", "a/b/c", "owner/re po"):
        with pytest.raises(UsageError, match="is not a Hugging Face repository id"):
            push_registry(reg, bad, log=lambda m: None)


def test_push_of_a_folder_inside_a_registry_names_the_root_to_push(
    tiny: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reg = copy(tiny, tmp_path / "reg")
    sub = next(p for p in reg.iterdir() if p.is_dir())
    with pytest.raises(UsageError, match="lies inside the registry") as e:
        push_registry(sub, "tester/any", log=lambda m: None)
    assert e.value.hint == f"Push the registry's root: rwkv-registry push {reg.resolve()} --repo tester/any"


def test_a_repository_with_every_file_in_lfs_validates(hub: FakeHub, tiny: Path, tmp_path: Path) -> None:
    """`* filter=lfs` puts index.json and README in LFS too: they are fetched, and LFS002 counts `*`."""
    reg = copy(tiny, tmp_path / "reg")
    (reg / ".gitattributes").write_text("* filter=lfs diff=lfs merge=lfs -text\n")
    resum(reg)
    assert validate_registry(reg, use_cache=False).ok
    repo_id = new_repo(hub, reg)
    assert hub.files(repo_id)  # loaded
    report = validate_hub(f"hf://{repo_id}")
    assert report.ok, [(f.code, f.path, f.message) for f in report.findings if str(f.severity) == "error"]


# --- pull --pubkey: a trust anchor that the Hub does not serve ---------------------------------------------------


def _signed(tiny: Path, tmp_path: Path, name: str = "reg", *, trust: bool = False) -> tuple[Path, Path, Path]:
    """A copy of the tiny registry signed by a new key: (registry, private key, public key)."""
    from rwkv_registry.store.signing import generate_keypair, sign_registry

    reg = copy(tiny, tmp_path / name)
    key, pub, _ = generate_keypair(tmp_path / f"{name}.key")
    sign_registry(reg, key, trust=trust)
    return reg, key, pub


def _nothing_pulled(tmp_path: Path, dest: str) -> None:
    assert not (tmp_path / dest).exists()
    assert not [p for p in tmp_path.iterdir() if "rwkv-registry-pull" in p.name]


def test_pull_pubkey_takes_the_right_key_and_refuses_another(
    hub: FakeHub, tiny: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from rwkv_registry.store.signing import generate_keypair

    reg, _, pub = _signed(tiny, tmp_path)
    _, other, _ = generate_keypair(tmp_path / "other.key")
    repo_id = new_repo(hub, reg)
    assert pull_registry(repo_id, tmp_path / "one", trusted_keys=[str(pub)], log=lambda m: None).ok
    assert main(["pull", repo_id, str(tmp_path / "two"), "--pubkey", str(other), "--pubkey", str(pub)]) == 0
    capsys.readouterr()
    with pytest.raises(RefusedError, match=r"pull refused: .* is not signed as --pubkey requires .*SIG003") as e:
        pull_registry(repo_id, tmp_path / "three", trusted_keys=[str(other)], log=lambda m: None)
    assert f"Nothing was written to {tmp_path / 'three'}" in e.value.hint
    _nothing_pulled(tmp_path, "three")
    assert main(["pull", repo_id, str(tmp_path / "three"), "--pubkey", str(other)]) == 1
    err = capsys.readouterr().err
    assert "SIG003" in err and "Traceback" not in err
    _nothing_pulled(tmp_path, "three")
    # an unsigned repository is refused too; without --pubkey it pulls as before
    unsigned = new_repo(hub, tiny)
    with pytest.raises(RefusedError, match="SIG001"):
        pull_registry(unsigned, tmp_path / "four", trusted_keys=[str(pub)], log=lambda m: None)
    _nothing_pulled(tmp_path, "four")
    assert pull_registry(unsigned, tmp_path / "four", log=lambda m: None).ok


def test_pull_pubkey_refuses_a_registry_re_signed_by_an_attacker(hub: FakeHub, tiny: Path, tmp_path: Path) -> None:
    """The Hub serves a changed train.json with SHA256SUMS re-signed by another key that index.json now trusts:
    the pulled registry validates against its own keys (the gap --pubkey closes), not against the publisher's."""
    from rwkv_registry.store.signing import generate_keypair, sign_registry

    reg, _, publisher = _signed(tiny, tmp_path, trust=True)
    attacked = copy(reg, tmp_path / "attacked")
    train = attacked / f"{TINY_BASE}/state/v1/train.json"
    train.write_bytes(train.read_bytes().replace(b"T08:00:00Z", b"T07:00:00Z", 1))
    resum(attacked)
    attacker, _, _ = generate_keypair(tmp_path / "attacker.key")
    sign_registry(attacked, attacker, trust=True)
    repo_id = new_repo(hub, attacked)
    assert pull_registry(repo_id, tmp_path / "trusting", log=lambda m: None).ok  # index.json's own keys
    with pytest.raises(RefusedError, match="SIG003"):
        pull_registry(repo_id, tmp_path / "pinned", trusted_keys=[str(publisher)], log=lambda m: None)
    _nothing_pulled(tmp_path, "pinned")


@pytest.mark.parametrize("change", ["a file changed", "a file added"])
def test_pull_pubkey_refuses_files_that_the_signed_sums_do_not_match(
    hub: FakeHub, tiny: Path, tmp_path: Path, change: str
) -> None:
    """The signature verifies, but the Hub's commit (listing and bytes agreeing) holds a file SHA256SUMS does
    not vouch for: refused with --pubkey, nothing kept (without it: files kept, exit 1, as before)."""
    reg, _, pub = _signed(tiny, tmp_path)
    repo_id = new_repo(hub, reg)
    if change == "a file changed":
        train = f"{TINY_BASE}/state/v1/train.json"
        hub.commit_files(repo_id, {train: (reg / train).read_bytes().replace(b"T08:00:00Z", b"T07:00:00Z", 1)})
        code = "HSH006"
    else:
        hub.commit_files(repo_id, {"NOTES.md": b"not signed\n"})
        code = "HSH004"
    with pytest.raises(RefusedError, match=code):
        pull_registry(repo_id, tmp_path / "pinned", trusted_keys=[str(pub)], log=lambda m: None)
    _nothing_pulled(tmp_path, "pinned")
    assert code in errors(pull_registry(repo_id, tmp_path / "kept", log=lambda m: None))


def test_pull_one_base_with_pubkey_checks_the_weights_left_on_the_hub(hub: FakeHub, tiny: Path, tmp_path: Path) -> None:
    from rwkv_registry.store.signing import generate_keypair, sign_registry

    reg = copy(tiny, tmp_path / "reg")
    other = "rwkv7-tiny-20260401-ctx4096"
    add_base(reg, name=other, source="BlinkDL/rwkv7-g1", sha256="7" * 64, size=1234, arch=dict(TINY_ARCH))
    add_entry(
        reg, write_state(tmp_path / "src" / "o1.pth", seed=11), base=other, data_version="v1", train=state_train()
    )
    key, pub, _ = generate_keypair(tmp_path / "k.key")
    sign_registry(reg, key)
    repo_id = new_repo(hub, reg)
    report = pull_registry(repo_id, tmp_path / "one", base=other, trusted_keys=[str(pub)], log=lambda m: None)
    assert report.ok and not (tmp_path / "one" / STATE).exists()
    hub.set_lfs_sha256(repo_id, STATE, "ef" * 32)  # the Hub's metadata of a weight not downloaded disagrees
    with pytest.raises(RefusedError, match=f"HSH006 {STATE}"):
        pull_registry(repo_id, tmp_path / "two", base=other, trusted_keys=[str(pub)], log=lambda m: None)
    _nothing_pulled(tmp_path, "two")


def test_pull_with_a_bad_key_file_stops_before_any_request(hub: FakeHub, tiny: Path, tmp_path: Path) -> None:
    repo_id = new_repo(hub, tiny)
    (tmp_path / "bad.pub").write_text("not a key\n")
    start = len(hub.log)
    assert main(["pull", repo_id, str(tmp_path / "dest"), "--pubkey", str(tmp_path / "bad.pub")]) == 2
    assert main(["pull", repo_id, str(tmp_path / "dest"), "--pubkey", str(tmp_path / "missing.pub")]) == 2
    assert hub.log[start:] == [] and not (tmp_path / "dest").exists()


def test_validate_hub_reports_names_that_differ_only_in_case(hub: FakeHub, tiny: Path, tmp_path: Path) -> None:
    """LAY017 from the Hub's listing, as `validate` finds it on disk: a clone on macOS keeps one of the two."""
    reg = copy(tiny, tmp_path / "reg")
    state = next(reg.rglob("*.pth"))
    shutil.copy(state, state.with_name(state.name.upper()))
    resum(reg)
    local = [(f.code, f.path) for f in validate_registry(reg, use_cache=False).findings if f.code == "LAY017"]
    report = validate_hub(f"hf://{new_repo(hub, reg)}")
    assert local and [(f.code, f.path) for f in report.findings if f.code == "LAY017"] == local
