"""The hash rules (HSH001–HSH007): every sha256 and size index.json records, and SHA256SUMS,
against the bytes on disk."""

from __future__ import annotations

from rwkv_registry.core.rules import E, Rule, Rulebook, W

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
