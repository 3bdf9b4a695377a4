"""Mutation audit of the SHA256SUMS listing logic (Validator.check_sums): a file listed twice with the same wrong
hash is one HSH006, a listing of SHA256SUMS itself is one HSH007 and nothing else, and the line numbers said."""

from __future__ import annotations

import hashlib
from pathlib import Path

from test_sums_lines import ZERO, _hsh, _sums

from rwkv_registry.engine.validate import validate_registry


def _readme_line(lines: list[str]) -> int:
    return next(n for n, line in enumerate(lines) if line.endswith("  README.md"))


def test_the_same_wrong_hash_listed_twice_is_one_hsh006(reg: Path) -> None:
    """The second listing repeats the first's wrong hash: that hash is already reported (on the first line)."""
    lines = _sums(reg)
    i = _readme_line(lines)
    good = hashlib.sha256((reg / "README.md").read_bytes()).hexdigest()
    (reg / "SHA256SUMS").write_text(
        "\n".join([*lines[:i], f"{ZERO}  README.md", f"{ZERO} *README.md", *lines[i + 1 :]]) + "\n"
    )
    assert _hsh(reg) == [
        ("HSH006", "README.md", f"sha256 is {good}, SHA256SUMS line {i + 1} says {ZERO}"),
        (
            "HSH007",
            "SHA256SUMS",
            f"1 line(s) in binary mode `<hex> *<path>` (first: line {i + 2}), not `<hex>  <path>`",
        ),
        ("HSH007", "SHA256SUMS", f"line {i + 2}: README.md listed twice (first on line {i + 1})"),
    ]


def test_a_listing_of_sha256sums_itself_is_one_hsh007(reg: Path) -> None:
    """Not also 'lists SHA256SUMS, which does not exist' (HSH005) or 'not sorted' (HSH007)."""
    lines = _sums(reg)
    (reg / "SHA256SUMS").write_text("\n".join([*lines, f"{ZERO}  SHA256SUMS"]) + "\n")
    assert _hsh(reg) == [("HSH007", "SHA256SUMS", f"line {len(lines) + 1}: SHA256SUMS should not be listed")]


def test_a_missing_file_listed_twice_is_hsh005_and_hsh007_without_a_crash(reg: Path) -> None:
    """The later listing of a file that is gone is not hashed against anything (no KeyError)."""
    lines = _sums(reg)
    name = "gone.txt"
    (reg / "SHA256SUMS").write_text(
        "\n".join(sorted([*lines, f"{ZERO}  {name}", f"{'1' * 64} *{name}"], key=lambda line: line[66:])) + "\n"
    )
    codes = [(c, p) for c, p, _ in _hsh(reg)]
    assert codes == [("HSH005", "SHA256SUMS"), ("HSH007", "SHA256SUMS"), ("HSH007", "SHA256SUMS")]  # twice; `*`


def test_an_lfs_pointer_listed_twice_is_no_hsh006(reg: Path) -> None:
    """A pointer in place of a weight file is LFS001's ('git lfs pull'): neither of its listings is compared with
    the pointer's own hash."""
    from regtools import TINY_BASE

    state = next((reg / TINY_BASE / "state").rglob("*.pth"))
    rel = state.relative_to(reg).as_posix()
    state.write_text(
        f"version https://git-lfs.github.com/spec/v1\noid sha256:{hashlib.sha256(b'x').hexdigest()}\nsize 123\n"
    )
    lines = _sums(reg)
    i = next(n for n, line in enumerate(lines) if line.endswith(f"  {rel}"))
    (reg / "SHA256SUMS").write_text("\n".join([*lines[: i + 1], f"{ZERO} *{rel}", *lines[i + 1 :]]) + "\n")
    found = validate_registry(reg, use_cache=False).findings
    assert "LFS001" in {f.code for f in found}
    assert [f.code for f in found if f.code == "HSH006"] == []


def test_lines_in_byte_order_are_sorted_for_a_name_that_is_no_utf8(reg: Path) -> None:
    """`sums` sorts by the names' bytes (as `sort` under LC_ALL=C does): a name with a byte that is no UTF-8 (read
    as a lone surrogate) sorts after an emoji by its bytes (0xff > 0xf0) but before it by code point."""
    names = [b"\xff.txt", "\U0001f600.txt".encode()]
    lines = (reg / "SHA256SUMS").read_bytes().splitlines()
    for name in names:
        with open(bytes(reg) + b"/" + name, "wb") as f:
            f.write(b"x")
        lines.append(hashlib.sha256(b"x").hexdigest().encode() + b"  " + name)
    lines.sort(key=lambda line: line[66:])
    (reg / "SHA256SUMS").write_bytes(b"\n".join(lines) + b"\n")
    assert _hsh(reg) == []


def test_cr_lf_lines_are_one_note_naming_the_first(reg: Path) -> None:
    lines = _sums(reg)
    assert len(lines) >= 3
    text = "".join(f"{line}\r\n" if n in (1, 2) else f"{line}\n" for n, line in enumerate(lines))
    (reg / "SHA256SUMS").write_text(text, newline="")
    assert _hsh(reg) == [("HSH007", "SHA256SUMS", "2 line(s) end in CR LF (first: line 2), not LF")]
