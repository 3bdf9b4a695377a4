"""The train.json rules (TRN001–TRN013; the file's schema is SCH003's): what a run's record must say of its trainer,
its times, its steps, its group names and its command line, against the entries recorded under its data-version
directory and the bases of index.json. ``validate`` runs them on every train.json (engine/validate.py,
``Validator.check_train_files``); ``add`` runs them on the train.json a new entry would leave, before anything is
written (store/ops.py). Each function takes plain values (no tree, no Validator), so a test can call it alone.
"""

from __future__ import annotations

import datetime as dt
import functools
import math
import re
from collections.abc import Collection, Container, Iterable, Mapping
from typing import Any

from rwkv_registry.core.rules import E, Finding, N, Rule, Rulebook, W
from rwkv_registry.core.textsafe import clip
from rwkv_registry.formats.jsonload import is_finite_number, is_integer
from rwkv_registry.index.layout import METHODS
from rwkv_registry.schemas import misspelt_keys

# --- the rules ----------------------------------------------------------------------------------------------------

RULES = Rulebook(
    Rule(
        "TRN001",
        E,
        "data-version directory without train.json",
        "Write train.json beside the weights (trainer, version, hyper-parameters, command, data sha256).",
    ),
    Rule(
        "TRN002",
        E,
        "rwkv_lightning_cuda trainer (rwkv_state_tune, rwkv_miss_tune) older than v1.8.1",
        "Builds before v1.8.1 (commit 47df608, `segments` mask) put loss on the whole prompt; retrain with "
        "v1.8.1 or later.",
    ),
    Rule(
        "TRN003",
        E,
        "train.json data version or sha256 disagrees with the entries",
        "data.version, data.sha256 and data.rows must equal the entries of that directory and its name.",
    ),
    Rule(
        "TRN004",
        E,
        "MiSS group without its run in train.json, or run without group",
        "train.json `runs` lists one item per group sub-folder, with its learning rates and times.",
    ),
    Rule(
        "TRN005",
        E,
        "train.json method differs from its directory",
        '`method` is "state" under state/ and "miss" under miss/.',
    ),
    Rule("TRN006", N, "trainer build commit not recorded", "Record trainer.commit for new training runs."),
    Rule(
        "TRN007",
        E,
        "trainer does not match the method",
        "A State is trained with rwkv_state_tune and a MiSS adapter with rwkv_miss_tune; fix trainer.name, or "
        "move the weights under the right method.",
    ),
    Rule(
        "TRN008",
        E,
        "train.json rank or alpha differs from the MiSS adapters of its directory",
        "hyperparameters.rank and .alpha must be those the adapters were trained with (their miss.json, which "
        "index.json records): fix train.json, or the adapters come from another run.",
    ),
    Rule(
        "TRN009",
        W,
        "weight name states a rank, learning rate, epoch count or step that its records contradict",
        "Names like r16-lr2e-5-e2 (MiSS group) or v141b-s1224 (State, step 1224) are read by users choosing a file: "
        "they must agree with the adapter's rank (index.json miss.rank), its run's lr and epochs in train.json, and "
        "the entry's step; rename the weights before they are published, or fix the record that was copied wrong.",
    ),
    Rule(
        "TRN010",
        W,
        "train.json command line names another base's file",
        "The command line of a train.json under one base names another base's file (registered or not) and not "
        "its own: the weights were trained on that file, or copied from its directory without retraining (a State "
        "then loads but is not valid; a MiSS adapter is refused). Retrain on this base and record the command "
        "that did so.",
    ),
    Rule(
        "TRN011",
        W,
        "an entry's total_steps differs from the step count of its train.json",
        "index.json total_steps (the State's \"step 1224 of 1374\", a MiSS run's step count) is the number of "
        "optimizer steps the training ran, which train.json records as hyper-parameter `steps` (a MiSS run's own "
        "`steps` first): fix the one copied wrong.",
    ),
    Rule(
        "TRN012",
        E,
        "train.json says training finished before it started",
        "`started` and `finished` (the whole training's, and each run's in `runs`) are when it began and ended, "
        "RFC 3339 with an offset: one of them was copied wrong, the two are swapped, or an offset is missing or "
        "wrong (08:00+08:00 is 00:00Z); fix the time in train.json.",
    ),
    Rule(
        "TRN013",
        W,
        "train.json key that is no field of it but close to one",
        "train.json may hold more keys than its schema names (schemas/train.schema.json), so a misspelt field is "
        "not an error, and what it records is not read where the field is: rename the key to the field named in "
        'the message, or give a key of your own an "x-" prefix.',
    ),
)
finding = RULES.finding

MIN_TRAINER = "1.8.1"  # rwkv_lightning_cuda with the `segments` mask (commit 47df608)
LIGHTNING_TRAINERS = ("rwkv_state_tune", "rwkv_miss_tune")

_SEMVER = re.compile(r"^v?(\d+)\.(\d+)\.(\d+)(.*)$", re.DOTALL)
_DESCRIBE = re.compile(r"^-\d+-g[0-9a-f]{4,40}(?:-dirty)?$")  # git describe: v1.8.1-3-g47df608


def older_than(text: str, minimum: str) -> bool | None:
    """Is version ``text`` older than ``minimum``? PEP 440 (``packaging.version``): a pre-release or development
    release of 1.8.1 (``1.8.1-rc1``, ``1.8.1rc1``, ``1.8.1.dev3``) is older than 1.8.1; a post-release or a local
    version (``1.8.1.post1``, ``1.8.1+cu128``) is not. A version PEP 440 cannot parse but that starts with three
    numbers follows semver: a ``-`` suffix is a pre-release (``1.8.1-rc.1.x`` is older than 1.8.1), except git
    describe's ``-N-gHASH`` (commits after the tag); any other suffix is ignored. None when ``text`` is no version
    at all (nothing to compare)."""
    from packaging.version import InvalidVersion, Version

    try:
        return Version(text.strip()) < Version(minimum)
    except InvalidVersion:
        pass
    m = _SEMVER.match(text.strip())
    if m is None:
        return None
    have = tuple(int(x) for x in m.groups()[:3])
    want = Version(minimum).release
    rest = m.group(4)
    return have < want or (have == want and rest.startswith("-") and not _DESCRIBE.match(rest))


def data_version_dirs(
    weights: Iterable[str],
    entries_by_path: Mapping[str, dict[str, Any]],
    dirs: Iterable[str],
    bases: Collection[str],
) -> dict[str, list[dict[str, Any]]]:
    """The data-version directories (``<base>/<method>/<version>``) that must hold a train.json, each with the
    index entries recorded under it: those of the weight files in the layout (``weights``), of the entries of
    index.json (``entries_by_path``) and the ones in the tree (``dirs``) under a registered base."""
    out: dict[str, list[dict[str, Any]]] = {}
    for rel in weights:
        out.setdefault("/".join(rel.split("/")[:3]), [])
    for path, e in entries_by_path.items():
        parts = path.split("/")
        if len(parts) >= 4:
            out.setdefault("/".join(parts[:3]), []).append(e)
    for d in dirs:
        parts = d.split("/")
        if len(parts) == 3 and parts[0] in bases and parts[1] in METHODS:
            out.setdefault(d, [])
    return out


def missing_train_findings(version_dirs: Iterable[str], dirs: Container[str], files: Container[str]) -> list[Finding]:
    """TRN001: a data-version directory of the tree (one of ``version_dirs`` in ``dirs``) without a train.json in
    ``files``. A directory that is gone is not asked: its entries' LAY008 (or the base's LAY003) says so."""
    return [
        finding("TRN001", d, f"{d}/ has no train.json")
        for d in sorted(version_dirs)
        if d in dirs and f"{d}/train.json" not in files
    ]


def train_findings(
    rel: str,
    d: str,
    t: dict[str, Any],
    entries: list[dict[str, Any]],
    dirs: set[str],
    unsure: frozenset[str] = frozenset(),
) -> list[Finding]:
    """The train.json rules (TRN002–TRN009, TRN011–TRN013) on ``t``, the train.json at ``rel`` of the data-version
    directory ``d``, with the entries recorded under it and the directories ``dirs`` of the registry (only
    the group directories ``d/<group>`` among them count, so the caller may pass just those). ``unsure``: ids of
    entries whose recorded ``miss`` values already disagree with their file (MIS015): TRN008 does not echo them.
    ``add`` runs them on the train.json a new entry would leave, before anything is written."""
    out: list[Finding] = []
    _base, method, version = d.split("/")
    if "method" in t and t.get("method") != method:  # absent: SCH003
        out.append(finding("TRN005", rel, f"method is {t.get('method')!r} in {method}/"))
    trainer = t["trainer"] if isinstance(t.get("trainer"), dict) else {}
    if trainer.get("name") in LIGHTNING_TRAINERS and older_than(str(trainer.get("version", "")), MIN_TRAINER):
        out.append(
            finding("TRN002", rel, f"trainer {trainer.get('name')} {trainer.get('version')} is older than 1.8.1")
        )
    expected = {"state": "rwkv_state_tune", "miss": "rwkv_miss_tune"}.get(method)
    if trainer.get("name") in LIGHTNING_TRAINERS and trainer.get("name") != expected:
        out.append(
            finding("TRN007", rel, f"trainer is {trainer.get('name')}, but {method}/ weights are trained by {expected}")
        )
    if trainer and trainer.get("commit") is None:
        out.append(
            finding("TRN006", rel, f"trainer {trainer.get('name')} {trainer.get('version')}: build commit not recorded")
        )
    out += _time_findings(rel, t)
    out += [finding("TRN013", rel, f"{where}: {message}") for where, message in misspelt_keys("train", t)]
    data = t["data"] if isinstance(t.get("data"), dict) else {}
    if "version" in data and data.get("version") != version:  # absent: SCH003
        out.append(finding("TRN003", rel, f"data.version is {data.get('version')!r} in directory {version}/"))
    for e in entries:
        ed = e["data"] if isinstance(e.get("data"), dict) else {}
        for key in ("version", "sha256", "rows"):
            if key in data and key in ed and ed.get(key) != data.get(key):  # absent in the entry: SCH002
                out.append(
                    finding(
                        "TRN003",
                        rel,
                        f"data.{key} is {data.get(key)!r}, entry {e.get('id')!r} records {ed.get(key)!r}",
                    )
                )
    if method == "miss":
        hyper = t["hyperparameters"] if isinstance(t.get("hyperparameters"), dict) else {}
        for key in ("rank", "alpha"):
            want = hyper.get(key)
            if not is_finite_number(want):
                continue
            for e in entries:
                if e.get("id") in unsure:
                    continue
                got = e["miss"].get(key) if isinstance(e.get("miss"), dict) else None
                if is_finite_number(got) and got != want:
                    out.append(
                        finding(
                            "TRN008",
                            rel,
                            f"hyperparameters.{key} is {want!r}, entry {e.get('id')!r} (its miss.json) has {got!r}",
                        )
                    )
        runs = t["runs"] if isinstance(t.get("runs"), list) else []
        out += _name_findings(rel, t, entries, runs, unsure)
        out += _step_findings(rel, t, entries, runs)
        groups_run = {r["group"] for r in runs if isinstance(r, dict) and isinstance(r.get("group"), str)}
        groups_disk = {p.split("/")[3] for p in dirs if p.startswith(d + "/") and p.count("/") == 3}
        for g in sorted(groups_disk - groups_run):
            out.append(finding("TRN004", rel, f"group {g}/ has no run in train.json"))
        for g in sorted(str(x) for x in groups_run - groups_disk):
            out.append(finding("TRN004", rel, f"run {g!r} has no group directory {d}/{g}/"))
    else:
        out += _name_findings(rel, t, entries, [])
        out += _step_findings(rel, t, entries, [])
    return out


def _instant(value: Any) -> dt.datetime | None:
    """An RFC 3339 date-time with its offset (``2026-10-12T08:00:00Z``) as an aware datetime; None for anything
    else (SCH003 reports a time that is not one)."""
    if not isinstance(value, str):
        return None
    text = value[:-1] + "+00:00" if value[-1:] in ("Z", "z") else value
    try:
        when = dt.datetime.fromisoformat(text)
    except ValueError:
        return None
    return when if when.tzinfo is not None else None


def _time_findings(rel: str, t: dict[str, Any]) -> list[Finding]:
    """TRN012: ``finished`` before ``started``, for the whole training and for each run of ``runs``."""
    out: list[Finding] = []
    runs = t["runs"] if isinstance(t.get("runs"), list) else []
    spans = [("", t), *((f"runs[{i}] ({r.get('group')!r}): ", r) for i, r in enumerate(runs) if isinstance(r, dict))]
    for where, span in spans:
        started, finished = _instant(span.get("started")), _instant(span.get("finished"))
        if started is not None and finished is not None and finished < started:
            out.append(
                finding(
                    "TRN012",
                    rel,
                    f"{where}finished {clip(str(span['finished']))} is before started {clip(str(span['started']))}",
                )
            )
    return out


def _step_findings(rel: str, t: dict[str, Any], entries: list[dict[str, Any]], runs: list[Any]) -> list[Finding]:
    """TRN011: an entry's ``total_steps`` (seed 000: "第 1224 步（共 1374 步）", "2 epoch 共 1378 步") against the
    step count its train.json records: the MiSS group's run ``steps``, else the shared hyper-parameter ``steps``
    (or ``total_steps``). Nothing is said where either is not recorded."""
    out: list[Finding] = []
    hyper = t["hyperparameters"] if isinstance(t.get("hyperparameters"), dict) else {}
    key = "steps" if "steps" in hyper else "total_steps"
    by_group = {r["group"]: r for r in runs if isinstance(r, dict) and isinstance(r.get("group"), str)}
    for e in entries:
        total = e.get("total_steps")
        if not is_integer(total):
            continue
        run = by_group.get(e.get("group")) if e.get("method") == "miss" else None
        if run and "steps" in run:
            steps, where = run["steps"], f"run {e.get('group')!r} steps"
        else:
            steps, where = hyper.get(key), f"hyperparameters.{key}"
        if is_integer(steps) and steps != total:
            out.append(
                finding(
                    "TRN011", rel, f"entry {e.get('id')!r} records total_steps {total}, train.json {where} is {steps}"
                )
            )
    return out


_NAME_RANK = re.compile(r"(?:^|-)r([0-9]+)(?=-|$)")
_NAME_LR = re.compile(r"(?:^|-)lr([0-9]+(?:\.[0-9]+)?(?:e-?[0-9]+)?)(?=-|$)")
_NAME_EPOCHS = re.compile(r"(?:^|-)e([0-9]+)(?=-|$)")
_NAME_STEP = re.compile(r"-s([0-9]+)$")


@functools.lru_cache(maxsize=4096)
def _group_named(group: str) -> tuple[str | None, str | None, str | None]:
    """The rank, lr and epochs a MiSS group name says (the digits, or None): the same few names recur over
    thousands of entries."""
    found = (_NAME_RANK.search(group), _NAME_LR.search(group), _NAME_EPOCHS.search(group))
    rank, lr, epochs = (m.group(1) if m else None for m in found)
    return rank, lr, epochs


def _name_findings(
    rel: str, t: dict[str, Any], entries: list[dict[str, Any]], runs: list[Any], unsure: frozenset[str] = frozenset()
) -> list[Finding]:
    """TRN009: what a MiSS group name (r16-lr2e-5-e2) or a State file name (v141b-s1224) says, against the
    records: the adapter's rank in index.json (not for ``unsure`` entries, whose record MIS015 already calls
    wrong), its run's lr and epochs in train.json, the State entry's step."""
    out: list[Finding] = []
    hyper = t["hyperparameters"] if isinstance(t.get("hyperparameters"), dict) else {}
    by_group = {r["group"]: r for r in runs if isinstance(r, dict) and isinstance(r.get("group"), str)}
    for e in entries:
        if e.get("method") == "miss" and isinstance(e.get("group"), str):
            g: str = e["group"]
            run = by_group.get(g, {})
            miss = e["miss"] if isinstance(e.get("miss"), dict) else {}
            epochs = run.get("epochs", hyper.get("epochs"))
            rank, lr, epochs_named = _group_named(g)
            said = [
                (
                    "rank",
                    rank,
                    None if e.get("id") in unsure else miss.get("rank"),
                    "index.json miss.rank",
                ),
                ("lr", lr, run.get("lr"), f"its run in {rel}"),
                ("epochs", epochs_named, epochs, f"{rel}"),
            ]
            what = f"group {g}/"
        elif e.get("method") == "state" and isinstance(e.get("path"), str):
            stem = e["path"].rsplit("/", 1)[-1].rsplit(".", 1)[0]
            m = _NAME_STEP.search(stem)
            said = [("step", m.group(1) if m else None, e.get("step"), "index.json")]
            what = f"State {stem}"
        else:
            continue
        for key, digits, got, where in said:
            if digits is None or not is_finite_number(got):
                continue
            named = float(digits)
            if not math.isclose(named, got, rel_tol=1e-9, abs_tol=0.0):
                out.append(
                    finding(
                        "TRN009",
                        rel,
                        f"{what} says {key} {digits}, but {where} records {key} {got!r} (entry {e.get('id')!r})",
                    )
                )
    return out


def _names_file(command: str, file: str) -> bool:
    """``file`` appears in ``command`` as a whole path component (``--model x/f.pth``, ``--model=f.pth``)."""
    if file not in command:  # the usual case, without a regular expression
        return False
    return re.search(r"(?:^|[\s/='\"])" + re.escape(file) + r"(?=$|[\s'\"])", command) is not None


def base_files(bases: dict[str, dict[str, Any]]) -> dict[str, str]:
    """``{base name: its file name}`` of the bases that record one (``source.file``): what TRN010 looks for."""
    return {
        n: b["source"]["file"]
        for n, b in bases.items()
        if isinstance(b.get("source"), dict) and isinstance(b["source"].get("file"), str)
    }


def train_command_findings(rel: str, base: str, t: dict[str, Any], files: dict[str, str]) -> list[Finding]:
    """TRN010 on the train.json ``t`` at ``rel`` under ``base``: its command line names another registered base's file
    (``files``: :func:`base_files`), or a dated RWKV base file no base records, and not this base's."""
    command = t.get("command")
    if not isinstance(command, str):
        return []  # SCH003
    own = files.get(base, base + ".pth")
    if _names_file(command, own) or _names_file(command, base + ".pth"):  # its directory's name: IDX006's, not ours
        return []
    # source.file is the path in the base's Hub repository (IDX006 compares its last component): a command may name
    # the file in another folder, and the dated names found below are last components
    names = {file.rpartition("/")[2] for file in files.values()}
    out = [
        finding("TRN010", rel, f"the command line names {file} (base {name!r}), not this base's file {own}")
        for name, file in sorted(files.items())
        if name != base and (_names_file(command, file) or _names_file(command, file.rpartition("/")[2]))
    ]
    # a dated RWKV base file that no base records: trained on a base not registered here (a newer one, say)
    for file in sorted({m.group(1) for m in _BASE_FILE.finditer(command)} - names):
        out.append(
            finding(
                "TRN010",
                rel,
                f"the command line names the base file {file} (not registered), not this base's file {own}",
            )
        )
    return out


# A dated RWKV base file named in a command line (rwkv7-g1k-7.2b-20260930-ctx25600.pth), as a whole path component
_BASE_FILE = re.compile(
    r"(?:^|[\s/='\"])(rwkv[0-9A-Za-z._-]*?-(?:19|20)[0-9]{6}(?:-[0-9A-Za-z._-]*)?\.pth)(?=$|[\s'\"])", re.I
)
