"""bench/gpu_engine.py without a GPU: ``--help``, the 7.2B weight layout, the report table, and a
``--dry-run`` of every part on a tiny CPU model (the same code the H200 run takes)."""

from __future__ import annotations

import importlib.util
import json
import math
import subprocess
import sys
from pathlib import Path
from types import ModuleType, SimpleNamespace

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "bench" / "gpu_engine.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gpu_engine", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["gpu_engine"] = module
    spec.loader.exec_module(module)
    return module


def test_help_runs_without_a_gpu() -> None:
    done = subprocess.run([sys.executable, str(SCRIPT), "--help"], capture_output=True, text=True, check=True)
    assert "--dry-run" in done.stdout and "--out" in done.stdout and "--wheels" in done.stdout


def test_7b_layout_is_what_the_model_expects() -> None:
    """The bench's 7.2B shape reads back as itself from its tensor list, about 7.2e9 parameters."""
    from rwkv_registry.model.config import RWKV7Config

    engine = _load()
    shapes = engine.arch_config(engine.ARCH_7B).expected_shapes()
    config = RWKV7Config.from_shapes(shapes)
    assert (config.n_layer, config.n_embd, config.n_head, config.dim_ffn) == (32, 4096, 64, 16384)
    assert (config.d_decay, config.d_aaa, config.d_mv, config.d_gate) == (128, 128, 96, 480)
    assert config.expected_shapes() == shapes
    params = sum(math.prod(s) for s in shapes.values())
    assert 7.0e9 < params < 7.4e9, params


def test_table_marks_missing_parts_and_computes_ratios() -> None:
    engine = _load()
    results = {
        "plan": {"prefill_lengths": [2048], "decode_batches": [1, 64], "op_seq_len": 4096, "op_heads": 64},
        "ours": {
            "prefill": {"2048": {"tok_s": 30_000.0}},
            "decode": {"1": {"tok_s": 250.0, "mode": "cuda-graph"}, "64": {"tok_s": 7_000.0, "mode": "cuda-graph"}},
        },
        "rwkv": {"available": True, "prefill": {"2048": {"tok_s": 2_500.0}}, "decode_b1": {"tok_s": 40.0}},
        "fla": {"available": False, "reason": "cannot import fla.ops.rwkv7", "ours": {"tok_s": 3.0e6}},
    }
    text = engine.table(results)
    assert "| prefill B=1 T=2048 (tok/s) | 30,000 | 2,500 | 12.00× | ≥ 25,000 |" in text
    assert "| decode B=1 (tok/s) | 250 (cuda-graph) | 40 | 6.25× | ≥ 220 |" in text
    assert "| decode B=64 (tok/s) | 7,000 (cuda-graph) | one sequence at a time | — | ≥ 6,000 |" in text
    assert "fla: not available: cannot import fla.ops.rwkv7" in text
    assert "| matmul (TFLOP/s) | — |" in text
    results["rwkv"] = {"available": False, "reason": "cannot import rwkv"}
    assert "| prefill B=1 T=2048 (tok/s) | 30,000 | not available: cannot import rwkv | — |" in engine.table(results)


def test_preflight_falls_back_and_the_table_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    """A fast path that fails in its subprocess (here: the fused kernels) is turned off in this
    process, the next configuration is kept, and the table names the reason."""
    from rwkv_registry.model import wkv

    engine = _load()
    asked: list[dict[str, object]] = []

    def worker(kind: str, payload: dict[str, object], timeout: float, env: dict[str, str]) -> dict[str, object]:
        assert kind == "preflight"
        asked.append(payload)
        if payload["fused_ops"]:
            return {"available": False, "reason": "worker exited -11: illegal memory access"}
        return {"ok": True, "reason": None}

    monkeypatch.setattr(engine, "run_worker", worker)
    plan = engine.make_plan(True, None)
    before = wkv.set_fused_ops(True)
    try:
        pre = engine.preflight(plan, list(range(40)), 10)
        assert wkv.set_fused_ops(True) is False  # off in this process after the failure
    finally:
        wkv.set_fused_ops(before)
    assert [(a["fused_ops"], a["wkv"]) for a in asked] == [(True, "auto"), (False, "auto")]
    assert pre["fused_ops"] == "off" and pre["wkv"] == "auto" and [t["ok"] for t in pre["tried"]] == [False, True]
    text = engine.table({"plan": {}, "ours": {"preflight": pre}})
    assert "| fused element-wise kernels | OFF for this run (worker exited -11: illegal memory access)" in text


def test_a_timed_out_worker_is_killed_with_what_it_started(tmp_path: Path) -> None:
    """The rwkv worker's nvcc/ninja must not outlive its timeout: the whole process group goes."""
    import os
    import time

    engine = _load()
    pid_file = tmp_path / "grandchild"
    proc = subprocess.Popen(["sh", "-c", f"sleep 120 & echo $! > {pid_file}; wait"], start_new_session=True)
    deadline = time.monotonic() + 10
    while not (pid_file.exists() and pid_file.read_text().strip()) and time.monotonic() < deadline:
        time.sleep(0.05)
    grandchild = int(pid_file.read_text())
    engine._kill_group(proc)
    assert proc.returncode is not None
    for _ in range(100):
        try:
            os.kill(grandchild, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        pytest.fail(f"the worker's child {grandchild} survived")


def test_op_timings_off_cuda_say_they_are_host_timed() -> None:
    engine = _load()
    calls = []
    seconds, how = engine.timed_graph(lambda: calls.append(1), "cpu", reps=3)
    assert how == "host clock" and seconds >= 0 and len(calls) == 4  # one warm-up, three timed
    assert engine.finish_rwkv_build(None, 1.0) == {"built": "nothing to build (no CUDA)"}


@pytest.mark.slow
def test_dry_run_exercises_every_part(tmp_path: Path) -> None:
    """Every part on a tiny CPU model; and a part that never returns (SIGALRM blocked, as in a CUDA
    call that hangs: only h200.sh's outer timeout stopped it, and every later figure was lost) is
    injected before "ours decode B=4": the supervisor kills the run at its limit, records it, and
    a new run replays the parts before it and runs every part after it."""
    import os

    out = tmp_path / "results.json"
    env = {**os.environ, "GPU_ENGINE_TEST_HANG_BEFORE": "ours decode B=4"}
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--dry-run", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads(out.read_text())
    hang = "test: a part that never returns"
    assert set(results["hung_parts"]) == {hang} and results["hung_parts"][hang].startswith("timed out: did not return")
    assert f"{hang}: left out, it hung in the run before" in done.stderr
    assert "ours prefill: kept from the run before the restart" in done.stderr
    assert set(results["part_seconds"]) >= {hang, "ours decode B=4", "ours decode B=1 compiled", "fla chunk_rwkv7"}
    ours = results["ours"]
    for part in (ours["prefill"], *ours["decode"].values(), ours["miss"], ours["op_sweep"]):
        assert "error" not in part, part
    assert all(d["tok_s"] > 0 for d in ours["prefill"].values())
    assert ours["preflight"]["fused_ops"] == "on" and ours["preflight"]["tried"][0]["ok"] is True
    assert all(d["finite"] for d in ours["decode"].values())
    assert set(ours["miss"]) >= {"fly", "merge", "fly_overhead_pct"}
    assert ours["decode_compiled"]["1"]["tok_s"] > 0 and ours["decode_compiled"]["1"]["finite"]
    assert ours["vs_reference"]["rel_rms_max"] < 1e-4  # fp32: the interpreted kernels against the loop
    assert results["fla"]["available"] is False and results["fla"]["ours"]["tok_s"] > 0
    if results["rwkv"].get("available"):  # the rwkv package is a dev dependency; it may be absent
        assert set(results["rwkv"]["prefill"]) == {str(t) for t in results["plan"]["prefill_lengths"]}
        # both run fp32 on the CPU here: our model and the rwkv package must agree closely
        assert results["logits_vs_rwkv"]["rel_rms"] < 1e-4
    table = out.with_suffix(".md").read_text()
    assert table == results["table"]
    assert "| decode B=1 (tok/s) |" in table and "| copy bandwidth" in table
    assert "| fast path vs reference WKV" in table and "| decode B=1, torch.compile (tok/s) |" in table


def test_the_one_call_script_runs_its_steps_and_notes_them(tmp_path: Path) -> None:
    """bench/h200.sh on the CPU (DRY=1), the GPU-test step only: its summary names the step's exit."""
    import os

    out = tmp_path / "out"
    env = {**os.environ, "DRY": "1", "STEPS": "tests", "BUDGET": "200", "OUT": str(out), "PY": sys.executable}
    done = subprocess.run(
        ["bash", str(REPO / "bench" / "h200.sh")], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    summary = (out / "summary.txt").read_text()
    assert "dry run on the CPU" in summary and "gpu_tests: exit 0" in summary, summary
    assert "gpu_engine" not in summary and "smoke_bench" not in summary
    assert "skipped" in (out / "gpu_tests.log").read_text()  # every GPU test skips on a CPU


# ------------------------------------------------------------- one run, one chance: robustness


def test_every_part_saves_the_table_too(tmp_path: Path) -> None:
    """A run killed after any part leaves the .md table beside the JSON, the parts it did not
    reach marked as missing (the table was written only after the rwkv and fla comparisons)."""
    import time

    engine = _load()
    run = engine.Run(tmp_path / "r.json", time.monotonic() + 60)
    run.results["plan"] = {"prefill_lengths": [2048], "decode_batches": [1, 64], "op_seq_len": 4096, "op_heads": 64}
    run.results["copy"] = run.part("copy", lambda: {"GB_per_s": 4000.0})
    run.part("next", lambda: None)
    md = (tmp_path / "r.md").read_text()
    assert "| copy bandwidth (GB/s, read + write) | 4,000 |" in md
    assert "| prefill B=1 T=2048 (tok/s) | — | not available: not run |" in md
    assert json.loads((tmp_path / "r.json").read_text())["table"] == md


def test_a_part_past_the_deadline_is_not_started(tmp_path: Path) -> None:
    import time

    engine = _load()
    run = engine.Run(tmp_path / "r.json", time.monotonic() - 1)
    called: list[int] = []
    assert run.part("late", lambda: called.append(1)) == {"error": "skipped: the time limit was reached"}
    assert called == []


def test_the_preflight_keeps_to_its_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    """Three attempts of 240 s each were more than the whole run: a hang (here: every worker runs
    into its timeout) now costs at most the budget, and what was not tried says so."""
    from types import SimpleNamespace

    from rwkv_registry.model import wkv

    engine = _load()
    clock = [0.0]
    monkeypatch.setattr(engine, "time", SimpleNamespace(monotonic=lambda: clock[0]))
    timeouts: list[float] = []

    def worker(kind: str, payload: dict[str, object], timeout: float, env: dict[str, str]) -> dict[str, object]:
        timeouts.append(timeout)
        clock[0] += timeout
        return {"available": False, "reason": f"timed out after {timeout:.0f} s"}

    monkeypatch.setattr(engine, "run_worker", worker)
    before = wkv.set_fused_ops(True)
    try:
        pre = engine.preflight(engine.make_plan(True, None), list(range(40)), 240, budget=300)
    finally:
        wkv.set_fused_ops(before)
    assert timeouts == [240, 60]
    assert pre["tried"][2]["reason"] == "not tried: the preflight's time was spent"
    assert pre["fused_ops"] == "off" and "error" in pre


def test_a_truncated_wheel_is_left_out_not_fatal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import zipfile

    sys.path.insert(0, str(REPO / "bench"))
    try:
        import checkout
    finally:
        sys.path.remove(str(REPO / "bench"))
    with zipfile.ZipFile(tmp_path / "good-1.0-py3-none-any.whl", "w") as zf:
        zf.writestr("good/__init__.py", "")
    (tmp_path / "bad-1.0-py3-none-any.whl").write_bytes(b"PK\x03\x04 cut short by the copy")
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setenv("PYTHONPATH", "")
    target, skipped = checkout.unpack_wheels(tmp_path)
    assert (target / "good" / "__init__.py").exists()
    assert len(skipped) == 1 and skipped[0].startswith("bad-1.0-py3-none-any.whl (BadZipFile"), skipped


def _workers_of(script: Path, ancestor: int) -> list[int]:
    """Live processes running ``script --worker`` started under ``ancestor`` (the supervisor's
    measuring child starts them; not another test's)."""
    import os

    parents, found = {}, []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            args = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
            parents[int(entry)] = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if str(script).encode() in args and b"--worker" in args:
            found.append(int(entry))

    def under(pid: int) -> bool:
        for _ in range(16):
            pid = parents.get(pid, 0)
            if pid == ancestor:
                return True
            if pid <= 1:
                return False
        return False

    return [pid for pid in found if under(pid)]


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie counts as gone)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/cmdline").exists(), reason="needs Linux /proc")
def test_sigterm_saves_the_results_and_kills_the_workers(tmp_path: Path) -> None:
    """``timeout`` in h200.sh sends SIGTERM: the engine used to die at once, leaving its JSON
    without the table and its workers (own sessions) running into the next step. Now it kills
    them, records the interruption, writes JSON and table, and exits 124."""
    import os
    import signal
    import time

    out = tmp_path / "r.json"
    proc = subprocess.Popen(
        [sys.executable, str(SCRIPT), "--dry-run", "--skip-rwkv", "--out", str(out)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while not _workers_of(SCRIPT, proc.pid) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        workers = _workers_of(SCRIPT, proc.pid)
        assert workers, "no worker was started"
        os.kill(proc.pid, signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 124, err[-2000:]
    for _ in range(100):
        if not any(_alive(pid) for pid in workers):
            break
        time.sleep(0.05)
    assert not any(_alive(pid) for pid in workers), "a worker outlived the engine"
    results = json.loads(out.read_text())
    assert results["interrupted"].startswith("signal 15 after")
    assert out.with_suffix(".md").read_text() == results["table"]


@pytest.mark.slow
def test_a_step_that_runs_out_of_time_is_noted_and_the_script_goes_on(tmp_path: Path) -> None:
    """h200.sh with a Python whose pytest hangs: the step is stopped at its limit, the summary says
    it timed out, and the script still ends with its total."""
    import os

    fake = tmp_path / "python"  # the version probe and the wheel check run (the latter waited out its own 10 s)
    fake.write_text(
        f'#!/bin/sh\ncase "$1" in -c | bench/wheels.py) exec {sys.executable} "$@" ;; esac\nexec sleep 300\n'
    )
    fake.chmod(0o755)
    out = tmp_path / "out"
    env = {
        **os.environ,
        "DRY": "1",
        "STEPS": "tests",
        "BUDGET": "60",
        "TESTS_S": "20",
        "OUT": str(out),
        "PY": str(fake),
    }
    done = subprocess.run(
        ["bash", str(REPO / "bench" / "h200.sh")], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    summary = (out / "summary.txt").read_text()
    assert "gpu_tests: exit 124 in" in summary and "timed out: what it saved before stays" in summary, summary
    assert "python: 3." in summary and "torch " in summary, summary
    assert "total:" in summary


def _fake_rwkv(folder: Path, hang_above: int) -> None:
    """A stand-in ``rwkv`` package whose prefill hangs for sequences longer than ``hang_above``."""
    (folder / "rwkv").mkdir()
    (folder / "rwkv" / "__init__.py").write_text("")
    (folder / "rwkv" / "model.py").write_text(
        "import time\nimport torch\n\n\n"
        "class RWKV:\n"
        "    def __init__(self, model, strategy):\n"
        "        pass\n\n"
        "    def forward(self, tokens, state):\n"
        f"        if len(tokens) > {hang_above}:\n"
        "            time.sleep(300)\n"
        "        return torch.zeros(8), state\n"
    )


@pytest.mark.slow
def test_a_worker_out_of_time_hands_back_what_it_measured(tmp_path: Path) -> None:
    """The rwkv worker timed out at T=8192 used to lose its T=2048 figures with it: each part is
    now saved as it ends, and a timeout or crash returns them marked partial, with the reason."""
    import os

    engine = _load()
    _fake_rwkv(tmp_path, hang_above=100)
    payload = {
        "path": str(tmp_path / "w.pth"),
        "strategy": "cpu fp32",
        "device": "cpu",
        "tokens": list(range(300)),
        "lengths": [32, 200],
        "reps": 1,
        "steps": 2,
        "logits_path": str(tmp_path / "logits.pt"),
    }
    env = {"PYTHONPATH": os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH", "")]))}
    answer = engine.run_worker("rwkv", payload, 12, env)  # T=32 ends in under 6 s (torch's import included)
    assert answer["reason"] == "timed out after 12 s"
    assert answer["partial"] is True and answer["available"] is True
    assert set(answer["prefill"]) == {"32"} and answer["prefill"]["32"]["tok_s"] > 0
    text = engine.table({"plan": {"prefill_lengths": [32, 200], "decode_batches": [1]}, "rwkv": answer})
    assert "| prefill B=1 T=200 (tok/s) | — | — |" in text


def test_fla_failing_keeps_our_op_timing(monkeypatch: pytest.MonkeyPatch) -> None:
    """fla's own kernels failing (a Triton compile error on sm_90, say) lost our op's timing too."""
    import types

    import torch

    engine = _load()
    fla_ops = types.ModuleType("fla.ops.rwkv7")

    def chunk_rwkv7(**kwargs: object) -> object:
        raise RuntimeError("PassManager::run failed")

    fla_ops.chunk_rwkv7 = chunk_rwkv7  # type: ignore[attr-defined]
    for name in ("fla", "fla.ops"):
        monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    monkeypatch.setitem(sys.modules, "fla.ops.rwkv7", fla_ops)
    # the worker on "cuda" with CPU tensors: only the device name decides whether fla is tried
    real_inputs = engine.op_inputs
    monkeypatch.setattr(engine, "op_inputs", lambda T, H, B, device: real_inputs(T, H, B, "cpu"))
    monkeypatch.setattr(engine, "sync", lambda device: None)
    with torch.no_grad():
        answer = engine.worker_fla({"device": "cuda", "T": 8, "H": 1, "reps": 1})
    assert answer["available"] is False and answer["ours"]["tok_s"] > 0
    assert answer["reason"] == "fla's chunk_rwkv7 failed (RuntimeError: PassManager::run failed)"


def test_a_part_that_hangs_is_stopped_at_its_share_and_the_next_runs(tmp_path: Path) -> None:
    """A part hanging in Python code (a compile, a capture) used to run until h200.sh's timeout
    killed the engine, and every part after it was lost; it is now stopped at its share."""
    import signal
    import time

    engine = _load()
    run = engine.Run(tmp_path / "r.json", time.monotonic() + 100)
    run.min_part_s = 0.5
    before = signal.getsignal(signal.SIGALRM)
    start = time.monotonic()
    value = run.part("hang", lambda: time.sleep(30), share=0.005)
    assert time.monotonic() - start < 10
    assert value["error"].startswith("PartTimeout: stopped after"), value
    assert run.part("next", lambda: 7) == 7
    assert run.part("worker", lambda: time.sleep(0.7) or 8, share=None) == 8  # no alarm for workers
    assert signal.getsignal(signal.SIGALRM) == before


def _gone(pid: int) -> bool:
    """Whether ``pid`` has exited (a zombie waiting for its reaper counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return True
    return state in ("Z", "X")


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_a_hung_childs_workers_are_killed_with_their_own_children(tmp_path: Path) -> None:
    """The supervisor kills a hung child's process group; each worker is in a session of its own, and
    PR_SET_PDEATHSIG reaches only the worker, so the worker's children (nvcc, ninja, compiles) were left
    running. spawn_group lists each worker's group; kill_recorded_groups kills them all."""
    import os
    import signal
    import time

    engine = _load()
    groups = tmp_path / "groups"
    engine._GROUPS = groups
    try:
        mark = tmp_path / "grandchild.pid"
        worker = engine.spawn_group(["sh", "-c", f"sleep 300 & echo $! > {mark}; wait"])
        ended = engine.spawn_group(["true"])
        ended.wait()
        engine._release_group(ended)  # a worker that ended is struck from the list
        for _ in range(200):
            if mark.exists() and mark.read_text().strip():
                break
            time.sleep(0.05)
        grandchild = int(mark.read_text())
        os.kill(worker.pid, signal.SIGKILL)  # what PR_SET_PDEATHSIG does when the child dies
        worker.wait()
        assert not _gone(grandchild), "the worker's own child outlives the worker"
        assert groups.read_text().split() == [str(worker.pid)]
        assert engine.kill_recorded_groups(groups) == [worker.pid]
        for _ in range(100):
            if _gone(grandchild):
                break
            time.sleep(0.05)
        assert _gone(grandchild)
        assert not groups.exists()
        assert engine.kill_recorded_groups(groups) == []
    finally:
        engine._GROUPS = None
    source = SCRIPT.read_text()
    assert source.count('kill_recorded_groups(child_dir / "groups")') == 2  # after a hung child, and at the end


# ------------------------------------------------------------- a child that dies, and the exit status


def test_a_part_saved_just_before_a_crash_is_kept_not_lost(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run.part saves a part's end in done.json, then clears part.json: a child killed between the two left
    part.json naming a part that had finished, and the supervisor recorded that finished part as lost (its
    figure replaced by an error in the restarted run). Now done.json carries the heartbeat's id, and a part
    saved under the same heartbeat counts as finished: the restart replays it."""
    import time

    engine = _load()
    child = tmp_path / "child"
    child.mkdir()
    run = engine.Run(tmp_path / "r.json", time.monotonic() + 60, child)
    assert run.part("copy", lambda: {"GB_per_s": 1.0}) == {"GB_per_s": 1.0}
    assert engine._lost_part(child) is None  # a clean end

    class Killed(BaseException):
        pass

    real_heartbeat = engine.Run._heartbeat

    def dies_before_clearing(self: object, name: str | None, limit: float | None, retry: bool = False) -> None:
        if name is None:
            raise Killed  # the process ends here: done.json written, part.json not yet cleared
        real_heartbeat(self, name, limit, retry)

    monkeypatch.setattr(engine.Run, "_heartbeat", dies_before_clearing)
    with pytest.raises(Killed):
        run.part("matmul", lambda: {"TFLOP_per_s": 2.0})
    assert engine._read_json(child / "part.json")["name"] == "matmul"
    assert engine._lost_part(child) is None, "a part whose end was saved is not lost"
    monkeypatch.setattr(engine.Run, "_heartbeat", real_heartbeat)

    again = engine.Run(tmp_path / "r.json", time.monotonic() + 60, child)  # the restarted child
    assert again.part("matmul", lambda: pytest.fail("a saved part is replayed, not run again")) == {"TFLOP_per_s": 2.0}
    ran: list[int] = []  # a part that is not data (replay=False): its end saved without a value, run again
    assert again.part("weights", lambda: ran.append(1) or object(), replay=False) is not None
    assert "value" not in again.done["weights"] and engine._lost_part(child) is None
    third = engine.Run(tmp_path / "r.json", time.monotonic() + 60, child)
    third.part("weights", lambda: ran.append(2), replay=False)
    assert ran == [1, 2]
    # a part that died while running is lost: part.json names it, done.json has no end under its heartbeat
    third._heartbeat("ours prefill", 10.0)
    assert engine._lost_part(child) == "ours prefill"
    third._heartbeat("weights", 10.0)  # ended in an earlier child, dying in this one: lost
    assert engine._lost_part(child) == "weights"


def _supervise_in_process(
    engine: ModuleType, out: Path, monkeypatch: pytest.MonkeyPatch, restarts: int = 0, **env: str
) -> tuple[int, dict[str, object]]:
    """engine.supervise on a --dry-run with --skip-rwkv --skip-fla --skip-compile, in this process (its
    SIGTERM handlers left out), with ``restarts`` restarts allowed; the exit status and the results."""
    argv = ["--dry-run", "--skip-rwkv", "--skip-fla", "--skip-compile", "--out", str(out), "--time-limit", "240"]
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setattr(engine, "install_interrupt_handlers", lambda: None)
    monkeypatch.setattr(engine, "MAX_RESTARTS", restarts)
    rc = engine.supervise(argv, SimpleNamespace(out=out, time_limit=240.0))
    return rc, json.loads(out.read_text())


@pytest.mark.slow
def test_giving_up_exits_3_and_rewrites_the_table_with_the_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A child killed by a signal between parts: the supervisor returned its negative status as the
    script's (sys.exit(-9) is 247, which h200.sh noted as a plain failure, and every later part was lost);
    it is now restarted, and once the restarts are spent the script exits EXIT_GAVE_UP (3). Giving up used
    to rewrite the JSON but not the .md table beside it: both now say why the run stopped."""
    engine = _load()
    out = tmp_path / "r.json"
    rc, results = _supervise_in_process(engine, out, monkeypatch, GPU_ENGINE_TEST_DIE_AFTER="copy")
    assert rc == engine.EXIT_GAVE_UP == 3
    assert "hung_parts" not in results  # the copy figure ended and was saved: nothing is lost
    assert "environment" in results["part_seconds"]  # what the child saved stays
    assert results["interrupted"] == "the run was killed by SIGKILL, and 0 restarts were spent: gave up"
    md = out.with_suffix(".md").read_text()
    assert md == results["table"] == engine.table(results)
    assert "| the run stopped early | the run was killed by SIGKILL, and 0 restarts were spent: gave up |" in md


@pytest.mark.slow
def test_giving_up_after_a_part_died_names_it_in_json_and_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = _load()
    out = tmp_path / "r.json"
    rc, results = _supervise_in_process(engine, out, monkeypatch, GPU_ENGINE_TEST_DIE_BEFORE="matmul")
    assert rc == 3
    assert results["copy"]["GB_per_s"] > 0  # the part before the one it died in: stored after its own save
    die = "test: a part whose process dies"
    assert results["hung_parts"] == {die: "the process was killed by SIGKILL in it; the run was restarted after it"}
    md = out.with_suffix(".md").read_text()
    assert md == results["table"] == engine.table(results)
    assert die in md and "| the run stopped early |" in md


@pytest.mark.slow
def test_a_crash_while_the_weights_are_built_is_tried_once_more_not_every_model_figure_lost(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    """A child that died inside "random weights" (or "build model") had that part recorded as lost, and the
    restarted child then skipped every model figure (prefill, decode, MiSS, logits) for want of weights. Such a
    part, which the later ones need, is now run once more after one crash: every figure is measured."""
    engine = _load()
    out = tmp_path / "r.json"
    rc, results = _supervise_in_process(engine, out, monkeypatch, restarts=1, GPU_ENGINE_TEST_DIE_IN="random weights")
    assert rc == engine.EXIT_OK, capfd.readouterr().err[-3000:]
    assert "random weights: the process was killed by SIGKILL in it; running it once more" in capfd.readouterr().err
    assert "hung_parts" not in results and "interrupted" not in results
    ours = results["ours"]
    assert isinstance(ours, dict) and "error" not in ours
    assert all(d["tok_s"] > 0 for d in ours["prefill"].values())
    assert all("error" not in d and d["tok_s"] > 0 for d in ours["decode"].values())
    assert out.with_suffix(".md").read_text() == results["table"]


@pytest.mark.slow
def test_a_part_the_others_need_that_crashes_twice_is_lost_once_and_the_rest_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Tried once more, not for ever: a model build that crashes every time is recorded lost after its second
    crash (one restart for the retry, one after it), the model figures say why, the op figures are measured;
    a part that is data (the matmul rate) is not tried again: one crash loses it."""
    engine = _load()
    out = tmp_path / "r.json"
    rc, results = _supervise_in_process(
        engine, out, monkeypatch, restarts=2, GPU_ENGINE_TEST_DIE_IN="build model", GPU_ENGINE_TEST_DIE_IN_TIMES="9"
    )
    assert rc == engine.EXIT_OK
    why = "the process was killed by SIGKILL in it (also when run once more); the run was restarted after it"
    assert results["hung_parts"] == {"build model": why}
    ours = results["ours"]
    assert isinstance(ours, dict) and why in ours["error"]
    assert "prefill" not in ours and "error" not in ours["op_sweep"]
    assert "| parts that hung or crashed (the run went on without each) | build model |" in results["table"]
    assert out.with_suffix(".md").read_text() == results["table"]

    rc, results = _supervise_in_process(
        engine, tmp_path / "m.json", monkeypatch, restarts=1, GPU_ENGINE_TEST_DIE_IN="matmul"
    )
    assert rc == engine.EXIT_OK
    assert results["hung_parts"] == {
        "matmul": "the process was killed by SIGKILL in it; the run was restarted after it"
    }
    assert isinstance(results["copy"], dict) and results["copy"]["GB_per_s"] > 0


@pytest.mark.slow
def test_a_child_that_dies_in_a_part_loses_only_that_part(tmp_path: Path) -> None:
    """The other way a part is lost (only the hang was tested): its process dies inside it (a crash in
    native code, SIGKILL). The part is recorded as lost, the run restarts after it, replays what finished
    and runs the rest; a child killed just after a part was saved loses nothing (replayed after a restart)."""
    import os

    out = tmp_path / "results.json"
    env = {
        **os.environ,
        "GPU_ENGINE_TEST_DIE_BEFORE": "ours decode B=4",
        "GPU_ENGINE_TEST_DIE_AFTER": "ours prefill",
    }
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--dry-run", "--skip-rwkv", "--skip-fla", "--skip-compile", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=400,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads(out.read_text())
    die = "test: a part whose process dies"
    assert results["hung_parts"] == {die: "the process was killed by SIGKILL in it; the run was restarted after it"}
    assert "the run was killed by SIGKILL between parts; restarting it" in done.stderr
    assert done.stderr.count("ours prefill: kept from the run before the restart") == 2
    ours = results["ours"]
    assert ours["prefill"] and all(d["tok_s"] > 0 for d in ours["prefill"].values())
    assert all("error" not in d and d["tok_s"] > 0 for d in ours["decode"].values())
    assert "error" not in ours["fused_ops"] and "interrupted" not in results
    assert out.with_suffix(".md").read_text() == results["table"]


@pytest.mark.slow
def test_the_summary_is_appended_to_and_names_the_engine_giving_up(tmp_path: Path) -> None:
    """h200.sh emptied summary.txt as it started, so a second call into the same $OUT lost the first one's
    lines; and the engine's exit status 3 (gave up) is noted as such."""
    import os

    fake = tmp_path / "python"  # the version probe runs; the engine "gives up" at once
    fake.write_text(f'#!/bin/sh\nif [ "$1" = "-c" ]; then exec {sys.executable} "$@"; fi\nexit 3\n')
    fake.chmod(0o755)
    out = tmp_path / "out"
    for steps in ("engine", "none"):
        env = {**os.environ, "DRY": "1", "STEPS": steps, "BUDGET": "60", "OUT": str(out), "PY": str(fake)}
        done = subprocess.run(
            ["bash", str(REPO / "bench" / "h200.sh")], env=env, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stderr[-2000:]
    summary = (out / "summary.txt").read_text()
    assert summary.count("total:") == 2 and "steps: engine , budget 60 s" in summary, summary
    assert "gpu_engine: exit 3 in" in summary and "gave up: its measuring process kept dying" in summary, summary
