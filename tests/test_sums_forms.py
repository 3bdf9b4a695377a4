"""SHA256SUMS lines in every form GNU ``sha256sum -c`` reads (BSD tags ``SHA256 (name) = hex``, binary mode, a tab
or one space after the hash, white space before it, upper-case hex): read as it reads them, their hash checked (a
wrong one never passes), and one "not canonical" note (HSH007) per form instead of HSH003. Each line case is run
through GNU sha256sum beside ours where it is installed, both ways: what it accepts is accepted and checked, what it
calls improperly formatted is HSH003."""

from __future__ import annotations

import base64
import hashlib
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from rwkv_registry.cli.main import main
from rwkv_registry.engine.validate import validate_registry
from rwkv_registry.index.sums import parse_sums

A = b"hello\n"
H = hashlib.sha256(A).hexdigest()
Z = "0" * 64
B64 = base64.b64encode(bytes.fromhex(H)).decode()
C_NAME = "c\\d"  # a name with a backslash: escaped lines
HC = hashlib.sha256(b"c").hexdigest()

Verdict = tuple[list[tuple[str, str]], list[int]]

# (SHA256SUMS text, what sha256sum -c says of each checked name, the improperly formatted line numbers)
CASES: dict[str, tuple[str, list[tuple[str, str]], list[int]]] = {
    "canonical": (f"{H}  a\n", [("a", "OK")], []),
    "binary": (f"{H} *a\n", [("a", "OK")], []),
    "tagged": (f"SHA256 (a) = {H}\n", [("a", "OK")], []),
    "tagged, wrong hash": (f"SHA256 (a) = {Z}\n", [("a", "FAILED")], []),
    "tagged, upper-case hex": (f"SHA256 (a) = {H.upper()}\n", [("a", "OK")], []),
    "tagged, openssl spacing": (f"SHA256(a)= {H}\n", [("a", "OK")], []),
    "tagged, tab after =": (f"SHA256 (a)=\t{H}\n", [("a", "OK")], []),
    "tagged, CR LF": (f"SHA256 (a) = {H}\r\n", [("a", "OK")], []),
    "tagged, ./": (f"SHA256 (./a) = {H}\n", [("a", "OK")], []),
    "tagged, last ) ends the name": (f"SHA256 ((a)) = {H}\n", [("(a)", "FAILED open or read")], []),
    "tagged, escaped name": (f"\\SHA256 (c\\\\d) = {HC}\n", [(C_NAME, "OK")], []),
    "tagged, lower-case tag": (f"sha256 (a) = {H}\n", [], [1]),
    "tagged, two spaces before (": (f"SHA256  (a) = {H}\n", [], [1]),
    "tagged, space after the hash": (f"SHA256 (a) = {H} \n", [], [1]),
    "tagged, no =": (f"SHA256 (a) {H}\n", [], [1]),
    "tagged, no parentheses": (f"SHA256 a = {H}\n", [], [1]),
    "tagged, base64": (f"SHA256 (a) = {B64}\n", [], [1]),
    "tagged, short hash": (f"SHA256 (a) = {H[:63]}\n", [], [1]),
    "one space": (f"{H} a\n", [("a", "OK")], []),
    "a tab": (f"{H}\ta\n", [("a", "OK")], []),
    "a tab and a space": (f"{H}\t a\n", [("a", "OK")], []),
    "white space before the hash": (f" \t{H} *a\n", [("a", "OK")], []),
    "upper-case hex": (f"{H.upper()}  a\n", [("a", "OK")], []),
    "wrong hash, one space": (f"{Z} a\n", [("a", "FAILED")], []),
    "one space after two": (f"{H}  a\n{H} a\n", [("a", "OK")], [2]),
    "two spaces after one": (
        f"{H} a\n{H}  a\n{H} *a\n",
        [("a", "OK"), (" a", "FAILED open or read"), ("*a", "FAILED open or read")],
        [],
    ),
    "a space after the name": (f"{H}  a \n", [("a ", "FAILED open or read")], []),
    "hash alone": (f"{H}\n{H} \n", [], [1, 2]),
    "comment": (f"#{H}  a\n{H}  a\n", [("a", "OK")], []),
}


def _tree(tmp_path: Path, text: str) -> Path:
    d = tmp_path / "t"
    d.mkdir()
    (d / "a").write_bytes(A)
    (d / C_NAME).write_bytes(b"c")
    (d / "SHA256SUMS").write_bytes(text.encode())
    return d


def _ours(d: Path) -> Verdict:
    """What parse_sums makes of the file: each checked name with sha256sum's words, and the malformed lines."""
    lines, bad = parse_sums((d / "SHA256SUMS").read_bytes())
    said = []
    for line in lines:
        p = d / line.path
        if not p.is_file():
            said.append((line.path, "FAILED open or read"))
        else:
            said.append((line.path, "OK" if hashlib.sha256(p.read_bytes()).hexdigest() == line.sha256 else "FAILED"))
    return sorted(said), [n for n, _ in bad]


def _gnu(d: Path) -> Verdict | None:
    """What `sha256sum -c --warn SHA256SUMS` says in ``d`` (None where GNU sha256sum is not installed)."""
    exe = shutil.which("sha256sum")
    if exe is None:
        return None
    env = {**os.environ, "LC_ALL": "C"}
    run = subprocess.run([exe, "-c", "--warn", "SHA256SUMS"], cwd=d, capture_output=True, text=True, env=env)
    said = []
    for out in run.stdout.splitlines():
        name, _, word = out.rpartition(": ")
        if name.startswith("\\"):  # a name with a backslash or newline, escaped as in the file
            name = name[1:].replace("\\\\", "\\")
        said.append((name.removeprefix("./"), word))
    bad = [int(n) for n in re.findall(r"SHA256SUMS: (\d+): improperly formatted", run.stderr)]
    return sorted(said), bad


@pytest.mark.parametrize("case", list(CASES))
def test_each_line_is_read_as_gnu_sha256sum_reads_it(tmp_path: Path, case: str) -> None:
    text, said, bad = CASES[case]
    d = _tree(tmp_path, text)
    assert _ours(d) == (sorted(said), bad)
    gnu = _gnu(d)
    if gnu is not None:
        assert gnu == (sorted(said), bad)


def test_the_forms_are_marked_and_canonical_lines_are_not() -> None:
    text = (
        f"{H}  a\n{H} *b\nSHA256 (c) = {H}\n{H.upper()}  d\n {H}  e\n{H}\t f\n{H}  g\r\n"
        f"{H} h\n"  # one space after two-character lines: malformed (coreutils' bsd_reversed)
    )
    lines, bad = parse_sums(text.encode())
    assert [(x.path, x.form, x.crlf) for x in lines] == [
        ("a", "", False),
        ("b", "binary", False),
        ("c", "tagged", False),
        ("d", "loose", False),
        ("e", "loose", False),
        ("f", "loose", False),
        ("g", "", True),
    ]
    assert all(x.sha256 == H for x in lines)
    assert bad == [(8, f"{H} h")]
    lines, bad = parse_sums(f"{H} a\n{H} *b\n".encode())  # one space first: every line read that way
    assert [(x.path, x.form) for x in lines] == [("a", "loose"), ("*b", "loose")] and bad == []


def _sums(reg: Path) -> list[tuple[str, str]]:
    """(hash, path) of each line of the canonical SHA256SUMS of ``reg``."""
    return [(line[:64], line[66:]) for line in (reg / "SHA256SUMS").read_text().splitlines()]


def _hsh(reg: Path) -> list[tuple[str, str, str]]:
    return [
        (f.code, f.path, f.message)
        for f in validate_registry(reg, use_cache=False).findings
        if f.code.startswith(("HSH", "SCH004"))
    ]


def _gnu_rc(reg: Path) -> int | None:
    exe = shutil.which("sha256sum")
    if exe is None:
        return None
    return subprocess.run([exe, "-c", "--quiet", "SHA256SUMS"], cwd=reg, capture_output=True).returncode


@pytest.mark.parametrize(
    ("form", "line", "note"),
    [
        ("tagged", "SHA256 ({p}) = {h}", "in BSD tag form `SHA256 (<path>) = <hex>`"),
        ("binary", "{h} *{p}", "in binary mode `<hex> *<path>`"),
        (
            "loose",
            "{h} {p}",
            "spelt loosely (white space before the hash, a tab or one space after it, or upper-case hex)",
        ),
    ],
)
def test_a_registry_with_lines_in_another_form_passes_with_one_note(
    reg: Path, form: str, line: str, note: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """It was HSH003 on every line (tags, one space) or nothing at all (binary mode), where sha256sum -c passes:
    now the hashes are checked and one HSH007 warning says the form is not canonical; `sums` rewrites it."""
    pairs = _sums(reg)
    (reg / "SHA256SUMS").write_text("".join(line.format(h=h, p=p) + "\n" for h, p in pairs))
    assert _gnu_rc(reg) in (0, None)
    n = len(pairs)
    assert _hsh(reg) == [("HSH007", "SHA256SUMS", f"{n} line(s) {note} (first: line 1), not `<hex>  <path>`")]
    assert validate_registry(reg, use_cache=False).ok
    assert main(["sums", str(reg)]) == 0
    capsys.readouterr()
    assert _hsh(reg) == []


@pytest.mark.parametrize("line", ["SHA256 ({p}) = {h}", "{h} {p}", "{h}\t{p}", " {h} *{p}"])
def test_a_wrong_hash_in_any_form_never_passes(reg: Path, line: str) -> None:
    pairs = _sums(reg)
    wrong = [(Z if i == 1 else h, p) for i, (h, p) in enumerate(pairs)]
    (reg / "SHA256SUMS").write_text("".join(line.format(h=h, p=p) + "\n" for h, p in wrong))
    assert _gnu_rc(reg) in (1, None)
    found = _hsh(reg)
    assert ("HSH006", pairs[1][1], f"sha256 is {pairs[1][0]}, SHA256SUMS line 2 says {Z}") in found
    assert [c for c, _, _ in found] == ["HSH006", "HSH007"]
    assert not validate_registry(reg, use_cache=False).ok
    assert main(["sums", str(reg), "--check"]) == 1
