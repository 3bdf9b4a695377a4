"""Problems a fresh-user walkthrough found in ``validate``, each with the case that shows it fixed.

Duplicates (IDX010, IDX011), missing records formatted as None, hints that blame the wrong thing or
name a command that refuses (HSH001, RDM001), an LFS pointer reported as a changed file, CR LF line
ends in SHA256SUMS, a live writer (LAY013), validation outside git (GIT004), the wording of changes
committed after ``--since`` and the flood of findings of a renamed directory (LAY014).
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from mutations import same_base_file_twice, same_bytes_twice
from regtools import MISS_A, STATE, TINY_BASE, edit_index, findings, hold_lock, resum

from rwkv_registry.checks.catalogue import RULES
from rwkv_registry.core.errors import RefusedError
from rwkv_registry.engine.validate import validate_registry
from rwkv_registry.store.ops import check_sums, write_readme

# --- 1. duplicates -------------------------------------------------------------------------------------


def test_idx010_one_base_file_under_two_names(reg: Path) -> None:
    same_base_file_twice(reg)
    [f] = findings(reg, "IDX010")
    assert f.severity == "error" and TINY_BASE in f.message and f"{TINY_BASE}-copy" in f.message


def test_idx010_bases_of_different_files_pass(reg: Path) -> None:
    """Two bases with their own sha256 (a newer dated base beside the old one) are no duplicate."""

    def add(index: dict[str, Any]) -> None:
        b = json.loads(json.dumps(index["bases"][0]))
        b.update(name=f"{TINY_BASE}-copy", sha256="5" * 64, source=dict(b["source"], file=f"{TINY_BASE}-copy.pth"))
        index["bases"].append(b)

    edit_index(reg, add)
    assert findings(reg, "IDX010") == []


def test_idx011_the_same_bytes_twice_is_a_warning(reg: Path) -> None:
    same_bytes_twice(reg)
    report = validate_registry(reg, use_cache=False)
    [f] = [f for f in report.findings if f.code == "IDX011"]
    assert f.severity == "warning" and f.path == STATE.replace("s1.pth", "s1-copy.pth")
    assert "'s1-copy'" in f.message and f"entry 's1' at {STATE}" in f.message
    assert report.ok  # a warning: the rest of the registry is fine


def test_idx011_distinct_files_pass(registry_template: Path) -> None:
    assert findings(registry_template, "IDX011") == []


# --- 2. a missing record is a schema finding, never "records None" --------------------------------------


@pytest.mark.parametrize(("rel", "key"), [(STATE, "file"), (MISS_A, "file"), (MISS_A, "miss")])
def test_missing_record_is_sch002_not_a_mismatch_with_none(reg: Path, rel: str, key: str) -> None:
    def drop(index: dict[str, Any]) -> None:
        next(e for e in index["entries"] if e["path"] == rel).pop(key)

    edit_index(reg, drop)
    found = findings(reg)
    assert any(f.code == "SCH002" and key in f.message for f in found)
    assert not {"HSH001", "HSH002", "MIS012", "MIS015"} & {f.code for f in found}
    assert [f"{f.code}: {f.message}" for f in found if "None" in f.message] == []


def test_missing_data_field_is_not_called_none_by_trn003(reg: Path) -> None:
    edit_index(reg, lambda i: next(e for e in i["entries"] if e["path"] == STATE)["data"].pop("rows"))
    found = findings(reg)
    assert "SCH002" in {f.code for f in found}
    assert [f.message for f in found if f.code == "TRN003"] == []


# --- 3. HSH001's hint covers an edited index.json -------------------------------------------------------


def test_hsh001_when_index_json_was_edited(reg: Path) -> None:
    edit_index(reg, lambda i: next(e for e in i["entries"] if e["path"] == STATE)["file"].update(sha256="6" * 64))
    [f] = findings(reg, "HSH001")
    assert f"index.json records {'6' * 64}" in f.message
    assert "index.json" in f.hint and "git checkout -- index.json" in f.hint and "git diff" in f.hint


# --- 4. RDM001 names the command that works in each situation -------------------------------------------


def test_rdm001_markers_missing_points_to_reset_and_readme_refuses_without_it(reg: Path) -> None:
    (reg / "README.md").write_text("# my own text, no markers\n")
    [f] = findings(reg, "RDM001")
    assert "--reset" in f.message and "refuses" in f.message and "--reset" in f.hint
    assert "rwkv-registry:bases:begin" in f.message  # names the missing markers
    with pytest.raises(RefusedError):
        write_readme(reg)  # what the old hint said to run
    write_readme(reg, reset=True)
    resum(reg)
    assert findings(reg, "RDM001") == []


def test_rdm001_one_marker_missing_is_named(reg: Path) -> None:
    text = (reg / "README.md").read_text().replace("<!-- rwkv-registry:sections:end -->", "")
    (reg / "README.md").write_text(text)
    [f] = findings(reg, "RDM001")
    assert "(<!-- rwkv-registry:sections:end -->)" in f.message


def test_rdm001_missing_readme_is_written_by_readme(reg: Path) -> None:
    (reg / "README.md").unlink()
    [f] = findings(reg, "RDM001")
    assert "`rwkv-registry readme PATH` writes it" in f.message
    write_readme(reg)  # the command the message names works here
    resum(reg)
    assert findings(reg, "RDM001") == []


# --- 5. an LFS pointer is LFS001 only -------------------------------------------------------------------


def test_lfs_pointer_gives_lfs001_only(reg: Path) -> None:
    data = (reg / STATE).read_bytes()
    oid = hashlib.sha256(data).hexdigest()
    (reg / STATE).write_text(f"version https://git-lfs.github.com/spec/v1\noid sha256:{oid}\nsize {len(data)}\n")
    found = [f for f in findings(reg) if f.path == STATE or f.path == "SHA256SUMS"]
    assert [f.code for f in found] == ["LFS001"]
    assert "git lfs pull" in found[0].hint


# --- 6. CR LF line ends in SHA256SUMS: accepted (as sha256sum -c does), one warning -------------------------


def test_crlf_sums_are_one_warning_in_validate_and_sums_check(reg: Path) -> None:
    p = reg / "SHA256SUMS"
    p.write_bytes(p.read_bytes().replace(b"\n", b"\r\n"))
    n = p.read_bytes().count(b"\r\n")
    report = validate_registry(reg, use_cache=False)
    sums = [f for f in report.findings if f.code.startswith("HSH")]
    assert [(f.code, f.message) for f in sums] == [("HSH007", f"{n} line(s) end in CR LF (first: line 1), not LF")]
    assert report.ok
    assert [(f.code, f.severity) for f in check_sums(reg)] == [("HSH007", "warning")]  # `sums --check`
    if shutil.which("sha256sum"):
        out = subprocess.run(["sha256sum", "-c", "--quiet", "SHA256SUMS"], cwd=reg, capture_output=True, text=True)
        assert out.returncode == 0, out.stdout + out.stderr  # what the parser follows


def test_crlf_line_that_is_malformed_is_still_hsh003(reg: Path) -> None:
    n = len((reg / "SHA256SUMS").read_bytes().splitlines())
    (reg / "SHA256SUMS").open("ab").write(b"not a line\r\n")
    assert [f.message for f in findings(reg, "HSH003")] == [f"line {n + 1}: 'not a line'"]


# --- 7. a live writer: one finding, not "run recover" --------------------------------------------------------


def test_lay013_a_live_writer_is_one_finding(reg: Path) -> None:
    ctx = multiprocessing.get_context("spawn")
    ready = ctx.Event()
    holder = ctx.Process(target=hold_lock, args=(str(reg), ready, 60.0))
    holder.start()
    try:
        assert ready.wait(30)
        (reg / TINY_BASE / "state" / "v2").mkdir()  # what `add` has staged so far
        (reg / TINY_BASE / "state" / "v2" / ".rwkv-registry-tmp-0123-s2.pth").write_bytes(b"half")
        report = validate_registry(reg, use_cache=False)
        assert [(f.code, f.path) for f in report.findings] == [("LAY013", ".rwkv-registry.lock")]
        assert "in progress" in report.findings[0].message and "recover" not in report.findings[0].hint
        assert not report.ok
    finally:
        holder.terminate()  # killed mid-write: the kernel drops its lock
        holder.join(30)
    codes = {f.code for f in findings(reg)}
    assert "LAY013" not in codes and "LAY012" in codes  # now the leftover is an interrupted write


def test_a_lock_file_nobody_holds_is_no_write_in_progress(reg: Path) -> None:
    (reg / ".rwkv-registry.lock").write_bytes(b"")
    assert findings(reg, "LAY013") == []


# --- 8. outside git: GIT004 -------------------------------------------------------------------------------


def test_git004_outside_a_git_work_tree(reg: Path) -> None:
    [f] = findings(reg, "GIT004")
    assert f.severity == RULES["GIT004"].severity == "warning"
    assert "not inside a git work tree" in f.message


@pytest.mark.skipif(shutil.which("git") is None, reason="git not installed")
def test_no_git004_inside_a_git_work_tree(reg: Path) -> None:
    from regtools import git_publish

    git_publish(reg)
    assert findings(reg, "GIT004") == []


# --- 9. --since: a change committed after the baseline says so ------------------------------------------


def _publish_then_edit_the_state(reg: Path) -> str:
    """Commit the registry, then flip one byte of its published State; the first commit's sha."""
    from regtools import git, git_publish

    git_publish(reg)
    first = git(reg, "rev-parse", "HEAD").strip()
    p = reg / STATE
    data = bytearray(p.read_bytes())
    data[-100] ^= 1
    p.write_bytes(bytes(data))
    return first


@pytest.mark.skipif(shutil.which("git") is None, reason="git not installed")
def test_since_names_the_commit_of_a_committed_change(reg: Path) -> None:
    from regtools import git

    first = _publish_then_edit_the_state(reg)
    git(reg, "commit", "-qam", "sneaky edit", "--no-verify")
    sha = git(reg, "log", "--format=%h", "-1").strip()
    [f] = findings(reg, "GIT001", since=first)
    assert f"modified in commit {sha} (" in f.message and "“sneaky edit”" in f.message
    assert f"after --since {first}" in f.message
    assert "in the index" not in f.message and "working tree" not in f.message


@pytest.mark.skipif(shutil.which("git") is None, reason="git not installed")
def test_since_keeps_saying_working_tree_for_an_uncommitted_change(reg: Path) -> None:
    first = _publish_then_edit_the_state(reg)
    [f] = findings(reg, "GIT001", since=first)
    assert f.message.startswith("modified in the working tree")


# --- 10. a renamed directory: one LAY014, not one finding per file --------------------------------------------


def test_lay014_renamed_version_directory(reg: Path) -> None:
    (reg / TINY_BASE / "state" / "v1").rename(reg / TINY_BASE / "state" / "v1.0")
    errors = [f for f in findings(reg) if f.severity == "error"]
    assert [(f.code, f.path) for f in errors] == [("LAY014", f"{TINY_BASE}/state/v1.0")]
    assert f"{TINY_BASE}/state/v1/ looks renamed to {TINY_BASE}/state/v1.0/" in errors[0].message


def test_lay014_renamed_base_directory(reg: Path) -> None:
    (reg / TINY_BASE).rename(reg / "newbase")
    errors = [f for f in findings(reg) if f.severity == "error"]
    assert [(f.code, f.path) for f in errors] == [("LAY014", "newbase")]
    assert f"{TINY_BASE}/ looks renamed to newbase/ (7 recorded file(s)" in errors[0].message


def test_lay014_one_renamed_file(reg: Path) -> None:
    (reg / STATE).rename(reg / STATE.replace("s1.pth", "s1-renamed.pth"))
    errors = [f for f in findings(reg) if f.severity == "error"]
    assert [f.code for f in errors] == ["LAY014"]
    assert errors[0].message.endswith("holds the same bytes: moved or renamed?")


def test_lay014_an_edited_entry_path_keeps_its_lay009(reg: Path) -> None:
    """index.json's path edited (the file did not move): LAY014 says so, and LAY009 stays."""
    moved = MISS_A.replace("adapter-final.pth", "adapter.pth")
    edit_index(reg, lambda i: next(e for e in i["entries"] if e["path"] == MISS_A).update(path=moved))
    found = findings(reg)
    [f] = [f for f in found if f.code == "LAY014"]
    assert f"index.json records {moved}, which is missing; {MISS_A} holds the same bytes" in f.message
    assert "LAY009" in {f.code for f in found}


def test_lay014_a_deleted_file_is_still_lay008(reg: Path) -> None:
    """No file with the recorded bytes anywhere: nothing to guess, the per-file findings stay."""
    (reg / STATE).unlink()
    codes = {f.code for f in findings(reg)}
    assert "LAY014" not in codes and {"LAY008", "HSH005"} <= codes


def test_trn001_not_for_a_directory_that_no_longer_exists(reg: Path) -> None:
    shutil.rmtree(reg / TINY_BASE / "state" / "v1")
    codes = {f.code for f in findings(reg)}
    assert "TRN001" not in codes and "LAY008" in codes


def test_missing_base_and_train_fields_are_schema_findings_only(reg: Path) -> None:
    """An entry without `base`, a train.json without `method` or `data.version`: SCH002/SCH003, no "None"."""
    from regtools import STATE_TRAIN

    edit_index(reg, lambda i: next(e for e in i["entries"] if e["path"] == STATE).pop("base"))
    train = json.loads((reg / STATE_TRAIN).read_text())
    train.pop("method")
    train["data"].pop("version")
    (reg / STATE_TRAIN).write_text(json.dumps(train))
    found = findings(reg)
    assert {"SCH002", "SCH003"} <= {f.code for f in found}
    assert [f"{f.code}: {f.message}" for f in found if "None" in f.message] == []


@pytest.mark.skipif(shutil.which("git") is None, reason="git not installed")
def test_a_flipped_byte_in_a_published_weight_is_git001_alone(reg: Path) -> None:
    """The published weight itself changed: the cause is GIT001, said once, naming the mismatches it brings
    (tests/test_git.py does the same with the file replaced by another valid State)."""
    from regtools import git_publish

    git_publish(reg)
    p = reg / STATE
    data = bytearray(p.read_bytes())
    data[-100] ^= 1
    p.write_bytes(bytes(data))
    assert findings(reg, "HSH001") == []
    [f] = findings(reg, "GIT001")
    assert f.path == STATE and f.message.endswith("(HSH001, HSH006)")


@pytest.mark.skipif(shutil.which("git") is None, reason="git not installed")
def test_hsh001_in_git_says_index_json_changed(reg: Path) -> None:
    from regtools import git_publish

    git_publish(reg)
    edit_index(reg, lambda i: next(e for e in i["entries"] if e["path"] == STATE)["file"].update(sha256="6" * 64))
    [f] = findings(reg, "HSH001")
    assert f.message.endswith("(git: index.json changed since HEAD)")


def test_add_beside_a_run_group_of_the_wrong_type_is_refused_not_a_crash(reg: Path, tmp_path: Path) -> None:
    from regtools import miss_train, write_miss

    from rwkv_registry.store.ops import add_entry

    train = next(reg.rglob("miss/*/train.json"))
    t = json.loads(train.read_text())
    t["runs"][0]["group"] = ["r4-a"]  # unhashable: a set of groups cannot hold it
    train.write_text(json.dumps(t))
    resum(reg)
    adapter = tmp_path / "r4-c" / "adapter-final.pth"
    write_miss(adapter, seed=5)
    with pytest.raises(RefusedError):
        add_entry(reg, adapter, base=TINY_BASE, data_version="v2", train=miss_train(), group="r4-c")
