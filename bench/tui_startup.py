"""Benchmark: first paint of `rwkv-registry tui` on a generated registry of 1,000 entries.

Issue "rwkv-registry tui": first paint < 1 s with a generated registry of 1,000 entries, tree
nodes loaded lazily, details pane updated without re-reading unchanged files.

The registry is written directly (index.json, train.json, tiny real State/MiSS files, README,
SHA256SUMS), not through `add` 1,000 times: two bases (one frozen), 10 State and 10 MiSS data
versions each, 1,000 entries in all. Then, in a fresh Python process each time (imports
included, as a user would start it), the App runs headless and reports when its first frame is
drawn with the tree mounted; validation starts right after, in its worker thread.

Printed: process start → first paint (target < 1 s, the median of --repeat runs), the App's own
constructor → first paint, the child's CPU time (user+sys of every thread) at first paint and, wall
and CPU, when the first validation's report is shown, with an empty validation cache (cold) and with
the cache the cold run wrote (warm), each the median of --repeat runs taken alternately; the tree
nodes that exist at first paint (lazy loading), and in-process timings of opening the biggest data
version and of re-showing an entry's details (no file read).

Usage: python bench/tui_startup.py [--entries 1000] [--repeat 5] [--keep DIR] [--json OUT]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))

from regtools import TINY_ARCH as ARCH

BASES = ("rwkv7-tiny-20250601-ctx4096", "rwkv7-tiny-20260101-ctx4096")


def _sha(data: bytes) -> str:
    import hashlib

    return hashlib.sha256(data).hexdigest()


def build(root: Path, n_entries: int) -> Path:
    """Write a registry of ``n_entries`` entries directly (a few seconds)."""
    import io

    from rwkv_registry.checks.miss import MISS_TARGETS, write_miss_file
    from rwkv_registry.formats.pthwrite import RawTensor
    from rwkv_registry.index.arch import miss_target_shape
    from rwkv_registry.index.readme import skeleton, update_readme
    from rwkv_registry.store.demo import synthetic_bf16, write_synthetic_state
    from rwkv_registry.store.ops import compute_sums, dump_json, empty_index

    root.mkdir(parents=True)
    tmp = root.parent / "src"
    tmp.mkdir(exist_ok=True)
    write_synthetic_state(tmp / "state.pth", ARCH, seed=1)
    state_bytes = (tmp / "state.pth").read_bytes()
    index = empty_index("bench/generated-1000")
    index["registry"].update({"title": "Generated registry", "description": "benchmark"})
    per_base = n_entries // len(BASES)
    for b_i, base in enumerate(BASES):
        sha = _sha(base.encode())
        index["bases"].append(
            {
                "name": base,
                "family": "rwkv7-tiny",
                "source": {"repo": "BlinkDL/rwkv7-g1", "file": base + ".pth", "revision": None},
                "sha256": sha,
                "size": 1234,
                "vocab": "rwkv_vocab_v20230424.txt",
                "architecture": ARCH,
                "status": "frozen" if b_i == 0 else "active",
                "added": "2026-01-01",
                "scores": [],
                "notes": None,
            }
        )
        buf = io.BytesIO()
        tensors = {}
        for layer in range(ARCH["n_layer"]):
            for j, target in enumerate(MISS_TARGETS):
                out_f, _ = miss_target_shape(ARCH, target)
                tensors[f"blocks.{layer}.{target}.D"] = RawTensor(
                    "bfloat16", (out_f, 4), synthetic_bf16(out_f * 4, layer * 10 + j)
                )
        manifest = write_miss_file(buf, tensors, rank=4, alpha=8, base_fingerprint=sha, arch=ARCH)
        miss_bytes = buf.getvalue()
        n_state = per_base * 2 // 5
        n_miss = per_base - n_state
        for method, count, data in (("state", n_state, state_bytes), ("miss", n_miss, miss_bytes)):
            versions = 10
            per_version = -(-count // versions)
            made = 0
            for v in range(versions):
                version = f"v{1 if method == 'state' else 2}.{v}"
                d = root / base / method / version
                d.mkdir(parents=True)
                data_rec = {"version": version, "rows": 1000 + v, "sha256": _sha(version.encode())}
                runs = []
                for k in range(per_version):
                    if made == count:
                        break
                    made += 1
                    if method == "state":
                        eid = f"{base[-16:-8]}-{version}-s{k}"
                        rel = f"{base}/state/{version}/s{k}.pth"
                        (root / rel).write_bytes(data)
                        extra: dict[str, Any] = {}
                    else:
                        group = f"r4-g{k}"
                        eid = f"{base[-16:-8]}-{version}-{group}"
                        rel = f"{base}/miss/{version}/{group}/adapter-final.pth"
                        (root / rel).parent.mkdir()
                        (root / rel).write_bytes(data)
                        runs.append(
                            {
                                "group": group,
                                "lr": 2e-5,
                                "lr_final": 2e-6,
                                "started": "2026-01-02T00:00:00Z",
                                "finished": "2026-01-02T01:00:00Z",
                            }
                        )
                        extra = {
                            "group": group,
                            "adapter_id": eid,
                            "miss": {
                                "content_version": manifest["content_version"],
                                "rank": 4,
                                "alpha": 8,
                                "scale": 2.0,
                                "dtype": "bfloat16",
                            },
                        }
                    index["entries"].append(
                        {
                            "id": eid,
                            "path": rel,
                            "base": base,
                            "method": method,
                            "data": data_rec,
                            "file": {"sha256": _sha(data), "size": len(data)},
                            "train": f"{base}/{method}/{version}/train.json",
                            "profile": "g1k" if method == "state" else "g1k-think",
                            "sampling": "g1k-agent",
                            "recommended": k == 0 and v == versions - 1,
                            "description": f"generated {method} {k}",
                            **extra,
                            "scores": [
                                {
                                    "benchmark": "exam",
                                    "date": "2026-01-05",
                                    "score": 30.0 + (k % 20),
                                    "unit": "percent",
                                    "solved": None,
                                    "total": 568,
                                    "runs": 1,
                                    "backend": None,
                                    "note": None,
                                    "report": None,
                                }
                            ],
                            "smoke": [],
                            "known_issues": [],
                        }
                    )
                train: dict[str, Any] = {
                    "trainer": {"name": f"rwkv_{method}_tune", "version": "1.8.1", "commit": "47df608"},
                    "method": method,
                    "data": data_rec,
                    "hyperparameters": {"ctx": 4096},
                    "command": f"rwkv_{method}_tune --ctx 4096",
                    "started": "2026-01-02T00:00:00Z",
                    "finished": "2026-01-02T09:00:00Z",
                }
                if runs:
                    train["runs"] = runs
                (d / "train.json").write_bytes(dump_json(train))
    (root / "index.json").write_bytes(dump_json(index))
    readme = update_readme(skeleton("Generated registry"), index)
    (root / "README.md").write_text(readme or "", "utf-8")
    (root / ".gitattributes").write_text(
        "*.pth filter=lfs diff=lfs merge=lfs -text\n*.safetensors filter=lfs diff=lfs merge=lfs -text\n"
    )
    (root / "SHA256SUMS").write_bytes(compute_sums(root))
    return root


CHILD = r"""
import asyncio, json, sys, time
from rwkv_registry.tui.app import RegistryApp

async def main():
    app = RegistryApp(sys.argv[1], keymap={})
    async with app.run_test(size=(120, 40)) as pilot:
        while app.first_paint_s is None or not app.screen_stack or not app.main.tree.root.children:
            await asyncio.sleep(0.002)
        painted, painted_cpu = time.time(), time.process_time()
        tree = app.main.tree
        out = {"painted": painted, "app_first_paint_s": app.first_paint_s, "paint_cpu_s": painted_cpu,
               "nodes": sum(1 for _ in _walk(tree.root)), "entry_nodes": len(tree._entry_nodes)}
        while app.main.report is None:  # the first validation's report is shown
            await asyncio.sleep(0.005)
        out.update(validated=time.time(), validated_cpu_s=time.process_time(), files=app.main.files_done,
                   bytes_hashed=app.main.report.stats.get("bytes_hashed"))
        print("RESULT=" + json.dumps(out), flush=True)
        app.exit()

def _walk(node):
    yield node
    for c in node.children:
        yield from _walk(c)

asyncio.run(main())
"""


def first_paint(path: Path, cache: Path) -> dict[str, Any]:
    """Start a fresh interpreter that opens the TUI headless (validation cache in ``cache``); seconds and CPU
    seconds of the child (user+sys, every thread) from spawn to first paint and to the first validation's report."""
    env = dict(os.environ, RWKV_REGISTRY_KEYMAP="", RWKV_REGISTRY_CACHE_DIR=str(cache))
    t0 = time.time()
    out = subprocess.run([sys.executable, "-c", CHILD, str(path)], capture_output=True, text=True, env=env)
    if "RESULT=" not in out.stdout:
        raise SystemExit(f"child failed:\n{out.stdout}\n{out.stderr}")
    result = json.loads(out.stdout.rsplit("RESULT=", 1)[1].splitlines()[0])
    result["process_first_paint_s"] = result.pop("painted") - t0
    result["process_validated_s"] = result.pop("validated") - t0
    return result


async def interactions(path: Path) -> dict[str, float]:
    """In-process: open the biggest data version (tree work on the UI thread); build an entry's
    details again (what the details worker does; unchanged files are not read again)."""
    from rwkv_registry.catalog.entries import NodeRef
    from rwkv_registry.tui.app import RegistryApp
    from rwkv_registry.tui.widgets.details import build_sections

    app = RegistryApp(str(path), validate_on_start=False, keymap={})
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        tree = app.main.tree
        groups = app.catalog.grouped()
        base, method, version = max(
            ((b, m, v) for b, ms in groups.items() for m, vs in ms.items() for v in vs),
            key=lambda k: (len(groups[k[0]][k[1]][k[2]]), k[1] == "miss"),
        )
        eid = str(groups[base][method][version][-1]["id"])
        t0 = time.perf_counter()
        assert tree.select_entry(eid)
        opened = time.perf_counter() - t0
        ref = NodeRef("entry", base, method, version, eid)
        t0 = time.perf_counter()
        build_sections(app.catalog, ref)
        first = time.perf_counter() - t0
        reads = app.catalog.reads
        t0 = time.perf_counter()
        build_sections(app.catalog, ref)
        again = time.perf_counter() - t0
        return {
            "open_version_s": opened,
            "version_entries": len(groups[base][method][version]),
            "details_first_s": first,
            "details_again_s": again,
            "files_read_again": app.catalog.reads - reads,
        }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--entries", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--keep", type=Path, help="build the registry here and keep it")
    ap.add_argument("--json", type=Path, help="also write the results as JSON")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="rwkv-tui-bench-") as tmp:
        os.environ.setdefault("RWKV_REGISTRY_CACHE_DIR", str(Path(tmp) / "cache"))  # build() and interactions()
        root = (args.keep or Path(tmp)) / "registry"
        t0 = time.perf_counter()
        build(root, args.entries)
        built = time.perf_counter() - t0
        runs, warm = [], []
        for i in range(args.repeat):  # cold (empty validation cache), then warm (the cache that run wrote)
            cache = Path(tmp) / f"cache-{i}"
            runs.append(first_paint(root, cache))
            warm.append(first_paint(root, cache))
        median = statistics.median(r["process_first_paint_s"] for r in runs)
        inner = statistics.median(r["app_first_paint_s"] for r in runs)

        def med(rows: list[dict[str, Any]], key: str) -> float:
            return round(statistics.median(r[key] for r in rows), 3)

        validation = {
            name: {
                "first_paint_cpu_s": med(rows, "paint_cpu_s"),
                "validated_s": med(rows, "process_validated_s"),
                "validated_cpu_s": med(rows, "validated_cpu_s"),
                "files": rows[0]["files"],
                "bytes_hashed": rows[0]["bytes_hashed"],
            }
            for name, rows in (("cold", runs), ("warm", warm))
        }
        more = asyncio.run(interactions(root))
        result = {
            "entries": args.entries,
            "build_s": round(built, 3),
            "process_first_paint_s": {
                "median": round(median, 3),
                "runs": [round(r["process_first_paint_s"], 3) for r in runs],
            },
            "app_first_paint_s": round(inner, 3),
            "validation": validation,
            "tree_nodes_at_first_paint": runs[0]["nodes"],
            "entry_nodes_at_first_paint": runs[0]["entry_nodes"],
            **{k: round(v, 4) if isinstance(v, float) else v for k, v in more.items()},
            "target_first_paint_s": 1.0,
            "ok": median < 1.0,
        }
    print(f"registry of {args.entries} entries written in {built:.2f} s")
    print(
        f"first paint, process start → frame: median {median:.3f} s over {args.repeat} runs "
        f"({'OK' if median < 1.0 else 'OVER'} the 1 s target)"
    )
    print(f"first paint, App() → frame: {inner:.3f} s")
    for name, v in validation.items():
        print(
            f"{name} cache: CPU at first paint {v['first_paint_cpu_s']:.3f} s; first validation's report "
            f"{v['validated_s']:.3f} s after process start, {v['validated_cpu_s']:.3f} s CPU (user+sys, all threads; "
            f"{v['files']} files, {v['bytes_hashed']} bytes hashed)"
        )
    print(
        f"tree nodes at first paint: {result['tree_nodes_at_first_paint']} "
        f"({result['entry_nodes_at_first_paint']} entry nodes: loaded lazily)"
    )
    print(
        f"open the biggest data version ({more['version_entries']} entries): {more['open_version_s'] * 1000:.1f} ms; "
        f"details of a MiSS entry: {more['details_first_s'] * 1000:.1f} ms first, "
        f"{more['details_again_s'] * 1000:.1f} ms again ({more['files_read_again']} files read again)"
    )
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
