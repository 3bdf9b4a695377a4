"""Cases that a mutation audit of the new rules found untested: LAY014 (fold_moves), IDX010, IDX011,
HSH007 (CR LF), and the SHA256SUMS parser's CR LF handling. Each kills a mutant that the other tests let live."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from regtools import TINY_BASE, all_codes, edit_index, resum, state_train, write_state
from test_validate_rules import MISS_A, STATE, _same_base_file_twice

from rwkv_registry.core.errors import RefusedError, UsageError
from rwkv_registry.core.rules import Finding
from rwkv_registry.engine.validate import validate_registry
from rwkv_registry.index.sums import parse_sums
from rwkv_registry.store.ops import add_entry, write_sums

V1 = f"{TINY_BASE}/state/v1"


def _findings(root: Path, code: str | None = None) -> list[Finding]:
    found = validate_registry(root, use_cache=False).findings
    return [f for f in found if code is None or f.code == code]


def _register_copy(root: Path, name: str) -> str:
    """The State copied to ``name`` beside it and registered as a second entry (IDX011)."""
    copy = f"{V1}/{name}"
    shutil.copy(root / STATE, root / copy)

    def add(index: dict[str, Any]) -> None:
        e = json.loads(json.dumps(next(e for e in index["entries"] if e["path"] == STATE)))
        e.update(id=name.removesuffix(".pth"), path=copy, recommended=False)
        index["entries"].append(e)

    edit_index(root, add)
    resum(root)
    return copy


# --- LAY014 ------------------------------------------------------------------------------------------------


def test_lay014_a_renamed_directory_drops_the_findings_on_its_moved_train_json(reg: Path) -> None:
    """TRN006 (and TRN003) of the moved train.json are part of the move: only LAY014 is left."""
    (reg / V1).rename(reg / f"{V1}.0")
    assert all_codes(validate_registry(reg, use_cache=False)) == ["GIT004", "LAY014"]


def test_lay014_two_equally_good_copies_are_not_guessed(reg: Path) -> None:
    """The recorded file gone, its bytes at two new names, neither closer to the old one: no LAY014."""
    (reg / STATE).rename(reg / f"{V1}/s3.pth")
    shutil.copy(reg / f"{V1}/s3.pth", reg / f"{V1}/s4.pth")
    codes = {f.code for f in _findings(reg)}
    assert "LAY014" not in codes and {"LAY008", "LAY007", "HSH004", "HSH005"} <= codes


def test_lay014_an_edited_upper_case_sha256_still_matches(reg: Path) -> None:
    """index.json's path edited and its sha256 in upper case (SCH002): the bytes still match the file."""
    moved = MISS_A.replace("adapter-final.pth", "adapter.pth")

    def edit(index: dict[str, Any]) -> None:
        e = next(e for e in index["entries"] if e["path"] == MISS_A)
        e.update(path=moved, file=dict(e["file"], sha256=e["file"]["sha256"].upper()))

    edit_index(reg, edit)
    [f] = _findings(reg, "LAY014")
    assert f.path == MISS_A and f"index.json records {moved}" in f.message


def test_lay014_a_directory_moved_to_the_top_keeps_lay002(reg: Path) -> None:
    """A version directory moved out to the top: LAY014, and LAY002 for the new top-level directory stays
    (only a renamed base directory makes LAY002 + LAY003 part of the move)."""
    (reg / V1).rename(reg / "stray")
    found = [(f.code, f.path) for f in _findings(reg) if f.severity == "error"]
    assert sorted(found) == [("LAY002", "stray"), ("LAY014", "stray")]


def test_lay014_one_new_copy_answers_one_missing_file(reg: Path) -> None:
    """Two registered files with the same bytes both gone, one file with those bytes left: it is matched once;
    the other missing file stays LAY008."""
    copy = _register_copy(reg, "s2.pth")
    (reg / STATE).rename(reg / f"{V1}/s9.pth")
    (reg / copy).unlink()
    found = _findings(reg)
    assert [f.path for f in found if f.code == "LAY014"] == [f"{V1}/s9.pth"]
    assert (copy, "LAY008") in {(f.path, f.code) for f in found}


# --- LAY013, HSH001's git note -------------------------------------------------------------------------


def test_lay013_not_without_a_lock_file(reg: Path) -> None:
    (reg / ".rwkv-registry.lock").unlink(missing_ok=True)
    assert _findings(reg, "LAY013") == []


@pytest.mark.skipif(shutil.which("git") is None, reason="git not installed")
def test_hsh001_git_note_in_a_registry_below_the_repository_root(reg: Path, tmp_path: Path) -> None:
    from test_git import publish

    outer = tmp_path / "outer"
    outer.mkdir()
    root = Path(shutil.move(reg, outer / "registry"))
    publish(outer)
    # index.json edited (a published file edited is GIT001 alone, naming HSH001: test_git.py)
    edit_index(root, lambda i: i["entries"][0]["file"].update(sha256="0" * 64))
    [f] = _findings(root, "HSH001")
    assert f.path == STATE and f.message.endswith("(git: index.json changed since HEAD)")


# --- IDX011 / IDX010 -----------------------------------------------------------------------------------


def test_idx011_not_for_two_lfs_pointers_of_one_object(reg: Path) -> None:
    """Two LFS pointers with one oid are not the bytes (LFS001 says `git lfs pull`), so no IDX011."""
    copy = _register_copy(reg, "s1-copy.pth")
    oid = hashlib.sha256(b"x").hexdigest()
    for rel in (STATE, copy):
        (reg / rel).write_text(f"version https://git-lfs.github.com/spec/v1\noid sha256:{oid}\nsize 123\n")
    resum(reg)
    found = _findings(reg)
    assert "LFS001" in {f.code for f in found} and [f for f in found if f.code == "IDX011"] == []


def test_idx011_every_copy_names_the_first_entry(reg: Path) -> None:
    a = _register_copy(reg, "s1-a.pth")
    b = _register_copy(reg, "s1-b.pth")
    found = {f.path: f.message for f in _findings(reg, "IDX011")}
    assert set(found) == {a, b}
    assert all(f"entry 's1' at {STATE}" in m for m in found.values())


def test_idx010_a_sha256_in_upper_case_is_the_same_file(reg: Path) -> None:
    _same_base_file_twice(reg)
    edit_index(reg, lambda i: i["bases"][1].update(sha256=i["bases"][1]["sha256"].upper()))
    [f] = _findings(reg, "IDX010")
    assert f"{TINY_BASE}-copy" in f.message


def test_idx010_a_third_copy_names_the_first_base(reg: Path) -> None:
    _same_base_file_twice(reg)

    def third(index: dict[str, Any]) -> None:
        b = json.loads(json.dumps(index["bases"][0]))
        b.update(name=f"{TINY_BASE}-third", source=dict(b["source"], file=f"{TINY_BASE}-third.pth"))
        index["bases"].append(b)

    edit_index(reg, third)
    found = _findings(reg, "IDX010")
    assert len(found) == 2 and all(f.message.startswith(f"bases {TINY_BASE!r} and ") for f in found)


def test_idx010_not_for_a_base_listed_twice(reg: Path) -> None:
    """The same name twice is IDX001; its sha256 is no second base file."""
    edit_index(reg, lambda i: i["bases"].append(json.loads(json.dumps(i["bases"][0]))))
    found = {f.code for f in _findings(reg)}
    assert "IDX001" in found and "IDX010" not in found


# --- HSH007: CR LF -----------------------------------------------------------------------------------------


def test_hsh007_one_crlf_line_is_reported(reg: Path) -> None:
    p = reg / "SHA256SUMS"
    lines = p.read_bytes().split(b"\n")
    lines[2] += b"\r"
    p.write_bytes(b"\n".join(lines))
    sums = [(f.code, f.message) for f in _findings(reg) if f.code.startswith("HSH")]
    assert sums == [("HSH007", "1 line(s) end in CR LF (first: line 3), not LF")]


def test_parse_sums_skips_a_blank_crlf_line() -> None:
    lines, bad = parse_sums(b"0" * 64 + b"  a\r\n\r\n" + b"1" * 64 + b"  b\r\n")
    assert [(line.lineno, line.path, line.crlf) for line in lines] == [(1, "a", True), (3, "b", True)]
    assert bad == []


# --- ops: add, sums ----------------------------------------------------------------------------------------


def test_add_of_a_registry_into_a_registry_is_not_called_swapped(reg: Path, tmp_path: Path) -> None:
    """FILE a registry, PATH a registry too: nothing is swapped, FILE is a directory."""
    other = tmp_path / "other"
    shutil.copytree(reg, other)
    with pytest.raises(UsageError, match="is a directory, not a weight file"):
        add_entry(reg, other, base=TINY_BASE, data_version="v9", train=state_train("v9"))


def test_sums_written_where_none_was_warns_of_an_existing_signature(
    reg: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """SHA256SUMS gone (unreadable) beside SHA256SUMS.sig: the signature cannot match what is written."""
    (reg / "SHA256SUMS.sig").write_bytes(b"sig")
    (reg / "SHA256SUMS").unlink()
    write_sums(reg)
    assert "no longer matches it" in capsys.readouterr().err


# --- GIT003: only <base>/state/.gitkeep and <base>/miss/.gitkeep are placeholders ------------------------


@pytest.mark.skipif(shutil.which("git") is None, reason="git not installed")
def test_git003_an_empty_file_deeper_under_a_gitkeep_folder_is_no_placeholder(reg: Path) -> None:
    from test_git import _add_base_by_metadata, publish

    publish(reg)
    older = TINY_BASE.replace("20260101", "20250101")
    _add_base_by_metadata(reg, older)  # superseded at once: closed
    keep = reg / older / "miss" / ".gitkeep"
    keep.unlink()
    keep.mkdir()
    (keep / "x").write_bytes(b"")
    resum(reg)
    assert [f.path for f in _findings(reg, "GIT003")] == [f"{older}/miss/.gitkeep/x"]


@pytest.mark.skipif(shutil.which("git") is None, reason="git not installed")
def test_add_base_of_another_family_ignores_a_base_superseded_before(reg: Path) -> None:
    """Only the bases that the new base closes are checked for uncommitted files: one superseded already
    (kept active) is GIT003's business, not a reason to refuse an unrelated base."""
    from test_git import _add_base_by_metadata, publish

    publish(reg)
    _add_base_by_metadata(reg, TINY_BASE.replace("20260101", "20260301"), freeze_previous=False)
    (reg / V1 / "notes.txt").write_text("uncommitted")
    assert "GIT003" in {f.code for f in _findings(reg)}
    _add_base_by_metadata(reg, "rwkv7-other-20270101-ctx4096")


def test_add_to_a_version_ignores_entries_of_a_longer_version_name(reg: Path, tmp_path: Path) -> None:
    """Adding to v1 reads the entries under v1/, not those under v10/ (whose data.version differs)."""
    add_entry(reg, write_state(tmp_path / "a" / "s10.pth", seed=10), base=TINY_BASE, data_version="v10",
              train=state_train("v10"))  # fmt: skip
    added = add_entry(reg, write_state(tmp_path / "b" / "s11.pth", seed=11), base=TINY_BASE, data_version="v1",
                      train=state_train("v1"))  # fmt: skip
    assert added["path"] == f"{TINY_BASE}/state/v1/s11.pth"
    by_path = {e["path"]: e for e in json.loads((reg / "index.json").read_text())["entries"]}
    assert by_path[f"{TINY_BASE}/state/v10/s10.pth"]["data"]["version"] == "v10"  # left as it was
    assert by_path[added["path"]]["data"]["version"] == "v1"
    assert validate_registry(reg, use_cache=False).ok


def test_sums_refuses_a_missing_registered_file_as_lay008(reg: Path) -> None:
    (reg / STATE).unlink()
    with pytest.raises(RefusedError, match=r"SHA256SUMS not written: LAY008 .*is missing"):
        write_sums(reg)


def test_lay014_a_base_moved_into_a_folder_names_both_paths(reg: Path) -> None:
    """The shared tail may not swallow a whole path: the old prefix was empty ('' looks renamed to archive/)."""
    (reg / "archive").mkdir()
    (reg / TINY_BASE).rename(reg / "archive" / TINY_BASE)
    [f] = [f for f in validate_registry(reg, use_cache=False).findings if f.code == "LAY014"]
    assert f.message.startswith(f"{TINY_BASE}/ looks renamed to archive/{TINY_BASE}/ (")
    assert f.extra["moved_from"] == TINY_BASE


def test_lay014_pairs_best_matches_first(reg: Path) -> None:
    """Two entries with one content, one of them deleted after a rename: the survivor pairs with the file of
    its own name, not with the one that sorts first (s1-copy < s1)."""
    v1 = f"{TINY_BASE}/state/v1"
    shutil.copy(reg / STATE, reg / v1 / "s1-copy.pth")

    def add_copy(index: dict[str, Any]) -> None:
        e = json.loads(json.dumps(next(e for e in index["entries"] if e["path"] == STATE)))
        e.update(id="s1-copy", path=f"{v1}/s1-copy.pth", recommended=False)
        index["entries"].append(e)

    edit_index(reg, add_copy)
    resum(reg)
    (reg / v1).rename(reg / f"{v1}.0")
    (reg / f"{v1}.0" / "s1-copy.pth").unlink()
    findings = validate_registry(reg, use_cache=False).findings
    moved = [f for f in findings if f.code == "LAY014"]
    assert [f.path for f in moved] == [f"{v1}.0"] and f"{v1}/ looks renamed to {v1}.0/" in moved[0].message
    assert [f.path for f in findings if f.code == "LAY008"] == [f"{v1}/s1-copy.pth"]  # the one really gone


# --- third audit (stop 19's code) ---------------------------------------------------------------------------


@pytest.mark.parametrize("junk", ["r4-a", ["r4-a"], {"group": ["r4-a"], "lr": 3e-5}])
def test_trn009_reads_past_a_run_that_is_no_object_or_has_no_group_name(reg: Path, junk: Any) -> None:
    """A run of a MiSS train.json that is not an object, or whose group is a list, is the schema's finding
    (SCH003); the group-name check (TRN009) reads on past it: the train.json rules are not skipped (SCH005)."""
    rel = f"{TINY_BASE}/miss/v2/train.json"
    t = json.loads((reg / rel).read_text())
    good = next(r for r in t["runs"] if r["group"] == "r4-a")
    t["runs"] = [junk, {**good, "group": "r4-a"}, *(r for r in t["runs"] if r["group"] != "r4-a")]
    (reg / rel).write_text(json.dumps(t, indent=2))
    resum(reg)
    found = _findings(reg)
    assert any(f.code == "SCH003" and f.path == rel for f in found), [f.code for f in found]
    assert not any(f.code in ("SCH005", "TRN004") for f in found), [f.message for f in found]


def test_idx013_checks_a_benchmark_of_one_question(reg: Path) -> None:
    """A total of 1 is a count like any other: 0% with the one question solved is IDX013, 100% is not."""
    from test_seed_coverage import _findings as score_findings
    from test_seed_coverage import _score

    assert score_findings(reg, "IDX013", miss=[_score(score=100.0, solved=1, total=1)]) == []
    found = score_findings(reg, "IDX013", miss=[_score(score=0.0, solved=1, total=1)])
    assert len(found) == 1 and "solved 1 of 1" in found[0]


@pytest.mark.parametrize(
    "broken",
    [
        {"run_scores": []},
        {"by_category": {"a": {"total": 500}, "b": {"solved": 3, "total": 68}}},
        {"by_category": {"a": {"solved": 3, "total": "568"}}},
    ],
    ids=["no-run-scores", "category-without-solved", "category-total-text"],
)
def test_idx013_reads_past_a_score_that_breaks_the_schema(reg: Path, broken: dict[str, Any]) -> None:
    """A score whose run scores or categories break the schema is the schema's finding; the score sums of the
    other scores are still checked (no SCH005 'rules of check_scores skipped', no traceback)."""
    from test_seed_coverage import _score

    def edit(index: dict[str, Any]) -> None:
        e = next(e for e in index["entries"] if e["path"] == MISS_A)
        e["scores"] = [_score(benchmark="broken", **broken), _score(score=52.3, solved=296.5)]

    edit_index(reg, edit)
    found = _findings(reg)
    assert not any(f.code == "SCH005" and "check_scores" in f.message for f in found), [f.message for f in found]
    assert any(f.code.startswith("SCH") and f.path == "index.json" for f in found)
    idx013 = [f.message for f in found if f.code == "IDX013"]
    assert len(idx013) == 1 and "score 52.3% but solved 296.5 of 568" in idx013[0], idx013


def test_idx013_categories_may_carry_the_rounding_of_their_means(reg: Path) -> None:
    """Categories solving 29.5 and 28.4 (means over runs, each rounded to a tenth) may add up to 58 solved;
    29.5 and 28.3 may not."""
    from test_seed_coverage import _findings as score_findings
    from test_seed_coverage import _score

    def points(b: float) -> dict[str, Any]:
        cats = {"a": {"solved": 29.5, "total": 300}, "b": {"solved": b, "total": 268}}
        return _score(unit="points", score=58, solved=58, by_category=cats)

    assert score_findings(reg, "IDX013", miss=[points(28.4)]) == []
    found = score_findings(reg, "IDX013", miss=[points(28.3)])
    assert len(found) == 1 and "the categories solve 57.8 of 568, the score says 58" in found[0], found


def test_trn009_reads_the_step_of_a_state_name_with_a_dot() -> None:
    """The step of ``g1.5-s1224.pth`` is 1224: only the extension is cut from the name."""
    from test_seed_coverage import _names

    state = {"id": "g15-s1224", "method": "state", "path": f"{TINY_BASE}/state/v1.41/g1.5-s1224.pth"}
    assert _names([state | {"step": 1224}]) == []
    found = _names([state | {"step": 1000}])
    assert len(found) == 1 and "State g1.5-s1224 says step 1224, but index.json records step 1000" in found[0]


def test_idx016_reads_past_weights_whose_data_is_no_object(reg: Path) -> None:
    """An unpublished weight whose data is not an object is the schema's finding; the data versions of the
    weights after it are still compared (IDX016), and the rule is not skipped (SCH005)."""
    from regtools import DATA_SHA

    def add(index: dict[str, Any]) -> None:
        item = {"base": TINY_BASE, "method": "state", "description": "", "scores": []}
        index["unpublished"] = [
            item | {"id": "u0", "data": "v1"},
            item | {"id": "u1", "data": {"version": "v1", "rows": 3662, "sha256": DATA_SHA}},
        ]

    edit_index(reg, add)
    found = _findings(reg)
    assert not any(f.code == "SCH005" and "check_data_versions" in f.message for f in found)
    idx016 = [f.message for f in found if f.code == "IDX016"]
    assert len(idx016) == 1 and "records rows" in idx016[0] and "'u1'" in idx016[0], idx016


@pytest.mark.parametrize("command", [5, None, ["rwkv_state_tune", "--lr", "0.01"]])
def test_trn010_reads_past_a_command_line_that_is_no_string(reg: Path, command: Any) -> None:
    """SCH003 only: TRN010 has no command line to read, and the train.json rules are not skipped (no SCH005)."""
    path = reg / V1 / "train.json"
    t = json.loads(path.read_text())
    t["command"] = command
    path.write_text(json.dumps(t))
    resum(reg)
    codes = {f.code for f in _findings(reg)}
    assert "SCH003" in codes and not codes & {"SCH005", "TRN010"}, codes


def test_idx016_compares_the_rows_of_a_weight_that_records_no_data_sha256(reg: Path) -> None:
    """An unpublished weight recording its rows and no sha256 (null): the rows are still compared."""

    def add(index: dict[str, Any]) -> None:
        item = {"base": TINY_BASE, "method": "state", "description": "", "scores": []}
        index["unpublished"] = [item | {"id": "u1", "data": {"version": "v1", "rows": 99, "sha256": None}}]

    edit_index(reg, add)
    found = _findings(reg)
    assert not any(f.code.startswith("SCH") for f in found), [f.message for f in found]
    idx016 = [f.message for f in found if f.code == "IDX016"]
    assert len(idx016) == 1 and "records rows" in idx016[0] and "'u1' records 99" in idx016[0], idx016
