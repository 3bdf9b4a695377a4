"""`add` and `add-base` say, right after the write (exit 0), every warning that the write brings and `validate`
reports from then on, and none that was there before (docs/rules.md; README, "add").

Each test checks what the command printed against `validate` itself: the warnings of the registry after the
write, less those before it. One test per rule shows it printed; the other shows the same code, already
reported elsewhere, not repeated by a later write."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from regtools import TINY_BASE, miss_train, state_train, write_miss, write_state

from rwkv_registry.cli.main import main
from rwkv_registry.core.rules import Finding
from rwkv_registry.engine.validate import validate_registry

STATE = f"{TINY_BASE}/state/v1/s1.pth"
OTHER = "rwkv7-other-20260301-ctx4096"  # another family: never supersedes the tiny base
NEWER = TINY_BASE.replace("20260101", "20260301")  # the tiny base's successor


def _warnings(reg: Path, severity: str = "warning") -> set[tuple[str, str, str]]:
    return {
        (f.code, f.path, f.message) for f in validate_registry(reg, use_cache=False).findings if f.severity == severity
    }


def _printed(err: str, kind: str = "warning") -> set[tuple[str, str, str]]:
    """(code, path, message) of each `KIND: CODE PATH: MESSAGE` line (each followed by its `hint:` line); KIND is
    `warning` or `note`."""
    lines = err.splitlines()
    out = set()
    for i, line in enumerate(lines):
        if line.startswith(f"{kind}: "):
            code, rest = line[len(kind) + 2 :].split(" ", 1)
            path, message = rest.split(": ", 1)
            assert lines[i + 1].startswith("hint: "), err
            out.add((code, path, message))
    assert len(out) == err.count(f"{kind}: "), err
    return out


def _run(reg: Path, argv: list[str], capsys: pytest.CaptureFixture[str]) -> set[tuple[str, str, str]]:
    """Run the command (exit 0), check that it printed exactly the warnings validate gains, return them."""
    before = _warnings(reg)
    capsys.readouterr()
    assert main(argv) == 0
    printed = _printed(capsys.readouterr().err)
    assert printed == _warnings(reg) - before
    return printed


def _codes(found: set[tuple[str, str, str]]) -> list[str]:
    return sorted(f[0] for f in found)


def _train(tmp_path: Path, data: dict[str, Any]) -> str:
    p = tmp_path / f"train-{len(list(tmp_path.glob('train-*.json')))}.json"
    p.write_text(json.dumps(data))
    return str(p)


def _add_state(
    reg: Path, tmp_path: Path, src: Path, version: str, *extra: str, base: str = TINY_BASE, **t: Any
) -> list[str]:
    train = _train(tmp_path, state_train(version, **t))
    return ["add", str(reg), str(src), "--base", base, "--data-version", version, "--train", train, *extra]


def _add_base(reg: Path, name: str, sha: str, *extra: str) -> list[str]:
    return ["add-base", str(reg), "--name", name, "--sha256", sha, "--size", "1234", "--source", "BlinkDL/rwkv7-g1",
            "--arch", "n_layer=2,n_embd=128,vocab_size=65536,ffn_size=512", *extra]  # fmt: skip


def _other_base(reg: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(_add_base(reg, OTHER, "7" * 64)) == 0
    capsys.readouterr()


# --- add ------------------------------------------------------------------------------------------------------


def test_add_says_idx011_a_copy_of_another_entry(reg: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    copy = tmp_path / "in" / "s1copy.pth"
    copy.parent.mkdir()
    shutil.copy(reg / STATE, copy)
    found = _run(reg, _add_state(reg, tmp_path, copy, "v9"), capsys)
    rel = f"{TINY_BASE}/state/v9/s1copy.pth"
    assert len(found) == 1
    code, path, message = found.pop()
    assert (code, path) == ("IDX011", rel) and f"entry 's1' at {STATE}" in message
    assert (reg / rel).read_bytes() == (reg / STATE).read_bytes()  # written all the same
    # a later, different State: the copy's IDX011 stays, and is not said again
    other = write_state(tmp_path / "in" / "s2.pth", seed=5)
    assert _run(reg, _add_state(reg, tmp_path, other, "v8"), capsys) == set()
    assert "IDX011" in {c for c, _, _ in _warnings(reg)}


def test_add_says_idx016_data_recorded_otherwise(reg: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Data v1 of the State method, under another base, with another sha256 than the State of the tiny base."""
    _other_base(reg, capsys)
    sha = "ab" * 32
    src = write_state(tmp_path / "in" / "o1.pth", seed=6)
    argv = _add_state(reg, tmp_path, src, "v1", base=OTHER, data={"version": "v1", "rows": 100, "sha256": sha})
    found = _run(reg, argv, capsys)
    assert _codes(found) == ["IDX016"], found
    assert "'s1' records sha256" in found.pop()[2]
    # a second State of that run (same train.json, same data): the data version's IDX016 is said once
    src = write_state(tmp_path / "in" / "o2.pth", seed=7)
    argv = _add_state(reg, tmp_path, src, "v1", base=OTHER, data={"version": "v1", "rows": 100, "sha256": sha})
    assert _run(reg, argv, capsys) == set()
    assert "IDX016" in {c for c, _, _ in _warnings(reg)}


def test_add_says_trn010_a_command_naming_another_base(
    reg: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _other_base(reg, capsys)
    command = f"rwkv_state_tune --model /models/{TINY_BASE}.pth --lr 0.01"
    src = write_state(tmp_path / "in" / "o1.pth", seed=6)
    found = _run(reg, _add_state(reg, tmp_path, src, "v3", base=OTHER, command=command), capsys)
    assert [(c, p) for c, p, _ in found] == [("TRN010", f"{OTHER}/state/v3/train.json")]
    # the next State of that directory keeps its train.json (and its TRN010): not said again
    src = write_state(tmp_path / "in" / "o2.pth", seed=7)
    assert _run(reg, _add_state(reg, tmp_path, src, "v3", base=OTHER, command=command), capsys) == set()
    assert "TRN010" in {c for c, _, _ in _warnings(reg)}


def test_add_says_the_note_trn006_a_trainer_without_its_commit(
    reg: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """TRN006 is a note (info), not a warning: `add` says it as `note:` when its train.json brings it."""
    before = _warnings(reg, "info")
    src = write_state(tmp_path / "in" / "n1.pth", seed=11)  # state_train records no trainer commit
    capsys.readouterr()
    assert main(_add_state(reg, tmp_path, src, "v5")) == 0
    printed = _printed(capsys.readouterr().err, "note")
    assert printed == _warnings(reg, "info") - before
    assert [(c, p) for c, p, _ in printed] == [("TRN006", f"{TINY_BASE}/state/v5/train.json")]
    # the next State of that directory keeps its train.json (and its TRN006): not said again
    before = _warnings(reg, "info")
    src = write_state(tmp_path / "in" / "n2.pth", seed=12)
    assert main(_add_state(reg, tmp_path, src, "v5")) == 0
    assert _printed(capsys.readouterr().err, "note") == set() and _warnings(reg, "info") == before
    # a train.json that records its commit brings none
    trainer = {"name": "rwkv_state_tune", "version": "1.8.1", "commit": "47df608"}
    src = write_state(tmp_path / "in" / "n3.pth", seed=13)
    assert main(_add_state(reg, tmp_path, src, "v6", trainer=trainer)) == 0
    assert _printed(capsys.readouterr().err, "note") == set() and _warnings(reg, "info") == before


def test_add_says_trn013_a_misspelt_train_json_key(
    reg: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = write_state(tmp_path / "in" / "t1.pth", seed=21)
    train = state_train("v7")
    train["finshed"] = train.pop("finished")
    printed = _run(reg, ["add", str(reg), str(src), "--base", TINY_BASE, "--data-version", "v7", "--train",
                         _train(tmp_path, train)], capsys)  # fmt: skip
    assert printed == {
        ("TRN013", f"{TINY_BASE}/state/v7/train.json", '$.finshed: unknown key "finshed" (did you mean "finished"?)')
    }


def test_add_says_prf002_a_state_with_the_thinking_profile(
    reg: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = write_state(tmp_path / "in" / "s7.pth", seed=6)
    found = _run(reg, _add_state(reg, tmp_path, src, "v7", "--profile", "g1k-think"), capsys)
    assert found == {("PRF002", f"{TINY_BASE}/state/v7/s7.pth", "entry 's7' is a State with profile g1k-think")}
    src = write_state(tmp_path / "in" / "s8.pth", seed=7)
    assert _run(reg, _add_state(reg, tmp_path, src, "v8"), capsys) == set()
    assert "PRF002" in {c for c, _, _ in _warnings(reg)}


def test_add_says_mis017_a_scale_that_is_not_alpha_over_rank(
    reg: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Shown at the registry path validate names (not the path given on the command line)."""
    from regtools import custom_miss

    src = tmp_path / "in" / "r4-x" / "adapter-final.pth"
    src.parent.mkdir(parents=True)
    custom_miss(src, manifest_edit=lambda m: m.update(scale=99.0))
    train = _train(tmp_path, miss_train("v5", groups=("r4-x", "r4-y")))
    argv = ["add", str(reg), str(src), "--base", TINY_BASE, "--data-version", "v5", "--train", train]
    found = _run(reg, [*argv, "--group", "r4-x"], capsys)
    assert [(c, p) for c, p, _ in found] == [("MIS017", f"{TINY_BASE}/miss/v5/r4-x/adapter-final.pth")]
    src = tmp_path / "in" / "r4-y" / "adapter-final.pth"
    write_miss(src, seed=9)
    argv = ["add", str(reg), str(src), "--base", TINY_BASE, "--data-version", "v5", "--train", train]
    assert _run(reg, [*argv, "--group", "r4-y"], capsys) == set()
    assert "MIS017" in {c for c, _, _ in _warnings(reg)}


def _score(**more: Any) -> dict[str, Any]:
    return {"benchmark": "exam", "date": "2026-10-17", "score": 52.2, "unit": "percent", "solved": 296.5,
            "total": 568, "runs": 2, "backend": None, "note": None, "report": None, **more}  # fmt: skip


def _add_scored(reg: Path, tmp_path: Path, name: str, seed: int, scores: list[dict[str, Any]]) -> list[Finding]:
    from rwkv_registry.store.ops import add_entry

    warned: list[Finding] = []
    src = write_state(tmp_path / "in" / name, seed=seed)
    version = f"v{seed}"
    add_entry(
        reg, src, base=TINY_BASE, data_version=version, train=state_train(version), scores=scores, warnings=warned
    )
    return warned


def _api(reg: Path, add: Any) -> list[tuple[str, str, str]]:
    """``add()`` (the Python API: scores are given only there) returns exactly the warnings and notes validate
    gains; the warnings are returned."""
    before = _warnings(reg) | _warnings(reg, "info")
    warned = add()
    assert {(f.code, f.path, f.message) for f in warned} == (_warnings(reg) | _warnings(reg, "info")) - before
    warned = [f for f in warned if f.severity == "warning"]
    return [(f.code, f.path, f.message) for f in warned]


def test_add_says_idx013_and_idx009_of_its_scores(reg: Path, tmp_path: Path) -> None:
    bad = [_score(solved=280.5, comparison={"against": "s1", "wins": 95, "losses": 54, "p_value": 0.9})]
    found = _api(reg, lambda: _add_scored(reg, tmp_path, "s3.pth", 3, bad))
    assert sorted(c for c, _, _ in found) == ["IDX009", "IDX013"], found
    # a later entry with sound scores does not repeat them
    assert _api(reg, lambda: _add_scored(reg, tmp_path, "s4.pth", 4, [_score()])) == []
    assert {"IDX009", "IDX013"} <= {c for c, _, _ in _warnings(reg)}


def test_add_says_idx014_both_ways(reg: Path, tmp_path: Path) -> None:
    """Its comparison against a weight scored on another day; and an older entry's comparison against it."""
    from regtools import edit_index, resum

    edit_index(reg, lambda i: i["entries"][0].update(scores=[_score(date="2026-10-16", score=46.9, solved=None)]))
    resum(reg)
    vs_s1 = {"against": "s1", "wins": 95, "losses": 54, "p_value": 0.001}
    found = _api(reg, lambda: _add_scored(reg, tmp_path, "s3.pth", 3, [_score(comparison=vs_s1)]))
    assert [c for c, _, _ in found] == ["IDX014"] and "entry 's3'" in found[0][2], found
    # s3 is compared with a weight not registered yet (IDX008); once s5 is, with its score of another day, IDX014
    vs_s5 = {"against": "s5", "wins": 95, "losses": 54, "p_value": 0.001}
    edit_index(reg, lambda i: i["entries"][-1]["scores"][0].update(comparison=vs_s5))
    resum(reg)
    found = _api(reg, lambda: _add_scored(reg, tmp_path, "s5.pth", 5, [_score(date="2026-10-18", solved=None)]))
    assert [c for c, _, _ in found] == ["IDX014"] and "entry 's3'" in found[0][2], found
    # and an entry compared with nothing brings none of it
    assert _api(reg, lambda: _add_scored(reg, tmp_path, "s6.pth", 6, [_score(solved=None)])) == []
    assert "IDX014" in {c for c, _, _ in _warnings(reg)}


# --- add-base -------------------------------------------------------------------------------------------------


def test_add_base_says_idx007_an_older_base_kept_active(reg: Path, capsys: pytest.CaptureFixture[str]) -> None:
    found = _run(reg, _add_base(reg, NEWER, "5" * 64, "--keep-previous-active"), capsys)
    assert [(c, p) for c, p, _ in found] == [("IDX007", "index.json")] and f"base {TINY_BASE!r}" in found.pop()[2]
    # a base of another family, kept active too: the tiny base's IDX007 stays and is not said again
    assert _run(reg, _add_base(reg, OTHER, "7" * 64, "--keep-previous-active"), capsys) == set()
    assert "IDX007" in {c for c, _, _ in _warnings(reg)}


def test_add_base_says_idx018_a_vocabulary_that_does_not_fit(reg: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The default --vocab is the world vocabulary (65536 rows): a base whose embedding has 50277 rows says IDX018;
    the same base with its own (unknown offline) vocabulary file says nothing."""
    argv = [a.replace("vocab_size=65536", "vocab_size=50277") for a in _add_base(reg, NEWER, "5" * 64)]
    found = _run(reg, argv, capsys)
    assert [(c, p) for c, p, _ in found] == [("IDX018", "index.json")] and "vocab_size 50277" in found.pop()[2]
    argv = [a.replace("vocab_size=65536", "vocab_size=50277") for a in _add_base(reg, OTHER, "7" * 64)]
    assert _run(reg, [*argv, "--vocab", "20B_tokenizer.json"], capsys) == set()


def _add_state_naming_other(reg: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Add a State (data version v3) whose train.json's command names the file of OTHER, a base not registered yet:
    TRN010 says so at once (trained on another base file); registering OTHER brings the TRN010 naming that base."""
    command = f"rwkv_state_tune --model /models/{OTHER}.pth --lr 0.01"
    src = write_state(tmp_path / "in" / "s3.pth", seed=3)
    assert _run(reg, _add_state(reg, tmp_path, src, "v3", command=command), capsys) == {
        (
            "TRN010",
            f"{TINY_BASE}/state/v3/train.json",
            f"the command line names the base file {OTHER}.pth (not registered), not this base's file {TINY_BASE}.pth",
        )
    }


def test_add_base_says_trn010_of_a_train_json_naming_its_file(
    reg: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A State whose train.json names a base file that is not registered yet: registering that base brings TRN010."""
    _add_state_naming_other(reg, tmp_path, capsys)
    found = _run(reg, _add_base(reg, OTHER, "7" * 64), capsys)
    assert [(c, p) for c, p, _ in found] == [("TRN010", f"{TINY_BASE}/state/v3/train.json")]
    assert _run(reg, _add_base(reg, "rwkv7-third-20260401-ctx4096", "8" * 64), capsys) == set()
    assert "TRN010" in {c for c, _, _ in _warnings(reg)}


def test_add_base_reads_a_linked_train_json_as_validate_does(
    reg: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A train.json that is a symbolic link to a file inside the registry: validate reads it (TRN010), so add-base
    says the TRN010 it brings too; a link leaving the registry is read by neither (LAY005)."""
    _add_state_naming_other(reg, tmp_path, capsys)
    train = reg / TINY_BASE / "state" / "v3" / "train.json"
    train.rename(reg / "shared-train.json")
    train.symlink_to(Path("..", "..", "..", "shared-train.json"))
    found = _run(reg, _add_base(reg, OTHER, "7" * 64), capsys)
    assert [(c, p) for c, p, _ in found] == [("TRN010", f"{TINY_BASE}/state/v3/train.json")]


def test_add_base_does_not_read_a_train_json_linked_out_of_the_registry(
    reg: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _add_state_naming_other(reg, tmp_path, capsys)
    train = reg / TINY_BASE / "state" / "v3" / "train.json"
    train.rename(tmp_path / "outside-train.json")
    train.symlink_to(tmp_path / "outside-train.json")
    assert _run(reg, _add_base(reg, OTHER, "7" * 64), capsys) == set()


def test_add_base_says_idx013_of_its_scores(reg: Path) -> None:
    from rwkv_registry.index.arch import parse_arch_option
    from rwkv_registry.store.ops import add_base

    def add(name: str, sha: str, scores: list[dict[str, Any]]) -> list[Finding]:
        warned: list[Finding] = []
        arch = parse_arch_option("n_layer=2,n_embd=128,vocab_size=65536,ffn_size=512")
        add_base(reg, name=name, sha256=sha, arch=arch, source="BlinkDL/rwkv7-g1", scores=scores, warnings=warned)
        return warned

    found = _api(reg, lambda: add(OTHER, "7" * 64, [_score(solved=280.5)]))
    assert [c for c, _, _ in found] == ["IDX013"] and f"base {OTHER!r}" in found[0][2], found
    assert _api(reg, lambda: add("rwkv7-third-20260401-ctx4096", "8" * 64, [_score()])) == []
    assert "IDX013" in {c for c, _, _ in _warnings(reg)}


def _bytes_of(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name != ".rwkv-registry.lock"
    }


@pytest.mark.parametrize(
    ("score", "words"),
    [
        (_score(comparison={"against": "nowhere", "wins": 3, "losses": 1, "p_value": 0.625}), "compared against"),
        (_score(solved=600, score=600, unit="points"), "solved 600 of 568"),
        (_score(run_scores=[52.2]), "1 run scores for 2 runs"),
    ],
    ids=["unknown-target", "solved-over-total", "run-scores"],
)
def test_add_and_add_base_refuse_scores_that_validate_calls_errors(
    reg: Path, tmp_path: Path, score: dict[str, Any], words: str
) -> None:
    """Scores given from Python that validate would report as an error (IDX008) are refused with the code,
    the registry left byte-identical: add never writes what validate then fails."""
    from rwkv_registry.core.errors import RefusedError
    from rwkv_registry.index.arch import parse_arch_option
    from rwkv_registry.store.ops import add_base

    before = _bytes_of(reg)
    with pytest.raises(RefusedError, match=r"^IDX008: entry 's3', exam 2026-10-17: ") as e:
        _add_scored(reg, tmp_path, "s3.pth", 3, [score])
    assert words in str(e.value) and "nothing was written" in str(e.value) and [f.code for f in e.value.findings]
    arch = parse_arch_option("n_layer=2,n_embd=128,vocab_size=65536,ffn_size=512")
    with pytest.raises(RefusedError, match=rf"^IDX008: base {OTHER!r}, exam 2026-10-17: "):
        add_base(reg, name=OTHER, sha256="7" * 64, arch=arch, source="BlinkDL/rwkv7-g1", scores=[score])
    assert _bytes_of(reg) == before
    assert validate_registry(reg, use_cache=False).ok


def test_add_refuses_a_step_beyond_total_steps(reg: Path, tmp_path: Path) -> None:
    from rwkv_registry.core.errors import RefusedError
    from rwkv_registry.store.ops import add_entry

    before = _bytes_of(reg)
    src = write_state(tmp_path / "in" / "s3.pth", seed=3)
    with pytest.raises(RefusedError, match=r"^IDX008: entry 's3': step 12 is beyond total_steps 10"):
        add_entry(reg, src, base=TINY_BASE, data_version="v3", train=state_train("v3"), step=12, total_steps=10)
    assert _bytes_of(reg) == before


# --- order and edges (mutation audit) -------------------------------------------------------------------------


def _report_order(reg: Path, new: list[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
    """The warnings ``new`` in the order validate reports them."""
    order = [(f.code, f.path, f.message) for f in validate_registry(reg, use_cache=False).findings]
    return sorted(new, key=order.index)


def test_add_says_its_warnings_in_validate_s_report_order(reg: Path, tmp_path: Path) -> None:
    """PRF002 (its file's path) is found before IDX009/IDX013 (index.json), and reported after them."""
    from rwkv_registry.store.ops import add_entry

    warned: list[Finding] = []
    src = write_state(tmp_path / "in" / "s3.pth", seed=3)
    bad = [_score(solved=280.5, comparison={"against": "s1", "wins": 95, "losses": 54, "p_value": 0.9})]
    add_entry(reg, src, base=TINY_BASE, data_version="v3", train=state_train("v3"), profile="g1k-think", scores=bad,
              warnings=warned)  # fmt: skip
    found = [(f.code, f.path, f.message) for f in warned]
    assert sorted(c for c, _, _ in found) == ["IDX009", "IDX013", "PRF002", "TRN006"], found
    assert [c for c, _, _ in found][-1] == "TRN006"  # the note after the warnings, as validate reports it
    found = found[:-1]
    assert found == _report_order(reg, found)
    assert [c for c, _, _ in found][-1] == "PRF002"


def test_add_base_by_metadata_without_arch_is_refused(reg: Path) -> None:
    """The Python API too (the CLI checks its options first): a base by name and sha256 needs its architecture."""
    from rwkv_registry.core.errors import UsageError
    from rwkv_registry.store.ops import add_base

    before = (reg / "index.json").read_bytes()
    with pytest.raises(UsageError, match="give --name, --sha256 and --arch"):
        add_base(reg, name=OTHER, sha256="7" * 64, source="BlinkDL/rwkv7-g1")
    assert (reg / "index.json").read_bytes() == before and not (reg / OTHER).exists()


def test_add_base_reads_on_past_a_train_json_too_large_to_read(
    reg: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A train.json over the size limit (validate: SCH001, nothing read) listed before one that names the new base's
    file: the second one's TRN010 is said all the same."""
    from rwkv_registry.formats.jsonload import DEFAULT_MAX_BYTES

    _add_state_naming_other(reg, tmp_path, capsys)
    big = reg / TINY_BASE / "state" / "a-big"
    big.mkdir()
    with open(big / "train.json", "wb") as fh:  # sparse: no 64 MiB written
        fh.truncate(DEFAULT_MAX_BYTES + 1)
    found = _run(reg, _add_base(reg, OTHER, "7" * 64), capsys)
    assert [(c, p) for c, p, _ in found] == [("TRN010", f"{TINY_BASE}/state/v3/train.json")]


def test_add_base_reads_a_train_json_of_exactly_the_size_limit(
    reg: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The limit is inclusive, as for validate: a train.json of exactly that many bytes is read (its TRN010 said).
    The limit is lowered to the padded train.json's 1 MiB (every other JSON file is smaller)."""
    from regtools import resum

    from rwkv_registry.formats import jsonload

    _add_state_naming_other(reg, tmp_path, capsys)
    path = reg / TINY_BASE / "state" / "v3" / "train.json"
    text = path.read_bytes()
    path.write_bytes(text + b" " * ((1 << 20) - len(text)))
    resum(reg)
    monkeypatch.setattr(jsonload, "DEFAULT_MAX_BYTES", 1 << 20)
    found = _run(reg, _add_base(reg, OTHER, "7" * 64), capsys)
    assert [(c, p) for c, p, _ in found] == [("TRN010", f"{TINY_BASE}/state/v3/train.json")]


def test_add_base_does_not_wait_on_a_fifo_train_json(reg: Path, tmp_path: Path) -> None:
    """A FIFO where a train.json should be (validate: LAY015): looking for TRN010, add-base does not open it for
    reading, which would wait for a writer forever; it ends at once, refused as not a regular file, nothing written."""
    import os
    import subprocess
    import sys

    fifo = reg / TINY_BASE / "state" / "a-fifo"
    fifo.mkdir()
    os.mkfifo(fifo / "train.json")
    index = (reg / "index.json").read_bytes()
    done = subprocess.run(
        [sys.executable, "-m", "rwkv_registry", *_add_base(reg, OTHER, "7" * 64)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert f"{fifo / 'train.json'}" in done.stderr and "not a regular file" in done.stderr
    assert (reg / "index.json").read_bytes() == index and not (reg / OTHER).exists()
