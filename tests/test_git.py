"""Git immutability (GIT001–GIT005, GIT007) on real repositories, and the real pre-commit tool."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from regtools import (
    GIT_ENV,
    TINY_ARCH,
    TINY_BASE,
    TINY_SHA,
    add_base_by_metadata,
    build_registry,
    edit_index,
    git,
    git_publish,
    resum,
    state_train,
    write_state,
)

from rwkv_registry.checks.git import git_blob_id
from rwkv_registry.engine.validate import validate_registry
from rwkv_registry.store.ops import add_entry, write_readme

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git not installed")
STATE = f"{TINY_BASE}/state/v1/s1.pth"
ENV = GIT_ENV


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return git_publish(build_registry(tmp_path / "reg", tmp_path, with_miss=False))


def codes(root: Path, **kw: object) -> set[str]:
    return {f.code for f in validate_registry(root, use_cache=False, **kw).findings}


def test_clean_repository_passes(repo: Path) -> None:
    assert not {c for c in codes(repo) if c.startswith("GIT")}


def test_modified_published_file_names_its_commit(repo: Path) -> None:
    p = repo / STATE
    data = bytearray(p.read_bytes())
    data[-100] ^= 1
    p.write_bytes(bytes(data))
    report = validate_registry(repo, use_cache=False)
    f = next(f for f in report.findings if f.code == "GIT001")
    assert f.path == STATE
    sha = git(repo, "log", "--format=%h", "-1").strip()
    assert sha in f.message and "publish v1" in f.message


def test_one_tampered_published_weight_is_one_finding(repo: Path, tmp_path: Path) -> None:
    """The cause once: a published .pth replaced by other bytes (another valid State, so nothing else is wrong
    with it) is GIT001 alone, naming the hash mismatches it brings (HSH001, HSH006 left out for that file), in the
    working tree and once staged; the hint is GIT001's."""
    other = write_state(tmp_path / "other" / "s1.pth", seed=77)  # same name, same size
    (repo / STATE).write_bytes(other.read_bytes())
    for stage in (False, True):
        if stage:
            git(repo, "add", "-A")
        report = validate_registry(repo, use_cache=False)
        [f] = [f for f in report.findings if f.path == STATE]
        assert f.code == "GIT001"
        assert f.message.endswith("; so it no longer matches index.json's sha256 and SHA256SUMS (HSH001, HSH006)")
        assert "publish v1" in f.message
        assert not report.ok and {g.code for g in report.findings if g.severity == "error"} == {"GIT001"}
    # index.json edited instead (the file as published): HSH001 is the cause, and says which side changed
    git(repo, "reset", "-q", "--hard")
    edit_index(repo, lambda i: i["entries"][0]["file"].update(sha256="0" * 64))
    found = [(f.code, f.path) for f in validate_registry(repo, use_cache=False).findings if f.path == STATE]
    assert found == [("HSH001", STATE)]


def test_trn006_is_said_for_a_train_json_until_it_is_committed(repo: Path, tmp_path: Path) -> None:
    """A train.json without the trainer's commit (TRN006, a note) is said while it is new, by `add` and by the
    validation of the commit that brings it (the pre-commit hook), and not at every later commit: committed, it is
    published and never changes, so nothing could be done about it."""
    new_train = f"{TINY_BASE}/state/v5/train.json"

    def notes() -> list[str]:
        return [f.path for f in validate_registry(repo, use_cache=False).findings if f.code == "TRN006"]

    assert notes() == []  # state/v1/train.json records no commit, and is committed
    add_entry(
        repo, write_state(tmp_path / "n1.pth", seed=11), base=TINY_BASE, data_version="v5", train=state_train("v5")
    )
    assert notes() == [new_train]  # untracked
    git(repo, "add", "-A")
    assert notes() == [new_train]  # staged: what the hook of this commit sees
    git(repo, "commit", "-q", "-m", "v5")
    assert notes() == []


def test_staged_modification_is_caught(repo: Path) -> None:
    train = repo / TINY_BASE / "state" / "v1" / "train.json"
    train.write_text(train.read_text().replace("4096", "8192"))
    git(repo, "add", "-A")
    assert "GIT001" in codes(repo)


def test_deleted_published_file(repo: Path) -> None:
    git(repo, "rm", "-q", STATE)
    assert "GIT002" in codes(repo)


def test_new_file_under_frozen_base(repo: Path, tmp_path: Path) -> None:
    st = write_state(tmp_path / "s2.pth", seed=3)
    add_entry(repo, st, base=TINY_BASE, data_version="v1", train=state_train())
    assert not {c for c in codes(repo) if c.startswith("GIT")}  # active base: new files are fine
    git(repo, "checkout", "-q", "--", ".")
    git(repo, "clean", "-qfd")
    edit_index(repo, lambda i: i["bases"][0].update(status="frozen"))
    resum(repo)
    from rwkv_registry.store.ops import write_readme

    write_readme(repo)
    git(repo, "commit", "-qam", "freeze")
    (repo / TINY_BASE / "state" / "v1" / "s3.pth").write_bytes(st.read_bytes())
    assert "GIT003" in codes(repo)


def _freeze_and_commit(repo: Path) -> None:
    from rwkv_registry.store.ops import write_readme

    edit_index(repo, lambda i: i["bases"][0].update(status="frozen"))
    resum(repo)
    write_readme(repo)
    git(repo, "commit", "-qam", "freeze")


def test_reopening_a_frozen_base_is_refused_before_it_takes_files(repo: Path, tmp_path: Path) -> None:
    """Two steps: a commit that only sets a frozen base active again, then one that adds files under it. Each
    commit alone passed GIT003 (the second's baseline says active); GIT005 stops the first."""
    from rwkv_registry.store.ops import write_readme

    _freeze_and_commit(repo)
    assert "GIT005" not in codes(repo)  # frozen and committed: nothing to say
    edit_index(repo, lambda i: i["bases"][0].update(status="active"))
    resum(repo)
    write_readme(repo)
    report = validate_registry(repo, use_cache=False)
    found = [f for f in report.findings if f.code == "GIT005"]
    assert [(f.path, f.message) for f in found] == [
        ("index.json", f"base {TINY_BASE} is frozen in index.json at HEAD, but its status is now 'active'")
    ]
    git(repo, "commit", "-qam", "reopen (--no-verify)")
    first = git(repo, "rev-parse", "HEAD~1").strip()
    assert "GIT005" in codes(repo, since=first)  # the pre-push range sees the reopening commit
    assert "GIT005" not in codes(repo)  # against its own commit, HEAD says active: the range check is the net


def _rewrite_base(repo: Path, **values: object) -> None:
    """Edit the base's record in index.json as a careless user would, then bring SHA256SUMS and the README in step
    (so that only the history can tell)."""
    from rwkv_registry.store.ops import write_readme

    def edit(index: dict) -> None:
        base = index["bases"][0]
        for key, value in values.items():
            if key == "file":
                base["source"]["file"] = value
            else:
                base[key] = value

    edit_index(repo, edit)
    resum(repo)
    write_readme(repo)


def test_published_base_identity_changed_is_git007(repo: Path) -> None:
    """Seed 000: a State is valid only on the base file it was trained on, and carries no fingerprint. Before
    GIT007, a commit setting a published base's sha256 to another file's (SHA256SUMS and README regenerated)
    validated clean: the State then claimed the other base, and nothing said so."""
    _rewrite_base(repo, sha256="1" * 64)
    report = validate_registry(repo, use_cache=False)
    found = [(f.path, f.message) for f in report.findings if f.code == "GIT007"]
    old = TINY_SHA
    assert found == [
        (
            "index.json",
            f"base {TINY_BASE} was published at HEAD with other values: sha256 {old!r} → {'1' * 64!r}",
        )
    ]
    assert not report.ok
    git(repo, "commit", "-qam", "re-point the base (--no-verify)")
    first = git(repo, "rev-parse", "HEAD~1").strip()
    assert "GIT007" in codes(repo, since=first)  # the pre-push range sees it committed
    assert "GIT007" not in codes(repo)  # against its own commit there is nothing to compare


def test_mis013_caused_by_a_base_edit_blames_the_edit(tmp_path: Path) -> None:
    """Editing a MiSS base's sha256 made MIS013 fire beside GIT007 with the hint "move the adapter", which blamed
    the adapter; its fingerprint is the published sha256, so the finding now names the edit (GIT007) as the
    cause. An adapter whose fingerprint is neither keeps the usual hint."""
    from rwkv_registry.checks.catalogue import RULES
    from rwkv_registry.checks.miss import MIS013_BY_BASE_EDIT

    root = git_publish(build_registry(tmp_path / "reg", tmp_path))
    _rewrite_base(root, sha256="1" * 64)
    found = [f for f in validate_registry(root, use_cache=False).findings if f.code == "MIS013"]
    assert len(found) == 2 and {f.hint for f in found} == {MIS013_BY_BASE_EDIT}
    assert all("the edit of index.json (GIT007) caused this, not the adapter" in f.message for f in found)
    git(root, "checkout", "-q", "--", ".")
    _rewrite_base(root, size=999)  # GIT007 without a sha256 change: MIS013 is not involved
    assert not [f for f in validate_registry(root, use_cache=False).findings if f.code == "MIS013"]
    git(root, "checkout", "-q", "--", ".")
    git(root, "commit", "-q", "--allow-empty", "-m", "noop")
    _rewrite_base(root, sha256="1" * 64)
    git(root, "commit", "-qam", "re-point (--no-verify)")  # now HEAD holds the edit: no GIT007 against HEAD
    found = [f for f in validate_registry(root, use_cache=False).findings if f.code == "MIS013"]
    assert len(found) == 2 and {f.hint for f in found} == {RULES["MIS013"].hint}


def test_git007_size_and_file_name_and_what_may_change(repo: Path) -> None:
    _rewrite_base(repo, size=999)
    assert "GIT007" in codes(repo)
    git(repo, "checkout", "-q", "--", ".")
    _rewrite_base(repo, file="other.pth")
    assert "GIT007" in codes(repo)
    git(repo, "checkout", "-q", "--", ".")
    _rewrite_base(repo, vocab="rwkv_vocab_v20230424.txt", notes="size measured again")  # not its identity
    assert "GIT007" not in codes(repo)


def test_git007_a_size_filled_in_and_a_base_nothing_relies_on(tmp_path: Path) -> None:
    """A base registered by metadata without its size may have it filled in; a base without weights or scores may
    have a mistyped sha256 corrected (nothing was trained or measured on it)."""
    from rwkv_registry.store.ops import add_base, init_registry

    root = tmp_path / "reg"
    init_registry(root, name="test/registry")
    add_base(root, name=TINY_BASE, source="BlinkDL/rwkv7-g1", sha256="2" * 64, size=None, arch=dict(TINY_ARCH))
    git_publish(root)
    _rewrite_base(root, size=1234, sha256="3" * 64)
    assert "GIT007" not in codes(root)


def test_since_rev_catches_committed_changes(repo: Path) -> None:
    first = git(repo, "rev-parse", "HEAD").strip()
    p = repo / STATE
    data = bytearray(p.read_bytes())
    data[-100] ^= 1
    p.write_bytes(bytes(data))
    git(repo, "commit", "-qam", "sneaky edit")
    assert "GIT001" not in codes(repo)  # HEAD already holds the edit
    assert "GIT001" in codes(repo, since=first)


def test_since_a_commit_a_shallow_clone_lacks_is_a_usage_error(repo: Path, tmp_path: Path) -> None:
    """In a depth-1 clone (a CI checkout), HEAD~1 resolves to the parent's id but its object is absent: the
    comparison cannot be made, so --since fails (exit 2) saying how to fetch it, not "OK" with a GIT004
    warning that a CI job would pass."""
    from rwkv_registry.cli.main import main
    from rwkv_registry.core.errors import UsageError

    p = repo / STATE
    data = bytearray(p.read_bytes())
    data[-100] ^= 1
    p.write_bytes(bytes(data))
    resum(repo)
    git(repo, "commit", "-qam", "sneaky edit")
    shallow = tmp_path / "shallow"
    git(tmp_path, "clone", "-q", "--depth", "1", f"file://{repo}", str(shallow))
    with pytest.raises(UsageError, match=r"--since HEAD~1: commit [0-9a-f]{12} is not in the clone") as e:
        validate_registry(shallow, use_cache=False, since="HEAD~1")
    assert e.value.hint is not None and "git fetch --unshallow" in e.value.hint
    assert main(["validate", str(shallow), "--since", "HEAD~1"]) == 2
    assert not {c for c in codes(shallow, since="HEAD") if c.startswith("GIT")}  # HEAD itself is there


def test_git_unavailable_is_an_error_in_a_work_tree_a_warning_outside(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In a git work tree, git missing from PATH means nothing was checked: GIT006 (an error, so the pre-commit hook
    and CI fail), not the GIT004 warning that a copy outside every work tree gets."""
    import git as gitpython

    from rwkv_registry.checks import git as gitcheck
    from rwkv_registry.cli.main import main

    with monkeypatch.context() as m:  # an ordinary clone, found without GitPython: no git on PATH
        m.setenv("PATH", str(tmp_path / "no-bin"))
        report = validate_registry(repo, use_cache=False)
        assert main(["validate", str(repo)]) == 1
    f = next(f for f in report.findings if f.code.startswith("GIT"))
    assert (f.code, str(f.severity)) == ("GIT006", "error") and not report.ok
    assert f.message == gitcheck.NO_GIT_IN_WORK_TREE
    assert "put it on PATH" in f.hint

    def boom(*a: object, **k: object) -> None:
        raise gitpython.GitCommandNotFound("git", "not found")

    copy = tmp_path / "copy"  # no .git here or above: no work tree
    shutil.copytree(repo, copy, ignore=shutil.ignore_patterns(".git"))
    monkeypatch.setattr(gitpython, "Repo", boom)  # any other repository: GitPython's route
    monkeypatch.setattr(gitcheck, "_plain_repo", lambda root: None)
    found = [(f.code, str(f.severity), f.message) for f in validate_registry(repo, use_cache=False).findings]
    assert ("GIT006", "error", gitcheck.NO_GIT_IN_WORK_TREE) in found
    found = [(f.code, str(f.severity), f.message) for f in validate_registry(copy, use_cache=False).findings]
    assert ("GIT004", "warning", gitcheck.GIT_NOT_FOUND) in found
    monkeypatch.setitem(sys.modules, "git", None)  # `import git` fails, as GitPython's does without git
    found = [(f.code, str(f.severity), f.message) for f in validate_registry(repo, use_cache=False).findings]
    # the same message shape as git missing from PATH: what is missing, then that the work tree went unchecked
    in_tree = gitcheck.NO_GIT_IN_WORK_TREE.replace(gitcheck.GIT_NOT_FOUND, gitcheck.GITPYTHON_NOT_FOUND)
    assert ("GIT006", "error", in_tree) in found
    found = [(f.code, str(f.severity), f.message) for f in validate_registry(copy, use_cache=False).findings]
    assert ("GIT004", "warning", gitcheck.GITPYTHON_NOT_FOUND) in found


def _git_findings(root: Path, **kw: object) -> list[tuple[str, str, str]]:
    return [(f.code, f.path, f.message) for f in validate_registry(root, use_cache=False, **kw).findings]


def _damage_frozen(top: Path, root: Path, tmp_path: Path) -> None:
    """Change a published State (GIT001), untrack a train.json (GIT002), and add two new weights, one staged and
    one untracked (GIT003), in the registry ``root`` of the git work tree ``top``."""
    p = root / STATE
    p.write_bytes(p.read_bytes()[:-1] + bytes([p.read_bytes()[-1] ^ 1]))  # GIT001
    git(top, "rm", "-q", "--cached", "--", str(root.relative_to(top) / TINY_BASE / "state" / "v1" / "train.json"))
    st = write_state(tmp_path / "n.pth", seed=7)
    for name in ("s8.pth", "s9.pth"):  # GIT003: one staged, one untracked
        (root / TINY_BASE / "state" / "v1" / name).write_bytes(st.read_bytes())
    git(top, "add", "--", str(root.relative_to(top) / TINY_BASE / "state" / "v1" / "s8.pth"))


@pytest.mark.parametrize("layout", ["top", "subdirectory", "worktree", "no-commit"])
def test_plain_route_finds_what_gitpython_finds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, layout: str) -> None:
    """validate finds an ordinary clone without GitPython (its import is a fifth of a warm run): every finding,
    message and order is what GitPython's route gives, for GIT001, GIT002 and GIT003 (staged and untracked), in a
    registry at the top of its repository or below it; a linked worktree (.git is a file) goes GitPython's way."""
    from rwkv_registry.checks import git as gitcheck
    from rwkv_registry.store.ops import write_readme

    outer = tmp_path / "outer"
    root = build_registry(outer / "reg" if layout == "subdirectory" else outer, tmp_path, with_miss=False)
    top = outer
    if layout == "no-commit":
        git(outer, "init", "-q", "-b", "main")
    else:
        git_publish(outer)
        edit_index(root, lambda i: i["bases"][0].update(status="frozen"))
        resum(root)
        write_readme(root)
        git(outer, "commit", "-qam", "freeze")
    if layout == "worktree":
        top = tmp_path / "wt"
        git(outer, "worktree", "add", "-q", str(top))
        root = top
        assert (top / ".git").is_file()
    if layout != "no-commit":
        _damage_frozen(top, root, tmp_path)
    found = _git_findings(root)
    assert (gitcheck._plain_repo(root) is not None) == (layout != "worktree")
    monkeypatch.setattr(gitcheck, "_plain_repo", lambda root: None)
    assert _git_findings(root) == found
    git_codes = {c for c, _, _ in found if c.startswith("GIT")}
    assert git_codes == (set() if layout == "no-commit" else {"GIT001", "GIT002", "GIT003"})


@pytest.mark.parametrize("case", ["top", "subdirectory", "failing"])
def test_git_commands_run_ahead_give_the_same_findings_and_run_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    """The check's git commands are started in the background while validation reads the registry (GitAhead): the
    findings (GIT001, GIT002, GIT003 staged and untracked, or GIT006 with git's words) are those of the commands run
    in place, every command runs once, and the main thread runs none that the background one ran."""
    import threading

    from rwkv_registry.checks import git as gitcheck
    from rwkv_registry.engine.validate import Validator

    outer = tmp_path / "outer"
    root = build_registry(outer / "reg" if case == "subdirectory" else outer, tmp_path, with_miss=False)
    git_publish(outer)
    edit_index(root, lambda i: i["bases"][0].update(status="frozen"))
    resum(root)
    from rwkv_registry.store.ops import write_readme

    write_readme(root)
    git(outer, "commit", "-qam", "freeze")
    _damage_frozen(outer, root, tmp_path)
    if case == "failing":
        (outer / ".git" / "index").write_bytes(b"not an index")  # git diff --cached fails
    real = gitcheck._run_git
    calls: list[tuple[str, tuple[str, ...]]] = []

    def counted(cwd: str, args: tuple[str, ...]) -> bytes:
        calls.append((threading.current_thread().name, args))
        return real(cwd, args)

    monkeypatch.setattr(gitcheck, "_run_git", counted)
    ahead = _git_findings(root)
    background = [a for who, a in calls if who == "rwkv-git-ahead"]
    in_place = [a for who, a in calls if who != "rwkv-git-ahead"]
    calls.clear()
    monkeypatch.setattr(Validator, "start_history", lambda self: None)
    assert _git_findings(root) == ahead
    assert all(who != "rwkv-git-ahead" for who, _ in calls)
    assert sorted(background + in_place) == sorted(a for _, a in calls)  # the same commands, each once
    assert not set(background) & set(in_place)
    if case == "failing":
        assert [c for c, _, _ in ahead if c.startswith("GIT")] == ["GIT006"]
        assert len(background) == 2  # rev-parse, then the working tree's diff (it reads the index: fails): no more
    else:
        assert {c for c, _, _ in ahead if c.startswith("GIT")} == {"GIT001", "GIT002", "GIT003"}
        assert len(background) == 5 and in_place  # the published-in logs are asked in place, for findings only


def test_no_repository_reads_the_same_on_both_routes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from rwkv_registry.checks import git as gitcheck

    root = build_registry(tmp_path / "reg", tmp_path, with_miss=False)
    if any((d / ".git").exists() for d in root.resolve().parents):
        pytest.skip("the temporary directory is inside a git repository")
    assert isinstance(gitcheck._plain_repo(root), gitcheck._NoRepo)
    found = [f for f in validate_registry(root, use_cache=False).findings if f.code.startswith("GIT")]
    monkeypatch.setattr(gitcheck, "_plain_repo", lambda root: None)  # GitPython's route
    assert [f for f in validate_registry(root, use_cache=False).findings if f.code.startswith("GIT")] == found
    assert [f.code for f in found] == ["GIT004"] and "is not inside a git work tree" in found[0].message
    monkeypatch.undo()
    monkeypatch.setenv("GIT_DIR", str(tmp_path / "elsewhere"))  # a GIT_DIR-like variable: GitPython decides
    assert gitcheck._plain_repo(root) is None


def test_plain_route_says_what_git_says_when_it_fails(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from rwkv_registry.checks import git as gitcheck

    (repo / ".git" / "index").write_bytes(b"not an index")  # git diff --cached fails: GIT006 with git's words
    found = [f for f in validate_registry(repo, use_cache=False).findings if f.code.startswith("GIT")]
    monkeypatch.setattr(gitcheck, "_plain_repo", lambda root: None)
    assert [f for f in validate_registry(repo, use_cache=False).findings if f.code.startswith("GIT")] == found
    assert [f.code for f in found] == ["GIT006"] and found[0].message.startswith("git failed: stderr: 'fatal: ")


@pytest.mark.parametrize("route", ["plain", "gitpython"])
def test_corrupt_object_store_is_an_error(repo: Path, monkeypatch: pytest.MonkeyPatch, route: str) -> None:
    """Inside a git work tree whose HEAD commit git cannot read (its object lost from the store), immutability
    cannot be checked: GIT006, an error (the pre-commit hook fails), not a silent pass as if nothing were
    committed yet, nor a traceback from GitPython."""
    from rwkv_registry.checks import git as gitcheck
    from rwkv_registry.cli.main import main

    head = git(repo, "rev-parse", "HEAD").strip()
    loose = repo / ".git" / "objects" / head[:2] / head[2:]
    loose.chmod(0o644)
    loose.unlink()
    if route == "gitpython":
        monkeypatch.setattr(gitcheck, "_plain_repo", lambda root: None)
    report = validate_registry(repo, use_cache=False)
    found = [f for f in report.findings if f.code.startswith("GIT")]
    assert [(f.code, str(f.severity)) for f in found] == [("GIT006", "error")] and not report.ok
    assert found[0].message == f"git failed: HEAD names commit {head[:12]}, which the object store lacks or cannot read"
    assert main(["validate", str(repo)]) == 1


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="chown to another user needs root")
def test_a_clone_owned_by_another_user_is_git006_with_the_safe_directory_fix(repo: Path) -> None:
    """git refuses a repository another user owns ('dubious ownership', as in CI containers): immutability cannot
    be checked, so GIT006, an error whose hint gives the safe.directory command (not a pass, nor only git's words)."""
    from rwkv_registry.checks.catalogue import RULES

    owner = os.stat(repo).st_uid
    subprocess.run(["chown", "-R", "65534", str(repo)], check=True)
    try:
        report = validate_registry(repo, use_cache=False)
    finally:
        subprocess.run(["chown", "-R", str(owner), str(repo)], check=True)
    found = [f for f in report.findings if f.code.startswith("GIT")]
    assert [f.code for f in found] == ["GIT006"] and not report.ok
    assert "dubious ownership" in found[0].message
    assert "git config --global --add safe.directory" in RULES["GIT006"].hint


@pytest.mark.skipif(
    shutil.which("pre-commit") is None and not (Path(sys.executable).parent / "pre-commit").exists(),
    reason="pre-commit not installed",
)
def test_real_pre_commit_refuses_bad_commit_and_accepts_good(repo: Path, tmp_path: Path) -> None:
    """pre-commit runs the hook that `rwkv-registry init` configured, with the installed rwkv-registry."""
    import yaml

    from rwkv_registry.store.ops import PRECOMMIT

    config = repo / ".pre-commit-config.yaml"
    assert config.read_text() == PRECOMMIT  # as init wrote it
    [hook] = yaml.safe_load(PRECOMMIT)["repos"][0]["hooks"]
    [shipped] = yaml.safe_load((Path(__file__).resolve().parents[1] / ".pre-commit-hooks.yaml").read_text())
    for key in ("id", "name", "pass_filenames", "require_serial", "always_run"):
        assert hook[key] == shipped[key], key  # the same hook as the one the project ships
    # the shipped hook is `language: python`: pre-commit installs rwkv-registry for it and puts it on PATH; init's
    # `language: system` hook finds it without PATH (docs/precommit.md, tests/test_precommit_hook.py)
    assert shipped["entry"] == "rwkv-registry validate" and shipped["language"] == "python"
    assert hook["language"] == "system" and "exec rwkv-registry validate" in hook["entry"]
    bindir = str(Path(sys.executable).parent)  # where rwkv-registry is installed: on PATH, as for a user
    env = {**ENV, "PRE_COMMIT_HOME": str(tmp_path / "pc-home"), "PATH": bindir + os.pathsep + ENV.get("PATH", "")}
    pc = str(Path(sys.executable).parent / "pre-commit")
    subprocess.run([pc, "install"], cwd=repo, env=env, check=True, capture_output=True)
    # bad: edit a published file
    p = repo / STATE
    good = p.read_bytes()
    p.write_bytes(good[:-1] + bytes([good[-1] ^ 1]))
    git(repo, "add", "-A")
    bad = subprocess.run(["git", "commit", "-m", "edit published"], cwd=repo, env=env, capture_output=True, text=True)
    assert bad.returncode != 0
    assert "GIT001" in bad.stdout + bad.stderr
    # good: restore and add a new State through the registry's own command
    p.write_bytes(good)
    git(repo, "add", "-A")
    st = write_state(tmp_path / "s9.pth", seed=9)
    add_entry(repo, st, base=TINY_BASE, data_version="v1", train=state_train())
    git(repo, "add", "-A")
    ok = subprocess.run(["git", "commit", "-m", "add s9"], cwd=repo, env=env, capture_output=True, text=True)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert json.loads((repo / "index.json").read_text())["entries"][-1]["id"] == "s9"


def test_unfreezing_in_the_same_change_does_not_open_a_frozen_base(repo: Path, tmp_path: Path) -> None:
    edit_index(repo, lambda i: i["bases"][0].update(status="frozen"))
    resum(repo)
    from rwkv_registry.store.ops import write_readme

    write_readme(repo)
    git(repo, "commit", "-qam", "freeze")
    edit_index(repo, lambda i: i["bases"][0].update(status="active"))  # sneaky unfreeze, not committed
    (repo / TINY_BASE / "state" / "v1" / "s4.pth").write_bytes(write_state(tmp_path / "s4.pth", seed=4).read_bytes())
    assert "GIT003" in codes(repo)


# --- add-base leaves nothing that GIT003 reports -----------------------------------------------------------


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_add_base_superseding_uncommitted_weights_asks_for_a_commit_first(repo: Path, tmp_path: Path) -> None:
    from rwkv_registry.core.errors import RefusedError

    newer = TINY_BASE.replace("20260101", "20260301")
    st = write_state(tmp_path / "new" / "s5.pth", seed=5)
    add_entry(repo, st, base=TINY_BASE, data_version="v1", train=state_train())  # not committed yet
    before = _tree(repo)
    with pytest.raises(RefusedError, match=rf"{TINY_BASE}/state/v1/s5.pth .* not committed yet.*GIT003") as e:
        add_base_by_metadata(repo, newer)
    assert "git commit" in e.value.hint
    assert _tree(repo) == before  # nothing written
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "s5")
    add_base_by_metadata(repo, newer)  # committed first: fine, and the end state validates
    report = validate_registry(repo, use_cache=False)
    assert report.ok, [(f.code, f.path) for f in report.findings if str(f.severity) == "error"]


def test_two_bases_of_one_family_before_a_commit_validate(repo: Path) -> None:
    """The first one's new files are only its empty .gitkeep placeholders, which GIT003 lets be new."""
    add_base_by_metadata(repo, TINY_BASE.replace("20260101", "20260201"))
    add_base_by_metadata(repo, TINY_BASE.replace("20260101", "20260301"))
    report = validate_registry(repo, use_cache=False)
    assert report.ok, [(f.code, f.path) for f in report.findings if str(f.severity) == "error"]


def test_a_placeholder_with_content_is_a_new_file_under_a_closed_base(repo: Path) -> None:
    older = TINY_BASE.replace("20260101", "20250101")
    add_base_by_metadata(repo, older)
    (repo / older / "state" / ".gitkeep").write_text("not a placeholder")
    resum(repo)
    assert "GIT003" in codes(repo)


@pytest.mark.parametrize("keep", [False, True])
def test_an_older_base_than_one_already_there_is_registered_closed(repo: Path, keep: bool) -> None:
    older = TINY_BASE.replace("20260101", "20250101")
    base = add_base_by_metadata(repo, older, freeze_previous=not keep)
    assert base["status"] == ("active" if keep else "frozen")
    report = validate_registry(repo, use_cache=False)
    assert report.ok, [(f.code, f.path) for f in report.findings if str(f.severity) == "error"]
    assert ("IDX007" in codes(repo)) == keep  # kept active although superseded: the warning says so


def test_a_clone_with_core_autocrlf_keeps_every_hash(repo: Path, tmp_path: Path) -> None:
    """init's .gitattributes pins text files to LF: a Windows-style checkout must not change a sha256."""
    clone = tmp_path / "clone"
    subprocess.run(["git", "-c", "core.autocrlf=true", "clone", "-q", str(repo), str(clone)], check=True)
    git(clone, "config", "core.autocrlf", "true")
    assert b"\r\n" not in (clone / "index.json").read_bytes() and codes(clone) == codes(repo)


def test_which_side_changed_with_more_paths_than_a_command_line_holds(repo: Path) -> None:
    # HSH001 on tens of thousands of files: the paths are not passed to git (E2BIG past ARG_MAX, 2 MiB on Linux)
    from rwkv_registry.checks.git import changed_since_head

    (repo / "index.json").write_bytes((repo / "index.json").read_bytes() + b"\n")
    many = [f"{TINY_BASE}/state/v1/{'x' * 100}-{i}.pth" for i in range(30_000)]  # about 4 MB of arguments
    assert changed_since_head(repo, [*many, STATE, "index.json"]) == {"index.json"}
    p = repo / STATE
    p.write_bytes(p.read_bytes()[:-1] + bytes([p.read_bytes()[-1] ^ 1]))
    assert changed_since_head(repo, [STATE]) == {STATE}
    assert changed_since_head(repo, []) == set()


def test_since_asks_git_where_a_file_was_committed_only_for_findings(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rwkv_registry.checks import git as gitcheck

    first = git(repo, "rev-parse", "HEAD").strip()
    for i in range(5):  # new weights under the active base, committed: no finding, no `git log` per file
        src = tmp_path / f"n{i}.pth"
        write_state(src, seed=100 + i)
        add_entry(repo, src, base=TINY_BASE, data_version="v9", train=state_train("v9"))
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "five new weights")
    calls: list[str] = []
    real = gitcheck._committed_in
    monkeypatch.setattr(gitcheck, "_committed_in", lambda repo_, path, *a: calls.append(path) or real(repo_, path, *a))
    assert not {c for c in codes(repo, since=first) if c.startswith("GIT")}
    assert calls == []
    p = repo / STATE  # a published file edited in a commit after the baseline: its commit is named
    p.write_bytes(p.read_bytes()[:-1] + bytes([p.read_bytes()[-1] ^ 1]))
    git(repo, "commit", "-qam", "sneaky edit")
    found = [f for f in validate_registry(repo, use_cache=False, since=first).findings if f.code == "GIT001"]
    assert calls == [STATE] and len(found) == 1 and "sneaky edit" in found[0].message


def test_since_over_a_freeze_spares_files_committed_while_the_base_was_open(repo: Path, tmp_path: Path) -> None:
    """--since REV over a range in which weights were added and then their base frozen: those weights were
    committed while the base was open (GIT003 reported every one of them); one committed after the freeze is not."""
    from rwkv_registry.store.ops import write_readme

    first = git(repo, "rev-parse", "HEAD").strip()
    src = write_state(tmp_path / "early.pth", seed=21)
    add_entry(repo, src, base=TINY_BASE, data_version="v9", train=state_train("v9"))
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "new weights while the base is open")
    edit_index(repo, lambda i: i["bases"][0].update(status="frozen"))
    resum(repo)
    write_readme(repo)
    git(repo, "commit", "-qam", "freeze")
    assert not {c for c in codes(repo, since=first) if c.startswith("GIT")}
    early = repo / TINY_BASE / "state" / "v9" / "early.pth"
    kept = early.read_bytes()
    early.write_bytes(kept[:-1] + bytes([kept[-1] ^ 1]))  # not committed: the working tree differs from HEAD
    found = [f for f in validate_registry(repo, use_cache=False, since=first).findings if f.code == "GIT003"]
    assert [f.path for f in found] == [f"{TINY_BASE}/state/v9/early.pth"] and "working tree" in found[0].message
    early.write_bytes(kept)
    late = repo / TINY_BASE / "state" / "v9" / "late.pth"
    late.write_bytes(write_state(tmp_path / "late.pth", seed=22).read_bytes())
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "sneaked in after the freeze")
    found = [f for f in validate_registry(repo, use_cache=False, since=first).findings if f.code == "GIT003"]
    assert [f.path for f in found] == [f"{TINY_BASE}/state/v9/late.pth"] and "sneaked in" in found[0].message
    # the early file edited after the freeze is caught too: its last commit is after the freeze
    early.write_bytes(early.read_bytes()[:-1] + bytes([early.read_bytes()[-1] ^ 1]))
    git(repo, "commit", "-qam", "edit after the freeze")
    found = [f for f in validate_registry(repo, use_cache=False, since=first).findings if f.code == "GIT003"]
    assert sorted(f.path for f in found) == [f"{TINY_BASE}/state/v9/early.pth", f"{TINY_BASE}/state/v9/late.pth"]


def test_head_bases_from_the_memo_give_the_findings_of_a_cold_run(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After index.json changed (the pre-commit hook after an `add`), HEAD's bases come from the validation cache,
    recorded under the blob's git id by the run that validated those bytes, instead of `git show` and a parse of
    the whole index: GIT005 and GIT003 (both decided by HEAD's bases) as a run without the cache says them."""
    from rwkv_registry.checks import git as gitcheck
    from rwkv_registry.store.ops import write_readme

    edit_index(repo, lambda i: i["bases"][0].update(status="frozen"))
    resum(repo)
    write_readme(repo)
    validate_registry(repo)  # the hook on the freeze: index.json's bytes are new, the cache is written
    git(repo, "commit", "-qam", "freeze")
    edit_index(repo, lambda i: i["bases"][0].update(status="active"))
    (repo / TINY_BASE / "state" / "v1" / "s3.pth").write_bytes(write_state(tmp_path / "s3.pth", seed=3).read_bytes())
    resum(repo)
    write_readme(repo)
    shown: list[str] = []
    real_show = gitcheck._PlainRepo.show_bytes
    monkeypatch.setattr(
        gitcheck._PlainRepo, "show_bytes", lambda self, spec: shown.append(spec) or real_show(self, spec)
    )
    cached = validate_registry(repo).findings
    assert shown == []  # HEAD's index.json was neither read nor parsed
    cold = validate_registry(repo, use_cache=False).findings
    assert [spec.split(":")[1] for spec in shown] == ["index.json"]  # without the cache it is (HEAD's commit)
    assert [(f.code, f.path, f.message) for f in cached] == [(f.code, f.path, f.message) for f in cold]
    assert {"GIT003", "GIT005"} <= {f.code for f in cold}


def test_without_the_bytes_or_a_memo_head_is_read_with_one_git_command(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """check_git without the index bytes and a memo (add-base's check before it freezes a base) asks git for
    HEAD's index.json once (`git show`), not first for its blob id, which nothing could answer for."""
    from rwkv_registry.checks import git as gitcheck
    from rwkv_registry.checks.git import check_git

    asked: list[str] = []
    real = gitcheck._PlainRepo.blob_id
    monkeypatch.setattr(gitcheck._PlainRepo, "blob_id", lambda self, spec: asked.append(spec) or real(self, spec))
    index = json.loads((repo / "index.json").read_text())
    assert check_git(repo, index) == []
    assert asked == []
    blob_id = gitcheck.git_blob_id((repo / "index.json").read_bytes())
    assert blob_id == git(repo, "rev-parse", "HEAD:index.json").strip()  # git's own id for those bytes
    assert check_git(repo, index, index_blob_id=blob_id) == []
    assert len(asked) == 1


# --- edits git's own diffs do not see ---------------------------------------------------------------------------


def _replace_published_state(repo: Path, tmp_path: Path) -> None:
    """Other bytes for the published State, with index.json and SHA256SUMS brought in line: only GIT001 is left."""
    new = write_state(tmp_path / "other.pth", seed=77).read_bytes()
    (repo / STATE).write_bytes(new)

    def point(index: dict) -> None:
        entry = next(e for e in index["entries"] if e["path"] == STATE)
        entry["file"].update(sha256=hashlib.sha256(new).hexdigest(), size=len(new))

    edit_index(repo, point)
    resum(repo)


@pytest.mark.parametrize("flag", ["assume-unchanged", "skip-worktree"])
@pytest.mark.parametrize("route", ["plain", "since"])
def test_an_edit_git_is_told_not_to_look_at_is_caught(repo: Path, tmp_path: Path, flag: str, route: str) -> None:
    """git's diffs skip a file marked assume-unchanged or skip-worktree, so its edit passed validation when
    index.json and SHA256SUMS were edited to match; `git commit -a` then published them without the file (it stays
    as published too): a registry whose hashes name bytes that were never pushed."""
    git(repo, "update-index", f"--{flag}", STATE)
    kw = {"since": git(repo, "rev-parse", "HEAD").strip()} if route == "since" else {}
    assert not {c for c in codes(repo, **kw) if c.startswith("GIT")}  # marked, not edited: nothing to say
    _replace_published_state(repo, tmp_path)
    report = validate_registry(repo, use_cache=False, **kw)
    assert [(f.code, f.path) for f in report.findings if str(f.severity) == "error"] == [("GIT001", STATE)]
    f = next(f for f in report.findings if f.code == "GIT001")
    assert f"--no-{flag} {STATE}" in f.message and "publish v1" in f.message


def test_a_marked_file_equal_to_its_published_lfs_pointer_is_not_an_edit(repo: Path) -> None:
    """Published through Git LFS (the pointer committed) and marked: the bytes its pointer names are no edit,
    whether or not git-lfs is there to clean them; other bytes are."""
    p = repo / TINY_BASE / "state" / "v1" / "train.json"
    real = p.read_bytes()
    pointer = b"version https://git-lfs.github.com/spec/v1\noid sha256:%s\nsize %d\n" % (
        hashlib.sha256(real).hexdigest().encode(),
        len(real),
    )
    p.write_bytes(pointer)
    git(repo, "commit", "-qam", "as LFS publishes it")
    git(repo, "update-index", "--assume-unchanged", p.relative_to(repo).as_posix())
    p.write_bytes(real)  # what `git lfs pull` puts in place of the pointer
    from rwkv_registry.checks.git import check_git

    assert not [f for f in check_git(repo, None) if f.code.startswith("GIT")]
    p.write_bytes(real.replace(b"4096", b"8192"))
    assert [f.code for f in check_git(repo, None)] == ["GIT001"]


def test_a_same_size_edit_of_a_racily_clean_entry_is_caught(repo: Path) -> None:
    """Racily clean in git's sense: git's index records the published file with an mtime not older than the index
    file's own, and the file is then rewritten at the same size with that mtime put back (ctime not trusted), so
    only git's racy-clean rule (such an entry's content is compared) can tell. The check leaves that to git's diff
    and gets GIT001. (A file older than the index, so edited, is invisible to git with core.trustctime=false: the
    content rules, HSH001/HSH006, still see it unless index.json and SHA256SUMS were edited to match.)"""
    git(repo, "config", "core.trustctime", "false")
    p = repo / STATE
    future = time.time_ns() + 30 * 10**9  # recorded by the refresh below, after which the index file is written
    os.utime(p, ns=(future, future))
    git(repo, "update-index", "--refresh")
    assert os.stat(repo / ".git" / "index").st_mtime_ns <= future
    data = bytearray(p.read_bytes())
    data[-100] ^= 1
    p.write_bytes(bytes(data))
    os.utime(p, ns=(future, future))
    assert "GIT001" in codes(repo)


def _sha256_repo(tmp_path: Path) -> Path:
    root = build_registry(tmp_path / "reg", tmp_path, with_miss=False)
    git(root, "init", "-q", "-b", "main", "--object-format=sha256")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "publish v1")
    return root


def _git_codes(root: Path) -> list[str]:
    return sorted(f.code for f in validate_registry(root, use_cache=False).findings if f.code.startswith("GIT"))


def test_blob_ids_are_gits_in_sha1_and_sha256_repositories(tmp_path: Path) -> None:
    """G04: git_blob_id always SHA-1; G05: without the NUL after the size. Both are compared with git's own ids."""
    root = _sha256_repo(tmp_path)
    data = (root / "index.json").read_bytes()
    assert git_blob_id(data, 64) == git(root, "rev-parse", "HEAD:index.json").strip()
    sha1 = tmp_path / "sha1"
    sha1.mkdir()
    git(sha1, "init", "-q")
    (sha1 / "f").write_bytes(data)
    assert git_blob_id(data) == git(sha1, "hash-object", "f").strip()


def test_a_frozen_base_reopened_in_a_sha256_repository_is_git005(tmp_path: Path) -> None:
    """G35: in a SHA-256 repository HEAD's index.json is read and compared with the one validated by its sha256;
    taking it for the same bytes whenever a sha256 was given hid the baseline's frozen status (no GIT005)."""
    root = _sha256_repo(tmp_path)
    assert _git_codes(root) == []
    edit_index(root, lambda i: i["bases"][0].update(status="frozen"))
    resum(root)
    write_readme(root)
    git(root, "commit", "-qam", "freeze")
    assert _git_codes(root) == []
    edit_index(root, lambda i: i["bases"][0].update(status="active"))
    resum(root)
    write_readme(root)
    assert _git_codes(root) == ["GIT005"]
    state = root / TINY_BASE / "state" / "v1" / "s1.pth"
    data = bytearray(state.read_bytes())
    data[-100] ^= 1
    state.write_bytes(bytes(data))
    assert "GIT001" in _git_codes(root)


def test_a_git_dir_variable_makes_a_work_tree_around_any_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """GIT_DIR (or GIT_WORK_TREE, ...) names a repository: git missing is then GIT006, not the GIT004 warning, even
    with no .git above the folder (kills the mutant without the environment check in _work_tree_around)."""
    from rwkv_registry.checks import git as gitcheck

    for v in gitcheck._GIT_ENV:
        monkeypatch.delenv(v, raising=False)
    if gitcheck._work_tree_around(tmp_path):
        pytest.skip("a .git above the temporary directory")
    monkeypatch.setenv("GIT_DIR", str(tmp_path / "elsewhere.git"))
    assert gitcheck._work_tree_around(tmp_path)


def _frozen_repo(tmp_path: Path) -> Path:
    """A published registry whose only base is frozen in a second commit."""
    root = build_registry(tmp_path / "reg", tmp_path, with_miss=False)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "publish v1")
    edit_index(root, lambda i: i["bases"][0].update(status="frozen"))
    resum(root)
    write_readme(root)
    git(root, "commit", "-qam", "freeze")
    return root


def _git_found(root: Path) -> list[tuple[str, str]]:
    return sorted(
        (f.code, f.path) for f in validate_registry(root, use_cache=False).findings if f.code.startswith("GIT")
    )


def test_a_published_file_renamed_in_the_index_is_deleted_at_its_old_name(tmp_path: Path) -> None:
    """G17: without --no-renames, git's staged diff says ``R100 old new`` for a ``git mv`` (rename detection is on
    by default), which read as the old path with status R: no GIT002 for the published file, and the name-status
    pairs read out of step; likewise a copy of it staged under a new name (GIT003 under the frozen base)."""
    root = _frozen_repo(tmp_path)
    old = f"{TINY_BASE}/state/v1/s1.pth"
    new = f"{TINY_BASE}/state/v1/renamed.pth"
    git(root, "mv", old, new)
    found = _git_found(root)
    assert ("GIT002", old) in found and ("GIT003", new) in found


def test_a_published_file_replaced_by_a_link_to_the_same_bytes_is_modified(tmp_path: Path) -> None:
    """G21: a file turned into a symbolic link is git's status T (type change), not M: still a change of a
    published file (GIT001), though the bytes read through the link are the same."""
    root = _frozen_repo(tmp_path)
    state = root / TINY_BASE / "state" / "v1" / "s1.pth"
    keep = tmp_path / "kept.pth"
    shutil.copyfile(state, keep)
    state.unlink()
    state.symlink_to(keep)
    assert ("GIT001", f"{TINY_BASE}/state/v1/s1.pth") in _git_found(root)


def test_an_ignored_file_under_a_frozen_base_is_not_a_new_file(tmp_path: Path) -> None:
    """G20: without --exclude-standard, ``git ls-files --others`` lists the files .gitignore excludes too: an
    ignored file under a frozen base (a log the publisher's .gitignore keeps out of git) was reported GIT003,
    though it can never be committed. An untracked file that is not ignored still is."""
    root = _frozen_repo(tmp_path)
    with (root / ".gitignore").open("a") as f:
        f.write("*.log\n")
    git(root, "commit", "-qam", "ignore logs")
    (root / TINY_BASE / "state" / "v1" / "train.log").write_text("loss 1.0\n")
    assert _git_found(root) == []
    (root / TINY_BASE / "state" / "v1" / "notes.txt").write_text("new\n")
    assert _git_found(root) == [("GIT003", f"{TINY_BASE}/state/v1/notes.txt")]


def test_a_folder_whose_name_begins_with_a_frozen_base_name_is_not_under_it(tmp_path: Path) -> None:
    """G18: a path is under a base when its first directory is the base's name exactly: a folder
    ``<base>-notes/`` beside a frozen base is not under it (a prefix match of the name said GIT003 there)."""
    root = _frozen_repo(tmp_path)
    other = root / f"{TINY_BASE}-notes"
    other.mkdir()
    (other / "todo.txt").write_text("x\n")
    git(root, "add", "--", other.name)
    (other / "more.txt").write_text("y\n")
    assert _git_found(root) == []


def test_a_frozen_base_that_a_newer_one_also_supersedes_is_said_frozen(tmp_path: Path) -> None:
    """G24: a base both frozen and superseded by a newer base of its family was named 'superseded' in GIT003 when
    the superseding pass overwrote the status: it is closed by its own status first (the fix a user looks for)."""
    root = _frozen_repo(tmp_path)
    newer = TINY_BASE.replace("20260101", "20270101")

    def add_newer(index: dict) -> None:
        index["bases"].append({**index["bases"][0], "name": newer, "status": "active"})

    edit_index(root, add_newer)
    (root / TINY_BASE / "state" / "v1" / "notes.txt").write_text("x\n")
    found = [f.message for f in validate_registry(root, use_cache=False).findings if f.code == "GIT003"]
    assert found == [f"new untracked file under frozen base {TINY_BASE}; new weights go under {newer}"]


def test_a_registry_below_the_top_of_its_repository_reads_its_own_index_at_head(tmp_path: Path) -> None:
    """G26: index.json at the baseline is read at the registry's path in the work tree (``reg/index.json``): read
    at the top (no such file there), a frozen base set active again below the top gave no GIT005."""
    outer = tmp_path / "outer"
    root = build_registry(outer / "reg", tmp_path, with_miss=False)
    git(outer, "init", "-q", "-b", "main")
    git(outer, "add", "-A")
    git(outer, "commit", "-q", "-m", "publish v1")
    for status in ("frozen", "active"):
        edit_index(root, lambda i, s=status: i["bases"][0].update(status=s))
        resum(root)
        write_readme(root)
        if status == "frozen":
            git(outer, "commit", "-qam", "freeze")
    assert _git_codes(root) == ["GIT005"]
