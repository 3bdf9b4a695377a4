"""Layout rules (LAY001, LAY002, LAY004, LAY005, LAY006, LAY012): which files and folders may lie where in a
registry, symbolic links, safe relative paths, what an interrupted write leaves, and `validate` of a folder inside
a registry.

The table of tests/test_validate_rules.py has each rule's basic passing and failing case; these are the cases of
branches that table does not reach. Most break one thing in the small valid registry (or in a MiSS manifest) and
assert the exact rule code, and usually the finding's path and message.

``test_clean_registry_reports_none_of_these`` is the passing case of the codes in CODES at once: the codes of the
branches tested here and in the other tests/test_rules_*.py files (index, sums, train, readme, miss).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mutations import entry_edit, set_key
from regtools import STATE, TINY_BASE, edit_index, findings, messages_of, resum, where

from rwkv_registry.engine.validate import validate_registry

CODES = ("IDX001", "LAY004", "LAY006", "TRN004", "HSH007", "SCH004", "RDM001", "MIS003", "MIS007", "MIS008", "MIS014")


def test_clean_registry_reports_none_of_these(registry_template: Path) -> None:
    """A registry built by the registry's own commands gets none of CODES (their branches are tested in this file and
    in the other tests/test_rules_*.py files)."""
    found = {f.code for f in validate_registry(registry_template, use_cache=False).findings}
    assert not found & set(CODES), sorted(found & set(CODES))


# --- LAY001, LAY002: what lies at the root --------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["LICENSE", "LICENSE.md", "LICENSE.txt", ".gitignore"])
def test_lay001_license_files_are_known_root_files(reg: Path, name: str) -> None:
    """Mutant: LICENSE.md dropped from the root files."""
    (reg / name).write_text("MIT")
    assert findings(reg, "LAY001") == []


def test_a_folder_that_is_no_base_is_lay002_only(reg: Path) -> None:
    """Mutant: data-version directories looked for under any top folder, so that a stray `x/state/v1` also got the
    train.json rules (TRN001)."""
    (reg / "stray" / "state" / "v1").mkdir(parents=True)
    (reg / "stray" / "state" / "v1" / "notes.txt").write_text("x")
    resum(reg)
    assert {(f.code, f.path) for f in findings(reg) if f.path.startswith("stray")} == {("LAY002", "stray")}


# --- LAY004: the places of the layout -------------------------------------------------------------------------------


def test_lay004_badly_named_data_version_directory(reg: Path) -> None:
    """A data-version folder named `latest` instead of v1.41-style."""
    (reg / TINY_BASE / "state" / "latest").mkdir()
    assert where(reg, "LAY004") == {
        f"{TINY_BASE}/state/latest": ["data-version directory 'latest' must look like v1.41"]
    }


def test_lay004_foreign_folder_under_a_base(reg: Path) -> None:
    """A folder other than state/ or miss/ directly under a base."""
    (reg / TINY_BASE / "extras").mkdir()
    assert where(reg, "LAY004") == {f"{TINY_BASE}/extras": ["a base directory holds only state/ and miss/"]}


def test_lay004_names_a_bad_file_name_in_the_right_place(reg: Path) -> None:
    """A State file with spaces or emoji in its name is told so, not just 'not part of the layout'."""
    (reg / TINY_BASE / "state" / "v1" / "ñoño 🚀.pth").write_bytes(b"x")
    messages = where(reg, "LAY004")[f"{TINY_BASE}/state/v1/ñoño 🚀.pth"]
    assert messages == [
        "file name 'ñoño 🚀.pth' is not usable: letters, digits, '.', '_' and '-', starting with a letter or digit"
    ]


B = TINY_BASE


LAYOUT_CASES: dict[str, tuple[list[str], dict[str, str]]] = {
    # name: (files created, {LAY004 path: message start}); every other file of the case is in its place
    "gitkeep-in-base": ([f"{B}/.gitkeep"], {}),
    "gitkeep-in-method": ([f"{B}/miss/.gitkeep"], {}),
    "version-without-digit": (
        [f"{B}/state/vx/train.json"],
        {f"{B}/state/vx": "data-version directory 'vx'", f"{B}/state/vx/train.json": "this place"},
    ),
    "state-file-under-miss": ([f"{B}/miss/v2/s9.pth"], {f"{B}/miss/v2/s9.pth": "this place is not part"}),
    "second-file-in-group": ([f"{B}/miss/v2/r4-a/adapter.pth"], {f"{B}/miss/v2/r4-a/adapter.pth": "this place"}),
    "bad-group-name": (
        [f"{B}/miss/v2/r4 c/adapter-final.pth"],
        {f"{B}/miss/v2/r4 c/adapter-final.pth": "group folder 'r4 c' is not usable"},
    ),
    "long-name": ([f"{B}/state/v1/{'a' * 125}.pth"], {f"{B}/state/v1/{'a' * 125}.pth": "file name"}),
    "longest-name": ([f"{B}/state/v1/{'a' * 124}.pth"], {}),
    "stray-top-folder": (["stray/sub/x.txt"], {}),
}


@pytest.mark.parametrize("case", sorted(LAYOUT_CASES))
def test_lay004_places_of_the_layout(case: str, reg: Path) -> None:
    """Mutants of _layout_ok / check_layout: `<base>/.gitkeep` refused; a data-version folder without a digit
    accepted; a State file under miss/, a second file in a group folder, a bad group name or a name over 128
    characters accepted; a folder that is no base (LAY002) also blamed file by file and folder by folder (LAY004).
    A misplaced weight file is LAY004 only, not also an unregistered weight (LAY007)."""
    files, want = LAYOUT_CASES[case]
    for rel in files:
        (reg / rel).parent.mkdir(parents=True, exist_ok=True)
        (reg / rel).write_bytes(b"" if rel.endswith(".gitkeep") else b"x")
    found = findings(reg)
    got = {f.path: f.message for f in found if f.code == "LAY004"}
    assert sorted(got) == sorted(want)
    assert all(got[p].startswith(m) for p, m in want.items()), got
    assert not [f for f in found if f.code == "LAY007" and f.path in want]


# --- LAY005: symbolic links -----------------------------------------------------------------------------------------


def test_lay005_link_inside_the_registry_is_not_reported(reg: Path) -> None:
    """LAY005 is about links that leave the registry; one to a file inside it is not reported by LAY005."""
    (reg / TINY_BASE / "state" / "v1" / "link.pth").symlink_to("s1.pth")
    (reg / TINY_BASE / "state" / "v2").symlink_to("v1", target_is_directory=True)
    assert where(reg, "LAY005") == {}


def test_lay005_link_to_a_sibling_with_the_registry_name_as_prefix(reg: Path) -> None:
    """A link to ``<root>-evil/...`` leaves the registry although its path starts with the root's."""
    outside = reg.parent / f"{reg.name}-evil"
    outside.mkdir()
    (outside / "s9.pth").write_bytes((reg / STATE).read_bytes())
    rel = f"{TINY_BASE}/state/v1/s9.pth"
    (reg / rel).symlink_to(outside / "s9.pth")
    assert where(reg, "LAY005") == {rel: [f"symbolic link to {outside / 's9.pth'} leaves the registry"]}


def test_lay005_not_for_a_link_to_the_registry_root_itself(reg: Path) -> None:
    """Mutant: a symbolic link to the root counted as leaving the registry; it stays inside (never followed), and a
    top-level directory that is no base is LAY002."""
    (reg / "loop").symlink_to(reg)
    found = [(f.code, f.path) for f in findings(reg) if f.path == "loop"]
    assert found == [("LAY002", "loop")]


# --- LAY006: safe relative paths (safe_rel) -------------------------------------------------------------------------


def test_lay006_unsafe_train_path(reg: Path) -> None:
    """An entry's `train` points outside the registry (../)."""

    def edit(index: dict[str, Any]) -> None:
        next(e for e in index["entries"] if e["path"] == STATE)["train"] = "../train.json"

    edit_index(reg, edit)
    [message] = where(reg, "LAY006")["index.json"]
    assert "train '../train.json' is not a safe relative path" in message


@pytest.mark.parametrize(
    "path",
    [f"{TINY_BASE}/state/./v1/s1.pth", f"{TINY_BASE}\\state\\v1\\s1.pth", f"/{STATE}"],
    ids=["dot", "backslash", "absolute"],
)
def test_lay006_dot_components_backslashes_and_absolute_paths_are_unsafe(reg: Path, path: str) -> None:
    """Mutants: `.` dropped from the refused components; the backslash test dropped."""
    entry_edit(STATE, lambda e: set_key(e, "path", path))(reg)
    assert messages_of(reg, "LAY006") == [f"entry 's1': path {path!r} is not a safe relative path"]


def test_safe_rel_is_the_component_test() -> None:
    """safe_rel decides on ``/path/`` by substrings: the same answers as splitting on ``/`` and refusing an empty,
    ``.`` or ``..`` component, a leading ``/``, a backslash or an empty path, for every path of up to five
    characters over ``/``, ``.``, ``a`` and a backslash, and for a few longer ones."""
    import itertools

    from rwkv_registry.index.layout import safe_rel

    def by_parts(path: object) -> bool:
        if not isinstance(path, str) or not path or path.startswith("/") or "\\" in path:
            return False
        return all(part not in ("", ".", "..") for part in path.split("/"))

    paths: list[object] = [None, 3, b"a", "", "...", "a/.../b", "a/..b/c", "a/b./c", f"{TINY_BASE}/state/v1/s1.pth"]
    for n in range(1, 6):
        paths += ["".join(p) for p in itertools.product("/.a\\", repeat=n)]
    assert [safe_rel(p) for p in paths] == [by_parts(p) for p in paths]
    assert sum(map(by_parts, paths)) > 50  # both answers are exercised


# --- LAY012: what an interrupted write leaves -----------------------------------------------------------------------


def test_lay012_the_journal_of_an_interrupted_write(reg: Path) -> None:
    """Mutant: only the temporary files were LAY012, the journal a mere unknown root file."""
    (reg / ".rwkv-registry.journal").write_text("{}")
    found = findings(reg)
    assert [f.path for f in found if f.code == "LAY012"] == [".rwkv-registry.journal"]
    assert not [f for f in found if f.code == "LAY001"]


def test_a_temporary_file_is_lay012_and_not_hsh004(reg: Path) -> None:
    """Mutant: the temporary files of an interrupted write counted as files SHA256SUMS must list."""
    tmp = f"{TINY_BASE}/state/v1/.rwkv-registry-tmp-0123-s2.pth"
    (reg / tmp).write_bytes(b"x")
    assert [(f.code, f.path) for f in findings(reg) if f.path == tmp] == [("LAY012", tmp)]


# --- the registry root ----------------------------------------------------------------------------------------------


def test_validating_a_folder_inside_a_registry_names_the_root(reg: Path) -> None:
    """`validate REG/<base>` is a usage error pointing at the registry root, not a list of false findings."""
    from rwkv_registry.core.errors import UsageError

    with pytest.raises(UsageError, match="lies inside the registry at") as e:
        validate_registry(reg / TINY_BASE)
    assert str(reg.resolve()) in e.value.hint
