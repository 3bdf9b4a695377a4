"""Cases that a mutation audit of the write commands (registry/store/ops.py, atomic.py, readme.py) found untested.
Each pins a behaviour a user sees (exit code, refusal message, files left byte-identical, what index.json,
README.md and SHA256SUMS hold) that some plausible bug changed while every other test still passed."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from regtools import (
    DATA_SHA,
    TINY_ARCH_ARG,
    TINY_BASE,
    clean_error,
    edit_index,
    jsonschema_checks,
    miss_train,
    snapshot,
    state_train,
    write_miss,
    write_state,
)

from rwkv_registry.cli.main import main
from rwkv_registry.core.errors import RefusedError, UsageError
from rwkv_registry.store.ops import add_base, add_entry

STATE = f"{TINY_BASE}/state/v1/s1.pth"


def _index(root: Path) -> dict[str, Any]:
    return json.loads((root / "index.json").read_text("utf-8"))


def _sums_paths(root: Path) -> list[str]:
    return [line.split("  ", 1)[1] for line in (root / "SHA256SUMS").read_text().splitlines()]


def _train(tmp_path: Path, data: dict[str, Any], name: str = "train.json") -> str:
    p = tmp_path / "in" / name
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(data))
    return str(p)


# --- files as written ------------------------------------------------------------------------------


def test_written_json_files_end_in_a_newline(reg: Path) -> None:
    """index.json and train.json are written with a final newline (diff- and editor-friendly)."""
    assert (reg / "index.json").read_bytes().endswith(b"}\n")
    assert (reg / f"{TINY_BASE}/state/v1/train.json").read_bytes().endswith(b"}\n")


def test_sums_never_lists_files_inside_dot_git(reg: Path) -> None:
    (reg / ".git").mkdir()
    (reg / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    assert main(["sums", str(reg)]) == 0
    assert not [p for p in _sums_paths(reg) if p.startswith(".git/")]


# --- refusals leave the registry byte-identical ----------------------------------------------------


def test_readme_refuses_an_index_that_breaks_its_schema(reg: Path, capsys: pytest.CaptureFixture[str]) -> None:
    edit_index(reg, lambda index: index["entries"][0].update(recommended="yes"))
    before = snapshot(reg)
    assert main(["readme", str(reg)]) == 1
    err = clean_error(capsys.readouterr().err)
    assert "index.json does not follow its schema" in err and "Fix index.json first" in err
    assert snapshot(reg) == before


def test_sums_never_lists_a_symbolic_link(reg: Path) -> None:
    (reg / "notes.md").symlink_to(reg / "README.md")
    assert main(["sums", str(reg)]) == 0
    assert "notes.md" not in _sums_paths(reg) and "README.md" in _sums_paths(reg)


# --- init ------------------------------------------------------------------------------------------


def test_init_refuses_a_directory_holding_only_a_gitignore(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Only `.git` and rwkv-registry's own transient files may be there: a .gitignore is the user's file."""
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / ".gitignore").write_text("mine\n")
    assert main(["init", str(tmp_path / "r")]) == 2
    assert "exists and is not empty" in clean_error(capsys.readouterr().err)
    assert sorted(p.name for p in (tmp_path / "r").iterdir()) == [".gitignore"]
    assert (tmp_path / "r" / ".gitignore").read_text() == "mine\n"


def test_a_failed_init_keeps_the_empty_directory_it_did_not_create(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rwkv_registry.core.errors import RegistryIOError

    def fail(*args: Any, **kwargs: Any) -> None:
        raise RegistryIOError("disk full (simulated)")

    (tmp_path / "mine").mkdir()
    monkeypatch.setattr("rwkv_registry.store.ops._publish", fail)
    assert main(["init", str(tmp_path / "mine")]) == 2
    assert (tmp_path / "mine").is_dir()


def test_init_records_title_and_default_name(tmp_path: Path) -> None:
    assert main(["init", str(tmp_path / "my-weights"), "--title", "My weights"]) == 0
    reg = _index(tmp_path / "my-weights")["registry"]
    assert reg["name"] == "my-weights" and reg["title"] == "My weights"
    assert (tmp_path / "my-weights" / "README.md").read_text().startswith("# My weights\n")


# --- add-base --------------------------------------------------------------------------------------

NEW = "rwkv7-tiny-20270101-ctx4096"


def _meta(reg: Path, *extra: str, name: str = NEW, sha: str = "b" * 64) -> list[str]:
    return ["add-base", str(reg), "--name", name, "--sha256", sha, "--arch", TINY_ARCH_ARG, "--source", "a/b", *extra]


def test_add_base_file_refuses_size_and_a_name_other_than_its_own(
    reg: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from regtools import write_tiny_base

    f = write_tiny_base(tmp_path / "in" / f"{NEW}.pth")
    before = snapshot(reg)
    assert main(["add-base", str(reg), str(f), "--size", "5", "--source", "a/b"]) == 2
    assert "--sha256 and --size are for a base given by metadata" in clean_error(capsys.readouterr().err)
    assert main(["add-base", str(reg), str(f), "--name", "rwkv7-other-20270101-ctx4096", "--source", "a/b"]) == 2
    err = clean_error(capsys.readouterr().err)
    assert f"base name 'rwkv7-other-20270101-ctx4096' differs from its file '{NEW}.pth' (IDX006)" in err
    assert snapshot(reg) == before


def test_add_base_name_with_an_upper_case_suffix_is_refused(reg: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = snapshot(reg)
    assert main(_meta(reg, name=f"{NEW}.PTH")) == 2
    assert f"--name '{NEW}.PTH' ends in a file suffix" in clean_error(capsys.readouterr().err)
    assert snapshot(reg) == before


def test_add_base_size_zero_is_a_size_and_a_bool_is_not(reg: Path) -> None:
    with pytest.raises(UsageError, match="--size True"):
        add_base(
            reg, name=NEW, source="a/b", sha256="b" * 64, size=True, arch=dict(_index(reg)["bases"][0]["architecture"])
        )
    add_base(reg, name=NEW, source="a/b", sha256="b" * 64, size=0, arch=dict(_index(reg)["bases"][0]["architecture"]))
    assert _index(reg)["bases"][-1]["size"] == 0


def test_add_base_sha256_in_upper_case_is_recorded_in_lower_case(reg: Path) -> None:
    assert main(_meta(reg, sha="B" * 64)) == 0
    assert _index(reg)["bases"][-1]["sha256"] == "b" * 64


def test_add_base_records_source_file_and_family_given(reg: Path) -> None:
    arch = dict(_index(reg)["bases"][0]["architecture"])
    add_base(reg, name=NEW, source="a/b", source_file=f"weights/{NEW}.pth", sha256="b" * 64, arch=arch, family="fam")
    base = _index(reg)["bases"][-1]
    assert base["source"]["file"] == f"weights/{NEW}.pth" and base["family"] == "fam"
    with pytest.raises(UsageError, match=r"differs from its file 'other.pth' \(IDX006\)"):
        add_base(reg, name="rwkv7-x-20270101", source="a/b", source_file="other.pth", sha256="c" * 64, arch=arch)


def test_add_base_twice_is_refused_even_without_its_directory(reg: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import shutil

    shutil.rmtree(reg / TINY_BASE)
    before = snapshot(reg)
    assert main(_meta(reg, name=TINY_BASE)) == 1
    assert f"base '{TINY_BASE}' already exists" in clean_error(capsys.readouterr().err)
    assert snapshot(reg) == before


def test_add_base_refuses_a_stray_directory_of_its_name(reg: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (reg / NEW).mkdir()
    (reg / NEW / "x.txt").write_text("x")
    before = snapshot(reg)
    assert main(_meta(reg)) == 1
    assert f"{reg / NEW} already exists" in clean_error(capsys.readouterr().err)
    assert snapshot(reg) == before


# --- add: refusals ---------------------------------------------------------------------------------


def _add(
    reg: Path, tmp_path: Path, *extra: str, name: str = "s9.pth", version: str = "v9", train: Any = None, **over: Any
) -> list[str]:
    st = write_state(tmp_path / "in" / name, seed=21)
    t = _train(tmp_path, train or state_train(version, **over), f"train-{name}-{version}.json")
    return ["add", str(reg), str(st), "--base", TINY_BASE, "--data-version", version, "--train", t, *extra]


def _add_miss(reg: Path, tmp_path: Path, group: str | None, version: str = "v3", **kw: Any) -> list[str]:
    f = tmp_path / "in" / (group or "nogroup") / "adapter-final.pth"
    write_miss(f, seed=5)
    train = kw.pop("train", None) or miss_train(version)
    argv = ["add", str(reg), str(f), "--base", TINY_BASE, "--data-version", version, "--train", _train(tmp_path, train)]
    return argv + (["--group", group] if group else [])


@pytest.mark.parametrize(
    ("argv", "code", "message"),
    [
        (lambda r, t: _add(r, t, version="vx"), 2, "--data-version 'vx' must look like v1.41"),
        (lambda r, t: _add(r, t, "--group", "g"), 2, "--group is only for MiSS adapters"),
        (lambda r, t: _add(r, t, "--id", "s1"), 1, "entry id 's1' exists"),
        (lambda r, t: _add(r, t, name="s1.pth"), 1, "entry id 's1' exists"),
        (lambda r, t: _add(r, t, train=miss_train("v9")), 1, "--train says method 'miss', the file is a state"),
        (
            lambda r, t: _add(r, t, data={"version": "v8", "rows": 1, "sha256": "a" * 64}),
            1,
            "--train data.version is 'v8'",
        ),
        (lambda r, t: _add_miss(r, t, None), 2, "a MiSS adapter needs --group NAME"),
        (lambda r, t: _add_miss(r, t, ".hidden"), 2, "--group '.hidden' is not usable as a folder name"),
        (lambda r, t: _add_miss(r, t, "r4-z"), 1, "--train has no run for group 'r4-z'"),
    ],
    ids=[
        "version",
        "group-on-state",
        "id-given",
        "id-default",
        "method",
        "data-version",
        "no-group",
        "bad-group",
        "no-run",
    ],
)
def test_add_refusals_name_the_problem_and_change_nothing(
    reg: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: Any, code: int, message: str
) -> None:
    args = argv(reg, tmp_path)
    before = snapshot(reg)
    assert main(args) == code
    assert message in clean_error(capsys.readouterr().err)
    assert snapshot(reg) == before


def _freeze(root: Path) -> None:
    edit_index(root, lambda i: i["bases"][0].update(status="frozen"))


ADD_CASES: dict[str, tuple[Callable[[Path], None] | None, str, dict[str, Any], str]] = {
    # name: (prepare the registry, method of the file, add_entry arguments, message)
    "frozen-base": (_freeze, "state", {"data_version": "v1", "train": state_train()}, "is frozen"),
    "method-mismatch": (
        None,
        "state",
        {"data_version": "v1", "train": miss_train("v1")},
        "--train says method 'miss', the file is a state",
    ),
    "data-version-mismatch": (
        None,
        "state",
        {"data_version": "v3", "train": state_train("v1")},
        "--train data.version is 'v1', --data-version is 'v3'",
    ),
    "no-run-for-group": (
        None,
        "miss",
        {"data_version": "v2", "train": miss_train(), "group": "r4-c"},
        "--train has no run for group 'r4-c'",
    ),
}


@pytest.mark.parametrize("case", sorted(ADD_CASES))
def test_add_refusal_changes_nothing(case: str, reg: Path, tmp_path: Path) -> None:
    """`add` refuses a file that does not fit and leaves every byte of the registry as it was."""
    prepare, method, kw, message = ADD_CASES[case]
    if prepare:
        prepare(reg)
    if method == "state":
        src = write_state(tmp_path / "src" / "s2.pth", seed=3)
    else:
        src = tmp_path / "src" / "r4-c" / "adapter-final.pth"
        write_miss(src, seed=7)
    before = snapshot(reg, lock=True)
    with pytest.raises(RefusedError) as info:
        add_entry(reg, src, base=TINY_BASE, **copy.deepcopy(kw))
    assert message in info.value.message
    assert snapshot(reg, lock=True) == before


def test_add_refuses_a_train_json_that_breaks_its_schema(reg: Path, tmp_path: Path) -> None:
    train = state_train("v9")
    del train["command"]
    with pytest.raises(RefusedError, match=r"does not follow schemas/train.schema.json \(SCH003\)"):
        add_entry(reg, write_state(tmp_path / "s9.pth"), base=TINY_BASE, data_version="v9", train=train)


def test_add_refuses_an_unknown_sampling_or_profile_as_usage_errors(reg: Path, tmp_path: Path) -> None:
    st = write_state(tmp_path / "s9.pth")
    with pytest.raises(UsageError, match="--sampling 'greed' is not a sampling preset of RWKV-Agent") as e:
        add_entry(reg, st, base=TINY_BASE, data_version="v9", train=state_train("v9"), sampling="greed")
    assert e.value.hint.startswith("Did you mean 'greedy'? ")
    with pytest.raises(UsageError, match="--profile 'chat'"):
        add_entry(reg, st, base=TINY_BASE, data_version="v9", train=state_train("v9"), profile="chat")


def test_add_refuses_a_base_marked_frozen_by_hand(
    reg: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from regtools import resum

    edit_index(reg, lambda index: index["bases"][0].update(status="frozen"))
    resum(reg)
    before = snapshot(reg)
    assert main(_add(reg, tmp_path)) == 1
    assert f"base '{TINY_BASE}' is frozen: it gets no new files" in clean_error(capsys.readouterr().err)
    assert snapshot(reg) == before


def test_add_of_a_registered_path_whose_file_is_gone_says_to_restore_it(
    reg: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (reg / STATE).unlink()
    before = snapshot(reg)
    assert main(_add(reg, tmp_path, "--id", "s1-again", name="s1.pth", version="v1")) == 1
    err = clean_error(capsys.readouterr().err)
    assert f"{STATE} is registered as entry 's1', but its file is missing (LAY008)" in err
    assert f"hint: Restore it (`git checkout -- {STATE}`" in err
    assert snapshot(reg) == before


def test_add_refuses_other_hyperparameters_in_a_miss_directory(
    reg: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from regtools import resum

    (reg / f"{TINY_BASE}/miss/v2/r4-b/adapter-final.pth").unlink()
    (reg / f"{TINY_BASE}/miss/v2/r4-b").rmdir()
    edit_index(reg, lambda index: index.update(entries=[e for e in index["entries"] if e.get("group") != "r4-b"]))
    resum(reg)
    before = snapshot(reg)
    other = miss_train("v2", hyperparameters={"rank": 4, "alpha": 16, "ctx": 4096})
    assert main(_add_miss(reg, tmp_path, "r4-b", "v2", train=other)) == 1
    assert "train.json: hyperparameters differs from the existing train.json" in clean_error(capsys.readouterr().err)
    assert snapshot(reg) == before
    # the same hyper-parameters: the run recorded already is kept once, train.json unchanged
    train_before = (reg / f"{TINY_BASE}/miss/v2/train.json").read_bytes()
    assert main(_add_miss(reg, tmp_path, "r4-b", "v2")) == 0
    assert (reg / f"{TINY_BASE}/miss/v2/train.json").read_bytes() == train_before
    runs = json.loads(train_before)["runs"]
    assert [r["group"] for r in runs] == ["r4-a", "r4-b"]


def test_add_refuses_a_train_json_whose_alpha_is_not_the_adapters(
    reg: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """TRN008 in add: a new data version whose --train says alpha 16 for an adapter trained (its miss.json) with
    alpha 8 is refused before anything is written; a mutant of the demo's train.json alpha survived without it."""
    before = snapshot(reg)
    other = miss_train("v3", hyperparameters={"rank": 4, "alpha": 16, "ctx": 4096})
    assert main(_add_miss(reg, tmp_path, "r4-a", "v3", train=other)) == 1
    assert "TRN008" in clean_error(capsys.readouterr().err)
    assert snapshot(reg) == before
    assert main(_add_miss(reg, tmp_path, "r4-a", "v3")) == 0  # rank 4, alpha 8: those of the file


def test_a_staged_copy_that_differs_from_the_checked_file_is_refused(
    reg: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rwkv_registry.core.errors import RegistryIOError
    from rwkv_registry.fs.atomic import Transaction

    copy = Transaction.copy_file

    def copy_then_change(self: Transaction, rel: str, src: Any) -> None:
        copy(self, rel, src)
        with open(self.staged[-1][0], "ab") as f:
            f.write(b"\0")

    monkeypatch.setattr(Transaction, "copy_file", copy_then_change)
    before = snapshot(reg)
    with pytest.raises(RegistryIOError, match="changed while it was being added"):
        add_entry(reg, write_state(tmp_path / "s9.pth"), base=TINY_BASE, data_version="v9", train=state_train("v9"))
    assert snapshot(reg) == before


# --- add: what is written --------------------------------------------------------------------------


def test_a_new_miss_directory_gets_the_run_of_its_group_only_and_the_defaults(reg: Path, tmp_path: Path) -> None:
    assert main(_add_miss(reg, tmp_path, "r4-b", "v3.1", train=miss_train("v3.1"))) == 0
    train = json.loads((reg / f"{TINY_BASE}/miss/v3.1/train.json").read_text())
    assert [r["group"] for r in train["runs"]] == ["r4-b"]
    e = _index(reg)["entries"][-1]
    assert (e["id"], e["adapter_id"], e["profile"], e["sampling"]) == ("v31-r4-b", "v31-r4-b", "g1k-think", "g1k-agent")
    assert main([*_add_miss(reg, tmp_path, "r4-a", "v3.1", train=miss_train("v3.1")), "--adapter-id", "mine"]) == 0
    e = _index(reg)["entries"][-1]
    assert (e["id"], e["adapter_id"]) == ("v31-r4-a", "mine")


def test_recommended_moves_only_within_its_base_and_method(reg: Path, tmp_path: Path) -> None:
    other = "rwkv7-other-20270101-ctx4096"
    assert main(_meta(reg, name=other)) == 0
    st = write_state(tmp_path / "o" / "s5.pth", seed=5)
    add_entry(reg, st, base=other, data_version="v1", train=state_train("v1"), recommended=True)
    assert main([*_add(reg, tmp_path), "--recommended"]) == 0
    marked = sorted(e["id"] for e in _index(reg)["entries"] if e["recommended"])
    assert marked == ["s5", "s9", "v2-r4-a"]  # s1 lost it; the MiSS one and the other base's kept theirs


# --- update_index / readme -------------------------------------------------------------------------


def test_update_index_refuses_an_edit_that_breaks_the_schema_and_writes_nothing(reg: Path) -> None:
    from rwkv_registry.store.ops import update_index

    before = snapshot(reg)
    with pytest.raises(RefusedError, match=r"the new index\.json would not follow its schema"):
        update_index(reg, lambda index: index["entries"][0].update(recommended="yes"))
    with pytest.raises(UsageError, match="the README template lacks the generated-section markers"):
        update_index(reg, lambda index: None, readme_template="# no markers\n")
    assert snapshot(reg) == before


def test_readme_uses_the_registry_title_when_rebuilt(reg: Path) -> None:
    from rwkv_registry.store.ops import update_index

    update_index(reg, lambda index: index["registry"].update(title="Tiny weights"))
    assert main(["readme", str(reg), "--reset"]) == 0
    assert (reg / "README.md").read_text().startswith("# Tiny weights\n")
    (reg / "README.md").unlink()
    assert main(["readme", str(reg)]) == 0
    assert (reg / "README.md").read_text().startswith("# Tiny weights\n")
    assert main(["validate", str(reg)]) == 0


def test_add_base_refuses_a_source_that_is_not_owner_repo(reg: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = snapshot(reg)
    argv = [
        "add-base",
        str(reg),
        "--name",
        NEW,
        "--sha256",
        "b" * 64,
        "--arch",
        TINY_ARCH_ARG,
        "--source",
        "just-a-name",
    ]
    assert main(argv) == 2
    assert "--source 'just-a-name' is not OWNER/REPO" in clean_error(capsys.readouterr().err)
    assert snapshot(reg) == before


# --- README rendering ------------------------------------------------------------------------------


def _score(value: float, **more: Any) -> dict[str, Any]:
    s = {"benchmark": "exam", "date": "2026-10-20", "score": value, "unit": "percent", "solved": None, "total": 60,
         "runs": 1, "backend": "rwkv_lightning_cuda 1.8.1", "note": None, "report": None}  # fmt: skip
    s.update(more)
    return s


def _readme_rows(root: Path) -> list[str]:
    return [line for line in (root / "README.md").read_text("utf-8").splitlines() if line.startswith("| ")]


def test_readme_rows_follow_index_order_with_paths_relative_to_the_base(reg: Path, tmp_path: Path) -> None:
    argv = [*_add(reg, tmp_path, name="s0.pth", version="v1"), "--description", "two\nlines | here", "--recommended"]
    assert main(argv) == 0
    rows = [r for r in _readme_rows(reg) if r.startswith("| state/v1/")]
    assert rows[0] == f"| state/v1/s1.pth | s1 | State | v1 (100 rows, sha256 {DATA_SHA[:8]}…) | g1k | g1k-agent | — |"
    assert rows[1].startswith("| state/v1/s0.pth | s0 | State |")
    assert rows[1].endswith("| g1k | g1k-agent | two lines \\| here (recommended) |")
    assert not [r for r in _readme_rows(reg) if "(no weights yet)" in r]


def test_readme_shows_scores_issues_and_unpublished_weights_under_their_own_base(reg: Path) -> None:
    from rwkv_registry.store.ops import update_index

    other = "rwkv7-other-20270101-ctx4096"
    assert main(_meta(reg, name=other)) == 0

    def edit(index: dict[str, Any]) -> None:
        base = index["bases"][0]
        base["scores"] = [_score(10.0, solved=0)]
        entry = index["entries"][0]
        entry["scores"] = [_score(12.5, solved=7.5, run_scores=[12.0, 13.0])]
        entry["known_issues"] = ["slow on long prompts"]
        index["known_issues"] = ["everything is tiny"]
        index["unpublished"] = [
            {
                "id": "u1",
                "base": other,
                "method": "state",
                "data": {"version": "v1"},
                "description": "",
                "scores": [_score(3.0)],
            },
        ]

    update_index(reg, edit)
    text = (reg / "README.md").read_text("utf-8")
    mine, theirs = text.split(f"### {other}")
    assert "| base alone | exam | 2026-10-20 | 10.0% (0/60) |" in mine
    assert "| s1 | exam | 2026-10-20 | 12.5% (7.5/60) | 1 | rwkv_lightning_cuda 1.8.1 | runs 12.0, 13.0 |" in mine
    assert "- s1: slow on long prompts" in mine
    assert "u1 (not uploaded)" not in mine and "| u1 (not uploaded) | exam |" in theirs
    assert "| (no weights yet) | | | | | | |" in theirs
    assert "### Known issues\n\n- everything is tiny" in theirs


def test_add_base_is_not_refused_for_uncommitted_files_under_a_base_it_does_not_close(reg: Path) -> None:
    """GIT003 files under a base superseded earlier (another family) do not stop a new base of this family."""
    import shutil

    if shutil.which("git") is None:
        pytest.skip("git not installed")
    from regtools import git, git_publish

    arch = dict(_index(reg)["bases"][0]["architecture"])
    add_base(reg, name="rwkv7-tiny-20260301-ctx4096", source="a/b", sha256="6" * 64, arch=arch)
    add_base(reg, name="rwkv7-other-20260101-ctx4096", source="a/b", sha256="7" * 64, arch=arch)
    git_publish(reg)
    (reg / TINY_BASE / "state" / "v1" / "late.pth").write_bytes((reg / STATE).read_bytes())
    add_base(reg, name="rwkv7-other-20270101-ctx4096", source="a/b", sha256="8" * 64, arch=arch)
    assert {b["name"]: b["status"] for b in _index(reg)["bases"]}["rwkv7-other-20260101-ctx4096"] == "frozen"
    assert "late.pth" in git(reg, "status", "--porcelain")


# --- atomic writes and the lock --------------------------------------------------------------------


def test_every_file_is_fsynced_before_its_rename_and_its_directory_after(
    reg: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    events: list[tuple[str, str]] = []
    fsync, replace = os.fsync, os.replace

    def spy_fsync(fd: int) -> None:
        events.append(("fsync", os.readlink(f"/proc/self/fd/{fd}")))
        fsync(fd)

    def spy_replace(src: Any, dst: Any, *, src_dir_fd: int | None = None, dst_dir_fd: int | None = None) -> None:
        replace(src, dst, src_dir_fd=src_dir_fd, dst_dir_fd=dst_dir_fd)

        def full(name: Any, fd: int | None) -> str:  # a name in a directory opened by atomic.open_registry_dir
            return os.path.realpath(name if fd is None else os.path.join(os.readlink(f"/proc/self/fd/{fd}"), name))

        events.append(("replace", f"{full(src, src_dir_fd)}>{full(dst, dst_dir_fd)}"))

    monkeypatch.setattr(os, "fsync", spy_fsync)
    monkeypatch.setattr(os, "replace", spy_replace)
    add_base(reg, name=NEW, source="a/b", sha256="b" * 64, arch=dict(_index(reg)["bases"][0]["architecture"]))
    renames = [(i, *e[1].split(">")) for i, e in enumerate(events) if e[0] == "replace"]
    assert len(renames) >= 6  # the journal, index.json, README.md, two .gitkeep, SHA256SUMS
    for i, src, dst in renames:
        synced = [j for j, e in enumerate(events) if e == ("fsync", src)]
        assert synced and synced[0] < i, f"{src} renamed before it was fsynced"
        parent = os.path.dirname(dst)
        assert any(e == ("fsync", parent) for e in events[i + 1 :]), f"{parent} not fsynced after the rename"


def test_a_failed_atomic_write_leaves_no_temporary_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    from rwkv_registry.core.errors import RegistryIOError
    from rwkv_registry.fs.atomic import atomic_write_bytes

    def fail(src: Any, dst: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(RegistryIOError, match="No space left on device"):
        atomic_write_bytes(tmp_path / "f.txt", b"data")
    assert list(tmp_path.iterdir()) == []


def test_a_blocked_writer_waits_its_timeout_in_all(
    reg: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """timeout == the notice delay: no waiting notice; a longer timeout: the notice, and the whole wait is the
    timeout (not the timeout after the notice)."""
    import time

    from filelock import FileLock

    from rwkv_registry.core.errors import LockedError
    from rwkv_registry.fs import atomic

    monkeypatch.setattr(atomic, "_stderr_is_terminal", lambda: True)
    monkeypatch.setattr(atomic, "WAIT_NOTICE_TTY_S", 0.4)
    holder = FileLock(str(reg / atomic.LOCK_NAME))
    holder.acquire()
    try:
        with pytest.raises(LockedError), atomic.registry_lock(reg, timeout=0.4):
            pass
        assert "waiting for the lock" not in capsys.readouterr().err
        t0 = time.monotonic()
        with pytest.raises(LockedError), atomic.registry_lock(reg, timeout=0.8):
            pass
        assert time.monotonic() - t0 < 1.1
        assert "waiting for the lock held by another rwkv-registry command… (up to 0.8 s)" in capsys.readouterr().err
    finally:
        holder.release()


def test_init_beside_an_index_json_that_is_no_registry(tmp_path: Path) -> None:
    """A directory with index.json but neither SHA256SUMS nor README.md (some other project) is no registry."""
    (tmp_path / "index.json").write_text("{}")
    assert main(["init", str(tmp_path / "reg")]) == 0
    assert (tmp_path / "reg" / "SHA256SUMS").is_file()


@pytest.mark.parametrize("command", ["sums", "readme", "recover", "add-base"])
def test_write_commands_on_an_empty_directory_create_nothing(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    extra = (
        ["--name", NEW, "--sha256", "b" * 64, "--arch", TINY_ARCH_ARG, "--source", "a/b"]
        if command == "add-base"
        else []
    )
    assert main([command, str(empty), *extra]) == 2
    assert "is not a registry (no index.json)" in clean_error(capsys.readouterr().err)
    assert list(empty.iterdir()) == []


def test_add_takes_a_file_whose_only_findings_are_warnings(reg: Path, tmp_path: Path) -> None:
    """Mutant: `add` refused on any finding of the file, warnings too: a MiSS adapter whose scale is not alpha / rank
    (MIS017, a warning: the server uses the manifest's scale) is accepted, and validate then warns."""
    from regtools import custom_miss

    from rwkv_registry.engine.validate import validate_registry

    f = tmp_path / "in" / "r4-c" / "adapter-final.pth"
    f.parent.mkdir(parents=True)
    custom_miss(f, manifest_edit=lambda m: m.update(scale=3.0))
    add_entry(reg, f, base=TINY_BASE, data_version="v3", train=miss_train("v3", groups=("r4-c",)), group="r4-c")
    found = validate_registry(reg, use_cache=False).findings
    assert [(x.code, x.path) for x in found if x.code.startswith("MIS")] == [
        ("MIS017", f"{TINY_BASE}/miss/v3/r4-c/adapter-final.pth")
    ]
    assert not [x for x in found if x.severity == "error"]


@pytest.mark.parametrize(
    ("key", "edit"),
    [
        ("trainer", lambda t: t["trainer"].update(version="1.8.2")),
        ("data", lambda t: t["data"].update(sha256="c" * 64)),
    ],
    ids=["trainer", "data"],
)
def test_add_refuses_another_trainer_or_data_in_a_miss_directory(
    reg: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], key: str, edit: Any
) -> None:
    """Mutants: the trainer, or the data, left out of the fields a new run must share with the existing train.json
    of its data-version directory: a run trained by another build was merged in silently, its trainer lost; and
    other data was refused only through TRN003, worded as a mismatch with the directory's entries."""
    from regtools import resum

    (reg / f"{TINY_BASE}/miss/v2/r4-b/adapter-final.pth").unlink()
    (reg / f"{TINY_BASE}/miss/v2/r4-b").rmdir()
    edit_index(reg, lambda index: index.update(entries=[e for e in index["entries"] if e.get("group") != "r4-b"]))
    resum(reg)
    before = snapshot(reg)
    other = miss_train("v2")
    edit(other)
    assert main(_add_miss(reg, tmp_path, "r4-b", "v2", train=other)) == 1
    assert f"train.json: {key} differs from the existing train.json" in clean_error(capsys.readouterr().err)
    assert snapshot(reg) == before


def test_recover_never_looks_inside_dot_git(reg: Path) -> None:
    """Mutant: the temporary-file sweep walked into `.git` and deleted whatever matched the prefix there."""
    from rwkv_registry.fs.atomic import TMP_PREFIX, recover

    (reg / ".git").mkdir()
    kept = reg / ".git" / f"{TMP_PREFIX}keep"
    kept.write_text("not ours")
    (reg / f"{TMP_PREFIX}0123-index.json").write_text("ours")
    assert recover(reg) == ["removed 1 temporary file(s) of an interrupted write"]
    assert kept.read_text() == "not ours"


def test_a_journal_that_cannot_be_written_rolls_the_write_back(
    reg: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Mutant: the transaction marked journaled before its journal was written: a journal write that failed (a full
    disk) left the staged temporary files behind, since rollback thought the write rolled forward."""
    from rwkv_registry.core.errors import RegistryIOError
    from rwkv_registry.fs import atomic

    real = atomic._atomic_write

    def no_journal(path: Path, data: bytes, fault: str = "") -> None:
        if path.name == atomic.JOURNAL_NAME:
            raise RegistryIOError(f"cannot write {path}: No space left on device")
        real(path, data, fault)

    monkeypatch.setattr(atomic, "_atomic_write", no_journal)
    before = snapshot(reg)
    with pytest.raises(RegistryIOError, match="No space left on device"):
        add_entry(reg, write_state(tmp_path / "s9.pth"), base=TINY_BASE, data_version="v9", train=state_train("v9"))
    assert snapshot(reg) == before


def test_atomic_write_bytes_fsyncs_the_directory_after_its_rename(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Mutant: atomic_write_bytes without the directory fsync after its rename (a crash could then lose the new
    name); inside a commit the root's fsync right after the journal hid it, but `compare`'s result files rely on it."""
    import os

    from rwkv_registry.fs.atomic import atomic_write_bytes

    events: list[str] = []
    fsync, replace = os.fsync, os.replace

    def spy_fsync(fd: int) -> None:
        events.append(f"fsync {os.readlink(f'/proc/self/fd/{fd}')}")
        fsync(fd)

    def spy_replace(src: Any, dst: Any) -> None:
        replace(src, dst)
        events.append(f"replace {dst}")

    monkeypatch.setattr(os, "fsync", spy_fsync)
    monkeypatch.setattr(os, "replace", spy_replace)
    atomic_write_bytes(tmp_path / "f.txt", b"data")
    assert events[1:] == [f"replace {tmp_path / 'f.txt'}", f"fsync {tmp_path}"]
    assert (tmp_path / "f.txt").read_bytes() == b"data"


@pytest.mark.parametrize("entry_id", ["has space", "x" * 200])
def test_add_refuses_an_id_the_schema_refuses_and_writes_nothing(reg: Path, tmp_path: Path, entry_id: str) -> None:
    """An --id outside the schema's form (a space, over 128 characters) is refused by the schema check of the new
    index.json, before anything is written (mutation audit: that check was the only one to catch it)."""
    src = write_state(tmp_path / "src" / "n1.pth", seed=101)
    before = snapshot(reg)
    with pytest.raises(RefusedError, match=r"the new index\.json would not follow its schema: \$\.entries\[3\]\.id"):
        add_entry(reg, src, base=TINY_BASE, data_version="v7", train=state_train("v7"), entry_id=entry_id)
    assert snapshot(reg) == before


def test_add_refused_by_one_train_json_error_counts_no_more(reg: Path, tmp_path: Path) -> None:
    src = write_state(tmp_path / "src" / "n1.pth", seed=101)
    before = snapshot(reg)
    with pytest.raises(RefusedError) as e:
        trainer = {"name": "rwkv_miss_tune", "version": "1.8.1", "commit": "abcdef1"}  # the other method's trainer
        add_entry(reg, src, base=TINY_BASE, data_version="v7", train=state_train("v7", trainer=trainer))
    assert str(e.value).startswith("--train: TRN007 ") and "more)" not in str(e.value), str(e.value)
    assert len(e.value.findings) == 1
    assert snapshot(reg) == before


def test_after_an_add_and_an_edit_validate_checks_only_the_edited_entry_against_the_schema(
    reg: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`add` journals the schema results of the entries it wrote beside the validation cache: once index.json is
    edited afterwards (its verdict no longer applies), the next validate checks the edited entry against the schema
    and not the added one (mutation audit: journaling the entries known before instead went unnoticed)."""
    from rwkv_registry import schemas
    from rwkv_registry.engine.validate import validate_registry

    validate_registry(reg)  # the cache knows the registry
    add_entry(
        reg,
        write_state(tmp_path / "src" / "n1.pth", seed=101),
        base=TINY_BASE,
        data_version="v7",
        train=state_train("v7"),
    )
    edit_index(reg, lambda index: index["entries"][0].update(description="edited by hand"))
    schemas.forget_results()  # a new process: only the cache on disk remembers
    checked = jsonschema_checks(monkeypatch)
    validate_registry(reg)
    assert {i["id"] for i in checked if isinstance(i, dict) and "id" in i and "path" in i} == {"s1"}  # no other entry
