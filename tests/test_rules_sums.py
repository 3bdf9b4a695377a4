"""SHA256SUMS rules (HSH002, HSH003, HSH005, HSH007) and the parser behind them: a file larger than recorded,
malformed lines and the order they are reported in, listed files that are links or whose names are no UTF-8, a
path listed twice, SHA256SUMS listing itself, the sort order.

The table of tests/test_validate_rules.py has each rule's basic passing and failing case; these are the cases of
branches that table does not reach. Most break one thing in the small valid registry (or in a MiSS manifest) and
assert the exact rule code, and usually the finding's path and message.
"""

from __future__ import annotations

from pathlib import Path

from mutations import entry_edit, set_key
from regtools import STATE, findings, messages_of, where

# --- the parser -----------------------------------------------------------------------------------------------------


def test_parse_sums_accepts_what_sha256sum_writes() -> None:
    """Mutants: binary-mode lines (`*`) refused; 65 hex digits accepted; comments called malformed; `./` kept;
    upper-case hex kept; `\\n` escapes of a `\\`-marked line not decoded."""
    from rwkv_registry.index.sums import parse_sums

    h = "ab" * 32
    data = (
        f"# made by sha256sum\n{h}  plain\n{h} *binary\n{h}  ./dotted\n{h.upper()}  upper\n"
        f"\\{h}  new\\nline\n{h}0  too-long\n"
    ).encode()
    lines, bad = parse_sums(data)
    assert [(line.lineno, line.path) for line in lines] == [
        (2, "plain"),
        (3, "binary"),
        (4, "dotted"),
        (5, "upper"),
        (6, "new\nline"),
    ]
    assert {line.sha256 for line in lines} == {h}
    assert [n for n, _ in bad] == [7]


# --- HSH002: sizes --------------------------------------------------------------------------------------------------


def test_hsh002_a_file_larger_than_recorded(reg: Path) -> None:
    """Mutant: HSH002 only for a file smaller than index.json records (`want_size > f.size`): a file that grew
    (bytes appended) kept its size finding only through HSH001."""
    size = (reg / STATE).stat().st_size
    entry_edit(STATE, lambda e: set_key(e, "file", dict(e["file"], size=size - 1)))(reg)
    assert messages_of(reg, "HSH002") == [f"size is {size} bytes, index.json records {size - 1}"]


# --- HSH003: malformed lines ----------------------------------------------------------------------------------------


def test_findings_of_one_file_come_in_line_order(reg: Path) -> None:
    """HSH003 on lines 1…12 is reported 1, 2, …, 12 (not 1, 10, 11, 12, 2, …)."""
    (reg / "SHA256SUMS").write_text("".join(f"bad line {i}\n" for i in range(12)))
    lines = [int(m.split(":")[0].split()[1]) for m in where(reg, "HSH003")["SHA256SUMS"]]
    assert lines == sorted(lines) and len(lines) == 12


# --- HSH005: what a listed path is ----------------------------------------------------------------------------------


def test_hsh005_says_when_the_listed_file_is_a_symlink(reg: Path) -> None:
    """A README.md replaced by a symbolic link is not 'missing': the message says what it is."""
    readme = reg / "README.md"
    target = reg.parent / "elsewhere.md"
    target.write_bytes(readme.read_bytes())
    readme.unlink()
    readme.symlink_to(target)
    assert where(reg, "HSH005")["SHA256SUMS"] == ["lists README.md, which is a symbolic link (never followed)"]


def test_sums_listing_a_path_that_is_not_utf8_is_hsh005_not_a_crash(reg: Path) -> None:
    """The order check encoded the listed paths strictly: a byte that is no UTF-8 in a SHA256SUMS path (parsed with
    surrogateescape, as sha256sum writes names) crashed validate with UnicodeEncodeError. Found by the audit's
    equivalent-mutant review of the sort key (`p.encode()` vs a plain string sort)."""
    p = reg / "SHA256SUMS"
    p.write_bytes(p.read_bytes() + b"0" * 64 + b"  zz-\xff.txt\n")
    found = findings(reg)
    assert [f.message for f in found if f.code == "HSH005"] == ["lists zz-\udcff.txt, which does not exist"]
    assert [f for f in found if f.code == "HSH007"] == []  # sorted by bytes: 0xff after every ASCII path


# --- HSH007: paths listed twice, SHA256SUMS itself, the order -------------------------------------------------------


def _sums_lines(root: Path) -> list[str]:
    return (root / "SHA256SUMS").read_text().splitlines(keepends=True)


def test_hsh007_duplicate_line(reg: Path) -> None:
    """SHA256SUMS lists the same file twice (a bad merge)."""
    lines = _sums_lines(reg)
    i = next(n for n, line in enumerate(lines) if line.endswith("  index.json\n"))
    (reg / "SHA256SUMS").write_text("".join([*lines[: i + 1], lines[i], *lines[i + 1 :]]))
    messages = where(reg, "HSH007")["SHA256SUMS"]
    assert f"line {i + 2}: index.json listed twice (first on line {i + 1})" in messages


def test_hsh007_sums_lists_itself(reg: Path) -> None:
    """SHA256SUMS was regenerated with a tool that hashed SHA256SUMS too."""
    lines = _sums_lines(reg)
    own = "0" * 64 + "  SHA256SUMS\n"
    lines = sorted([*lines, own], key=lambda line: line.split("  ", 1)[1].encode())
    (reg / "SHA256SUMS").write_text("".join(lines))
    messages = where(reg, "HSH007")["SHA256SUMS"]
    assert f"line {lines.index(own) + 1}: SHA256SUMS should not be listed" in messages


def test_hsh007_duplicate_in_sorted_sums_is_not_called_unsorted(reg: Path) -> None:
    """A sorted SHA256SUMS with one duplicated line is reported for the duplicate only."""
    lines = _sums_lines(reg)
    (reg / "SHA256SUMS").write_text("".join([lines[0], *lines]))  # still sorted by path
    assert [m for m in where(reg, "HSH007")["SHA256SUMS"] if "not sorted" in m] == []


def test_hsh007_unsorted_is_not_said_of_a_file_with_malformed_lines(reg: Path) -> None:
    """Mutant: the order checked also when lines are malformed (HSH003 says to regenerate the file already)."""
    p = reg / "SHA256SUMS"
    p.write_text("not a line\n" + "".join(reversed(p.read_text().splitlines(keepends=True))))
    found = findings(reg)
    assert [f.message for f in found if f.code == "HSH003"] == ["line 1: 'not a line'"]
    assert [f for f in found if f.code == "HSH007"] == []


def test_sums_a_path_listed_twice_is_judged_by_each_of_its_lines(reg: Path) -> None:
    """Mutant: without `continue`, the second line of a path listed twice replaced the first one, so a wrong first
    line followed by a right one passed. Each listing is checked, as `sha256sum -c` checks each line: the wrong one
    is HSH006 naming its line, besides the HSH007 warning for the second listing. (A wrong later line was only
    that warning: validate passed what sha256sum -c refuses; tests/test_sums_lines.py.)"""
    p = reg / "SHA256SUMS"
    lines = p.read_text().splitlines()
    first = next(n for n, line in enumerate(lines, 1) if line.endswith(f"  {STATE}"))
    good = lines[first - 1][:64]
    lines[first - 1] = f"{'0' * 64}  {STATE}"
    p.write_text("\n".join([*lines, f"{good}  {STATE}"]) + "\n")
    found = findings(reg)
    assert sorted(f.code for f in found if f.code.startswith("HSH")) == ["HSH006", "HSH007"]
    assert next(f.message for f in found if f.code == "HSH007") == (
        f"line {len(lines) + 1}: {STATE} listed twice (first on line {first})"
    )
    hsh006 = next(f for f in found if f.code == "HSH006")
    assert (hsh006.path, hsh006.message) == (STATE, f"sha256 is {good}, SHA256SUMS line {first} says {'0' * 64}")
