"""The full ``validate`` command agrees with the reader the differential check runs.

Generated files (tests/support/diffgen.py), some the reader accepts and some it refuses, are put in a
registry as its State file; ``rwkv-registry validate --format json`` must report no PTH finding on
that file when the reader accepts it, and the reader's rule on it when the reader refuses it.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import diffcheck
import diffgen
from regtools import TINY_BASE

STATE = f"{TINY_BASE}/state/v1/s1.pth"
CLI = Path(sys.executable).with_name("rwkv-registry")


def _samples(tmp: Path) -> list[tuple[diffgen.Sample, diffcheck.Outcome]]:
    """The first accepted and refused files of a few classes (seeded, so always the same files)."""
    wanted = {("valid", True): 1, ("record-values", True): 1, ("pickle-edits", True): 1, ("unowned-bytes", False): 1,
              ("eocd-in-comment", False): 1}  # fmt: skip
    out = []
    for (klass, accepted), n in wanted.items():
        for seed in range(200):
            sample = diffgen.generate(klass, seed)
            outcome = diffcheck.check(sample, tmp)
            if outcome.accepted == accepted and outcome.ok:
                out.append((sample, outcome))
                n -= 1
                if not n:
                    break
        else:
            raise AssertionError(f"no {'accepted' if accepted else 'refused'} {klass} sample in 200 seeds")
    return out


def test_validate_reports_what_the_reader_decided(state_only_template: Path, tmp_path: Path) -> None:
    for sample, outcome in _samples(tmp_path):
        reg = tmp_path / f"reg-{sample.klass}-{sample.seed}"
        shutil.copytree(state_only_template, reg)
        (reg / STATE).write_bytes(sample.data)
        run = subprocess.run([str(CLI), "validate", str(reg), "--format", "json", "--no-cache"],
                             capture_output=True, text=True, timeout=120)  # fmt: skip
        assert "Traceback" not in run.stderr, run.stderr
        report = json.loads(run.stdout)
        on_file = sorted({f["code"] for f in report["findings"] if f["path"] == STATE and f["code"].startswith("PTH")})
        expected = [] if outcome.accepted else [outcome.code]
        assert on_file == expected, f"{sample.replay} ({sample.note}): validate {on_file}, reader {expected}"
        assert run.returncode == (0 if report["ok"] else 1)
        if not outcome.accepted:
            assert not report["ok"]
        shutil.rmtree(reg)
