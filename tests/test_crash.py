"""Crash safety: SIGKILL at a dozen points of `init`, `add-base`, `add` and `sums` (bench/crash.py runs hundreds).

After each kill, `rwkv-registry recover` (any next command) says what it recovered, and the
registry is byte-identical to before the command or to an uninterrupted run (then it validates).
Also: the created-directory record, journals that ask for renames outside the registry, the
recovery message of ordinary commands, re-running a killed `init`, and a control showing that the
harness does notice a damaged registry.
"""

from __future__ import annotations

import json
import logging
import subprocess
from pathlib import Path

import crash_harness as harness
import pytest

from rwkv_registry.core.errors import RegistryIOError
from rwkv_registry.fs.atomic import DIRS_NAME, JOURNAL_NAME, TMP_PREFIX, Transaction, recover, registry_lock

KILLS = [
    ("init", "written-2"),
    ("init", "journal"),
    ("init", "rename-3"),
    ("add-base", "mkdir-1"),
    ("add-base", "partial-2"),
    ("add-base", "renamed"),
    ("add", "mkdir-0"),
    ("add", "journal-tmp"),
    ("add", "rename-0"),
    ("sums", "partial-0"),
    ("sums", "staged"),
    ("sums", "committed"),
]


@pytest.fixture(scope="module")
def scenarios(tmp_path_factory: pytest.TempPathFactory) -> dict[str, harness.Scenario]:
    base = tmp_path_factory.mktemp("crash")
    for name in sorted({s for s, _ in KILLS}):
        harness.prepare(harness.SCENARIOS[name], base, timing=False)
    return harness.SCENARIOS


@pytest.mark.parametrize(("scenario", "point"), KILLS, ids=[f"{s}@{p}" for s, p in KILLS])
def test_kill_then_recover(scenario: str, point: str, scenarios: dict, tmp_path: Path) -> None:
    scn = scenarios[scenario]
    assert point in scn.points
    work = tmp_path / "work"
    harness.fresh(scn, work)
    rc, _ = harness.run_command(scn, work, fault=point)
    assert rc == -9, f"{point} was not reached"
    result = harness.check_after_kill(scn, work, f"point:{point}", rc, rerun=True)
    assert result.problems == []
    assert bool(result.left) == (point != "committed"), "a kill inside a write leaves its temporary files"
    before_journal = point.startswith(("mkdir", "partial", "written", "staged", "journal-tmp"))
    assert result.outcome == ("before" if before_journal else "after")


def test_the_harness_notices_a_damaged_registry(scenarios: dict, tmp_path: Path) -> None:
    """Control: a registry left half-written (one rename done, journal lost) is neither state."""
    scn = scenarios["add"]
    work = tmp_path / "work"
    harness.fresh(scn, work)
    rc, _ = harness.run_command(scn, work, fault="rename-1")
    (work / "reg" / JOURNAL_NAME).unlink()  # what a naive writer without a journal would leave
    result = harness.check_after_kill(scn, work, "point:rename-1", rc, rerun=False)
    assert result.outcome == "neither" and result.problems


# --- the created-directory record ------------------------------------------------------------------------


def test_rollback_removes_directories_created_by_a_killed_write(tmp_path: Path) -> None:
    (tmp_path / "a").write_text("old")
    txn = Transaction(tmp_path)
    txn.write_bytes("base/state/v1/f", b"new")  # creates base/, base/state/, base/state/v1/
    assert (tmp_path / DIRS_NAME).read_text() == "base\nbase/state\nbase/state/v1\n"
    del txn  # the process dies here: nothing rolls back in-process
    messages = recover(tmp_path)
    assert messages == ["removed 2 temporary file(s) and 3 empty directory(ies) of an interrupted write"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a"]


def test_recover_keeps_directories_that_hold_files(tmp_path: Path) -> None:
    (tmp_path / "base").mkdir()
    (tmp_path / "base" / "kept").write_text("x")
    (tmp_path / DIRS_NAME).write_text("base\nbase/new\n../outside\nbase/cut-by-the-crash")
    (tmp_path / "base" / "new").mkdir()
    (tmp_path.parent / "outside").mkdir(exist_ok=True)
    recover(tmp_path)
    assert (tmp_path / "base" / "kept").exists() and not (tmp_path / "base" / "new").exists()
    assert (tmp_path.parent / "outside").is_dir()  # never touched: not inside the registry
    assert not (tmp_path / DIRS_NAME).exists()


def test_recover_ignores_a_record_line_cut_by_the_crash(tmp_path: Path) -> None:
    """A crash while appending ``b/partial\n`` leaves ``b/par``: only complete lines count, so an
    existing empty directory that happens to carry the cut-off name is not removed."""
    (tmp_path / "a").mkdir()  # recorded and created by the killed write
    (tmp_path / "b" / "par").mkdir(parents=True)  # the user's own, empty, there before the write
    (tmp_path / DIRS_NAME).write_text("a\nb/par")
    messages = recover(tmp_path)
    assert messages == ["removed 1 temporary file(s) and 1 empty directory(ies) of an interrupted write"]
    assert not (tmp_path / "a").exists()
    assert (tmp_path / "b" / "par").is_dir()
    assert not (tmp_path / DIRS_NAME).exists()


def test_commit_leaves_no_record(tmp_path: Path) -> None:
    with Transaction(tmp_path) as txn:
        txn.write_bytes("d/e/f", b"1")
        txn.commit()
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")) == ["d", "d/e", "d/e/f"]


# --- journals from strangers -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "rename",
    [
        [f"{TMP_PREFIX}x-a", "../victim"],
        [f"../{TMP_PREFIX}x-a", "a"],
        [f"{TMP_PREFIX}x-a", "/etc/victim"],
        ["payload", "a"],
        [f"{TMP_PREFIX}x-a", "sub/a"],
        [f"sub/{TMP_PREFIX}x-a", f"sub/{TMP_PREFIX}y"],
        [f"{TMP_PREFIX}x-a", 7],
    ],
)
def test_journal_asking_for_foreign_renames_is_refused(rename: list, tmp_path: Path) -> None:
    reg = tmp_path / "reg"
    (reg / "sub").mkdir(parents=True)
    (reg / f"{TMP_PREFIX}x-a").write_text("attacker content")
    (reg / "payload").write_text("attacker content")
    (tmp_path / "victim").write_text("precious")
    (reg / JOURNAL_NAME).write_text(json.dumps({"renames": [rename]}))
    with pytest.raises(RegistryIOError, match="no rwkv-registry write does; nothing was changed"):
        recover(reg)
    assert (tmp_path / "victim").read_text() == "precious"
    assert (reg / JOURNAL_NAME).exists() and (reg / f"{TMP_PREFIX}x-a").exists()


def test_journal_through_a_symlink_out_of_the_registry_is_refused(tmp_path: Path) -> None:
    reg = tmp_path / "reg"
    reg.mkdir()
    (tmp_path / "elsewhere").mkdir()
    (reg / "link").symlink_to(tmp_path / "elsewhere")
    (tmp_path / "elsewhere" / f"{TMP_PREFIX}x-a").write_text("attacker")
    (reg / JOURNAL_NAME).write_text(json.dumps({"renames": [[f"link/{TMP_PREFIX}x-a", "link/a"]]}))
    with pytest.raises(RegistryIOError):
        recover(reg)
    assert not (tmp_path / "elsewhere" / "a").exists()


def test_oversize_journal_is_refused_unread(tmp_path: Path) -> None:
    with open(tmp_path / JOURNAL_NAME, "wb") as f:
        f.truncate(64 * 1024 * 1024)
    with pytest.raises(RegistryIOError, match="unreadable journal"):
        recover(tmp_path)


# --- messages, and re-running a killed init ---------------------------------------------------------------


def test_the_next_command_reports_what_it_recovered(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    (tmp_path / f"{TMP_PREFIX}abc-index.json").write_text("{}")
    with caplog.at_level(logging.WARNING, logger="rwkv_registry"), registry_lock(tmp_path) as messages:
        pass
    assert messages == ["removed 1 temporary file(s) of an interrupted write"]
    assert caplog.messages == [f"{tmp_path}: removed 1 temporary file(s) of an interrupted write"]
    caplog.clear()
    (tmp_path / f"{TMP_PREFIX}def-index.json").write_text("{}")
    with registry_lock(tmp_path, quiet=True):
        pass
    assert caplog.messages == []


def test_cli_write_command_prints_the_recovery_on_stderr(scenarios: dict, tmp_path: Path) -> None:
    scn = scenarios["sums"]
    work = tmp_path / "work"
    harness.fresh(scn, work)
    assert harness.run_command(scn, work, fault="journal")[0] == -9
    run = subprocess.run(
        [*harness.CLI, "sums", str(work / "reg")], capture_output=True, text=True, env=harness.env(work, None)
    )
    assert run.returncode == 0
    assert "completed an interrupted write (1 of 1 file(s) were pending)" in " ".join(run.stderr.split())
    assert "SHA256SUMS written" in run.stdout


def test_killed_init_can_be_run_again(scenarios: dict, tmp_path: Path) -> None:
    scn = scenarios["init"]
    work = tmp_path / "work"
    harness.fresh(scn, work)
    assert harness.run_command(scn, work, fault="written-0")[0] == -9
    assert harness.leftovers(work / "reg")  # not recovered: init itself must cope
    rc, _ = harness.run_command(scn, work)
    assert rc == 0
    assert harness.snapshot(work / "reg") == scn.after
