"""What the validator accepts, torch reads identically: the differential check on a seeded sample.

Each generated file (tests/support/diffgen.py: a valid torch.save or rwkv_lightning_cuda file, then
mutated at the zip, pickle or byte level) goes through the tool's reader and, when the tool
accepts it, through ``torch.load(weights_only=True)`` (cpu, mmap, default location), Python's
``zipfile`` and a model of rwkv_lightning_cuda's reader (tests/support/diffcheck.py); a ``.safetensors``
file through ``safetensors.safe_open``. bench/fuzz_differential.py runs the same check over
100,000+ files; a failure here names the sample's replay key for
``bench/fuzz_differential.py --replay CLASS:SEED``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "tests" / "malicious")]

import diffcheck  # noqa: E402
import diffgen  # noqa: E402

SAMPLE_SEED = 26  # issue 26
PER_CLASS = 24
ALL_CLASSES = [*diffgen.CLASSES, *diffgen.SAFETENSORS_CLASSES]

# Classes whose seeded sample still shows a disagreement on this branch, with the reason. Strict:
# once a fix lands, the XPASS fails the run until the class is removed here, so the list only
# shrinks. Empty since the strict zip reader (helper `zip`, issue 26) was merged: before it,
# case-collision, eocd-in-comment, missing-record, storage-location and zip64-extra disagreed.
NOT_YET_AGREEING: dict[str, str] = {}


def _params() -> list:
    out = []
    for klass in ALL_CLASSES:
        marks = []
        if klass in NOT_YET_AGREEING:
            marks.append(pytest.mark.xfail(strict=True, reason=NOT_YET_AGREEING[klass]))
        out.append(pytest.param(klass, marks=marks, id=klass))
    return out


@pytest.mark.parametrize("klass", _params())
def test_what_the_tool_accepts_every_reader_reads_identically(klass: str, tmp_path: Path) -> None:
    found = []
    for i in range(PER_CLASS):
        sample = diffgen.generate(klass, SAMPLE_SEED * 10**9 + i)
        outcome = diffcheck.check(sample, tmp_path)
        for d in outcome.disagreements:
            found.append(f"{sample.replay} ({sample.base}; {sample.note[:80]}): {d.reader}: {d.what[:160]}")
    assert not found, "\n".join(found)


@pytest.mark.parametrize("klass", ["valid", "st-valid"])
def test_every_file_a_real_writer_makes_is_accepted(klass: str, tmp_path: Path) -> None:
    """The control: what torch.save, rwkv_lightning_cuda's writer and safetensors write is accepted
    and read identically (a strict reader must not refuse the real files)."""
    kinds = set()
    for i in range(60):
        sample = diffgen.generate(klass, SAMPLE_SEED * 10**9 + i)
        outcome = diffcheck.check(sample, tmp_path)
        assert outcome.accepted, f"{sample.replay} ({sample.base}) refused: {outcome.code} {outcome.message}"
        assert outcome.ok, f"{sample.replay}: {outcome.disagreements}"
        kinds.add(sample.base)
    if klass == "valid":
        assert kinds == set(diffgen.BASE_KINDS)


def test_the_malicious_corpus_and_the_bombs_are_refused_without_disagreement(tmp_path: Path) -> None:
    from bombs import BOMBS, STATE
    from evil_cases import CASES, marker_for

    checked = 0
    for case in CASES.values():
        data = case.build(marker_for(tmp_path, case.id).resolve())
        outcome = diffcheck.check_bytes(data, tmp_path / f"{case.id}.pth")
        assert not outcome.accepted and outcome.code == case.code, (case.id, outcome.code, outcome.message)
        assert outcome.ok, (case.id, outcome.disagreements)
        assert not marker_for(tmp_path, case.id).exists()
        checked += 1
    for bomb in BOMBS.values():
        if bomb.target != STATE or bomb.slow:
            continue
        path = tmp_path / f"{bomb.id}.bin"
        bomb.write(path)
        outcome = diffcheck.check_bytes(path.read_bytes(), tmp_path / f"{bomb.id}.pth")
        assert outcome.ok, (bomb.id, outcome.disagreements)
        # the reader refuses each with the bomb's rule, except where validate finds it later (MIS003 on miss.json)
        assert outcome.code == bomb.code or (outcome.accepted and bomb.code.startswith("MIS")), (bomb.id, outcome.code)
        checked += 1
    assert checked >= len(CASES) + 9


def test_a_sample_is_the_same_file_every_time() -> None:
    for klass in ALL_CLASSES:
        a, b = diffgen.generate(klass, 12345), diffgen.generate(klass, 12345)
        assert a.data == b.data and a.note == b.note, klass
    assert diffgen.generate("bytes", 1).data != diffgen.generate("bytes", 2).data


def test_the_zip_model_serializes_real_files_back_byte_for_byte() -> None:
    import random

    from evil_cases import good_archive

    for kind in diffgen.BASE_KINDS:
        for n in range(5):
            base = diffgen.base_archive(random.Random(f"{kind}/{n}"), kind)
            assert diffgen.parse_archive(base.data).to_bytes() == base.data, kind
    assert diffgen.parse_archive(good_archive()).to_bytes() == good_archive()


def test_the_lightning_transcription_writes_what_the_test_writer_writes() -> None:
    """Two transcriptions of rwkv_lightning_cuda's writer (src/io/pth_writer.cpp) made apart agree:
    tests/support/diffgen.py's and tests/conformance/lightning_cpp.py."""
    sys.path.insert(0, str(ROOT / "tests" / "conformance"))
    import random

    from lightning_cpp import lightning_bytes

    for n in range(10):
        base = diffgen.base_archive(random.Random(f"lightning/{n}"), "lightning-miss" if n % 2 else "lightning-state")
        tensors = {name: (dtype, shape, raw) for name, dtype, shape, raw in base.tensors}
        assert diffgen.lightning_archive(base.tensors, base.miss_json) == lightning_bytes(tensors, base.miss_json)


def test_the_check_fails_when_a_reader_reads_other_bytes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Positive control: a tool that read one byte otherwise is caught by every other reader."""
    sample = diffgen.generate("valid", 3)
    real = diffcheck.tool_read

    def skewed(data: bytes) -> diffcheck.ToolRead:
        read = real(data)
        name, (dtype, shape, raw) = next(iter(read.tensors.items()))
        read.tensors[name] = (dtype, shape, bytes([raw[0] ^ 1]) + raw[1:])
        return read

    monkeypatch.setattr(diffcheck, "tool_read", skewed)
    outcome = diffcheck.check(sample, tmp_path)
    readers = {d.reader for d in outcome.disagreements}
    assert {"torch-cpu", "torch-mmap", "torch-default"} <= readers
    assert all("bytes differ from byte 0" in d.what for d in outcome.disagreements)


def test_the_check_reports_a_tool_crash(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def crash(data: bytes) -> diffcheck.ToolRead:
        raise IndexError("boom")

    monkeypatch.setattr(diffcheck, "tool_read", crash)
    outcome = diffcheck.check(diffgen.generate("valid", 1), tmp_path)
    assert [d.reader for d in outcome.disagreements] == ["tool"] and "IndexError: boom" in outcome.disagreements[0].what


def test_the_campaign_writes_its_summary_and_replays_a_sample(tmp_path: Path) -> None:
    script = ROOT / "bench" / "fuzz_differential.py"
    out = tmp_path / "summary.json"
    run = subprocess.run([sys.executable, str(script), "--count", "60", "--classes", "valid,bytes,st-valid",
                          "--json", str(out)], capture_output=True, text=True, timeout=300)  # fmt: skip
    assert run.returncode == 0, run.stderr
    summary = json.loads(out.read_text())
    gen = summary["generated"]
    assert gen["samples"] == 60 and gen["accepted"] + gen["refused"] == 60
    assert set(gen["per_class"]) <= {"valid", "bytes", "st-valid"}
    assert gen["per_class"]["valid"]["accepted"] == gen["per_class"]["valid"]["samples"]
    assert summary["campaign"]["seed"] == 7 and summary["campaign"]["machine"]

    replay = subprocess.run([sys.executable, str(script), "--replay", "valid:5", "--save", str(tmp_path)],
                            capture_output=True, text=True, timeout=300)  # fmt: skip
    assert replay.returncode == 0, replay.stdout + replay.stderr
    assert "tool: accepts" in replay.stdout
    assert (tmp_path / "valid-5.pth").read_bytes() == diffgen.generate("valid", 5).data


def test_the_campaign_draws_every_class() -> None:
    """The campaign's default classes are its weight table's: a class added to diffgen and not there is never run
    (version-needed was not, the first time)."""
    sys.path.insert(0, str(ROOT / "bench"))
    import fuzz_differential

    assert set(fuzz_differential.WEIGHTS) == set(ALL_CLASSES)
