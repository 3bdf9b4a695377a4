"""README rules (RDM001; SCH005, the note that they wait for a valid index.json) and the generated sections RDM002
compares README.md with: a README missing or not UTF-8, markers out of order, table cells escaped, each adapter's
content_version, a shared train.json listed once.

The table of tests/test_validate_rules.py has each rule's basic passing and failing case; these are the cases of
branches that table does not reach. Most break one thing in the small valid registry (or in a MiSS manifest) and
assert the exact rule code, and usually the finding's path and message.
"""

from __future__ import annotations

from pathlib import Path

from mutations import entry_edit, set_key
from regtools import STATE, findings, where

# --- RDM001, SCH005: README.md and its markers ----------------------------------------------------------------------


def test_rdm001_readme_missing(reg: Path) -> None:
    """README.md was deleted."""
    (reg / "README.md").unlink()
    assert where(reg, "RDM001") == {"README.md": ["README.md is missing: `rwkv-registry readme PATH` writes it"]}


def test_rdm001_readme_not_utf8(reg: Path) -> None:
    """README.md was saved in Latin-1 by an editor."""
    (reg / "README.md").write_bytes((reg / "README.md").read_bytes() + "café\n".encode("latin-1"))
    [message] = where(reg, "RDM001")["README.md"]
    assert message.startswith("cannot read README.md as UTF-8:")


def test_readme_markers_out_of_order_are_missing_markers(reg: Path) -> None:
    """Mutant: the end marker searched from the start of the text, so that an end before its begin was used."""
    from rwkv_registry.index.readme import BASES_BEGIN, BASES_END, SECTIONS_BEGIN, SECTIONS_END, update_readme
    from rwkv_registry.store.ops import load_index

    text = f"{BASES_END}\n{BASES_BEGIN}\n{SECTIONS_BEGIN}\n{SECTIONS_END}\n"
    assert update_readme(text, load_index(reg)) is None
    (reg / "README.md").write_text(text)
    assert [f.message.split(";")[0] for f in findings(reg, "RDM001")] == [
        "the generated-section markers are missing (out of order)"
    ]


def test_readme_rules_wait_for_a_valid_index(reg: Path) -> None:
    """Mutant: the README rules ran on an index.json that broke its schema, instead of one SCH005 note."""
    entry_edit(STATE, lambda e: set_key(e, "scores", "not a list"))(reg)
    found = findings(reg)
    assert ("SCH005", "README.md", "README rules skipped until index.json follows its schema") in {
        (f.code, f.path, f.message) for f in found
    }


# --- the generated sections (what RDM002 compares README.md with) ---------------------------------------------------


def test_readme_cells_escape_the_pipe(reg: Path) -> None:
    """Mutant: a `|` in a description written raw into the table (it splits the row into more columns)."""
    from rwkv_registry.index.readme import render_sections
    from rwkv_registry.store.ops import load_index

    entry_edit(STATE, lambda e: set_key(e, "description", "fast | small"))(reg)
    assert "| fast \\| small (recommended) |" in render_sections(load_index(reg))


def test_readme_lists_each_adapter_content_version(reg: Path) -> None:
    """Mutant: the `Adapter | content_version` table dropped from the per-base section (validate renders the
    README with the same code, so RDM002 cannot see it): seed 000 publishes what the server answers on
    registration, and users compare it by eye."""
    from rwkv_registry.index.readme import render_sections
    from rwkv_registry.store.ops import load_index

    index = load_index(reg)
    text = render_sections(index)
    assert "| Adapter | content_version |" in text
    for e in index["entries"]:
        if e["method"] == "miss":
            assert f"| {e['id']} | `{e['miss']['content_version']}` |" in text


def test_readme_lists_a_shared_train_json_once(reg: Path) -> None:
    """Mutant: one `training parameters` row per entry instead of per train.json: the two MiSS runs of v2 share
    miss/v2/train.json, which was listed twice."""
    from rwkv_registry.index.readme import render_sections
    from rwkv_registry.store.ops import load_index

    rows = [r for r in render_sections(load_index(reg)).splitlines() if "| training parameters |" in r]
    assert [r.split(" | ")[0] for r in rows] == ["| miss/v2/train.json", "| state/v1/train.json"]
