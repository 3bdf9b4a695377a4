"""index.json rules (SCH004 for a missing index.json, IDX001-IDX006, IDX008): ids and paths listed twice, unknown
bases, an entry whose file is not of its method, the recommended entry of each base, the file name of a base,
on_top_of and score records.

The table of tests/test_validate_rules.py has each rule's basic passing and failing case; these are the cases of
branches that table does not reach. Most break one thing in the small valid registry (or in a MiSS manifest) and
assert the exact rule code, and usually the finding's path and message.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mutations import entry_edit, miss_no_manifest, non_state_file, score_record, scores_codes, set_key, vs_state
from regtools import (
    MISS_A,
    STATE,
    TINY_ARCH,
    TINY_BASE,
    edit_index,
    findings,
    messages_of,
    refresh,
    state_train,
    where,
    write_state,
)

# --- SCH004: index.json itself --------------------------------------------------------------------------------------


def test_sch004_index_missing(reg: Path) -> None:
    """index.json was deleted."""
    (reg / "index.json").unlink()
    assert where(reg, "SCH004") == {"index.json": ["index.json is missing"]}


# --- IDX001: ids listed twice ---------------------------------------------------------------------------------------


def test_idx001_base_listed_twice(reg: Path) -> None:
    """A user pastes the same base twice into index.json."""
    edit_index(reg, lambda i: i["bases"].append(dict(i["bases"][0])))
    assert where(reg, "IDX001") == {"index.json": [f"base {TINY_BASE!r} is listed twice"]}


def _unpublished(uid: str, base: str = TINY_BASE) -> dict[str, Any]:
    return {"id": uid, "base": base, "method": "miss", "data": {"version": "v2.0"}, "description": "", "scores": []}


def test_idx001_unpublished_weight_listed_twice(reg: Path) -> None:
    """Mutant: unpublished ids were not added to the id space (only clashes with entries found)."""
    edit_index(reg, lambda i: set_key(i, "unpublished", [_unpublished("u1"), _unpublished("u1")]))
    assert messages_of(reg, "IDX001") == ["unpublished id 'u1' is also used by an entry or listed twice"]


# --- IDX002: the base of an entry -----------------------------------------------------------------------------------


def test_idx002_a_miss_entry_with_an_unknown_base(reg: Path) -> None:
    """Mutant: IDX002 checked only State entries (the rule table breaks a State)."""
    entry_edit(MISS_A, lambda e: set_key(e, "base", "nowhere"))(reg)
    assert messages_of(reg, "IDX002") == ["entry 'v2-r4-a' refers to base 'nowhere', which index.json does not list"]


# --- IDX003: the method of an entry and its file --------------------------------------------------------------------


def test_idx003_a_state_entry_holding_d_tensors_is_idx003_not_mis001(reg: Path) -> None:
    """Mutant: MIS001 (MiSS without manifest) for any entry whose file holds D tensors, a State's too."""
    miss_no_manifest(reg)
    (reg / STATE).write_bytes((reg / MISS_A).read_bytes())
    refresh(reg, STATE)
    found = {f.code for f in findings(reg) if f.path == STATE}
    assert found == {"IDX003"}


def test_idx003_stops_the_file_checks(reg: Path) -> None:
    """Mutant: without `return` after IDX003, the State rules ran on a file that is no State (STA001)."""
    non_state_file(reg)
    assert {f.code for f in findings(reg) if f.path == STATE} == {"IDX003"}


# --- IDX004: the recommended entry ----------------------------------------------------------------------------------


def test_idx004_recommended_is_counted_per_base(reg: Path, tmp_path: Path) -> None:
    """Mutant: recommended entries counted per method across bases; each base has its own recommended State."""
    from rwkv_registry.store.ops import add_base, add_entry

    other = "rwkv7-other-20260101-ctx4096"
    add_base(reg, name=other, source="BlinkDL/rwkv7-g1", sha256="7" * 64, size=1234, arch=dict(TINY_ARCH))
    st = write_state(tmp_path / "o1.pth", seed=7)
    add_entry(reg, st, base=other, data_version="v1", train=state_train(), recommended=True)
    found = findings(reg)
    assert not [f for f in found if f.code == "IDX004"]
    assert not [f for f in found if str(f.severity) == "error"], found


# --- IDX005: a path listed twice ------------------------------------------------------------------------------------


def test_idx005_the_duplicate_entry_is_not_checked_against_the_file(reg: Path) -> None:
    """Mutant: without `continue`, the second entry of a path replaced the first one, whose file record is the one
    compared with the file; the duplicate is IDX005 and nothing else."""

    def dup(index: dict[str, Any]) -> None:
        e = json.loads(json.dumps(index["entries"][0]))
        e.update(id="other", file={"sha256": "0" * 64, "size": 1}, recommended=False)
        index["entries"].append(e)

    edit_index(reg, dup)
    found = [(f.code, f.path) for f in findings(reg) if f.path == STATE]
    assert found == [("IDX005", STATE)]


# --- IDX006: the file name of a base --------------------------------------------------------------------------------


@pytest.mark.parametrize("file", [TINY_BASE.upper() + ".pth", TINY_BASE + "-extra.pth", f"dir/{TINY_BASE}.bin"])
def test_idx006_the_file_name_must_be_the_base_name_exactly(reg: Path, file: str) -> None:
    """Mutants: names compared without case, or by prefix. The suffix is not part of the name (stem)."""
    edit_index(reg, lambda i: i["bases"][0]["source"].update(file=file))
    found = messages_of(reg, "IDX006")
    assert found == (
        []
        if file.endswith(".bin")
        else [f"base {TINY_BASE!r} comes from file {file!r}: its directory must be {file.removesuffix('.pth')!r}"]
    )


# --- IDX008: on_top_of and score records ----------------------------------------------------------------------------


def test_idx008_on_top_of_a_base_is_refused(reg: Path) -> None:
    """Mutant: on_top_of accepted base names too (a comparison's `against` may name a base, on_top_of may not)."""
    entry_edit(STATE, lambda e: set_key(e, "on_top_of", TINY_BASE))(reg)
    assert messages_of(reg, "IDX008") == [
        f"entry 's1': on_top_of {TINY_BASE!r} is no other entry or unpublished weight"
    ]


def test_idx008_boundaries_that_are_consistent(reg: Path) -> None:
    """Mutants: solved == total, a category solved == total and wins + losses == total called inconsistent; a
    comparison against the base alone called unknown."""
    score = score_record(
        solved=568,
        by_category={"abstention": {"solved": 17, "total": 17}},
        comparison=dict(vs_state(300, 268, 0.2), against=TINY_BASE),
    )
    assert "IDX008" not in scores_codes(reg, score)
