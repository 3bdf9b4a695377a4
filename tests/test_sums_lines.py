"""SHA256SUMS lines as GNU ``sha256sum -c`` reads them: binary mode (``<hash> *<name>``) accepted, `sums` writing
text mode, a name listed in both modes one file listed twice, and every listing of it checked."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from pathlib import Path

import pytest

from rwkv_registry.cli.main import main
from rwkv_registry.engine.validate import validate_registry
from rwkv_registry.store.ops import write_sums

ZERO = "0" * 64


def _sums(reg: Path) -> list[str]:
    return (reg / "SHA256SUMS").read_text().splitlines()


def _hsh(reg: Path) -> list[tuple[str, str, str]]:
    return [
        (f.code, f.path, f.message)
        for f in validate_registry(reg, use_cache=False).findings
        if f.code.startswith(("HSH", "SCH004"))
    ]


def _gnu_check(reg: Path) -> int | None:
    """`sha256sum -c SHA256SUMS` run in the registry (None where GNU sha256sum is not installed)."""
    exe = shutil.which("sha256sum")
    if exe is None:
        return None
    return subprocess.run([exe, "-c", "--quiet", "SHA256SUMS"], cwd=reg, capture_output=True).returncode


def test_sums_writes_text_mode_and_binary_mode_lines_are_accepted(reg: Path) -> None:
    write_sums(reg)
    lines = _sums(reg)
    assert lines and all(line[64:66] == "  " for line in lines)  # text mode: two spaces, never ` *`
    (reg / "SHA256SUMS").write_text("".join(f"{line[:64]} *{line[66:]}\n" for line in lines))  # `sha256sum -b`
    note = f"{len(lines)} line(s) in binary mode `<hex> *<path>` (first: line 1), not `<hex>  <path>`"
    assert _hsh(reg) == [("HSH007", "SHA256SUMS", note)]  # checked; not canonical (tests/test_sums_forms.py)
    assert validate_registry(reg, use_cache=False).ok
    assert _gnu_check(reg) in (0, None)


def test_a_name_in_binary_and_in_text_mode_is_listed_twice(reg: Path) -> None:
    lines = _sums(reg)
    i = next(n for n, line in enumerate(lines) if line.endswith("  README.md"))
    star = lines[i][:64] + " *README.md"
    (reg / "SHA256SUMS").write_text("\n".join([*lines[:i], star, *lines[i:]]) + "\n")
    assert _hsh(reg) == [
        (
            "HSH007",
            "SHA256SUMS",
            f"1 line(s) in binary mode `<hex> *<path>` (first: line {i + 1}), not `<hex>  <path>`",
        ),
        ("HSH007", "SHA256SUMS", f"line {i + 2}: README.md listed twice (first on line {i + 1})"),
    ]
    assert validate_registry(reg, use_cache=False).ok  # the same hash twice: a warning, as sha256sum -c passes
    assert _gnu_check(reg) in (0, None)


@pytest.mark.parametrize("wrong", ["first", "second"])
def test_a_second_listing_with_another_hash_fails_as_sha256sum_c_does(reg: Path, wrong: str) -> None:
    """It passed (exit 0, the HSH007 warning only) when the wrong hash was on the later line: validate judged a
    path by its first listing, while `sha256sum -c` checks every line and reports README.md: FAILED."""
    lines = _sums(reg)
    i = next(n for n, line in enumerate(lines) if line.endswith("  README.md"))
    good = lines[i][:64]
    assert good == hashlib.sha256((reg / "README.md").read_bytes()).hexdigest()
    star, text = f"{good} *README.md", f"{ZERO}  README.md"
    if wrong == "first":
        star, text = f"{ZERO} *README.md", f"{good}  README.md"
    (reg / "SHA256SUMS").write_text("\n".join([*lines[:i], star, text, *lines[i + 1 :]]) + "\n")
    bad_line = i + 1 if wrong == "first" else i + 2
    found = _hsh(reg)
    assert ("HSH006", "README.md", f"sha256 is {good}, SHA256SUMS line {bad_line} says {ZERO}") in found
    assert [c for c, _, _ in found] == ["HSH006", "HSH007", "HSH007"]  # listed twice; the `*` line
    assert not validate_registry(reg, use_cache=False).ok
    assert main(["sums", str(reg), "--check"]) == 1
    assert _gnu_check(reg) in (1, None)


def test_a_malformed_line_is_named_by_its_number(reg: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = _sums(reg)
    lines.insert(2, f"{ZERO[:63]}  short-hash.txt")
    (reg / "SHA256SUMS").write_text("\n".join(lines) + "\n")
    assert ("HSH003", "SHA256SUMS", f"line 3: '{ZERO[:63]}  short-hash.txt'") in _hsh(reg)
    assert main(["validate", str(reg)]) == 1
    assert "line 3:" in capsys.readouterr().out


def test_housekeeping_files_are_not_listed_and_an_old_listing_of_them_still_validates(reg: Path) -> None:
    """.gitignore and .pre-commit-config.yaml say how git and pre-commit treat the repository: SHA256SUMS does
    not list them, so editing the hook's configuration does not fail the hook. A SHA256SUMS of an earlier version,
    which listed them, still validates (a warning per line, the hash unchecked); `sums` drops the lines."""
    listed = [line.split("  ", 1)[1] for line in _sums(reg)]
    assert ".gitignore" not in listed and ".pre-commit-config.yaml" not in listed and ".gitattributes" in listed
    (reg / ".pre-commit-config.yaml").write_text((reg / ".pre-commit-config.yaml").read_text() + "# mine\n")
    (reg / ".gitignore").write_text("*.tmp\n")
    assert _hsh(reg) == []
    old = [f"{hashlib.sha256(b'as it was').hexdigest()}  .gitignore", f"{ZERO}  .pre-commit-config.yaml"]
    by_path = sorted([*_sums(reg), *old], key=lambda line: line.split("  ", 1)[1].encode())
    (reg / "SHA256SUMS").write_text("\n".join(by_path) + "\n")
    report = validate_registry(reg, use_cache=False)
    assert report.ok
    lines = {line.split("  ", 1)[1]: n for n, line in enumerate(_sums(reg), 1)}
    assert _hsh(reg) == [
        ("HSH007", "SHA256SUMS", f"line {lines[name]}: {name} is listed (as earlier versions did), but housekeeping "
         "files of the root are not: its hash is not checked, and `sums` drops the line")
        for name in sorted(lines, key=lines.__getitem__) if name in (".gitignore", ".pre-commit-config.yaml")
    ]  # fmt: skip
    assert main(["sums", str(reg)]) == 0
    assert _hsh(reg) == [] and len(_sums(reg)) == len(lines) - 2


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
