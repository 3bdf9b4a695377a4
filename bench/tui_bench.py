"""Benchmark: how responsive `rwkv-registry tui` stays at 2,000+ entries, on a quiet and on a loaded machine.

For each N of ``--entries`` a registry is written by :func:`tui_startup.build` (two bases, one frozen, 10
State and 10 MiSS data versions each, tiny real weight files). Then, in a fresh Python process each time,
the App runs headless (``App.run_test()`` and its Pilot, 120×40) with an empty validation cache, so that the
live validation hashes every file in the background while these actions are timed, in this order:

- ``startup``: ``RegistryApp()`` to the first frame with the tree mounted;
- ``filter``: focus the filter box (``/``) and type ``data:v2.3`` key by key, until the tree shows the final
  term's entries (every keystroke changes the box: the intermediate texts are filters too);
- ``clear``: ``escape`` in the box, until the tree shows every entry again;
- ``palette``: ``ctrl+p`` until the command palette lists its commands;
- ``palette_search``: type ``g3-v2`` in the palette until its hits are listed (the ``Go to <entry>`` commands),
  then ``escape``;
- ``cursor``: on the first entry of the biggest data version, ``down`` 50 times (the details of each entry
  are read in a worker, as the user moves);
- ``pilot_floor``: then as many presses of ``f24``, which nothing binds: the Pilot's own cost of 50 presses (each
  waits at least twice 20 ms for the process to go idle, ``textual._wait.wait_for_idle``), which ``cursor``
  includes; ``cursor`` minus this is the browser's share;
- ``validation``: from the first frame to the first validation's report (the files are hashed meanwhile).

Each action reports its wall time, the CPU time of the UI thread (``time.thread_time()`` in the event loop's
thread: the work that delays the next frame) and of the whole process (every thread, validation included),
and whether the validation was still running when the action began. ``--load`` names the conditions, run
alternately: ``quiet`` and ``hog`` (``--hogs`` processes of ``while 1: pass`` running meanwhile, by default
as many as the machine has cores). The figures are the medians of ``--repeat`` runs.
``--python LABEL=PYTHON`` (repeatable) measures several interpreters (e.g. checkouts before and after a
change), their runs alternating too. The count of messages the validation worker posted to the UI thread is
reported as ``ui_messages``.

Each run also records the machine's 1-minute load average as it starts (``load1``) and where the browser
validated (``validated_in``: a child process, or a thread where none could start). ``--worker-start N`` only
measures the validation process's start cost (:func:`worker_start`).

``--idle S`` measures instead how often the browser wakes while nobody touches it (:data:`IDLE_CHILD`): for S
seconds while the first validation runs (a cold cache: every file is hashed) and for S seconds after its report,
the browser process's own CPU time and voluntary context switches (``resource.getrusage(RUSAGE_SELF)``, every
thread, not the validation child: each sleep that ends in a wakeup is one switch), and the messages its UI
thread handled per cursor move during 50 moves (each waiting for the details to be drawn), Worker.StateChanged
among them. Alternate ``--python`` labels to compare checkouts.

``--frames`` measures the frames Textual draws, its layouts of the screen and the UI thread's CPU per cursor
move, with the details drawn at each move (the cursor rests 0.25 s) and no validation (:data:`FRAMES_CHILD`).

``--no-report`` ends each run after the cursor moves (``validation`` is then not measured): the interactive
actions only, in a fraction of the time on a loaded machine.

Usage: python bench/tui_bench.py [--entries 2000,4000] [--repeat 3] [--load quiet,hog] [--hogs N]
       [--python LABEL=PYTHON ...] [--no-report] [--json OUT]
       python bench/tui_bench.py --worker-start 1000 [--repeat 5]
       python bench/tui_bench.py --idle 10 [--entries 4000] [--repeat 3] [--python LABEL=PYTHON ...]
       python bench/tui_bench.py --frames [--entries 4000] [--repeat 3] [--python LABEL=PYTHON ...]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from crash import machine  # one machine description for every benchmark's figures
from tui_startup import build

ACTIONS = ("startup", "filter", "clear", "palette", "palette_search", "cursor", "pilot_floor", "validation")
FILTER_TERM = "data:v2.3"
PALETTE_TERM = "g3-v2"
CURSOR_MOVES = 50

CHILD = r"""
import asyncio, json, os, sys, threading, time

from rwkv_registry.catalog.entries import EntryFilter
from rwkv_registry.tui.app import RegistryApp

FILTER_TERM, PALETTE_TERM, MOVES, WAIT_REPORT = sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5] == "1"
seen = {}  # the hook sees a message at each node it reaches: count each once (kept alive, so ids stay unique)


def hook(message):
    if type(message).__name__ in ("FileChecked", "FilesChecked"):
        seen[id(message)] = message


class Clock:
    def __init__(self, app):
        self.app = app
        self.out = {}

    def start(self):
        self.t, self.cpu, self.ui = time.perf_counter(), time.process_time(), time.thread_time()
        self.busy = self.app.main.validating

    def stop(self, name):
        self.out[name] = {"wall_s": time.perf_counter() - self.t, "cpu_s": time.process_time() - self.cpu,
                          "ui_cpu_s": time.thread_time() - self.ui, "during_validation": self.busy}


async def until(pilot, condition, timeout=300.0):
    end = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > end:
            raise SystemExit("condition not reached in time")
        await pilot.pause(0.005)


def palette_items(app):
    from textual.command import CommandPalette, CommandList

    screen = app.screen
    if not isinstance(screen, CommandPalette):
        return -1
    return screen.query_one(CommandList).option_count


def searched(app):
    # the palette's search worker for the last keystroke has finished (its hits are listed)
    return all(w.is_finished for w in app.workers if w.group == "--textual-command-palette-gather-commands")


def filter_shown(main, term):
    want = EntryFilter.parse(term).describe()
    return main.tree.filter.describe() == want and main.query_one("#filter").value == term


async def main():
    t0, cpu0, ui0 = time.perf_counter(), time.process_time(), time.thread_time()
    load1 = os.getloadavg()[0]  # the machine's 1-minute load as the run starts (hogs, other jobs)
    app = RegistryApp(sys.argv[1], keymap={})
    clock = Clock(app)
    async with app.run_test(size=(120, 40), message_hook=hook) as pilot:
        await until(pilot, lambda: app.first_paint_s is not None and app.screen_stack and app.main.tree.root.children)
        clock.out["startup"] = {"wall_s": time.perf_counter() - t0, "cpu_s": time.process_time() - cpu0,
                                "ui_cpu_s": time.thread_time() - ui0, "during_validation": False}
        painted = time.perf_counter()
        main = app.main
        tree = main.tree
        await until(pilot, lambda: main.validating or main.report is not None)  # it starts right after first paint

        clock.start()
        await pilot.press("slash", *FILTER_TERM)
        await until(pilot, lambda: filter_shown(main, FILTER_TERM))
        await pilot.pause()
        clock.stop("filter")
        shown = tree.shown_entries

        clock.start()
        await pilot.press("escape")
        await until(pilot, lambda: filter_shown(main, ""))
        await pilot.pause()
        clock.stop("clear")

        clock.start()
        await pilot.press("ctrl+p")
        await until(pilot, lambda: palette_items(app) > 0)
        await pilot.pause()
        clock.stop("palette")

        clock.start()
        await pilot.press(*PALETTE_TERM)
        await until(pilot, lambda: palette_items(app) > 0 and app.screen.query_one("CommandInput").value == PALETTE_TERM
                    and searched(app))
        await pilot.pause()
        hits = palette_items(app)
        clock.stop("palette_search")
        await pilot.press("escape")
        await until(pilot, lambda: palette_items(app) == -1)

        groups = app.catalog.grouped()
        base, method, version = max(((b, m, v) for b, ms in groups.items() for m, vs in ms.items() for v in vs),
                                    key=lambda k: len(groups[k[0]][k[1]][k[2]]))
        tree.focus()
        assert tree.select_entry(str(groups[base][method][version][0]["id"]))
        await pilot.pause()
        clock.start()
        for _ in range(MOVES):
            await pilot.press("down")
        await until(pilot, lambda: main.current == tree.cursor_node.data)
        await pilot.pause()
        clock.stop("cursor")

        clock.start()  # the Pilot's own cost of as many presses: a key nothing binds (each press waits for idle twice)
        for _ in range(MOVES):
            await pilot.press("f24")
        await pilot.pause()
        clock.stop("pilot_floor")

        clock.t, clock.cpu, clock.ui, clock.busy = painted, None, None, True
        if WAIT_REPORT:
            await until(pilot, lambda: main.report is not None and not main.validating, timeout=600)
        clock.out["validation"] = {"wall_s": time.perf_counter() - painted if WAIT_REPORT else None, "cpu_s": None,
                                   "ui_cpu_s": None, "during_validation": True}
        result = {"actions": clock.out, "filter_shown": shown, "palette_hits": hits, "files": main.files_done,
                  "ui_messages": len(seen), "load1": load1,
                  "validated_in": "process" if getattr(main, "validation_pid", None) else "thread"}
        print("RESULT=" + json.dumps(result), flush=True)
        app.exit()

asyncio.run(main())
"""

IDLE_CHILD = r"""
import asyncio, json, os, resource, sys, threading, time

from rwkv_registry.tui.app import RegistryApp

SECONDS, MOVES = float(sys.argv[2]), int(sys.argv[3])
handled = [0, 0]  # messages the App's message pumps handled, and how many of them were Worker.StateChanged


def hook(message):
    handled[0] += 1
    handled[1] += type(message).__name__ == "StateChanged"


def usage():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime, r.ru_nvcsw


async def idle(pilot, seconds):
    cpu, switches = usage()
    await asyncio.sleep(seconds)  # nobody touches the browser
    cpu2, switches2 = usage()
    return {"cpu_s": round(cpu2 - cpu, 4), "wakeups": switches2 - switches}


async def until(pilot, condition, timeout=600.0):
    end = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > end:
            raise SystemExit("condition not reached in time")
        await pilot.pause(0.05)


async def main():
    app = RegistryApp(sys.argv[1], keymap={})
    out = {"load1": os.getloadavg()[0]}
    async with app.run_test(size=(120, 40), message_hook=hook) as pilot:
        main = app.main
        await until(pilot, lambda: main.validating)
        out["idle_validating"] = await idle(pilot, SECONDS) | {"still_validating": main.validating}
        await until(pilot, lambda: main.report is not None and not main.validating)
        await pilot.pause(0.5)
        out["idle_after"] = await idle(pilot, SECONDS)
        n, w = handled
        for _ in range(MOVES):
            await pilot.press("down")
            await pilot.pause(0.1)  # the details of each node are drawn (the cursor rests 0.1 s)
        await pilot.pause(0.5)
        out["messages_per_move"] = (handled[0] - n) / MOVES
        out["worker_changes_per_move"] = (handled[1] - w) / MOVES
        print("RESULT=" + json.dumps(out), flush=True)
        app.exit()

asyncio.run(main())
"""

FRAMES_CHILD = r"""
import asyncio, json, os, sys, time

from textual.app import App
from textual.screen import Screen

counts = {"frames": 0, "layouts": 0}
real_display, real_layout = App._display, Screen._refresh_layout


def display(self, *a, **k):
    counts["frames"] += 1
    return real_display(self, *a, **k)


def layout(self, *a, **k):
    counts["layouts"] += 1
    return real_layout(self, *a, **k)


App._display, Screen._refresh_layout = display, layout
from rwkv_registry.tui.app import RegistryApp

MOVES = int(sys.argv[2])


async def main():
    app = RegistryApp(sys.argv[1], validate_on_start=False, keymap={})
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause(1.0)
        tree = app.main.tree
        groups = app.catalog.grouped()
        b, m, v = max(((b, m, v) for b, ms in groups.items() for m, vs in ms.items() for v in vs),
                      key=lambda k: len(groups[k[0]][k[1]][k[2]]))
        tree.select_entry(str(groups[b][m][v][0]["id"]))
        await pilot.pause(0.5)
        counts.update(frames=0, layouts=0)
        ui = time.thread_time()
        for _ in range(MOVES):
            await pilot.press("down")
            await pilot.pause(0.25)  # the cursor rests: the details are drawn
        ui = time.thread_time() - ui
        out = {k: round(n / MOVES, 3) for k, n in counts.items()}
        print("RESULT=" + json.dumps(out | {"ui_cpu_ms": round(1000 * ui / MOVES, 2), "load1": os.getloadavg()[0]}))
        app.exit()

asyncio.run(main())
"""


def frames_bench(args: argparse.Namespace) -> dict[str, Any]:
    """``--frames``: frames, layouts and UI-thread CPU per cursor move, the details drawn at each (the cursor rests
    0.25 s), no validation; each ``--python`` alternating; medians of ``--repeat``."""
    pythons = [tuple(p.split("=", 1)) for p in args.python] or [("this", sys.executable)]
    n = int(args.entries.split(",")[0])
    rows: dict[str, list[dict[str, Any]]] = {label: [] for label, _ in pythons}
    with tempfile.TemporaryDirectory(prefix="rwkv-tui-frames-") as tmp:
        root = build(Path(tmp) / "registry", n)
        env = dict(os.environ, RWKV_REGISTRY_KEYMAP="")
        for _ in range(args.repeat):
            for label, python in pythons:
                out = subprocess.run(
                    [python, "-c", FRAMES_CHILD, str(root), "30"], capture_output=True, text=True, env=env
                )
                if "RESULT=" not in out.stdout:
                    raise SystemExit(f"child failed:\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}")
                r = json.loads(out.stdout.rsplit("RESULT=", 1)[1].splitlines()[0])
                rows[label].append(r)
                print(f"  {label}: {json.dumps(r)}", file=sys.stderr, flush=True)
    summary = {
        label: {k: statistics.median(r[k] for r in rs) for k in ("frames", "layouts", "ui_cpu_ms")}
        | {"load1": [round(r["load1"], 1) for r in rs]}
        for label, rs in rows.items()
    }
    return {"machine": machine(), "entries": n, "moves": 30, "per_move": summary}


def idle_bench(args: argparse.Namespace) -> dict[str, Any]:
    """``--idle S``: the browser's wakeups and CPU time while idle (see the module's doc), runs of each
    ``--python`` alternating; medians of ``--repeat``."""
    pythons = [tuple(p.split("=", 1)) for p in args.python] or [("this", sys.executable)]
    n = int(args.entries.split(",")[0])
    rows: dict[str, list[dict[str, Any]]] = {label: [] for label, _ in pythons}
    with tempfile.TemporaryDirectory(prefix="rwkv-tui-idle-") as tmp:
        root = build(Path(tmp) / "registry", n)
        k = 0
        for _ in range(args.repeat):
            for label, python in pythons:
                k += 1
                env = dict(os.environ, RWKV_REGISTRY_KEYMAP="", RWKV_REGISTRY_CACHE_DIR=str(Path(tmp) / f"cache-{k}"))
                cmd = [python, "-c", IDLE_CHILD, str(root), str(args.idle), str(CURSOR_MOVES)]
                out = subprocess.run(cmd, capture_output=True, text=True, env=env)
                if "RESULT=" not in out.stdout:
                    raise SystemExit(f"child failed:\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}")
                r = json.loads(out.stdout.rsplit("RESULT=", 1)[1].splitlines()[0])
                rows[label].append(r)
                print(f"  {label}: {json.dumps(r)}", file=sys.stderr, flush=True)
    summary: dict[str, Any] = {}
    for label, rs in rows.items():
        summary[label] = {
            phase: {m: statistics.median(r[phase][m] for r in rs) for m in ("cpu_s", "wakeups")}
            for phase in ("idle_validating", "idle_after")
        } | {
            "messages_per_move": statistics.median(r["messages_per_move"] for r in rs),
            "worker_changes_per_move": statistics.median(r["worker_changes_per_move"] for r in rs),
            "load1": [round(r["load1"], 1) for r in rs],
            "still_validating": sum(r["idle_validating"]["still_validating"] for r in rs),
        }
    return {"machine": machine(), "entries": n, "seconds": args.idle, "runs": args.repeat, "idle": summary}


def run_child(python: str, path: Path, cache: Path, *, wait_report: bool = True) -> dict[str, Any]:
    env = dict(os.environ, RWKV_REGISTRY_KEYMAP="", RWKV_REGISTRY_CACHE_DIR=str(cache))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    cmd = [python, "-c", CHILD, str(path), FILTER_TERM, PALETTE_TERM, str(CURSOR_MOVES), "1" if wait_report else "0"]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if "RESULT=" not in out.stdout:
        raise SystemExit(f"child failed:\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.rsplit("RESULT=", 1)[1].splitlines()[0])


def start_hogs(n: int) -> list[subprocess.Popen[bytes]]:
    return [subprocess.Popen([sys.executable, "-c", "while 1: pass"]) for _ in range(n)]


def stop_hogs(hogs: list[subprocess.Popen[bytes]]) -> None:
    for p in hogs:
        p.kill()
        p.wait()


def median_of(rows: list[dict[str, Any]], action: str, key: str) -> float | None:
    values = [r["actions"][action][key] for r in rows if r["actions"][action][key] is not None]
    return round(statistics.median(values), 3) if values else None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--entries", default="2000,4000")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--load", default="quiet,hog", help="comma-separated: quiet, hog")
    ap.add_argument("--hogs", type=int, default=os.cpu_count() or 2, help="busy-loop processes for the hog load")
    ap.add_argument("--python", action="append", default=[], metavar="LABEL=PYTHON")
    ap.add_argument("--json", type=Path)
    ap.add_argument(
        "--no-report",
        action="store_true",
        help="end each run after the cursor moves, without waiting for the validation's report (not measured)",
    )
    ap.add_argument(
        "--worker-start", type=int, metavar="N", help="only measure the validation process's start at N entries"
    )
    ap.add_argument("--idle", type=float, metavar="S", help="only measure an idle browser's wakeups for S seconds")
    ap.add_argument("--frames", action="store_true", help="only measure frames and layouts per cursor move")
    args = ap.parse_args()
    if args.frames:
        print(json.dumps(frames_bench(args), indent=2))
        return 0
    if args.idle:
        print(json.dumps(idle_bench(args), indent=2))
        return 0
    if args.worker_start:
        print(
            json.dumps(
                {"machine": machine(), "entries": args.worker_start} | worker_start(args.worker_start, args.repeat)
            )
        )
        return 0
    pythons = [tuple(p.split("=", 1)) for p in args.python] or [("this", sys.executable)]
    loads = [x for x in args.load.split(",") if x]
    failed: list[str] = []
    results: dict[str, Any] = {"machine": machine(), "hogs": args.hogs, "runs": {}, "failed": failed}
    with tempfile.TemporaryDirectory(prefix="rwkv-tui-bench-") as tmp:
        os.environ.setdefault("RWKV_REGISTRY_CACHE_DIR", str(Path(tmp) / "cache"))
        for n in (int(x) for x in args.entries.split(",")):
            root = Path(tmp) / f"n{n}" / "registry"
            build(root, n)
            rows: dict[tuple[str, str], list[dict[str, Any]]] = {}
            k = 0
            for _ in range(args.repeat):
                for load in loads:
                    for label, python in pythons:
                        k += 1
                        hogs = start_hogs(args.hogs) if load == "hog" else []
                        try:
                            r = run_child(python, root, Path(tmp) / f"cache-{n}-{k}", wait_report=not args.no_report)
                        except SystemExit as e:  # one run that timed out (a very loaded machine): keep the others
                            print(f"  {n} entries, {label}, {load}: run failed: {e}", file=sys.stderr, flush=True)
                            failed.append(f"{n}/{label}/{load}")
                            continue
                        finally:
                            stop_hogs(hogs)
                        rows.setdefault((label, load), []).append(r)
                        print(
                            f"  {n} entries, {label}, {load}, load1 {r.get('load1', 0):.1f}: "
                            + ", ".join(
                                f"{a} {r['actions'][a]['wall_s']:.2f}s"
                                + (f" ({r['actions'][a]['ui_cpu_s']:.2f} UI)" if r["actions"][a]["ui_cpu_s"] else "")
                                for a in ACTIONS
                                if r["actions"][a]["wall_s"] is not None
                            ),
                            file=sys.stderr,
                            flush=True,
                        )
            for (label, load), rs in rows.items():
                key = f"{n}/{label}/{load}"
                results["runs"][key] = {
                    "entries": n,
                    "python": label,
                    "load": load,
                    "runs": len(rs),
                    "filter_shown": rs[0]["filter_shown"],
                    "palette_hits": rs[0]["palette_hits"],
                    "files": rs[0]["files"],
                    "ui_messages": statistics.median(r["ui_messages"] for r in rs),
                    "load1": statistics.median(r.get("load1", 0.0) for r in rs),
                    "validated_in": sorted({r.get("validated_in", "thread") for r in rs}),
                    "actions": {
                        a: {m: median_of(rs, a, m) for m in ("wall_s", "ui_cpu_s", "cpu_s")}
                        | {"during_validation": sum(r["actions"][a]["during_validation"] for r in rs)}
                        for a in ACTIONS
                    },
                }
    print(f"{'entries/python/load':<26}" + "".join(f"{a:>22}" for a in ACTIONS) + "   ui msgs  load1")
    print(f"{'(wall s / UI-thread CPU s)':<26}")
    for key, r in results["runs"].items():
        cells = []
        for a in ACTIONS:
            v = r["actions"][a]
            ui = "-" if v["ui_cpu_s"] is None else f"{v['ui_cpu_s']:.3f}"
            cells.append("-" if v["wall_s"] is None else f"{v['wall_s']:.3f} / {ui}")
        print(f"{key:<26}" + "".join(f"{c:>22}" for c in cells) + f"   {r['ui_messages']:.0f}  {r['load1']:.1f}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    return 0


def worker_start(n: int, repeat: int) -> dict[str, float]:
    """The validation process's start cost: ``ValidationProcess()`` to its first message (the plan: interpreter
    started, rules imported, index.json walked) and the child's CPU time (user+sys), medians of ``repeat``
    (a registry of ``n`` entries, warm validation cache, so nothing is hashed before the plan)."""
    import resource
    import time

    from rwkv_registry.catalog.entries import Catalog
    from rwkv_registry.tui.validation_process import ValidationProcess

    with tempfile.TemporaryDirectory(prefix="rwkv-tui-worker-") as tmp:
        os.environ["RWKV_REGISTRY_CACHE_DIR"] = str(Path(tmp) / "cache")
        root = build(Path(tmp) / "registry", n)
        by_path = {str(e.get("path")): e for e in Catalog(root).entries}
        firsts, totals, cpus = [], [], []
        for i in range(repeat + 1):  # the first run fills the cache (not counted)
            usage = resource.getrusage(resource.RUSAGE_CHILDREN)
            t = time.perf_counter()
            proc = ValidationProcess(root, by_path)
            first = None
            while True:
                m = proc.receive(0.01)
                if m is None:
                    continue
                first = first or time.perf_counter() - t
                if m[0] in ("done", "failed", "crash", "died"):
                    break
            total = time.perf_counter() - t
            proc.stop()
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            if i:
                firsts.append(first)
                totals.append(total)
                cpus.append(after.ru_utime + after.ru_stime - usage.ru_utime - usage.ru_stime)
    return {
        "first_message_s": round(statistics.median(firsts), 3),
        "report_s": round(statistics.median(totals), 3),
        "child_cpu_s": round(statistics.median(cpus), 3),
    }


if __name__ == "__main__":
    raise SystemExit(main())
