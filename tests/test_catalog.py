"""The catalogue behind `list`, `show` and the TUI: reading, caching, mapping findings, commands."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from regtools import TINY_BASE, TINY_SHA, build_registry, edit_index, miss_train, write_miss

from rwkv_registry.catalog.entries import (
    Catalog,
    EntryFilter,
    FindingIndex,
    NodeRef,
    side_by_side,
    version_prefix,
    worst_status,
)
from rwkv_registry.catalog.render import (
    BarChart,
    fold_same,
)
from rwkv_registry.cli.main import main
from rwkv_registry.core.errors import RegistryError, UsageError
from rwkv_registry.core.rules import finding
from rwkv_registry.engine.validate import validate_registry
from rwkv_registry.store.ops import update_index

STATE_PATH = f"{TINY_BASE}/state/v1/s1.pth"
MISS_A = f"{TINY_BASE}/miss/v2/r4-a/adapter-final.pth"


def exam(score: float, date: str) -> dict:
    return {
        "benchmark": "exam",
        "date": date,
        "score": score,
        "unit": "percent",
        "solved": None,
        "total": 568,
        "runs": 2,
        "backend": None,
        "note": None,
        "report": None,
    }


def old_miss(scores: list[dict]) -> dict:
    """A MiSS weight of the tiny base never uploaded, with ``scores``."""
    return {
        "id": "old-miss",
        "base": TINY_BASE,
        "method": "miss",
        "data": {"version": "v1", "rows": None, "sha256": None},
        "description": "never uploaded",
        "scores": scores,
    }


@pytest.fixture
def scored(registry: Path) -> Path:
    def edit(index: dict) -> None:
        index["bases"][0]["scores"] = [exam(20.0, "2026-01-05")]
        by_id = {e["id"]: e for e in index["entries"]}
        by_id["s1"]["scores"] = [exam(40.0, "2026-01-05")]
        by_id["v2-r4-a"]["scores"] = [exam(50.0, "2026-01-06"), exam(48.0, "2026-01-01")]
        by_id["v2-r4-b"]["scores"] = [exam(45.5, "2026-01-06")]
        index["unpublished"] = [old_miss([exam(30.0, "2026-01-06")])]

    update_index(registry, edit)
    return registry


# --- filter -------------------------------------------------------------------------------------------


def test_filter_parsing_and_matching() -> None:
    f = EntryFilter.parse("r4 method:MiSS base:tiny data:2 is:rec")
    assert (f.words, f.method, f.base, f.data_version, f.flags) == (("r4",), "miss", "tiny", "2", ("rec",))
    e = {"id": "v2-r4-a", "base": TINY_BASE, "method": "miss", "data": {"version": "v2"}, "recommended": True}
    assert f.matches(e)
    assert not f.matches({**e, "recommended": False})
    assert not f.matches({**e, "data": {"version": "v1.41"}})
    assert not EntryFilter.parse("method:state").matches(e)
    assert EntryFilter.parse("data:v2").matches(e) and not EntryFilter.parse("data:v20").matches(e)
    assert EntryFilter.parse("is:error").matches(e, status="error")
    assert not EntryFilter.parse("is:error").matches(e, status="ok")
    assert EntryFilter.parse("is:frozen").matches(e, base_status="frozen")
    assert EntryFilter.parse("nosuch:x r4").words == ("nosuch:x", "r4")  # unknown keys are plain words
    assert not EntryFilter.parse("").active and EntryFilter.parse("x").active
    bogus = EntryFilter.parse("is:bogus")  # an unknown flag keeps everything, and the status line says so
    assert bogus.matches(e) and "is:bogus ignored" in bogus.describe()
    for typing in ("method:", "is:", "data: r4", "B:"):  # a term still being typed keeps everything but its words
        half = EntryFilter.parse(typing)
        assert half.matches(e) and "without a value ignored" in half.describe(), typing
    assert EntryFilter.parse("data: r4").words == ("r4",) and not EntryFilter.parse("method:").active
    assert not EntryFilter.parse("method: r9").matches(e)


@pytest.mark.parametrize(
    ("query", "kept"),
    [
        ("data:v2", ["v2", "v2.1", "v2.1.3", "v2-foo", "v2_x", "v2b"]),
        ("d:2", ["v2", "v2.1", "v2.1.3", "v2-foo", "v2_x", "v2b"]),
        ("data:v2.1", ["v2.1", "v2.1.3"]),
        ("data:v2.", ["v2.1", "v2.1.3"]),
        ("data:v1.4", ["v1.4", "v1.4.2"]),
        ("data:v1.41", ["v1.41"]),
        ("data:V20", ["v20"]),
        ("data:v2-f", []),
        ("data:v", ["v2", "v2.1", "v2.1.3", "v2-foo", "v2_x", "v2b", "v20", "v21", "v1.4", "v1.41", "v1.4.2"]),
    ],
)
def test_the_data_filter_is_a_prefix_that_ends_at_a_version_boundary(query: str, kept: list[str]) -> None:
    """``data:v1.4`` kept v1.41 and ``data:v2`` kept v20 and v21 (a plain text prefix): the prefix must
    end where the version does, or at a boundary of it (a separator, or between a number and a word)."""
    versions = ["v2", "v2.1", "v2.1.3", "v2-foo", "v2_x", "v2b", "v20", "v21", "v1.4", "v1.41", "v1.4.2"]
    f = EntryFilter.parse(query)
    assert [v for v in versions if f.matches({"id": "x", "data": {"version": v}})] == kept
    assert version_prefix("", "v2") and not version_prefix("v2", "")  # never an IndexError
    assert version_prefix("v2-", "v2-x") and not version_prefix("v2-", "v2--x")  # nor a run of separators


def test_worst_status_order() -> None:
    assert worst_status(["ok", "warning", "checking"]) == "warning"
    assert worst_status(["ok", "error", "warning"]) == "error"
    assert worst_status([]) == "unchecked"


# --- reading -------------------------------------------------------------------------------------------


def test_catalog_reads_index_and_groups(registry: Path) -> None:
    cat = Catalog(registry)
    assert cat.name == "test/registry" and cat.error is None
    assert [e["id"] for e in cat.entries] == ["s1", "v2-r4-a", "v2-r4-b"]
    grouped = cat.grouped()
    assert list(grouped) == [TINY_BASE]
    assert list(grouped[TINY_BASE]) == ["state", "miss"]
    assert [e["id"] for e in grouped[TINY_BASE]["miss"]["v2"]] == ["v2-r4-a", "v2-r4-b"]
    assert [e["id"] for e in cat.entries_under(NodeRef("version", TINY_BASE, "miss", "v2"))] == ["v2-r4-a", "v2-r4-b"]
    with pytest.raises(UsageError, match=r"no entry or base 'v2-r4-x'") as info:
        cat.entry("v2-r4-x")
    assert "v2-r4-a" in info.value.hint


def test_index_changes_are_picked_up_and_a_broken_index_is_reported(registry: Path) -> None:
    cat = Catalog(registry)
    assert not cat.refresh()  # unchanged: not read again
    (registry / "index.json").write_text("{ not json")
    assert cat.refresh()
    assert cat.entries == [] and cat.error is not None and "index.json: line 1" in cat.error
    with pytest.raises(RegistryError, match=r"index\.json"):
        cat.require_index()


def test_train_json_is_cached_by_stat(registry: Path) -> None:
    cat = Catalog(registry)
    e = cat.entry("v2-r4-b")
    info, effective = cat.effective_train(e)
    assert info.rel == f"{TINY_BASE}/miss/v2/train.json"
    assert effective is not None and "runs" not in effective and effective["run"]["group"] == "r4-b"
    reads = cat.reads
    cat.effective_train(e)
    cat.train(info.rel)
    assert cat.reads == reads
    path = registry / info.rel
    data = json.loads(path.read_text())
    data["command"] = "changed"
    path.write_text(json.dumps(data))
    assert cat.train(info.rel).data["command"] == "changed" and cat.reads == reads + 1
    path.unlink()
    assert cat.train(info.rel).data is None and "does not exist" in cat.train(info.rel).error


def test_miss_summary_reads_only_the_header(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = build_registry(tmp_path / "reg", tmp_path, with_miss=False)
    from rwkv_registry.store.ops import add_entry

    big = tmp_path / "big" / "adapter-final.pth"
    manifest = write_miss(big, rank=64, alpha=128, seed=3)
    train = miss_train(groups=("r64",), hyperparameters={"rank": 64, "alpha": 128, "ctx": 4096})  # TRN008
    add_entry(root, big, base=TINY_BASE, data_version="v2", train=train, group="r64")
    import rwkv_registry.engine.facts as facts
    import rwkv_registry.formats.ckpt as ckpt

    monkeypatch.setattr(facts, "compute_facts", lambda *_a, **_k: pytest.fail("the catalogue must not hash"))
    read = []
    real = ckpt.FileSource.read
    monkeypatch.setattr(ckpt.FileSource, "read", lambda self, off, n: read.append(n) or real(self, off, n))
    cat = Catalog(root)
    s = cat.miss_summary(cat.entry("v2-r64"))
    assert s is not None and s.source == "header" and s.error is None
    assert (s.rank, s.alpha, s.content_version, s.base_fingerprint) == (64, 128, manifest["content_version"], TINY_SHA)
    assert s.targets == 12 and s.layers == 2
    size = big.stat().st_size
    assert sum(read) < size / 10, (sum(read), size)
    assert cat.miss_summary(cat.entry("s1")) is None


def test_miss_summary_uses_the_validation_cache(registry: Path) -> None:
    validate_registry(registry)
    cat = Catalog(registry)
    s = cat.miss_summary(cat.entry("v2-r4-a"))
    assert s is not None and s.source == "validation cache"
    assert s.recomputed == s.content_version == cat.entry("v2-r4-a")["miss"]["content_version"]


def test_usage_commands_follow_the_seed_readme(registry: Path) -> None:
    cat = Catalog(registry)
    state = cat.usage(cat.entry("s1"))
    assert state.command == f"rwkv-cli state upload --api-url <URL> --file {STATE_PATH}"
    assert "--profile g1k " in state.then + " " and "--sampling g1k-agent" in state.then
    miss = cat.usage(cat.entry("v2-r4-a"), api_url="http://gpu:8000")
    assert miss.command == f"rwkv-cli adapter register --api-url http://gpu:8000 --adapter-id v2-r4-a --file {MISS_A}"
    assert "--profile g1k-think" in miss.then and miss.text == miss.command + "\n" + miss.then


# --- findings ------------------------------------------------------------------------------------------------


def test_findings_map_to_entries_by_path_prefix(registry: Path) -> None:
    cat = Catalog(registry)
    fs = [
        finding("HSH001", MISS_A, "sha256 differs"),
        finding("TRN006", f"{TINY_BASE}/miss/v2/train.json", "commit not recorded"),
        finding("TRN001", f"{TINY_BASE}/state/v1", "no train.json"),
        finding("IDX004", "index.json", "2 entries of base x and method miss are recommended"),
        finding("PRF002", "index.json", "entry 's1' is a State with profile g1k-think"),
        finding("RDM002", "README.md", "differs"),
    ]
    idx = FindingIndex(fs, cat.entries)
    assert [f.code for f in idx.for_entry("v2-r4-a")] == ["HSH001", "TRN006"]
    assert [f.code for f in idx.for_entry("v2-r4-b")] == ["TRN006"]
    assert [f.code for f in idx.for_entry("s1")] == ["TRN001", "PRF002"]
    assert [f.code for f in idx.registry_level] == ["IDX004", "RDM002"]
    assert idx.status("v2-r4-a") == "error" and idx.status("v2-r4-b") == "ok"  # TRN006 is a note
    assert [f.code for f in idx.under(f"{TINY_BASE}/state", ["s1"])] == ["TRN001", "PRF002"]


# --- scores and comparison -------------------------------------------------------------------------------------


def test_score_bars_across_a_base(scored: Path) -> None:
    cat = Catalog(scored)
    assert cat.benchmarks(TINY_BASE) == [("exam", "percent")]
    bars = cat.score_bars(TINY_BASE, "exam", "percent", current="v2-r4-b")
    assert [(b.label, b.score, b.kind) for b in bars] == [
        ("v2-r4-a", 50.0, "entry"),
        ("v2-r4-a", 48.0, "entry"),
        ("v2-r4-b", 45.5, "entry"),
        ("s1", 40.0, "entry"),
        ("old-miss", 30.0, "unpublished"),
        ("base alone", 20.0, "base"),
    ]
    assert [b.current for b in bars] == [False, False, True, False, False, False]
    only = cat.score_bars(TINY_BASE, "exam", "percent", only=["s1"])
    assert [b.label for b in only] == ["s1", "base alone"]


def test_bar_chart_scales_to_its_width() -> None:
    from io import StringIO

    from rich.console import Console

    from rwkv_registry.catalog.entries import Bar

    chart = BarChart(
        "exam",
        [
            Bar("a", 50.0, "percent", "2026-01-01", "entry", "a", current=True),
            Bar("b", 25.0, "percent", "2026-01-01", "entry", "b"),
        ],
    )
    for width in (40, 80):
        out = StringIO()
        Console(file=out, width=width, color_system=None).print(chart)
        lines = out.getvalue().splitlines()
        a, b = lines[1], lines[2]
        assert a.startswith("▶ a ") and b.startswith("  b ")
        bar_w = width - (2 + 1 + 1 + 1 + 5)  # marker, label, spaces, "50.0%"
        assert a.count("█") == bar_w // 2 and b.count("█") == bar_w // 4
        assert "all on 2026-01-01" in lines[3]


def test_side_by_side_and_folding() -> None:
    rows = side_by_side(["a", "b", "c", "d"], ["a", "B", "c", "d", "e"])
    assert rows == [("=", "a", "a"), ("~", "b", "B"), ("=", "c", "c"), ("=", "d", "d"), ("+", "", "e")]
    assert side_by_side(["x", "y"], ["y"]) == [("-", "x", ""), ("=", "y", "y")]
    long = [("=", str(i), str(i)) for i in range(10)] + [("~", "a", "b")]
    folded = fold_same(long, 2)
    assert folded[0] is None and [r[1] for r in folded[1:] if r] == ["8", "9", "a"]
    assert fold_same(long, -1) == long


def test_compare_two_miss_entries(scored: Path) -> None:
    cat = Catalog(scored)
    cmp = cat.compare(cat.entry("v2-r4-a"), cat.entry("v2-r4-b"))
    differing = {label for label, a, b in cmp.fields if a != b}
    assert differing == {"id", "group", "recommended"}
    assert ("~", '    "group": "r4-a",', '    "group": "r4-b",') in cmp.train_rows
    (d,) = cmp.scores
    assert d.a["score"] == 50.0 and d.b["score"] == 45.5 and d.delta == pytest.approx(-4.5) and d.same_day
    cross = cat.compare(cat.entry("s1"), cat.entry("v2-r4-a"))
    (d,) = cross.scores
    assert d.delta == pytest.approx(10.0) and not d.same_day
    assert cross.train_changes > 5
    (d,) = cmp.scores
    other = dataclasses.replace(d, b=dict(d.b, backend="another backend"))  # same day, another backend
    assert d.same_day and not other.same_day and not other.same_backend


# --- the commands ----------------------------------------------------------------------------------------------


def test_list_json_and_text(registry: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list", str(registry), "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    index = json.loads((registry / "index.json").read_text())
    assert [e["id"] for e in out["entries"]] == [e["id"] for e in index["entries"]]
    row = out["entries"][1]
    assert row["path"] == MISS_A and row["sha256"] == index["entries"][1]["file"]["sha256"]
    assert row["adapter_id"] == "v2-r4-a" and row["base_status"] == "active" and row["recommended"] is True
    assert main(["list", str(registry)]) == 0
    text = capsys.readouterr().out
    assert all(i in text for i in ("s1", "v2-r4-a", "v2-r4-b", TINY_BASE))


def test_list_filter_keeps_what_the_tui_filter_box_keeps(registry: Path, capsys: pytest.CaptureFixture[str]) -> None:
    index = json.loads((registry / "index.json").read_text())

    def listed(query: str) -> list[str]:
        assert main(["list", str(registry), "--filter", query, "--format", "json"]) == 0
        out = json.loads(capsys.readouterr().out)
        assert out["filter"] == {"query": query, "kept": len(out["entries"]), "of": len(index["entries"])}
        return [e["id"] for e in out["entries"]]

    assert listed("method:miss") == ["v2-r4-a", "v2-r4-b"]
    assert listed("is:rec") == [e["id"] for e in index["entries"] if e.get("recommended") is True]
    assert listed("r4-b") == ["v2-r4-b"]
    assert listed("data:v2 is:ok") == ["v2-r4-a", "v2-r4-b"]
    assert listed("is:error") == []
    # a status term validates first: one damaged adapter is the one error
    path = registry / f"{TINY_BASE}/miss/v2/r4-b/adapter-final.pth"
    data = bytearray(path.read_bytes())
    data[-100] ^= 0xFF
    path.write_bytes(bytes(data))
    assert listed("is:error") == ["v2-r4-b"]
    assert listed("is:ok") == ["s1", "v2-r4-a"]
    # no filter: no "filter" block, every entry
    assert main(["list", str(registry), "--format", "json"]) == 0
    assert "filter" not in json.loads(capsys.readouterr().out)
    assert main(["list", str(registry), "--filter", "is:error"]) == 0
    text = capsys.readouterr().out
    assert "1 of 3 entries (is error)" in text and "v2-r4-b" in text and "v2-r4-a" not in text
    assert main(["list", str(registry), "--filter", "nothing-has-this"]) == 0
    text = capsys.readouterr().out
    assert "0 of 3 entries" in text and TINY_BASE not in text
    assert main(["list", str(registry), "--filter", "is:bogus"]) == 2
    err = capsys.readouterr().err
    assert "is:bogus is not a filter term" in err and "is: takes rec, frozen, active, error, warning or ok" in err
    assert main(["list", str(registry), "--filter", "method: r4"]) == 2
    err = capsys.readouterr().err
    assert "--filter 'method: r4': method: has no value" in err and "hint: Give one after the colon" in err


def test_list_filter_refuses_an_unknown_field_with_the_nearest_one(
    reg: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`methd:miss` matched nothing, silently (a plain word to the filter): a usage error naming the field meant
    and every field; the TUI's box says the same in its description."""
    assert main(["list", str(reg), "--filter", "methd:miss"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.splitlines()[0] == "error: --filter 'methd:miss': methd: is not a filter field (did you mean method:?)"
    assert "hint: The fields are method:, m:, base:, b:, data:, d:, version:, v:, is:;" in err
    assert main(["list", str(reg), "--filter", "r4 colour:red"]) == 2
    assert "colour: is not a filter field\n" in capsys.readouterr().err  # nothing near: no suggestion
    flt = EntryFilter.parse("methd:miss r4")
    assert "methd: is not a filter field (did you mean method:?)" in flt.describe()
    assert main(["list", str(reg), "--filter", "m:miss", "--format", "json"]) == 0  # the short keys are fields


def test_show_entry_base_and_unknown(scored: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["show", "v2-r4-b", "--path", str(scored), "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["kind"] == "entry" and out["entry"]["id"] == "v2-r4-b"
    assert out["train"]["effective"]["run"]["group"] == "r4-b" and out["train"]["error"] is None
    assert out["miss"]["content_version"] == out["entry"]["miss"]["content_version"]
    assert out["fingerprint_matches"] is True
    assert out["usage"]["command"].startswith("rwkv-cli adapter register --api-url <URL> --adapter-id v2-r4-b")
    assert [b["label"] for b in out["charts"][0]["bars"] if b["current"]] == ["v2-r4-b"]
    assert main(["show", "v2-r4-b", "--path", str(scored)]) == 0
    text = capsys.readouterr().out
    assert "rwkv-cli adapter register --api-url <URL> --adapter-id v2-r4-b --file" in text
    assert "✓ matches base" in text and "▶ r4-b" in text
    assert main(["show", TINY_BASE, "--path", str(scored), "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["kind"] == "base" and out["entries"] == ["s1", "v2-r4-a", "v2-r4-b"]
    assert main(["show", "v2-r4", "--path", str(scored)]) == 2
    err = capsys.readouterr().err
    assert "no entry or base 'v2-r4'" in err and "Did you mean" in err


def test_commands_refuse_a_directory_without_index(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list", str(tmp_path)]) == 2
    assert f"{tmp_path} is not a registry (no index.json)" in capsys.readouterr().err
    assert main(["list", str(tmp_path / "nowhere")]) == 2
    assert "not a directory" in capsys.readouterr().err
    (tmp_path / "index.json").write_text("[1,")
    assert main(["show", "x", "--path", str(tmp_path)]) == 2
    assert "index.json: line 1" in capsys.readouterr().err


def test_tui_command_refuses_a_missing_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tui", str(tmp_path / "nowhere")]) == 2
    assert "not a directory" in capsys.readouterr().err


PROBE = """
import sys, json
from rwkv_registry.cli.main import main
from rwkv_registry.core.errors import RegistryError, UsageError
codes = [main(["list", sys.argv[1], "--format", "json"]), main(["show", "v2-r4-a", "--path", sys.argv[1]])]
codes.append(main(["show", "--path", sys.argv[1]]))
print("RESULT=" + json.dumps({"codes": codes, "textual": "textual" in sys.modules, "torch": "torch" in sys.modules}))
"""


def test_list_and_show_never_import_textual(registry: Path) -> None:
    out = subprocess.run([sys.executable, "-c", PROBE, str(registry)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout.rsplit("RESULT=", 1)[1])
    assert result == {"codes": [0, 0, 0], "textual": False, "torch": False}


def test_show_renders_categories_run_scores_and_stacking(registry: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Seed 003's per-category results, single runs and a State trained on top of an adapter appear in `show`."""

    def edit(index: dict) -> None:
        s1 = next(e for e in index["entries"] if e["id"] == "s1")
        s1["on_top_of"] = "v2-r4-a"
        s1["scores"] = [
            dict(
                exam(70.7, "2026-01-05"),
                solved=58,
                total=82,
                run_scores=[57, 59],
                by_category={"abstention": {"solved": 12, "total": 17}},
            )
        ]

    update_index(registry, edit)
    assert validate_registry(registry, use_cache=False).ok
    assert main(["show", "s1", "--path", str(registry)]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "v2-r4-a (trained and used with it)" in text
    assert "2 runs (57, 59)" in text and "abstention 12/17" in text


def test_schema_findings_of_an_entry_belong_to_that_entry(registry: Path) -> None:
    """SCH002 names the entry by its position ($.entries[N]); the TUI must still mark that entry."""
    from rwkv_registry.catalog.entries import Catalog, FindingIndex

    def edit(index: dict) -> None:
        index["entries"][1]["miss"] = "nope"

    p = registry / "index.json"
    data = json.loads(p.read_text())
    edit(data)
    p.write_text(json.dumps(data, indent=2))
    report = validate_registry(registry, use_cache=False)
    assert any(f.code == "SCH002" for f in report.findings)
    cat = Catalog(registry)
    found = FindingIndex(report.findings, cat.entries, cat.index_entries)
    eid = cat.index_entries[1]["id"]
    assert found.status(eid) == "error" and any(f.code == "SCH002" for f in found.for_entry(eid))
    assert all(f.code != "SCH002" for f in found.for_entry(cat.index_entries[0]["id"]))  # only the broken one


def _list_registry(root: Path, n: int) -> Path:
    """index.json alone (what `list` reads): two bases (one frozen, one empty), a base only entries
    name, and cells that wrap, fold, hold wide or control characters, markup, or nothing."""
    descriptions = [
        "generated state",
        "a longer description that has to wrap over several lines in a narrow terminal",
        "averyveryverylongwordthatcannotwrapanywhereandmustbefoldedbyrichitself",
        "",
        "中文说明：宽字符占两格，折行时按格数计算",
        "line one\nline two",
        "tab\there",
        "[bold]not markup[/] and [/]",
        "  leading and trailing spaces  ",
    ]
    bases = [
        {"name": "rwkv7-old-20250101-ctx4096", "status": "frozen"},
        {"name": "rwkv7-new-20260101-ctx4096", "status": "active"},
        {"name": "rwkv7-empty-20270101-ctx4096", "status": "active"},
    ]
    entries = []
    for i in range(n):
        base = ("rwkv7-old-20250101-ctx4096", "rwkv7-new-20260101-ctx4096", "rwkv7-elsewhere")[i % 3]
        method = ("state", "miss", "other")[i % 7 % 3]
        entries.append(
            {
                "id": f"e{i}" + ("-with-a-long-id" if i % 5 == 0 else ""),
                "base": base,
                "method": method,
                "data": {"version": f"v{i % 4}.{i % 11}"},
                "file": {"size": (i * 7919) ** 2 if i % 6 else None},
                "recommended": i % 4 == 0 or ("yes" if i % 9 == 0 else False),
                "profile": ("g1k", "g1k-think", None)[i % 3],
                "description": descriptions[i % len(descriptions)] + (f" #{i}" if i % 2 else ""),
            }
        )
    root.mkdir()
    (root / "index.json").write_text(json.dumps({"registry": {"name": "gen/list"}, "bases": bases, "entries": entries}))
    return root


@pytest.mark.parametrize("width", [30, 80, 200])
def test_list_table_laid_out_by_hand_is_what_rich_prints(
    tmp_path: Path, width: int, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`list` pads rows itself instead of having rich lay out each one (docs/scale.md); the bytes
    must be those rich prints, at any width, whatever the cells hold."""
    import rwkv_registry.catalog.render as render

    root = _list_registry(tmp_path / "reg", 60)
    monkeypatch.setenv("COLUMNS", str(width))
    monkeypatch.setattr(render, "PLAIN_LIST", False)
    assert main(["list", str(root)]) == 0
    through_rich = capsys.readouterr().out
    monkeypatch.setattr(render, "PLAIN_LIST", True)
    laid_out: list[bool] = []
    real = render._plain_list_lines

    def spy(console: Any, title: str, rows: Any) -> Any:
        lines = real(console, title, rows)
        laid_out.append(lines is not None or not rows)
        return lines

    monkeypatch.setattr(render, "_plain_list_lines", spy)
    assert main(["list", str(root)]) == 0
    assert capsys.readouterr().out == through_rich
    if width >= 80:  # a narrow terminal crops cells, which only rich does
        assert "e1 " in through_rich and "(no entries)" in through_rich and "中文说明" in through_rich
        assert laid_out and all(laid_out), laid_out


def test_a_time_with_an_offset_and_one_without_give_no_duration(
    registry: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """train.json's started with an offset and finished without one (or a run's) made `show` and the
    TUI's Train tab crash: subtracting an offset-naive from an offset-aware datetime raises TypeError."""
    from rwkv_registry.catalog.entries import duration_text

    assert duration_text("2026-10-12T08:00:00Z", "2026-10-12T09:00:00") == ""
    assert duration_text("2026-10-12T08:00:00", "2026-10-12T09:30:00") == "1 h 30 min"  # both without: comparable
    path = registry / TINY_BASE / "miss" / "v2" / "train.json"
    train = json.loads(path.read_text())
    train["finished"] = "2026-10-12T10:00:00"
    train["runs"][1]["finished"] = "2026-10-12T09:00:00"
    path.write_text(json.dumps(train))
    assert main(["show", "v2-r4-b", "--path", str(registry)]) == 0
    lines = [line.strip() for line in capsys.readouterr().out.splitlines()]
    assert "finished 2026-10-12T10:00:00" in [" ".join(line.split()) for line in lines]
    assert "2026-10-12T08:00:00Z → 2026-10-12T09:00:00" in lines  # no duration for run r4-b


def test_list_shows_the_frozen_tag_of_a_base(registry: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The title of a frozen base's table said just its name: ``"NAME [frozen]"`` was handed to rich
    as a string, whose markup took ``[frozen]`` for a style tag and printed nothing of it."""
    edit_index(registry, lambda index: index["bases"][0].update(status="frozen"))
    assert main(["list", str(registry)]) == 0
    assert f"{TINY_BASE} [frozen]" in capsys.readouterr().out.splitlines()[1]


def test_show_entry_names_its_base_sha256_and_scores_as_recorded(
    registry: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Seed 000 identifies the base by its sha256 first, and writes means of runs with one decimal (46.0%,
    41.0/60): `show` prints both as recorded, as the generated README does."""

    def edit(index: dict) -> None:
        s1 = next(e for e in index["entries"] if e["id"] == "s1")
        s1["scores"] = [dict(exam(46.0, "2026-01-05"), solved=261.0, total=568, runs=2, run_scores=[45.0, 47])]

    update_index(registry, edit)
    assert validate_registry(registry, use_cache=False).ok
    base_sha = json.loads((registry / "index.json").read_text())["bases"][0]["sha256"]
    assert main(["show", "s1", "--path", str(registry)]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert f"base sha256 {base_sha}" in text
    assert "46.0%" in text and "261.0/568" in text and "2 runs (45.0, 47)" in text


def test_show_a_weight_never_uploaded(scored: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The scores chart names weights never uploaded (†); `show` takes their id too (seed 000 lists one)."""
    assert main(["show", "old-miss", "--path", str(scored)]) == 0
    text = " ".join(capsys.readouterr().out.split())
    base_sha = json.loads((scored / "index.json").read_text())["bases"][0]["sha256"]
    assert "old-miss MiSS † never uploaded" in text and f"base sha256 {base_sha}" in text
    assert "note never uploaded" in text and "exam 2026-01-06 30.0%" in text and "▶ old-miss†" in text
    assert main(["show", "old-miss", "--path", str(scored), "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["kind"] == "unpublished" and out["unpublished"]["id"] == "old-miss"
    assert out["base"] == {"name": TINY_BASE, "status": "active", "sha256": base_sha}
    bars = out["charts"][0]["bars"]
    assert [b["label"] for b in bars if b["current"]] == ["old-miss"]
    assert sorted(b["kind"] for b in bars) == ["base", "entry", "entry", "entry", "entry", "unpublished"]
    assert main(["show", "old-mis", "--path", str(scored)]) == 2
    assert "Did you mean old-miss?" in capsys.readouterr().err


def test_show_without_an_id_prints_the_registry_itself(
    registry: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Seed 000 gives, for the whole repository, the training data's repository, the inference server
    it needs and that no licence is chosen yet; index.json records them under ``registry``. `show` with
    no id prints them (the TUI's registry node), and one line per base, in text and JSON."""

    def edit(index: dict) -> None:
        index["registry"].update(training_data="No-22/rwkv-agent-distill", server="rwkv_lightning v1.8.1 or later")
        index["known_issues"] = ["MiSS may call itself Qwen"]
        index["links"] = [{"title": "Reports", "url": "docs/evaluations/"}]
        index["unpublished"] = [old_miss([])]

    update_index(registry, edit)
    assert main(["show", "--path", str(registry)]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "test/registry" in text and "training data No-22/rwkv-agent-distill" in text
    assert "server rwkv_lightning v1.8.1 or later" in text and "license none chosen yet" in text
    assert "entries 3 (1 State, 2 MiSS)" in text and "not uploaded old-miss" in text
    assert "known issue MiSS may call itself Qwen" in text and "links Reports: docs/evaluations/" in text
    assert f"{TINY_BASE} active 3 entries (1 State, 2 MiSS) sha256 {TINY_SHA}" in text
    assert main(["show", "--path", str(registry), "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    index = json.loads((registry / "index.json").read_text())
    assert out["kind"] == "registry" and out["name"] == "test/registry" and out["registry"] == index["registry"]
    assert out["registry"]["license"] is None and out["registry"]["server"] == "rwkv_lightning v1.8.1 or later"
    assert out["bases"] == [
        {"name": TINY_BASE, "status": "active", "sha256": TINY_SHA, "entries": {"total": 3, "state": 1, "miss": 2}}
    ]
    assert out["entries"] == {"total": 3, "state": 1, "miss": 2} and out["unpublished"] == ["old-miss"]
    assert out["known_issues"] == ["MiSS may call itself Qwen"]
    assert out["links"] == [{"title": "Reports", "url": "docs/evaluations/"}]
    # a licence once chosen, a frozen base, and the current directory as the default registry
    edit_index(
        registry,
        lambda index: (index["registry"].update(license="Apache-2.0"), index["bases"][0].update(status="frozen")),
    )
    monkeypatch.chdir(registry)
    assert main(["show"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "license Apache-2.0" in text and "bases 1 (1 frozen)" in text and f"{TINY_BASE} [frozen] 3 entries" in text


def test_show_without_an_id_of_an_empty_registry_and_a_broken_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from rwkv_registry.store.ops import init_registry

    init_registry(tmp_path / "r", name="o/r")
    assert main(["show", "--path", str(tmp_path / "r")]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "entries 0 (0 State, 0 MiSS)" in text and "No base yet" in text and "bases ─" not in text
    assert main(["show", "--path", str(tmp_path / "r"), "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["bases"] == [] and out["entries"] == {"total": 0, "state": 0, "miss": 0} and out["links"] == []
    (tmp_path / "r" / "index.json").write_text("[1,")
    assert main(["show", "--path", str(tmp_path / "r")]) == 2
    assert "index.json: line 1" in capsys.readouterr().err


def test_a_fifo_in_the_registry_is_never_opened(registry: Path) -> None:
    """A FIFO where train.json, a MiSS adapter or index.json should be (validate: LAY015) is reported, not read:
    opening one waits for a writer forever, which hung the browser's details worker and the process at exit."""
    import os
    import threading

    cat = Catalog(registry)
    miss = next(e for e in cat.entries if e["method"] == "miss")
    train_rel = Catalog.train_rel(miss)
    for rel in (miss["path"], train_rel, "index.json"):
        (registry / rel).unlink()
        os.mkfifo(registry / rel)
    got: dict[str, Any] = {}

    def look() -> None:
        got["miss"] = cat.miss_summary(miss)
        got["train"] = cat.train(train_rel)
        got["refreshed"] = cat.refresh()

    worker = threading.Thread(target=look, daemon=True)
    worker.start()
    worker.join(20)
    if worker.is_alive():  # let the blocked reader go before failing
        for rel in (miss["path"], train_rel, "index.json"):
            try:
                os.close(os.open(registry / rel, os.O_WRONLY | os.O_NONBLOCK))
            except OSError:
                pass  # no reader on this one
    assert not worker.is_alive(), "a FIFO was opened"
    assert got["miss"].error == f"{miss['path']} is not a regular file"
    assert got["train"].error == f"{train_rel} is not a regular file"
    assert got["refreshed"] and cat.error == "index.json is not a regular file" and cat.entries == []
