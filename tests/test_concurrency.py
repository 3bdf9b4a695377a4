"""Two `add` commands on one registry at once, 20 times: both entries land or one is refused cleanly.

Never a lost entry, a duplicate or an index.json that does not validate (bench/concurrency.py
runs more pairs and more repetitions). A control shows that the check notices a lost entry.
"""

from __future__ import annotations

import json
from pathlib import Path

import concurrency_harness as bench
import pytest


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return bench.prepare_template(tmp_path_factory.mktemp("concurrency"))


@pytest.mark.slow
def test_two_adds_at_once_twenty_times(template: Path, tmp_path: Path) -> None:
    outcomes = []
    for n in range(20):
        outcome, problems = bench.one_run(template, tmp_path / "work", "add+add", held=n % 5 == 0)
        assert problems == [], f"run {n}"
        outcomes.append(outcome)
    assert outcomes == ["both"] * 20  # the second waits for the lock, then adds on top of the first


def test_the_same_name_twice_is_refused_once(template: Path, tmp_path: Path) -> None:
    for held in (False, True):
        outcome, problems = bench.one_run(template, tmp_path / "work", "add+add-same", held=held)
        assert (outcome, problems) == ("one refused", [])


def test_the_check_notices_a_lost_entry(template: Path, tmp_path: Path) -> None:
    work = tmp_path / "work"
    argvs, results = bench.start_pair(template, work, "add+add", held=False)
    assert bench.check_pair(work, "add+add", argvs, results) == ("both", [])
    index_path = work / "reg" / "index.json"
    index = json.loads(index_path.read_text())
    index["entries"].pop()  # what a writer reading index.json outside the lock would leave
    index_path.write_text(json.dumps(index, indent=2) + "\n")
    _, problems = bench.check_pair(work, "add+add", argvs, results)
    assert any("the successful commands added" in p for p in problems)
