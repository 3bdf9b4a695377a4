"""The .gitattributes rule (LFS002): every weight file is routed through Git LFS, as git itself reads the
attributes (every .gitattributes of the tree, last match wins, macros, …: :mod:`rwkv_registry.formats.gitattr`,
tested against ``git check-attr``). LFS001, a pointer where content should be, is the safe reader's
(``formats/rules.py``)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from rwkv_registry.core.rules import E, Finding, Rule, Rulebook
from rwkv_registry.formats.gitattr import MAX_READ, filter_of
from rwkv_registry.index.layout import WEIGHT_SUFFIXES

RULES = Rulebook(
    Rule(
        "LFS002",
        E,
        ".gitattributes does not route weights through Git LFS",
        "Add `*.pth filter=lfs diff=lfs merge=lfs -text` and the same for `*.safetensors` "
        "(`rwkv-registry init` writes them).",
    ),
)
finding = RULES.finding

PROBE_BASE = "rwkv7-new-20990101-ctx4096"  # a base directory name of the layout, for a weight file not there yet


def gitattributes_findings(texts: Mapping[str, bytes], files: Iterable[str]) -> list[Finding]:
    """LFS002, given the bytes of each .gitattributes of the tree (``texts``, by registry-relative path; more than
    ``MAX_READ`` of them is refused whole) and the tree's files. Asked first of a new file of each weight suffix in
    the layout (a finding on .gitattributes), then of each weight file there (a finding on the file, when the
    first question passed)."""
    attrs: dict[str, bytes] = {}
    for rel in sorted(texts):
        if len(texts[rel]) > MAX_READ:
            message = (
                f"more than {MAX_READ:,} bytes: too large to be read, so no weight file is known to be routed through "
                "Git LFS"
            )
            return [finding("LFS002", rel, message)]
        attrs[rel.rpartition("/")[0]] = texts[rel]
    names = sorted(files)
    out: list[Finding] = []
    for suffix in WEIGHT_SUFFIXES:
        probe = filter_of(attrs, f"{PROBE_BASE}/state/v1/new{suffix}")
        if probe.value != "lfs":
            given = f" (git gives them filter: {probe.shown()}, from {probe.source} line {probe.lineno})"
            message = f"*{suffix} files are not routed through Git LFS" + (given if probe.source else "")
            out.append(finding("LFS002", ".gitattributes", message))
            continue
        for rel in (r for r in names if r.endswith(suffix)):
            got = filter_of(attrs, rel)
            if got.value != "lfs":
                why = (
                    f"git gives it filter: {got.shown()}, from {got.source} line {got.lineno}"
                    if got.source
                    else "no line of .gitattributes gives it filter=lfs"
                )
                out.append(finding("LFS002", rel, f"not routed through Git LFS: {why}"))
    return out
