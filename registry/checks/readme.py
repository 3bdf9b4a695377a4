"""The README rules (RDM001–RDM002): README.md exists and its generated tables are those of index.json."""

from __future__ import annotations

import hashlib
from typing import Any

from rwkv_registry.core.codekey import VerdictMemo, code_digest
from rwkv_registry.core.fsio import MAX_TEXT_BYTES, read_bounded
from rwkv_registry.core.rules import E, Finding, Rule, Rulebook
from rwkv_registry.schemas import schema_digest

RULES = Rulebook(
    Rule(
        "RDM001",
        E,
        "README.md missing or without generated sections",
        "README.md missing: `rwkv-registry readme PATH` writes it. Markers missing: put back "
        "`<!-- rwkv-registry:bases:begin -->`…`end` and `<!-- rwkv-registry:sections:begin -->`…`end`, or run "
        "`rwkv-registry readme PATH --reset` (rebuilds README.md from the skeleton, DROPPING your own text: back "
        "it up first). Not UTF-8: save it as UTF-8.",
    ),
    Rule(
        "RDM002",
        E,
        "README generated section out of date",
        "Regenerate it with `rwkv-registry readme PATH` (add-base and add keep it in step).",
    ),
)
finding = RULES.finding

_VERDICTS = ("same", "differs", "markers")


def readme_verdict(text: str, bodies: tuple[str, str]) -> str:
    """What :func:`readme_findings` concludes of the README ``text`` given the generated regions' bodies rendered
    from index.json (:func:`rwkv_registry.index.readme.render_bodies`): ``"markers"`` (RDM001), ``"differs"``
    (RDM002) or ``"same"``. ``add`` records it for the README and index.json it wrote, with the bodies it wrote."""
    from rwkv_registry.index.readme import apply_bodies

    new = apply_bodies(text, bodies)
    return "markers" if new is None else "same" if new == text else "differs"


def readme_verdict_key(readme_sha256: str, index_sha256: str, digests: str | None = None) -> str:
    """The validation cache's key for :func:`readme_verdict` on the README and index.json of these sha256s, with
    the schema files' and the code's digests (``digests``, as the caller has them; else computed)."""
    return f"readme:{readme_sha256}:{index_sha256}:{digests or f'{schema_digest()}:{code_digest()}'}"


def readme_findings(
    path: str | None,
    index: dict[str, Any] | None,
    *,
    index_sha256: str | None = None,
    digests: str | None = None,
    memo: VerdictMemo | None = None,
) -> list[Finding]:
    """RDM001 and RDM002 on the README at ``path`` (None: there is no README.md) against ``index`` (index.json's
    parse; None when it did not parse: only the README's own rules). The verdict depends only on the README's
    bytes, index.json's bytes (``index_sha256``) and the renderer's code (``digests``): with all three and a
    ``memo`` it is remembered, and the README (1.1 MB at 4,000 entries) is not rendered again."""
    from rwkv_registry.index.readme import MARKERS, render_bodies

    if path is None:
        return [finding("RDM001", "README.md", "README.md is missing: `rwkv-registry readme PATH` writes it")]
    try:
        data = read_bounded(path, MAX_TEXT_BYTES)
        if data is None:
            return [
                finding(
                    "RDM001",
                    "README.md",
                    f"larger than {MAX_TEXT_BYTES >> 20} MiB: not read; shorten it, or rebuild it with "
                    "`rwkv-registry readme PATH --reset`",
                )
            ]
        text = data.decode("utf-8")
    except (OSError, UnicodeDecodeError) as e:
        return [finding("RDM001", "README.md", f"cannot read README.md as UTF-8: {e}; save it as UTF-8")]
    if index is None:
        return []
    key = None
    if index_sha256 is not None and digests is not None and memo is not None:
        key = readme_verdict_key(hashlib.sha256(data).hexdigest(), index_sha256, digests)
    verdict = memo.get_json(key) if memo is not None and key else None
    if verdict not in _VERDICTS:
        verdict = readme_verdict(text, render_bodies(index))
        if memo is not None and key:
            memo.put_json(key, verdict)
    if verdict == "markers":
        gone = [m for pair in MARKERS for m in pair if m not in text]
        return [
            finding(
                "RDM001",
                "README.md",
                f"the generated-section markers are missing ({', '.join(gone) or 'out of order'}); "
                "`rwkv-registry readme PATH` refuses until they are back: restore them, or run "
                "`rwkv-registry readme PATH --reset` (drops your own text)",
            )
        ]
    if verdict == "differs":
        return [finding("RDM002", "README.md", "the bases table or the per-base sections differ from index.json")]
    return []
