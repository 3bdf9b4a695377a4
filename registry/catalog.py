"""The registry as a catalogue: what ``rwkv-registry list``, ``show`` and the TUI display.

One data layer for the three of them. It reads index.json, the train.json files and the MiSS
manifests, and never hashes a weight file: a manifest comes from the validation cache when a
validation already read the file, else from the zip header alone (a few KB through
:class:`~rwkv_registry.ckpt.FileSource`). Every file read is cached by its stat key, so asking
again for an unchanged file costs a ``stat``. A broken registry still opens: index.json problems
are kept in :attr:`Catalog.error` and every accessor tolerates missing or mistyped fields.

>>> cat = Catalog("path/to/registry")                          # doctest: +SKIP
>>> [e["id"] for e in cat.entries]                             # doctest: +SKIP
['v141b-s1224', 'v21-lr2e-5-e2', ...]
>>> print(cat.usage(cat.entry("v141b-s1224")).text)            # doctest: +SKIP
rwkv-cli state upload --api-url <URL> --file rwkv7-…/state/v1.41/v141b-s1224.pth
# then run the agent with --state-id <STATE_ID> --profile g1k --sampling g1k-agent

Rich renderables of each section (``render_*``) are shared by ``show`` and the TUI's details
pane; rich is imported only when one is built. This module never imports textual.
"""

from __future__ import annotations

import argparse
import datetime as dt
import difflib
import json
import os
import re
import shlex
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import RegistryError, UsageError
from .rules import Finding

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
    from rich.measure import Measurement
    from rich.text import Text

    from .facts import FactsCache

METHODS = ("state", "miss")
METHOD_LABEL = {"state": "State", "miss": "MiSS"}
DEFAULT_PROFILE = {"state": "g1k", "miss": "g1k-think"}
DEFAULT_SAMPLING = "g1k-agent"
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
_FRACTIONS = " ▏▎▍▌▋▊▉"
_QUOTED_ID = re.compile(r"'([A-Za-z0-9][A-Za-z0-9._-]*)'")


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


def _s(value: Any, default: str = "") -> str:
    """A field as text (None and non-strings tolerated)."""
    return default if value is None else str(value)


def _d(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _l(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def num(x: Any) -> str:
    """A number without a useless ``.0`` (``52.2``, ``44``, ``2e-05``)."""
    if isinstance(x, bool) or not isinstance(x, int | float):
        return _s(x, "—")
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


def score_text(s: dict[str, Any]) -> str:
    """``52.2%`` or ``41/60`` (points out of a known total) or ``9``."""
    value = num(s.get("score"))
    if s.get("unit") == "percent":
        return f"{value}%"
    return f"{value}/{s['total']}" if isinstance(s.get("total"), int) else value


def _stat_key(path: Path) -> tuple[int, ...] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _duration(start: Any, end: Any) -> str:
    try:
        a = dt.datetime.fromisoformat(str(start).replace("Z", "+00:00"))
        b = dt.datetime.fromisoformat(str(end).replace("Z", "+00:00"))
    except ValueError:
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
FILTER_HELP = "text  method:miss  base:NAME  data:v2.1  is:rec|error|warning|frozen"


@dataclass(frozen=True)
class EntryFilter:
    """What the filter box (and ``list``) keeps. Parsed from ``text method:miss base:… data:v2.1 is:error``.

    Free words must all appear (case-insensitive) in the entry's id, path, group, description,
    profile or sampling; ``method:`` matches the method (``miss``, ``state``, ``MiSS``);
    ``base:`` a part of the base name; ``data:`` a data-version prefix (``v2`` keeps v2.1);
    ``is:`` one of rec(ommended), error, warning, ok, frozen, active.
    """

    words: tuple[str, ...] = ()
    method: str | None = None
    base: str | None = None
    data_version: str | None = None
    flags: tuple[str, ...] = ()

    @classmethod
    def parse(cls, query: str) -> EntryFilter:
        """Parse the filter box's text; unknown ``key:`` prefixes are plain words."""
        words: list[str] = []
        flags: list[str] = []
        fields: dict[str, str] = {}
        for token in query.split():
            key, sep, value = token.partition(":")
            target = _FILTER_KEYS.get(key.lower()) if sep and value else None
            if target == "flag":
                flags.append(value.lower())
            elif target:
                fields[target] = value.lower()
            else:
                words.append(token.lower())
        return cls(tuple(words), flags=tuple(flags), **fields)

    @property
    def active(self) -> bool:
        """True when the filter keeps less than everything."""
        return bool(self.words or self.method or self.base or self.data_version or self.flags)

    def describe(self) -> str:
        """One line naming what is kept."""
        parts = [f"method {self.method}"] if self.method else []
        parts += [f"base ~{self.base}"] if self.base else []
        parts += [f"data {self.data_version}…"] if self.data_version else []
        parts += [f"is {f}" for f in self.flags]
        parts += [repr(" ".join(self.words))] if self.words else []
        return ", ".join(parts) if parts else "everything"

    def matches(self, e: dict[str, Any], *, status: str = "unchecked", base_status: str = "") -> bool:
        """Does entry ``e`` pass? ``status``: its validation status; ``base_status``: active/frozen."""
        method = _s(e.get("method")).lower()
        if self.method and not (method.startswith(self.method) or METHOD_LABEL.get(method, "").lower() == self.method):
            return False
        if self.base and self.base not in _s(e.get("base")).lower():
            return False
        if self.data_version:
            version = _s(_d(e.get("data")).get("version")).lower()
            want = self.data_version if self.data_version.startswith("v") else "v" + self.data_version
            if not version.startswith(want):
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
                _s(e.get(k)) for k in ("id", "path", "group", "description", "profile", "sampling", "adapter_id")
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
        }


def summarize_manifest(manifest: Any, *, source: str, recomputed: str | None = None) -> MissSummary:
    """A :class:`MissSummary` of a parsed miss.json (tolerates any shape)."""
    if not isinstance(manifest, dict):
        return MissSummary(source=source, error="miss.json is not a JSON object")
    targets = [t for t in _l(manifest.get("targets")) if isinstance(t, dict)]
    kinds: list[str] = []
    for t in targets:
        kind = _s(t.get("target"))
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
        """Scores are comparable only when run the same day (same backend)."""
        return bool(self.a and self.b and self.a.get("date") == self.b.get("date"))


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
    directory above the entry's file (path prefix), or when it is on index.json and names the
    entry's id in quotes. Everything else is registry-level (README, SHA256SUMS, stray files).
    """

    def __init__(self, findings: Sequence[Finding], entries: Sequence[dict[str, Any]]) -> None:
        self.findings = list(findings)
        by_path: dict[str, list[str]] = {}
        ids = set()
        for e in entries:
            eid, path = _s(e.get("id")), _s(e.get("path"))
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
        path = Path(root)
        if not path.is_dir():
            raise UsageError(
                f"{root}: not a directory", hint="Give the registry's root directory (the one with index.json)."
            )
        self.root = path.resolve()
        self._lock = threading.RLock()
        self._index_key: tuple[int, ...] | str | None = "never"
        self.index: dict[str, Any] = {}
        self.error: str | None = None
        self.error_hint: str = ""
        self.generation = 0
        self.entries: list[dict[str, Any]] = []
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
        return _s(_d(self.index.get("registry")).get("name")) or self.root.name

    def refresh(self) -> bool:
        """Re-read index.json if it changed on disk; True when it did."""
        from .jsonload import JsonLoadError, load_json_file

        path = self.root / "index.json"
        key = _stat_key(path)
        with self._lock:
            if key == self._index_key:
                return False
            self._index_key = key
            self.generation += 1
            self.error, self.error_hint, index = None, "", {}
            if key is None:
                self.error = "index.json is missing: this directory is not a registry yet"
                self.error_hint = "Create one with `rwkv-registry init PATH`."
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
            self.bases = [b for b in _l(index.get("bases")) if isinstance(b, dict)]
            self.entries = [e for e in _l(index.get("entries")) if isinstance(e, dict) and e.get("id") is not None]
            self.unpublished = [u for u in _l(index.get("unpublished")) if isinstance(u, dict)]
            self._by_id = {_s(e["id"]): e for e in reversed(self.entries)}
            self._by_path = {_s(e.get("path")): e for e in reversed(self.entries)}
            self._base_by_name = {_s(b.get("name")): b for b in reversed(self.bases)}
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

    def entry_at(self, path: str) -> dict[str, Any] | None:
        """The entry recording the registry-relative ``path``, or None."""
        return self._by_path.get(path)

    def base(self, name: str) -> dict[str, Any] | None:
        """The base ``name`` or None."""
        return self._base_by_name.get(name)

    def base_status(self, name: str) -> str:
        """``active``, ``frozen`` or ``unknown`` (the base is not in index.json)."""
        b = self.base(name)
        return _s(b.get("status"), "unknown") if b else "unknown"

    def _unknown(self, what: str) -> UsageError:
        names = list(self._by_id) + list(self._base_by_name)
        close = difflib.get_close_matches(what, names, n=3, cutoff=0.5)
        hint = f"Did you mean {', '.join(close)}? " if close else ""
        return UsageError(
            f"no entry or base {what!r} in {self.name}'s index.json",
            hint=hint + "`rwkv-registry list PATH` shows every entry id.",
        )

    # --- grouping for the tree ----------------------------------------------------------------------
    def base_names(self) -> list[str]:
        """Bases in index order, then bases that only entries name."""
        names = [_s(b.get("name")) for b in self.bases if b.get("name")]
        for e in self.entries:
            n = _s(e.get("base"), "?")
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
            methods = out.setdefault(_s(e.get("base"), "?"), {})
            versions = methods.setdefault(_s(e.get("method"), "?"), {})
            versions.setdefault(_s(_d(e.get("data")).get("version"), "?"), []).append(e)
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
            if ref.base and _s(e.get("base")) != ref.base:
                continue
            if ref.method and _s(e.get("method")) != ref.method:
                continue
            if ref.version and _s(_d(e.get("data")).get("version")) != ref.version:
                continue
            out.append(e)
        return out

    # --- train.json -------------------------------------------------------------------------------
    @staticmethod
    def train_rel(e: dict[str, Any]) -> str:
        """Registry-relative path of an entry's train.json (recorded, else its data-version dir's)."""
        if isinstance(e.get("train"), str) and e["train"]:
            return e["train"]
        parts = _s(e.get("path")).split("/")
        return "/".join([*parts[:3], "train.json"])

    def train(self, rel: str) -> TrainInfo:
        """The train.json at ``rel`` (cached by stat; never raises)."""
        from .jsonload import JsonLoadError, load_json_file

        path = self.root / rel
        key = _stat_key(path)
        with self._lock:
            hit = self._train.get(rel)
            if hit is not None and hit[0] == key:
                return hit[1]
        if key is None:
            info = TrainInfo(rel, None, f"{rel} does not exist")
        else:
            try:
                with self._lock:
                    self.reads += 1
                value = load_json_file(path, display=rel)
                info = (
                    TrainInfo(rel, value)
                    if isinstance(value, dict)
                    else TrainInfo(rel, None, f"{rel}: not a JSON object")
                )
            except JsonLoadError as e:
                info = TrainInfo(rel, None, e.message)
        with self._lock:
            self._train[rel] = (key, info)
        return info

    def run_of(self, e: dict[str, Any], train: dict[str, Any] | None) -> dict[str, Any] | None:
        """The run of a MiSS entry's group in its train.json."""
        group = e.get("group")
        for run in _l(_d(train).get("runs")):
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
        from .facts import FactsCache

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
        rel = _s(e.get("path"))
        path = self.root / rel
        key = _stat_key(path)
        with self._lock:
            hit = self._miss.get(rel)
            if hit is not None and hit[0] == key and hit[1].source == "validation cache":
                return hit[1]
        if key is None:
            return MissSummary(source="none", error=f"{rel} does not exist")
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
        from .facts import stat_key

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
            return MissSummary(source="validation cache", error=problem)
        return summarize_manifest(facts.manifest, source="validation cache", recomputed=facts.content_version)

    def _miss_from_header(self, path: Path, rel: str) -> MissSummary:
        from .ckpt import FileSource, open_checkpoint
        from .errors import CheckpointError
        from .jsonload import JsonLoadError, load_json_bytes

        with self._lock:
            self.reads += 1
        try:
            with FileSource(path) as src:
                ck = open_checkpoint(src, verify_crc="none")
                raw = ck.miss_manifest
        except CheckpointError as e:
            return MissSummary(source="header", error=f"{e.code}: {e.message}")
        except RegistryError as e:
            return MissSummary(source="header", error=e.message)
        if raw is None:
            return MissSummary(source="header", error="the file embeds no archive/miss.json")
        try:
            manifest = load_json_bytes(bytes(raw), path=f"{rel}:miss.json")
        except JsonLoadError as e:
            return MissSummary(source="header", error=e.message)
        return summarize_manifest(manifest, source="header")

    # --- usage, scores, comparison --------------------------------------------------------------------
    def usage(self, e: dict[str, Any], api_url: str = API_URL_PLACEHOLDER) -> Usage:
        """The rwkv-cli line that puts an entry to work (seed README, usage section)."""
        method = _s(e.get("method"))
        path = shlex.quote(_s(e.get("path")))
        profile = _s(e.get("profile")) or DEFAULT_PROFILE.get(method, "g1k")
        sampling = _s(e.get("sampling")) or DEFAULT_SAMPLING
        if method == "miss":
            adapter = _s(e.get("adapter_id")) or _s(e.get("id"))
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
        sources = [] if keep is not None else [_l(_d(self.base(base)).get("scores"))]
        for e in self.entries:
            if _s(e.get("base")) == base and (keep is None or _s(e.get("id")) in keep):
                sources.append(_l(e.get("scores")))
        if keep is None:
            sources += [_l(u.get("scores")) for u in self.unpublished if _s(u.get("base")) == base]
        for scores in sources:
            for s in scores:
                if isinstance(s, dict) and isinstance(s.get("score"), int | float):
                    seen[(_s(s.get("benchmark"), "?"), _s(s.get("unit"), "percent"))] = None
        return list(seen)

    def score_bars(
        self, base: str, benchmark: str, unit: str, *, current: str = "", only: Iterable[str] | None = None
    ) -> list[Bar]:
        """Every score of ``benchmark`` under ``base``: the base alone, its entries (or ``only`` those)
        and weights never uploaded; highest first."""
        keep = set(only) if only is not None else None
        rows: list[Bar] = []

        def add(scores: Any, label: str, kind: str, eid: str = "") -> None:
            for s in _l(scores):
                if not isinstance(s, dict) or _s(s.get("benchmark")) != benchmark:
                    continue
                if _s(s.get("unit"), "percent") != unit or not isinstance(s.get("score"), int | float):
                    continue
                total = s.get("total") if isinstance(s.get("total"), int) else None
                rows.append(
                    Bar(
                        label,
                        float(s["score"]),
                        unit,
                        _s(s.get("date")),
                        kind,
                        eid,
                        total,
                        bool(eid and eid == current),
                    )
                )

        add(_d(self.base(base)).get("scores"), "base alone", "base")
        for e in self.entries:
            eid = _s(e.get("id"))
            if _s(e.get("base")) == base and (keep is None or eid in keep or eid == current):
                add(e.get("scores"), eid, "entry", eid)
        if keep is None:
            for u in self.unpublished:
                if _s(u.get("base")) == base:
                    add(u.get("scores"), _s(u.get("id")), "unpublished", _s(u.get("id")))
        rows.sort(key=lambda b: -b.score)
        return rows

    def compare(self, a: dict[str, Any], b: dict[str, Any]) -> Comparison:
        """Entries ``a`` and ``b`` side by side."""
        cmp = Comparison(a, b)
        sa, sb = self.miss_summary(a), self.miss_summary(b)
        rows = [
            ("id", _s(a.get("id")), _s(b.get("id"))),
            ("base", _s(a.get("base")), _s(b.get("base"))),
            (
                "method",
                METHOD_LABEL.get(_s(a.get("method")), _s(a.get("method"))),
                METHOD_LABEL.get(_s(b.get("method")), _s(b.get("method"))),
            ),
            ("data", _data_text(a, full=False), _data_text(b, full=False)),
            ("group", _s(a.get("group"), "—"), _s(b.get("group"), "—")),
            ("size", short_size(_d(a.get("file")).get("size")), short_size(_d(b.get("file")).get("size"))),
            ("profile", _s(a.get("profile"), "—"), _s(b.get("profile"), "—")),
            ("sampling", _s(a.get("sampling"), "—"), _s(b.get("sampling"), "—")),
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
        data = _d(e.get("data"))
        return {
            "id": e.get("id"),
            "base": e.get("base"),
            "base_status": self.base_status(_s(e.get("base"))),
            "method": e.get("method"),
            "data_version": data.get("version"),
            "data_rows": data.get("rows"),
            "group": e.get("group"),
            "path": e.get("path"),
            "size": _d(e.get("file")).get("size"),
            "sha256": _d(e.get("file")).get("sha256"),
            "recommended": e.get("recommended") is True,
            "profile": e.get("profile"),
            "sampling": e.get("sampling"),
            "adapter_id": (e.get("adapter_id") or e.get("id")) if e.get("method") == "miss" else None,
            "content_version": _d(e.get("miss")).get("content_version"),
            "description": e.get("description"),
        }

    def describe(self, e: dict[str, Any]) -> dict[str, Any]:
        """Everything ``show --format json`` prints about an entry."""
        info, effective = self.effective_train(e)
        summary = self.miss_summary(e)
        usage = self.usage(e)
        base = self.base(_s(e.get("base")))
        charts = []
        for bench, unit in self.benchmarks(_s(e.get("base")), [_s(e.get("id"))]):
            bars = self.score_bars(_s(e.get("base")), bench, unit, current=_s(e.get("id")))
            charts.append({"benchmark": bench, "unit": unit, "bars": [b.to_json() for b in bars]})
        return {
            "kind": "entry",
            "entry": e,
            "base": {
                "name": e.get("base"),
                "status": self.base_status(_s(e.get("base"))),
                "sha256": _d(base).get("sha256"),
            },
            "train": {"path": info.rel, "error": info.error, "effective": effective},
            "miss": summary.to_json() if summary else None,
            "fingerprint_matches": fingerprint_matches(summary, base),
            "usage": {"command": usage.command, "then": usage.then},
            "charts": charts,
        }

    def describe_base(self, b: dict[str, Any]) -> dict[str, Any]:
        """Everything ``show --format json`` prints about a base."""
        name = _s(b.get("name"))
        charts = [
            {"benchmark": bench, "unit": unit, "bars": [x.to_json() for x in self.score_bars(name, bench, unit)]}
            for bench, unit in self.benchmarks(name)
        ]
        entries = [_s(e.get("id")) for e in self.entries if _s(e.get("base")) == name]
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
    base = _s(e.get("base"))
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
    for s in _l(e.get("scores")):
        if not isinstance(s, dict) or not isinstance(s.get("score"), int | float):
            continue
        key = (_s(s.get("benchmark"), "?"), _s(s.get("unit"), "percent"))
        if key not in out or _s(s.get("date")) >= _s(out[key].get("date")):
            out[key] = s
    return out


def _data_text(e: dict[str, Any], *, full: bool = True) -> str:
    data = _d(e.get("data"))
    parts = [_s(data.get("version"), "?")]
    if data.get("rows") is not None:
        parts.append(f"{data['rows']} rows")
    sha = data.get("sha256")
    if isinstance(sha, str):
        parts.append(f"sha256 {sha if full else sha[:8] + '…'}")
    return " · ".join(parts)


# --- rich renderables (shared by `show` and the TUI) --------------------------------------------------------


class BarChart:
    """A horizontal bar chart of one benchmark, drawn with block characters (readable without colour).

    Bars scale to 100 for percentages, else to the largest total (or score). ``▶`` marks the
    current entry; the base alone and weights never uploaded are labelled as such.
    """

    def __init__(self, title: str, bars: Sequence[Bar], *, max_label: int = 22) -> None:
        self.title = title
        self.bars = list(bars)
        self.max_label = max_label

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        from rich.measure import Measurement

        return Measurement(min(24, options.max_width), options.max_width)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        from rich.text import Text

        yield Text(self.title, style="bold")
        if not self.bars:
            yield Text("  (no scores)", style="dim")
            return
        width = options.max_width
        labels = [_bar_label(b) for b in self.bars]
        lw = min(max(len(x) for x in labels), self.max_label)
        values = [score_text({"score": b.score, "unit": b.unit, "total": b.total}) for b in self.bars]
        vw = max(len(v) for v in values)
        dates = {b.date for b in self.bars}
        show_dates = len(dates) > 1
        years = {d[:5] for d in dates}
        same_year = len(years) == 1 and all(re.match(r"^\d{4}-\d\d-\d\d$", d) for d in dates)
        shown = {b.date: (b.date[5:] if same_year else b.date) for b in self.bars}
        dw = max(len(d) for d in shown.values()) + 1 if show_dates else 0
        bar_w = max(4, width - (2 + lw + 1 + 1 + vw + dw))
        if self.bars[0].unit == "percent":
            scale = 100.0
        else:
            scale = float(max([b.total or 0 for b in self.bars] + [b.score for b in self.bars]) or 1)
        for bar, label, value in zip(self.bars, labels, values, strict=True):
            style = (
                "bold"
                if bar.current
                else "dim"
                if bar.kind == "base"
                else "italic"
                if bar.kind == "unpublished"
                else ""
            )
            cells = max(0.0, min(1.0, bar.score / scale)) * bar_w
            full = int(cells)
            part = _FRACTIONS[int((cells - full) * 8)] if full < bar_w else ""
            drawn = ("█" * full + part.strip()).ljust(bar_w)
            text = Text(CURRENT_MARK + " " if bar.current else "  ", style="bold")
            text.append(_fit(label, lw).ljust(lw), style=style)
            text.append(" ")
            text.append(drawn, style="bold yellow" if bar.current else "blue" if bar.kind == "entry" else "dim")
            text.append(" " + value.rjust(vw), style=style)
            if show_dates:
                text.append(" " + shown[bar.date], style="dim")
            yield text
        if not show_dates and dates:
            yield Text(f"  all on {next(iter(dates))}", style="dim")
        elif same_year:
            yield Text(f"  year {next(iter(years))[:4]}; different days compare loosely", style="dim")
        if any(b.kind == "unpublished" for b in self.bars):
            yield Text("  † never uploaded", style="dim")


def _bar_label(b: Bar) -> str:
    return f"{b.label}†" if b.kind == "unpublished" else b.label


def _fit(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(0, width - 1)] + "…"


def _kv_table() -> Any:
    from rich.table import Table

    t = Table.grid(padding=(0, 1))
    t.add_column(style="bold", no_wrap=True)
    t.add_column(overflow="fold")
    return t


def _mark(ok: bool | None, yes: str, no: str, unknown: str = "not checked") -> Text:
    from rich.text import Text

    if ok is None:
        return Text(f"? {unknown}", style="dim")
    return Text(f"✓ {yes}", style="green") if ok else Text(f"✗ {no}", style="bold red")


def render_entry_info(cat: Catalog, e: dict[str, Any], *, usage: bool = True) -> RenderableType:
    """Id, file, size, sha256, data, profiles, description, known issues and (``usage``) the usage command."""
    from rich.console import Group
    from rich.text import Text

    t = _kv_table()
    method = _s(e.get("method"))
    title = Text(_s(e.get("id")), style="bold")
    title.append(f"  {METHOD_LABEL.get(method, method)}")
    if e.get("recommended") is True:
        title.append(f"  {RECOMMENDED_MARK} recommended", style="bold yellow")
    base = _s(e.get("base"))
    base_text = Text(base)
    if cat.base_status(base) == "frozen":
        base_text.append(f" {FROZEN_TAG}", style="cyan")
    elif cat.base_status(base) == "unknown":
        base_text.append(" (not in index.json)", style="bold red")
    t.add_row("file", _s(e.get("path")))
    t.add_row("size", human_size(_d(e.get("file")).get("size")))
    t.add_row("sha256", _s(_d(e.get("file")).get("sha256"), "—"))
    t.add_row("base", base_text)
    t.add_row("data", _data_text(e))
    if e.get("group"):
        t.add_row("group", _s(e.get("group")))
    t.add_row("profile", _s(e.get("profile"), "—"))
    t.add_row("sampling", _s(e.get("sampling"), "—"))
    if e.get("method") == "miss":
        t.add_row("adapter id", _s(e.get("adapter_id")) or _s(e.get("id")))
    if e.get("step") is not None:
        total = e.get("total_steps")
        t.add_row("step", f"{e['step']} of {total}" if total is not None else _s(e["step"]))
    if e.get("description"):
        t.add_row("note", _s(e.get("description")))
    for i, issue in enumerate(_l(e.get("known_issues"))):
        t.add_row("known issue" if i == 0 else "", Text(_s(issue), style="yellow"))
    if not usage:
        return Group(title, t)
    return Group(title, t, Text(""), *render_usage(cat, e))


def render_usage(cat: Catalog, e: dict[str, Any]) -> list[Text]:
    """The usage heading, the rwkv-cli command and the profile/sampling reminder."""
    from rich.text import Text

    u = cat.usage(e)
    return [
        Text("usage (from the registry root)", style="bold"),
        Text(u.command, style="green"),
        Text(u.then, style="dim"),
    ]


def render_train(info: TrainInfo, e: dict[str, Any] | None = None) -> RenderableType:
    """train.json: trainer and version, data, hyper-parameters, per-run learning rates, command, times."""
    from rich.console import Group
    from rich.text import Text

    head = Text(info.rel, style="bold")
    if info.data is None:
        return Group(head, Text(f"✗ {info.error}", style="bold red"))
    t = info.data
    table = _kv_table()
    trainer = _d(t.get("trainer"))
    tr = Text(f"{_s(trainer.get('name'), '?')} {_s(trainer.get('version'), '?')}")
    if "commit" in trainer:
        commit = trainer.get("commit")
        tr.append(f" (commit {commit})" if commit else " (build commit not recorded)", style="dim")
    table.add_row("trainer", tr)
    table.add_row("method", METHOD_LABEL.get(_s(t.get("method")), _s(t.get("method"), "?")))
    data = _d(t.get("data"))
    parts = [_s(data.get("version"), "?")]
    if data.get("rows") is not None:
        parts.append(f"{data['rows']} rows")
    parts.append(f"sha256 {_s(data.get('sha256'), '—')}")
    table.add_row("data", " · ".join(parts))
    for i, (k, v) in enumerate(_d(t.get("hyperparameters")).items()):
        value = ", ".join(num(x) for x in v) if isinstance(v, list) else num(v)
        table.add_row("hyper-params" if i == 0 else "", Text.assemble((f"{k} ", "dim"), value))
    table.add_row("started", f"{_s(t.get('started'), '—')}")
    took = _duration(t.get("started"), t.get("finished"))
    table.add_row("finished", f"{_s(t.get('finished'), '—')}" + (f"  ({took})" if took else ""))
    items: list[Any] = [head, table]
    runs = [r for r in _l(t.get("runs")) if isinstance(r, dict)]
    if runs:
        items += [Text(""), Text(f"runs ({len(runs)})", style="bold")]
        group = e.get("group") if e else None
        for r in runs:
            mine = group is not None and r.get("group") == group
            line = Text(CURRENT_MARK + " " if mine else "  ", style="bold")
            line.append(_s(r.get("group"), "?"), style="bold" if mine else "")
            line.append(f"  lr {num(r.get('lr'))}")
            if r.get("lr_final") is not None:
                line.append(f" → {num(r.get('lr_final'))}")
            if r.get("epochs") is not None:
                line.append(f"  {num(r.get('epochs'))} epochs")
            if r.get("steps") is not None:
                line.append(f"  {num(r.get('steps'))} steps")
            items.append(line)
            took = _duration(r.get("started"), r.get("finished"))
            items.append(
                Text(
                    f"    {_s(r.get('started'), '?')} → {_s(r.get('finished'), '?')}" + (f" ({took})" if took else ""),
                    style="dim",
                )
            )
    items += [Text(""), Text("command", style="bold"), Text(_s(t.get("command"), "—"), style="green")]
    if t.get("notes"):
        items += [Text(""), Text(_s(t.get("notes")), style="italic")]
    return Group(*items)


def render_miss(cat: Catalog, e: dict[str, Any], summary: MissSummary | None) -> RenderableType:
    """Rank, alpha, scale, targets, content_version and the base fingerprint with its match mark."""
    from rich.console import Group
    from rich.text import Text

    if summary is None:
        return Text("A State entry has no MiSS manifest.", style="dim")
    head = Text("archive/miss.json", style="bold")
    head.append(f"  (from the {summary.source})", style="dim")
    if summary.error:
        return Group(head, Text(f"✗ {summary.error}", style="bold red"))
    t = _kv_table()
    t.add_row("rank", num(summary.rank))
    t.add_row("alpha", num(summary.alpha))
    t.add_row("scale", num(summary.scale))
    t.add_row("dtype", _s(summary.dtype, "—"))
    per = f" ({summary.targets // summary.layers} per layer × {summary.layers} layers)" if summary.layers else ""
    t.add_row("targets", f"{summary.targets}{per}")
    if summary.target_kinds:
        t.add_row("", Text(", ".join(summary.target_kinds), style="dim"))
    recorded = _d(e.get("miss")).get("content_version")
    t.add_row("content_version", _s(summary.content_version, "—"))
    t.add_row(
        "",
        _mark(
            recorded == summary.content_version,
            "index.json records the same",
            f"index.json records {_s(recorded, 'nothing')}",
        ),
    )
    if summary.source == "validation cache":
        t.add_row(
            "",
            _mark(
                summary.recomputed == summary.content_version if summary.recomputed else None,
                "recomputed from the bytes: same",
                f"recomputed from the bytes: {summary.recomputed}",
                "could not be recomputed",
            ),
        )
    else:
        t.add_row("", Text("? recomputed on the next validation", style="dim"))
    base = cat.base(_s(e.get("base")))
    t.add_row("base fingerprint", _s(summary.base_fingerprint, "—"))
    t.add_row(
        "",
        _mark(
            fingerprint_matches(summary, base),
            f"matches base {_s(e.get('base'))}",
            f"does not match base {_s(e.get('base'))} ({_s(_d(base).get('sha256'), 'unknown')})",
            "base not in index.json",
        ),
    )
    return Group(head, t)


def render_scores(
    cat: Catalog,
    base: str,
    *,
    entry: dict[str, Any] | None = None,
    only: Iterable[str] | None = None,
    table: bool = True,
) -> RenderableType:
    """An entry's (or, with ``table``, the base alone's) scores as a table, then one bar chart per
    benchmark across the base's weights (``only`` those entries, plus the base alone)."""
    from rich.console import Group
    from rich.text import Text

    only = list(only) if only is not None else None
    items: list[Any] = []
    if entry is not None or table:
        own = _l(entry.get("scores")) if entry is not None else _l(_d(cat.base(base)).get("scores"))
        label = "scores" if entry is not None else f"scores of {base} alone"
        items += [Text(label, style="bold"), _scores_table(own)] if own else [Text(f"{label}: none", style="dim")]
    current = _s(entry.get("id")) if entry is not None else ""
    ids = [current] if entry is not None else only
    for bench, unit in cat.benchmarks(base, ids):
        title = f"{bench} · {'percent' if unit == 'percent' else 'points'}"
        items += [Text(""), BarChart(title, cat.score_bars(base, bench, unit, current=current, only=only))]
    if not items:
        items.append(Text("no scores", style="dim"))
    return Group(*items)


def _scores_table(scores: list[Any]) -> Any:
    from rich.table import Table

    table = Table(box=None, padding=(0, 1), show_edge=False, header_style="bold")
    table.add_column("benchmark", no_wrap=True)
    table.add_column("date", no_wrap=True)
    table.add_column("score", justify="right", no_wrap=True)
    table.add_column("detail", overflow="fold")
    for s in scores:
        if not isinstance(s, dict):
            continue
        detail = []
        if s.get("solved") is not None and s.get("total") is not None and s.get("unit") == "percent":
            detail.append(f"{num(s['solved'])}/{s['total']}")
        if s.get("runs") is not None:
            detail.append(f"{s['runs']} runs")
        cmp_ = _d(s.get("comparison"))
        if cmp_:
            wins, losses, p = cmp_.get("wins"), cmp_.get("losses"), num(cmp_.get("p_value"))
            detail.append(f"vs {_s(cmp_.get('against'))} +{wins}/−{losses} p={p}")
        if s.get("note"):
            detail.append(_s(s.get("note")))
        table.add_row(_s(s.get("benchmark")), _s(s.get("date")), score_text(s), "; ".join(detail))
    return table


def render_smoke(e: dict[str, Any]) -> RenderableType:
    """Smoke records: verdict, entry vs base, wins/losses and where it ran."""
    from rich.console import Group
    from rich.text import Text

    records = [r for r in _l(e.get("smoke")) if isinstance(r, dict)]
    if not records:
        return Text("smoke: no records (rwkv-registry smoke PATH ID --base-file BASE --record)", style="dim")
    items: list[Any] = [Text(f"smoke records ({len(records)})", style="bold")]
    for r in records:
        verdict = _s(r.get("verdict"), "?")
        es, bs = _d(r.get("entry_score")), _d(r.get("base_score"))
        line = Text("✓ PASS " if verdict == "pass" else "✗ FAIL ", style="green" if verdict == "pass" else "bold red")
        line.append(
            f"{_s(r.get('date'))}  entry {es.get('solved')}/{es.get('total')} vs base {bs.get('solved')}/"
            f"{bs.get('total')}  +{r.get('wins')}/−{r.get('losses')} p={num(r.get('p_value'))}"
        )
        items.append(line)
        items.append(
            Text(
                f"    {_s(r.get('device'))}, torch {_s(r.get('torch'))}, {r.get('cases')} cases, profile "
                f"{_s(r.get('profile'))}",
                style="dim",
            )
        )
        for cat_name, tally in _d(es.get("by_category")).items():
            btally = _d(_d(bs.get("by_category")).get(cat_name))
            items.append(
                Text(
                    f"    {cat_name}: {_d(tally).get('solved')}/{_d(tally).get('total')} "
                    f"(base {btally.get('solved', '?')}/{btally.get('total', '?')})",
                    style="dim",
                )
            )
    return Group(*items)


def render_findings(
    findings: Sequence[Finding], *, checked: bool = True, title: str = "validation", within: str = ""
) -> RenderableType:
    """Findings with severity words, code, path, message and fix; paths under ``within/`` are shown
    relative to it (``…/state/v1/train.json``)."""
    from rich.console import Group
    from rich.text import Text

    if not checked:
        return Group(Text(title, style="bold"), Text("· not validated yet (press v)", style="dim"))
    if not findings:
        return Group(Text(title, style="bold"), Text("✓ no findings", style="green"))
    order = {"error": 0, "warning": 1, "info": 2}
    items: list[Any] = [Text(f"{title} ({len(findings)} finding{'s' if len(findings) != 1 else ''})", style="bold")]
    for f in sorted(findings, key=lambda f: (order.get(str(f.severity), 3), f.path, f.code)):
        sev = str(f.severity)
        line = Text(f"{SEVERITY_MARK.get(sev, '?')} {sev:<7} ", style=SEVERITY_STYLE.get(sev, ""))
        line.append(f"{f.code} ", style="bold")
        shown = f.path
        if within and shown.startswith(within + "/"):
            shown = "…/" + shown[len(within) + 1 :]
        line.append(shown)
        items += [line, Text(f"    {f.message}"), Text(f"    fix: {f.hint}", style="dim")]
    return Group(*items)


def render_base_info(cat: Catalog, b: dict[str, Any]) -> RenderableType:
    """A base: status, source, sha256, size, vocabulary, architecture, notes, its entries."""
    from rich.console import Group
    from rich.text import Text

    name = _s(b.get("name"))
    status = _s(b.get("status"), "?")
    title = Text(name, style="bold")
    title.append(f"  {FROZEN_TAG}" if status == "frozen" else f"  {status}", style="cyan" if status == "frozen" else "")
    t = _kv_table()
    t.add_row("family", _s(b.get("family"), "—"))
    src = _d(b.get("source"))
    rev = f"@{src['revision']}" if src.get("revision") else ""
    t.add_row("source", f"{_s(src.get('repo'), '?')}: {_s(src.get('file'), '?')}{rev}")
    t.add_row("sha256", _s(b.get("sha256"), "—"))
    t.add_row("size", human_size(b.get("size")) if b.get("size") is not None else "not recorded")
    t.add_row("vocab", _s(b.get("vocab"), "—"))
    a = _d(b.get("architecture"))
    lora = _d(a.get("lora"))
    t.add_row(
        "architecture",
        f"{a.get('n_layer')} layers × {a.get('n_embd')}, {a.get('n_head')} heads of {a.get('head_size')}, "
        f"vocab {a.get('vocab_size')}, ffn {a.get('ffn_size')}, {_s(a.get('dtype'), '?')}",
    )
    if lora:
        t.add_row(
            "",
            Text(
                f"lora decay {lora.get('decay')} · aaa {lora.get('aaa')} · mv {lora.get('mv')} · gate "
                f"{lora.get('gate')}",
                style="dim",
            ),
        )
    t.add_row("added", _s(b.get("added"), "—"))
    mine = [e for e in cat.entries if _s(e.get("base")) == name]
    counts = ", ".join(f"{sum(1 for e in mine if e.get('method') == m)} {METHOD_LABEL[m]}" for m in METHODS)
    t.add_row("entries", f"{len(mine)} ({counts})")
    if b.get("notes"):
        t.add_row("notes", _s(b.get("notes")))
    for i, issue in enumerate(_l(b.get("known_issues"))):
        t.add_row("known issue" if i == 0 else "", Text(_s(issue), style="yellow"))
    items: list[Any] = [title, t]
    if status == "frozen":
        items += [
            Text(""),
            Text("Frozen: superseded by a newer base of its family; this directory is never touched.", style="cyan"),
        ]
    return Group(*items)


def render_group_info(cat: Catalog, ref: NodeRef) -> RenderableType:
    """A method or data-version node: what is under it."""
    from rich.console import Group
    from rich.text import Text

    entries = cat.entries_under(ref)
    title = Text(ref.prefix + "/", style="bold")
    items: list[Any] = [title]
    if ref.kind == "version" and entries:
        items.append(Text(f"data {_data_text(entries[0])}"))
        items.append(Text(f"train.json {Catalog.train_rel(entries[0])}", style="dim"))
    items.append(Text(""))
    for e in entries:
        line = Text(f"{RECOMMENDED_MARK if e.get('recommended') is True else ' '} ", style="bold yellow")
        line.append(_s(e.get("id")), style="bold")
        if ref.kind == "method":
            line.append(f"  {_s(_d(e.get('data')).get('version'))}")
        line.append(f"  {short_size(_d(e.get('file')).get('size'))}", style="dim")
        if e.get("description"):
            line.append(f"  {_s(e.get('description'))}")
        items.append(line)
    if not entries:
        items.append(Text("(no entries)", style="dim"))
    return Group(*items)


def render_registry_info(cat: Catalog) -> RenderableType:
    """The registry: name, title, what it is for, counts, known issues and links (or index.json's problem)."""
    from rich.console import Group
    from rich.text import Text

    title = Text(cat.name, style="bold")
    if cat.error:
        return Group(
            title, Text(""), Text(f"✗ {cat.error}", style="bold red"), Text(f"fix: {cat.error_hint}", style="dim")
        )
    reg = _d(cat.index.get("registry"))
    t = _kv_table()
    if reg.get("title"):
        t.add_row("title", _s(reg.get("title")))
    if reg.get("description"):
        t.add_row("about", _s(reg.get("description")))
    t.add_row("training data", _s(reg.get("training_data"), "—"))
    t.add_row("server", _s(reg.get("server"), "—"))
    t.add_row("license", _s(reg.get("license"), "none chosen yet"))
    frozen = sum(1 for b in cat.bases if b.get("status") == "frozen")
    t.add_row("bases", f"{len(cat.bases)}" + (f" ({frozen} frozen)" if frozen else ""))
    by_method = ", ".join(f"{sum(1 for e in cat.entries if e.get('method') == m)} {METHOD_LABEL[m]}" for m in METHODS)
    t.add_row("entries", f"{len(cat.entries)} ({by_method})")
    if cat.unpublished:
        t.add_row("not uploaded", ", ".join(_s(u.get("id")) for u in cat.unpublished))
    for i, issue in enumerate(_l(cat.index.get("known_issues"))):
        t.add_row("known issue" if i == 0 else "", Text(_s(issue), style="yellow"))
    for i, link in enumerate(x for x in _l(cat.index.get("links")) if isinstance(x, dict)):
        t.add_row("links" if i == 0 else "", f"{_s(link.get('title'))}: {_s(link.get('url'))}")
    items: list[Any] = [title, t]
    if not cat.bases:
        items += [Text(""), Text("No base yet: add one with `rwkv-registry add-base PATH BASE.pth`.", style="dim")]
    return Group(*items)


def render_comparison(cmp: Comparison, *, context: int = 3) -> Iterator[RenderableType]:
    """Fields, score deltas and the side-by-side train.json diff (``=`` same, ``~`` changed, ``-``/``+``
    one side only); unchanged lines farther than ``context`` from a change fold into ``⋮``."""
    from rich.table import Table
    from rich.text import Text

    a_id, b_id = _s(cmp.a.get("id")), _s(cmp.b.get("id"))
    fields = Table(box=None, padding=(0, 1), header_style="bold", expand=True)
    fields.add_column("", width=1, no_wrap=True)
    fields.add_column("field", no_wrap=True)
    fields.add_column(f"A: {a_id}", overflow="fold", ratio=1)
    fields.add_column(f"B: {b_id}", overflow="fold", ratio=1)
    for label, va, vb in cmp.fields:
        same = va == vb
        fields.add_row("=" if same else "≠", label, va, vb, style="dim" if same else "bold")
    yield fields
    yield Text("")
    scores = Table(
        box=None,
        padding=(0, 1),
        header_style="bold",
        title="scores (latest per benchmark)",
        title_justify="left",
        title_style="bold",
    )
    scores.add_column("benchmark", no_wrap=True)
    scores.add_column("A", justify="right", no_wrap=True)
    scores.add_column("B", justify="right", no_wrap=True)
    scores.add_column("B − A", justify="right", no_wrap=True)
    scores.add_column("note", overflow="fold")
    for d in cmp.scores:
        delta = d.delta
        dtext = (
            Text("—")
            if delta is None
            else Text(f"{delta:+g}", style="green" if delta > 0 else "red" if delta < 0 else "")
        )
        note = (
            ""
            if d.a is None or d.b is None
            else "same day"
            if d.same_day
            else (f"different days ({_s(d.a.get('date'))} / {_s(d.b.get('date'))}): compare loosely")
        )
        scores.add_row(d.benchmark, score_text(d.a) if d.a else "—", score_text(d.b) if d.b else "—", dtext, note)
    if not cmp.scores:
        scores.add_row("(none)", "", "", "", "")
    yield scores
    yield Text("")
    diff = Table(
        box=None,
        padding=(0, 1),
        header_style="bold",
        expand=True,
        title=f"train.json: {cmp.train_changes} line(s) differ",
        title_justify="left",
        title_style="bold",
    )
    diff.add_column("", width=1, no_wrap=True)
    diff.add_column(f"A: {cmp.train_labels[0]}", overflow="fold", ratio=1)
    diff.add_column(f"B: {cmp.train_labels[1]}", overflow="fold", ratio=1)
    styles = {"=": "dim", "~": "bold yellow", "-": "bold red", "+": "bold green"}
    for row in fold_same(cmp.train_rows, context):
        if row is None:
            diff.add_row("", Text("⋮", style="dim"), Text("⋮", style="dim"))
        else:
            op, left, right = row
            diff.add_row(op if op != "=" else " ", left, right, style=styles[op])
    yield diff


def fold_same(rows: Sequence[tuple[str, str, str]], context: int) -> list[tuple[str, str, str] | None]:
    """Keep ``context`` unchanged rows around each change; a None row stands for the folded ones.
    A negative ``context`` keeps everything."""
    if context < 0:
        return list(rows)
    changed = [i for i, r in enumerate(rows) if r[0] != "="]
    keep = {j for i in changed for j in range(i - context, i + context + 1)}
    out: list[tuple[str, str, str] | None] = []
    for i, r in enumerate(rows):
        if i in keep or r[0] != "=":
            out.append(r)
        elif out and out[-1] is None:
            continue
        else:
            out.append(None)
    return out


# --- the commands --------------------------------------------------------------------------------------------


def _console() -> Console:
    from rich.console import Console

    return Console(highlight=False, soft_wrap=False)


def cmd_list(args: argparse.Namespace) -> int:
    """``rwkv-registry list [PATH] [--format text|json]``: one row per entry, grouped by base."""
    cat = Catalog(args.path)
    cat.require_index()
    if args.format == "json":
        out = {
            "registry": cat.name,
            "bases": [{"name": b.get("name"), "status": b.get("status")} for b in cat.bases],
            "entries": [cat.entry_summary(e) for e in cat.entries],
        }
        sys.stdout.write(json.dumps(out, indent=2, ensure_ascii=False) + "\n")
        return 0
    from rich import box
    from rich.table import Table
    from rich.text import Text

    console = _console()
    console.print(Text(f"{cat.name}: {len(cat.entries)} entries, {len(cat.bases)} base(s)", style="bold"))
    for base, methods in cat.grouped().items():
        status = cat.base_status(base)
        table = Table(
            title=f"{base}" + (f" {FROZEN_TAG}" if status == "frozen" else ""),
            title_justify="left",
            title_style="bold",
            header_style="bold",
            padding=(0, 1),
            box=box.SIMPLE_HEAD,
        )
        table.add_column("id", no_wrap=True)
        table.add_column("method", no_wrap=True)
        table.add_column("data", no_wrap=True)
        table.add_column("size", justify="right", no_wrap=True)
        table.add_column(RECOMMENDED_MARK, no_wrap=True)
        table.add_column("profile", no_wrap=True)
        table.add_column("description", overflow="fold", ratio=1)
        for method, versions in methods.items():
            for version, entries in versions.items():
                for e in entries:
                    table.add_row(
                        _s(e.get("id")),
                        METHOD_LABEL.get(method, method),
                        version,
                        short_size(_d(e.get("file")).get("size")),
                        RECOMMENDED_MARK if e.get("recommended") is True else "",
                        _s(e.get("profile"), "—"),
                        _s(e.get("description")),
                    )
        if not methods:
            table.add_row("(no entries)", "", "", "", "", "", "")
        console.print(table)
    if not cat.bases and not cat.entries:
        console.print("no bases yet: `rwkv-registry add-base PATH BASE.pth`", style="dim")
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    """``rwkv-registry show ENTRY_ID [--path PATH] [--format text|json]``: one entry (or base) in detail."""
    cat = Catalog(args.path)
    cat.require_index()
    what = args.entry_id
    e = cat.get_entry(what) or cat.entry_at(what)
    b = None if e is not None else cat.base(what)
    if e is None and b is None:
        raise cat._unknown(what)
    if args.format == "json":
        data = cat.describe(e) if e is not None else cat.describe_base(b or {})
        sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
        return 0
    from rich.rule import Rule

    console = _console()
    if b is not None:
        console.print(render_base_info(cat, b))
        console.print(Rule("scores", align="left"))
        console.print(render_scores(cat, _s(b.get("name"))))
        return 0
    assert e is not None
    console.print(render_entry_info(cat, e, usage=False))
    console.print()
    for line in render_usage(cat, e):
        console.print(line, soft_wrap=True)  # one line each, to copy and paste
    info, _ = cat.effective_train(e)
    console.print(Rule("train.json", align="left"))
    console.print(render_train(info, e))
    if e.get("method") == "miss":
        console.print(Rule("MiSS manifest", align="left"))
        console.print(render_miss(cat, e, cat.miss_summary(e)))
    console.print(Rule("scores", align="left"))
    console.print(render_scores(cat, _s(e.get("base")), entry=e))
    console.print(Rule("smoke", align="left"))
    console.print(render_smoke(e))
    return 0
