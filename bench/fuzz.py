"""Fuzz every reader of untrusted input for 100,000+ inputs; optionally measure the corpus and the bombs.

Targets (each input: a mutated seed or a generated value, deterministic from ``--seed``):

- ``zip``: torch / rwkv_lightning_cuda / MiSS archives, byte-mutated → ``open_checkpoint`` (CRCs
  of every entry checked) and ``facts_from_buffer``; accepted torch archives are compared with
  ``torch.load(weights_only=True)`` (names, dtypes, shapes, bytes);
- ``zip-pickle``: the same archives rebuilt with a mutated ``data.pkl`` (valid CRCs, so the
  pickle interpreter is reached) or mutated metadata entries;
- ``pickle``: programs of allowed and refused opcodes → ``parse_tensor_pickle``;
- ``safetensors``: byte-mutated files and files with a mutated JSON header;
- ``miss-json``: MiSS adapters whose ``miss.json`` is mutated as JSON → ``facts_from_buffer``;
- ``json``: byte-mutated JSON → ``load_json_bytes``, accepted values compared with ``json``;
- ``index-train``: index.json / train.json mutated as JSON → strict load, schema check, and
  ``load_index`` on disk;
- ``jsoncpp``: generated JSON values → JsonCpp serializer, round trip through ``json``;
- ``sums``: byte-mutated SHA256SUMS → ``parse_sums``; generated maps → format/parse round trip;
- ``lfs``: byte-mutated pointers and arbitrary bytes → ``parse_lfs_pointer``, ``sniff_kind``;
- ``validate`` (reported apart): a whole registry with index.json / train.json mutated as JSON
  → ``validate_registry``; its crashes are in validate.py/readme.py.

A crash is any exception other than the documented one (CheckpointError, JsonLoadError …), a
hang is an input taking over ``--hang`` seconds; both are saved with ``--save DIR``. An oracle
failure (torch or json disagreeing with an accepted input) counts as a crash.

Run from the repository root::

    .venv/bin/python bench/fuzz.py                    # 100,000 inputs over the targets, figures
    .venv/bin/python bench/fuzz.py --corpus --bounds --docs   # + corpus and bombs, into docs/reliability.md
"""

from __future__ import annotations

import argparse
import copy
import functools
import io
import json
import math
import multiprocessing as mp
import os
import random
import shutil
import signal
import struct
import sys
import tempfile
import time
import traceback
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests" / "support"), str(ROOT / "tests" / "malicious"), str(ROOT / "bench")]

# share of the inputs per target (the validate target is slow: a full registry per input)
WEIGHTS = {
    "zip": 16,
    "zip-pickle": 16,
    "pickle": 16,
    "safetensors": 8,
    "miss-json": 4,
    "json": 12,
    "index-train": 6,
    "jsoncpp": 8,
    "sums": 6,
    "lfs": 6,
    "validate": 2,
}
OUT_OF_SCOPE = {"validate"}  # crashes there are in validate.py / readme.py (not this bench's files)
INTERESTING = [0, 1, 0x7F, 0x80, 0xFF, 0xFFFF, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF]


class Hang(Exception):
    """An input ran past the hang limit."""


class OracleError(AssertionError):
    """An independent reader disagrees with an accepted input."""


# --- mutators ---------------------------------------------------------------------------------------------------


def mutate_bytes(data: bytes, rng: random.Random) -> bytes:
    """A few byte edits, 32-bit interesting values, cuts, deletions, insertions or splices."""
    out = bytearray(data)
    for _ in range(rng.randint(1, 6)):
        if not out:
            out += bytes([rng.randrange(256)])
            continue
        pos = rng.randrange(len(out))
        r = rng.random()
        if r < 0.35:
            out[pos] = rng.randrange(256)
        elif r < 0.55:
            out[pos : pos + 4] = struct.pack("<I", rng.choice(INTERESTING))
        elif r < 0.65:
            del out[pos:]
        elif r < 0.78:
            del out[pos : pos + rng.randint(1, 16)]
        elif r < 0.9:
            out[pos:pos] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 16)))
        else:
            src = rng.randrange(len(out))
            out[pos:pos] = out[src : src + rng.randint(1, 64)]
    return bytes(out)


STRINGS = ["", "x", "../../etc/passwd", "v1", "state", "miss", "bfloat16", "é中😀", "\u0000", "a" * 300, "\\", "/abs"]


def random_json(rng: random.Random, depth: int = 0) -> Any:
    """An arbitrary JSON value (numbers within a double's range)."""
    r = rng.random()
    if depth < 4 and r < 0.15:
        return [random_json(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    if depth < 4 and r < 0.3:
        return {
            rng.choice([*STRINGS, "k", "rank", "targets"]): random_json(rng, depth + 1)
            for _ in range(rng.randint(0, 4))
        }
    return rng.choice(
        [
            None,
            True,
            False,
            0,
            -1,
            1,
            2**31,
            2**63,
            2**64,
            -(2**63) - 1,
            10**300,
            1.5,
            -0.0,
            1e308,
            5e-324,
            rng.randint(-(10**6), 10**6),
            rng.uniform(-1e6, 1e6),
            rng.choice(STRINGS),
        ]
    )


def _paths(doc: Any, prefix: tuple = ()) -> list[tuple]:
    out = [prefix]
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out += _paths(v, (*prefix, i))
    return out


def mutate_json(doc: Any, rng: random.Random) -> Any:
    """``doc`` with one to three subtrees replaced, deleted or duplicated."""
    doc = copy.deepcopy(doc)
    for _ in range(rng.randint(1, 3)):
        paths = _paths(doc)[1:]
        if not paths:
            return random_json(rng)
        path = rng.choice(paths)
        parent = doc
        for k in path[:-1]:
            parent = parent[k]
        r = rng.random()
        if r < 0.7:
            parent[path[-1]] = random_json(rng)
        elif r < 0.85:
            del parent[path[-1]]
        elif isinstance(parent, list):
            parent.append(copy.deepcopy(parent[path[-1]]))
        else:
            parent[f"{path[-1]}2"] = copy.deepcopy(parent[path[-1]])
    return doc


def _s(text: str) -> bytes:
    raw = text.encode("utf-8", "surrogatepass")
    return b"X" + struct.pack("<I", len(raw)) + raw


OPCODES = [bytes([c]) for c in b"(})t\x85\x86\x87\x88\x89NQRbsu.\x930]\x94ie"]
GLOBALS = [
    b"ccollections\nOrderedDict\n",
    b"ctorch._utils\n_rebuild_tensor_v2\n",
    b"ctorch\nFloatStorage\n",
    b"ctorch\nBFloat16Storage\n",
    b"cos\nsystem\n",
    b"ctorch\nTensor\n",
    b"c\xff\n\n",
]


def _tensor_ops(rng: random.Random) -> bytes:
    shape = [rng.randint(0, 4) for _ in range(rng.randint(0, 3))]
    dims = b"".join(b"K" + bytes([d]) for d in shape)
    storage = rng.choice(["FloatStorage", "HalfStorage", "BFloat16Storage", "Evil"])
    return (
        b"ctorch._utils\n_rebuild_tensor_v2\n(("
        + _s("storage")
        + f"ctorch\n{storage}\n".encode()
        + _s(rng.choice(["0", "1", "../x", ""]))
        + _s(rng.choice(["cpu", "cuda:0", "x y"]))
        + b"K"
        + bytes([rng.randint(0, 8)])
        + b"tQK"
        + bytes([rng.randint(0, 4)])
        + b"("
        + dims
        + b"t("
        + dims
        + b"t"
        + rng.choice([b"\x89", b"\x88", b"N"])
        + rng.choice([b"}", b")", b"N"])
        + b"tR"
    )


def random_pickle(rng: random.Random) -> bytes:
    """A program of opcode tokens, in a dict or bare."""
    tokens = []
    for _ in range(rng.randint(0, 40)):
        r = rng.random()
        if r < 0.35:
            tokens.append(rng.choice(OPCODES))
        elif r < 0.45:
            tokens.append(rng.choice(GLOBALS))
        elif r < 0.6:
            tokens.append(_s(rng.choice([*STRINGS, "w", "storage"])))
        elif r < 0.7:
            tokens.append(b"J" + struct.pack("<i", rng.randint(-(2**31), 2**31 - 1)))
        elif r < 0.75:
            tokens.append(b"\x8a" + bytes([n := rng.randint(0, 12)]) + bytes(rng.randrange(256) for _ in range(n)))
        elif r < 0.85:
            tokens.append(rng.choice([b"q", b"h"]) + bytes([rng.randint(0, 5)]))
        else:
            tokens.append(_tensor_ops(rng))
    body = b"".join(tokens)
    return b"\x80\x02}(" + body + b"u." if rng.random() < 0.7 else b"\x80\x02" + body + b"."


# --- seeds ------------------------------------------------------------------------------------------------------


def build_seeds(tmp: Path) -> dict[str, Any]:
    """Every seed file, built once (needs torch)."""
    import torch
    from ckpt_hostile import safetensors_bytes
    from conformance.lightning_cpp import lightning_bytes
    from regtools import build_registry, write_miss
    from safetensors.torch import save as st_save

    torch.manual_seed(1)  # nn.Linear's initialisation: the seeds are the same on every run
    g = torch.Generator().manual_seed(1)

    def saved(obj: Any) -> bytes:
        buf = io.BytesIO()
        torch.save(obj, buf)
        return buf.getvalue()

    x = torch.randn(6, generator=g)
    write_miss(tmp / "adapter-final.pth", seed=2)
    zips = {
        "torch-dict": saved({"a": torch.randn(3, 4, generator=g).bfloat16(), "b": torch.arange(5)}),
        "torch-state-dict": saved(torch.nn.Linear(3, 2).state_dict()),
        "torch-views": saved({"all": x, "tail": x[2:]}),
        "lightning": lightning_bytes({"blocks.0.att.time_state": torch.randn(2, 4, 4, generator=g).bfloat16()}),
        "miss": (tmp / "adapter-final.pth").read_bytes(),
    }
    reg = build_registry(tmp / "reg", tmp)
    base = next(p for p in reg.iterdir() if p.is_dir() and not p.name.startswith("."))
    return {
        "zips": zips,
        "safetensors": [
            st_save({"a": torch.randn(3, 4, generator=g), "b": torch.zeros(2, dtype=torch.bfloat16)}, {"k": "v"}),
            safetensors_bytes({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}, bytes(8)),
        ],
        "json": [
            (reg / "index.json").read_bytes(),
            (base / "state" / "v1" / "train.json").read_bytes(),
            (base / "miss" / "v2" / "train.json").read_bytes(),
            zipfile.ZipFile(io.BytesIO(zips["miss"])).read("archive/miss.json"),
            b'{"a": [1, 2.5, "x\\u00e9", null, true], "b": {"c": -1e300}}',
        ],
        "sums": (reg / "SHA256SUMS").read_bytes(),
        "lfs": f"version https://git-lfs.github.com/spec/v1\noid sha256:{'ab' * 32}\nsize 123\n".encode(),
        "registry": str(reg),
        "train_rel": f"{base.name}/state/v1/train.json",
    }


# --- targets ----------------------------------------------------------------------------------------------------


class Fuzzer:
    """One worker's state: the seeds, a scratch registry, torch loaded lazily for the oracle."""

    def __init__(self, seeds: dict[str, Any], scratch: Path, torch_oracle: bool) -> None:
        self.seeds = seeds
        self.scratch = scratch
        self.torch_oracle = torch_oracle
        self.reg = scratch / "reg"
        shutil.copytree(seeds["registry"], self.reg)
        self.index_json = json.loads((self.reg / "index.json").read_bytes())
        self.train_json = json.loads((self.reg / seeds["train_rel"]).read_bytes())
        self.miss = zipfile.ZipFile(io.BytesIO(seeds["zips"]["miss"]))
        self.targets: dict[str, Callable[[random.Random], str]] = {
            "zip": self.t_zip,
            "zip-pickle": self.t_zip_pickle,
            "pickle": self.t_pickle,
            "safetensors": self.t_safetensors,
            "miss-json": self.t_miss_json,
            "json": self.t_json,
            "index-train": self.t_index_train,
            "jsoncpp": self.t_jsoncpp,
            "sums": self.t_sums,
            "lfs": self.t_lfs,
            "validate": self.t_validate,
        }

    # checkpoint readers
    def _read(self, data: bytes, oracle: bool = True) -> str:
        from rwkv_registry.core.errors import CheckpointError
        from rwkv_registry.engine.facts import facts_from_buffer
        from rwkv_registry.formats.ckpt import open_checkpoint

        facts_from_buffer(data)
        try:
            ckpt = open_checkpoint(data, verify_crc="all")
        except CheckpointError:
            return "refused"
        seen = {}
        for name, info in ckpt.tensors.items():
            raw = bytes(ckpt.tensor_bytes(name))
            if len(raw) != info.nbytes:
                raise OracleError(f"{name}: {len(raw)} bytes read, {info.nbytes} expected")
            seen[name] = (info.dtype, tuple(info.shape), raw)
        if oracle and self.torch_oracle and ckpt.kind == "torch-zip":
            theirs = _torch_view(data)
            if theirs != seen:
                raise OracleError(f"torch reads {sorted(theirs)}, we read {sorted(seen)}")
        return "accepted"

    def t_zip(self, rng: random.Random) -> str:
        return self._read(mutate_bytes(rng.choice(list(self.seeds["zips"].values())), rng))

    def t_zip_pickle(self, rng: random.Random) -> str:
        from evil_cases import Member, zip_archive

        seed = rng.choice(list(self.seeds["zips"].values()))
        z = zipfile.ZipFile(io.BytesIO(seed))
        members = [Member(i.filename, z.read(i.filename)) for i in z.infolist()]
        victims = [m for m in members if not m.name.split("/", 1)[1].startswith("data/")]
        m = rng.choice(victims)
        if m.name.endswith("data.pkl") and rng.random() < 0.3:
            pos = rng.randrange(len(m.data))
            m.data = m.data[:pos] + random_pickle(rng)[2:-1] + m.data[pos:]
        else:
            m.data = mutate_bytes(m.data, rng)
        if rng.random() < 0.1:
            rng.shuffle(members)
        return self._read(zip_archive(members))

    def t_pickle(self, rng: random.Random) -> str:
        from rwkv_registry.core.errors import CheckpointError
        from rwkv_registry.formats.unpickle import parse_tensor_pickle

        try:
            parse_tensor_pickle(random_pickle(rng))
        except CheckpointError:
            return "refused"
        return "accepted"

    def t_safetensors(self, rng: random.Random) -> str:
        seed = rng.choice(self.seeds["safetensors"])
        if rng.random() < 0.5:
            return self._read(mutate_bytes(seed, rng))
        (n,) = struct.unpack("<Q", seed[:8])
        header = mutate_json(json.loads(seed[8 : 8 + n]), rng)
        raw = json.dumps(header).encode()
        raw += b" " * (-len(raw) % 8)
        data = seed[8 + n :]
        if rng.random() < 0.3:
            data = mutate_bytes(data, rng)
        return self._read(struct.pack("<Q", len(raw)) + raw + data)

    def t_miss_json(self, rng: random.Random) -> str:
        from evil_cases import Member, zip_archive

        members = [Member(i.filename, self.miss.read(i.filename)) for i in self.miss.infolist()]
        manifest = members[-1]
        manifest.data = json.dumps(mutate_json(json.loads(manifest.data), rng)).encode()
        return self._read(zip_archive(members), oracle=False)

    # JSON
    def t_json(self, rng: random.Random) -> str:
        from rwkv_registry.formats.jsonload import JsonLoadError, load_json_bytes

        data = mutate_bytes(rng.choice(self.seeds["json"]), rng)
        try:
            value = load_json_bytes(data)
        except JsonLoadError:
            return "refused"
        if value != json.loads(data):
            raise OracleError("json reads another value")
        return "accepted"

    def t_index_train(self, rng: random.Random) -> str:
        from rwkv_registry.core.errors import RegistryError
        from rwkv_registry.formats.jsonload import JsonLoadError, load_json_bytes
        from rwkv_registry.schemas import schema_errors
        from rwkv_registry.store.ops import load_index

        which = rng.random() < 0.6
        doc = mutate_json(self.index_json if which else self.train_json, rng)
        text = json.dumps(doc, ensure_ascii=rng.random() < 0.5).encode("utf-8", "surrogatepass")
        try:
            value = load_json_bytes(text)
        except JsonLoadError:
            return "refused"
        errors = schema_errors("index" if which else "train", value)
        if which and rng.random() < 0.2:
            d = self.scratch / "load"
            d.mkdir(exist_ok=True)
            (d / "index.json").write_bytes(text)
            try:
                load_index(d)
            except RegistryError:
                return "refused"
        return "refused" if errors else "accepted"

    def t_jsoncpp(self, rng: random.Random) -> str:
        from rwkv_registry.formats.jsoncpp import dumps

        value = random_json(rng)
        if rng.random() < 0.1:
            value = [value, rng.choice([math.nan, math.inf, -math.inf])]
        text = dumps(value)
        back = json.loads(text.replace("1e+9999", "Infinity"))
        if not _same_json(back, _as_jsoncpp(value)):
            raise OracleError(f"round trip {value!r:.80} -> {text:.80}")
        return "accepted"

    def t_sums(self, rng: random.Random) -> str:
        from rwkv_registry.index.sums import format_sums, parse_sums

        if rng.random() < 0.7:
            good, bad = parse_sums(mutate_bytes(self.seeds["sums"], rng))
            return "refused" if bad else "accepted"
        hashes = {
            rng.choice(STRINGS[1:]) + "".join(rng.choice("ab/\\\n\r é.") for _ in range(rng.randint(0, 8))): "%064x"
            % rng.getrandbits(256)
            for _ in range(rng.randint(0, 5))
        }
        hashes = {p: h for p, h in hashes.items() if not p.startswith("./")}
        good, bad = parse_sums(format_sums(hashes))
        if bad or {line.path: line.sha256 for line in good} != hashes:
            raise OracleError(f"SHA256SUMS round trip lost {hashes}")
        return "accepted"

    def t_lfs(self, rng: random.Random) -> str:
        from rwkv_registry.formats.ckpt import sniff_kind
        from rwkv_registry.formats.lfs import looks_like_lfs_pointer, parse_lfs_pointer

        data = mutate_bytes(self.seeds["lfs"], rng) if rng.random() < 0.8 else os.urandom(rng.randint(0, 64))
        pointer = parse_lfs_pointer(data)
        sniff_kind(data)
        if pointer is not None and not (looks_like_lfs_pointer(data) and sniff_kind(data) == "lfs-pointer"):
            raise OracleError("a parsed pointer is not detected as one")
        return "accepted" if pointer else "refused"

    def t_validate(self, rng: random.Random) -> str:
        from rwkv_registry.engine.validate import validate_registry

        which = rng.random() < 0.6
        rel = "index.json" if which else self.seeds["train_rel"]
        original = (self.reg / rel).read_bytes()
        doc = mutate_json(self.index_json if which else self.train_json, rng)
        (self.reg / rel).write_text(json.dumps(doc))
        try:
            report = validate_registry(self.reg, use_cache=False)
        finally:
            (self.reg / rel).write_bytes(original)
        return "accepted" if report.ok else "refused"


def _torch_view(data: bytes) -> dict[str, tuple]:
    import torch

    loaded = torch.load(io.BytesIO(data), weights_only=True, map_location="cpu")
    out = {}
    for name, t in loaded.items():
        raw = t.contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()
        out[name] = (str(t.dtype).removeprefix("torch."), tuple(t.shape), raw)
    return out


def _as_jsoncpp(value: Any) -> Any:
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return value if -(2**63) <= value <= 2**64 - 1 else float(value)
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, list):
        return [_as_jsoncpp(v) for v in value]
    if isinstance(value, dict):
        return {k: _as_jsoncpp(v) for k, v in value.items()}
    return value


def _same_json(a: Any, b: Any) -> bool:
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


# --- workers ----------------------------------------------------------------------------------------------------

_FUZZER: Fuzzer | None = None
_ARGS: dict[str, Any] = {}


def _init_worker(seeds: dict[str, Any], scratch: str, torch_oracle: bool, hang: float, save: str | None) -> None:
    global _FUZZER
    import torch

    torch.set_num_threads(1)  # forked after torch started: keep its thread pools out of the way
    os.environ["RWKV_REGISTRY_CACHE_DIR"] = tempfile.mkdtemp(dir=scratch)
    _FUZZER = Fuzzer(seeds, Path(tempfile.mkdtemp(dir=scratch)), torch_oracle)
    _ARGS.update(hang=hang, save=save)


def _on_alarm(signum: int, frame: Any) -> None:
    raise Hang()


def _where(exc: BaseException) -> str:
    frames = traceback.extract_tb(exc.__traceback__)
    mine = [f for f in frames if "/registry/" in f.filename or "/schemas/" in f.filename] or frames
    f = mine[-1]
    return f"{Path(f.filename).name}:{f.lineno}"


def run_chunk(task: tuple[str, int, int]) -> dict[str, Any]:
    """Run ``count`` inputs of ``target`` from seed ``seed``; the counts and the crashes."""
    target, seed, count = task
    assert _FUZZER is not None
    fn = _FUZZER.targets[target]
    signal.signal(signal.SIGALRM, _on_alarm)
    stats: dict[str, Any] = {
        "hang_examples": [],
        "target": target,
        "inputs": 0,
        "accepted": 0,
        "refused": 0,
        "crashes": {},
        "hangs": 0,
        "max_s": 0.0,
        "seconds": 0.0,
    }
    for k in range(count):
        rng = random.Random(f"{seed}:{k}")
        t0 = time.perf_counter()
        signal.setitimer(signal.ITIMER_REAL, _ARGS["hang"])
        try:
            stats[fn(rng)] += 1
        except Hang:
            stats["hangs"] += 1
            stats["hang_examples"].append(f"{seed}:{k}")
        except Exception as e:
            key = f"{type(e).__name__} at {_where(e)}"
            first = key not in stats["crashes"]
            stats["crashes"].setdefault(key, {"count": 0, "example": f"seed {seed}:{k}", "message": str(e)[:200]})
            stats["crashes"][key]["count"] += 1
            if first and _ARGS["save"]:
                Path(_ARGS["save"], f"{target}-{seed}-{k}.txt").write_text(traceback.format_exc())
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        dt = time.perf_counter() - t0
        stats["inputs"] += 1
        stats["seconds"] += dt
        stats["max_s"] = max(stats["max_s"], dt)
    return stats


def fuzz(
    only: list[str] | None,
    total: int,
    seed: int,
    workers: int,
    torch_oracle: bool,
    hang: float,
    save: str | None,
    log: Callable[[str], None],
) -> dict[str, Any]:
    """Split ``total`` inputs over the targets and workers; merged figures."""
    weight_sum = sum(WEIGHTS.values())
    chunk = 500
    tasks = []
    for target, w in WEIGHTS.items():
        n = math.ceil(total * w / weight_sum)
        tasks += [(target, seed * 1000 + i, min(chunk, n - i * chunk)) for i in range(math.ceil(n / chunk))]
    tasks = [t for t in tasks if not only or t[0] in only]  # the same inputs as in a full run
    random.Random(seed).shuffle(tasks)
    merged: dict[str, dict[str, Any]] = {}
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="rwkv-fuzz-") as scratch:
        seeds = build_seeds(Path(scratch))
        ctx = mp.get_context("fork")
        with ctx.Pool(workers, initializer=_init_worker, initargs=(seeds, scratch, torch_oracle, hang, save)) as pool:
            for done, st in enumerate(pool.imap_unordered(run_chunk, tasks), 1):
                m = merged.setdefault(
                    st["target"],
                    {
                        "inputs": 0,
                        "accepted": 0,
                        "refused": 0,
                        "crashes": {},
                        "hangs": 0,
                        "max_s": 0.0,
                        "seconds": 0.0,
                        "hang_examples": [],
                    },
                )
                for key in ("inputs", "accepted", "refused", "hangs", "seconds"):
                    m[key] += st[key]
                m["max_s"] = max(m["max_s"], st["max_s"])
                m["hang_examples"] += st["hang_examples"]
                for where, c in st["crashes"].items():
                    m["crashes"].setdefault(where, {**c, "count": 0})["count"] += c["count"]
                if done % 20 == 0 or done == len(tasks):
                    log(f"{done}/{len(tasks)} chunks, {sum(x['inputs'] for x in merged.values()):,} inputs")
    wall = time.perf_counter() - t0
    in_scope = {t: m for t, m in merged.items() if t not in OUT_OF_SCOPE}
    return {
        "targets": merged,
        "inputs": sum(m["inputs"] for m in in_scope.values()),
        "crashes": sum(sum(c["count"] for c in m["crashes"].values()) for m in in_scope.values()),
        "hangs": sum(m["hangs"] for m in in_scope.values()),
        "wall_s": wall,
        "seed": seed,
        "workers": workers,
    }


# --- corpus and bombs -------------------------------------------------------------------------------------------


def measure_corpus_and_bombs(corpus: bool, bounds: bool, log: Callable[[str], None]) -> dict[str, Any]:
    """Validate a registry holding each corpus case / bomb in a child process: code, peak RSS, time."""
    from bombs import BOMBS, place
    from evil_cases import CASES, marker_for, write_case
    from regtools import TINY_BASE, build_registry
    from rss_probe import probe

    out: dict[str, Any] = {"corpus": [], "bombs": []}
    with tempfile.TemporaryDirectory(prefix="rwkv-bounds-") as tmp:
        os.environ["RWKV_REGISTRY_CACHE_DIR"] = str(Path(tmp) / "cache")
        template = build_registry(Path(tmp) / "template", Path(tmp), with_miss=False)
        clean = probe("validate", str(template))
        out["baseline_rss"] = clean.max_rss
        out["baseline_s"] = clean.wall_s
        state = f"{TINY_BASE}/state/v1/s1.pth"
        jobs: list[tuple[str, str, str, Callable[[Path], Path]]] = []
        if corpus:
            for c in CASES.values():
                jobs.append(
                    ("corpus", c.id, c.code, functools.partial(_place_case, c, state=state, write_case=write_case))
                )
        if bounds:
            for b in BOMBS.values():
                jobs.append(("bombs", b.id, b.code, functools.partial(place, b)))
        for kind, ident, code, put in jobs:
            reg = Path(tmp) / "reg"
            if reg.exists():
                shutil.rmtree(reg)
            shutil.copytree(template, reg)
            path = put(reg)
            size = path.stat().st_size
            run = probe("validate", str(reg), timeout=120)
            found = (
                []
                if run.timed_out or run.rc
                else [
                    f[0]
                    for f in cast(dict[str, Any], run.json())["findings"]
                    if f[1] == path.relative_to(reg).as_posix()
                ]
            )
            ran = kind == "corpus" and marker_for(reg.parent / "files", ident).exists()
            extra = run.max_rss - clean.max_rss
            out[kind].append(
                {
                    "id": ident,
                    "code": code,
                    "found": code in found,
                    "rss_extra": extra,
                    "seconds": run.wall_s,
                    "size": size,
                    "ran": ran,
                }
            )
            log(
                f"{kind} {ident}: {'ok' if code in found else 'MISSING ' + code} {run.wall_s:.2f} s "
                f"{(run.max_rss - clean.max_rss) / 2**20:+.1f} MB"
            )
            shutil.rmtree(reg)
    return out


def _place_case(case: Any, reg: Path, state: str, write_case: Callable) -> Path:
    path = write_case(case, reg.parent / "files")
    shutil.copyfile(path, reg / state)
    return reg / state


# --- report -----------------------------------------------------------------------------------------------------


def markdown_fuzz(fig: dict[str, Any], args: argparse.Namespace) -> str:
    """The fuzzing section of docs/reliability.md."""
    import datetime as dt

    from crash import machine

    lines = [
        f"Measured {dt.date.today().isoformat()} on {machine()} by `bench/fuzz.py --inputs {args.inputs} "
        f"--seed {args.seed}{'' if args.torch_oracle else ' --no-torch-oracle'}` ({fig['workers']} workers, "
        f"{fig['wall_s']:.0f} s).",
        "",
        f"**{fig['inputs']:,} inputs** over the readers; crashes **{fig['crashes']}**, hangs (> {args.hang:g} s) "
        f"**{fig['hangs']}**.",
        "",
        "| target | inputs | accepted | refused | crashes | hangs | slowest input | inputs/s per worker |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for target in WEIGHTS:
        m = fig["targets"].get(target)
        if not m:
            continue
        crashes = sum(c["count"] for c in m["crashes"].values())
        rate = m["inputs"] / m["seconds"] if m["seconds"] else 0
        name = f"`{target}`" + (" (apart)" if target in OUT_OF_SCOPE else "")
        lines.append(
            f"| {name} | {m['inputs']:,} | {m['accepted']:,} | {m['refused']:,} | {crashes} | {m['hangs']} | "
            f"{m['max_s'] * 1000:.0f} ms | {rate:,.0f} |"
        )
    apart = fig["targets"].get("validate", {}).get("crashes", {})
    if apart:
        lines += [
            "",
            "Crash sites of the `validate` target (whole registry, schema-invalid index.json or "
            "train.json; open, in validate.py/readme.py):",
            "",
        ]
        lines += [f"- `{where}` ×{c['count']}: {c['message'][:100]}" for where, c in sorted(apart.items())]
    return "\n".join(lines) + "\n"


def markdown_bounds(res: dict[str, Any]) -> str:
    """The corpus and resource-bounds section of docs/reliability.md."""
    import datetime as dt

    from crash import machine

    mb = 2**20
    base = f"{res['baseline_rss'] / mb:.0f} MB, {res['baseline_s']:.2f} s"
    lines = [
        f"Measured {dt.date.today().isoformat()} on {machine()} by `bench/fuzz.py --corpus --bounds`: "
        "`validate` in a child process on a small registry holding the file; peak RSS (VmHWM) compared with "
        f"validating the clean registry ({base}).",
        "",
    ]
    if res["corpus"]:
        c = res["corpus"]
        lines += [
            f"Malicious corpus: **{len(c)} cases**, {sum(x['found'] for x in c)} reported with their code, "
            f"payloads run: **{sum(x['ran'] for x in c)}**; extra memory at most "
            f"{max(x['rss_extra'] for x in c) / mb:+.1f} MB, "
            f"slowest {max(x['seconds'] for x in c):.2f} s (see docs/security.md).",
            "",
        ]
    if res["bombs"]:
        lines += [
            "| resource bomb | file size | rule | reported | validate time | extra peak RSS |",
            "|---|---|---|---|---|---|",
        ]
        for b in res["bombs"]:
            found = "yes" if b["found"] else "**no**"
            lines.append(
                f"| `{b['id']}` | {b['size'] / mb:,.1f} MB | {b['code']} | {found} | {b['seconds']:.2f} s | "
                f"{b['rss_extra'] / mb:+.1f} MB |"
            )
    return "\n".join(lines) + "\n"


def main() -> int:
    """Command line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--inputs", type=int, default=100_000, help="inputs over the in-scope targets (default 100,000)"
    )
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--hang", type=float, default=5.0, help="seconds after which an input is a hang")
    parser.add_argument("--no-torch-oracle", dest="torch_oracle", action="store_false")
    parser.add_argument("--save", metavar="DIR", help="write the traceback of each new crash into DIR")
    parser.add_argument("--corpus", action="store_true", help="also validate every corpus case in a child process")
    parser.add_argument("--bounds", action="store_true", help="also validate every resource bomb")
    parser.add_argument("--no-fuzz", dest="fuzz", action="store_false")
    parser.add_argument("--only", action="append", choices=sorted(WEIGHTS), help="fuzz only these targets")
    parser.add_argument("--docs", action="store_true", help="write the figures into docs/reliability.md")
    args = parser.parse_args()
    from crash import write_section

    log = lambda m: print(m, flush=True)  # noqa: E731
    status = 0
    if args.save:
        Path(args.save).mkdir(parents=True, exist_ok=True)
    if args.fuzz:
        scope = sum(w for t, w in WEIGHTS.items() if t not in OUT_OF_SCOPE)
        total = math.ceil(args.inputs * sum(WEIGHTS.values()) / scope)  # so the in-scope targets get --inputs
        fig = fuzz(args.only, total, args.seed, args.workers, args.torch_oracle, args.hang, args.save, log)
        print(json.dumps(fig, indent=2))
        if args.docs:
            write_section("fuzz", markdown_fuzz(fig, args))
        status |= bool(fig["crashes"] or fig["hangs"])
    if args.corpus or args.bounds:
        res = measure_corpus_and_bombs(args.corpus, args.bounds, log)
        if args.docs:
            write_section("bounds", markdown_bounds(res))
        bad = [x for x in res["corpus"] + res["bombs"] if not x["found"] or x["ran"] or x["rss_extra"] > 200 * 2**20]
        status |= bool(bad)
    return status


if __name__ == "__main__":
    raise SystemExit(main())
