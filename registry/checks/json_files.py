"""The JSON rules (SCH001–SCH005): index.json, train.json and miss.json are strict JSON and follow their schemas."""

from __future__ import annotations

from rwkv_registry.core.rules import E, N, Rule, Rulebook
from rwkv_registry.formats.jsonload import UNPARSEABLE_JSON_HINT

RULES = Rulebook(
    Rule(
        "SCH001",
        E,
        "JSON file cannot be parsed",
        UNPARSEABLE_JSON_HINT,  # the strict loader's errors carry it too (formats/jsonload.py)
    ),
    Rule(
        "SCH002",
        E,
        "index.json does not follow its schema",
        "Fix the field named in the message; the schema is schemas/index.schema.json.",
    ),
    Rule(
        "SCH003",
        E,
        "train.json does not follow its schema",
        "Fix the field named in the message; the schema is schemas/train.schema.json.",
    ),
    Rule(
        "SCH004",
        E,
        "index.json or SHA256SUMS missing",
        "Run `rwkv-registry init PATH` for a new registry, or restore the file from git.",
    ),
    Rule(
        "SCH005",
        N,
        "rules skipped because a JSON file does not follow its schema",
        "Fix the schema errors reported for the file (SCH002/SCH003); the skipped rules run again then.",
    ),
)
finding = RULES.finding
