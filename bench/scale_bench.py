"""Scaling benchmark: every per-commit command on generated git registries of growing size.

For each N of ``--entries`` (a comma-separated list), a VALID registry is built in a temporary
directory through the project's own code: ``init_registry`` and ``add_base`` (metadata route) from
:mod:`rwkv_registry.store.ops`, State and MiSS files from the demo's builders (``write_synthetic_state``,
``write_synthetic_miss``: tiny tensors, since hashing cost is measured by ``validate_bench.py``; what
matters here is counts). ``--bases`` bases in families of up to three dated bases, so that the older
ones are superseded and frozen by ``add_base`` itself; N entries split 40/60 between State files
(10 per data-version directory) and MiSS adapters (5 groups per data-version directory, one run each
in train.json), each with a score; the history is ``--commits`` git commits (each base added in its
own commit, its data-version directories spread over the others; a data-version directory is never
split across commits, as ``add`` requires). The registry must validate with 0 errors (asserted).

Then, in a fresh process each (as a user runs them), the median of ``--repeat`` runs of: ``validate
--no-cache`` (cold), ``validate`` (warm), ``validate --since HEAD~1``, ``validate --since`` the newest
base's own commit (a CI range of many new files that spans no freeze), ``add`` of a new State file,
``validate`` after that add (the pre-commit hook on a new entry), ``add-base`` (metadata), ``sums``,
``sums --check``, ``readme``, ``list``, ``list --format json`` and ``show``; wall time, the child's CPU
time (user + sys, the figure to compare on a shared machine) and its peak RSS. Write commands are undone
after each run (``git reset --hard``, ``git clean``).
``--python LABEL=PYTHON`` (repeatable) measures the rwkv_registry of several interpreters (e.g. a
checkout before and after a change) on the same registries, their runs alternating so that other load
on the machine weighs on each alike; each has its own cache directory.

Usage: python bench/scale_bench.py [--entries 250,500,1000,2000] [--bases 8] [--commits 200]
       [--repeat 3] [--seed 0] [--out FILE.json] [--keep DIR] [--python LABEL=PYTHON ...]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from crash import machine  # one machine description for every benchmark's figures

CLI = [sys.executable, "-m", "rwkv_registry.cli.main"]
ARCH_TEXT = "n_layer=2,n_embd=128,vocab_size=65536"
STATE_PER_DIR = 10
MISS_PER_DIR = 5
FAMILY_SIZE = 3
GNU_TIME = "/usr/bin/time" if Path("/usr/bin/time").is_file() else None


def _git(root: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "bench",
        "GIT_AUTHOR_EMAIL": "bench@example.invalid",
        "GIT_COMMITTER_NAME": "bench",
        "GIT_COMMITTER_EMAIL": "bench@example.invalid",
    }
    out = subprocess.run(["git", *args], cwd=root, env=env, capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"git {' '.join(args)} failed:\n{out.stderr}")
    return out.stdout


def _commit(root: Path, message: str, day: int) -> None:
    _git(root, "add", "-A")
    os.environ["GIT_AUTHOR_DATE"] = os.environ["GIT_COMMITTER_DATE"] = f"@{1767225600 + day * 3600} +0000"
    _git(root, "commit", "-q", "--no-verify", "-m", message)


def _score(rng: random.Random) -> dict[str, Any]:
    return {
        "benchmark": "exam",
        "date": "2026-01-05",
        "score": round(rng.uniform(20, 60), 1),
        "unit": "percent",
        "solved": None,
        "total": 568,
        "runs": 1,
        "backend": None,
        "note": None,
        "report": None,
    }


def _train(method: str, version: str, rows: int, runs: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    t: dict[str, Any] = {
        "trainer": {"name": f"rwkv_{method}_tune", "version": "1.8.1", "commit": "47df608"},
        "method": method,
        "data": {"version": version, "rows": rows, "sha256": hashlib.sha256(version.encode()).hexdigest()},
        "hyperparameters": {"ctx": 4096, "lr": 0.01 if method == "state" else 2e-5},
        "command": f"rwkv_{method}_tune --ctx 4096",
        "started": "2026-01-02T00:00:00Z",
        "finished": "2026-01-02T09:00:00Z",
    }
    if runs is not None:
        t["runs"] = runs
    return t


def plan_bases(n_bases: int) -> list[tuple[str, int]]:
    """(name, generation) of every base, in the order add-base registers them: generation by generation,
    so a base is superseded (and frozen by add_base) only after its own weights are committed."""
    families = -(-n_bases // FAMILY_SIZE)
    out: list[tuple[str, int]] = []
    gen = 0
    while len(out) < n_bases:
        for f in range(families):
            if len(out) == n_bases:
                break
            if gen * families + f < n_bases:
                out.append((f"rwkv7-scale{f}-0.1b-2025{gen + 1:02d}01-ctx4096", gen))
        gen += 1
    return out


def build(root: Path, n_entries: int, n_bases: int, n_commits: int, seed: int) -> dict[str, Any]:
    """Write a valid git registry of ``n_entries`` entries; returns build statistics."""
    from rwkv_registry.index.arch import parse_arch_option
    from rwkv_registry.index.readme import update_readme
    from rwkv_registry.index.sums import format_sums, parse_sums
    from rwkv_registry.store.demo import write_synthetic_miss, write_synthetic_state
    from rwkv_registry.store.ops import add_base, dump_json, init_registry

    rng = random.Random(seed)
    t0 = time.perf_counter()
    init_registry(root, name="bench/scale", title="Scale benchmark registry")
    _git(root, "init", "-q", "-b", "main")
    _git(root, "config", "commit.gpgsign", "false")
    day = 0
    _commit(root, "init", day)
    bases = plan_bases(n_bases)
    per_base = [n_entries // n_bases + (1 if i < n_entries % n_bases else 0) for i in range(n_bases)]
    # directories per base, then how many commits each base's directories are spread over
    chunks_per_base = max(1, (n_commits - 1 - n_bases) // n_bases)
    arch = parse_arch_option(ARCH_TEXT)
    src = root.parent / "src"
    src.mkdir(exist_ok=True)
    made = 0
    data_rows: dict[tuple[str, str], int] = {}
    marked: set[tuple[str, str]] = set()  # (base, method) with its recommended entry
    for b_i, ((name, _gen), count) in enumerate(zip(bases, per_base, strict=True)):
        sha = hashlib.sha256(name.encode()).hexdigest()
        add_base(root, name=name, source="BlinkDL/rwkv7-g1", sha256=sha, size=None, arch=arch, today="2026-01-01")
        day += 1
        _commit(root, f"add base {name}", day)
        since_base = 0  # commits since this base's own (a --since range that spans no freeze)
        index = json.loads((root / "index.json").read_text("utf-8"))
        hashes = {line.path: line.sha256 for line in parse_sums((root / "SHA256SUMS").read_bytes())[0]}
        n_state = count * 2 // 5
        n_miss = count - n_state
        dirs: list[tuple[str, str, int]] = []  # (method, version, entries in it)
        for method, total, per in (("state", n_state, STATE_PER_DIR), ("miss", n_miss, MISS_PER_DIR)):
            v = 0
            while total > 0:
                k = min(per, total)
                dirs.append((method, f"v{1 if method == 'state' else 2}.{v}", k))
                total -= k
                v += 1
        rng.shuffle(dirs)
        n_chunks = min(chunks_per_base, max(1, len(dirs)))
        bounds = [round(i * len(dirs) / n_chunks) for i in range(n_chunks + 1)]
        short = f"s{b_i}"
        for c in range(n_chunks):
            for method, version, k in dirs[bounds[c] : bounds[c + 1]]:
                d = f"{name}/{method}/{version}"
                (root / d).mkdir(parents=True)
                # one data version is one file in every base (IDX016); the draw is kept so the rest is unchanged
                rows = data_rows.setdefault((method, version), rng.randint(1000, 9000))
                runs: list[dict[str, Any]] = []
                for j in range(k):
                    made += 1
                    eid = f"{short}-{version.replace('.', '')}-{method[0]}{j}"
                    if method == "state":
                        rel = f"{d}/ckpt-{j:03d}.pth"
                        write_synthetic_state(root / rel, arch, seed=seed * 1_000_000 + made)
                        extra: dict[str, Any] = {}
                    else:
                        group = f"r4-lr{j + 1}e-5"
                        rel = f"{d}/{group}/adapter-final.pth"
                        (root / rel).parent.mkdir()
                        m = write_synthetic_miss(
                            root / rel, arch, rank=4, alpha=8, base_sha256=sha, seed=seed * 1_000_000 + made
                        )
                        runs.append(
                            {
                                "group": group,
                                "lr": (j + 1) * 1e-5,
                                "lr_final": (j + 1) * 1e-6,
                                "started": "2026-01-02T00:00:00Z",
                                "finished": "2026-01-02T01:00:00Z",
                            }
                        )
                        extra = {
                            "group": group,
                            "adapter_id": eid,
                            "miss": {k2: m[k2] for k2 in ("content_version", "rank", "alpha", "scale", "dtype")},
                        }
                    data = (root / rel).read_bytes()
                    hashes[rel] = hashlib.sha256(data).hexdigest()
                    entry: dict[str, Any] = {"id": eid, "path": rel, "base": name, "method": method}
                    if method == "miss":
                        entry["group"] = extra.pop("group")
                    recommended = (name, method) not in marked
                    marked.add((name, method))
                    entry.update(
                        {
                            "data": {
                                "version": version,
                                "rows": rows,
                                "sha256": hashlib.sha256(version.encode()).hexdigest(),
                            },
                            "file": {"sha256": hashes[rel], "size": len(data)},
                            "train": f"{d}/train.json",
                            "profile": "g1k" if method == "state" else "g1k-think",
                            "sampling": "g1k-agent",
                            "recommended": recommended,
                            "description": f"generated {method} {version} #{j}",
                            **extra,
                            "scores": [_score(rng)],
                            "smoke": [],
                            "known_issues": [],
                        }
                    )
                    index["entries"].append(entry)
                train = dump_json(_train(method, version, rows, runs if method == "miss" else None))
                (root / d / "train.json").write_bytes(train)
                hashes[f"{d}/train.json"] = hashlib.sha256(train).hexdigest()
            index_bytes = dump_json(index)
            (root / "index.json").write_bytes(index_bytes)
            readme = update_readme((root / "README.md").read_text("utf-8"), index)
            assert readme is not None
            (root / "README.md").write_text(readme, "utf-8")
            hashes["index.json"] = hashlib.sha256(index_bytes).hexdigest()
            hashes["README.md"] = hashlib.sha256(readme.encode("utf-8")).hexdigest()
            (root / "SHA256SUMS").write_bytes(format_sums(hashes))
            day += 1
            _commit(root, f"{name}: {c + 1}/{n_chunks} of its weights", day)
            since_base += 1
    commits = int(_git(root, "rev-list", "--count", "HEAD").strip())
    files = sum(1 for p in root.rglob("*") if p.is_file() and ".git" not in p.parts)
    changed = _git(root, "diff", "--name-only", f"HEAD~{since_base}", "HEAD").splitlines()
    return {
        "build_s": round(time.perf_counter() - t0, 2),
        "commits": commits,
        "files": files,
        "entries": made,
        "since_range": {"rev": f"HEAD~{since_base}", "files_changed": len(changed)},
    }


def run(
    cmd: list[str], cwd: Path | None = None, ok: tuple[int, ...] = (0,), env: dict[str, str] | None = None
) -> tuple[float, float, str, float]:
    """(wall seconds, peak RSS MB of the child, stdout, CPU seconds of the child and its children: user + sys)
    of one command. Both come from GNU time (``/usr/bin/time -f '%M %U %S'``): a child forked from this process
    would report this process's peak too. The CPU time is the figure to compare on a shared machine, where
    the wall time also counts waiting for a core."""
    with tempfile.NamedTemporaryFile() as rss:
        wrap = [GNU_TIME, "-q", "-f", "%M %U %S", "-o", rss.name] if GNU_TIME else []
        t0 = time.perf_counter()
        p = subprocess.run([*wrap, *cmd], cwd=cwd, capture_output=True, text=True, env=env)
        dt = time.perf_counter() - t0
        if p.returncode not in ok:
            raise SystemExit(f"{' '.join(cmd)} exited {p.returncode}:\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
        text = Path(rss.name).read_text().strip().splitlines()
        fields = text[-1].split() if text else []
        ok_fields = len(fields) == 3 and fields[0].isdigit()
        mb = int(fields[0]) / 1024 if ok_fields else float("nan")
        cpu = float(fields[1]) + float(fields[2]) if ok_fields else float("nan")
    return dt, mb, p.stdout, cpu


class Cli:
    """One rwkv-registry to measure: an interpreter (whose rwkv_registry is imported) and its own cache."""

    def __init__(self, label: str, python: str, cache: Path) -> None:
        self.label = label
        self.prefix = [python, "-m", "rwkv_registry.cli.main"]
        self.env = {**os.environ, "RWKV_REGISTRY_CACHE_DIR": str(cache)}

    def run(self, *args: str, ok: tuple[int, ...] = (0,)) -> tuple[float, float, str, float]:
        return run([*self.prefix, *args], ok=ok, env=self.env)


def measure(
    root: Path, repeat: int, work: Path, clis: list[Cli], since: str, only: set[str] | None = None
) -> dict[str, dict[str, Any]]:
    """Every per-commit command on the registry at ``root`` (a git work tree, clean), for each of ``clis``;
    the runs of the CLIs alternate, so that a load on the machine weighs on them alike. ``only``: the steps
    to measure (by name, as in the results), the others skipped."""
    from rwkv_registry.index.arch import parse_arch_option
    from rwkv_registry.store.demo import write_synthetic_state

    index = json.loads((root / "index.json").read_text("utf-8"))
    active = next(b for b in index["bases"] if b["status"] == "active")["name"]
    entry = index["entries"][len(index["entries"]) // 2]["id"]
    new = work / "new"
    new.mkdir(exist_ok=True)
    for i in range(repeat):
        write_synthetic_state(new / f"bench-new-{i}.pth", parse_arch_option(ARCH_TEXT), seed=987_654 + i)
    train = work / "train.json"
    train.write_text(json.dumps(_train("state", "v9.0", 1234)))
    r = str(root)

    def undo() -> None:
        _git(root, "reset", "-q", "--hard")
        _git(root, "clean", "-qfd")

    def add(i: int) -> list[str]:
        new_file = str(new / f"bench-new-{i}.pth")
        return ["add", r, new_file, "--base", active, "--data-version", "v9.0", "--train", str(train)]

    out: dict[str, dict[str, Any]] = {c.label: {} for c in clis}

    def step(name: str, args: Any, *, write: bool = False, before: Any = None) -> None:
        if only is not None and name not in only:
            return
        samples: dict[str, list[tuple[float, float, float]]] = {c.label: [] for c in clis}
        for i in range(repeat):
            for c in clis:
                if before is not None:
                    c.run(*before(i))
                t, mb, _, cpu = c.run(*(args(i) if callable(args) else args))
                samples[c.label].append((t, mb, cpu))
                if write or before is not None:
                    undo()
        for c in clis:
            times = [t for t, _, _ in samples[c.label]]
            cpus = [cpu for _, _, cpu in samples[c.label]]
            out[c.label][name] = {
                "s": round(statistics.median(times), 3),
                "min_s": round(min(times), 3),
                "cpu_s": round(statistics.median(cpus), 3),
                "min_cpu_s": round(min(cpus), 3),
                "mb": round(max(m for _, m, _ in samples[c.label]), 1),
            }

    step("validate_cold", ["validate", r, "--no-cache"])
    for c in clis:
        c.run("validate", r)  # fill the cache
    step("validate_warm", ["validate", r])
    step("validate_since_HEAD~1", ["validate", r, "--since", "HEAD~1"])
    step("validate_since_range", ["validate", r, "--since", since])  # every commit of the newest base
    step("add_state", add, write=True)
    step("validate_after_add", ["validate", r], before=add)  # the pre-commit hook on a new entry
    sha = hashlib.sha256(b"bench new base").hexdigest()
    base_args = ["--name", "rwkv7-other-0.1b-20260101-ctx4096", "--sha256", sha, "--arch", ARCH_TEXT]
    step("add_base", ["add-base", r, *base_args, "--source", "BlinkDL/rwkv7-g1"], write=True)
    step("sums", ["sums", r], write=True)
    step("sums_check", ["sums", r, "--check"])
    step("readme", ["readme", r], write=True)
    step("list", ["list", r])
    step("list_json", ["list", r, "--format", "json"])
    step("show", ["show", entry, "--path", r])
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--entries", default="250,500,1000,2000", help="comma-separated N values")
    ap.add_argument("--bases", type=int, default=8)
    ap.add_argument("--commits", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--keep", type=Path, help="build the registries under this directory and keep them")
    ap.add_argument(
        "--reuse",
        action="store_true",
        help="with --keep: measure the registries kept there by an earlier run (built again only if absent), "
        "with the validation caches kept there (cache-N-LABEL)",
    )
    ap.add_argument("--only", help="comma-separated steps to measure (e.g. add_state,add_base,validate_warm)")
    ap.add_argument(
        "--python",
        action="append",
        metavar="LABEL=PYTHON",
        help="measure the rwkv_registry of this interpreter too (repeatable; e.g. before=/path/venv/bin/python); "
        "default: this interpreter only, as 'this'",
    )
    args = ap.parse_args()
    sizes = [int(x) for x in args.entries.split(",") if x]
    only = {x for x in args.only.split(",") if x} if args.only else None
    if args.reuse and args.keep is None:
        ap.error("--reuse needs --keep DIR")
    pythons = [tuple(p.split("=", 1)) for p in args.python or []] or [("this", sys.executable)]
    results: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d"),
        "machine": machine(),
        "bases": args.bases,
        "commits": args.commits,
        "repeat": args.repeat,
        "seed": args.seed,
        "clis": {label: py for label, py in pythons},
        "runs": [],
    }
    tmp = Path(tempfile.mkdtemp(prefix="rwkv-scale-bench-"))
    os.environ["RWKV_REGISTRY_CACHE_DIR"] = str(tmp / "cache")
    try:
        for n in sizes:
            top = (args.keep or tmp) / f"n{n}"
            root = top / "registry"
            kept = top / "built.json"
            if args.reuse and kept.is_file():
                built = json.loads(kept.read_text("utf-8"))
                _git(root, "reset", "-q", "--hard")
                _git(root, "clean", "-qfd")
                print(f"N={n}: reusing {root}")
            else:
                if top.exists():
                    shutil.rmtree(top)
                top.mkdir(parents=True)
                built = build(root, n, args.bases, args.commits, args.seed)
                _, _, text, _ = run([*CLI, "validate", str(root), "--format", "json", "--no-cache"], ok=(0, 1))
                report = json.loads(text)
                errors = [f for f in report["findings"] if f["severity"] == "error"]
                assert not errors, f"generated registry of {n} entries is invalid: {errors[:5]}"
                built["warnings"] = report["counts"]["warning"]
                kept.write_text(json.dumps(built) + "\n", "utf-8")
                print(f"N={n}: built in {built['build_s']} s, {built['files']} files, {built['commits']} commits")
            # with --keep, each CLI's validation cache is kept there too: a run with --reuse starts from it
            caches = args.keep or tmp
            clis = [Cli(label, py, caches / f"cache-{n}-{label}") for label, py in pythons]
            figures = measure(root, args.repeat, top, clis, built["since_range"]["rev"], only)
            results["runs"].append({"entries": n, **built, "figures": figures})
            for label, figs in figures.items():
                print(
                    f"  {label}: "
                    + ", ".join(f"{k} {v['s']:.3f} s/{v['cpu_s']:.3f} s CPU/{v['mb']:.0f} MB" for k, v in figs.items())
                )
            if args.out:
                args.out.write_text(json.dumps(results, indent=2) + "\n")
    finally:
        if args.keep is None:
            shutil.rmtree(tmp, ignore_errors=True)
    for label, _ in pythons:
        runs = results["runs"]
        keys = list(runs[0]["figures"][label]) if runs else []
        print(f"\n{label}\n| command | " + " | ".join(f"N={r['entries']}" for r in runs) + " |")
        print("|---|" + "---|" * len(runs))
        for k in keys:
            cells = [
                f"{r['figures'][label][k]['s']:.3f} s ({r['figures'][label][k]['cpu_s']:.3f} s CPU), "
                f"{r['figures'][label][k]['mb']:.0f} MB"
                for r in runs
            ]
            print(f"| {k} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
