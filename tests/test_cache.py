"""The per-file facts cache: fast when nothing changed, never fooled by a restored mtime, never in the tree."""

from __future__ import annotations

import copy
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from regtools import TINY_ARCH, TINY_BASE, jsonschema_checks

from rwkv_registry.engine import facts
from rwkv_registry.engine.facts import RACY_COARSE_NS, FactsCache, racy, stat_key
from rwkv_registry.engine.validate import validate_registry
from rwkv_registry.store.ops import compute_sums

STATE = f"{TINY_BASE}/state/v1/s1.pth"


def test_warm_run_uses_the_cache(registry: Path) -> None:
    cold = validate_registry(registry)
    warm = validate_registry(registry)
    assert cold.stats["cache_hits"] == 0 and cold.stats["bytes_hashed"] > 0
    assert warm.stats["cache_hits"] == 3 and warm.stats["bytes_hashed"] == 0
    assert [f.code for f in warm.findings] == [f.code for f in cold.findings]


def test_in_place_edit_with_restored_mtime_is_caught(registry: Path) -> None:
    assert validate_registry(registry).ok
    p = registry / STATE
    st = p.stat()
    data = bytearray(p.read_bytes())
    data[-100] ^= 0x10
    with open(p, "r+b") as f:  # same inode, same size
        f.write(bytes(data))
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert p.stat().st_mtime_ns == st.st_mtime_ns and p.stat().st_size == st.st_size
    report = validate_registry(registry)
    assert "HSH001" in {f.code for f in report.findings}
    assert report.stats["cache_hits"] == 2  # the two MiSS files only


def test_no_cache_hashes_everything(registry: Path) -> None:
    validate_registry(registry)
    report = validate_registry(registry, use_cache=False)
    assert report.stats["cache_hits"] == 0 and report.stats["bytes_hashed"] > 0


def test_cache_is_never_written_inside_the_registry(registry: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RWKV_REGISTRY_CACHE_DIR", str(registry / "cache-here"))
    before = sorted(p.relative_to(registry) for p in registry.rglob("*"))
    assert validate_registry(registry).ok
    assert sorted(p.relative_to(registry) for p in registry.rglob("*")) == before


def test_corrupt_cache_file_is_ignored(registry: Path) -> None:
    validate_registry(registry)
    cache_dir = Path(os.environ["RWKV_REGISTRY_CACHE_DIR"])
    for f in cache_dir.glob("validate-*.json"):
        f.write_text("{garbage")
    report = validate_registry(registry)
    assert report.ok and report.stats["cache_hits"] == 0


def test_cached_facts_share_their_big_lists_and_read_back_unchanged(registry: Path, tmp_path: Path) -> None:
    # every adapter of one base and rank has the same tensors and targets: stored once (a 7.2B MiSS adapter's
    # facts are 60 KB of JSON, loaded on every warm run), read back equal to the facts computed
    import json
    from dataclasses import asdict

    from rwkv_registry.engine.facts import FactsCache, FileFacts, compute_facts

    weights = sorted(p for p in registry.rglob("*.pth"))
    computed = {str(p): compute_facts(p) for p in weights}
    cache = FactsCache(tmp_path / "elsewhere")
    for i, (p, f) in enumerate(computed.items()):
        cache.put(p, [i], f)
    cache.save()
    again = FactsCache(tmp_path / "elsewhere")
    for i, (p, f) in enumerate(computed.items()):
        as_before = FileFacts.from_json(json.loads(json.dumps(asdict(f))))  # what the cache gave without blobs
        assert again.get(p, [i]) == as_before
        assert again.get(p, [i + 1]) is None
    stored = json.loads(again.path.read_text())
    misses = [v for v in stored["files"].values() if v["facts"]["method"] == "miss"]
    assert len(misses) == 2 and misses[0]["blobs"] == misses[1]["blobs"]  # the same shapes: the same blobs
    assert set(misses[0]["blobs"]) == {"tensors", "targets", "manifest.targets"}
    assert all(v["facts"]["targets"] is None for v in misses)
    # the tensors blob is made tuples once and shared by the adapters that have it; a blob that is no tensor list
    # (an edit) is a miss, as before
    got = [again.get(p, [i]) for i, (p, f) in enumerate(computed.items()) if f.method == "miss"]
    assert got[0] is not None and got[1] is not None and got[0].tensors is got[1].tensors
    digest = misses[0]["blobs"]["tensors"]
    poisoned = FactsCache(tmp_path / "elsewhere")
    poisoned.blobs[digest] = [1, 2, 3, 4]
    assert [poisoned.get(p, [i]) for i, (p, f) in enumerate(computed.items()) if f.method == "miss"] == [None, None]
    # a blob gone (a cache from elsewhere, an edit): a miss, recomputed, never a half-read fact
    stored["blobs"] = {}
    again.path.write_text(json.dumps(stored))
    assert FactsCache(tmp_path / "elsewhere").get(str(weights[0]), [0]) is None
    report = validate_registry(registry)
    assert report.ok and report.stats["cache_hits"] == 0
    warm = validate_registry(registry)
    assert warm.stats["cache_hits"] == 3 and [f.code for f in warm.findings] == [f.code for f in report.findings]


def _seen(report: object) -> list[tuple[str, str, str]]:
    return [(f.code, f.path, f.message) for f in report.findings]  # type: ignore[attr-defined]


def _edit(rel: str, fn: Callable[[str], str]) -> Callable[[Path], None]:
    def apply(root: Path) -> None:
        p = root / rel
        p.write_text(fn(p.read_text("utf-8")), "utf-8")

    return apply


TRAIN = f"{TINY_BASE}/state/v1/train.json"
# Each a change a user (or a broken tool) makes to the small files whose verdicts the cache remembers by content:
# index.json and train.json (strict loader + schema), README.md (RDM001/RDM002, rendered from index.json).
MEMO_EDITS: dict[str, Callable[[Path], None]] = {
    "readme-own-text": _edit("README.md", lambda t: t + "\nMore of the publisher's words.\n"),
    "readme-generated-edit": _edit("README.md", lambda t: t.replace("| Path |", "| Paths |", 1)),
    "readme-marker-gone": _edit("README.md", lambda t: t.replace("<!-- rwkv-registry:sections:end -->", "")),
    "index-description": _edit("index.json", lambda t: t.replace('"recommended": true', '"recommended": false', 1)),
    "index-reformatted": _edit("index.json", lambda t: json.dumps(json.loads(t), indent=4)),
    "index-duplicate-key": _edit("index.json", lambda t: t.replace("{", '{"schema_version": 1, ', 1)),
    "index-nan": _edit("index.json", lambda t: t.replace('"size": ', '"size": NaN, "x-size": ', 1)),
    "index-overflow": _edit(
        "index.json", lambda t: t.replace('"size": ', '"x-big": 1' + "0" * 300 + 'e9, "size": ', 1)
    ),
    "index-schema": _edit("index.json", lambda t: t.replace('"sha256": "', '"sha256": "zz', 1)),
    "index-not-json": _edit("index.json", lambda t: t[: len(t) // 2]),
    "train-value": _edit(TRAIN, lambda t: t.replace("4096", "8192")),
    "train-duplicate-key": _edit(TRAIN, lambda t: t.replace("{", '{"method": "state", ', 1)),
    "train-schema": _edit(TRAIN, lambda t: t.replace('"method"', '"methd"', 1)),
}


def test_remembered_verdicts_give_the_findings_of_a_cold_run(reg: Path) -> None:
    """The cache answers for a JSON file's strict parse and schema errors, and for the README's RDM001/RDM002, by
    the bytes (and the code): after every edit, and after undoing it (answers remembered from before the edit),
    a cached run reports exactly what a run without the cache reports, in the same order."""
    small = {p: p.read_bytes() for p in [reg / "index.json", reg / "README.md", reg / TRAIN]}
    validate_registry(reg)  # the cache holds the valid registry's answers
    for name, edit in MEMO_EDITS.items():
        edit(reg)
        cold = _seen(validate_registry(reg, use_cache=False))
        assert _seen(validate_registry(reg)) == cold, name  # filled here
        assert _seen(validate_registry(reg)) == cold, name  # answered from the cache
        for p, data in small.items():
            p.write_bytes(data)
        assert _seen(validate_registry(reg)) == _seen(validate_registry(reg, use_cache=False)), name


def test_remembered_verdicts_are_used_and_keyed_by_the_code(reg: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The README verdict is read from the cache (a planted lie is believed), under a key that holds the code's
    digest: with other code (another digest), the lie is not believed."""
    from rwkv_registry.engine import validate as v

    assert validate_registry(reg).ok
    cache = next(Path(os.environ["RWKV_REGISTRY_CACHE_DIR"]).glob("validate-*.json"))
    data = json.loads(cache.read_text())
    keys = [k for k in data["json"] if k.startswith("readme:")]
    assert len(keys) == 1 and keys[0].endswith(v.code_digest())
    data["json"][keys[0]] = "differs"
    cache.write_text(json.dumps(data))
    assert [f.code for f in validate_registry(reg).findings if f.code == "RDM002"] == ["RDM002"]
    monkeypatch.setattr(v, "code_digest", lambda: "another-code")
    assert "RDM002" not in {f.code for f in validate_registry(reg).findings}


def test_racy_only_for_whole_second_times_within_the_coarse_step() -> None:
    now = 1_800_000_000 * 10**9
    fine = [0, 0, "p", 1, now - 1, now - 7]
    assert not racy(fine, now)  # sub-second times: a later write gets a later time
    assert racy([0, 0, "p", 1, now - 10**9, now - 1], now)  # a whole-second mtime, a ctime just now
    assert racy([0, 0, "p", 1, now - 5 * 10**9, now - 10**9], now)  # ctime whole, within 2 s
    assert not racy([0, 0, "p", 1, now - 5 * 10**9, now - 3 * 10**9], now)  # both older than the step


def _coarse_clock(monkeypatch: pytest.MonkeyPatch, tick_ns: int) -> None:
    """Every file time reads as ``tick_ns``: a file system whose clock has not stepped since the files
    were written (FAT, HFS+, ext3 within one second)."""
    real = facts.stat_key

    def coarse(st: os.stat_result, path: str) -> list[object]:
        key = real(st, path)
        return [*key[:4], tick_ns, tick_ns]

    monkeypatch.setattr(facts, "stat_key", coarse)


def test_same_size_rewrite_within_a_coarse_clock_step_is_caught(
    registry: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tick = time.time_ns() // 10**9 * 10**9
    _coarse_clock(monkeypatch, tick)
    assert validate_registry(registry).ok  # the files' times are "now": not cached
    p = registry / STATE
    data = bytearray(p.read_bytes())
    data[-100] ^= 0x10
    with open(p, "r+b") as f:  # same inode, same size, same (coarse) times: the same stat key
        f.write(bytes(data))
    report = validate_registry(registry)
    assert "HSH001" in {f.code for f in report.findings} and report.stats["cache_hits"] == 0


def test_coarse_times_are_cached_once_older_than_the_step(registry: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _coarse_clock(monkeypatch, time.time_ns() // 10**9 * 10**9 - 3 * 10**9)
    assert validate_registry(registry).stats["cache_hits"] == 0
    assert validate_registry(registry).stats["cache_hits"] == 3


def test_smoke_hash_cache_skips_racy_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from rwkv_registry.model.smoke import hashcache

    monkeypatch.setenv("RWKV_REGISTRY_CACHE_DIR", str(tmp_path / "cache"))
    p = tmp_path / "base.pth"
    p.write_bytes(b"a" * 4096)
    real = hashcache.stat_key
    tick = [time.time_ns() // 10**9 * 10**9]
    monkeypatch.setattr(hashcache, "stat_key", lambda st, path: [*real(st, path)[:4], tick[0], tick[0]])
    first, cached = hashcache.cached_sha256(p)
    assert not cached
    p.write_bytes(b"b" * 4096)  # same size, same coarse times
    second, cached = hashcache.cached_sha256(p)
    assert second != first and not cached
    tick[0] -= 3 * 10**9  # the same bytes seen once their times are older than the step: cached
    hashcache.cached_sha256(p)
    assert hashcache.cached_sha256(p) == (second, True)


def _report_json(root: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> dict[str, object]:
    """`validate --format json` as a user gets it, without its stats (time, hits and bytes hashed differ)."""
    from rwkv_registry import schemas
    from rwkv_registry.cli.main import main

    schemas.forget_results()  # this process's memo would answer in place of the cache
    capsys.readouterr()
    main(["validate", str(root), "--format", "json", *extra])
    out = json.loads(capsys.readouterr().out)
    out.pop("stats")
    return out


@pytest.mark.parametrize("saves", ["appended", "rewritten"])
def test_writes_and_edits_in_a_git_registry_give_the_findings_of_a_cold_run(
    reg: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, saves: str
) -> None:
    """The pre-commit case and its neighbours, one change after another in a git registry: `add` (its schema
    results journaled beside the cache, HEAD's bases then from the cache), a commit, an `add` that moves the
    recommended mark, a damaged hash, an edited README, a removed entry. After each, `validate --format json`
    with the cache (the run that fills it and the one it answers) is a run without the cache, byte for byte;
    with the cache's saves appended to its journal, and with every save rewriting the whole file."""
    import subprocess

    if saves == "rewritten":
        monkeypatch.setattr(facts, "_JOURNAL_APPEND_MAX", 0)

    from regtools import edit_index, state_train, write_state

    from rwkv_registry.store.ops import add_entry, update_index

    env = {**os.environ, "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}

    def git(*args: str) -> None:
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@e", *args], cwd=reg, env=env, check=True)

    git("init", "-q", "-b", "main")
    git("add", "-A")
    git("commit", "-qm", "publish")
    _report_json(reg, capsys)  # the cache holds the published registry's answers

    def add(i: int, **kw: object) -> None:
        src = write_state(tmp_path / "src" / f"new{i}.pth", seed=100 + i)
        add_entry(reg, src, base=TINY_BASE, data_version="v7", train=state_train("v7"), **kw)  # type: ignore[arg-type]

    def commit() -> None:
        git("add", "-A")
        git("commit", "-qm", "step")

    steps: list[tuple[str, Callable[[], None]]] = [
        ("add", lambda: add(1)),
        ("commit", commit),
        ("add, recommended", lambda: add(2, recommended=True)),
        ("hash damaged", lambda: edit_index(reg, lambda index: index["entries"][0]["file"].update(sha256="0" * 64))),
        ("readme edited", lambda: _edit("README.md", lambda t: t.replace("| Path |", "| Paths |", 1))(reg)),
        ("entry removed", lambda: update_index(reg, lambda index: index["entries"].pop(0))),
        ("commit again", commit),
    ]
    journal = next(Path(os.environ["RWKV_REGISTRY_CACHE_DIR"]).glob("validate-*.json"))
    journal = journal.with_name(journal.stem + ".journal.jsonl")
    seen: set[str] = set()
    for name, step in steps:
        step()
        if name.startswith("add"):
            assert journal.is_file(), name  # the entries add wrote, schema-checked, for the hook to find
        cold = _report_json(reg, capsys, "--no-cache")
        assert _report_json(reg, capsys) == cold, name  # fills the cache
        assert journal.exists() == (saves == "appended"), name  # a rewrite of the file takes the journal in
        assert _report_json(reg, capsys) == cold, name  # answered from it
        assert validate_registry(reg).stats["bytes_hashed"] == 0, name  # every weight file's facts from the cache
        seen |= {f["code"] for f in cold["findings"]}  # type: ignore[attr-defined, index]
    assert {"HSH001", "RDM002", "LAY007"} <= seen


def test_the_hook_after_an_add_checks_no_entry_against_the_schema_again(reg: Path, tmp_path: Path) -> None:
    """`add` journals the schema results of the entries it wrote; the validation after it finds every entry (and
    the rest of index.json) known, and does not even import jsonschema."""
    import subprocess
    import sys

    from regtools import state_train, write_state

    from rwkv_registry.store.ops import add_entry

    probe = (
        "import sys, json\nfrom rwkv_registry.cli.main import main\n"
        "code = main(['validate', sys.argv[1], '--format', 'json'])\n"
        "print('JSONSCHEMA=' + json.dumps('jsonschema' in sys.modules))\n"
    )

    def run() -> tuple[dict[str, object], bool]:
        out = subprocess.run([sys.executable, "-c", probe, str(reg)], capture_output=True, text=True, check=True)
        report, flag = out.stdout.rsplit("JSONSCHEMA=", 1)
        return json.loads(report), json.loads(flag)

    run()  # the cache holds the registry's answers
    add_entry(reg, write_state(tmp_path / "n.pth", seed=9), base=TINY_BASE, data_version="v7", train=state_train("v7"))
    report, imported = run()
    assert imported is False
    assert (
        report["counts"]
        == json.loads(
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "rwkv_registry.cli.main",
                    "validate",
                    str(reg),
                    "--format",
                    "json",
                    "--no-cache",
                ],
                capture_output=True,
                text=True,
            ).stdout
        )["counts"]
    )


def test_the_journal_is_read_line_by_line_and_only_for_this_version(tmp_path: Path) -> None:
    root = tmp_path / "r"
    root.mkdir()
    cache = facts.FactsCache(root)
    assert cache.journal is not None and not cache.journal.exists()
    cache.journal_items({"a" * 40: [[["id"], "x"]]})
    with open(cache.journal, "a") as f:
        f.write(json.dumps({"version": [0, "old"], "items": {"b" * 40: []}}) + "\n")
        f.write('{"version": [1, "cut sh')  # a writer killed mid-line
    read = facts.FactsCache(root)
    assert read.items == {"a" * 40: [[["id"], "x"]]} and read.journaled
    read.put_json("k", 1)
    read.save()
    assert not cache.journal.exists()
    assert facts.FactsCache(root).items == {"a" * 40: [[["id"], "x"]]}  # kept in the cache file


def test_a_deleted_file_leaves_the_cache_through_the_journal(tmp_path: Path) -> None:
    """A save after a cached file was deleted appends it as ``gone`` to the journal (the 4 MB cache file is not
    rewritten for it: the pre-commit hook after an undone `add`); read back, the cache no longer holds it, and a file
    written there again later is cached again."""
    root = tmp_path / "r"
    root.mkdir()
    a, b = str(root / "a.pth"), str(root / "b.pth")
    cache = facts.FactsCache(root)
    one = facts.FileFacts(size=1, sha256="0" * 64, kind="unknown")
    cache.put(a, [1, 1, a, 1, 1, 1], one)
    cache.put(b, [1, 2, b, 1, 1, 1], one)
    cache.save(live=[a, b])
    assert cache.path is not None and cache.journal is not None
    assert set(facts.FactsCache(root).files) == {a, b}
    written = cache.path.read_bytes()
    read = facts.FactsCache(root)
    read.put_json("k", 1)
    read.save(live=[a])  # b deleted
    assert cache.path.read_bytes() == written  # not rewritten: appended
    assert '"gone": [' in cache.journal.read_text()
    assert set(read.files) == {a} and set(facts.FactsCache(root).files) == {a}
    again = facts.FactsCache(root)
    again.put(b, [1, 3, b, 1, 1, 1], one)
    again.save(live=[a, b])
    assert set(facts.FactsCache(root).files) == {a, b}  # the later line puts it back
    final = facts.FactsCache(root)
    final.put_json("k2", 2)
    final.save(live=[a, b, str(root / "c")])
    assert facts.FactsCache(root).get(b, [1, 3, b, 1, 1, 1]) == one


def test_a_shared_miss_target_list_is_checked_against_each_architecture(registry: Path) -> None:
    """Adapters of one base and rank share their cached target list: check_miss checks a list once per
    architecture object it fitted; another architecture (a base of other dimensions), even an equal copy,
    is checked again, and MIS014 is what a fresh run says."""
    from regtools import TINY_ARCH

    from rwkv_registry.engine.facts import FactsCache, FileFacts, gather_facts
    from rwkv_registry.engine.validate import Validator

    rel = f"{TINY_BASE}/miss/v2/r4-a/adapter-final.pth"
    got, _ = gather_facts({rel: registry / rel}, FactsCache(registry, enabled=False))
    f = got[rel]
    assert isinstance(f, FileFacts) and f.targets
    fits = dict(TINY_ARCH)
    wider = {**TINY_ARCH, "n_embd": 2 * TINY_ARCH["n_embd"]}

    def fresh(arch: dict[str, object]) -> list[tuple[str, str, str]]:
        v = Validator(registry, use_cache=False, since=None)
        v.check_miss("x", {}, f, None, arch)
        return [(x.code, x.path, x.message) for x in v.findings]

    v = Validator(registry, use_cache=False, since=None)
    seen = []
    for path, arch in (("a", fits), ("b", fits), ("c", wider), ("d", fits), ("e", dict(fits)), ("f", wider)):
        v.findings = []
        v.check_miss(path, {}, f, None, arch)
        seen.append([(x.code, x.message) for x in v.findings])
        assert [(c, m) for c, _, m in fresh(arch)] == seen[-1], path
    assert seen[0] == seen[1] == seen[3] == seen[4] == []
    assert seen[2] and seen[2] == seen[5] and {c for c, _ in seen[2]} == {"MIS014"}


def test_facts_read_before_a_move_are_cached_only_for_the_same_unwritten_file(tmp_path: Path) -> None:
    """FactsCache.put_read with a key taken at another path (pull reads in a staging directory, then moves the
    folder into place): cached under the new path's key when it is the same inode, size, mtime and ctime; not when
    the file was written since (same size, mtime put back) or another file took its place."""
    from regtools import write_state

    from rwkv_registry.engine.facts import FactsCache, compute_facts, stat_key

    def read(path: Path) -> tuple[list, facts.FileFacts, int]:
        started = time.time_ns() - 10 * facts._SECOND_NS  # clear of the racy window on any clock
        return stat_key(os.stat(path), str(path)), compute_facts(path), started

    cases = {}
    for case in ("moved", "written", "replaced"):
        src = write_state(tmp_path / "staging" / case / "s.pth", seed=1)
        cases[case] = (src, read(src))
    time.sleep(0.01)
    src = cases["written"][0]
    st = src.stat()
    with open(src, "r+b") as f:
        f.seek(st.st_size - 100)
        f.write(b"\xff")
    os.utime(src, ns=(st.st_atime_ns, st.st_mtime_ns))
    other = cases["replaced"][0]
    data = other.read_bytes()
    other.unlink()
    other.write_bytes(data)  # the same bytes in a new inode
    (tmp_path / "staging").rename(tmp_path / "dest")
    cache = FactsCache(tmp_path / "dest")
    for case, (_, (key, f, started)) in cases.items():
        cache.put_read(str(tmp_path / "dest" / case / "s.pth"), key, f, started)
    final = tmp_path / "dest" / "moved" / "s.pth"
    assert set(cache.files) == {str(final)}
    assert cache.get(str(final), stat_key(os.stat(final), str(final))) == cases["moved"][1][1]


def test_the_collector_is_paused_for_the_run_and_restored(registry: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import gc

    from rwkv_registry.engine import validate

    seen: list[bool] = []
    walk = validate.Validator.walk

    def spy(self: validate.Validator) -> validate.Tree:
        seen.append(gc.isenabled())
        return walk(self)

    monkeypatch.setattr(validate.Validator, "walk", spy)
    assert gc.isenabled()
    paused = validate_registry(registry)
    assert seen == [False] and gc.isenabled()  # paused during the run, enabled again after
    gc.disable()
    try:
        assert validate_registry(registry).findings == paused.findings
        assert seen == [False, False] and not gc.isenabled()  # a caller's own pause is left as it was
    finally:
        gc.enable()
    with pytest.raises(RuntimeError), monkeypatch.context() as m:  # restored when a step raises, too
        m.setattr(validate.Validator, "walk", lambda self: (_ for _ in ()).throw(RuntimeError("boom")))
        validate_registry(registry)
    assert gc.isenabled()
    # the writes that read the whole index too: add, here
    from regtools import state_train, write_state

    from rwkv_registry.store import ops

    compute = ops.compute_facts
    monkeypatch.setattr(ops, "compute_facts", lambda p: (seen.append(gc.isenabled()), compute(p))[1])
    src = write_state(registry.parent / "n.pth", seed=5)
    ops.add_entry(registry, src, base=TINY_BASE, data_version="v7", train=state_train("v7"))
    assert seen[-1] is False and gc.isenabled()


def test_the_hook_after_an_add_judges_neither_the_index_nor_the_readme_again(
    reg: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`add` reads the index.json it wrote back with the strict loader, checks and renders that value, and records
    the verdicts on that index.json and README.md: the validation right after parses neither strictly nor renders
    the README, and finds what a run without the cache finds, with a description holding a marker too (before
    issue 26 it made a README that could not be regenerated the same, RDM002; it is now written escaped)."""
    from regtools import state_train, write_state

    from rwkv_registry.formats import jsonload
    from rwkv_registry.index import readme
    from rwkv_registry.store.ops import add_entry

    validate_registry(reg)
    strict, render = jsonload.load_json_bytes, readme.render_bodies
    judged: list[object] = []

    def strict_spy(data: bytes, **kw: object) -> object:
        judged.append(kw.get("path"))
        return strict(data, **kw)  # type: ignore[arg-type]

    def render_spy(index: dict[str, object]) -> tuple[str, str]:
        judged.append("README.md")
        return render(index)

    for i, description in enumerate(["plain", "ends <!-- rwkv-registry:sections:end --> here"]):
        version = f"v{7 + i}"
        src = write_state(tmp_path / f"n{i}.pth", seed=20 + i)
        add_entry(reg, src, base=TINY_BASE, data_version=version, train=state_train(version), description=description)
        judged.clear()
        with monkeypatch.context() as m:
            m.setattr(jsonload, "load_json_bytes", strict_spy)
            m.setattr(readme, "render_bodies", render_spy)
            cached = _seen(validate_registry(reg))
        assert "index.json" not in judged and "README.md" not in judged, judged
        assert cached == _seen(validate_registry(reg, use_cache=False)), description
    # a marker in a description is written escaped (readme._defused): the README regenerates the same, both ways
    assert ("RDM002", "README.md") not in {(c, p) for c, p, _ in cached}


def test_writes_use_the_index_verdict_only_for_the_bytes_it_was_given(reg: Path, tmp_path: Path) -> None:
    """A write reads index.json with json.loads when the cache says the strict loader and the schema accepted these
    very bytes; bytes changed since (here, a duplicate key) are judged again and refused with the loader's words."""
    from regtools import state_train, write_state

    from rwkv_registry.core.errors import RefusedError
    from rwkv_registry.formats import jsonload
    from rwkv_registry.store.ops import add_entry, load_index

    validate_registry(reg)
    calls: list[object] = []
    real = jsonload.load_json_file
    with pytest.MonkeyPatch.context() as m:
        m.setattr(jsonload, "load_json_file", lambda *a, **kw: (calls.append(a[0]), real(*a, **kw))[1])
        assert load_index(reg) == json.loads((reg / "index.json").read_text("utf-8"))
        assert calls == []  # the verdict was used
        text = (reg / "index.json").read_text("utf-8")
        (reg / "index.json").write_text(text.replace("{", '{"schema_version": 1, ', 1), "utf-8")
        with pytest.raises(RefusedError, match="duplicate key"):
            add_entry(reg, write_state(tmp_path / "n.pth"), base=TINY_BASE, data_version="v7", train=state_train("v7"))
        assert len(calls) == 1  # judged by the strict loader


def test_writes_after_a_validation_check_no_known_entry_against_the_schema(
    reg: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """add-base and the index edits read index.json through the cache's verdict, then check the new index with the
    cache's schema results: only what changed (here the rest of the index: a base more) meets jsonschema, not
    every entry again (which made add-base 2.5 times slower at 4,000 entries when this process had no results)."""
    from rwkv_registry import schemas
    from rwkv_registry.store.ops import add_base, update_index

    validate_registry(reg)
    checked = jsonschema_checks(monkeypatch)
    schemas.forget_results()  # a new process
    add_base(reg, name="rwkv7-other-0.1b-20260101-ctx4096", sha256="ab" * 32, arch=TINY_ARCH, source="o/r")
    assert len(checked) == 1 and "entries" in checked[0]  # type: ignore[operator]
    validate_registry(reg)
    checked.clear()
    schemas.forget_results()
    update_index(reg, lambda index: index["registry"].update(title="new title"))
    assert len(checked) == 1 and "entries" in checked[0]  # type: ignore[operator]


@pytest.mark.parametrize("write", ["sums", "add-base", "add", "add-twin"])
def test_writes_given_a_relative_path_take_the_weights_facts_from_the_cache(
    reg: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, write: str
) -> None:
    """A write given the registry as a relative path (`rwkv-registry add-base reg …`) finds the weight files' facts
    that validate cached (by their resolved paths): it parsed every weight file again (42 s instead of 2.7 s for
    add-base at 4,000 entries). Its SHA256SUMS is the one written from the absolute path."""
    from regtools import state_train, write_state

    from rwkv_registry.core.rules import Finding
    from rwkv_registry.store.ops import add_base, add_entry, write_sums

    validate_registry(reg)
    monkeypatch.chdir(reg.parent)
    read: list[str] = []
    real = facts.compute_facts
    monkeypatch.setattr(facts, "compute_facts", lambda p: (read.append(os.fspath(p)), real(p))[1])
    if write == "sums":
        (reg / "SHA256SUMS").write_bytes(b"")
        write_sums("reg")
    elif write == "add-base":
        add_base("reg", name="rwkv7-other-0.1b-20260101-ctx4096", sha256="ab" * 32, arch=TINY_ARCH, source="o/r")
    elif write == "add":
        src = write_state(tmp_path / "src" / "rel.pth", seed=77)
        add_entry("reg", src, base=TINY_BASE, data_version="v7", train=state_train("v7"))
    else:  # the bytes of a registered State: IDX011 reads the other file's facts
        src = tmp_path / "src" / "twin.pth"
        src.parent.mkdir()
        src.write_bytes((reg / TINY_BASE / "state" / "v1" / "s1.pth").read_bytes())
        warned: list[Finding] = []
        add_entry("reg", src, base=TINY_BASE, data_version="v7", train=state_train("v7"), warnings=warned)
        assert "IDX011" in [f.code for f in warned]
    assert read == []  # every weight file of the registry answered by the cache
    sums = (reg / "SHA256SUMS").read_bytes()
    monkeypatch.undo()
    write_sums(reg)
    assert (reg / "SHA256SUMS").read_bytes() == sums


def test_sums_take_the_cached_hash_only_under_the_files_own_stat_key(
    reg: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """compute_sums asks the cache for a weight file's sha256 alone (FactsCache.sha256_of, not its whole facts): the
    hash of get()'s facts, under the same stat key only; a file changed since it was cached is read again."""
    from rwkv_registry.engine.facts import FactsCache, stat_key
    from rwkv_registry.store.ops import compute_sums

    validate_registry(reg)
    cold = compute_sums(reg, cache=FactsCache(reg, enabled=False))
    cache = FactsCache(reg)
    weights = sorted(str(p) for p in reg.resolve().rglob("*.pth"))
    assert weights
    for w in weights:
        key = stat_key(os.stat(w), w)
        assert cache.sha256_of(w, key) == cache.get(w, key).sha256  # type: ignore[union-attr]
        assert cache.sha256_of(w, [*key[:3], key[3] + 1, *key[4:]]) is None  # another size: not this file
    read: list[str] = []
    real = facts.compute_facts
    monkeypatch.setattr(facts, "compute_facts", lambda p: (read.append(os.fspath(p)), real(p))[1])
    assert compute_sums(reg) == cold and read == []
    data = bytearray(Path(weights[0]).read_bytes())
    data[-1] ^= 1  # a byte of the zip's end: the same size, other bytes
    Path(weights[0]).write_bytes(bytes(data))
    changed = compute_sums(reg)
    assert read == [weights[0]] and changed != cold
    assert changed == compute_sums(reg, cache=FactsCache(reg, enabled=False))


def test_the_code_digest_covers_the_writer_that_records_verdicts(monkeypatch: pytest.MonkeyPatch) -> None:
    """`add` (rwkv_registry.store.ops) records verdicts on the files it wrote: its source is part of the code digest,
    read
    beside validate.py (a validation does not import it)."""
    import sys

    from rwkv_registry.engine import validate as v

    v.code_digest.cache_clear()
    first = v.code_digest()
    read = Path.read_bytes
    monkeypatch.setattr(Path, "read_bytes", lambda p: read(p) + (b"# edited" if p.name == "ops.py" else b""))
    v.code_digest.cache_clear()
    try:
        assert v.code_digest() != first
    finally:
        monkeypatch.undo()
        v.code_digest.cache_clear()
    assert v.code_digest() == first
    probe = (
        "import sys, rwkv_registry.engine.validate as v; v.code_digest(); "
        "print('rwkv_registry.store.ops' in sys.modules)"
    )
    import subprocess

    assert subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True).stdout.strip() == "False"


@pytest.mark.parametrize("size", [0, 5, (1 << 20) + 3])  # empty, small, past one 1 MiB step of the two hashers
def test_facts_and_blob_id_from_one_read_equal_the_two_reads(tmp_path: Path, size: int) -> None:
    """A weight kept in plain git: its git blob id and its facts come from one mapping of the file, fed to both
    hashers, and equal what a separate blob id and compute_facts give (a real State file, and odd sizes)."""
    import hashlib

    from regtools import write_state

    from rwkv_registry.checks.git import git_blob_id
    from rwkv_registry.engine.facts import compute_facts, compute_facts_and_blob_id

    files = [write_state(tmp_path / "s.pth", seed=3)] if size == 0 else []
    odd = tmp_path / f"odd-{size}.bin"
    odd.write_bytes(bytes(range(256)) * (size // 256) + b"x" * (size % 256))
    for path in [*files, odd]:
        facts, blob = compute_facts_and_blob_id(path)
        data = path.read_bytes()
        assert blob == git_blob_id(data) == hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
        assert facts == compute_facts(path) and facts.sha256 == hashlib.sha256(data).hexdigest()


def test_smoke_hash_cache_write_that_fails_leaves_no_temporary_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failed write of the smoke hash cache only costs time: the hash is returned, nothing is left behind."""
    import os

    from rwkv_registry.model.smoke import hashcache

    cache = tmp_path / "cache"
    monkeypatch.setenv("RWKV_REGISTRY_CACHE_DIR", str(cache))
    monkeypatch.setattr(hashcache, "racy", lambda key, started: False)
    p = tmp_path / "base.pth"
    p.write_bytes(b"a" * 4096)

    def refuse(src: object, dst: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", refuse)
    digest, cached = hashcache.cached_sha256(p)
    assert not cached and len(digest) == 64
    assert list(cache.iterdir()) == []
    monkeypatch.undo()
    monkeypatch.setenv("RWKV_REGISTRY_CACHE_DIR", str(cache))
    monkeypatch.setattr(hashcache, "racy", lambda key, started: False)
    assert hashcache.cached_sha256(p) == (digest, False)
    assert hashcache.cached_sha256(p) == (digest, True)
    assert [f.name for f in cache.iterdir()] == [hashcache.CACHE_NAME]


# --- the cache is keyed by the checking code (rwkv_registry.core.codekey) ------------------------------------------


def _plant_sha256(sha: str) -> None:
    """Make every cached file's facts claim ``sha`` (what a stale cache would answer)."""
    path = next(Path(os.environ["RWKV_REGISTRY_CACHE_DIR"]).glob("validate-*.json"))
    data = json.loads(path.read_text())
    for entry in data["files"].values():
        entry["facts"]["sha256"] = sha
    path.write_text(json.dumps(data))


@pytest.mark.parametrize("module", ["miss.py", "facts.py", "ckpt.py", "unpickle.py", "miss.schema.json"])
def test_facts_cached_by_other_checking_code_are_not_trusted(
    registry: Path, monkeypatch: pytest.MonkeyPatch, module: str
) -> None:
    """Facts cached by one version of the code that decides them are read again by another: an edit of miss.py
    (the MiSS rules), facts.py, the readers or a schema changes the digest the cache is stamped with. The planted
    lie (every file's sha256) is believed under the same code, and not once the code differs."""
    from rwkv_registry.core import codekey

    assert validate_registry(registry).ok
    _plant_sha256("0" * 64)
    assert "HSH001" in {f.code for f in validate_registry(registry).findings}  # same code: the cache is used
    read = Path.read_bytes
    monkeypatch.setattr(Path, "read_bytes", lambda p: read(p) + (b"\n# edited\n" if p.name == module else b""))
    codekey.code_digest.cache_clear()
    try:
        report = validate_registry(registry)
        assert report.ok and report.stats["cache_hits"] == 0
    finally:
        monkeypatch.undo()
        codekey.code_digest.cache_clear()


def test_the_digest_covers_every_module_computing_facts_or_verdicts_loads(registry: Path) -> None:
    """Computing facts (a State, a MiSS adapter, a legacy package) and the JSON and README verdicts loads only
    modules whose source the digest covers: a module added to that path and not to DECIDING_MODULES fails here."""
    import subprocess
    import sys

    from rwkv_registry.core.codekey import deciding_files

    weights = sorted(str(p) for p in registry.rglob("*.pth"))
    probe = (
        "import sys\n"
        "from pathlib import Path\n"
        "from rwkv_registry.engine.facts import compute_facts\n"
        "from rwkv_registry.checks.json_files import json_verdict\n"
        "from rwkv_registry.checks.readme import readme_verdict\n"
        "from rwkv_registry.engine import validate\n"
        "from rwkv_registry.engine.misspkg import package_facts\n"
        "for p in sys.argv[1:]:\n"
        "    compute_facts(p)\n"
        "package_facts(Path(sys.argv[-1]), Path(sys.argv[-1]))\n"
        "json_verdict('train', b'{}', 'train.json')\n"
        "readme_verdict('text', ('a', 'b'))\n"
        "print(' '.join(sorted(m for m in sys.modules if m.split('.')[0] == 'rwkv_registry')))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe, *weights], capture_output=True, text=True, check=True)
    loaded = set(done.stdout.split())
    covered = {name for name, _ in deciding_files()}
    assert "rwkv_registry.checks.miss" in loaded and loaded <= covered, sorted(loaded - covered)


def test_a_verdict_cached_before_an_edit_of_a_miss_check_is_recomputed_after_it(tmp_path: Path) -> None:
    """End to end, as an upgrade does it: a copy of the package validates a registry whose adapter breaks a MiSS
    rule (the verdict is cached); the copy's miss.py is edited (the rule's message changes, as a fix would change
    the verdict); the next validation, with the same cache directory, says what the edited code says."""
    import shutil
    import subprocess
    import sys

    from regtools import build_registry

    import rwkv_registry
    import rwkv_registry.schemas

    reg = build_registry(tmp_path / "reg", tmp_path)
    rel = f"{TINY_BASE}/miss/v2/r4-a/adapter-final.pth"
    from regtools import custom_miss, refresh

    custom_miss(reg / rel, manifest_edit=lambda m: m.update(layout="blocks"))  # MIS003: unsupported adapter format
    refresh(reg, rel)
    pkg = tmp_path / "pkg"
    shutil.copytree(Path(rwkv_registry.__file__).parent, pkg / "rwkv_registry")
    shutil.copytree(Path(rwkv_registry.schemas.__file__).parent, pkg / "rwkv_registry" / "schemas", dirs_exist_ok=True)
    cache = tmp_path / "cache"
    probe = (
        "import sys\n"
        f"sys.path.insert(0, {str(pkg)!r})\n"
        "import rwkv_registry\n"
        f"assert rwkv_registry.__file__.startswith({str(pkg)!r}), rwkv_registry.__file__\n"
        "from rwkv_registry.engine.validate import validate_registry\n"
        "r = validate_registry(sys.argv[1])\n"
        "print(r.stats['cache_hits'])\n"
        "print('\\n'.join(f.message for f in r.findings if f.code == 'MIS003'))\n"
    )

    def run() -> tuple[int, str]:
        env = dict(os.environ, RWKV_REGISTRY_CACHE_DIR=str(cache))
        out = subprocess.run(
            [sys.executable, "-c", probe, str(reg)], capture_output=True, text=True, check=True, env=env
        ).stdout
        hits, _, messages = out.partition("\n")
        return int(hits), messages

    hits, before = run()
    assert hits == 0 and "(unsupported adapter format)" in before
    hits, again = run()
    assert hits == 3 and again == before  # cached: the adapter is not read again
    miss_py = pkg / "rwkv_registry" / "checks" / "miss.py"
    miss_py.write_text(miss_py.read_text().replace("(unsupported adapter format)", "(EDITED RULE)"))
    hits, after = run()
    assert hits == 0 and "(EDITED RULE)" in after and "(unsupported adapter format)" not in after


SECOND = 10**9


def test_whole_second_times_are_racy_up_to_but_not_at_the_coarse_step() -> None:
    """G13: ``>=`` for ``>`` held a file whose whole-second times lie exactly one coarse step (2 s) before the
    start as racy: a write after the start gets a later stamp even on FAT's 2 s clock, so its facts may be
    cached. One nanosecond less than the step is still racy."""
    now = 1_800_000_000 * SECOND
    step_old = now - RACY_COARSE_NS
    assert not racy([0, 0, "p", 1, step_old, step_old], now)
    assert racy([0, 0, "p", 1, step_old, step_old], now - 1)
    assert racy([0, 0, "p", 1, step_old, now - SECOND], now)  # the newer of the two times decides


def _weights(reg: Path) -> list[str]:
    return sorted(str(p) for p in reg.resolve().rglob("*.pth"))


def test_a_cached_sha256_that_is_not_a_string_is_no_answer(reg: Path) -> None:
    validate_registry(reg)
    cache = FactsCache(reg)
    w = _weights(reg)[0]
    key = stat_key(os.stat(w), w)
    assert isinstance(cache.sha256_of(w, key), str)
    for bad in (None, 5, ["0" * 64]):
        cache.files[w]["facts"]["sha256"] = bad
        assert cache.sha256_of(w, key) is None, bad
    cache.files[w]["facts"] = "not a dict"
    assert cache.sha256_of(w, key) is None


def test_compute_sums_asks_for_the_hash_alone(reg: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every weight file validate cached is answered by sha256_of under its own stat key: get() (which builds
    the whole facts) is not asked, for an absolute or a relative registry path."""
    validate_registry(reg)
    cold = compute_sums(reg, cache=FactsCache(reg, enabled=False))
    asked: list[str] = []
    real = FactsCache.get
    monkeypatch.setattr(FactsCache, "get", lambda self, path, key: (asked.append(path), real(self, path, key))[1])
    assert compute_sums(reg) == cold
    monkeypatch.chdir(reg.parent)
    assert compute_sums(Path(reg.name)) == cold
    assert [p for p in asked if p.endswith(".pth")] == []


def _malform(entry: dict[str, Any], how: str) -> None:
    facts = entry["facts"]
    if how == "size missing":
        del facts["size"]
    elif how == "unknown field":
        facts["colour"] = "blue"
    elif how == "size not an integer":
        facts["size"] = "12"
    elif how == "kind not a string":
        facts["kind"] = None
    elif how == "blob not stored":
        entry["blobs"] = {"tensors": "0" * 32}
        facts["tensors"] = None
    elif how == "blob of an unknown field":
        entry["blobs"] = {"colour": next(iter(entry.get("blobs", {}).values()), "0" * 32)}
    elif how == "inline tensors not a list":
        entry.pop("blobs", None)
        facts["tensors"] = 5
    elif how == "inline tensor not a list":
        entry.pop("blobs", None)
        facts["tensors"] = [["a", "float32", [1]], 7]
    elif how == "manifest targets without a manifest":
        entry["blobs"] = {"manifest.targets": next(iter(entry.get("blobs", {}).values()), "0" * 32)}
        facts["manifest"] = None


_MALFORMED = [
    "size missing",
    "unknown field",
    "size not an integer",
    "kind not a string",
    "blob not stored",
    "blob of an unknown field",
    "inline tensors not a list",
    "inline tensor not a list",
    "manifest targets without a manifest",
]


@pytest.mark.parametrize("how", _MALFORMED)
def test_sha256_of_answers_exactly_when_get_does(reg: Path, how: str) -> None:
    """A cache entry get() cannot make facts of (a damaged or hand-edited cache file) gives no hash either: the
    two share one check (FactsCache._entry). sha256_of used to look at the sha256 field alone and answered for
    all of these, and get() answered for a size or kind of the wrong type."""
    validate_registry(reg)
    cache = FactsCache(reg)
    w = _weights(reg)[0]
    key = stat_key(os.stat(w), w)
    facts = cache.get(w, key)
    assert facts is not None and cache.sha256_of(w, key) == facts.sha256
    cache.files[w] = copy.deepcopy(cache.files[w])
    _malform(cache.files[w], how)
    assert cache.get(w, key) is None
    assert cache.sha256_of(w, key) is None


def test_a_blob_tensor_list_that_is_no_list_of_lists_is_no_answer(reg: Path) -> None:
    """A stored tensor blob that is no list of lists: neither get() nor sha256_of answers for the entries using it,
    and get() does not raise."""
    validate_registry(reg)
    cache = FactsCache(reg)
    w = _weights(reg)[0]
    key = stat_key(os.stat(w), w)
    entry = cache.files[w]
    entry["blobs"] = {"tensors": "f" * 32}
    entry["facts"]["tensors"] = None
    cache.blobs["f" * 32] = [["a", "float32", [1]], 3]
    assert cache.get(w, key) is None
    assert cache.sha256_of(w, key) is None
