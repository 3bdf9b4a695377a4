"""Hub support against a Hub look-alike on 127.0.0.1 (tests/support/hub_server.py): huggingface_hub runs for real.

validate hf://, add-base --from-hub, push (gate, parent_commit, published files), pull (whole, one base).
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from hub_server import FakeHub, new_repo
from regtools import (
    MISS_A,
    STATE,
    TINY_ARCH,
    TINY_BASE,
    build_registry,
    edit_index,
    errors,
    git_publish,
    resum,
    state_train,
    write_state,
    write_tiny_base,
)

from rwkv_registry.cli.main import main
from rwkv_registry.core.errors import RefusedError, RegistryIOError, UsageError
from rwkv_registry.engine.validate import validate_registry
from rwkv_registry.fs.atomic import LOCK_NAME
from rwkv_registry.hub.commands import add_base_from_hub, pull_registry, push_registry, validate_hub
from rwkv_registry.store.ops import add_base, add_entry, read_base_architecture

pytestmark = pytest.mark.usefixtures("hub_env")  # every test talks to the Hub look-alike
COUNTER = iter(range(10**6))  # base repositories of add-base --from-hub, a fresh name each


def copy(root: Path, dest: Path) -> Path:
    shutil.copytree(root, dest, ignore=shutil.ignore_patterns(".rwkv-registry*"))
    return dest


OTHER_BASE = "rwkv7-tiny-20260401-ctx4096"


def with_other_base(tiny: Path, tmp_path: Path, *, state: bool = True) -> Path:
    """A copy of ``tiny`` with a second base, OTHER_BASE, holding one State (o1.pth) unless ``state`` is False."""
    reg = copy(tiny, tmp_path / "reg")
    add_base(reg, name=OTHER_BASE, source="BlinkDL/rwkv7-g1", sha256="7" * 64, size=1234, arch=dict(TINY_ARCH))
    if state:
        o1 = write_state(tmp_path / "src" / "o1.pth", seed=11)
        add_entry(reg, o1, base=OTHER_BASE, data_version="v1", train=state_train())
    return reg


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
    repo_id = f"BlinkDL/rwkv7-g1-{next(COUNTER)}"
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
    repo_id = f"BlinkDL/other-{next(COUNTER)}"
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
    reg, other = with_other_base(tiny, tmp_path), OTHER_BASE
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


def test_a_legacy_package_on_the_hub_is_reported_without_downloading_it(
    hub: FakeHub, tiny: Path, tmp_path: Path
) -> None:
    """A legacy two-file MiSS package (adapter.json + adapter.pth, the conformance writer's bytes) committed into
    the layout: hf:// says MIS021 as a local validate does, but names `pull` for the server's verdict, since a
    listing does not download its adapter.pth; the local copy gives the verdict."""
    from conformance.miss_adapter_cpp import export_input, trainer_targets
    from conformance.miss_tune_package import save_package

    reg = copy(tiny, tmp_path / "reg")
    ts = trainer_targets(TINY_ARCH["n_layer"], TINY_ARCH["n_embd"], TINY_ARCH["ffn_size"], 4)
    data = bytes(2 * sum(t.out * t.rank for t in ts))
    save_package(reg / f"{TINY_BASE}/miss/v2/old", export_input(4, 8.0, "ab" * 32, bf16=True), ts, data)
    local = [f for f in validate_registry(reg, use_cache=False).findings if f.code == "MIS021"]
    assert [f.path for f in local] == [f"{TINY_BASE}/miss/v2/old"]
    assert "the server would load it (content_version" in local[0].message
    report = validate_hub(f"hf://{new_repo(hub, reg)}")
    remote = [f for f in report.findings if f.code == "MIS021"]
    assert [f.path for f in remote] == [f"{TINY_BASE}/miss/v2/old"] and not report.ok
    assert "not downloaded here: `rwkv-registry pull` it" in remote[0].message
    assert "LAY004" not in {f.code for f in report.findings}


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

    reg, other = with_other_base(tiny, tmp_path), OTHER_BASE
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


# py's fixtures: the Hub look-alike, the environment pointing huggingface_hub at it (autouse), the
# tiny registry


def serve_other_bytes(hub: FakeHub, repo_id: str, path: str, data: bytes) -> None:
    """The Hub keeps listing ``path``'s sha256/blob id but serves ``data`` (a tampered CDN or proxy)."""
    blob = hub.repos[repo_id].commits[hub.head(repo_id)][path]
    hub.content[blob.sha256] = data


def test_small_lfs_file_served_with_other_bytes_is_refused(hub: FakeHub, tiny: Path, tmp_path: Path) -> None:
    """With `* filter=lfs`, train.json sits in LFS: its bytes are read and must also be the ones hashed.

    The listing's sha256 matches SHA256SUMS (and so the signature); the bytes served differ. Before the
    fix the validator read the served bytes but took their sha256 from the listing: a signed, tampered
    train.json validated clean.
    """
    from rwkv_registry.store.signing import generate_keypair, sign_registry

    reg = copy(tiny, tmp_path / "reg")
    (reg / ".gitattributes").write_text("* filter=lfs diff=lfs merge=lfs -text\n")
    resum(reg)
    key, pub, _ = generate_keypair(tmp_path / "k.key")
    sign_registry(reg, key)
    repo_id = new_repo(hub, reg)
    assert validate_hub(f"hf://{repo_id}", trusted_keys=[str(pub)]).ok
    train = (reg / TRAIN).read_bytes()
    tampered = train.replace(b"T08:00:00Z", b"T07:00:00Z", 1)  # passes every other rule
    assert tampered != train and len(tampered) == len(train)
    serve_other_bytes(hub, repo_id, TRAIN, tampered)
    with pytest.raises(RegistryIOError, match=r"train\.json") as e:
        validate_hub(f"hf://{repo_id}", trusted_keys=[str(pub)])
    assert hashlib.sha256(tampered).hexdigest()[:12] in e.value.message


def test_plain_git_file_served_with_other_bytes_is_refused(
    hub: FakeHub, tiny: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from rwkv_registry.cli.main import main

    repo_id = new_repo(hub, tiny)
    index = (tiny / "index.json").read_bytes()
    serve_other_bytes(hub, repo_id, "index.json", index.replace(b"rwkv7", b"RWKV7", 1))
    with pytest.raises(RegistryIOError, match=r"index\.json.*git blob id"):
        validate_hub(f"hf://{repo_id}")
    assert main(["validate", f"hf://{repo_id}"]) == 2  # an I/O error, not a finding, and no traceback
    err = capsys.readouterr().err
    assert "tree listing says" in err and "Traceback" not in err


def test_truncated_small_file_download_is_refused(hub: FakeHub, tiny: Path) -> None:
    repo_id = new_repo(hub, tiny)
    index = (tiny / "index.json").read_bytes()
    serve_other_bytes(hub, repo_id, "index.json", index[: len(index) // 2])
    with pytest.raises(RegistryIOError, match=r"index\.json.*bytes"):
        validate_hub(f"hf://{repo_id}")


# --- push: what is selected, what is protected ----------------------------------------------------------------


def quiet(message: str) -> None:
    pass


def test_push_uploads_a_plain_git_file_changed_at_the_same_size(hub: FakeHub, tiny: Path, tmp_path: Path) -> None:
    """README.md (its hand-written part) and SHA256SUMS keep their sizes: only the git blob id tells that they
    changed."""
    reg = copy(tiny, tmp_path / "reg")
    repo_id = new_repo(hub, reg)
    readme = reg / "README.md"
    readme.write_bytes(readme.read_bytes().replace(b"Light weights", b"Small weights", 1))
    resum(reg)
    assert validate_registry(reg, use_cache=False).ok
    result = push_registry(reg, repo_id, log=quiet)
    assert sorted(result.uploaded) == ["README.md", "SHA256SUMS"]
    assert hub.files(repo_id)["README.md"] == readme.read_bytes()


def test_push_from_a_git_clone_never_publishes_dot_git(hub: FakeHub, tiny: Path, tmp_path: Path) -> None:
    import subprocess

    reg = copy(tiny, tmp_path / "reg")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"]
    subprocess.run([*git, "init", "-q", str(reg)], check=True)
    subprocess.run([*git, "-C", str(reg), "add", "-A"], check=True)
    subprocess.run([*git, "-C", str(reg), "commit", "-q", "-m", "registry"], check=True)
    assert (reg / ".git" / "HEAD").is_file()
    repo_id = new_repo(hub)
    result = push_registry(reg, repo_id, log=quiet)
    assert result.commit is not None
    assert not [p for p in hub.files(repo_id) if p.split("/")[0] == ".git"]


def _frozen_on_the_hub_only(hub: FakeHub, tiny: Path, tmp_path: Path) -> tuple[Path, str, str]:
    """A copy of ``tiny`` pushed, then every base frozen by a commit on the Hub alone: (copy, repo, head)."""
    reg = copy(tiny, tmp_path / "reg")
    repo_id = new_repo(hub, reg)
    index = json.loads((reg / "index.json").read_text())
    for b in index["bases"]:
        b["status"] = "frozen"
    hub.commit_files(repo_id, {"index.json": json.dumps(index, indent=2).encode()})
    return reg, repo_id, hub.head(repo_id)


def test_push_honours_a_base_frozen_in_the_remote_index_only(hub: FakeHub, tiny: Path, tmp_path: Path) -> None:
    """The local index says active, the Hub's says frozen: new weights under that base are refused (GIT003)."""
    from regtools import state_train, write_state

    from rwkv_registry.store.ops import add_entry

    reg, repo_id, head = _frozen_on_the_hub_only(hub, tiny, tmp_path)
    new = add_entry(
        reg, write_state(tmp_path / "s3.pth", seed=3), base=TINY_BASE, data_version="v3", train=state_train("v3")
    )
    assert validate_registry(reg, use_cache=False).ok
    with pytest.raises(
        RefusedError, match=f"{new['path']} would be added under the frozen base {TINY_BASE} \\(GIT003\\)"
    ):
        push_registry(reg, repo_id, log=quiet)
    assert hub.head(repo_id) == head


def test_push_deletes_a_stray_root_file_even_when_nothing_else_changed(
    hub: FakeHub, tiny: Path, tmp_path: Path
) -> None:
    reg = copy(tiny, tmp_path / "reg")
    repo_id = new_repo(hub, reg)
    hub.commit_files(repo_id, {"LICENSE": b"added on the Hub\n"})
    result = push_registry(reg, repo_id, log=quiet)
    assert result.uploaded == [] and result.deleted == ["LICENSE"] and result.commit == hub.head(repo_id)
    assert "LICENSE" not in hub.files(repo_id)


def _token_only_to_the_hub(requests: list[dict]) -> list[dict]:
    """Assert that ``requests`` read both the Hub's API and the storage host, and sent the token to the Hub only;
    the storage host's requests."""
    cdn = [r for r in requests if r["server"] == "cdn"]
    api = [r for r in requests if r["server"] == "api" and "/resolve/" in r["path"]]
    assert cdn and api
    assert all(r["authorization"] is None for r in cdn)
    assert all(r["authorization"] == "Bearer hf_test_token_for_the_local_server" for r in api)
    return cdn


def test_push_sends_the_token_to_the_hub_and_never_to_the_storage(hub: FakeHub, tiny: Path, tmp_path: Path) -> None:
    repo_id = new_repo(hub, tiny)
    start = len(hub.log)
    assert validate_hub(f"hf://{repo_id}").ok
    _token_only_to_the_hub(hub.log[start:])


# --- pull -----------------------------------------------------------------------------------------------------


def test_pull_into_a_non_empty_directory_is_refused_before_any_request(
    hub: FakeHub, tiny: Path, tmp_path: Path
) -> None:
    repo_id = new_repo(hub, tiny)
    dest = tmp_path / "dest"
    dest.mkdir()
    (dest / "mine.txt").write_text("keep me")
    start = len(hub.log)
    with pytest.raises(UsageError, match="exists and is not empty"):
        pull_registry(repo_id, dest, log=quiet)
    assert hub.log[start:] == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dest"] and (dest / "mine.txt").read_text() == "keep me"


# --- a hostile Hub: unsafe paths, lying sizes and ranges, truncated answers ------------------------------------


@pytest.mark.parametrize(
    "bad",
    [
        *("../evil.txt", "a/../../evil.txt", "/etc/evil", "a\\..\\evil", "a//b", "./x"),
        # a .git folder: before the fix pull wrote it into PATH, and `git status` there ran its core.fsmonitor
        *(".git/config", ".GIT/config", "sub/.git/config", ".git./config", "git~1/config"),
    ],
)
def test_unsafe_paths_in_the_tree_listing_are_refused(hub: FakeHub, tiny: Path, tmp_path: Path, bad: str) -> None:
    repo_id = new_repo(hub, tiny)
    hub.commit_files(repo_id, {bad: b"x"})
    with pytest.raises(RegistryIOError, match="unsafe path"):
        validate_hub(f"hf://{repo_id}")
    with pytest.raises(RegistryIOError, match="unsafe path"):
        pull_registry(repo_id, tmp_path / "dest", log=quiet)
    assert list(tmp_path.iterdir()) == [] and not (tmp_path.parent / "evil.txt").exists()


def wrong_answer(
    hub: FakeHub, repo_id: str, capsys: pytest.CaptureFixture[str], path: str | None = None
) -> tuple[Any, str]:
    """``validate hf://repo_id`` raises the error of an answer other than the request (a remote problem: before, a
    LAY010 finding "cannot read" whose hint is about local permissions) naming ``path`` (None: any weight file, the
    first of those read in parallel to get it); the CLI says it with exit 2. Returns the error and the CLI's
    stderr."""
    from rwkv_registry.cli.main import main
    from rwkv_registry.hub.transport import WRONG_ANSWER_HINT, WrongAnswerError

    with pytest.raises(WrongAnswerError) as e:
        validate_hub(f"hf://{repo_id}")
    path = path or e.value.path
    assert path.endswith(".pth") and e.value.path == path and "?" not in e.value.url
    assert e.value.message.startswith(f"{repo_id}@{hub.head(repo_id)[:12]}: {path}: "), e.value.message
    assert e.value.hint == WRONG_ANSWER_HINT or "serves other content" in e.value.hint
    assert "permission" not in e.value.hint.lower()
    capsys.readouterr()
    assert main(["validate", f"hf://{repo_id}"]) == 2
    err = capsys.readouterr().err
    assert ".pth: " in err and "LAY010" not in err and "Traceback" not in err, err
    return e.value, err


def signed_storage_urls(
    server: str, method: str, path: str, status: int, body: bytes, headers: dict[str, str]
) -> tuple:
    """The Hub's redirects point at storage URLs with a signature in their query string, as a CDN's do."""
    if server == "api" and status == 302 and "Location" in headers:
        headers["Location"] += "?X-Amz-Signature=s3cr3t-signature&Expires=1"
    return status, body, headers


def test_a_resolved_size_that_disagrees_with_the_listing_is_a_remote_error(
    hub: FakeHub, tiny: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo_id = new_repo(hub, tiny)
    size = (tiny / STATE).stat().st_size

    def lie(server: str, method: str, path: str, status: int, body: bytes, headers: dict[str, str]) -> tuple:
        if server == "api" and "/resolve/" in path and path.endswith("/s1.pth"):
            headers["X-Linked-Size"] = str(size + 1)
        return status, body, headers

    with hub.rewriting(lie):
        error, _ = wrong_answer(hub, repo_id, capsys, STATE)
    assert f"{size} bytes in the Hub's tree listing" in error.message
    assert f"the server answered {size + 1} bytes when resolved" in error.message
    assert f"/resolve/{hub.head(repo_id)}/{STATE}" in error.message  # the URL asked


def _content_range(shift: tuple[int, int, int]) -> object:
    def rewrite(server: str, method: str, path: str, status: int, body: bytes, headers: dict[str, str]) -> tuple:
        signed_storage_urls(server, method, path, status, body, headers)
        if server == "cdn" and status == 206 and "Content-Range" in headers:
            a, b, total = (int(x) for x in headers["Content-Range"].removeprefix("bytes ").replace("/", "-").split("-"))
            headers["Content-Range"] = f"bytes {a + shift[0]}-{b + shift[1]}/{total + shift[2]}"
        return status, body, headers

    return rewrite


@pytest.mark.parametrize(
    ("shift", "message"),
    [
        ((1, 1, 0), "which does not answer bytes"),  # another window of the file
        ((0, 1, 0), "which does not answer bytes"),  # the end is off by one
        ((0, 0, 1), "the file holds"),  # the storage's file is not the listed one
    ],
)
def test_a_content_range_that_does_not_answer_the_request_is_a_remote_error(
    hub: FakeHub, tiny: Path, shift: tuple[int, int, int], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The file, the storage URL without its signed query, what was asked and what came; no LAY010."""
    repo_id = new_repo(hub, tiny)
    with hub.rewriting(_content_range(shift)):
        error, err = wrong_answer(hub, repo_id, capsys)
    assert message in error.message and "Content-Range 'bytes " in error.message
    assert "asked for bytes 0-" in error.message and " of " in error.message
    assert f"{hub.storage}/blobs/" in error.message
    assert "s3cr3t" not in error.message and "s3cr3t" not in err


@pytest.mark.parametrize("extra", [-1, 8 * 1024 * 1024])
def test_a_range_answer_of_the_wrong_length_is_a_remote_error(
    hub: FakeHub, tiny: Path, extra: int, capsys: pytest.CaptureFixture[str]
) -> None:
    """Short by one byte, or megabytes too long: an error naming what was asked and what came, and a long answer is
    not read to its end."""
    from rwkv_registry.hub.remote import connect
    from rwkv_registry.hub.transport import WrongAnswerError

    repo_id = new_repo(hub, tiny)

    def rewrite(server: str, method: str, path: str, status: int, body: bytes, headers: dict[str, str]) -> tuple:
        if server == "cdn" and status == 206 and method == "GET":
            body = body[:extra] if extra < 0 else body + b"\0" * extra
            headers["Content-Length"] = str(len(body))
        return status, body, headers

    with hub.rewriting(rewrite):
        error, _ = wrong_answer(hub, repo_id, capsys)
        remote = connect(repo_id)
        with pytest.raises(WrongAnswerError, match=r"asked for bytes \d+-\d+"):
            remote.open(STATE).prefetch_zip_metadata()
    if extra < 0:
        assert "bytes), the server answered " in error.message and "asked for bytes 0-" in error.message
    else:
        assert "more than the" in error.message and "bytes asked for (cut off)" in error.message
        assert remote.fetcher.bytes_fetched < extra  # cut off early, not read to the end


def test_a_storage_ignoring_range_is_read_whole_on_the_small_registry(hub: FakeHub, tiny: Path) -> None:
    """The non-slow twin of test_hub's demo-sized check: a 200 with the whole file answers no Range request. A
    weight file of at most WHOLE_READ_BYTES whose sha256 is listed is then read whole, once, checked against the
    listing, and validated as usual (before: LAY010 "cannot read" for each, with the hint about local
    permissions)."""
    repo_id = new_repo(hub, tiny)
    clean = validate_hub(f"hf://{repo_id}")
    hub.ignore_range = True
    hub.log.clear()
    try:
        report = validate_hub(f"hf://{repo_id}")
    finally:
        hub.ignore_range = False
    assert [(f.code, f.path) for f in report.findings] == [(f.code, f.path) for f in clean.findings]  # type: ignore[attr-defined]
    tree = hub.repos[repo_id].commits[hub.head(repo_id)]
    weights = {b.sha256 for r, b in tree.items() if r.endswith(".pth") and b.lfs}
    assert report.stats["whole_reads"] == len(weights) > 0
    whole = [e["path"].rsplit("/", 1)[-1] for e in hub.log if e["server"] == "cdn" and e["range"] is None]
    assert sorted(whole) == sorted(weights)  # each read whole exactly once, however many ranges were asked


def test_a_storage_ignoring_range_serving_other_bytes_is_refused(hub: FakeHub, tiny: Path) -> None:
    """Read whole because the storage ignores Range, the bytes must still be the listing's (size and sha256)."""
    repo_id = new_repo(hub, tiny)
    data = (tiny / STATE).read_bytes()
    serve_other_bytes(hub, repo_id, STATE, data[:-1] + bytes([data[-1] ^ 1]))
    hub.ignore_range = True
    try:
        with pytest.raises(RegistryIOError, match="read whole") as e:
            validate_hub(f"hf://{repo_id}")
    finally:
        hub.ignore_range = False
    assert e.value.message.startswith(f"{repo_id}@{hub.head(repo_id)[:12]}: {STATE}: ")
    assert "whose sha256 is" in e.value.message and "tree listing says" in e.value.message


def test_a_storage_ignoring_range_on_a_large_file_is_a_remote_error(
    hub: FakeHub, tiny: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A file larger than WHOLE_READ_BYTES is never downloaded by accident: the error says what was asked and what
    came, exit 2, no finding."""
    from rwkv_registry.hub import transport as _hub_http
    from rwkv_registry.hub.transport import RangeIgnored

    monkeypatch.setattr(_hub_http, "WHOLE_READ_BYTES", 1024)
    repo_id = new_repo(hub, tiny)
    hub.ignore_range = True
    hub.log.clear()
    try:
        error, _ = wrong_answer(hub, repo_id, capsys)
    finally:
        hub.ignore_range = False
    assert isinstance(error, RangeIgnored)
    assert "it ignored the Range header" in error.message and "HTTP 200 with the whole file" in error.message
    assert all(e["range"] for e in hub.log if e["server"] == "cdn")  # never a request for the whole file


def test_a_storage_error_status_is_a_hub_error(hub: FakeHub, tiny: Path) -> None:
    """An error status of the storage is no finding against the repository (before: LAY010, "cannot read", whose fix
    is local permissions) but an error naming the status: tests/test_hub_remote_errors.py for each status."""
    from rwkv_registry.hub.transport import RemoteStatusError

    repo_id = new_repo(hub, tiny)

    def forbid(server: str, method: str, path: str, status: int, body: bytes, headers: dict[str, str]) -> tuple:
        if server == "cdn":
            return 403, b"AccessDenied", {"Content-Length": "12"}
        return status, body, headers

    with hub.rewriting(forbid), pytest.raises(RemoteStatusError) as e:
        validate_hub(f"hf://{repo_id}")
    assert e.value.status == 403 and "HTTP 403" in e.value.message  # the status, not a bad range answer
    assert e.value.path.endswith(".pth")


def test_a_truncated_weight_download_leaves_no_pull_behind(hub: FakeHub, tiny: Path, tmp_path: Path) -> None:
    """The storage hangs up half-way through a weight: pull fails with exit 2, leaves no PATH and no partial file;
    only complete files are kept beside PATH, for the next pull to resume from."""
    repo_id = new_repo(hub, tiny)

    def hang_up(server: str, method: str, path: str, status: int, body: bytes, headers: dict[str, str]) -> tuple:
        if server == "cdn" and method == "GET" and status == 200:
            return status, body[: len(body) // 2], headers  # Content-Length still promises the whole file
        return status, body, headers

    with hub.rewriting(hang_up), pytest.raises(RegistryIOError):
        pull_registry(repo_id, tmp_path / "dest", log=quiet)
    assert not (tmp_path / "dest").exists()
    files = hub.files(repo_id)
    for staging in tmp_path.iterdir():  # only whole files of the repository: nothing cut short
        for p in staging.rglob("*"):
            assert p.is_dir() or p.read_bytes() == files[p.relative_to(staging).as_posix()]
    assert pull_registry(repo_id, tmp_path / "dest", log=quiet).ok
    assert [p.name for p in tmp_path.iterdir()] == ["dest"]


def _tampered(data: bytes, how: str) -> bytes:
    if how == "same size":
        flipped = bytearray(data)
        flipped[-100] ^= 0xFF
        return bytes(flipped)
    return data[: len(data) // 2]


@pytest.mark.parametrize("how", ["same size", "truncated"])
@pytest.mark.parametrize("path", [STATE, "index.json", TRAIN])  # in LFS; plain git files
def test_a_pulled_file_other_than_the_listing_is_refused_and_nothing_is_kept(
    hub: FakeHub, tiny: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], how: str, path: str
) -> None:
    """Before the fix pull kept whatever snapshot_download received (huggingface_hub checks only the size the
    resolve answer gives): the files landed in PATH and only the validation afterwards (exit 1) spoke of them."""
    from rwkv_registry.cli.main import main

    repo_id = new_repo(hub, tiny)
    entry = hub.repos[repo_id].commits[hub.head(repo_id)][path]
    assert entry.lfs == (path == STATE)
    served = _tampered((tiny / path).read_bytes(), how)
    serve_other_bytes(hub, repo_id, path, served)

    def consistent_size(server: str, method: str, url: str, status: int, body: bytes, headers: dict[str, str]) -> tuple:
        # the storage's own size answer agrees with what it serves (a tampered storage, not a broken transfer)
        if server == "api" and "/resolve/" in url and url.endswith(f"/{path}") and "X-Linked-Size" in headers:
            headers["X-Linked-Size"] = str(len(served))
        return status, body, headers

    dest = tmp_path / "dest"
    if how == "truncated":  # an existing empty PATH stays as it was
        dest.mkdir()
    before = sorted(tmp_path.iterdir())
    with hub.rewriting(consistent_size):
        with pytest.raises(RegistryIOError) as e:
            pull_registry(repo_id, dest, log=quiet)
        message = e.value.message
        assert message.startswith("pull refused: ") and f"{path}: the Hub served {len(served)} bytes" in message
        if how == "truncated":
            assert f"its tree listing says {entry.size} bytes" in message
        else:
            assert ("sha256" if entry.lfs else "git blob id") in message and "its tree listing says" in message
        assert f"Nothing was written to {dest}" in e.value.hint
        assert sorted(tmp_path.iterdir()) == before  # no PATH, no staging directory (an empty PATH stays empty)
        assert not dest.exists() or list(dest.iterdir()) == []
        assert main(["pull", repo_id, str(dest)]) == 2
    err = capsys.readouterr().err
    assert path in err and "tree listing says" in err and "Traceback" not in err
    assert sorted(tmp_path.iterdir()) == before


def test_a_download_holding_a_file_the_listing_does_not_name_is_refused(
    hub: FakeHub, tiny: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """snapshot_download lists the repository again itself: a second listing that differs from the first one
    (an extra file, a missing one) is refused, and nothing is kept."""
    import huggingface_hub

    repo_id = new_repo(hub, tiny)
    real = huggingface_hub.snapshot_download
    change: list[str] = []

    def second_listing_differs(*args: object, local_dir: Path, **kwargs: object) -> str:
        out = real(*args, local_dir=local_dir, **kwargs)  # type: ignore[arg-type]
        if change == ["extra"]:
            (Path(local_dir) / f"{TINY_BASE}/state/v1/s2.pth").write_bytes(b"not listed")
        else:
            (Path(local_dir) / STATE).unlink()
        return out

    monkeypatch.setattr(huggingface_hub, "snapshot_download", second_listing_differs)
    change.append("extra")
    with pytest.raises(RegistryIOError, match=r"holds .*/s2\.pth, which is not among the files"):
        pull_registry(repo_id, tmp_path / "dest", log=quiet)
    assert list(tmp_path.iterdir()) == []
    change[0] = "missing"
    with pytest.raises(RegistryIOError, match=r"s1\.pth is in the Hub's tree listing but was not downloaded"):
        pull_registry(repo_id, tmp_path / "dest", log=quiet)
    assert list(tmp_path.iterdir()) == []


def test_pull_one_base_brings_every_small_file_even_in_lfs(hub: FakeHub, tiny: Path, tmp_path: Path) -> None:
    """With `* filter=lfs` the other base's train.json sits in LFS too: only weights stay on the Hub."""
    reg, other = with_other_base(tiny, tmp_path), OTHER_BASE
    (reg / ".gitattributes").write_text("* filter=lfs diff=lfs merge=lfs -text\n")
    resum(reg)
    repo_id = new_repo(hub, reg)
    assert hub.repos[repo_id].commits[hub.head(repo_id)][TRAIN].lfs
    report = pull_registry(repo_id, tmp_path / "one", base=other, log=quiet)
    assert report.ok, [(f.code, f.path) for f in report.findings if str(f.severity) == "error"]
    assert (tmp_path / "one" / TRAIN).read_bytes() == (reg / TRAIN).read_bytes()
    assert not (tmp_path / "one" / STATE).exists()


def test_pull_into_the_current_directory(
    hub: FakeHub, tiny: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`mkdir reg && cd reg && rwkv-registry pull OWNER/REPO .`: before the fix the staging directory was
    `./..rwkv-registry-pull-PID`, inside the destination, and the final move failed after the download."""
    repo_id = new_repo(hub, tiny)
    dest = tmp_path / "reg"
    dest.mkdir()
    inode = dest.stat().st_ino
    monkeypatch.chdir(dest)
    report = pull_registry(repo_id, ".", log=quiet)
    assert report.ok and report.target == "."
    assert dest.stat().st_ino == inode  # the same directory (the shell's cwd), now holding the registry
    assert sorted(p.name for p in tmp_path.iterdir()) == ["reg"]
    for rel, data in hub.files(repo_id).items():
        assert (dest / rel).read_bytes() == data
    assert not [p for p in dest.iterdir() if "rwkv-registry-pull" in p.name]


def test_pull_downloads_the_commit_it_listed_even_if_the_branch_moves(
    hub: FakeHub, tiny: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import huggingface_hub

    repo_id = new_repo(hub, tiny)
    listed = hub.head(repo_id)
    real = huggingface_hub.snapshot_download

    def someone_pushes_first(*args: object, **kwargs: object) -> str:
        hub.commit_files(repo_id, {"LICENSE": b"pushed during the pull\n"})
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(huggingface_hub, "snapshot_download", someone_pushes_first)
    report = pull_registry(repo_id, tmp_path / "dest", log=quiet)
    assert hub.head(repo_id) != listed
    assert report.ok and not (tmp_path / "dest" / "LICENSE").exists()


@pytest.mark.parametrize("repo_id", ["a..b/c", "a/b..c", "a--b/c", "a/b--c", "a/b/c", "-a/b", "a/"])
def test_repository_ids_the_hub_would_refuse_are_usage_errors(repo_id: str) -> None:
    from rwkv_registry.hub.remote import check_repo_id

    with pytest.raises(UsageError, match="is not a Hugging Face repository id"):
        check_repo_id(repo_id)
    assert check_repo_id("No-22/rwkv-agent-weights.v2_x") == "No-22/rwkv-agent-weights.v2_x"


def test_no_write_can_start_while_a_push_uploads(hub: FakeHub, tiny: Path, tmp_path: Path) -> None:
    """Before the fix push took no lock: an `add` started after its validation could change the files
    it was uploading, and a tree that never validated went to the Hub."""
    from rwkv_registry.core.errors import LockedError
    from rwkv_registry.fs.atomic import registry_lock

    reg = copy(tiny, tmp_path / "reg")
    repo_id = new_repo(hub)
    seen: list[str] = []

    def a_writer_tries(repo: str) -> None:
        try:
            with registry_lock(reg, timeout=0.2):
                seen.append("a write got in")
        except LockedError:
            seen.append("held off")

    hub.before_commit = a_writer_tries
    try:
        result = push_registry(reg, repo_id, log=quiet)
    finally:
        hub.before_commit = None
    assert seen == ["held off"] and result.commit == hub.head(repo_id)
    with registry_lock(reg, timeout=0.2):  # released once the push is over
        pass


def test_a_push_waits_for_a_write_in_progress(hub: FakeHub, tiny: Path, tmp_path: Path) -> None:
    """A writer holds the lock: the push waits for it instead of refusing (LAY013) or racing it."""
    import multiprocessing
    import time

    from regtools import hold_lock

    reg = copy(tiny, tmp_path / "reg")
    repo_id = new_repo(hub)
    ctx = multiprocessing.get_context("spawn")
    ready = ctx.Event()
    holder = ctx.Process(target=hold_lock, args=(str(reg), ready, 1.5))
    holder.start()
    try:
        assert ready.wait(30)
        t0 = time.monotonic()
        result = push_registry(reg, repo_id, log=quiet)
        waited = time.monotonic() - t0
    finally:
        holder.join(30)
    assert result.commit == hub.head(repo_id) and waited >= 0.5


def _push_once_after(hub: FakeHub, repo_id: str, marker: str) -> object:
    """A rewrite hook that commits a LICENSE onto main right after the first API answer whose path
    contains ``marker`` (``info``: the repo info answer): someone pushes while we read."""
    done: list[bool] = []

    def rewrite(server: str, method: str, path: str, status: int, body: bytes, headers: dict[str, str]) -> tuple:
        info = path == f"/api/models/{repo_id}" or "/revision/" in path  # repo_info: the revision resolved
        if not done and server == "api" and (info if marker == "info" else marker in path):
            done.append(True)
            hub.commit_files(repo_id, {"LICENSE": b"pushed meanwhile\n"})
        return status, body, headers

    return rewrite


@pytest.mark.parametrize("marker", ["info", "/tree/"])
def test_validate_hf_reads_one_commit_while_the_branch_moves(hub: FakeHub, tiny: Path, marker: str) -> None:
    """The branch moves after the revision is resolved (or after the listing): everything read is of the
    commit resolved first, and the report names it."""
    repo_id = new_repo(hub, tiny)
    first = hub.head(repo_id)
    with hub.rewriting(_push_once_after(hub, repo_id, marker)):
        report = validate_hub(f"hf://{repo_id}")
    assert hub.head(repo_id) != first
    assert report.ok, [(f.code, f.path) for f in report.findings if str(f.severity) == "error"]
    assert report.target == f"hf://{repo_id}@{first}"


@pytest.mark.parametrize("target", ["hf://a/b@", "a/b", "hf://a", "hf://a/b/c"])
def test_malformed_hf_targets_are_usage_errors(target: str) -> None:
    from rwkv_registry.hub.remote import parse_hf_target

    with pytest.raises(UsageError):
        parse_hf_target(target)
    assert parse_hf_target("hf://models/a/b@v1") == ("a/b", "v1")


def test_push_never_unfreezes_a_base(hub: FakeHub, tiny: Path, tmp_path: Path) -> None:
    """Before the fix a push whose only change was index.json setting a frozen base back to active went
    through, and the next push could then change files under that base."""
    reg, repo_id, head = _frozen_on_the_hub_only(hub, tiny, tmp_path)
    with pytest.raises(RefusedError, match=f"index.json would unfreeze the base {TINY_BASE}"):
        push_registry(reg, repo_id, log=quiet)
    assert hub.head(repo_id) == head

    from rwkv_registry.store.ops import write_readme

    (reg / "index.json").write_bytes(hub.files(repo_id)["index.json"])  # frozen here too: it may go ahead
    write_readme(reg)
    resum(reg)
    assert push_registry(reg, repo_id, log=quiet).commit == hub.head(repo_id) != head


def test_push_never_changes_a_published_base_s_identity(hub: FakeHub, tmp_path: Path) -> None:
    """GIT007 on the Hub: before the fix a push whose only change was index.json giving a published base another
    sha256 went through, and the State under it (no fingerprint: MIS013 cannot see it) then claimed a base file
    it was not trained on."""

    from rwkv_registry.store.ops import write_readme

    reg = build_registry(tmp_path / "reg", tmp_path, with_miss=False)
    repo_id = new_repo(hub, reg)
    head = hub.head(repo_id)
    index = json.loads((reg / "index.json").read_text())
    old = index["bases"][0]["sha256"]
    index["bases"][0]["sha256"] = "1" * 64
    (reg / "index.json").write_text(json.dumps(index, indent=2))
    resum(reg)
    write_readme(reg)
    with pytest.raises(
        RefusedError,
        match=f"index.json would change the base {TINY_BASE} published on the Hub: sha256 '{old}' → '{'1' * 64}'",
    ):
        push_registry(reg, repo_id, log=quiet)
    assert hub.head(repo_id) == head


@pytest.mark.parametrize("broken", [b'{"bases": [', b"[]"])
def test_push_refuses_when_the_hubs_index_cannot_be_read(
    hub: FakeHub, tiny: Path, tmp_path: Path, broken: bytes
) -> None:
    """Before the fix an unreadable index.json on the Hub counted as one without bases: which of them were
    frozen there was forgotten, and a push could change files under a base frozen on the Hub."""
    reg, repo_id, _ = _frozen_on_the_hub_only(hub, tiny, tmp_path)
    hub.commit_files(repo_id, {"index.json": broken})
    head = hub.head(repo_id)
    train = reg / TRAIN
    train.write_bytes(train.read_bytes().replace(b"T08:00:00Z", b"T07:00:00Z", 1))
    resum(reg)
    with pytest.raises(
        RefusedError, match=r"the Hub's index\.json cannot be read .* which of its bases are frozen"
    ) as e:
        push_registry(reg, repo_id, log=quiet)
    assert e.value.path == "index.json" and "hf upload" in e.value.hint
    assert hub.head(repo_id) == head
    with pytest.raises(RefusedError, match=r"pull --base refused: .*index\.json cannot be read"):
        pull_registry(repo_id, tmp_path / "one", base=TINY_BASE, log=quiet)
    assert not (tmp_path / "one").exists()


def test_a_failed_move_into_an_existing_directory_leaves_it_empty(
    hub: FakeHub, tiny: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The second entry cannot be moved into PATH: the first goes back, PATH stays empty, and the
    message names the staging directory that holds the whole download."""
    repo_id = new_repo(hub, tiny)
    dest = tmp_path / "dest"
    dest.mkdir()
    real = Path.rename
    calls: list[Path] = []

    def flaky(self: Path, target: object) -> Path:
        if Path(str(target)).parent == dest:
            calls.append(self)
            if len(calls) == 2:
                raise OSError(28, "No space left on device")
        return real(self, target)  # type: ignore[arg-type]

    monkeypatch.setattr(Path, "rename", flaky)
    with pytest.raises(RegistryIOError, match="cannot move the pulled files") as e:
        pull_registry(repo_id, dest, log=quiet)
    monkeypatch.setattr(Path, "rename", real)
    assert list(dest.iterdir()) == []
    (staging,) = [p for p in tmp_path.iterdir() if p != dest]
    assert str(staging) in e.value.hint
    assert {p.relative_to(staging).as_posix() for p in staging.rglob("*") if p.is_file()} == set(hub.files(repo_id))


def test_an_empty_remote_weight_reads_as_the_local_one_does(hub: FakeHub, tiny: Path, tmp_path: Path) -> None:
    reg = copy(tiny, tmp_path / "reg")
    (reg / STATE).write_bytes(b"")
    local = [(f.code, f.message) for f in validate_registry(reg, use_cache=False).findings if f.path == STATE]
    repo_id = new_repo(hub, reg)
    assert hub.repos[repo_id].commits[hub.head(repo_id)][STATE].lfs
    remote = [(f.code, f.message) for f in validate_hub(f"hf://{repo_id}").findings if f.path == STATE]
    assert ("PTH001", "the file is empty") in remote
    assert [c for c, _ in remote if c.startswith("PTH")] == [c for c, _ in local if c.startswith("PTH")]


def test_full_downloads_are_deleted_once_read(hub: FakeHub, tiny: Path, tmp_path: Path) -> None:
    """--full downloads each MiSS file into the work directory and deletes it once read (disk use stays
    one file per thread, not the sum of all adapters)."""
    from rwkv_registry.hub.commands import hub_validator
    from rwkv_registry.hub.remote import connect

    repo_id = new_repo(hub, tiny)
    work = tmp_path / "work"
    v = hub_validator(connect(repo_id), tmp_path / "mirror", full=True, workdir=work)
    v.run()
    assert not [f for f in v.findings if str(f.severity) == "error"]
    assert v.stats["bytes_hashed"] == sum(p.stat().st_size for p in tiny.rglob("adapter-final.pth"))
    assert work.is_dir() and list(work.iterdir()) == []


def test_weights_stored_in_plain_git_are_read_whole(hub: FakeHub, tiny: Path, tmp_path: Path) -> None:
    """.gitattributes without filter=lfs: the Hub keeps the (small) weights in git, without an LFS sha256;
    they are downloaded and read like local files, so the findings are the local ones (LFS002)."""
    reg = copy(tiny, tmp_path / "reg")
    (reg / ".gitattributes").write_text("# nothing routed to LFS\n")
    resum(reg)
    repo_id = new_repo(hub, reg)
    assert not hub.repos[repo_id].commits[hub.head(repo_id)][STATE].lfs
    local = validate_registry(reg, use_cache=False)
    remote = validate_hub(f"hf://{repo_id}")
    assert "LFS002" in errors(remote)
    assert errors(remote) == [c for c in errors(local) if not c.startswith("GIT")]


def test_a_path_listed_as_file_and_folder_is_refused(hub: FakeHub, tiny: Path, tmp_path: Path) -> None:
    """Before the fix the mirror's write failed (IsADirectoryError) and the message blamed the network
    ('cannot reach ...')."""
    repo_id = new_repo(hub, tiny)
    hub.commit_files(repo_id, {"LICENSE": b"x", "LICENSE/inside": b"y"})
    with pytest.raises(RegistryIOError, match="'LICENSE' both as a file and as a folder"):
        validate_hub(f"hf://{repo_id}")
    with pytest.raises(RegistryIOError, match="both as a file and as a folder"):
        pull_registry(repo_id, tmp_path / "dest", log=quiet)
    assert list(tmp_path.iterdir()) == []


def test_trouble_while_walking_is_an_error_never_a_traceback(
    hub: FakeHub, tiny: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rwkv_registry.hub.commands import HubSnapshot

    repo_id = new_repo(hub, tiny)

    def full_disk(self: object, findings: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(HubSnapshot, "walk", full_disk)
    with pytest.raises(RegistryIOError, match="No space left on device"):
        validate_hub(f"hf://{repo_id}")


def test_pull_refuses_two_revisions(
    hub: FakeHub, tiny: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from rwkv_registry.cli.main import main

    repo_id = new_repo(hub, tiny)
    assert main(["pull", f"hf://{repo_id}@main", str(tmp_path / "d"), "--revision", "other"]) == 2
    assert "name two revisions" in capsys.readouterr().err
    assert main(["pull", f"hf://{repo_id}@main", str(tmp_path / "d"), "--revision", "main"]) == 0


def test_a_non_weight_lfs_file_too_big_to_fetch_is_checked_by_its_metadata(
    hub: FakeHub, tiny: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An LFS file over the small-file bound is not downloaded: its listed sha256 still meets SHA256SUMS."""
    import rwkv_registry.hub.commands as hub_module

    reg = copy(tiny, tmp_path / "reg")
    (reg / ".gitattributes").write_text("*.json filter=lfs diff=lfs merge=lfs -text\n*.pth filter=lfs -text\n")
    resum(reg)
    repo_id = new_repo(hub, reg)
    hub.set_lfs_sha256(repo_id, TRAIN, "ab" * 32)  # the Hub's metadata disagrees with SHA256SUMS
    monkeypatch.setattr(hub_module, "MAX_TEXT_BYTES", 1)  # every LFS file is "big": none is downloaded
    report = validate_hub(f"hf://{repo_id}")
    assert any(f.code == "HSH006" and f.path == TRAIN and "ab" * 32 in f.message for f in report.findings)


# --- add-base --from-hub ------------------------------------------------------------------------------------


@pytest.fixture
def base_on_hub(hub: FakeHub, tmp_path: Path) -> tuple[str, str, bytes]:
    from regtools import write_tiny_base

    name = "rwkv7-tiny-20260301-ctx4096"
    data = write_tiny_base(tmp_path / f"{name}.pth", vocab=256).read_bytes()
    repo_id = f"BlinkDL/rwkv7-g1-m{len(hub.repos)}"
    hub.create_repo(repo_id, {f"sub/{name}.pth": data, f"sub/{name}-other.pth": data + b"\0"})
    return repo_id, f"sub/{name}.pth", data


def test_from_hub_takes_the_paths_info_of_the_file_asked_for(
    hub: FakeHub, base_on_hub: tuple[str, str, bytes], tmp_path: Path
) -> None:
    from rwkv_registry.hub.commands import add_base_from_hub
    from rwkv_registry.store.ops import init_registry

    repo_id, file, _ = base_on_hub
    reg = tmp_path / "reg"
    init_registry(reg)

    def other_file(server: str, method: str, path: str, status: int, body: bytes, headers: dict[str, str]) -> tuple:
        if server == "api" and "/paths-info/" in path:
            body = body.replace(file.encode(), file.replace(".pth", "-other.pth").encode())
            headers["Content-Length"] = str(len(body))
        return status, body, headers

    with hub.rewriting(other_file), pytest.raises(UsageError, match="no file"):
        add_base_from_hub(reg, f"{repo_id}/{file}")
    assert json.loads((reg / "index.json").read_text())["bases"] == []


def test_from_hub_reads_the_commit_it_records(
    hub: FakeHub, base_on_hub: tuple[str, str, bytes], tmp_path: Path
) -> None:
    """The branch moves right after it is resolved: sha256 and size are those of the recorded commit."""
    from rwkv_registry.hub.commands import add_base_from_hub
    from rwkv_registry.store.ops import init_registry

    repo_id, file, data = base_on_hub
    first = hub.head(repo_id)
    reg = tmp_path / "reg"
    init_registry(reg)
    done: list[bool] = []

    def push_after_info(
        server: str, method: str, path: str, status: int, body: bytes, headers: dict[str, str]
    ) -> tuple:
        if not done and server == "api" and path == f"/api/models/{repo_id}":
            done.append(True)
            hub.commit_files(repo_id, {file: data + b"\0" * 64})
        return status, body, headers

    with hub.rewriting(push_after_info):
        base = add_base_from_hub(reg, f"{repo_id}/{file}")
    assert hub.head(repo_id) != first and base["source"]["revision"] == first
    assert base["sha256"] == hashlib.sha256(data).hexdigest() and base["size"] == len(data)


@pytest.mark.parametrize("spec", ["a/b/../x.pth", "a/b/./x.pth", "a/b//x.pth", "a/b/x/", "a/b@v1/../x.pth"])
def test_from_hub_file_paths_stay_inside_the_repository(spec: str) -> None:
    from rwkv_registry.hub.commands import parse_hub_file

    with pytest.raises(UsageError):
        parse_hub_file(spec)


# --- LFS pointers ----------------------------------------------------------------------------------------------


def test_an_lfs_pointer_oid_with_trailing_characters_is_malformed() -> None:
    from rwkv_registry.formats.lfs import parse_lfs_pointer

    oid = "4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393"
    good = f"version https://git-lfs.github.com/spec/v1\noid sha256:{oid}\nsize 12\n".encode()
    assert parse_lfs_pointer(good) is not None
    for bad in (good.replace(oid.encode(), oid.encode() + b"0"), good.replace(oid.encode(), oid.encode() + b" x")):
        assert parse_lfs_pointer(bad) is None


def test_an_lfs_pointer_first_line_must_be_exact() -> None:
    from rwkv_registry.formats.lfs import parse_lfs_pointer

    good = b"version https://git-lfs.github.com/spec/v1\noid sha256:" + b"ab" * 32 + b"\nsize 12\n"
    assert parse_lfs_pointer(good) is not None
    assert parse_lfs_pointer(good.replace(b"spec/v1\n", b"spec/v1.1\n")) is None
    assert parse_lfs_pointer(good.replace(b"spec/v1\n", b"spec/v1 \n")) is None


def test_an_lfs_pointer_is_under_1024_bytes() -> None:
    """The spec's bound: 1023 bytes parse, 1024 do not."""
    from rwkv_registry.formats.lfs import MAX_POINTER_SIZE, parse_lfs_pointer

    head = b"version https://git-lfs.github.com/spec/v1\noid sha256:" + b"ab" * 32 + b"\nsize 12\nx-pad "
    for total, ok in ((MAX_POINTER_SIZE - 1, True), (MAX_POINTER_SIZE, False)):
        data = head + b"a" * (total - len(head) - 1) + b"\n"
        assert len(data) == total
        assert (parse_lfs_pointer(data) is not None) is ok


def test_lfs_pointer_keys_values_and_encoding() -> None:
    from rwkv_registry.formats.lfs import looks_like_lfs_pointer, parse_lfs_pointer

    good = b"version https://git-lfs.github.com/spec/v1\noid sha256:" + b"ab" * 32 + b"\nsize 12\n"
    assert parse_lfs_pointer(good + b"x-ext-0.a value\n") is not None
    for bad in (
        good + b"version https://git-lfs.github.com/spec/v1\n",  # a second version line
        good + b"X-Pad value\n",  # keys are lower case
        good + b"x_pad value\n",  # [a-z0-9.-] only
        good + b"x-pad \xff\n",  # not UTF-8 (in a value)
    ):
        assert parse_lfs_pointer(bad) is None, bad
    assert not looks_like_lfs_pointer(b"version https://git-lfs.github.com/other")
    assert not looks_like_lfs_pointer(b"version https://git-lfs.github.com/sp")


def test_range_reads_are_planned_few_and_uncompressed(hub: FakeHub, tiny: Path) -> None:
    """What the prefetch plan saves: a small weight costs at most three Range requests (head and tail,
    then the central directory's plan: local headers, data.pkl, miss.json; the byte budget on a
    seed-sized registry is test_hub's slow test), and every Range asks for identity encoding (a
    compressed answer would break the byte offsets)."""
    repo_id = new_repo(hub, tiny)
    start = len(hub.log)
    assert validate_hub(f"hf://{repo_id}").ok
    tree = hub.repos[repo_id].commits[hub.head(repo_id)]
    by_blob = {b.sha256: (p, b.size) for p, b in tree.items() if b.lfs}
    gets: dict[str, list[dict[str, object]]] = {}
    for r in hub.log[start:]:
        if r["server"] == "cdn" and r["method"] == "GET":
            gets.setdefault(by_blob[r["path"].rsplit("/", 1)[-1]][0], []).append(r)
    assert sorted(gets) == sorted(p for p, _ in by_blob.values() if p.endswith(".pth"))
    for path, requests in gets.items():
        assert len(requests) <= 3, (path, [r["range"] for r in requests])
        assert all(r["accept_encoding"] == "identity" and r["range"] for r in requests)


def test_an_over_long_small_file_is_cut_off_at_its_listed_size(hub: FakeHub, tiny: Path) -> None:
    """A server answering index.json with megabytes more than listed: the read stops at the listed size
    plus one chunk instead of taking everything into memory."""
    repo_id = new_repo(hub, tiny)
    index = (tiny / "index.json").read_bytes()
    serve_other_bytes(hub, repo_id, "index.json", index + b" " * (16 * 1024 * 1024))
    with pytest.raises(RegistryIOError, match=f"sent more than the {len(index)} bytes listed"):
        validate_hub(f"hf://{repo_id}")


@pytest.mark.parametrize("field", ["cd_offset", "cd_size"])
def test_a_central_directory_outside_the_file_reads_as_locally(
    hub: FakeHub, tiny: Path, tmp_path: Path, field: str
) -> None:
    """A hostile end record: the Range planner gives up and the reader reports the rule it reports on a
    local copy (never an unreadable file, LAY010, from a plan that read past the end)."""
    import struct

    reg = copy(tiny, tmp_path / "reg")
    data = bytearray((reg / STATE).read_bytes())
    eocd = len(data) - 22
    assert data[eocd : eocd + 4] == b"PK\x05\x06"
    struct.pack_into("<I", data, eocd + (16 if field == "cd_offset" else 12), len(data) + 1000)
    (reg / STATE).write_bytes(bytes(data))
    local = sorted(f.code for f in validate_registry(reg, use_cache=False).findings if f.path == STATE)
    repo_id = new_repo(hub, reg)
    remote = sorted(f.code for f in validate_hub(f"hf://{repo_id}").findings if f.path == STATE)
    assert "LAY010" not in remote and any(c.startswith("PTH") for c in remote)
    assert remote == local


# --- the Range planner, unit by unit ------------------------------------------------------------------------


def test_the_range_plan_clips_merges_close_ranges_and_never_shrinks_one() -> None:
    """The Range requests a remote read sends (coalesce_ranges, the planner of RemoteFile): sorted, clipped to the
    file, neighbours closer than the gap in one request, none smaller than asked."""
    from rwkv_registry.hub.transport import coalesce_ranges

    assert coalesce_ranges([(-5, 3), (8, 20)], 10, gap=0) == [(0, 3), (8, 10)]  # clipped to the file
    assert coalesce_ranges([(0, 10), (14, 20)], 100, gap=4) == [(0, 20)]  # 4 bytes apart: one request
    assert coalesce_ranges([(0, 10), (15, 20)], 100, gap=4) == [(0, 10), (15, 20)]
    assert coalesce_ranges([(0, 50), (10, 20)], 100, gap=4) == [(0, 50)]  # a range inside another
    assert coalesce_ranges([(30, 40), (0, 5), (5, 5)], 100, gap=0) == [(0, 5), (30, 40)]  # sorted, empty dropped


def test_the_prefetch_plan_is_made_by_the_one_zip_reader(tmp_path: Path) -> None:
    """The plan of Range reads comes from _zipread.read_central_directory (before issue 26, _hub_http parsed the end
    records and zip64 fields a second time): on a torch-style archive past 4 GiB (zip64 sizes, then offsets) it
    covers every local header with its extra field, the small entries whole and every data descriptor, so the
    reader's own reads over the Range source need no further request."""
    from ckpt_hostile import write_sparse_zip64

    from rwkv_registry.formats.ckpt import FileSource
    from rwkv_registry.formats.zipread import read_zip
    from rwkv_registry.hub.transport import Fetcher, RemoteFile

    path = tmp_path / "big.pth"
    size = write_sparse_zip64(path, 2_200_000_000)

    class Local(RemoteFile):
        def read(self, offset: int, length: int) -> bytes:
            with open(path, "rb") as f:
                f.seek(offset)
                return f.read(length)

    plan = Local(Fetcher("http://127.0.0.1:9"), "http://127.0.0.1:9/blob", size)._zip_plan()

    def planned(start: int, end: int) -> bool:
        return any(a <= start and end <= b for a, b in plan)

    with FileSource(path) as src:
        entries = read_zip(src)
    assert entries[2].header_offset > 2**32  # big/data/1, after the 4.4 GB storage: its offset is a zip64 value
    for e in entries:
        assert planned(e.header_offset, e.data_offset), e.name
        descriptor = 24 if e.size >= 0xFFFFFFFF or e.header_offset >= 0xFFFFFFFF else 16
        assert planned(e.data_offset + e.size, e.data_offset + e.size + descriptor), e.name
        if not e.name.startswith("big/data/"):
            assert planned(e.data_offset, e.data_offset + e.size), e.name
    assert sum(b - a for a, b in plan) < 4096


def test_a_remote_read_past_the_end_is_refused_before_any_request() -> None:
    from rwkv_registry.core.errors import CheckpointError
    from rwkv_registry.hub.transport import Fetcher, RemoteFile

    fetcher = Fetcher("http://127.0.0.1:9")  # nothing listens: a request would fail differently
    source = RemoteFile(fetcher, "http://127.0.0.1:9/blob", 10)
    for offset, length in ((5, 6), (10, 1), (-1, 2), (0, -1)):
        with pytest.raises(CheckpointError, match="beyond the end"):
            source.read(offset, length)
    assert source.read(10, 0) == b"" and fetcher.requests == 0


def test_pull_into_the_current_directory_stages_outside_it(
    hub: FakeHub, tiny: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Even a kill -9 mid-download must leave PATH as it was: the staging directory is never inside it."""
    import huggingface_hub

    repo_id = new_repo(hub, tiny)
    dest = tmp_path / "reg"
    dest.mkdir()
    monkeypatch.chdir(dest)
    real = huggingface_hub.snapshot_download
    staged: list[Path] = []

    def record(*args: object, **kwargs: object) -> str:
        staged.append(Path(str(kwargs["local_dir"])).resolve())
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(huggingface_hub, "snapshot_download", record)
    assert pull_registry(repo_id, ".", log=quiet).ok
    (where,) = staged
    assert where.parent == tmp_path and where.name.startswith(".reg.rwkv-registry-pull-")


@pytest.mark.parametrize("what", ["other bytes", "the same entry"])
def test_a_path_listed_twice_is_refused(hub: FakeHub, tiny: Path, tmp_path: Path, what: str) -> None:
    """Before the fix the last of two entries won silently: validate hf:// checked the bytes against one of
    them, and the other (here the first, the real one) was never looked at."""
    repo_id = new_repo(hub, tiny)

    def twice(server: str, method: str, path: str, status: int, body: bytes, headers: dict[str, str]) -> tuple:
        if server == "api" and "/tree/" in path and status == 200:
            items = json.loads(body)
            extra = [dict(i) for i in items if i.get("path") == "README.md"]
            if what == "other bytes":
                extra[0]["oid"] = "0" * 40
            body = json.dumps(items + extra).encode()
            headers["Content-Length"] = str(len(body))
        return status, body, headers

    with hub.rewriting(twice):
        with pytest.raises(RegistryIOError, match=r"lists 'README\.md' twice"):
            validate_hub(f"hf://{repo_id}")
        with pytest.raises(RegistryIOError, match=r"lists 'README\.md' twice"):
            pull_registry(repo_id, tmp_path / "dest", log=quiet)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("left", ["journal and temporary file", "temporary file"])
def test_pull_refuses_the_leftovers_of_an_interrupted_write(
    hub: FakeHub, tiny: Path, tmp_path: Path, left: str
) -> None:
    """Before the fix they were pulled, validation said LAY012 "run `rwkv-registry recover`", and recover rolled
    the Hub's journal forward: here its index.json over the pulled one."""
    from rwkv_registry.fs.atomic import JOURNAL_NAME, TMP_PREFIX

    repo_id = new_repo(hub, tiny)
    tmp = f"{TMP_PREFIX}0a1b2c-index.json"
    files = {tmp: (tiny / "index.json").read_bytes().replace(b"rwkv7", b"RWKV7", 1)}
    if left.startswith("journal"):
        files[JOURNAL_NAME] = json.dumps({"renames": [[tmp, "index.json"]]}).encode()
    hub.commit_files(repo_id, files)
    assert "LAY012" in errors(validate_hub(f"hf://{repo_id}"))
    start = len(hub.log)
    with pytest.raises(RefusedError, match=f"holds {JOURNAL_NAME if left.startswith('journal') else tmp}"):
        pull_registry(repo_id, tmp_path / "dest", log=quiet)
    assert list(tmp_path.iterdir()) == []
    assert not [r for r in hub.log[start:] if "/resolve/" in r["path"]]  # refused before any download


def test_pull_refuses_a_file_where_huggingface_hub_keeps_its_download_metadata(
    hub: FakeHub, tiny: Path, tmp_path: Path
) -> None:
    """The pull removes .cache/huggingface after snapshot_download: before the fix such a listed file was
    removed with it and the pull failed with "in the listing but was not downloaded", which was not why."""
    repo_id = new_repo(hub, tiny)
    hub.commit_files(repo_id, {".cache/huggingface/notes.txt": b"x\n"})
    with pytest.raises(RefusedError, match=r"holds \.cache/huggingface/notes\.txt, inside \.cache/huggingface/"):
        pull_registry(repo_id, tmp_path / "dest", log=quiet)
    assert list(tmp_path.iterdir()) == []


def test_pull_one_base_takes_names_with_glob_characters_literally(hub: FakeHub, tiny: Path, tmp_path: Path) -> None:
    """snapshot_download's allow_patterns are fnmatch patterns: before the fix a listed 'notes[1].md' was its own
    pattern, matched only 'notes1.md', was not downloaded, and the one-base pull failed."""
    reg, other = with_other_base(tiny, tmp_path, state=False), OTHER_BASE
    repo_id = new_repo(hub, reg)
    hub.commit_files(repo_id, {"notes[1].md": b"literal\n", "notes1.md": b"matched by the pattern\n"})
    pull_registry(repo_id, tmp_path / "one", base=other, log=quiet)
    assert (tmp_path / "one" / "notes[1].md").read_bytes() == b"literal\n"
    assert not (tmp_path / "one" / STATE).exists()


def test_names_that_only_look_like_a_git_folder_are_listed_safely(hub: FakeHub, tiny: Path) -> None:
    """The listing check refuses a .git folder however git would spell it (case, Windows' trailing dots and
    spaces), and lists the names that only look like one."""
    from rwkv_registry.hub.remote import connect

    names = (".gitattributes", "base/state/.gitkeep", ".github/workflows/ci.yml", "x.git/y", "git~10", "a.git")
    repo_id = new_repo(hub, tiny)
    hub.commit_files(repo_id, {name: b"x\n" for name in names})
    listed = connect(repo_id).files
    for name in names:
        assert name in listed, name
    hub.commit_files(repo_id, {"a/.Git /b": b"x\n"})
    with pytest.raises(RegistryIOError, match=r"unsafe path 'a/\.Git (/b)?'"):
        connect(repo_id)


def test_pull_sends_the_token_to_the_hub_and_never_to_the_storage(hub: FakeHub, tiny: Path, tmp_path: Path) -> None:
    """snapshot_download follows the Hub's redirect to the storage host without the token (huggingface_hub's
    own rule), and the listing check reads nothing over the network."""
    repo_id = new_repo(hub, tiny)
    start = len(hub.log)
    assert pull_registry(repo_id, tmp_path / "dest", log=quiet).ok
    cdn = _token_only_to_the_hub(hub.log[start:])
    lfs = [p for p, blob in hub.repos[repo_id].commits[hub.head(repo_id)].items() if blob.lfs]
    assert len([r for r in cdn if r["method"] == "GET"]) == len(lfs)  # each weight downloaded once


def test_a_push_refused_for_many_files_names_the_first_three(hub: FakeHub, tiny: Path, tmp_path: Path) -> None:
    """A local copy without the tiny base (a registry of no base, which validates) would delete every file published
    under it: the refusal counts them all and names the first three, then '…'."""
    import shutil

    from regtools import edit_index

    from rwkv_registry.store.ops import write_readme

    reg = copy(tiny, tmp_path / "reg")
    repo_id = new_repo(hub, reg)
    head = hub.head(repo_id)
    shutil.rmtree(reg / TINY_BASE)
    edit_index(reg, lambda d: d.update(bases=[], entries=[]))
    write_readme(reg)
    resum(reg)
    assert validate_registry(reg, use_cache=False).ok
    published = [r for r in hub.files(repo_id) if r.startswith(f"{TINY_BASE}/")]
    assert len(published) > 3
    with pytest.raises(RefusedError) as e:
        push_registry(reg, repo_id, log=lambda m: None)
    message = e.value.message
    assert f"push refused: {len(published)} change(s) to published files" in message, message
    assert message.endswith("; …") and message.count(" would be deleted") == 3, message
    assert hub.head(repo_id) == head


def test_a_push_of_a_directory_without_index_json_is_refused_by_validation(
    hub: FakeHub, tiny: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No registry there: validation's refusal (exit 1), no lock file created, nothing sent."""
    from rwkv_registry.cli.main import main

    repo_id = new_repo(hub, tiny)
    head = hub.head(repo_id)
    empty = tmp_path / "empty"
    empty.mkdir()
    capsys.readouterr()
    assert main(["push", str(empty), "--repo", repo_id]) == 1
    out = capsys.readouterr()
    assert "does not validate" in out.err and "Traceback" not in out.err and "unexpected" not in out.err
    assert "first: LAY016 .: " in out.err and "is not a registry" in out.err  # the cause, not SCH004 or LFS002
    assert list(empty.iterdir()) == [] and hub.head(repo_id) == head


def test_a_push_where_the_lock_file_cannot_be_created_goes_on_without_it(
    hub: FakeHub, tiny: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A registry where the writers' lock file is missing and cannot be created (a read-only directory, which root
    is not refused here: os.open says EACCES for it): the push holds no lock and pushes."""
    import errno
    import os

    from rwkv_registry.fs.atomic import LOCK_NAME

    reg = copy(tiny, tmp_path / "reg")
    repo_id = new_repo(hub, reg)
    (reg / "README.md").write_bytes((reg / "README.md").read_bytes() + b"\nA line of the publisher's.\n")
    resum(reg)
    (reg / LOCK_NAME).unlink(missing_ok=True)
    real = os.open

    def read_only(path: Any, flags: int, *args: Any, **kw: Any) -> int:
        if str(path).endswith(LOCK_NAME) and flags & os.O_CREAT:
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(path))
        return real(path, flags, *args, **kw)

    monkeypatch.setattr(os, "open", read_only)
    result = push_registry(reg, repo_id, log=lambda m: None)
    assert result.commit is not None and hub.files(repo_id)["README.md"] == (reg / "README.md").read_bytes()
    assert not (reg / LOCK_NAME).exists()
