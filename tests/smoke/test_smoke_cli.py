"""`rwkv-registry smoke` end to end on the demo's tiny trained weights (CPU).

The tiny State and MiSS were trained (tests/smoke/conftest.py) to answer the tiny case set; the
random base never writes a valid call. So each entry must beat the base significantly, every run
must repeat bit for bit, a wrong base file must be refused, and a NaN State must fail.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import shutil
from pathlib import Path

import pytest
import torch
from regtools import edit_index

from rwkv_registry.catalog.compare import results_from_json
from rwkv_registry.cli.main import main
from rwkv_registry.engine.validate import validate_registry
from rwkv_registry.index.smoke_cases import TINY_CASES, builtin_path, load_cases
from rwkv_registry.model.smoke.demo import MISS_ID, STATE_ID, build_tiny_registry
from rwkv_registry.model.tiny import make_tiny_base
from rwkv_registry.schemas import schema_errors
from rwkv_registry.store.ops import write_sums

pytestmark = pytest.mark.slow
TINY = str(builtin_path(TINY_CASES))


@pytest.fixture(scope="module")
def registry(tiny_weights, tmp_path_factory) -> Path:
    return build_tiny_registry(tmp_path_factory.mktemp("smoke"), tiny_weights)


@pytest.fixture
def copy(registry, tmp_path) -> Path:
    """A private copy for tests that write."""
    return Path(shutil.copytree(registry, tmp_path / "reg"))


def smoke(capsys, root: Path, entry: str, base: Path, *extra: str) -> tuple[int, dict | None, str, str]:
    code = main(
        [
            "smoke",
            str(root),
            entry,
            "--base-file",
            str(base),
            "--device",
            "cpu",
            "--cases",
            TINY,
            "--think-tokens",
            "24",
            *extra,
        ]
    )
    out, err = capsys.readouterr()
    report = json.loads(out) if "--format" in extra and out.startswith("{") else None
    return code, report, out, err


def snapshot(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.fixture(scope="module")
def reports(registry, tiny_weights, tmp_path_factory) -> dict[str, tuple[int, Path]]:
    """``--format json`` reports of both entries, run once: ``{entry: (exit code, report file)}``."""
    out = {}
    folder = tmp_path_factory.mktemp("reports")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as every test (bit-exact results need the same thread count)
    for entry in (STATE_ID, MISS_ID):
        path = folder / f"{entry}.json"
        with open(path, "w") as f, contextlib.redirect_stdout(f):
            code = main(
                [
                    "smoke",
                    str(registry),
                    entry,
                    "--base-file",
                    str(tiny_weights.base),
                    "--device",
                    "cpu",
                    "--cases",
                    TINY,
                    "--think-tokens",
                    "24",
                    "--format",
                    "json",
                ]
            )
        out[entry] = (code, path)
    torch.set_num_threads(threads)
    return out


@pytest.mark.parametrize("entry", [STATE_ID, MISS_ID])
def test_trained_entry_significantly_beats_the_base(reports, entry):
    code, path = reports[entry]
    report = json.loads(path.read_text())
    assert code == 0
    assert schema_errors("smoke-report", report) == []
    e, b, cmp_ = report["sides"]["entry"], report["sides"]["base"], report["comparison"]
    # the random base never writes a valid call; the trained entry answers enough cases to win clearly
    assert b["solved"] == 0 and b["parse_failures"] == b["total"] == 14
    assert e["solved"] >= 6 and e["parse_failures"] / e["total"] <= 0.2
    assert cmp_["wins"] == e["solved"] and cmp_["losses"] == 0
    assert cmp_["p_value"] < 0.05
    assert cmp_["p_value"] == pytest.approx(2 * 0.5 ** cmp_["wins"])  # exact McNemar with no losses
    assert e["deterministic"] and b["deterministic"] and e["finite"] and b["finite"]
    assert e["mean_loss"] < b["mean_loss"]
    assert report["verdict"] == "pass" and report["reasons"] == []
    assert report["entry"]["profile"] == ("g1k" if entry == STATE_ID else "g1k-think")
    thinking = [c["entry"]["thinking"] for c in report["cases"]]
    assert all(t is None for t in thinking) if entry == STATE_ID else all(isinstance(t, str) for t in thinking)
    # `rwkv-registry compare` reads the report's per-case results
    assert sum(results_from_json(report, "r").scores.values()) == e["solved"]


def test_compare_reads_two_smoke_reports(reports, capsys):
    assert main(["compare", str(reports[STATE_ID][1]), str(reports[MISS_ID][1]), "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    a, b = (json.loads(reports[e][1].read_text()) for e in (STATE_ID, MISS_ID))
    assert out["questions"] == 14 and (out["a"], out["b"]) == (STATE_ID, MISS_ID)
    assert out["score_a"] == a["sides"]["entry"]["solved"] and out["score_b"] == b["sides"]["entry"]["solved"]
    assert set(out["by_category"]) == set(a["sides"]["entry"]["by_category"])


def test_two_invocations_give_identical_results(capsys, registry, tiny_weights, reports):
    a = json.loads(reports[STATE_ID][1].read_text())
    _, b, _, _ = smoke(capsys, registry, STATE_ID, tiny_weights.base, "--format", "json")
    assert a["cases"] == b["cases"]  # every token, score and loss, bit for bit


def test_text_report(capsys, registry, tiny_weights, reports):
    code, _, out, _ = smoke(capsys, registry, STATE_ID, tiny_weights.base)
    assert code == 0
    for text in ("entry vs base alone", "hard selection", "McNemar", "deterministic", "PASS"):
        assert text in out


@pytest.mark.parametrize("entry", [STATE_ID, MISS_ID])
def test_text_report_lists_the_cases_the_entry_failed(capsys, registry, tiny_weights, reports, entry):
    """Each case the entry got wrong is listed: its id, the expected call, what came (the call and what is wrong with
    it, or the text that did not parse) and whether the base alone got it right; the JSON report gives the
    expected call of every case."""
    report = json.loads(reports[entry][1].read_text())
    cases = {c.id: c for c in load_cases(TINY).cases}
    for row in report["cases"]:
        c = cases[row["id"]]
        assert row["expected"] == {"name": c.expected_name, "arguments": c.expected_arguments}
    failed = [row for row in report["cases"] if not row["entry"]["correct"]]
    code, _, out, _ = smoke(capsys, registry, entry, tiny_weights.base)
    assert code == 0
    lines = [" ".join(line.split()) for line in out.splitlines()]
    if not failed:
        assert not any(line.startswith("failed with the entry") for line in lines)
        return
    assert f"failed with the entry ({len(failed)} of 14):" in lines
    for row in failed:
        [line] = [x for x in lines if x.startswith(row["id"] + ": ")]
        args = json.dumps(row["expected"]["arguments"], separators=(",", ":"))
        assert line.startswith(f"{row['id']}: expected {row['expected']['name']} {args[:39]}")
        got = row["entry"]
        if got["parse_failure"]:
            assert '; got unparseable {"name":"' in line and got["parse_error"] in line
        else:
            assert f"; got {got['name']} " in line
        assert line.endswith("; base alone: wrong too")  # the random base never answers


def test_an_entry_that_fails_exactly_as_the_base_alone_is_inconclusive(capsys, copy, tiny_weights):
    """A State of zeros is the base alone: both fail to parse every case. That is not called a broken entry: the
    verdict is INCONCLUSIVE (exit 2) and says a harness or format problem; each failed case is listed."""
    index = json.loads((copy / "index.json").read_text())
    [entry] = [e for e in index["entries"] if e["id"] == STATE_ID]
    path = copy / entry["path"]
    sd = torch.load(path, weights_only=True)
    torch.save({k: torch.zeros_like(v) for k, v in sd.items()}, path)

    def fix(data: dict) -> None:
        for e in data["entries"]:
            if e["id"] == STATE_ID:
                e["file"] = {"sha256": hashlib.sha256(path.read_bytes()).hexdigest(), "size": path.stat().st_size}

    edit_index(copy, fix)
    write_sums(copy)
    code, report, _, _ = smoke(capsys, copy, STATE_ID, tiny_weights.base, "--format", "json")
    assert code == 2 and report is not None
    assert schema_errors("smoke-report", report) == []
    assert report["verdict"] == "inconclusive" and report["exit_code"] == 2
    assert [r.split(",")[0] for r in report["reasons"]] == [
        "parse failures with the entry: 14/14 (100%) above the 20% threshold"
    ]
    assert (
        "but the base alone fails to parse exactly the same cases: a harness or format problem" in report["reasons"][0]
    )
    code, _, out, _ = smoke(capsys, copy, STATE_ID, tiny_weights.base)
    assert code == 2
    text = " ".join(out.split())
    assert (
        "INCONCLUSIVE: the base alone fails the same way, so this is a harness or format problem, not the entry" in text
    )
    assert "FAIL" not in text and "PASS" not in text
    assert "failed with the entry (14 of 14):" in text and text.count("; got unparseable") == 14


def test_text_report_says_when_the_case_set_is_too_small_to_tell(reports):
    """Five cases lost out of five give p = 0.0625: no verdict can say 'worse', and the text says so."""
    from rich.console import Console

    from rwkv_registry.model.smoke.report import render

    report = json.loads(reports[STATE_ID][1].read_text())
    for total, shown in ((5, True), (6, False), (report["sides"]["entry"]["total"], False)):
        report["sides"]["entry"]["total"] = total
        console = Console(record=True, width=120, file=io.StringIO())
        render(report, console)
        text = console.export_text()
        assert ("no difference from the base can reach p < 0.05" in text) is shown, (total, text)
        if shown:
            assert f"with {total} case(s)" in text and "p = 0.0625" in text


def test_record_appends_a_valid_record(capsys, copy, tiny_weights):
    for _ in range(2):
        code, _, out, _ = smoke(capsys, copy, MISS_ID, tiny_weights.base, "--record")
        assert code == 0 and "smoke record appended" in out
    index = json.loads((copy / "index.json").read_text())
    [entry] = [e for e in index["entries"] if e["id"] == MISS_ID]
    assert len(entry["smoke"]) == 2
    rec = entry["smoke"][0]
    assert schema_errors("smoke-record", rec) == []
    assert rec["cases_sha256"] == hashlib.sha256(Path(TINY).read_bytes()).hexdigest()
    assert rec["verdict"] == "pass" and rec["cases"] == 14 and rec["profile"] == "g1k-think"
    assert rec["device"].startswith("cpu") and rec["cuda"] in (None, torch.version.cuda)
    assert rec["p_value"] < 0.05 and rec["wins"] > rec["losses"]
    report = validate_registry(copy)
    assert report.ok, [f.message for f in report.findings]


def test_wrong_base_file_is_refused_naming_both_hashes(capsys, copy, tiny_weights, tmp_path):
    other = make_tiny_base(tmp_path / "other.pth", seed=9)
    before = snapshot(copy)
    code, _, _, err = smoke(capsys, copy, MISS_ID, other, "--record")
    assert code == 2
    got = hashlib.sha256(other.read_bytes()).hexdigest()
    want = hashlib.sha256(tiny_weights.base.read_bytes()).hexdigest()
    assert got in err.replace("\n", "") and want in err.replace("\n", "")
    assert "is not the base of entry" in err
    assert snapshot(copy) == before


@pytest.mark.parametrize(
    ("entry", "base", "message"),
    [("no-such-entry", None, "no entry 'no-such-entry'"), (STATE_ID, "absent.pth", "no such base file")],
)
def test_usage_errors_exit_2(capsys, registry, tiny_weights, tmp_path, entry, base, message):
    code, _, _, err = smoke(capsys, registry, entry, tmp_path / base if base else tiny_weights.base)
    assert code == 2
    assert message in err.replace("\n", " ")


def test_bad_case_file_exits_2(capsys, registry, tiny_weights, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "x"}\n')
    code = main(
        [
            "smoke",
            str(registry),
            STATE_ID,
            "--base-file",
            str(tiny_weights.base),
            "--device",
            "cpu",
            "--cases",
            str(bad),
        ]
    )
    assert code == 2
    assert "bad.jsonl:1" in capsys.readouterr().err


def test_nan_state_is_broken_and_exits_1(capsys, copy, tiny_weights):
    index = json.loads((copy / "index.json").read_text())
    [entry] = [e for e in index["entries"] if e["id"] == STATE_ID]
    path = copy / entry["path"]
    sd = torch.load(path, weights_only=True)
    sd["blocks.0.att.time_state"][0, 0, 0] = float("nan")
    torch.save(sd, path)

    def fix(data: dict) -> None:  # a careless user re-registers the broken file by hand
        for e in data["entries"]:
            if e["id"] == STATE_ID:
                e["file"] = {"sha256": hashlib.sha256(path.read_bytes()).hexdigest(), "size": path.stat().st_size}

    edit_index(copy, fix)
    write_sums(copy)
    code, report, _, _ = smoke(capsys, copy, STATE_ID, tiny_weights.base, "--format", "json")
    assert code == 1
    assert schema_errors("smoke-report", report) == []
    assert report["verdict"] == "fail" and report["exit_code"] == 1
    assert report["sides"]["entry"]["finite"] is False and report["sides"]["base"]["finite"] is True
    assert any("non-finite logits" in r for r in report["reasons"])
    # NaN losses twice are the same result: no false "non-deterministic" reason
    assert not any("non-deterministic" in r for r in report["reasons"]), report["reasons"]


def test_entry_file_changed_since_registration_exits_2(capsys, copy, tiny_weights):
    index = json.loads((copy / "index.json").read_text())
    [entry] = [e for e in index["entries"] if e["id"] == STATE_ID]
    path = copy / entry["path"]
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 1
    path.write_bytes(bytes(data))
    code, _, _, err = smoke(capsys, copy, STATE_ID, tiny_weights.base)
    assert code == 2
    assert "differs from index.json" in err.replace("\n", " ")


def test_a_base_too_big_for_the_cpus_memory_is_refused_before_hashing(capsys, registry, tiny_weights, monkeypatch):
    """Without a GPU a 7.2B base would be hashed (14 GB), then copied to fp32 (28 GB) until the kernel kills the
    process with no message: refused at once instead (exit 2), naming both sizes and the fix."""
    from rwkv_registry.model.smoke import evaluate
    from rwkv_registry.store.demo import ARCH_72B

    def no_hash(*a, **k):
        raise AssertionError("the base was hashed before the memory check")

    monkeypatch.setattr(evaluate, "physical_memory", lambda: 32 * 2**20)  # 32 MiB: the tiny base needs ~69 MB
    monkeypatch.setattr(evaluate, "cached_sha256", no_hash)
    code, _, _, err = smoke(capsys, registry, STATE_ID, tiny_weights.base)
    assert code == 2
    assert "in fp32 on the CPU" in err and "0.0 GiB of memory" in err and "CUDA GPU" in err.replace("\n", " ")
    big = {"name": "b", "architecture": dict(kv.split("=") for kv in ARCH_72B.split(","))}
    assert 25 * 2**30 < evaluate.fp32_bytes(big) < 28 * 2**30  # about 7B parameters × 4 bytes: 26 GiB
