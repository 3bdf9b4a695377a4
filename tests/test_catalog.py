"""The catalogue behind `list`, `show` and the TUI: reading, caching, mapping findings, commands."""

from __future__ import annotations

import dataclasses
import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from regtools import TINY_BASE, TINY_SHA, build_registry, edit_index, miss_train, write_miss

from rwkv_registry.catalog.entries import (
    Bar,
    Catalog,
    EntryFilter,
    FindingIndex,
    MissSummary,
    NodeRef,
    TrainInfo,
    data_text,
    duration_text,
    human_size,
    natural_key,
    num,
    score_text,
    short_size,
    side_by_side,
    status_of_findings,
    summarize_manifest,
    version_prefix,
    worst_status,
)
from rwkv_registry.catalog.render import (
    BarChart,
    fold_same,
    render_comparison,
    render_entry_info,
    render_findings,
    render_miss,
    render_scores,
    render_smoke,
    render_train,
)
from rwkv_registry.checks.catalogue import finding
from rwkv_registry.cli.main import main
from rwkv_registry.core.errors import RegistryError, UsageError
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


def plain(renderable: Any, width: int = 100) -> str:
    from rich.console import Console

    out = io.StringIO()
    Console(file=out, width=width, color_system=None, highlight=False).print(renderable)
    return out.getvalue()


def flat(text: str) -> str:
    return " ".join(text.split())


def score(value: float, date: str, **over: Any) -> dict[str, Any]:
    return {"benchmark": "exam", "date": date, "score": value, "unit": "percent", "total": 568, **over}


# --- small value helpers ------------------------------------------------------------------------------------


def test_value_helpers() -> None:
    """num/human_size/short_size/natural_key/score_text/data_text (C05 C06 C07 C13 C14 C15 C92)."""
    assert num(True) == "True" and num(None) == "—" and num(44.0) == "44" and num(2e-05) == "2e-05"
    assert num(52.2) == "52.2" and num(7) == "7"
    assert human_size(1023) == "1023 bytes" and human_size(1024) == "1,024 bytes (1.0 KiB)"
    assert human_size(37819746) == "37,819,746 bytes (36.1 MiB)" and human_size(True) == "—"
    assert short_size(1023) == "1023 B" and short_size(1024) == "1.0 KiB" and short_size(2**30) == "1.0 GiB"
    assert sorted(["v1.41", "v1.9", "v1.10", "v2"], key=natural_key) == ["v1.9", "v1.10", "v1.41", "v2"]
    assert score_text({"score": 52.2, "unit": "percent", "total": 568}) == "52.2%"
    assert score_text({"score": 41, "unit": "points", "total": 60}) == "41/60"
    assert score_text({"score": 9.0, "unit": "points"}) == "9.0"  # as recorded: a mean keeps its .0
    assert score_text({"score": 9, "unit": "points"}) == "9"
    assert data_text({"data": {"version": "v1", "rows": 0}}) == "v1 · 0 rows"
    sha = "ab" * 32
    assert data_text({"data": {"version": "v1", "sha256": sha}}, full=False) == f"v1 · sha256 {sha[:8]}…"


def test_duration() -> None:
    """Zero minutes, the one-hour boundary, a negative span, bad text (C16 C17)."""
    t0 = "2026-10-12T08:00:00Z"
    assert duration_text(t0, t0) == "0 min"
    assert duration_text(t0, "2026-10-12T08:59:00Z") == "59 min"
    assert duration_text(t0, "2026-10-12T09:00:00Z") == "1 h 00 min"
    assert duration_text(t0, "2026-10-12T10:05:00+00:00") == "2 h 05 min"
    assert (
        duration_text("2026-10-12T09:00:00Z", t0) == ""
        and duration_text("nope", t0) == ""
        and duration_text(None, t0) == ""
    )


def test_status_of_findings() -> None:
    """An error outranks a warning; notes alone are ok (C03 C04)."""
    err, warn, note = finding("HSH001", "a", "m"), finding("IDX004", "index.json", "m"), finding("TRN006", "b", "m")
    assert status_of_findings([warn, err]) == "error" and status_of_findings([err, warn]) == "error"
    assert status_of_findings([note, warn]) == "warning" and status_of_findings([note]) == "ok"


# --- the filter ---------------------------------------------------------------------------------------------


def test_filter_details() -> None:
    """C20 C21 C24 C25 C27 C31 C32 C33 C34 C35 C36 C37."""
    e = {
        "id": "v2-r4-a",
        "base": TINY_BASE,
        "method": "miss",
        "data": {"version": "v2.1"},
        "recommended": True,
        "adapter_id": "Custom-Adapter",
    }
    assert EntryFilter.parse("d:v2").data_version == "v2" and EntryFilter.parse("d:v2").base is None
    assert EntryFilter.parse("method:").words == () and EntryFilter.parse("method:").method is None
    assert EntryFilter.parse("method:").empty == ("method:",)  # a term being typed, not a word
    assert EntryFilter.parse("R4").words == ("r4",) and EntryFilter.parse("R4").matches(e)
    assert EntryFilter.parse("is:rec").active
    assert EntryFilter.parse("method:mi").matches(e) and EntryFilter.parse("m:MiSS").matches(e)
    assert EntryFilter.parse("data:v2").matches(e) and EntryFilter.parse("data:2.1").matches(e)
    assert not EntryFilter.parse("is:rec").matches({**e, "recommended": "yes"})  # only true is recommended
    assert not EntryFilter.parse("is:error").matches(e, status="warning")
    assert not EntryFilter.parse("is:ok").matches(e, status="warning") and EntryFilter.parse("is:ok").matches(
        e, status="ok"
    )
    assert not EntryFilter.parse("is:frozen").matches(e, base_status="active")
    assert EntryFilter.parse("custom-adapter").matches(e)
    assert not EntryFilter.parse("r4 nowhere").matches(e)


# --- manifests, findings ------------------------------------------------------------------------------------


def test_summarize_manifest_counts() -> None:
    """Target kinds once each; layers only when they are integers (C39 C40)."""
    m = {
        "rank": 4,
        "alpha": 8,
        "content_version": "c" * 64,
        "targets": [
            {"target": "att.r", "layer": 0},
            {"target": "att.r", "layer": 1},
            {"target": "att.k", "layer": "1"},
            {"target": "att.k"},
        ],
    }
    s = summarize_manifest(m, source="header")
    assert s.target_kinds == ("att.r", "att.k") and s.targets == 4 and s.layers == 2
    assert (s.rank, s.alpha) == (4, 8) and summarize_manifest([], source="header").error is not None


def test_finding_index_edges(reg: Path) -> None:
    """Base directory, out-of-range $.entries[N], unknown quoted ids, quoted ids outside index.json,
    `under` with a longer sibling directory (C47 C49 C50 C51 C52)."""
    cat = Catalog(reg)
    fs = [
        finding("LAY011", TINY_BASE, "on the base directory"),
        finding("SCH002", "index.json", "broken", json_path="$.entries[3].miss"),
        finding("PRF002", "index.json", "entry 'nosuch' and 's1'"),
        finding("RDM002", "README.md", "mentions 'v2-r4-b'"),
        finding("IDX004", "index.json", "entry 'ghost' only"),  # no such entry: the registry's
        finding("TRN001", f"{TINY_BASE}/state/v10", "elsewhere"),
    ]
    idx = FindingIndex(fs, cat.entries, cat.index_entries)
    assert [f.code for f in idx.for_entry("v2-r4-a")] == ["LAY011"]
    assert [f.code for f in idx.for_entry("s1")] == ["LAY011", "PRF002"]
    assert [f.code for f in idx.registry_level] == ["SCH002", "RDM002", "IDX004", "TRN001"]
    assert set(idx.by_entry) == {"s1", "v2-r4-a", "v2-r4-b"}
    assert [f.code for f in idx.under(f"{TINY_BASE}/state/v1")] == []


# --- the catalogue ------------------------------------------------------------------------------------------


def test_catalog_index_edges(reg: Path) -> None:
    """Name falls back to the directory, the first of duplicate ids wins, a base without status is
    unknown, grouped's keep, natural version order (C54 C55 C57 C60 C61)."""

    def edit(index: dict) -> None:
        del index["registry"]["name"]
        del index["bases"][0]["status"]
        s1 = index["entries"][0]
        index["entries"].append(dict(s1, description="the duplicate"))
        for v in ("v1.10", "v1.9"):
            index["entries"].append(dict(s1, id=f"s-{v}", data={"version": v}))

    edit_index(reg, edit)
    cat = Catalog(reg)
    assert cat.name == reg.name
    assert cat.get_entry("s1") is cat.entries[0] and cat.base_status(TINY_BASE) == "unknown"
    assert list(cat.grouped()[TINY_BASE]["state"]) == ["v1", "v1.9", "v1.10"]
    kept = cat.grouped(lambda e: e.get("method") == "miss")[TINY_BASE]
    assert list(kept) == ["miss"]


def test_train_rel_and_run_of(reg: Path) -> None:
    """A recorded train path wins; an entry without group owns no run (C65 C66)."""
    cat = Catalog(reg)
    assert Catalog.train_rel({"train": "x/y/train.json", "path": "a/b/c/d.pth"}) == "x/y/train.json"
    assert Catalog.train_rel({"path": "a/b/c/d/e.pth"}) == "a/b/c/train.json"
    assert cat.run_of({"id": "x"}, {"runs": [{"lr": 1}]}) is None
    assert cat.run_of({"group": "g"}, {"runs": [{"group": "g", "lr": 1}]}) == {"group": "g", "lr": 1}


def test_miss_summary_moves_to_the_validation_cache(reg: Path) -> None:
    """A summary read from the header is replaced by the validation cache once a validation ran (C68)."""
    from rwkv_registry.engine.validate import validate_registry

    cat = Catalog(reg)
    assert cat.miss_summary(cat.entry("v2-r4-a")).source == "header"  # type: ignore[union-attr]
    validate_registry(reg)
    assert cat.miss_summary(cat.entry("v2-r4-a")).source == "validation cache"  # type: ignore[union-attr]


def test_usage_quotes_and_defaults(reg: Path) -> None:
    """Paths and adapter ids are shell-quoted; a MiSS without profile defaults to g1k-think;
    adapter_id wins over id (C70 C71 C72 C73)."""
    cat = Catalog(reg)
    e = dict(cat.entry("v2-r4-a"), path="dir with space/a.pth", adapter_id="my adapter")
    e.pop("profile", None)
    u = cat.usage(e)
    assert "--adapter-id 'my adapter' --file 'dir with space/a.pth'" in u.command
    assert "adapter_id my adapter, --profile g1k-think" in u.then


def test_score_bars_current_and_latest(reg: Path) -> None:
    """With ``only``, the current entry still has its bar; with no current entry, no bar is current;
    the latest score of a day wins a tie (C76 C77 C81)."""

    def edit(index: dict) -> None:
        index["bases"][0]["scores"] = [score(20.0, "2026-01-05")]
        by_id = {e["id"]: e for e in index["entries"]}
        by_id["s1"]["scores"] = [score(40.0, "2026-01-05")]
        by_id["v2-r4-a"]["scores"] = [score(50.0, "2026-01-06"), score(51.0, "2026-01-06")]
        by_id["v2-r4-b"]["scores"] = [score(45.5, "2026-01-06")]

    edit_index(reg, edit)
    cat = Catalog(reg)
    bars = cat.score_bars(TINY_BASE, "exam", "percent", current="v2-r4-a", only=["s1"])
    assert {b.label for b in bars} == {"s1", "v2-r4-a", "base alone"}
    assert not any(b.current for b in cat.score_bars(TINY_BASE, "exam", "percent"))
    cmp = cat.compare(cat.entry("v2-r4-a"), cat.entry("v2-r4-b"))
    assert cmp.scores[0].a is not None and cmp.scores[0].a["score"] == 51.0


def test_compare_fields(reg: Path) -> None:
    """Recommended is read per side; rank/alpha appears when one side is MiSS (C79 C80)."""
    cat = Catalog(reg)
    fields = {label: (a, b) for label, a, b in cat.compare(cat.entry("v2-r4-a"), cat.entry("v2-r4-b")).fields}
    assert fields["recommended"] == ("yes", "no")
    cross = {label: (a, b) for label, a, b in cat.compare(cat.entry("s1"), cat.entry("v2-r4-a")).fields}
    assert cross["rank/alpha"][0] == "—" and cross["rank/alpha"][1].startswith("r4 α")


def test_entry_summary_and_describe(reg: Path) -> None:
    """A State has no adapter id; a missing flag is false; describe charts only the entry's own
    benchmarks (C83 C84 C86)."""

    def edit(index: dict) -> None:
        by_id = {e["id"]: e for e in index["entries"]}
        del by_id["v2-r4-b"]["recommended"]
        by_id["s1"]["scores"] = [score(40.0, "2026-01-05")]
        by_id["v2-r4-a"]["scores"] = [dict(score(9.0, "2026-01-05"), benchmark="bash", unit="points", total=26)]

    edit_index(reg, edit)
    cat = Catalog(reg)
    assert cat.entry_summary(cat.entry("s1"))["adapter_id"] is None
    assert cat.entry_summary(cat.entry("v2-r4-b"))["recommended"] is False
    assert [c["benchmark"] for c in cat.describe(cat.entry("s1"))["charts"]] == ["exam"]


# --- renderings ---------------------------------------------------------------------------------------------


def test_bar_chart_edges() -> None:
    """Dates that are not ISO days stay whole; a score over 100 % fills the bar, no more; weights
    never uploaded get their legend (C-R02 R05 R08)."""
    chart = BarChart(
        "exam",
        [
            Bar("a", 120.0, "percent", "2026-Jan-05", "entry", "a"),
            Bar("c", 100.0, "percent", "2026-Jan-05", "entry", "c"),
            Bar("b", 25.0, "percent", "2026-Jan-06", "unpublished", "b"),
        ],
    )
    text = plain(chart, 60)
    lines = text.splitlines()
    assert "2026-Jan-05" in lines[1] and "2026-Jan-06" in lines[3]
    assert lines[1].count("█") == lines[2].count("█") > 0
    assert "† never uploaded" in text


def test_entry_info_rows(reg: Path) -> None:
    """Markup stays text, the frozen tag, no adapter id on a State, step of total, the note
    (R09 R11 R12 R13 R56)."""

    def edit(index: dict) -> None:
        index["bases"][0]["status"] = "frozen"
        s1 = index["entries"][0]
        s1.update(step=1224, total_steps=1374, description="[bold]loud[/] and [/]")

    edit_index(reg, edit)
    cat = Catalog(reg)
    text = flat(plain(render_entry_info(cat, cat.entry("s1"))))
    assert "[bold]loud[/] and [/]" in text and "[frozen]" in text
    assert "adapter id" not in text and "1224 of 1374" in text
    assert "adapter id v2-r4-a" in flat(plain(render_entry_info(cat, cat.entry("v2-r4-a"))))


def test_train_marks_only_the_entrys_own_run() -> None:
    """No run is marked for an entry without a group (R16)."""
    info = TrainInfo("t/train.json", {"runs": [{"lr": 1e-5}, {"group": "g", "lr": 2e-5}]})
    assert "▶" not in plain(render_train(info, {"id": "x"}))
    assert "▶ g" in plain(render_train(info, {"id": "y", "group": "g"}))


def test_miss_marks(reg: Path) -> None:
    """index.json agreeing is ✓; a cached summary without a recomputed value says so (R19 R20)."""
    cat = Catalog(reg)
    e = cat.entry("v2-r4-a")
    cv = e["miss"]["content_version"]
    header = flat(plain(render_miss(cat, e, MissSummary(content_version=cv, source="header"))))
    assert "✓ index.json records the same" in header
    cached = MissSummary(content_version=cv, source="validation cache", recomputed=None)
    assert "? could not be recomputed" in flat(plain(render_miss(cat, e, cached)))


def test_scores_smoke_and_findings_details(reg: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Wins/losses of a paired comparison, an unknown smoke verdict, findings sorted by severity and
    shown relative to ``within`` only below it (R21 R23 R24 R25 R27)."""

    def edit(index: dict) -> None:
        by_id = {e["id"]: e for e in index["entries"]}
        by_id["v2-r4-a"]["scores"] = [
            score(52.2, "2026-10-17", comparison={"against": "v2.0", "wins": 95, "losses": 54, "p_value": 0.001})
        ]
        by_id["v2-r4-b"]["scores"] = [dict(score(9.0, "2026-01-05"), benchmark="bash", unit="points", total=26)]

    edit_index(reg, edit)
    assert main(["show", "v2-r4-a", "--path", str(reg)]) == 0
    text = flat(capsys.readouterr().out)
    assert "vs v2.0 +95/−54 p=0.001" in text and "bash" not in text
    assert "✗ FAIL" in plain(render_smoke({"smoke": [{"verdict": "?"}]}))
    fs = [finding("IDX004", "a/b/x", "w"), finding("HSH001", "a/bc/x", "e")]
    shown = flat(plain(render_findings(fs, within="a/b")))
    assert "HSH001 a/bc/x" in shown and "IDX004 …/x" in shown and shown.index("HSH001") < shown.index("IDX004")


def test_comparison_rendering(reg: Path) -> None:
    """≠ marks differing fields; scores of different days say so; fold_same with no context keeps
    only changes and one ⋮ per run of unchanged lines (R34 R36 R37 R39)."""

    def edit(index: dict) -> None:
        by_id = {e["id"]: e for e in index["entries"]}
        by_id["v2-r4-a"]["scores"] = [score(50.0, "2026-01-06")]
        by_id["v2-r4-b"]["scores"] = [score(45.0, "2026-01-07")]

    edit_index(reg, edit)
    cat = Catalog(reg)
    parts = list(render_comparison(cat.compare(cat.entry("v2-r4-a"), cat.entry("v2-r4-b"))))
    fields = plain(parts[0], 120)
    assert ["≠", "id"] in [line.split()[:2] for line in fields.splitlines()]
    assert ["=", "base"] in [line.split()[:2] for line in fields.splitlines()]
    assert "different days (2026-01-06 / 2026-01-07)" in flat(plain(parts[2], 160))
    rows = [("=", "1", "1"), ("=", "2", "2"), ("~", "a", "b"), ("=", "3", "3"), ("=", "4", "4")]
    assert fold_same(rows, 0) == [None, ("~", "a", "b"), None]


def test_base_info_counts(reg: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`show BASE` counts entries per method and prints the base's scores (R30 R50)."""
    edit_index(reg, lambda index: index["bases"][0].update(scores=[score(20.0, "2026-01-05")]))
    assert main(["show", TINY_BASE, "--path", str(reg)]) == 0
    text = flat(capsys.readouterr().out)
    assert "3 (1 State, 2 MiSS)" in text and f"scores of {TINY_BASE} alone" in text


# --- the commands -------------------------------------------------------------------------------------------


def test_list_text_details(reg: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """★ only for true, (no entries) under an empty base, — for a missing profile, the method label
    (R43 R44 R46 R51; the frozen tag is py's test_list_shows_the_frozen_tag_of_a_base)."""

    def edit(index: dict) -> None:
        index["bases"].append(dict(index["bases"][0], name="rwkv7-empty-20270101-ctx4096", status="active"))
        by_id = {e["id"]: e for e in index["entries"]}
        by_id["v2-r4-a"]["recommended"] = "yes"
        del by_id["v2-r4-b"]["profile"]

    edit_index(reg, edit)
    monkeypatch.setenv("COLUMNS", "120")
    assert main(["list", str(reg)]) == 0
    lines = capsys.readouterr().out.splitlines()
    rows = {line.split()[0]: line.split() for line in lines if line.strip().startswith(("s1", "v2-r4"))}
    assert rows["s1"][1:3] == ["State", "v1"] and "★" in rows["s1"]
    assert "★" not in rows["v2-r4-a"] and rows["v2-r4-a"][1] == "MiSS"
    assert "—" in rows["v2-r4-b"]
    assert any(line.strip().startswith("(no entries)") for line in lines)


def test_list_json_and_show_by_path(reg: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Base status in `list --format json`; `show PATH` finds the entry recording it, with its MiSS
    manifest and smoke sections (R40 R47 R48 R49)."""
    assert main(["list", str(reg), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["bases"][0]["status"] == "active"
    assert main(["show", MISS_A, "--path", str(reg)]) == 0
    text = capsys.readouterr().out
    assert "v2-r4-a" in text and "archive/miss.json" in text and "smoke: no records" in text


# --- second audit (M = catalog.py, N = catalog_render.py; run against this file, py,
# --- test_cli.py and tests/tui) ------------------------------------------------------------------------------


def test_score_text_units_and_a_null_total() -> None:
    """A points score whose total is null (the schema allows it) reads as the bare number, not ``9/None``;
    only percent gets ``%`` (M07 M08)."""
    assert score_text({"score": 9.0, "unit": "points", "total": None}) == "9.0"
    assert score_text({"score": 9.0, "unit": "other", "total": None}) == "9.0"
    assert score_text({"score": 41, "unit": "points", "total": 60}) == "41/60"


def test_filter_describe_and_base_case() -> None:
    """The status line names the data term and says ``everything`` for an empty filter; ``base:`` matches
    base names in any case (M17 M18 M20)."""
    assert EntryFilter.parse("data:v2").describe() == "data v2…"
    assert EntryFilter.parse("").describe() == "everything"
    e = {"id": "x", "base": "RWKV7-Tiny-20260101", "method": "state", "data": {"version": "v1"}}
    assert EntryFilter.parse("base:tiny").matches(e) and EntryFilter.parse("base:TINY").matches(e)
    assert not EntryFilter.parse("base:small").matches(e)


def test_manifest_content_version_must_be_text() -> None:
    """A manifest whose content_version is not a string records none (M29)."""
    assert summarize_manifest({"content_version": 123, "base_fingerprint": 4}, source="header").content_version is None
    assert summarize_manifest({"content_version": 123, "base_fingerprint": 4}, source="header").base_fingerprint is None


def test_train_changes_counts_lines_on_one_side_only() -> None:
    """Lines only in A or only in B differ too (M33)."""
    from rwkv_registry.catalog.entries import Comparison

    cmp = Comparison({}, {}, train_rows=[("=", "a", "a"), ("-", "b", ""), ("+", "", "c"), ("~", "d", "e")])
    assert cmp.train_changes == 3


def test_a_finding_on_a_directory_with_a_trailing_slash_belongs_to_its_entries(reg: Path) -> None:
    """``<base>/miss/v2/`` is the directory of both MiSS entries (M35)."""
    cat = Catalog(reg)
    idx = FindingIndex([finding("LAY011", f"{TINY_BASE}/miss/v2/", "m")], cat.entries, cat.index_entries)
    assert sorted(idx.by_entry) == ["v2-r4-a", "v2-r4-b"] and idx.registry_level == []


def test_catalog_tolerates_id_less_entries_duplicate_paths_and_unknown_bases(reg: Path) -> None:
    """An entry without an id is left out (it crashed the id map); of two entries recording the same
    path the first is found, as for ids; a base no record names is ``unknown`` and still gets its tree
    node after the recorded bases (M42 M44 M45 M47)."""

    def edit(index: dict) -> None:
        s1 = index["entries"][0]
        index["entries"].append({k: v for k, v in s1.items() if k != "id"})
        index["entries"].append(dict(s1, id="s1-copy"))
        index["entries"].append(dict(s1, id="ghostly", base="rwkv7-ghost-20260101-ctx4096"))

    edit_index(reg, edit)
    cat = Catalog(reg)
    assert [e["id"] for e in cat.entries] == ["s1", "v2-r4-a", "v2-r4-b", "s1-copy", "ghostly"]
    assert cat.entry_at(cat.entry("s1")["path"]) is cat.entry("s1")
    assert cat.base_status("rwkv7-ghost-20260101-ctx4096") == "unknown" and cat.base_status(TINY_BASE) == "active"
    assert cat.base_names() == [TINY_BASE, "rwkv7-ghost-20260101-ctx4096"]
    assert [e["id"] for e in cat.grouped()["rwkv7-ghost-20260101-ctx4096"]["state"]["v1"]] == ["ghostly"]


def test_a_version_node_holds_only_its_version(reg: Path) -> None:
    """A data-version node's directory and entries are its own version's, not its method's (M12 M50)."""
    from rwkv_registry.catalog.entries import NodeRef

    edit_index(reg, lambda index: index["entries"].append(dict(index["entries"][1], id="v3-x", data={"version": "v3"})))
    cat = Catalog(reg)
    ref = NodeRef("version", TINY_BASE, "miss", "v2")
    assert ref.prefix == f"{TINY_BASE}/miss/v2"
    assert [e["id"] for e in cat.entries_under(ref)] == ["v2-r4-a", "v2-r4-b"]
    assert [e["id"] for e in cat.entries_under(NodeRef("version", TINY_BASE, "miss", "v3"))] == ["v3-x"]


def test_finding_counts_add_up() -> None:
    """Two errors are two (M40)."""
    fs = [finding("HSH001", "a", "m"), finding("HSH001", "b", "m"), finding("TRN006", "c", "m")]
    assert FindingIndex(fs, []).counts == {"error": 2, "warning": 0, "info": 1}


def test_show_of_the_registry_counts_each_base_apart(reg: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Each base line counts its own entries (M69)."""
    edit_index(reg, lambda index: index["bases"].append(dict(index["bases"][0], name="rwkv7-next-20270101-ctx4096")))
    bases = Catalog(reg).describe_registry()["bases"]
    assert [b["entries"]["total"] for b in bases] == [3, 0]
    assert main(["show", "--path", str(reg)]) == 0
    assert "rwkv7-next-20270101-ctx4096 active 0 entries (0 State, 0 MiSS)" in flat(capsys.readouterr().out)


def test_show_of_the_registry_tolerates_odd_links_and_counts_only_frozen_bases(
    reg: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A link that is not an object is skipped, not a crash; a base without a status is not counted as
    frozen (M71 N33)."""

    def edit(index: dict) -> None:
        index["links"] = ["just text", {"title": "Reports", "url": "docs/"}]
        del index["bases"][0]["status"]

    edit_index(reg, edit)
    assert main(["show", "--path", str(reg)]) == 0
    text = flat(capsys.readouterr().out)
    assert "links Reports: docs/" in text and "just text" not in text
    assert "bases 1 entries" in text and f"{TINY_BASE} ? 3 entries" in text


def test_show_of_the_registry_names_every_weight_never_uploaded(reg: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Seed 000 has two weights never uploaded; both are named (N59)."""

    def edit(index: dict) -> None:
        index["unpublished"] = [
            {"id": i, "base": TINY_BASE, "method": "miss", "data": {"version": "v1"}, "description": "d", "scores": []}
            for i in ("old-a", "old-b")
        ]

    edit_index(reg, edit)
    assert main(["show", "--path", str(reg)]) == 0
    assert "not uploaded old-a, old-b" in flat(capsys.readouterr().out)


def test_benchmarks_and_bars_of_a_base(reg: Path) -> None:
    """A benchmark only the base alone ran still gets its chart on the base; a chart holds one unit;
    a MiSS entry without adapter_id is registered under its id (M59 M63 M67)."""

    def edit(index: dict) -> None:
        index["bases"][0]["scores"] = [dict(score(44.0, "2026-01-05"), benchmark="bfcl")]
        by_id = {e["id"]: e for e in index["entries"]}
        by_id["s1"]["scores"] = [score(40.0, "2026-01-05"), dict(score(9.0, "2026-01-05"), unit="points")]
        by_id["v2-r4-a"].pop("adapter_id", None)

    edit_index(reg, edit)
    cat = Catalog(reg)
    assert cat.benchmarks(TINY_BASE) == [("bfcl", "percent"), ("exam", "percent"), ("exam", "points")]
    assert [b.score for b in cat.score_bars(TINY_BASE, "exam", "percent")] == [40.0]
    assert [b.score for b in cat.score_bars(TINY_BASE, "exam", "points")] == [9.0]
    assert cat.entry_summary(cat.entry("v2-r4-a"))["adapter_id"] == "v2-r4-a"


def test_describe_names_the_base_sha_and_only_the_bases_own_entries(reg: Path) -> None:
    """``show ID --format json`` gives the base's sha256 (not the file's); ``show BASE`` lists only that
    base's entries, and counts them (M68 M72 N60)."""
    edit_index(reg, lambda index: index["entries"].append(dict(index["entries"][0], id="other", base="rwkv7-o-1")))
    cat = Catalog(reg)
    base_sha = cat.base(TINY_BASE)["sha256"]  # type: ignore[index]
    assert cat.describe(cat.entry("s1"))["base"]["sha256"] == base_sha != cat.entry("s1")["file"]["sha256"]
    assert cat.describe_base(cat.base(TINY_BASE))["entries"] == ["s1", "v2-r4-a", "v2-r4-b"]  # type: ignore[arg-type]
    from rwkv_registry.catalog.render import render_base_info

    assert "entries 3 (1 State, 2 MiSS)" in flat(plain(render_base_info(cat, cat.base(TINY_BASE) or {})))


def test_side_by_side_of_blocks_of_different_lengths() -> None:
    """A replaced block longer on one side ends in one-sided rows (M75)."""
    from rwkv_registry.catalog.entries import side_by_side

    assert side_by_side(["x", "a", "b"], ["x", "c"]) == [("=", "x", "x"), ("~", "a", "c"), ("-", "b", "")]
    assert side_by_side(["a"], ["c", "d"]) == [("~", "a", "c"), ("+", "", "d")]


def test_bar_chart_labels_and_fractions() -> None:
    """A long label is cut to ``max_label`` cells ending in ``…``; a bar ends in a partial block; values
    are right-justified (N07 N08 N09 N11)."""
    bars = [Bar(label, 50.0, "percent", "d", "entry") for label in ("abcdef", "abcd", "ab")]
    fitted = plain(BarChart("exam", bars, max_label=4)).splitlines()
    assert [line[:7] for line in fitted[1:4]] == ["  abc… ", "  abcd ", "  ab   "]  # cut, as it is, padded
    assert plain(BarChart("exam", bars[2:], max_label=0)).splitlines()[1][:4] == "  … "  # no room: the ellipsis
    long = "x" * 30
    text = plain(BarChart("exam", [Bar(long, 50.0, "percent", "2026-01-05", "entry", "e")], max_label=10), 60)
    assert "x" * 9 + "… " in text and "x" * 10 not in text
    assert "█" * 20 + "▌ " in text  # 50 % of 41 cells
    two = plain(BarChart("exam", [Bar("a", 52.2, "percent", "d", "entry"), Bar("b", 9.0, "percent", "d", "entry")]), 40)
    assert [line[-6:] for line in two.splitlines()[1:3]] == [" 52.2%", "  9.0%"]  # values right-justified


def test_entry_info_marks_a_base_missing_from_the_index(reg: Path) -> None:
    """An entry naming a base index.json does not list says so (N13)."""
    cat = Catalog(reg)
    e = dict(cat.entry("s1"), base="rwkv7-gone-1")
    assert "rwkv7-gone-1 (not in index.json)" in flat(plain(render_entry_info(cat, e)))


def test_train_miss_and_score_details(reg: Path) -> None:
    """Seed 000: the exact build commit was not recorded (``commit: null`` says so); targets per layer;
    a points score's solved/total is its value, not repeated as a detail (N17 N21 N23)."""
    info = TrainInfo("t/train.json", {"trainer": {"name": "rwkv_state_tune", "version": "1.8.1", "commit": None}})
    assert "rwkv_state_tune 1.8.1 (build commit not recorded)" in plain(render_train(info))
    text = flat(plain(render_miss(Catalog(reg), {}, MissSummary(targets=12, layers=2, source="header"))))
    assert "targets 12 (6 per layer × 2 layers)" in text and "(from the header)" in text
    missing = flat(plain(render_miss(Catalog(reg), {}, MissSummary(source="none", error="a.pth does not exist"))))
    assert missing.startswith("archive/miss.json ✗ a.pth does not exist") and "from the" not in missing, missing
    bash = dict(score(9.0, "2026-01-05"), benchmark="bash", unit="points", total=26, solved=9.0)
    s1 = dict(Catalog(reg).entry("s1") or {}, scores=[bash])
    table = flat(plain(render_scores(Catalog(reg), TINY_BASE, entry=s1)))
    assert "bash 2026-01-05 9.0/26" in table and "bash ·" not in table  # the entry's table, no chart (none in index)
    assert table.count("9.0/26") == 1


def test_base_size_not_recorded_and_context_after_a_change(reg: Path) -> None:
    """A base added by its sha256 alone has a null size: ``not recorded``; ``context`` keeps as many
    unchanged lines after a change as before it (N29 N41)."""
    from rwkv_registry.catalog.render import render_base_info

    cat = Catalog(reg)
    b = dict(cat.base(TINY_BASE) or {}, size=None)
    assert "size not recorded" in flat(plain(render_base_info(cat, b)))
    rows = [("=", "0", "0"), ("~", "a", "b"), ("=", "1", "1"), ("=", "2", "2")]
    assert fold_same(rows, 1) == [("=", "0", "0"), ("~", "a", "b"), ("=", "1", "1"), None]


def test_list_and_show_sections_that_do_not_apply(reg: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`show` of a State has no MiSS section; `list` of entries whose base has no record does not say
    "no bases yet" (N43 N48)."""
    assert main(["show", "s1", "--path", str(reg)]) == 0
    out = capsys.readouterr().out
    assert "MiSS manifest" not in out and "train.json" in out
    edit_index(reg, lambda index: index.update(bases=[]))
    assert main(["list", str(reg)]) == 0
    out = capsys.readouterr().out
    assert "s1" in out and "no bases yet" not in out


def test_miss_tab_says_when_index_json_records_another_content_version(reg: Path) -> None:
    """The ✗ mark when index.json and the manifest disagree (N57)."""
    cat = Catalog(reg)
    e = cat.entry("v2-r4-a")
    other = MissSummary(content_version="d" * 64, source="header")
    text = flat(plain(render_miss(cat, e, other)))
    assert f"✗ index.json records {e['miss']['content_version']}" in text and "records the same" not in text


def test_entry_known_issues_are_labelled_once(reg: Path) -> None:
    """Two known issues: one label, two lines (N16)."""
    cat = Catalog(reg)
    e = dict(cat.entry("s1"), known_issues=["first issue", "second issue"])
    text = plain(render_entry_info(cat, e, usage=False))
    assert text.count("known issue") == 1 and "first issue" in text and "second issue" in text


def test_train_times_final_lr_and_base_revision(reg: Path) -> None:
    """The finished row carries the duration, a run its final learning rate, a base source its revision
    (N19 N20 N30)."""
    from rwkv_registry.catalog.render import render_base_info

    t = {
        "started": "2026-10-12T08:00:00Z",
        "finished": "2026-10-12T09:30:00Z",
        "runs": [{"group": "g", "lr": 2e-05, "lr_final": 2e-06}],
    }
    text = flat(plain(render_train(TrainInfo("t/train.json", t))))
    assert "finished 2026-10-12T09:30:00Z (1 h 30 min)" in text and "g lr 2e-05 → 2e-06" in text
    cat = Catalog(reg)
    b = dict(cat.base(TINY_BASE) or {}, source={"repo": "BlinkDL/rwkv7-g1", "file": "x.pth", "revision": "abc123"})
    assert "source BlinkDL/rwkv7-g1: x.pth@abc123" in flat(plain(render_base_info(cat, b)))


# --- third audit (mut4, hand-made mutants G01-G84 of catalog.py) ------------------------------------------


def test_an_unknown_status_never_outranks_a_known_one() -> None:
    """G01: a status outside STATUSES ranks below every known one."""
    from rwkv_registry.catalog.entries import worst_status

    assert worst_status(["ok", "stale"]) == "ok" and worst_status(["stale", "warning"]) == "warning"
    assert worst_status(["stale"]) == "unchecked"


def test_score_delta_is_rounded_to_what_was_recorded() -> None:
    """G36: 52.2 - 46.0 is 6.2, not 6.200000000000003."""
    from rwkv_registry.catalog.entries import ScoreDelta

    d = ScoreDelta("exam", "percent", score(46.0, "2026-10-01"), score(52.2, "2026-10-01"))
    assert d.delta == 6.2 and json.dumps(d.delta) == "6.2"
    assert ScoreDelta("exam", "percent", score(46.0, "2026-10-01"), None).delta is None


def test_smoke_categories_show_the_base_s_own_tally() -> None:
    """N26: each category's base tally is the base's, and unknown when the base has none."""
    entry = {"solved": 5, "total": 6, "by_category": {"easy-selection": {"solved": 3, "total": 3}}}
    entry["by_category"]["abstention"] = {"solved": 2, "total": 3}
    base = {"solved": 0, "total": 6, "by_category": {"easy-selection": {"solved": 1, "total": 3}}}
    record = {"verdict": "pass", "entry_score": entry, "base_score": base}
    text = flat(plain(render_smoke({"smoke": [record]})))
    assert "easy-selection: 3/3 (base 1/3)" in text and "abstention: 2/3 (base ?/?)" in text


def test_the_links_label_is_written_once(reg: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """N36: two links under one "links" label."""
    links = [{"title": "Reports", "url": "docs/"}, {"title": "Data", "url": "data/"}]
    edit_index(reg, lambda index: index.__setitem__("links", links))
    assert main(["show", "--path", str(reg)]) == 0
    assert "links Reports: docs/ Data: data/" in flat(capsys.readouterr().out)


def test_an_entry_s_charts_are_the_benchmarks_it_was_scored_on(reg: Path) -> None:
    """G65: a benchmark only the base (or another entry) has gets no chart on an entry."""

    def edit(index: dict) -> None:
        index["bases"][0]["scores"] = [score(30.0, "2026-10-01", benchmark="other")]
        by_id = {e["id"]: e for e in index["entries"]}
        by_id["v2-r4-a"]["scores"] = [score(52.2, "2026-10-17")]

    edit_index(reg, edit)
    cat = Catalog(reg)
    assert cat.benchmarks(TINY_BASE, ["v2-r4-a"]) == [("exam", "percent")]
    assert [c["benchmark"] for c in cat.describe(cat.entry("v2-r4-a"))["charts"]] == ["exam"]
    assert ("other", "percent") in cat.benchmarks(TINY_BASE)  # the base's own view keeps it


def test_two_states_compare_without_a_rank_alpha_row(reg: Path) -> None:
    """G71: rank/alpha only when one side is a MiSS adapter."""
    cat = Catalog(reg)
    labels = [label for label, _, _ in cat.compare(cat.entry("s1"), cat.entry("s1")).fields]
    assert "rank/alpha" not in labels and "recommended" in labels


def test_a_fingerprint_against_a_base_without_sha256_is_unknown(reg: Path) -> None:
    """G76 (N22): no sha256 recorded for the base: the fingerprint is not checked, not called a mismatch."""
    from rwkv_registry.catalog.entries import fingerprint_matches

    summary = MissSummary(base_fingerprint="ab" * 32)
    assert fingerprint_matches(summary, {"name": "b"}) is None
    assert fingerprint_matches(summary, {"name": "b", "sha256": None}) is None
    assert fingerprint_matches(summary, {"name": "b", "sha256": "ab" * 32}) is True
    assert fingerprint_matches(summary, {"name": "b", "sha256": "cd" * 32}) is False
    edit_index(reg, lambda index: index["bases"][0].pop("sha256"))
    cat = Catalog(reg)
    assert cat.describe(cat.entry("v2-r4-a"))["fingerprint_matches"] is None


def test_a_comparison_lists_benchmarks_only_the_second_entry_has(reg: Path) -> None:
    """G83: B's benchmarks are compared too, with A's side empty."""

    def edit(index: dict) -> None:
        by_id = {e["id"]: e for e in index["entries"]}
        by_id["v2-r4-a"]["scores"] = [score(50.0, "2026-10-17")]
        by_id["v2-r4-b"]["scores"] = [score(51.0, "2026-10-17"), score(9.0, "2026-10-17", benchmark="bash")]

    edit_index(reg, edit)
    cat = Catalog(reg)
    deltas = {d.benchmark: d for d in cat.compare(cat.entry("v2-r4-a"), cat.entry("v2-r4-b")).scores}
    assert deltas.keys() == {"exam", "bash"}
    assert deltas["bash"].a is None and deltas["bash"].b is not None and deltas["bash"].delta is None
    assert deltas["exam"].delta == 1.0


def test_node_prefixes_skip_empty_parts() -> None:
    """G16: a base node's directory is the base name, the registry's is empty."""
    from rwkv_registry.catalog.entries import NodeRef

    assert NodeRef("base", base="b").prefix == "b" and NodeRef("registry").prefix == ""
    assert NodeRef("version", base="b", method="miss", version="v2").prefix == "b/miss/v2"


def test_filter_keys_are_case_insensitive_and_only_status_flags_need_a_status() -> None:
    """G20 G23 G30: METHOD:miss is a method term; is:rec needs no validation; is:broken means error."""
    e = {"id": "x", "base": TINY_BASE, "method": "miss", "data": {"version": "v2"}, "recommended": True}
    assert EntryFilter.parse("METHOD:miss").method == "miss" and EntryFilter.parse("Is:REC").flags == ("rec",)
    assert not EntryFilter.parse("is:rec").needs_status and not EntryFilter.parse("is:frozen").needs_status
    assert EntryFilter.parse("is:rec is:warn").needs_status
    broken = EntryFilter.parse("is:broken")
    assert broken.matches(e, status="error") and not broken.matches(e, status="ok")


def test_usage_json_and_labels_of_odd_entries(reg: Path, tmp_path: Path) -> None:
    """G52 G62 G73 G75 G77 G80: a nameless base makes no tree node; a MiSS without adapter_id registers
    under its id; the data line shows the full sha256 unless shortened; only true is recommended; the
    train label abbreviates the base; a directory given as the base file is named as such."""
    from rwkv_registry.catalog.entries import check_base_path
    from rwkv_registry.core.errors import UsageError

    edit_index(reg, lambda index: index["bases"].append({"status": "active"}))
    cat = Catalog(reg)
    assert "" not in cat.base_names()
    assert "--adapter-id v9 " in cat.usage({"method": "miss", "id": "v9", "path": "b/miss/v9/g/a.pth"}).command
    sha = "ab" * 32
    assert data_text({"data": {"version": "v1", "sha256": sha}}) == f"v1 · sha256 {sha}"
    assert data_text({"data": {"version": "v1", "sha256": sha}}, full=False) == "v1 · sha256 abababab…"
    assert cat.entry_summary({"id": "x", "recommended": "yes"})["recommended"] is False
    a, b = cat.entry("v2-r4-a"), cat.entry("v2-r4-b")
    assert all(label.startswith("…/miss/") for label in cat.compare(a, b).train_labels)
    with pytest.raises(UsageError, match="is a directory, not a base file"):
        check_base_path(tmp_path, {"name": "b"})


# --- third audit (mutation audit of stop 19's code) --------------------------------------------------------


def test_a_filter_of_one_base_or_one_warning_status_keeps_only_those(reg: Path, capsys) -> None:
    """``list --filter base:…`` alone filters (a filter with only a base term was taken for no filter), and
    ``is:warning`` drops the entries without a warning."""

    def listed(query: str) -> list[str]:
        assert main(["list", str(reg), "--filter", query, "--format", "json"]) == 0
        return [e["id"] for e in json.loads(capsys.readouterr().out)["entries"]]

    assert EntryFilter.parse("base:tiny").active and EntryFilter.parse("is:warning").active
    assert EntryFilter.parse("base:tiny").describe() == "base ~tiny"
    assert listed("base:no-such-base") == []
    assert listed("base:tiny") == ["s1", "v2-r4-a", "v2-r4-b"]
    assert listed("is:warning") == []
    e = {"id": "x", "base": TINY_BASE, "method": "state", "data": {"version": "v1"}}
    assert EntryFilter.parse("is:warn").matches(e, status="warning")
    assert not EntryFilter.parse("is:warn").matches(e, status="ok")
    assert not EntryFilter.parse("is:warning").matches(e, status="error")


def test_an_entry_node_holds_its_entry_and_a_base_node_only_its_base_s(reg: Path) -> None:
    from rwkv_registry.catalog.entries import NodeRef

    ghost = "rwkv7-ghost-20260101-ctx4096"
    edit_index(reg, lambda index: index["entries"].insert(0, dict(index["entries"][0], id="ghostly", base=ghost)))
    cat = Catalog(reg)
    assert [e["id"] for e in cat.entries_under(NodeRef("base", ghost))] == ["ghostly"]
    assert [e["id"] for e in cat.entries_under(NodeRef("entry", TINY_BASE, "miss", "v2", "v2-r4-b"))] == ["v2-r4-b"]
    assert cat.entries_under(NodeRef("entry", entry_id="no-such-entry")) == []
    assert [e["id"] for e in cat.entries_under(NodeRef("base", TINY_BASE))] == ["s1", "v2-r4-a", "v2-r4-b"]
    assert cat.entries_under(NodeRef("base", "rwkv7-other-20260101-ctx4096")) == []
    assert [e["id"] for e in cat.entries_under(NodeRef("method", TINY_BASE, "state"))] == ["s1"]


def test_a_score_of_another_benchmark_listed_first_does_not_hide_the_rest(reg: Path) -> None:
    """The bars of one benchmark skip the other benchmarks' scores and the other units' and read on."""

    def edit(index: dict) -> None:
        by_id = {e["id"]: e for e in index["entries"]}
        by_id["s1"]["scores"] = [
            "not a score",
            score(10.0, "2026-01-04", benchmark="other"),
            score(12.0, "2026-01-04", unit="points"),
            score(40.0, "2026-01-05"),
        ]

    edit_index(reg, edit)
    cat = Catalog(reg)
    assert [(b.label, b.score) for b in cat.score_bars(TINY_BASE, "exam", "percent")] == [("s1", 40.0)]
    assert [(b.label, b.score) for b in cat.score_bars(TINY_BASE, "other", "percent")] == [("s1", 10.0)]
    assert cat.benchmarks(TINY_BASE) == [("other", "percent"), ("exam", "points"), ("exam", "percent")]


# --- fourth audit (catalog_render) -----------------------------------------------------------------------------


def test_base_info_shows_the_base_s_notes_and_each_known_issue(reg: Path) -> None:
    from rwkv_registry.catalog.render import render_base_info

    cat = Catalog(reg)
    b = dict(cat.base(TINY_BASE) or {}, notes="spring mix", known_issues=["slow tokenizer", "no fp16"])
    text = flat(plain(render_base_info(cat, b)))
    assert "notes spring mix" in text and "known issue slow tokenizer no fp16" in text, text


def test_registry_info_shows_the_registry_s_title_and_description(reg: Path) -> None:
    from rwkv_registry.catalog.render import render_registry_info

    edit_index(reg, lambda index: index["registry"].update(title="Spring States", description="States for chat"))
    text = flat(plain(render_registry_info(Catalog(reg))))
    assert "title Spring States" in text and "about States for chat" in text, text


def test_list_of_a_registry_of_no_base_says_how_to_add_one(reg: Path, capsys: pytest.CaptureFixture[str]) -> None:
    edit_index(reg, lambda index: index.update(bases=[], entries=[]))
    capsys.readouterr()
    assert main(["list", str(reg)]) == 0
    assert "no bases yet: `rwkv-registry add-base PATH BASE.pth`" in capsys.readouterr().out


@pytest.mark.parametrize("width", [45, 60])
def test_list_in_a_narrow_terminal_keeps_each_entry_on_one_line(
    reg: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, width: int
) -> None:
    """Cells that do not fit are cut short (…), never wrapped onto a second line: one line per entry."""
    monkeypatch.setenv("COLUMNS", str(width))
    capsys.readouterr()
    assert main(["list", str(reg)]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line.strip()]
    body = lines[lines.index(next(x for x in lines if x.lstrip().startswith("s1"))) :]
    assert len(body) == 3 and all(x.split()[0].startswith(("s1", "v2-r")) for x in body), lines


def test_compare_scores_in_a_narrow_terminal_keep_each_benchmark_on_one_line(reg: Path) -> None:
    """The benchmark, A, B and B − A cells are cut short, never wrapped or dropped: one line per benchmark, its
    difference always begun (the note folds, or is left out)."""

    def edit(index: dict) -> None:
        by_id = {e["id"]: e for e in index["entries"]}
        by_id["v2-r4-a"]["scores"] = [score(50.0, "2026-01-06")]
        by_id["v2-r4-b"]["scores"] = [score(45.25, "2026-01-06")]

    edit_index(reg, edit)
    cat = Catalog(reg)
    parts = list(render_comparison(cat.compare(cat.entry("v2-r4-a"), cat.entry("v2-r4-b"))))
    for width in (26, 30, 40, 46):
        lines = [x for x in plain(parts[2], width).splitlines() if x.strip()]
        rows = [x for x in lines if x.lstrip().startswith("ex")]
        header = next(x for x in lines if x.lstrip().startswith("bench"))
        cut = header.find("note") if "note" in header else len(header)  # too narrow for it: the note is left out
        below = lines[lines.index(rows[0]) + 1 :]  # only the folded note: nothing in the columns before it
        assert len(rows) == 1 and all(not x[:cut].strip() for x in below), lines
        assert "-4." in rows[0], lines


def test_each_run_of_a_train_json_shows_its_own_duration(reg: Path) -> None:
    t = {
        "started": "2026-10-12T08:00:00Z",
        "finished": "2026-10-12T11:00:00Z",
        "runs": [
            {"group": "g", "lr": 2e-05, "started": "2026-10-12T08:00:00Z", "finished": "2026-10-12T08:45:00Z"},
            {"group": "h", "lr": 2e-05, "started": "2026-10-12T09:00:00Z"},
        ],
    }
    text = flat(plain(render_train(TrainInfo("t/train.json", t))))
    assert "(3 h 00 min)" in text and "2026-10-12T08:00:00Z → 2026-10-12T08:45:00Z (45 min)" in text, text
    assert "2026-10-12T09:00:00Z → ?" in text and "? (" not in text, text


def test_base_info_shows_the_vocabulary_and_a_group_its_entries_descriptions(reg: Path) -> None:
    from rwkv_registry.catalog.entries import NodeRef
    from rwkv_registry.catalog.render import render_base_info, render_group_info

    edit_index(reg, lambda index: index["entries"][0].update(description="the chat State"))
    cat = Catalog(reg)
    assert "vocab rwkv-world-65536" in flat(
        plain(render_base_info(cat, dict(cat.base(TINY_BASE) or {}, vocab="rwkv-world-65536")))
    )
    text = flat(plain(render_group_info(cat, NodeRef("method", TINY_BASE, "state"))))
    assert "s1" in text and "the chat State" in text, text


def test_a_comparison_separates_its_three_tables_by_a_blank_line(reg: Path) -> None:
    """Fields, scores and the train.json diff, each after a blank line (what the compare screen shows)."""
    from rich.text import Text

    cat = Catalog(reg)
    parts = list(render_comparison(cat.compare(cat.entry("v2-r4-a"), cat.entry("v2-r4-b"))))
    assert len(parts) == 5 and all(isinstance(p, Text) and not p.plain for p in parts[1::2]), parts
    assert not any(isinstance(p, Text) for p in parts[::2]), parts


def test_a_scores_table_heads_its_detail_column(reg: Path) -> None:
    """The table of an entry's scores (`show`'s, the TUI's) names its columns, the details' too."""
    cat = Catalog(reg)
    s1 = dict(cat.entry("s1") or {}, scores=[score(52.5, "2026-01-05")])
    text = flat(plain(render_scores(cat, TINY_BASE, entry=s1)))
    assert text.startswith("scores benchmark date score detail "), text
