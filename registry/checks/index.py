"""The index.json consistency rules (IDX001–IDX020): ids, bases, paths, scores and what they record against each
other, and against the files (IDX003 the method a file holds, IDX011 two entries of one file's bytes, IDX015 a
LICENSE while no licence is chosen). ``validate`` runs them all (engine/validate.py); ``add``, ``add-base`` and
``score`` run the ones their change can break, on the index.json they would write (store/ops.py,
catalog/scoring.py). Each function takes plain values (the parsed index.json, its bases by name) and returns the
findings, so a test can call it alone.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from rwkv_registry.checks import layout
from rwkv_registry.checks.train import older_than
from rwkv_registry.core.rules import E, Finding, Rule, Rulebook, W
from rwkv_registry.formats.jsonload import is_finite_number, is_integer
from rwkv_registry.index.layout import safe_rel

# Vocabulary files known offline -> the embedding rows (vocab_size) of a model using them. The RWKV world vocabulary
# has 65529 tokens (ids 1..65529, 0 ends a text), padded to 65536 rows in every G1 base (FORMATS §2, §6).
KNOWN_VOCABS = {"rwkv_vocab_v20230424.txt": 65536}
MIN_SERVER = "1.8.1"  # rwkv_lightning with State upload and /v1/adapters (seed 000)
# registry.server: the first version after the server's name ("rwkv_lightning >= v1.8.1", "rwkv-lightning 1.9.0")
_SERVER_VERSION = re.compile(
    r"rwkv[_-]lightning(?:[_-]cuda)?\b[^0-9\n]{0,40}?(?<![\w.])(v?\d+\.\d+\.\d+\S*)", re.IGNORECASE
)

# --- the rules -------------------------------------------------------------------------------------------------

RULES = Rulebook(
    Rule(
        "IDX001",
        E,
        "duplicate base name or weight id",
        "Give every base a unique name, and every entry and unpublished weight a unique id (they share one id space).",
    ),
    Rule(
        "IDX002",
        E,
        "entry or unpublished weight refers to an unknown base",
        "Add the base first (`rwkv-registry add-base`) or fix the item's `base`.",
    ),
    Rule(
        "IDX003",
        E,
        "entry method does not match the file's content",
        "A file with `blocks.N.att.time_state` tensors is a State, one with `archive/miss.json` a MiSS "
        "adapter; fix the entry's method.",
    ),
    Rule(
        "IDX004",
        W,
        "more than one recommended entry for a base and method",
        "Keep `recommended: true` on one entry per base and method.",
    ),
    Rule(
        "IDX005", E, "two entries record the same path", "Each weight file has exactly one entry; remove the duplicate."
    ),
    Rule(
        "IDX006",
        E,
        "base name differs from its file name",
        "A base directory is named after the base file without .pth, so that the server's base and the "
        "directory can be matched by eye; make `name` and `source.file` agree.",
    ),
    Rule(
        "IDX007",
        W,
        "base superseded by a newer one of its family is still active",
        'Old base directories are never touched: set the older base\'s status to "frozen" (`rwkv-registry '
        "add-base` does so unless given --keep-previous-active) and run `rwkv-registry sums`.",
    ),
    Rule(
        "IDX008",
        E,
        "score or step count inconsistent",
        "solved <= total (per category too), one run score per run, step <= total_steps, and a comparison's "
        "`against` names an entry or unpublished weight of the index.",
    ),
    Rule(
        "IDX009",
        W,
        "comparison p-value does not match its wins and losses",
        "p_value is the exact two-sided McNemar (sign) test of wins against losses; `rwkv-registry compare` "
        "computes it from result files.",
    ),
    Rule(
        "IDX010",
        E,
        "two bases with the same sha256",
        "One base file is registered under two names; keep one base (its name is the file name without .pth) "
        "and move the other's weights under it, or fix the sha256 that was copied by mistake.",
    ),
    Rule(
        "IDX011",
        W,
        "two entries hold the same bytes",
        "The same weight file is published twice under two names; remove the duplicate entry and its file "
        "unless the copy is deliberate (a State copied to another base is only valid after retraining on it).",
    ),
    Rule(
        "IDX012",
        E,
        "two MiSS entries of one base register under the same adapter id",
        "The server keeps one adapter per adapter_id (the entry's `adapter_id`, else its `id`): registering the "
        "second file replaces the first, and requests naming it get the wrong weights. Give each adapter of a base "
        "its own adapter_id.",
    ),
    Rule(
        "IDX013",
        W,
        "score does not match its solved/total, its run scores or its categories",
        "A percent score is 100 × solved / total, a points score equals solved, the headline is the mean of "
        "`run_scores`, and categories covering the whole benchmark add up to solved and total (each within the "
        "rounding of the numbers recorded); fix the number that was copied wrong.",
    ),
    Rule(
        "IDX014",
        W,
        "paired comparison against a weight scored on another day or backend",
        "A per-question comparison (+wins/−losses) is only meaningful within one run of the benchmark: the weight "
        "named in `against` must have a score on the same benchmark, date and backend (scores of other days or "
        "backends, or of another base, compare only loosely); record that score, or rerun both on the same day.",
    ),
    Rule(
        "IDX015",
        W,
        "a LICENSE file sits at the root but index.json records no licence",
        'index.json\'s registry.license is null ("no licence chosen yet") while LICENSE exists: record the licence '
        "the file grants (an SPDX id such as apache-2.0, or its name), or remove the file if none is chosen yet.",
    ),
    Rule(
        "IDX016",
        W,
        "one data version of one method records two different data files",
        "Training data does not depend on the base: retraining on a new base uses the same data version, whose "
        "sha256 and row count are then the same in every base directory (State and MiSS data are rendered apart, "
        "so only one method is compared). Fix the sha256 or rows copied wrong, or give re-rendered data a new "
        "version.",
    ),
    Rule(
        "IDX017",
        E,
        "score measured on another adapter file",
        "A score's content_version is what the inference server answered when the adapter was registered for that "
        "run; it must be the content_version of the entry's file (index.json miss.content_version, embedded in "
        "archive/miss.json). Another value means the score belongs to another file (an earlier export): move the "
        "score to that file's entry or to `unpublished`, or measure this file again. A State or a base has no "
        "content_version: leave it null.",
    ),
    Rule(
        "IDX018",
        W,
        "base vocabulary file does not fit its architecture's vocab_size",
        "A known vocabulary file fixes the embedding's row count (rwkv_vocab_v20230424.txt, the RWKV world "
        "vocabulary: 65536 rows). Record the vocabulary the base was trained with (`vocab` in its bases[] item), or "
        "check the base file: its vocab_size is read from emb.weight.",
    ),
    Rule(
        "IDX019",
        W,
        "registry.server names an rwkv_lightning older than v1.8.1",
        "Seed 000: the weights need an rwkv_lightning inference server v1.8.1 or later (State upload and "
        "/v1/adapters); a pre-release of 1.8.1 is older. Fix the version in index.json's registry.server, e.g. "
        '"rwkv_lightning >= v1.8.1 (State upload, /v1/adapters)".',
    ),
    Rule(
        "IDX020",
        W,
        "two scores of one weight on the same benchmark, date and backend",
        "One run of a benchmark is one score: merge the two into one (their mean as `score`, each run in "
        "`run_scores`, `runs` their count), or record the backend that differs; `rwkv-registry score --replace` "
        "replaces a score recorded wrong (docs/scores.md).",
    ),
)
finding = RULES.finding


# --- the records: ids, bases, paths (IDX001, IDX002, IDX005, IDX010; LAY006) -----------------------------------


@dataclass
class Records:
    """What index.json records, as the other rules read it: the bases by name, the entries by path (the first
    entry of each path), and the ids (of entries and unpublished weights) that are strings."""

    bases: dict[str, dict[str, Any]] = field(default_factory=dict)
    entries_by_path: dict[str, dict[str, Any]] = field(default_factory=dict)
    ids: set[str] = field(default_factory=set)


def records(value: dict[str, Any]) -> tuple[Records, list[Finding]]:
    """The records of the index.json ``value`` (parsed; its schema errors are SCH002's, so any field may be of
    the wrong type here), and the findings on them: a base name or an id twice (IDX001), one base file under two
    names (IDX010), a path that is not safe (LAY006) or recorded twice (IDX005), a base nobody lists (IDX002)."""
    out: list[Finding] = []
    rec = Records()
    seen_bases: set[str] = set()
    base_shas: dict[str, str] = {}
    for b in value.get("bases", []) if isinstance(value.get("bases"), list) else []:
        if not isinstance(b, dict) or not isinstance(b.get("name"), str):
            continue
        if b["name"] in seen_bases:
            out.append(finding("IDX001", "index.json", f"base {b['name']!r} is listed twice"))
        elif isinstance(b.get("sha256"), str):
            sha = b["sha256"].lower()
            if sha in base_shas:
                out.append(
                    finding(
                        "IDX010",
                        "index.json",
                        f"bases {base_shas[sha]!r} and {b['name']!r} both record sha256 {sha}: one base file "
                        "registered twice",
                    )
                )
            base_shas.setdefault(sha, b["name"])
        seen_bases.add(b["name"])
        rec.bases[b["name"]] = b
    ids: set[Any] = set()  # as recorded, strings or not (rec.ids keeps the strings)
    for e in value.get("entries", []) if isinstance(value.get("entries"), list) else []:
        if not isinstance(e, dict):
            continue
        eid, path = e.get("id"), e.get("path")
        if eid in ids:
            out.append(finding("IDX001", "index.json", f"entry id {eid!r} is used twice"))
        ids.add(eid)
        if not safe_rel(path):
            out.append(
                layout.finding("LAY006", "index.json", f"entry {eid!r}: path {path!r} is not a safe relative path")
            )
            continue
        if e.get("train") is not None and not safe_rel(e.get("train")):
            out.append(
                layout.finding(
                    "LAY006", "index.json", f"entry {eid!r}: train {e.get('train')!r} is not a safe relative path"
                )
            )
        if path in rec.entries_by_path:
            out.append(
                finding(
                    "IDX005",
                    path,
                    f"entries {rec.entries_by_path[path].get('id')!r} and {eid!r} both record this path",
                )
            )
            continue
        rec.entries_by_path[path] = e
        if "base" in e and e.get("base") not in rec.bases:  # absent: SCH002
            out.append(
                finding(
                    "IDX002",
                    "index.json",
                    f"entry {eid!r} refers to base {e.get('base')!r}, which index.json does not list",
                )
            )
    for u in value.get("unpublished", []) if isinstance(value.get("unpublished"), list) else []:
        if not isinstance(u, dict):
            continue
        uid = u.get("id")
        if uid in ids:
            out.append(
                finding("IDX001", "index.json", f"unpublished id {uid!r} is also used by an entry or listed twice")
            )
        ids.add(uid)
        if "base" in u and u.get("base") not in rec.bases:  # absent: SCH002
            out.append(
                finding(
                    "IDX002",
                    "index.json",
                    f"unpublished weight {uid!r} refers to base {u.get('base')!r}, which index.json does not list",
                )
            )
    rec.ids = {i for i in ids if isinstance(i, str)}
    return rec, out


# --- the bases (IDX006, IDX007, IDX018) ----------------------------------------------------------------------


def bases_findings(bases: Mapping[str, dict[str, Any]]) -> list[Finding]:
    """IDX006 (directory name = base file name without .pth), IDX007 (superseded but active), IDX018 (vocabulary
    file against the embedding's row count) on ``bases``, by name."""
    from rwkv_registry.index.lineage import superseded

    out: list[Finding] = []
    for name, b in bases.items():
        vocab, arch = b.get("vocab"), b.get("architecture")
        rows = arch.get("vocab_size") if isinstance(arch, dict) else None
        known = KNOWN_VOCABS.get(PurePosixPath(vocab).name) if isinstance(vocab, str) else None
        if known is not None and is_integer(rows) and rows != known:
            out.append(
                finding(
                    "IDX018",
                    "index.json",
                    f"base {name!r} records vocabulary {vocab!r} ({known} embedding rows), "
                    f"but its architecture has vocab_size {rows}",
                )
            )
        file = (b.get("source") or {}).get("file") if isinstance(b.get("source"), dict) else None
        if isinstance(file, str) and PurePosixPath(file).stem != name:
            out.append(
                finding(
                    "IDX006",
                    "index.json",
                    f"base {name!r} comes from file {file!r}: its directory must be {PurePosixPath(file).stem!r}",
                )
            )
    for name, newer in sorted(superseded(bases.values()).items()):
        if bases[name].get("status") == "active":
            out.append(
                finding(
                    "IDX007",
                    "index.json",
                    f"base {name!r} is superseded by {newer!r} (same family, newer) but its status is active",
                )
            )
    return out


# --- entries and unpublished weights (IDX004, IDX012, IDX016) --------------------------------------------------


def adapter_slot(e: Any) -> tuple[Any, str] | None:
    """(base, adapter id) a MiSS entry registers under on the inference server (``adapter_id``, else its ``id``):
    two entries with one slot are IDX012. None for a State entry, or an adapter id that is not a string."""
    if not isinstance(e, dict) or e.get("method") != "miss":
        return None
    aid = e.get("adapter_id", e.get("id"))
    return (e.get("base"), aid) if isinstance(aid, str) else None


def adapter_id_findings(index: dict[str, Any]) -> list[Finding]:
    """IDX012: two MiSS entries of one base register under the same adapter id (:func:`adapter_slot`)."""
    out: list[Finding] = []
    seen: dict[tuple[Any, str], Any] = {}
    for e in index["entries"] if isinstance(index.get("entries"), list) else []:
        key = adapter_slot(e)
        if key is None:
            continue  # not a MiSS entry, or SCH002
        aid = key[1]
        if key in seen and seen[key] == e.get("id"):
            continue  # one id used twice: IDX001 says so
        if key in seen:
            out.append(
                finding(
                    "IDX012",
                    "index.json",
                    f"entries {seen[key]!r} and {e.get('id')!r} of base {e.get('base')!r} both register as "
                    f"adapter {aid!r}",
                )
            )
        else:
            seen[key] = e.get("id")
    return out


def data_version_findings(items: list[dict[str, Any]]) -> list[Finding]:
    """IDX016 on ``items`` (entries, then unpublished weights, in index.json order): the first item recording another
    sha256 or row count for a (method, data version) than the first one of it. The slots do not meet, so ``add`` may
    pass only the items of its entry's method and data version."""
    out: list[Finding] = []
    first: dict[tuple[Any, Any, str], tuple[Any, Any]] = {}  # (method, version, key) -> (value, id)
    told: set[tuple[Any, Any, str]] = set()
    for x in items:
        data = x.get("data")
        if not isinstance(data, dict) or not isinstance(data.get("version"), str):
            continue  # SCH002
        for key in ("sha256", "rows"):
            value = data.get(key)
            if value is None:
                continue  # not recorded (an unpublished weight's): nothing to compare
            slot = (x.get("method"), data["version"], key)
            if slot not in first:
                first[slot] = (value, x.get("id"))
            elif first[slot][0] != value and slot not in told:
                told.add(slot)
                out.append(
                    finding(
                        "IDX016",
                        "index.json",
                        f"{x.get('method')} data {data['version']}: {first[slot][1]!r} records {key} "
                        f"{first[slot][0]!r}, {x.get('id')!r} records {value!r}",
                    )
                )
    return out


def index_items(index: dict[str, Any]) -> list[dict[str, Any]]:
    """The entries, then the unpublished weights, of ``index``, in order (those that are objects)."""
    return [x for key in ("entries", "unpublished") for x in (index.get(key) or []) if isinstance(x, dict)]


def recommended_findings(entries: Iterable[dict[str, Any]]) -> list[Finding]:
    """IDX004: more than one recommended entry for one base and method."""
    recommended: Counter[tuple[str, str]] = Counter()
    for e in entries:
        if e.get("recommended") is True:
            recommended[(str(e.get("base")), str(e.get("method")))] += 1
    return [
        finding("IDX004", "index.json", f"{n} entries of base {base} and method {method} are recommended")
        for (base, method), n in recommended.items()
        if n > 1
    ]


# --- the files (IDX003, IDX011) and the registry (IDX015, IDX019) ------------------------------------------------


def method_finding(path: str, method: Any, held: str | None) -> Finding | None:
    """IDX003: index.json says ``method`` for the file at ``path``, which holds a ``held`` (``"state"``,
    ``"miss"``, None for neither)."""
    if held == method:
        return None
    what = "a " + held if held else "neither a State nor a MiSS adapter"
    return finding("IDX003", path, f"index.json says {method}, the file holds {what}")


def same_bytes_finding(
    path: str, entry: dict[str, Any], sha256: str, other: str, other_entry: dict[str, Any]
) -> Finding:
    """IDX011: the file of ``entry`` at ``path`` holds the bytes (``sha256``) of ``other_entry``'s at ``other``, which
    comes first in index.json."""
    return finding(
        "IDX011",
        path,
        f"entry {entry.get('id')!r} holds the same bytes (sha256 {sha256[:12]}…) as entry {other_entry.get('id')!r} "
        f"at {other}",
    )


def same_bytes_findings(entries_by_path: Mapping[str, dict[str, Any]], sha256_of: Mapping[str, str]) -> list[Finding]:
    """IDX011 on every entry (index.json order: the later entry is the copy) whose file's sha256 ``sha256_of`` holds
    (an LFS pointer's is not the file's: leave it out)."""
    out: list[Finding] = []
    first: dict[str, str] = {}
    for path in entries_by_path:
        sha = sha256_of.get(path)
        if sha is None:
            continue
        if sha in first:
            other = first[sha]
            out.append(same_bytes_finding(path, entries_by_path[path], sha, other, entries_by_path[other]))
        else:
            first[sha] = path
    return out


def license_findings(index: dict[str, Any] | None, files: Iterable[str]) -> list[Finding]:
    """IDX015: a LICENSE file (among the root's ``files``) while index.json says no licence is chosen (seed 000:
    "本仓库尚未指定许可证")."""
    registry = index.get("registry") if index is not None else None
    if not isinstance(registry, dict) or "license" not in registry or registry["license"] is not None:
        return []  # absent or unreadable: SCH002
    present = set(files) & {"LICENSE", "LICENSE.md", "LICENSE.txt"}
    return [finding("IDX015", n, f"{n} exists, but index.json records registry.license null") for n in sorted(present)]


def server_findings(index: dict[str, Any] | None) -> list[Finding]:
    """IDX019: registry.server names rwkv_lightning with a version older than v1.8.1 (seed 000: "需要支持 State
    上传和 /v1/adapters 的 rwkv_lightning 推理服务（v1.8.1 及以后）"). Free text: only a version written after
    the name rwkv_lightning is compared, as TRN002 compares trainer versions; no version, nothing to say."""
    registry = index.get("registry") if index is not None else None
    server = registry.get("server") if isinstance(registry, dict) else None
    m = _SERVER_VERSION.search(server) if isinstance(server, str) else None
    if m is None:
        return []
    version = m.group(1).rstrip(".,;:)")
    if older_than(version, MIN_SERVER):
        return [finding("IDX019", "index.json", f"registry.server {server!r}: {version} is older than 1.8.1")]
    return []


# --- scores (IDX008, IDX009, IDX013, IDX014, IDX017, IDX020) ------------------------------------------------------


def score_run(sc: dict[str, Any]) -> tuple[str, ...]:
    """The run a score is of: its benchmark, date and backend (IDX020: one score per run of a weight; IDX014
    pairs a comparison with the other weight's score of the same run). Values of a wrong type (SCH002) are
    their ``repr``, so that the key is always hashable."""
    return tuple(v if isinstance(v, str) else repr(v) for v in (sc.get("benchmark"), sc.get("date"), sc.get("backend")))


def score_findings(
    index: dict[str, Any],
    only: Callable[[dict[str, Any]], bool] | None = None,
    *,
    bases: Mapping[str, dict[str, Any]] | None = None,
    ids: set[str] | None = None,
) -> list[Finding]:
    """IDX008 (solved <= total, run scores, steps, comparison targets), IDX009 (p-values), IDX013 (score
    arithmetic), IDX014 (paired comparison against another run), IDX017 (the adapter a score measured), IDX020
    (two scores of one run) on the bases, entries and unpublished weights of ``index``. ``only``: check just
    those it accepts (``add``: the new entry, and those compared against it). ``bases`` (by name) and ``ids``:
    as :func:`records` reads them (by default, those of an index.json that follows its schema)."""
    from rwkv_registry.index.stats import mcnemar_exact

    if bases is None:
        bases = {b["name"]: b for b in index["bases"]}
    if ids is None:
        ids = {x["id"] for x in index_items(index) if isinstance(x.get("id"), str)}
    out: list[Finding] = []
    known = ids | set(bases)
    owners: list[tuple[str, dict[str, Any]]] = [(f"base {n!r}", b) for n, b in bases.items()]
    for kind, key in (("entry", "entries"), ("unpublished weight", "unpublished")):
        items = index[key] if isinstance(index.get(key), list) else []
        owners += [(f"{kind} {x.get('id')!r}", x) for x in items if isinstance(x, dict)]
    by_id: dict[str, dict[str, Any]] = dict(bases)
    by_id.update({x["id"]: x for _, x in owners if isinstance(x.get("id"), str)})
    for who, item in owners:
        if only is not None and not only(item):
            continue
        below = item.get("on_top_of")
        if isinstance(below, str) and (below not in ids or below == item.get("id")):
            out.append(
                finding("IDX008", "index.json", f"{who}: on_top_of {below!r} is no other entry or unpublished weight")
            )
        step, total_steps = item.get("step"), item.get("total_steps")
        if is_integer(step) and is_integer(total_steps) and step > total_steps:
            out.append(finding("IDX008", "index.json", f"{who}: step {step} is beyond total_steps {total_steps}"))
        runs: set[tuple[str, ...]] = set()
        for sc in item.get("scores") or [] if isinstance(item.get("scores"), list) else []:
            if isinstance(sc, dict):
                where = f"{who}, {sc.get('benchmark')} {sc.get('date')}"
                out += _score_bounds(where, sc, known, mcnemar_exact)
                out += _score_version(where, sc, item)
                out += _score_sums(where, sc)
                out += _comparison_run(where, sc, by_id)
                if score_run(sc) in runs:
                    backend = sc.get("backend") or "backend not recorded"
                    out.append(finding("IDX020", "index.json", f"{where}: a second score of that run ({backend})"))
                runs.add(score_run(sc))
    return out


def _score_version(who: str, sc: dict[str, Any], item: dict[str, Any]) -> list[Finding]:
    """IDX017: the content_version the server registered when a score was measured (seed 000: "三个版本号与
    2026-10-17 跑分时端点上登记的一致") is the entry's file's; a State or a base has none to record."""
    cv = sc.get("content_version")
    if not isinstance(cv, str):
        return []  # null or absent: not recorded (a wrong type is SCH002)
    if item.get("method") == "miss":
        rec = item.get("miss")
        own = rec.get("content_version") if isinstance(rec, dict) else None
        if isinstance(own, str) and own != cv:  # an unpublished adapter has no file to compare with
            return [
                finding(
                    "IDX017",
                    "index.json",
                    f"{who}: measured on the adapter registered as content_version {cv}, "
                    f"but this entry's file is {own}",
                )
            ]
        return []
    what = "a State" if item.get("method") == "state" else "a base"
    return [finding("IDX017", "index.json", f"{who}: records content_version {cv}, but {what} has none")]


def _score_sums(who: str, sc: dict[str, Any]) -> list[Finding]:
    """IDX013: the headline against solved/total, the mean of the run scores, and whole-benchmark categories."""
    out: list[Finding] = []
    score, unit, solved, total = sc.get("score"), sc.get("unit"), sc.get("solved"), sc.get("total")
    if not is_finite_number(score):
        return out  # SCH002
    if is_finite_number(solved) and is_integer(total) and total > 0:
        if unit == "percent":
            expected, tol = 100 * solved / total, _rounding(score) + 100 * _rounding(solved) / total
        elif unit == "points":
            expected, tol = float(solved), _rounding(score) + _rounding(solved)
        else:
            expected, tol = float(score), 0.0  # unknown unit: SCH002
        if abs(score - expected) > tol + 1e-9:
            out.append(
                finding(
                    "IDX013",
                    "index.json",
                    f"{who}: score {_shown(score, unit)} but solved {solved:g} of {total} gives {expected:.4g}",
                )
            )
    runs = sc.get("run_scores")
    if isinstance(runs, list) and runs and all(is_finite_number(r) for r in runs):
        mean = math.fsum(runs) / len(runs)
        if abs(score - mean) > _rounding(score) + max(_rounding(r) for r in runs) + 1e-9:
            out.append(
                finding(
                    "IDX013",
                    "index.json",
                    f"{who}: score {_shown(score, unit)} but its run scores "
                    f"{', '.join(f'{r:g}' for r in runs)} average {mean:.4g}",
                )
            )
    cats = (
        [c for c in (sc.get("by_category") or {}).values() if isinstance(c, dict)]
        if isinstance(sc.get("by_category"), dict)
        else []
    )
    if not cats or not is_integer(total) or not all(is_integer(c.get("total")) for c in cats):
        return out
    cat_total = sum(c["total"] for c in cats)
    if cat_total > total:
        out.append(
            finding("IDX013", "index.json", f"{who}: the categories hold {cat_total} questions, the total is {total}")
        )
    elif (
        cat_total == total
        and is_finite_number(solved)
        and all(is_finite_number(c.get("solved")) for c in cats)
        and abs(math.fsum(c["solved"] for c in cats) - solved)
        > _rounding(solved) + sum(_rounding(c["solved"]) for c in cats) + 1e-9
    ):
        out.append(
            finding(
                "IDX013",
                "index.json",
                f"{who}: the categories solve {math.fsum(c['solved'] for c in cats):g} of {total}, "
                f"the score says {solved:g}",
            )
        )
    return out


def _comparison_run(who: str, sc: dict[str, Any], by_id: dict[str, dict[str, Any]]) -> list[Finding]:
    """IDX014: a paired comparison against a weight whose scores on that benchmark are of another run."""
    comp = sc.get("comparison")
    against = comp.get("against") if isinstance(comp, dict) else None
    other = by_id.get(against) if isinstance(against, str) else None
    if other is None or not isinstance(other.get("scores"), list):
        return []  # unknown target: IDX008
    same_bench = [s for s in other["scores"] if isinstance(s, dict) and s.get("benchmark") == sc.get("benchmark")]
    if not same_bench:
        return []  # the other weight's score on it is not recorded: nothing to compare with
    if any(s.get("date") == sc.get("date") and s.get("backend") == sc.get("backend") for s in same_bench):
        return []
    runs = "; ".join(f"{s.get('date')} ({s.get('backend') or 'backend not recorded'})" for s in same_bench)
    return [
        finding(
            "IDX014",
            "index.json",
            f"{who}: compared question by question against {against!r}, whose "
            f"{sc.get('benchmark')} scores are of {runs}, not of {sc.get('date')} "
            f"({sc.get('backend') or 'backend not recorded'})",
        )
    ]


def _score_bounds(who: str, sc: dict[str, Any], known: set[str], mcnemar: Callable[[int, int], float]) -> list[Finding]:
    """IDX008 (solved within total, run scores against runs, the comparison's target and counts) and IDX009 (the
    comparison's p-value against the exact McNemar test)."""
    out: list[Finding] = []

    def over(solved: Any, total: Any, what: str) -> None:
        if is_finite_number(solved) and is_finite_number(total) and solved > total:
            out.append(finding("IDX008", "index.json", f"{who}: {what}solved {solved} of {total}"))

    over(sc.get("solved"), sc.get("total"), "")
    categories = sc["by_category"] if isinstance(sc.get("by_category"), dict) else {}
    for name, cat in categories.items():
        if isinstance(cat, dict):
            over(cat.get("solved"), cat.get("total"), f"category {name!r}: ")
    run_scores, runs = sc.get("run_scores"), sc.get("runs")
    if isinstance(run_scores, list) and is_integer(runs) and len(run_scores) != runs:
        out.append(finding("IDX008", "index.json", f"{who}: {len(run_scores)} run scores for {runs} runs"))
    comp = sc.get("comparison")
    if not isinstance(comp, dict):
        return out
    if isinstance(comp.get("against"), str) and comp["against"] not in known:
        out.append(
            finding(
                "IDX008",
                "index.json",
                f"{who}: compared against {comp['against']!r}, which is no entry, unpublished weight or base",
            )
        )
    wins, losses, p = comp.get("wins"), comp.get("losses"), comp.get("p_value")
    if is_integer(wins) and is_integer(losses) and is_finite_number(sc.get("total")) and wins + losses > sc["total"]:
        out.append(
            finding("IDX008", "index.json", f"{who}: +{wins}/-{losses} differ on more than {sc['total']} questions")
        )
    if is_integer(wins) and is_integer(losses) and is_finite_number(p):
        exact = mcnemar(wins, losses)
        if abs(p - exact) > max(0.005, 0.25 * exact):
            out.append(
                finding(
                    "IDX009",
                    "index.json",
                    f"{who}: p_value {p:g} for +{wins}/-{losses}; the exact two-sided McNemar test gives {exact:.2g}",
                )
            )
    return out


def _shown(score: float, unit: Any) -> str:
    return f"{score:g}{'%' if unit == 'percent' else ''}"


def _rounding(x: float) -> float:
    """Half a unit of the last decimal a recorded number shows (0 for an integer): the rounding it may carry."""
    if is_integer(x):
        return 0.0
    text = repr(float(x))
    if "e" in text or "." not in text:
        return 0.0
    return 0.5 * 10 ** -len(text.split(".")[1])
