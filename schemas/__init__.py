"""The registry's JSON Schemas (draft 2020-12) and validation against them.

This package (``rwkv_registry.schemas``, source folder ``schemas/``) holds the schema files as
package data beside this code: ``<name>.schema.json`` for each of :data:`SCHEMA_NAMES`. They refer
to each other by their absolute ``$id`` (``https://rwkv-registry.github.io/schemas/v1/<name>.schema.json``),
resolved from a local :class:`referencing.Registry`, so validation never touches the network.
The schema files are written by hand (nothing generates them); edit them directly.

``jsonschema`` is imported on first validation only: importing this module stays cheap. Usage::

    from rwkv_registry.formats.jsonload import load_json_file
    from rwkv_registry.schemas import schema_errors

    for path, message in schema_errors("index", load_json_file("index.json")):
        print(f"index.json {path}: {message}")   # index.json $.entries[2].file.sha256: "ab" ...
"""

from __future__ import annotations

import copy
import datetime as _dt
import difflib
import functools
import hashlib
import json
import marshal
import re
from collections.abc import MutableMapping
from importlib import resources
from typing import Any

from rwkv_registry.formats.jsonload import load_json_bytes

__all__ = ["SCHEMA_BASE_URI", "SCHEMA_NAMES", "load_schema", "schema_digest", "schema_errors", "schema_id"]

SCHEMA_NAMES = ("index", "train", "miss", "report", "score", "smoke-record", "results", "smoke-case", "smoke-report")
SCHEMA_BASE_URI = "https://rwkv-registry.github.io/schemas/v1/"

_IDENT_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_DATE_RE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}\Z")
_DATE_TIME_RE = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]+)?(?:[Zz]|[+-][0-9]{2}:[0-9]{2})\Z"
)
_FORMAT_HINTS = {"date": "YYYY-MM-DD", "date-time": "RFC 3339 with an offset, e.g. 2026-10-12T08:00:00Z"}
_MAX_SHOWN = 80  # a quoted SHA-256 fits


def schema_id(name: str) -> str:
    """The absolute ``$id`` of schema ``name``."""
    return f"{SCHEMA_BASE_URI}{name}.schema.json"


def _check_name(name: str) -> None:
    if name not in SCHEMA_NAMES:
        raise ValueError(f"unknown schema {name!r}; known: {', '.join(SCHEMA_NAMES)}")


def _schema_bytes(name: str) -> bytes:
    return resources.files(__name__).joinpath(f"{name}.schema.json").read_bytes()


@functools.cache
def _parsed(name: str) -> dict[str, Any]:
    return load_json_bytes(_schema_bytes(name), path=f"{name}.schema.json")


def load_schema(name: str) -> dict[str, Any]:
    """Return a fresh copy of schema ``name`` (one of :data:`SCHEMA_NAMES`), read from package data."""
    _check_name(name)
    return copy.deepcopy(_parsed(name))


def schema_digest() -> str:
    """SHA-256 (hex) over every schema file, in :data:`SCHEMA_NAMES` order; a cache key for results."""
    h = hashlib.sha256()
    for name in SCHEMA_NAMES:
        data = _schema_bytes(name)
        h.update(f"{name}\0{len(data)}\0".encode())
        h.update(data)
    return h.hexdigest()


def _is_date(value: object) -> bool:
    if not isinstance(value, str):
        return True
    if not _DATE_RE.match(value):
        return False
    try:
        _dt.date.fromisoformat(value)
    except ValueError:
        return False
    return True


def _is_date_time(value: object) -> bool:
    if not isinstance(value, str):
        return True
    if not _DATE_TIME_RE.match(value):
        return False
    text = value.upper()
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    try:
        _dt.datetime.fromisoformat(text)
    except ValueError:
        return False
    return True


@functools.cache
def _validator(name: str, item: str | None = None) -> Any:
    """A Draft 2020-12 validator for ``name`` (or, with ``item``, for its ``$defs/<item>``), built once,
    with every schema in a local registry."""
    from jsonschema import Draft202012Validator, FormatChecker
    from referencing import Registry, Resource

    # Our own date/date-time checks: jsonschema's date-time needs rfc3339-validator, not a dependency.
    checker = FormatChecker(formats=())
    checker.checks("date")(_is_date)
    checker.checks("date-time")(_is_date_time)
    registry = Registry().with_resources((schema_id(n), Resource.from_contents(_parsed(n))) for n in SCHEMA_NAMES)
    schema = _parsed(name) if item is None else {"$ref": f"{schema_id(name)}#/$defs/{item}"}
    return Draft202012Validator(schema, registry=registry, format_checker=checker)


def _json_path(parts: Any) -> str:
    out = "$"
    for p in parts:
        if isinstance(p, int):
            out += f"[{p}]"
        elif _IDENT_RE.match(p):
            out += f".{p}"
        else:
            out += f"[{json.dumps(p, ensure_ascii=False)}]"
    return out


def _show(value: Any) -> str:
    """A value as JSON, shortened to at most 80 characters."""
    try:
        text = json.dumps(value, ensure_ascii=False, default=repr)
    except ValueError:  # circular structure
        text = repr(value)
    return text if len(text) <= _MAX_SHOWN else text[: _MAX_SHOWN - 1] + "…"


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _sort_key(parts: list[Any]) -> tuple[tuple[int, Any], ...]:
    return tuple((0, p) if isinstance(p, int) else (1, p) for p in parts)


def _message(err: Any) -> str:
    """A readable one-line message for one jsonschema error (values as JSON, shortened)."""
    kw, val, inst = err.validator, err.validator_value, err.instance
    schema = err.schema if isinstance(err.schema, dict) else {}
    if kw == "type":
        types = val if isinstance(val, list) else [val]
        wanted = types[0] if len(types) == 1 else f"{', '.join(types[:-1])} or {types[-1]}"
        got = "null" if inst is None else f"{_json_type(inst)} {_show(inst)}"
        return f"expected {wanted}, got {got}"
    if kw == "not" and val == {}:
        key = err.path[-1] if err.path else "value"
        reason = schema.get("description", "")
        return f"{_show(key)} is not allowed here" + (f": {reason}" if reason else "")
    if kw == "const":
        return f"expected {_show(val)}, got {_show(inst)}"
    if kw == "enum":
        return f"{_show(inst)} is not one of {', '.join(_show(v) for v in val)}"
    if kw == "pattern":
        what = str(schema.get("description", "")).rstrip(".")
        if not what:
            return f"{_show(inst)} does not match the pattern {val}"
        first = what.split(" ", 1)[0]
        if first[1:] == first[1:].lower():  # not an acronym such as SHA-256 or MiSS
            what = what[0].lower() + what[1:]
        return f"{_show(inst)} does not have the expected form ({what})"
    if kw == "format":
        return f"{_show(inst)} is not a valid {val} ({_FORMAT_HINTS.get(val, val)})"
    if kw in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        words = {
            "minimum": "less than the minimum",
            "maximum": "more than the maximum",
            "exclusiveMinimum": "not more than",
            "exclusiveMaximum": "not less than",
        }[kw]
        return f"{_show(inst)} is {words} {val}"
    if kw == "minLength":
        return f"{_show(inst)} is shorter than {val} character{'s' * (val != 1)}"
    if kw == "maxLength":
        return f"{_show(inst)} is longer than {val} characters"
    if kw == "minItems":
        return f"expected at least {val} item{'s' * (val != 1)}, got {len(inst)}"
    if kw == "maxItems":
        return f"expected at most {val} item{'s' * (val != 1)}, got {len(inst)}"
    text = err.message
    return text if len(text) <= 200 else text[:199] + "…"


def _missing_keys(err: Any) -> list[tuple[list[Any], str]]:
    """One (path, message) per property that ``required`` found missing."""
    inst = err.instance if isinstance(err.instance, dict) else {}
    schema = err.schema if isinstance(err.schema, dict) else {}
    sp = list(err.relative_schema_path)
    why = ""
    if len(sp) >= 2 and sp[-2] in ("then", "else") and schema.get("description"):
        why = f" ({schema['description']})"
    return [
        (list(err.absolute_path), f"missing required property {_show(k)}{why}")
        for k in err.validator_value
        if k not in inst
    ]


def _unknown_keys(err: Any) -> list[tuple[list[Any], str]]:
    """One (path, message) per key that ``additionalProperties: false`` refused."""
    schema, inst = err.schema, err.instance
    known = list(schema.get("properties", {}))
    patterns = list(schema.get("patternProperties", {}))
    out = []
    for key in inst:
        if key in known or any(re.search(p, key) for p in patterns):
            continue
        close = _near(key, known)
        hint = f'did you mean "{close}"?' if close else 'extension keys start with "x-"'
        out.append(([*err.absolute_path, key], f"unknown property {_show(key)} ({hint})"))
    return out


def _near(key: str, known: list[str], cutoff: float = 0.6) -> str | None:
    """The known property closest to ``key`` (difflib), if one is close: the "did you mean" of every schema."""
    close = difflib.get_close_matches(key, known, n=1, cutoff=cutoff)
    return close[0] if close else None


def misspelt_keys(name: str, instance: Any) -> list[tuple[str, str]]:
    """The keys of ``instance`` that schema ``name`` lets pass as extra data (an object without
    ``additionalProperties: false``: train.json's top level, its ``runs`` items) but that are close to one of its
    properties (``finshed``), as ``(json_path, message)`` pairs like :func:`schema_errors`' unknown properties:
    ``unknown key "finshed" (did you mean "finished"?)``. Extension keys (``x-``) are never reported."""
    _check_name(name)
    out: list[tuple[list[Any], str]] = []

    def walk(schema: Any, value: Any, path: list[Any]) -> None:
        if not isinstance(schema, dict):
            return
        props = schema.get("properties")
        if isinstance(props, dict) and isinstance(value, dict):
            closed = schema.get("additionalProperties") is False
            for key, v in value.items():
                if key in props:
                    walk(props[key], v, [*path, key])
                elif not closed and isinstance(key, str) and not key.startswith("x-"):
                    close = _near(key, list(props), cutoff=0.8)
                    if close is not None and close not in value:
                        out.append(([*path, key], f'unknown key {_show(key)} (did you mean "{close}"?)'))
        items = schema.get("items")
        if isinstance(items, dict) and isinstance(value, list):
            for i, v in enumerate(value):
                walk(items, v, [*path, i])

    walk(_parsed(name), instance, [])
    return [(_json_path(parts), message) for parts, message in out]


def _flatten(errors: Any) -> Any:
    """Yield leaf errors: an anyOf/oneOf failure is replaced by its best-matching branch's errors."""
    from jsonschema.exceptions import best_match

    for err in errors:
        if err.context:
            best = best_match(err.context)
            yield from _flatten([best]) if best is not None else [err]
        else:
            yield err


# Arrays validated item by item, each item's errors remembered by its content: ``schema name -> (key of the
# top-level array, its items' $defs name)``. An index.json of thousands of entries is then checked again, after
# an edit, only for the entries that changed (the rest of the document is small). The array's own schema must
# be only ``{"type": "array", "items": {"$ref": "#/$defs/<name>"}}`` (test_schemas checks that), so the
# errors are exactly those of the whole document.
SPLIT_ARRAYS = {"index": ("entries", "entry")}
_ITEM_MEMO: dict[str, list[list[Any]]] = {}  # this process's item results (cleared when it grows large)
_ITEM_MEMO_MAX = 200_000


def forget_results() -> None:
    """Forget this process's schema results of index items, as a new process starts: the next check of an item
    asks jsonschema again unless the cache on disk (the caller's ``memo``) has it."""
    _ITEM_MEMO.clear()


def _leaf_errors(validator: Any, instance: Any) -> list[tuple[list[Any], str]]:
    found: list[tuple[list[Any], str]] = []
    for err in _flatten(validator.iter_errors(instance)):
        if err.validator == "additionalProperties" and isinstance(err.instance, dict):
            found.extend(_unknown_keys(err))
        elif err.validator == "required":
            found.extend(_missing_keys(err))
        else:
            found.append((list(err.absolute_path), _message(err)))
    return found


def _recall(k: str, memo: MutableMapping[str, list[list[Any]]] | None) -> list[list[Any]] | None:
    errs = memo.pop(k, None) if memo is not None else None  # popped: re-inserted last (recently used)
    return _ITEM_MEMO.get(k) if errs is None else errs


def _remember(k: str, errs: list[list[Any]], memo: MutableMapping[str, list[list[Any]]] | None) -> None:
    if len(_ITEM_MEMO) >= _ITEM_MEMO_MAX:
        _ITEM_MEMO.clear()
    _ITEM_MEMO[k] = errs
    if memo is not None:
        memo[k] = errs


def _content_key(prefix: str, value: Any) -> str:
    """The memo's key of ``value`` (a parsed JSON value) under ``prefix`` (schema digest and name): a digest of its
    ``marshal`` serialization (format 2: no references, so the bytes depend only on the value), which records each
    value's type (``True``, ``1`` and ``1.0`` differ), every string and number exactly, and keys in their order;
    ``marshal.loads`` would give the value back, so two values with one key are the same value. About three times
    faster than ``repr``, which it replaces (half of what finding the changed entry of a 4,000-entry index cost).
    A value ``marshal`` refuses (no JSON parser makes one) is keyed by its ``repr``, apart."""
    try:
        data = b"m\0" + marshal.dumps(value, 2)
    except ValueError:
        data = f"r\0{value!r}".encode("utf-8", "surrogatepass")
    return hashlib.sha256(prefix.encode("utf-8", "surrogatepass") + b"\0" + data).hexdigest()[:40]


def schema_errors(
    name: str, instance: Any, *, memo: MutableMapping[str, list[list[Any]]] | None = None
) -> list[tuple[str, str]]:
    """Every way ``instance`` breaks schema ``name``, as ``(json_path, message)`` pairs.

    ``json_path`` is like ``$.entries[2].file.sha256`` (keys that are not identifiers are quoted:
    ``$["x-note"]``); the list is sorted by path (array indices numerically), empty when valid.
    ``date`` and ``date-time`` formats are checked. Each key refused by ``additionalProperties``
    is its own error, with a "did you mean" suggestion when a known key is close.

    The items of an index's ``entries`` are validated one by one and their results remembered by
    content (:func:`_content_key` and the schema digest): in this process, and in ``memo`` when one is given (the
    validation cache keeps it between runs). A remembered item is not validated again; nor is the rest of
    the index (remembered the same way).
    """
    _check_name(name)
    split = SPLIT_ARRAYS.get(name)
    if split is not None and isinstance(instance, dict) and isinstance(instance.get(split[0]), list):
        key, item = split
        digest = schema_digest()
        # the rest of the document (the array emptied) is remembered the same way, under its own key: when every
        # item is known too, jsonschema is not even imported (validate right after an `add` that recorded its
        # new entries, FactsCache.journal_items)
        rest = {**instance, key: []}
        k = _content_key(f"{digest}\0{name}\0{key}=[]", rest)
        errs = _recall(k, memo)
        if errs is None:
            errs = [[parts, message] for parts, message in _leaf_errors(_validator(name), rest)]
        _remember(k, errs, memo)
        found = [(parts, message) for parts, message in errs]
        item_validator = None
        prefix = f"{digest}\0{name}"
        for i, value in enumerate(instance[key]):
            k = _content_key(prefix, value)
            errs = _recall(k, memo)
            if errs is None:
                item_validator = item_validator or _validator(name, item)
                errs = [[parts, message] for parts, message in _leaf_errors(item_validator, value)]
            _remember(k, errs, memo)
            found.extend(([key, i, *parts], message) for parts, message in errs)
    else:
        found = _leaf_errors(_validator(name), instance)
    found.sort(key=lambda pm: (_sort_key(pm[0]), pm[1]))
    out: list[tuple[str, str]] = []
    for parts, message in found:
        item_out = (_json_path(parts), message)
        if not out or out[-1] != item_out:
            out.append(item_out)
    return out


def schema_summary(errors: list[tuple[str, str]], limit: int = 3) -> str:
    """The first ``limit`` of :func:`schema_errors`' pairs as one line: ``$.a: message; $.b: message``."""
    return "; ".join(f"{path}: {message}" for path, message in errors[:limit])
