"""The hash rules (HSH001–HSH007): every sha256 and size index.json records, and SHA256SUMS,
against the bytes on disk."""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from rwkv_registry.checks.json_files import finding as schema_finding
from rwkv_registry.checks.layout import finding as layout_finding
from rwkv_registry.core.fsio import MAX_TEXT_BYTES, read_bounded
from rwkv_registry.core.rules import E, Finding, Rule, Rulebook, W
from rwkv_registry.core.textsafe import clip
from rwkv_registry.formats.jsonload import is_integer
from rwkv_registry.fs.atomic import JOURNAL_NAME, LOCK_NAME
from rwkv_registry.index.sums import FORMS, SIG_NAME, SUMS_NAME, SumsLine, parse_sums

HOUSEKEEPING = frozenset({".gitignore", ".pre-commit-config.yaml"})  # the root's files no SHA256SUMS lists
NOT_SUMMED = {SUMS_NAME, SIG_NAME, LOCK_NAME, JOURNAL_NAME, *HOUSEKEEPING}

RULES = Rulebook(
    Rule(
        "HSH001",
        E,
        "sha256 differs from index.json",
        "The file or its record in index.json changed after it was registered (`git status`, `git diff "
        "index.json` tell which): restore the changed one from git (`git checkout -- PATH` or "
        "`git checkout -- index.json`); new weights get a new entry (published weights never change).",
    ),
    Rule(
        "HSH002",
        E,
        "size differs from index.json",
        "The file changed or is truncated; restore it (`git lfs pull`, `git checkout -- PATH`).",
    ),
    Rule(
        "HSH003",
        E,
        "SHA256SUMS line malformed",
        "`sha256sum -c` cannot read the line either: each line is `<64 hex>  <path>` (or the forms sha256sum also "
        "reads: `<64 hex> *<path>`, `SHA256 (<path>) = <64 hex>`); regenerate it with `rwkv-registry sums PATH`.",
    ),
    Rule("HSH004", E, "file not listed in SHA256SUMS", "Regenerate SHA256SUMS with `rwkv-registry sums PATH`."),
    Rule(
        "HSH005",
        E,
        "SHA256SUMS lists a file that does not exist",
        "Regenerate SHA256SUMS with `rwkv-registry sums PATH`, or restore the file.",
    ),
    Rule(
        "HSH006",
        E,
        "SHA256SUMS hash differs from the file",
        "Restore the file from git, or, if the change is intended and the file is not published, "
        "regenerate SHA256SUMS with `rwkv-registry sums PATH`.",
    ),
    Rule(
        "HSH007",
        W,
        "SHA256SUMS is not in canonical form",
        "`sha256sum -c` reads it and every listed hash is checked, but `rwkv-registry sums PATH` rewrites it "
        "canonical: `<64 hex>  <path>` lines (lower-case hex, two spaces), sorted, LF line ends, no self entry.",
    ),
)
finding = RULES.finding


@dataclass
class SumsVerdict:
    """What the SHA256SUMS rules found, and what LAY014 (a moved file) needs of the listing: each listed path's
    first sha256 (``listed``) and the HSH005 finding of each listed path that is not there (``gone``)."""

    findings: list[Finding] = field(default_factory=list)
    listed: dict[str, str] = field(default_factory=dict)
    gone: dict[str, Finding] = field(default_factory=dict)


def _why_gone(root: Path, rel: str) -> str:
    try:
        p = root / rel
        if p.is_symlink():
            return "is a symbolic link (never followed)"
        return "is not a regular file (LAY015)" if os.path.lexists(p) else "does not exist"
    except OSError as e:  # a directory above it without permission: LAY010 names it
        return f"cannot be read ({e.strerror or e})"


def sums_file_findings(
    path: str | None, root: Path, expected: Collection[str], actual: Mapping[str, str], pointers: Collection[str]
) -> SumsVerdict:
    """SCH004, HSH003–HSH007 on the SHA256SUMS at ``path`` (None: there is none) of the registry at ``root``, read as
    ``sha256sum -c`` reads it (:func:`rwkv_registry.index.sums.parse_sums`), against the files that should be listed
    (``expected``: what ``sums`` lists) and the sha256 of those that could be hashed (``actual``); ``pointers``:
    Git LFS pointers, whose own hash is not the file's (LFS001 says `git lfs pull`)."""
    out = SumsVerdict()
    if path is None:
        out.findings.append(schema_finding("SCH004", SUMS_NAME, "SHA256SUMS is missing"))
        return out
    try:
        data = read_bounded(path, MAX_TEXT_BYTES)
    except OSError as e:
        out.findings.append(layout_finding("LAY010", SUMS_NAME, f"cannot read: {e.strerror}"))
        return out
    if data is None:
        out.findings.append(finding("HSH003", SUMS_NAME, f"larger than {MAX_TEXT_BYTES >> 20} MiB: not read"))
        return out
    add = out.findings.append
    lines, bad = parse_sums(data)
    for lineno, text in bad:
        add(finding("HSH003", SUMS_NAME, f"line {lineno}: {text!r}"))
    listed = out.listed
    line_of: dict[str, int] = {}  # the line of each path's first listing
    again: list[SumsLine] = []  # later listings of a path: `sha256sum -c` checks each of them too
    for line in lines:
        if line.path in HOUSEKEEPING:  # earlier versions listed them: not checked, a note on the form
            add(
                finding(
                    "HSH007",
                    SUMS_NAME,
                    f"line {line.lineno}: {line.path} is listed (as earlier versions did), but housekeeping "
                    "files of the root are not: its hash is not checked, and `sums` drops the line",
                )
            )
            continue
        if line.path in NOT_SUMMED:
            add(finding("HSH007", SUMS_NAME, f"line {line.lineno}: {clip(line.path)} should not be listed"))
            continue
        if line.path in listed:  # whatever its mode: `*name` (binary) and `name` (text) are one file
            add(
                finding(
                    "HSH007",
                    SUMS_NAME,
                    f"line {line.lineno}: {clip(line.path)} listed twice (first on line {line_of[line.path]})",
                )
            )
            again.append(line)
            continue
        listed[line.path] = line.sha256
        line_of[line.path] = line.lineno
    expected = set(expected)
    for rel in sorted(expected - set(listed)):
        add(finding("HSH004", rel, "not listed in SHA256SUMS"))
    for rel in sorted(set(listed) - expected):
        out.gone[rel] = finding("HSH005", SUMS_NAME, f"lists {clip(rel)}, which {_why_gone(root, rel)}")
        add(out.gone[rel])
    for rel in sorted(set(listed) & set(actual)):
        if rel in pointers:
            continue
        if listed[rel] != actual[rel]:
            add(finding("HSH006", rel, f"sha256 is {actual[rel]}, SHA256SUMS line {line_of[rel]} says {listed[rel]}"))
    for line in again:  # a later listing with another hash fails `sha256sum -c` as the first one would
        if line.path in pointers:
            continue
        if line.path in actual and line.sha256 != actual[line.path] and line.sha256 != listed[line.path]:
            add(
                finding(
                    "HSH006",
                    line.path,
                    f"sha256 is {actual[line.path]}, SHA256SUMS line {line.lineno} says {line.sha256}",
                )
            )
    # first listings, in path byte order; a name that is no UTF-8 was parsed with surrogateescape
    by_bytes = sorted(listed, key=lambda p: p.encode("utf-8", "surrogateescape"))
    if not bad and list(listed) != by_bytes:
        add(finding("HSH007", SUMS_NAME, "lines are not sorted by path"))
    crlf = [line.lineno for line in lines if line.crlf]
    if crlf:  # sha256sum -c accepts them: one note on the form, not one error per line
        add(finding("HSH007", SUMS_NAME, f"{len(crlf)} line(s) end in CR LF (first: line {crlf[0]}), not LF"))
    for form, how in FORMS.items():  # read and checked as sha256sum -c does: one note on the form each
        at = [line.lineno for line in lines if line.form == form]
        if at:
            add(finding("HSH007", SUMS_NAME, f"{len(at)} line(s) {how} (first: line {at[0]}), not `<hex>  <path>`"))
    return out


def entry_hash_findings(path: str, record: Mapping[str, object], sha256: str, size: int) -> list[Finding]:
    """HSH001 and HSH002: the file at ``path`` has ``sha256`` and ``size``, and index.json ``record`` (its entry's
    ``file``) says otherwise. A missing or mistyped record is a schema finding (SCH002), not a mismatch."""
    out = []
    want_sha, want_size = record.get("sha256"), record.get("size")
    if isinstance(want_sha, str) and want_sha != sha256:
        out.append(finding("HSH001", path, f"sha256 is {sha256}, index.json records {want_sha}"))
    if is_integer(want_size) and want_size != size:
        out.append(finding("HSH002", path, f"size is {size} bytes, index.json records {want_size}"))
    return out
