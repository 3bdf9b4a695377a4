"""The README rules (RDM001–RDM002): README.md exists and its generated tables are those of index.json."""

from __future__ import annotations

from rwkv_registry.core.rules import E, Rule, Rulebook

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
