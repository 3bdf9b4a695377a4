"""CPU time of `rwkv-registry pull` against the local Hub look-alike (tests/support/hub_server.py).

Registries served: the seed-shaped demo (one 16 MiB State, three 36 MiB MiSS adapters), a "many States" one
(``--states`` State files of a small base, about 3 MB each), and the same States kept in plain git rather than
LFS (their download is checked by git blob id). Each pull runs in a child process (`rwkv_registry.cli.main pull
OWNER/REPO DEST`, a fresh cache directory and a fresh DEST each time, as a user pulling for the first time); its
CPU time (user + sys, from ``os.wait4``) and wall time are recorded. The server runs in this process, so its work
is not counted.

"resumed": a first pull is stopped half-way (the storage answers 403 to the weights past half of the weight
bytes, so it exits 2), then the same pull runs again into the same DEST; only that second pull is measured (a
checkout that cannot resume downloads everything again). "stopped inside a large file": the first pull's
connection to the storage is cut half-way through the last weight file (by path; nothing past its half arrives, so
every retry fails), the others complete; the second pull is measured (a checkout that continues a file cut short
asks for its second half only, one without fetches it whole).

``--checkout DIR`` (repeatable) runs the code of another checkout (e.g. a ``git worktree`` of main) in the
child; with several, the runs alternate (A B A B …) so that the machine's load falls on each alike.
Figures: the median of ``--repeat`` pulls per registry and checkout.

``--large-workers 1 2 4``: instead of whole pulls, time the download of the demo's four weight files (one 16 MiB
State, three 36 MiB MiSS adapters) in this process with pull's own ``_fetch_large`` (download and check of each
file, as a pull does), ``LARGE_WORKERS`` set to N (1: one after another), the runs alternating; wall time, and the
CPU time of this process (``resource.getrusage``: the test server's threads included). ``--latency-ms`` (a pause
before each answer) and ``--bandwidth-mbs`` (MB/s of each answer: a per-connection cap) make the server play a
slow link, for whole pulls too.

Usage: python bench/pull_bench.py [--checkout DIR ...] [--repeat 5] [--states 50] [--only REGEX ...] [--json OUT]
                                  [--latency-ms 50] [--bandwidth-mbs 20]
       python bench/pull_bench.py --large-workers 1 2 4 [--latency-ms 50] [--bandwidth-mbs 20] [--repeat 5]
For stable figures: ``unset PYTHONDONTWRITEBYTECODE`` and ``python -m compileall -q registry`` in each
checkout first (every child would otherwise compile the package again).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from crash import machine

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "support"))

# the child: import rwkv_registry from the checkout given first (even when another one is installed), then the CLI
LAUNCH = """
import importlib.util, sys
from pathlib import Path
repo = Path(sys.argv[1])
spec = importlib.util.spec_from_file_location(
    "rwkv_registry", repo / "registry" / "__init__.py", submodule_search_locations=[str(repo / "registry"), str(repo)]
)
module = importlib.util.module_from_spec(spec)
sys.modules["rwkv_registry"] = module
spec.loader.exec_module(module)
from rwkv_registry.cli.main import main
sys.exit(main(sys.argv[2:]))
"""


def many_states(root: Path, tmp: Path, n: int) -> Path:
    """A registry of ``n`` bf16 State files (24 layers × [16, 64, 64], 3.1 MB each) under one base."""
    from regtools import state_train

    from rwkv_registry.index.arch import parse_arch_option
    from rwkv_registry.store.demo import write_synthetic_state
    from rwkv_registry.store.ops import add_base, add_entry, init_registry

    init_registry(root, name="tester/many-states")
    arch = parse_arch_option("n_layer=24,n_embd=1024,vocab_size=65536,head_size=64,ffn_size=4096")
    base = "rwkv7-g1a-0.4b-20250905-ctx4096"
    add_base(root, name=base, source="BlinkDL/rwkv7-g1", sha256="5" * 64, size=None, arch=arch)
    for i in range(n):
        f = tmp / f"s{i:03d}.pth"
        write_synthetic_state(f, arch, seed=i + 1)
        add_entry(root, f, base=base, data_version="v1", train=state_train())
        f.unlink()
    return root


def plain_git(hub: Any, repo_id: str, root: Path) -> str:
    """Create ``repo_id`` holding the registry at ``root`` with its weights (under the Hub's 10 MB LFS threshold) in
    plain git: committed before the .gitattributes that routes them to LFS."""
    hub.create_repo(repo_id, {".gitattributes": b"*.md text\n"})
    files = {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.name.startswith(".rwkv-registry")
    }
    hub.commit_files(repo_id, {r: b for r, b in files.items() if r != ".gitattributes"})
    return hub.commit_files(repo_id, {".gitattributes": files[".gitattributes"]})


def failing_half(hub: Any, repo_id: str) -> Any:
    """A rewrite hook of the Hub look-alike answering 403 to the download of every weight file past the first half
    of the weight bytes (sorted by path): a pull stopped half-way."""
    tree = hub.repos[repo_id].commits[hub.head(repo_id)]
    weights = sorted(r for r in tree if r.endswith(".pth"))
    total, seen, failing = sum(tree[r].size for r in weights), 0, set()
    for rel in weights:
        seen += tree[rel].size
        if seen > total / 2:
            failing.add(rel)
    shas = {tree[r].sha256 for r in failing if tree[r].lfs}
    plain = {r for r in failing if not tree[r].lfs}

    def hook(server: str, method: str, path: str, status: int, body: bytes, headers: dict[str, str]) -> tuple:
        if method == "GET" and (
            (server == "cdn" and path.rsplit("/", 1)[-1] in shas)
            or (server == "api" and "/resolve/" in path and path.split("/resolve/", 1)[1].split("/", 1)[1] in plain)
        ):
            return 403, b"AccessDenied", {"Content-Length": "12"}
        return status, body, headers

    return hook


def cut_inside(hub: Any, repo_id: str) -> Any:
    """A rewrite hook of the Hub look-alike cutting every answer for the last weight file (by path) at half of the
    file: the bytes before it arrive, then the connection closes (Content-Length still promises the rest)."""
    tree = hub.repos[repo_id].commits[hub.head(repo_id)]
    last = sorted(r for r in tree if r.endswith(".pth"))[-1]
    blob, half = tree[last], tree[last].size // 2

    def hook(server: str, method: str, path: str, status: int, body: bytes, headers: dict[str, str]) -> tuple:
        if method == "GET" and status in (200, 206) and path.rsplit("/", 1)[-1] == blob.sha256 and server == "cdn":
            span = headers.get("Content-Range", "")
            start = int(span.split(" ", 1)[1].split("-", 1)[0]) if span.startswith("bytes ") else 0
            return status, body[: max(0, half - start)], headers
        return status, body, headers

    return hook


def pull_once(
    checkout: Path, repo_id: str, dest: Path, env: dict[str, str], *, fails: bool = False
) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of one pull in a child process; ``fails``: it must exit 2 (a stopped pull)."""
    with tempfile.TemporaryFile() as out:
        t0 = time.perf_counter()
        child = subprocess.Popen(
            [sys.executable, "-c", LAUNCH, str(checkout), "pull", repo_id, str(dest)], env=env, stdout=out, stderr=out
        )
        _, status, usage = os.wait4(child.pid, 0)  # the child's own rusage (Popen.wait would reap it first)
        child.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - t0
        if fails and child.returncode != 2:
            out.seek(0)
            raise SystemExit(f"pull {repo_id} with {checkout} should have failed:\n{out.read().decode()}")
        if child.returncode != 0 and not fails:
            out.seek(0)
            raise SystemExit(f"pull {repo_id} with {checkout} exited {child.returncode}:\n{out.read().decode()}")
    return usage.ru_utime + usage.ru_stime, wall


def large_workers(
    hub: Any, repo_id: str, tmp: Path, workers: list[int], repeat: int
) -> dict[int, list[tuple[float, float]]]:
    """(wall, CPU) seconds of downloading and checking every weight file of ``repo_id`` with pull's own
    ``_fetch_large``, ``LARGE_WORKERS`` set to each of ``workers`` (1: one after another), ``repeat`` times,
    alternating."""
    import resource

    from rwkv_registry.hub import sync as _hub_sync
    from rwkv_registry.hub.remote import connect

    def cpu() -> float:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return usage.ru_utime + usage.ru_stime

    remote = connect(repo_id, endpoint=hub.endpoint)
    large = sorted(r for r in remote.files if r.endswith(".pth"))
    runs: dict[int, list[tuple[float, float]]] = {w: [] for w in workers}
    default = _hub_sync.LARGE_WORKERS
    try:
        for _ in range(repeat):
            for w in workers:
                staging = tmp / f"staging-{w}"
                staging.mkdir()
                _hub_sync.LARGE_WORKERS = w
                t0, c0 = time.perf_counter(), cpu()
                _hub_sync._fetch_large(remote, staging, large, lambda message: None)
                runs[w].append((time.perf_counter() - t0, cpu() - c0))
                assert all((staging / r).stat().st_size == remote.files[r].size for r in large)
                shutil.rmtree(staging)
    finally:
        _hub_sync.LARGE_WORKERS = default
    return runs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--checkout", type=Path, action="append", help="checkout whose code pulls (default: this one)")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--states", type=int, default=50)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--only", action="append", help="run the registries whose name matches this regex (repeatable)")
    ap.add_argument("--large-workers", type=int, nargs="+", help="time the demo's weight downloads N at a time")
    ap.add_argument("--latency-ms", type=float, default=0.0, help="the server pauses this long before each answer")
    ap.add_argument("--bandwidth-mbs", type=float, default=0.0, help="the server sends each answer at this MB/s")
    args = ap.parse_args()
    checkouts = [c.resolve() for c in (args.checkout or [REPO])]
    from hub_server import FakeHub, load_registry

    from rwkv_registry.store.demo import build_demo

    tmp = Path(tempfile.mkdtemp(prefix="rwkv-registry-pull-bench-"))
    env = {
        **os.environ,
        "HF_HOME": str(tmp / "hf_home"),
        "HF_TOKEN": "hf_bench_token_for_the_local_server",
        "HF_HUB_OFFLINE": "0",
        "HF_HUB_DISABLE_TELEMETRY": "1",
        "HF_HUB_DISABLE_PROGRESS_BARS": "1",
        "HF_HUB_DISABLE_XET": "1",
    }
    os.environ["RWKV_REGISTRY_CACHE_DIR"] = str(tmp / "build-cache")
    try:
        demo = build_demo(tmp / "demo", log=lambda m: None)
        if args.large_workers:
            os.environ.update({k: v for k, v in env.items() if k.startswith("HF_")})
            with FakeHub() as hub:
                load_registry(hub, "bench/demo", demo)
                hub.latency, hub.bandwidth = args.latency_ms / 1000, int(args.bandwidth_mbs * 1e6)
                walls = large_workers(hub, "bench/demo", tmp, args.large_workers, args.repeat)
            for w, ws in walls.items():
                print(
                    f"demo weights (4 files, 124 MB), {w} at a time, latency {args.latency_ms:g} ms, "
                    f"{args.bandwidth_mbs:g} MB/s per answer: wall {statistics.median(r[0] for r in ws):.2f} s, "
                    f"CPU {statistics.median(r[1] for r in ws):.2f} s (medians of {len(ws)}: wall "
                    f"{[round(r[0], 2) for r in ws]})"
                )
            print(machine())
            return
        many = many_states(tmp / "many", tmp, args.states)
        # name -> (registry, in plain git, how the first pull was stopped: None (no first pull), "half", "cut")
        registries: dict[str, tuple[Path, bool, str | None]] = {
            "demo": (demo, False, None),
            f"{args.states} States": (many, False, None),
            f"{args.states} States in plain git": (many, True, None),
            "demo, resumed after half": (demo, False, "half"),
            f"{args.states} States in plain git, resumed after half": (many, True, "half"),
            "demo, stopped inside a large file": (demo, False, "cut"),
        }
        wanted = [n for n in registries if not args.only or any(re.search(o, n) for o in args.only)]
        results: dict[str, Any] = {"machine": machine(), "repeat": args.repeat, "registries": {}}
        with FakeHub() as hub:
            env["HF_ENDPOINT"] = hub.endpoint
            hub.latency, hub.bandwidth = args.latency_ms / 1000, int(args.bandwidth_mbs * 1e6)
            results["link"] = {"latency_ms": args.latency_ms, "bandwidth_mbs": args.bandwidth_mbs}
            for name in wanted:
                root, in_git, resumed = registries[name]
                repo_id = f"bench/{name.replace(' ', '-').replace(',', '')}"
                if in_git:
                    plain_git(hub, repo_id, root)
                else:
                    load_registry(hub, repo_id, root)
                size = sum(p.stat().st_size for p in root.rglob("*") if p.is_file())
                runs: dict[str, list[tuple[float, float, int]]] = {str(c): [] for c in checkouts}
                for i in range(args.repeat):
                    for c in checkouts:
                        dest = tmp / "dest"
                        run_env = {**env, "RWKV_REGISTRY_CACHE_DIR": str(tmp / f"cache-{i}-{len(runs[str(c)])}")}
                        if resumed:
                            hook = failing_half(hub, repo_id) if resumed == "half" else cut_inside(hub, repo_id)
                            with hub.rewriting(hook):
                                pull_once(c, repo_id, dest, run_env, fails=True)
                        before = len(hub.log)
                        cpu, wall = pull_once(c, repo_id, dest, run_env)
                        runs[str(c)].append((cpu, wall, sum(e["sent"] for e in hub.log[before:])))
                        shutil.rmtree(dest)
                        shutil.rmtree(run_env["RWKV_REGISTRY_CACHE_DIR"], ignore_errors=True)
                        for left in tmp.glob(".dest.rwkv-registry-pull-*"):  # a checkout that cannot resume
                            shutil.rmtree(left)
                results["registries"][name] = {
                    "bytes": size,
                    "checkouts": {
                        c: {
                            "cpu_s_median": statistics.median(r[0] for r in rs),
                            "wall_s_median": statistics.median(r[1] for r in rs),
                            "bytes_served_median": statistics.median(r[2] for r in rs),
                            "cpu_s": [round(r[0], 3) for r in rs],
                        }
                        for c, rs in runs.items()
                    },
                }
                for c, rs in runs.items():
                    print(
                        f"{name} ({size / 1e6:.0f} MB), {c}: CPU {statistics.median(r[0] for r in rs):.3f} s, "
                        f"wall {statistics.median(r[1] for r in rs):.3f} s, served "
                        f"{statistics.median(r[2] for r in rs) / 1e6:.1f} MB (medians of {len(rs)}; "
                        f"CPU {[round(r[0], 2) for r in rs]})"
                    )
        print(machine())
        if args.json:
            args.json.write_text(json.dumps(results, indent=2) + "\n")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
