"""The JSON rules (SCH001–SCH005): index.json, train.json and miss.json are strict JSON and follow their schemas."""

from __future__ import annotations

import hashlib
import json
from collections.abc import MutableMapping
from typing import Any

from rwkv_registry.core.codekey import VerdictMemo, code_digest
from rwkv_registry.core.rules import E, Finding, N, Rule, Rulebook
from rwkv_registry.formats.jsonload import UNPARSEABLE_JSON_HINT, JsonLoadError, load_json_bytes
from rwkv_registry.schemas import schema_digest

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


class Invalid:
    """A parsed JSON value that failed its schema (rules still look at what they can)."""

    def __init__(self, value: Any) -> None:
        self.value = value


def json_verdict_key(schema: str, sha256: str, digests: str | None = None) -> str:
    """The validation cache's key for a JSON file's verdict (strict loader, then schema ``schema``): its bytes'
    sha256, the schema files' and the code's digests (``digests``, as the caller has them; else computed)."""
    return f"{schema}:{sha256}:{digests or f'{schema_digest()}:{code_digest()}'}"


def json_verdict(schema: str, data: bytes, rel: str) -> tuple[str, list[list[str]]] | None:
    """(cache key, schema errors) of the JSON file ``rel`` holding ``data``, exactly as :func:`json_file_findings`
    remembers them; None when the strict loader refuses the bytes (nothing to remember then)."""
    from rwkv_registry.schemas import schema_errors

    try:
        value = load_json_bytes(data, path=rel)
    except JsonLoadError:
        return None
    return json_verdict_key(schema, hashlib.sha256(data).hexdigest()), [list(e) for e in schema_errors(schema, value)]


def json_file_findings(
    rel: str,
    data: bytes,
    schema: str,
    code: str,
    *,
    key: str | None = None,
    memo: VerdictMemo | None = None,
    items: MutableMapping[str, Any] | None = None,
) -> tuple[Any, list[Finding]]:
    """SCH001 (the strict loader refuses ``data``, the bytes of ``rel``) and ``code`` (SCH002, SCH003: one finding
    per schema error of ``schema``): the value (:class:`Invalid` around it when the schema fails; None when it does
    not parse) and the findings. With a ``memo`` and the verdict's ``key`` (:func:`json_verdict_key`), the errors
    are remembered by content; ``items``: the schema checker's memo of index.json entries, by content."""
    errors = memo.get_json(key) if memo is not None and key else None
    value: Any = None
    if errors is not None:
        # These bytes passed the strict loader (this code) before: no duplicate key, no NaN, no lone surrogate,
        # nothing deeper than the limit or beyond a double. json.loads gives the same value, without the
        # loader's scans (a third of a warm run's time at 4,000 entries).
        try:
            value = json.loads(data.decode("utf-8"))
        except ValueError:  # only if the cache lies (edited by hand): the strict loader says why
            errors = None
    if errors is None:
        try:
            value = load_json_bytes(data, path=rel)
        except JsonLoadError as e:
            return None, [finding("SCH001", rel, str(e))]
        from rwkv_registry.schemas import schema_errors

        errors = [list(e) for e in schema_errors(schema, value, memo=items)]
        if memo is not None and key:
            memo.put_json(key, errors)
    found = [finding(code, rel, f"{json_path}: {message}", json_path=json_path) for json_path, message in errors]
    return (Invalid(value) if errors else value), found
