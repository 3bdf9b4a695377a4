"""The registry as a catalogue: what ``rwkv-registry list``, ``show`` and the TUI display.

One data layer for the three of them. It reads index.json, the train.json files and the MiSS
manifests, and never hashes a weight file: a manifest comes from the validation cache when a
validation already read the file, else from the zip header alone (a few KB through
:class:`~rwkv_registry.formats.ckpt.FileSource`). Every file read is cached by its stat key, so asking
again for an unchanged file costs a ``stat``. A broken registry still opens: index.json problems
are kept in :attr:`Catalog.error` and every accessor tolerates missing or mistyped fields.

>>> cat = Catalog("path/to/registry")                          # doctest: +SKIP
>>> [e["id"] for e in cat.entries]                             # doctest: +SKIP
['v141b-s1224', 'v21-lr2e-5-e2', ...]
>>> print(cat.usage(cat.entry("v141b-s1224")).text)            # doctest: +SKIP
rwkv-cli state upload --api-url <URL> --file rwkv7-…/state/v1.41/v141b-s1224.pth
# then run the agent with --state-id <STATE_ID> --profile g1k --sampling g1k-agent

Rich renderables of each section (``render_*``) and the ``list`` / ``show`` commands are in
:mod:`rwkv_registry.catalog.render`. This module never imports rich or textual.
"""

from __future__ import annotations

import datetime as dt
import difflib
import json
import os
import re
import shlex
import stat
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rwkv_registry.checks.catalogue import RULES
from rwkv_registry.core.errors import RegistryError, UsageError
from rwkv_registry.core.rules import Finding
from rwkv_registry.fs.atomic import index_link_outside
from rwkv_registry.index.layout import METHODS
from rwkv_registry.index.readme import recorded_num
from rwkv_registry.index.sampling import DEFAULT_SAMPLING

if TYPE_CHECKING:
    from rwkv_registry.engine.facts import FactsCache

METHOD_LABEL = {"state": "State", "miss": "MiSS"}
DEFAULT_PROFILE = {"state": "g1k", "miss": "g1k-think"}
API_URL_PLACEHOLDER = "<URL>"

# Per-entry validation status, worst first, with a mark readable without colour.
STATUSES = ("error", "warning", "ok", "checking", "unchecked")
STATUS_MARK = {"error": "✗", "warning": "!", "ok": "✓", "checking": "…", "unchecked": "·"}
STATUS_STYLE = {"error": "bold red", "warning": "yellow", "ok": "green", "checking": "dim", "unchecked": "dim"}
SEVERITY_MARK = {"error": "✗", "warning": "!", "info": "i"}
SEVERITY_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}
RECOMMENDED_MARK = "★"
FROZEN_TAG = "[frozen]"
CURRENT_MARK = "▶"
FRACTIONS = " ▏▎▍▌▋▊▉"
_QUOTED_ID = re.compile(r"'([A-Za-z0-9][A-Za-z0-9._-]*)'")
_ENTRY_AT = re.compile(r"^\$\.entries\[(\d+)\]")  # a schema finding's JSON path inside one entry


def worst_status(statuses: Iterable[str]) -> str:
    """The worst of ``statuses`` (``unchecked`` for none)."""
    rank = {s: i for i, s in enumerate(STATUSES)}
    best = "unchecked"
    for s in statuses:
        if rank.get(s, len(STATUSES)) < rank[best]:
            best = s
    return best


def status_of_findings(findings: Iterable[Finding]) -> str:
    """``error``, ``warning`` or ``ok`` (notes alone are ok)."""
    sev = {str(f.severity) for f in findings}
    return "error" if "error" in sev else "warning" if "warning" in sev else "ok"


# --- small value helpers ---------------------------------------------------------------------------


def as_text(value: Any, default: str = "") -> str:
    """A field as text (None and non-strings tolerated)."""
    return default if value is None else str(value)


def as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def num(x: Any) -> str:
    """A number without a useless ``.0`` (``52.2``, ``44``, ``2e-05``)."""
    if isinstance(x, bool) or not isinstance(x, int | float):
        return as_text(x, "—")
    return f"{x:g}" if isinstance(x, float) else str(x)


def human_size(n: Any) -> str:
    """``37,819,746 bytes (36.1 MiB)``; ``—`` when unknown."""
    if not isinstance(n, int) or isinstance(n, bool):
        return "—"
    if n < 1024:
        return f"{n} bytes"
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n:,} bytes ({n / scale:.1f} {unit})"
    return f"{n:,} bytes"  # pragma: no cover


def short_size(n: Any) -> str:
    """``36.1 MiB``; ``—`` when unknown."""
    if not isinstance(n, int) or isinstance(n, bool):
        return "—"
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


def natural_key(text: str) -> tuple[Any, ...]:
    """Sort ``v1.9`` before ``v1.41``."""
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", text))


def score_num(x: Any) -> str:
    """A score, a solved count or a run's score as recorded (``46.0``, ``41``; the README's form); ``—`` when
    not a number."""
    if isinstance(x, bool) or not isinstance(x, int | float):
        return num(x)
    return recorded_num(x)


def score_text(s: dict[str, Any]) -> str:
    """``52.2%``, ``46.0%`` or ``41.0/60`` (points out of a known total) or ``9``, as recorded."""
    value = score_num(s.get("score"))
    if s.get("unit") == "percent":
        return f"{value}%"
    return f"{value}/{s['total']}" if isinstance(s.get("total"), int) else value


def _stat_key(path: Path) -> tuple[int, ...] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, stat.S_IFMT(st.st_mode))


_LINK_OUT = (-1,)  # the stat key of an index.json that is a symbolic link leaving the registry (never read)


def _rule_hint(code: str) -> str | None:
    """The fix of rule ``code`` (docs/rules.md), for an error shown outside a validation; None for no rule."""
    rule = RULES.get(code)
    return rule.hint if rule is not None else None


def _irregular(key: tuple[int, ...], rel: str) -> str | None:
    """Why the file of stat key ``key`` is not read: a FIFO, socket or device (``validate`` reports LAY015), whose
    ``open`` would wait for a writer forever (the browser's worker thread, and the process at exit); else None."""
    return None if key[-1] == stat.S_IFREG else f"{rel} is not a regular file"


def duration_text(start: Any, end: Any) -> str:
    try:
        a = dt.datetime.fromisoformat(str(start).replace("Z", "+00:00"))
        b = dt.datetime.fromisoformat(str(end).replace("Z", "+00:00"))
    except ValueError:
        return ""
    if (a.tzinfo is None) != (b.tzinfo is None):  # one with an offset, one without: no telling
        return ""
    minutes = int((b - a).total_seconds() // 60)
    if minutes < 0:
        return ""
    return f"{minutes // 60} h {minutes % 60:02d} min" if minutes >= 60 else f"{minutes} min"


# --- what the tree shows ---------------------------------------------------------------------------


@dataclass(frozen=True)
class NodeRef:
    """One node of the browse tree: the registry, a base, a method, a data version or an entry."""

    kind: str  # registry | base | method | version | entry
    base: str = ""
    method: str = ""
    version: str = ""
    entry_id: str = ""

    @property
    def prefix(self) -> str:
        """Directory of a base/method/version node relative to the root ("" for the registry)."""
        return "/".join(p for p in (self.base, self.method, self.version) if p)


def _char_class(c: str) -> str:
    return "digit" if c.isdigit() else "letter" if c.isalpha() else "separator"


def version_prefix(prefix: str, version: str) -> bool:
    """Is ``prefix`` a leading part of ``version`` that ends at a boundary of it? Data versions are
    ``v``, a digit, then letters, digits and ``. _ -`` (schemas/index.schema.json): the prefix may not cut
    a number, a word or a run of separators in two. ``v2`` is one of ``v2``, ``v2.1``, ``v2.1.3``,
    ``v2-foo`` (and ``v2b``), not of ``v20`` or ``v21``; ``v1.4`` not of ``v1.41``; ``v2.`` is of ``v2.1``."""
    if not version.startswith(prefix):
        return False
    if len(version) == len(prefix) or not prefix:
        return True
    return _char_class(prefix[-1]) != _char_class(version[len(prefix)])


_FILTER_KEYS = {
    "method": "method",
    "m": "method",
    "base": "base",
    "b": "base",
    "data": "data_version",
    "d": "data_version",
    "version": "data_version",
    "v": "data_version",
    "is": "flag",
}
FILTER_FIELDS = tuple(_FILTER_KEYS)  # the keys a filter term may have: method:, m:, base:, …
FILTER_HELP = "words  method:miss  base:NAME  data:v2.1  is:rec|frozen|active|error|warning|ok"


_STATUS_FLAGS = frozenset({"error", "errors", "err", "broken", "warning", "warnings", "warn", "ok"})
_KNOWN_FLAGS = _STATUS_FLAGS | {"rec", "recommended", "frozen", "active"}


def unknown_field_text(term: str) -> str:
    """``methd: is not a filter field (did you mean method:?)`` for a ``key:value`` term of no filter field."""
    key = term.partition(":")[0]
    near = difflib.get_close_matches(key, FILTER_FIELDS, n=1, cutoff=0.6)
    return f"{key}: is not a filter field" + (f" (did you mean {near[0]}:?)" if near else "")


@dataclass(frozen=True)
class EntryFilter:
    """What the filter box (and ``list --filter``) keeps. Parsed from ``text method:miss base:… data:v2.1 is:error``.

    Free words must all appear (case-insensitive) in the entry's id, path, group, description,
    profile or sampling; ``method:`` matches the method (``miss``, ``state``, ``MiSS``);
    ``base:`` a part of the base name; ``data:`` a data version or a leading part of one that ends at a
    boundary (``v2`` keeps v2, v2.1 and v2-foo, not v20 or v21; the ``v`` may be left out: see
    :func:`version_prefix`);
    ``is:`` one of rec(ommended), error, warning, ok, frozen, active. A term without a value (``method:``, as
    while it is being typed) keeps everything and is named in :meth:`describe` (``empty``).
    """

    words: tuple[str, ...] = ()
    method: str | None = None
    base: str | None = None
    data_version: str | None = None
    flags: tuple[str, ...] = ()
    empty: tuple[str, ...] = ()

    @classmethod
    def parse(cls, query: str) -> EntryFilter:
        """Parse the filter box's text; unknown ``key:`` prefixes are plain words."""
        words: list[str] = []
        flags: list[str] = []
        fields: dict[str, str] = {}
        empty: list[str] = []
        for token in query.split():
            key, sep, value = token.partition(":")
            target = _FILTER_KEYS.get(key.lower()) if sep and value else None
            if sep and not value and key.lower() in _FILTER_KEYS:
                empty.append(f"{key.lower()}:")  # a term being typed: not the word "method:", which hid everything
            elif target == "flag":
                flags.append(value.lower())
            elif target:
                fields[target] = value.lower()
            else:
                words.append(token.lower())
        return cls(tuple(words), flags=tuple(flags), empty=tuple(empty), **fields)

    @property
    def active(self) -> bool:
        """True when the filter keeps less than everything."""
        return bool(self.words or self.method or self.base or self.data_version or self.flags)

    @property
    def needs_status(self) -> bool:
        """True when an ``is:`` term asks for the validation status (error, warning, ok)."""
        return any(f in _STATUS_FLAGS for f in self.flags)

    @property
    def unknown_fields(self) -> list[str]:
        """The words written as a ``key:value`` term whose key is none of the filter's (``methd:miss``): a plain
        word to the TUI's box, which matches no entry; ``list --filter`` refuses them."""
        return [w for w in self.words if re.fullmatch(r"[a-z_-]+:.+", w) and w.partition(":")[0] not in _FILTER_KEYS]

    @property
    def unknown_flags(self) -> list[str]:
        """``is:`` values that are none of the known ones."""
        return [f for f in self.flags if f not in _KNOWN_FLAGS]

    def describe(self) -> str:
        """One line naming what is kept."""
        parts = [f"method {self.method}"] if self.method else []
        parts += [f"base ~{self.base}"] if self.base else []
        parts += [f"data {self.data_version}…"] if self.data_version else []
        parts += [f"is {f}" for f in self.flags if f in _KNOWN_FLAGS]
        unknown = self.unknown_flags
        if unknown:
            parts.append(f"is:{','.join(unknown)} ignored (is: takes rec, error, warning, ok, frozen, active)")
        parts += [f"{' '.join(self.empty)} without a value ignored"] if self.empty else []
        parts += [unknown_field_text(term) for term in self.unknown_fields]
        parts += [repr(" ".join(self.words))] if self.words else []
        return ", ".join(parts) if parts else "everything"

    def keeper(self, cat: Catalog, statuses: dict[str, str]) -> Callable[[dict[str, Any]], bool]:
        """The test :meth:`Catalog.grouped` takes: :meth:`matches` with each entry's validation status from
        ``statuses`` (by id; ``unchecked`` when absent) and its base's status from ``cat``."""
        return lambda e: self.matches(
            e,
            status=statuses.get(as_text(e.get("id")), "unchecked"),
            base_status=cat.base_status(as_text(e.get("base"))),
        )

    def matches(self, e: dict[str, Any], *, status: str = "unchecked", base_status: str = "") -> bool:
        """Does entry ``e`` pass? ``status``: its validation status; ``base_status``: active/frozen."""
        method = as_text(e.get("method")).lower()
        if self.method and not (method.startswith(self.method) or METHOD_LABEL.get(method, "").lower() == self.method):
            return False
        if self.base and self.base not in as_text(e.get("base")).lower():
            return False
        if self.data_version:
            version = as_text(as_dict(e.get("data")).get("version")).lower()
            want = self.data_version if self.data_version.startswith("v") else "v" + self.data_version
            if not version_prefix(want, version):
                return False
        for flag in self.flags:
            if flag in ("rec", "recommended") and e.get("recommended") is not True:
                return False
            if flag in ("error", "errors", "err", "broken") and status != "error":
                return False
            if flag in ("warning", "warnings", "warn") and status != "warning":
                return False
            if flag == "ok" and status != "ok":
                return False
            if flag in ("frozen", "active") and base_status != flag:
                return False
        if self.words:
            hay = " ".join(
                as_text(e.get(k)) for k in ("id", "path", "group", "description", "profile", "sampling", "adapter_id")
            ).lower()
            return all(w in hay for w in self.words)
        return True


# --- file-derived records --------------------------------------------------------------------------


@dataclass(frozen=True)
class TrainInfo:
    """One train.json: its registry-relative path, parsed value (None when unreadable) and the problem."""

    rel: str
    data: dict[str, Any] | None
    error: str | None = None
    hint: str | None = None  # how to fix the problem (with ``error``)


@dataclass(frozen=True)
class MissSummary:
    """What a MiSS file's embedded ``archive/miss.json`` says, without hashing the file."""

    rank: Any = None
    alpha: Any = None
    scale: Any = None
    dtype: Any = None
    content_version: str | None = None
    base_fingerprint: str | None = None
    targets: int = 0
    layers: int = 0
    target_kinds: tuple[str, ...] = ()
    source: str = "header"  # "validation cache" | "header"
    recomputed: str | None = None  # content_version recomputed from the bytes (validation cache only)
    error: str | None = None
    hint: str | None = None  # how to fix the problem (with ``error``)

    def to_json(self) -> dict[str, Any]:
        """JSON form (``show --format json``)."""
        return {
            "rank": self.rank,
            "alpha": self.alpha,
            "scale": self.scale,
            "dtype": self.dtype,
            "content_version": self.content_version,
            "base_fingerprint": self.base_fingerprint,
            "targets": self.targets,
            "layers": self.layers,
            "target_kinds": list(self.target_kinds),
            "source": self.source,
            "recomputed_content_version": self.recomputed,
            "error": self.error,
            "hint": self.hint,
        }


def summarize_manifest(manifest: Any, *, source: str, recomputed: str | None = None) -> MissSummary:
    """A :class:`MissSummary` of a parsed miss.json (tolerates any shape)."""
    if not isinstance(manifest, dict):
        return MissSummary(source=source, error="miss.json is not a JSON object", hint=_rule_hint("MIS003"))
    targets = [t for t in as_list(manifest.get("targets")) if isinstance(t, dict)]
    kinds: list[str] = []
    for t in targets:
        kind = as_text(t.get("target"))
        if kind and kind not in kinds:
            kinds.append(kind)
    layers = {t.get("layer") for t in targets if isinstance(t.get("layer"), int)}
    cv = manifest.get("content_version")
    fp = manifest.get("base_fingerprint")
    return MissSummary(
        rank=manifest.get("rank"),
        alpha=manifest.get("alpha"),
        scale=manifest.get("scale"),
        dtype=manifest.get("dtype"),
        content_version=cv if isinstance(cv, str) else None,
        base_fingerprint=fp if isinstance(fp, str) else None,
        targets=len(targets),
        layers=len(layers),
        target_kinds=tuple(kinds),
        source=source,
        recomputed=recomputed,
    )


@dataclass(frozen=True)
class Usage:
    """How to use an entry with RWKV-Agent's rwkv-cli (the seed README's usage section)."""

    command: str
    then: str

    @property
    def text(self) -> str:
        """The command, and the profile/sampling reminder as a shell comment."""
        return f"{self.command}\n{self.then}"


@dataclass(frozen=True)
class Bar:
    """One bar of a score chart."""

    label: str
    score: float
    unit: str
    date: str
    kind: str  # entry | base | unpublished
    entry_id: str = ""
    total: int | None = None
    current: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "id": self.entry_id or None,
            "kind": self.kind,
            "score": self.score,
            "unit": self.unit,
            "date": self.date,
            "current": self.current,
        }


@dataclass(frozen=True)
class ScoreDelta:
    """One benchmark of a comparison: the latest score of each side and B − A."""

    benchmark: str
    unit: str
    a: dict[str, Any] | None
    b: dict[str, Any] | None

    @property
    def delta(self) -> float | None:
        """B − A when both exist in the same unit."""
        if not (self.a and self.b):
            return None
        sa, sb = self.a.get("score"), self.b.get("score")
        if not isinstance(sa, int | float) or not isinstance(sb, int | float):
            return None
        return round(float(sb) - float(sa), 6)

    @property
    def same_day(self) -> bool:
        """Scores are comparable only when run the same day on the same backend (seed 000)."""
        return bool(self.a and self.b and self.a.get("date") == self.b.get("date") and self.same_backend)

    @property
    def same_backend(self) -> bool:
        """Both scores name the same backend (or neither names one)."""
        return bool(self.a and self.b and self.a.get("backend") == self.b.get("backend"))


@dataclass
class Comparison:
    """Two entries side by side: differing fields, their train.json lines and score deltas."""

    a: dict[str, Any]
    b: dict[str, Any]
    fields: list[tuple[str, str, str]] = field(default_factory=list)  # label, A, B
    train_rows: list[tuple[str, str, str]] = field(default_factory=list)  # op (= ~ - +), A line, B line
    train_labels: tuple[str, str] = ("", "")
    scores: list[ScoreDelta] = field(default_factory=list)

    @property
    def train_changes(self) -> int:
        """Rows of the train.json diff that differ."""
        return sum(1 for op, _, _ in self.train_rows if op != "=")


# --- findings mapped onto the tree ------------------------------------------------------------------


class FindingIndex:
    """A validation report's findings, looked up by entry and by directory.

    A finding belongs to an entry when its path is the entry's file, the entry's train.json or a
    directory above the entry's file (path prefix), or when it is on index.json and either names
    the entry's id in quotes or is a schema error at ``$.entries[N]…`` (``index_entries``: the raw
    ``entries`` list of index.json, to resolve N). Everything else is registry-level (README,
    SHA256SUMS, stray files).
    """

    def __init__(
        self, findings: Sequence[Finding], entries: Sequence[dict[str, Any]], index_entries: Sequence[Any] = ()
    ) -> None:
        self.findings = list(findings)
        by_path: dict[str, list[str]] = {}
        ids = set()
        for e in entries:
            eid, path = as_text(e.get("id")), as_text(e.get("path"))
            if not eid:
                continue
            ids.add(eid)
            keys = {path}
            if isinstance(e.get("train"), str):
                keys.add(e["train"])
            parts = path.split("/")
            keys.update("/".join(parts[:i]) for i in range(1, len(parts)))
            for k in keys:
                by_path.setdefault(k, []).append(eid)
        self.by_entry: dict[str, list[Finding]] = {}
        self.registry_level: list[Finding] = []
        for f in self.findings:
            owners = list(by_path.get(f.path.rstrip("/"), []))
            at = _ENTRY_AT.match(str(f.extra.get("json_path", ""))) if f.path == "index.json" else None
            if not owners and at and int(at.group(1)) < len(index_entries):
                item = index_entries[int(at.group(1))]
                owners = [as_text(item.get("id"))] if isinstance(item, dict) and as_text(item.get("id")) in ids else []
            if not owners and f.path == "index.json":
                owners = [i for i in dict.fromkeys(_QUOTED_ID.findall(f.message)) if i in ids]
            for eid in owners:
                self.by_entry.setdefault(eid, []).append(f)
            if not owners:
                self.registry_level.append(f)

    def for_entry(self, entry_id: str) -> list[Finding]:
        """Findings of one entry."""
        return list(self.by_entry.get(entry_id, []))

    def status(self, entry_id: str) -> str:
        """``error`` / ``warning`` / ``ok`` of one entry."""
        return status_of_findings(self.by_entry.get(entry_id, []))

    def under(self, prefix: str, entry_ids: Iterable[str] = ()) -> list[Finding]:
        """Findings on ``prefix`` or below it, plus those of ``entry_ids`` (no duplicates, report order)."""
        chosen: dict[int, Finding] = {}
        for i, f in enumerate(self.findings):
            if not prefix or f.path == prefix or f.path.startswith(prefix + "/"):
                chosen[i] = f
        wanted = {id(f) for eid in entry_ids for f in self.by_entry.get(eid, [])}
        for i, f in enumerate(self.findings):
            if id(f) in wanted:
                chosen[i] = f
        return [chosen[i] for i in sorted(chosen)]

    @property
    def counts(self) -> dict[str, int]:
        """Findings per severity."""
        out = {"error": 0, "warning": 0, "info": 0}
        for f in self.findings:
            out[str(f.severity)] = out.get(str(f.severity), 0) + 1
        return out


# --- the catalogue -------------------------------------------------------------------------------------


class Catalog:
    """A registry directory read for display. Thread-safe; every file read is cached by stat."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        from rwkv_registry.fs.atomic import require_directory

        path = Path(root)
        require_directory(path)
        self.root = path.resolve()
        self._lock = threading.RLock()
        self._index_key: tuple[int, ...] | str | None = "never"
        self.index: dict[str, Any] = {}
        self.error: str | None = None
        self.error_hint: str = ""
        self.generation = 0
        self.entries: list[dict[str, Any]] = []
        self.index_entries: list[Any] = []
        self.bases: list[dict[str, Any]] = []
        self.unpublished: list[dict[str, Any]] = []
        self._by_id: dict[str, dict[str, Any]] = {}
        self._by_path: dict[str, dict[str, Any]] = {}
        self._base_by_name: dict[str, dict[str, Any]] = {}
        self._train: dict[str, tuple[tuple[int, ...] | None, TrainInfo]] = {}
        self._miss: dict[str, tuple[tuple[int, ...] | None, MissSummary]] = {}
        self._facts: tuple[tuple[int, ...] | None, FactsCache] | None = None
        self.reads = 0  # files actually read (tests check that unchanged files are not re-read)
        self.refresh()

    # --- index.json -------------------------------------------------------------------------------
    @property
    def name(self) -> str:
        """The registry's name from index.json, else its directory name (never an absolute path)."""
        return as_text(as_dict(self.index.get("registry")).get("name")) or self.root.name

    def refresh(self) -> bool:
        """Re-read index.json if it changed on disk; True when it did."""
        from rwkv_registry.formats.jsonload import JsonLoadError, load_json_file

        path = self.root / "index.json"
        link = index_link_outside(self.root)
        key = _stat_key(path) if link is None else _LINK_OUT
        with self._lock:
            if key == self._index_key:
                return False
            self._index_key = key
            self.generation += 1
            self.error, self.error_hint, index = None, "", {}
            if link is not None:  # validate: LAY005; not followed, as the writers refuse it
                self.error = f"index.json is a symbolic link to {link}, outside the registry (LAY005): not followed"
                self.error_hint = RULES["LAY005"].hint
            elif key is None:
                self.error = "index.json is missing: this directory is not a registry yet"
                self.error_hint = "Create one with `rwkv-registry init PATH`."
            elif irregular := _irregular(key, "index.json"):
                self.error = irregular
                self.error_hint = "index.json must be a plain file (`rwkv-registry validate` reports LAY015)."
            else:
                try:
                    self.reads += 1
                    value = load_json_file(path, display="index.json")
                except JsonLoadError as e:
                    self.error, self.error_hint = e.message, e.hint
                else:
                    if isinstance(value, dict):
                        index = value
                    else:
                        self.error = f"index.json: the top level is a {type(value).__name__}, not an object"
                        self.error_hint = "index.json holds one JSON object (`rwkv-registry validate` lists the rules)."
            self.index = index
            self.bases = [b for b in as_list(index.get("bases")) if isinstance(b, dict)]
            self.index_entries = as_list(index.get("entries"))  # as written, to resolve $.entries[N] of a finding
            self.entries = [e for e in self.index_entries if isinstance(e, dict) and e.get("id") is not None]
            self.unpublished = [u for u in as_list(index.get("unpublished")) if isinstance(u, dict)]
            self._by_id = {as_text(e["id"]): e for e in reversed(self.entries)}
            self._by_path = {as_text(e.get("path")): e for e in reversed(self.entries)}
            self._base_by_name = {as_text(b.get("name")): b for b in reversed(self.bases)}
            return True

    def require_index(self) -> None:
        """Raise the index.json problem (for ``list`` and ``show``, which need one)."""
        if self.error is not None:
            raise RegistryError(self.error, hint=self.error_hint, path="index.json")

    def entry(self, entry_id: str) -> dict[str, Any]:
        """The entry ``entry_id``; :class:`UsageError` naming close ids when there is none."""
        e = self._by_id.get(entry_id)
        if e is None:
            raise self._unknown(entry_id)
        return e

    def get_entry(self, entry_id: str) -> dict[str, Any] | None:
        """The entry ``entry_id`` or None."""
        return self._by_id.get(entry_id)

    def get_unpublished(self, weight_id: str) -> dict[str, Any] | None:
        """The weight never uploaded (index.json ``unpublished``) named ``weight_id``, or None."""
        return next((u for u in self.unpublished if as_text(u.get("id")) == weight_id), None)

    def entry_at(self, path: str) -> dict[str, Any] | None:
        """The entry recording the registry-relative ``path``, or None."""
        return self._by_path.get(path)

    def base(self, name: str) -> dict[str, Any] | None:
        """The base ``name`` or None."""
        return self._base_by_name.get(name)

    def base_status(self, name: str) -> str:
        """``active``, ``frozen`` or ``unknown`` (the base is not in index.json)."""
        b = self.base(name)
        return as_text(b.get("status"), "unknown") if b else "unknown"

    def _unknown(self, what: str) -> UsageError:
        names = list(self._by_id) + list(self._base_by_name) + [as_text(u.get("id")) for u in self.unpublished]
        close = difflib.get_close_matches(what, names, n=3, cutoff=0.5)
        hint = f"Did you mean {', '.join(close)}? " if close else ""
        return UsageError(
            f"no entry or base {what!r} in {self.name}'s index.json",
            hint=hint + "`rwkv-registry list PATH` shows every entry id.",
        )

    # --- grouping for the tree ----------------------------------------------------------------------
    def base_names(self) -> list[str]:
        """Bases in index order, then bases that only entries name."""
        names = [as_text(b.get("name")) for b in self.bases if b.get("name")]
        for e in self.entries:
            n = as_text(e.get("base"), "?")
            if n not in names:
                names.append(n)
        return list(dict.fromkeys(names))

    def grouped(
        self, keep: Callable[[dict[str, Any]], bool] | None = None
    ) -> dict[str, dict[str, dict[str, list[dict[str, Any]]]]]:
        """base → method → data version → entries (entries in index order, versions naturally sorted)."""
        out: dict[str, dict[str, dict[str, list[dict[str, Any]]]]] = {n: {} for n in self.base_names()}
        for e in self.entries:
            if keep is not None and not keep(e):
                continue
            methods = out.setdefault(as_text(e.get("base"), "?"), {})
            versions = methods.setdefault(as_text(e.get("method"), "?"), {})
            versions.setdefault(as_text(as_dict(e.get("data")).get("version"), "?"), []).append(e)
        order = {m: i for i, m in enumerate(METHODS)}
        for base, methods in out.items():
            out[base] = {
                m: {v: methods[m][v] for v in sorted(methods[m], key=natural_key)}
                for m in sorted(methods, key=lambda m: (order.get(m, len(order)), m))
            }
        return out

    def entries_under(self, ref: NodeRef) -> list[dict[str, Any]]:
        """Entries below a node (the entry itself for an entry node)."""
        if ref.kind == "entry":
            e = self.get_entry(ref.entry_id)
            return [e] if e else []
        out = []
        for e in self.entries:
            if ref.base and as_text(e.get("base")) != ref.base:
                continue
            if ref.method and as_text(e.get("method")) != ref.method:
                continue
            if ref.version and as_text(as_dict(e.get("data")).get("version")) != ref.version:
                continue
            out.append(e)
        return out

    # --- train.json -------------------------------------------------------------------------------
    @staticmethod
    def train_rel(e: dict[str, Any]) -> str:
        """Registry-relative path of an entry's train.json (recorded, else its data-version dir's)."""
        if isinstance(e.get("train"), str) and e["train"]:
            return e["train"]
        parts = as_text(e.get("path")).split("/")
        return "/".join([*parts[:3], "train.json"])

    def train(self, rel: str) -> TrainInfo:
        """The train.json at ``rel`` (cached by stat; never raises)."""
        from rwkv_registry.formats.jsonload import JsonLoadError, load_json_file

        path = self.root / rel
        key = _stat_key(path)
        with self._lock:
            hit = self._train.get(rel)
            if hit is not None and hit[0] == key:
                return hit[1]
        if key is None:
            info = TrainInfo(rel, None, f"{rel} does not exist", _rule_hint("TRN001"))
        elif irregular := _irregular(key, rel):
            info = TrainInfo(rel, None, irregular, _rule_hint("LAY015"))
        else:
            try:
                with self._lock:
                    self.reads += 1
                value = load_json_file(path, display=rel)
                info = (
                    TrainInfo(rel, value)
                    if isinstance(value, dict)
                    else TrainInfo(rel, None, f"{rel}: not a JSON object", _rule_hint("SCH003"))
                )
            except JsonLoadError as e:
                info = TrainInfo(rel, None, e.message, e.hint or _rule_hint("SCH001"))
        with self._lock:
            self._train[rel] = (key, info)
        return info

    def run_of(self, e: dict[str, Any], train: dict[str, Any] | None) -> dict[str, Any] | None:
        """The run of a MiSS entry's group in its train.json."""
        group = e.get("group")
        for run in as_list(as_dict(train).get("runs")):
            if isinstance(run, dict) and group is not None and run.get("group") == group:
                return run
        return None

    def effective_train(self, e: dict[str, Any]) -> tuple[TrainInfo, dict[str, Any] | None]:
        """An entry's train.json with ``runs`` replaced by its own ``run`` (what applies to this file)."""
        info = self.train(self.train_rel(e))
        if info.data is None:
            return info, None
        if "runs" not in info.data:
            return info, dict(info.data)
        run = self.run_of(e, info.data)
        out: dict[str, Any] = {}
        for k, v in info.data.items():
            if k == "runs":
                out["run"] = run
            else:
                out[k] = v
        return info, out

    # --- MiSS manifests -------------------------------------------------------------------------------
    def _facts_cache(self) -> FactsCache | None:
        """The validation cache of this registry, re-read only when its file changed."""
        from rwkv_registry.engine.facts import FactsCache

        with self._lock:
            current = self._facts
        if current is not None:
            path = current[1].path
            if path is None or _stat_key(path) == current[0]:
                return current[1]
        cache = FactsCache(self.root)
        key = _stat_key(cache.path) if cache.path is not None else None
        with self._lock:
            self.reads += 1
            self._facts = (key, cache)
        return cache

    def miss_summary(self, e: dict[str, Any]) -> MissSummary | None:
        """The manifest summary of a MiSS entry's file (None for State entries). Never hashes the file:
        from the validation cache when its stat key matches, else from the zip header alone."""
        if e.get("method") != "miss":
            return None
        rel = as_text(e.get("path"))
        path = self.root / rel
        key = _stat_key(path)
        with self._lock:
            hit = self._miss.get(rel)
            if hit is not None and hit[0] == key and hit[1].source == "validation cache":
                return hit[1]
        if key is None:
            return MissSummary(source="none", error=f"{rel} does not exist", hint=_rule_hint("LAY008"))
        if irregular := _irregular(key, rel):
            return MissSummary(source="none", error=irregular, hint=_rule_hint("LAY015"))
        summary = self._miss_from_cache(path)
        if summary is None:
            with self._lock:
                if hit is not None and hit[0] == key:
                    return hit[1]
            summary = self._miss_from_header(path, rel)
        with self._lock:
            self._miss[rel] = (key, summary)
        return summary

    def _miss_from_cache(self, path: Path) -> MissSummary | None:
        from rwkv_registry.engine.facts import stat_key

        cache = self._facts_cache()
        if cache is None:
            return None
        try:
            facts = cache.get(str(path), stat_key(os.stat(path), str(path)))
        except OSError:
            return None
        if facts is None:
            return None
        if facts.manifest is None:
            problem = "; ".join(f["message"] for f in facts.findings[:2]) or "the file embeds no miss.json"
            code = facts.findings[0]["code"] if facts.findings else "MIS001"
            return MissSummary(source="validation cache", error=problem, hint=_rule_hint(code))
        return summarize_manifest(facts.manifest, source="validation cache", recomputed=facts.content_version)

    def _miss_from_header(self, path: Path, rel: str) -> MissSummary:
        from rwkv_registry.core.errors import CheckpointError
        from rwkv_registry.formats.ckpt import FileSource, open_checkpoint
        from rwkv_registry.formats.jsonload import JsonLoadError, load_json_bytes

        with self._lock:
            self.reads += 1
        try:
            with FileSource(path) as src:
                ck = open_checkpoint(src, verify_crc="none")
                raw = ck.miss_manifest
        except CheckpointError as e:
            return MissSummary(source="header", error=f"{e.code}: {e.message}", hint=e.hint or _rule_hint(e.code))
        except RegistryError as e:
            return MissSummary(source="header", error=e.message, hint=e.hint)
        if raw is None:
            return MissSummary(source="header", error="the file embeds no archive/miss.json", hint=_rule_hint("MIS001"))
        try:
            manifest = load_json_bytes(bytes(raw), path=f"{rel}:miss.json")
        except JsonLoadError as e:
            return MissSummary(source="header", error=e.message, hint=e.hint or _rule_hint("MIS003"))
        return summarize_manifest(manifest, source="header")

    # --- usage, scores, comparison --------------------------------------------------------------------
    def usage(self, e: dict[str, Any], api_url: str = API_URL_PLACEHOLDER) -> Usage:
        """The rwkv-cli line that puts an entry to work (seed README, usage section)."""
        method = as_text(e.get("method"))
        path = shlex.quote(as_text(e.get("path")))
        profile = as_text(e.get("profile")) or DEFAULT_PROFILE.get(method, "g1k")
        sampling = as_text(e.get("sampling")) or DEFAULT_SAMPLING
        if method == "miss":
            adapter = as_text(e.get("adapter_id")) or as_text(e.get("id"))
            return Usage(
                f"rwkv-cli adapter register --api-url {api_url} --adapter-id {shlex.quote(adapter)} --file {path}",
                f"# then send requests with adapter_id {adapter}, --profile {profile} --sampling {sampling}",
            )
        return Usage(
            f"rwkv-cli state upload --api-url {api_url} --file {path}",
            f"# then run the agent with --state-id <STATE_ID> --profile {profile} --sampling {sampling}",
        )

    def benchmarks(self, base: str, ids: Iterable[str] | None = None) -> list[tuple[str, str]]:
        """(benchmark, unit) pairs scored under a base (by the given entries when ``ids``), in order seen."""
        keep = set(ids) if ids is not None else None
        seen: dict[tuple[str, str], None] = {}
        sources = [] if keep is not None else [as_list(as_dict(self.base(base)).get("scores"))]
        for e in self.entries:
            if as_text(e.get("base")) == base and (keep is None or as_text(e.get("id")) in keep):
                sources.append(as_list(e.get("scores")))
        sources += [
            as_list(u.get("scores"))
            for u in self.unpublished
            if as_text(u.get("base")) == base and (keep is None or as_text(u.get("id")) in keep)
        ]
        for scores in sources:
            for s in scores:
                if isinstance(s, dict) and isinstance(s.get("score"), int | float):
                    seen[(as_text(s.get("benchmark"), "?"), as_text(s.get("unit"), "percent"))] = None
        return list(seen)

    def score_bars(
        self, base: str, benchmark: str, unit: str, *, current: str = "", only: Iterable[str] | None = None
    ) -> list[Bar]:
        """Every score of ``benchmark`` under ``base``: the base alone, its entries (or ``only`` those)
        and weights never uploaded; highest first."""
        keep = set(only) if only is not None else None
        rows: list[Bar] = []

        def add(scores: Any, label: str, kind: str, eid: str = "") -> None:
            for s in as_list(scores):
                if not isinstance(s, dict) or as_text(s.get("benchmark")) != benchmark:
                    continue
                if as_text(s.get("unit"), "percent") != unit or not isinstance(s.get("score"), int | float):
                    continue
                total = s["total"] if isinstance(s.get("total"), int) else None
                rows.append(
                    Bar(
                        label,
                        float(s["score"]),
                        unit,
                        as_text(s.get("date")),
                        kind,
                        eid,
                        total,
                        bool(eid and eid == current),
                    )
                )

        add(as_dict(self.base(base)).get("scores"), "base alone", "base")
        for e in self.entries:
            eid = as_text(e.get("id"))
            if as_text(e.get("base")) == base and (keep is None or eid in keep or eid == current):
                add(e.get("scores"), eid, "entry", eid)
        if keep is None:
            for u in self.unpublished:
                if as_text(u.get("base")) == base:
                    add(u.get("scores"), as_text(u.get("id")), "unpublished", as_text(u.get("id")))
        rows.sort(key=lambda b: -b.score)
        return rows

    def compare(self, a: dict[str, Any], b: dict[str, Any]) -> Comparison:
        """Entries ``a`` and ``b`` side by side."""
        cmp = Comparison(a, b)
        sa, sb = self.miss_summary(a), self.miss_summary(b)
        rows = [
            ("id", as_text(a.get("id")), as_text(b.get("id"))),
            ("base", as_text(a.get("base")), as_text(b.get("base"))),
            (
                "method",
                METHOD_LABEL.get(as_text(a.get("method")), as_text(a.get("method"))),
                METHOD_LABEL.get(as_text(b.get("method")), as_text(b.get("method"))),
            ),
            ("data", data_text(a, full=False), data_text(b, full=False)),
            ("group", as_text(a.get("group"), "—"), as_text(b.get("group"), "—")),
            ("size", short_size(as_dict(a.get("file")).get("size")), short_size(as_dict(b.get("file")).get("size"))),
            ("profile", as_text(a.get("profile"), "—"), as_text(b.get("profile"), "—")),
            ("sampling", as_text(a.get("sampling"), "—"), as_text(b.get("sampling"), "—")),
            ("recommended", "yes" if a.get("recommended") else "no", "yes" if b.get("recommended") else "no"),
        ]
        if sa or sb:
            rows.append(("rank/alpha", _rank_alpha(sa), _rank_alpha(sb)))
        cmp.fields = rows
        ia, ta = self.effective_train(a)
        ib, tb = self.effective_train(b)
        cmp.train_labels = (_train_label(ia, a), _train_label(ib, b))
        left = _json_lines(ta) if ta is not None else [f"({ia.error})"]
        right = _json_lines(tb) if tb is not None else [f"({ib.error})"]
        cmp.train_rows = side_by_side(left, right)
        latest_a, latest_b = _latest_scores(a), _latest_scores(b)
        for key in dict.fromkeys([*latest_a, *latest_b]):
            cmp.scores.append(ScoreDelta(key[0], key[1], latest_a.get(key), latest_b.get(key)))
        return cmp

    # --- JSON views for scripts --------------------------------------------------------------------------
    def entry_summary(self, e: dict[str, Any]) -> dict[str, Any]:
        """One row of ``list --format json``."""
        data = as_dict(e.get("data"))
        return {
            "id": e.get("id"),
            "base": e.get("base"),
            "base_status": self.base_status(as_text(e.get("base"))),
            "method": e.get("method"),
            "data_version": data.get("version"),
            "data_rows": data.get("rows"),
            "group": e.get("group"),
            "path": e.get("path"),
            "size": as_dict(e.get("file")).get("size"),
            "sha256": as_dict(e.get("file")).get("sha256"),
            "recommended": e.get("recommended") is True,
            "profile": e.get("profile"),
            "sampling": e.get("sampling"),
            "adapter_id": (e.get("adapter_id") or e.get("id")) if e.get("method") == "miss" else None,
            "content_version": as_dict(e.get("miss")).get("content_version"),
            "description": e.get("description"),
        }

    def describe(self, e: dict[str, Any]) -> dict[str, Any]:
        """Everything ``show --format json`` prints about an entry."""
        info, effective = self.effective_train(e)
        summary = self.miss_summary(e)
        usage = self.usage(e)
        base = self.base(as_text(e.get("base")))
        charts = []
        for bench, unit in self.benchmarks(as_text(e.get("base")), [as_text(e.get("id"))]):
            bars = self.score_bars(as_text(e.get("base")), bench, unit, current=as_text(e.get("id")))
            charts.append({"benchmark": bench, "unit": unit, "bars": [b.to_json() for b in bars]})
        return {
            "kind": "entry",
            "entry": e,
            "base": {
                "name": e.get("base"),
                "status": self.base_status(as_text(e.get("base"))),
                "sha256": as_dict(base).get("sha256"),
            },
            "train": {"path": info.rel, "error": info.error, "hint": info.hint, "effective": effective},
            "miss": summary.to_json() if summary else None,
            "fingerprint_matches": fingerprint_matches(summary, base),
            "usage": {"command": usage.command, "then": usage.then},
            "charts": charts,
        }

    def describe_unpublished(self, u: dict[str, Any]) -> dict[str, Any]:
        """Everything ``show --format json`` prints about a weight never uploaded: its record, its base and
        the charts it appears in."""
        base_name, wid = as_text(u.get("base")), as_text(u.get("id"))
        charts = [
            {
                "benchmark": bench,
                "unit": unit,
                "bars": [x.to_json() for x in self.score_bars(base_name, bench, unit, current=wid)],
            }
            for bench, unit in self.benchmarks(base_name, [wid])
        ]
        base = {
            "name": u.get("base"),
            "status": self.base_status(base_name),
            "sha256": as_dict(self.base(base_name)).get("sha256"),
        }
        return {"kind": "unpublished", "unpublished": u, "base": base, "charts": charts}

    def describe_registry(self) -> dict[str, Any]:
        """Everything ``show`` (no id) prints about the registry itself, and what the TUI's registry
        node shows: its record in index.json (name, title, description, training data, inference
        server, licence), each base with its status and entries per method, the entries per method,
        the weights never uploaded, the known issues and the links."""

        def per_method(entries: Iterable[dict[str, Any]]) -> dict[str, int]:
            listed = list(entries)
            return {"total": len(listed), **{m: sum(1 for e in listed if e.get("method") == m) for m in METHODS}}

        bases = [
            {
                "name": b.get("name"),
                "status": b.get("status"),
                "sha256": b.get("sha256"),
                "entries": per_method(e for e in self.entries if as_text(e.get("base")) == as_text(b.get("name"))),
            }
            for b in self.bases
        ]
        return {
            "kind": "registry",
            "name": self.name,
            "registry": as_dict(self.index.get("registry")),
            "bases": bases,
            "entries": per_method(self.entries),
            "unpublished": [as_text(u.get("id")) for u in self.unpublished],
            "known_issues": [as_text(x) for x in as_list(self.index.get("known_issues"))],
            "links": [
                {"title": as_text(x.get("title")), "url": as_text(x.get("url"))}
                for x in as_list(self.index.get("links"))
                if isinstance(x, dict)
            ],
        }

    def describe_base(self, b: dict[str, Any]) -> dict[str, Any]:
        """Everything ``show --format json`` prints about a base."""
        name = as_text(b.get("name"))
        charts = [
            {"benchmark": bench, "unit": unit, "bars": [x.to_json() for x in self.score_bars(name, bench, unit)]}
            for bench, unit in self.benchmarks(name)
        ]
        entries = [as_text(e.get("id")) for e in self.entries if as_text(e.get("base")) == name]
        return {"kind": "base", "base": b, "entries": entries, "charts": charts}


def fingerprint_matches(summary: MissSummary | None, base: dict[str, Any] | None) -> bool | None:
    """Does a MiSS manifest's base_fingerprint equal its base's sha256? None when unknown."""
    if summary is None or summary.base_fingerprint is None or not base or not isinstance(base.get("sha256"), str):
        return None
    return summary.base_fingerprint == base["sha256"]


def _rank_alpha(s: MissSummary | None) -> str:
    return f"r{num(s.rank)} α{num(s.alpha)}" if s and s.error is None else "—"


def _train_label(info: TrainInfo, e: dict[str, Any]) -> str:
    rel = info.rel
    base = as_text(e.get("base"))
    if base and rel.startswith(base + "/"):
        rel = "…/" + rel[len(base) + 1 :]
    return f"{rel} (run {e['group']})" if e.get("method") == "miss" and e.get("group") else rel


def _json_lines(value: Any) -> list[str]:
    return json.dumps(value, indent=2, ensure_ascii=False).splitlines()


def side_by_side(left: list[str], right: list[str]) -> list[tuple[str, str, str]]:
    """Rows of a two-column diff: ``=`` same, ``~`` changed, ``-`` only left, ``+`` only right."""
    rows: list[tuple[str, str, str]] = []
    matcher = difflib.SequenceMatcher(a=left, b=right, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            rows += [("=", left[i], right[j]) for i, j in zip(range(i1, i2), range(j1, j2), strict=True)]
        elif tag == "replace":
            n = max(i2 - i1, j2 - j1)
            for k in range(n):
                lt = left[i1 + k] if i1 + k < i2 else ""
                rt = right[j1 + k] if j1 + k < j2 else ""
                rows.append(("~" if lt and rt else "-" if lt else "+", lt, rt))
        elif tag == "delete":
            rows += [("-", left[i], "") for i in range(i1, i2)]
        else:
            rows += [("+", "", right[j]) for j in range(j1, j2)]
    return rows


def _latest_scores(e: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for s in as_list(e.get("scores")):
        if not isinstance(s, dict) or not isinstance(s.get("score"), int | float):
            continue
        key = (as_text(s.get("benchmark"), "?"), as_text(s.get("unit"), "percent"))
        if key not in out or as_text(s.get("date")) >= as_text(out[key].get("date")):
            out[key] = s
    return out


def data_text(e: dict[str, Any], *, full: bool = True) -> str:
    data = as_dict(e.get("data"))
    parts = [as_text(data.get("version"), "?")]
    if data.get("rows") is not None:
        parts.append(f"{data['rows']} rows")
    sha = data.get("sha256")
    if isinstance(sha, str):
        parts.append(f"sha256 {sha if full else sha[:8] + '…'}")
    return " · ".join(parts)


def find_entry(root: Path, entry_id: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(entry, base record)`` from ``root/index.json``; a :class:`UsageError` names the known ids
    (what ``smoke`` needs before anything is loaded)."""
    from rwkv_registry.core.errors import RefusedError
    from rwkv_registry.store.ops import load_index

    try:
        index = load_index(root)
    except RefusedError as e:  # an invalid index: the command cannot run
        raise UsageError(e.message, hint=e.hint, path=e.path) from None
    entries = {e["id"]: e for e in index["entries"]}
    if entry_id not in entries:
        known = ", ".join(sorted(entries)[:12]) or "none"
        raise UsageError(f"{root}: no entry {entry_id!r} in index.json", hint=f"Known entry ids: {known}.")
    entry = entries[entry_id]
    bases = {b["name"]: b for b in index["bases"]}
    if entry["base"] not in bases:
        raise UsageError(
            f"entry {entry_id!r} names base {entry['base']!r}, which index.json does not list",
            hint="Fix index.json (`rwkv-registry validate` lists every problem).",
        )
    return entry, bases[entry["base"]]


def check_base_path(base_file: Path, base: dict[str, Any]) -> None:
    """``--base-file`` must be a file (not a directory, not missing); its hash is checked later."""
    from rwkv_registry.fs.atomic import require_reachable

    require_reachable(base_file, "--base-file ")
    if base_file.is_dir():
        raise UsageError(
            f"--base-file {base_file}: is a directory, not a base file",
            hint=f"Give the .pth file of base {base['name']!r} (e.g. {base_file / (base['name'] + '.pth')}).",
        )
    if not base_file.is_file():
        what = "no such base file" if not base_file.exists() else "not a regular file"
        raise UsageError(f"{base_file}: {what}", hint=f"Give the .pth file of base {base['name']!r}.")
