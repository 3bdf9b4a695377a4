"""Helpers shared by the registry tests: a tiny RWKV-7 architecture, weight files, small registries."""

from __future__ import annotations

import hashlib
import io
import json
import os
import random
import struct
import subprocess
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rwkv_registry.checks.miss import MISS_TARGETS, content_version
from rwkv_registry.core.rules import Finding
from rwkv_registry.formats import jsoncpp
from rwkv_registry.fs.atomic import LOCK_NAME

TINY_ARCH: dict[str, Any] = {
    "n_layer": 2,
    "n_embd": 128,
    "head_size": 64,
    "n_head": 2,
    "vocab_size": 65536,
    "ffn_size": 512,
    "lora": {"decay": 32, "aaa": 32, "mv": 32, "gate": 32},
    "dtype": "bfloat16",
}
TINY_BASE = "rwkv7-tiny-20260101-ctx4096"
TINY_SHA = hashlib.sha256(b"tiny base file").hexdigest()
DATA_SHA = hashlib.sha256(b"training data v1").hexdigest()
NEWER_BASE = TINY_BASE.replace("20260101", "20260301")  # a newer dated base of the same family
TINY_ARCH_ARG = "n_layer=2,n_embd=128,vocab_size=65536,ffn_size=512"  # TINY_ARCH as add-base --arch takes it
# the paths of build_registry's files
STATE = f"{TINY_BASE}/state/v1/s1.pth"
MISS_A = f"{TINY_BASE}/miss/v2/r4-a/adapter-final.pth"
STATE_TRAIN = f"{TINY_BASE}/state/v1/train.json"
MISS_TRAIN = f"{TINY_BASE}/miss/v2/train.json"


def bf16_bytes(n: int, seed: int, *, high: tuple[int, int] = (0x3A, 0x3C)) -> bytes:
    """n finite small bf16 values, deterministic."""
    rng = random.Random(seed)
    out = bytearray()
    for _ in range(n):
        out.append(rng.randrange(256))
        out.append((rng.randrange(2) << 7) | rng.randint(*high))
    return bytes(out)


def target_shape(arch: dict[str, Any], target: str) -> tuple[int, int]:
    c, f = arch["n_embd"], arch["ffn_size"]
    if target.startswith("att."):
        return c, c
    return (f, c) if target == "ffn.key.weight" else (c, f)


def write_state(
    path: Path,
    arch: dict[str, Any] = TINY_ARCH,
    *,
    dtype: str = "bfloat16",
    seed: int = 0,
    n_layer: int | None = None,
    shape: tuple[int, ...] | None = None,
    poison: bool = False,
) -> Path:
    """A State file written by torch.save (the trainer's own format)."""
    import torch

    g = torch.Generator().manual_seed(seed)
    h, n = arch["n_head"], arch["head_size"]
    sd = {}
    for i in range(arch["n_layer"] if n_layer is None else n_layer):
        t = torch.randn(shape or (h, n, n), generator=g) * 0.1
        sd[f"blocks.{i}.att.time_state"] = t.to(getattr(torch, dtype))
    if poison:
        sd["blocks.0.att.time_state"][0, 0, 0] = float("nan")
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save(sd, path)
    return path


def write_miss(
    path: Path,
    arch: dict[str, Any] = TINY_ARCH,
    *,
    base_sha: str = TINY_SHA,
    rank: int = 4,
    alpha: float = 8,
    seed: int = 0,
    **kw: Any,
) -> dict[str, Any]:
    """A MiSS package through the registry's writer (the trainer's layout)."""
    from rwkv_registry.checks.miss import write_miss_file
    from rwkv_registry.formats.pthwrite import RawTensor

    tensors = {}
    for layer in range(arch["n_layer"]):
        for j, t in enumerate(MISS_TARGETS):
            out_f, _ = target_shape(arch, t)
            tensors[f"blocks.{layer}.{t}.D"] = RawTensor(
                "bfloat16", (out_f, rank), bf16_bytes(out_f * rank, seed * 100 + layer * 10 + j)
            )
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_miss_file(path, tensors, rank=rank, alpha=alpha, base_fingerprint=base_sha, arch=arch, **kw)


def state_train(version: str = "v1", **over: Any) -> dict[str, Any]:
    t = {
        "trainer": {"name": "rwkv_state_tune", "version": "1.8.1", "commit": None},
        "method": "state",
        "data": {"version": version, "rows": 100, "sha256": DATA_SHA},
        "hyperparameters": {"lr": 0.01, "lr_final": 0.001, "ctx": 4096},
        "command": "rwkv_state_tune --lr 0.01",
        "started": "2026-10-12T08:00:00Z",
        "finished": "2026-10-12T10:00:00Z",
    }
    t.update(over)
    return t


def miss_train(version: str = "v2", groups: tuple[str, ...] = ("r4-a", "r4-b"), **over: Any) -> dict[str, Any]:
    t = {
        "trainer": {"name": "rwkv_miss_tune", "version": "1.8.1", "commit": "47df608"},
        "method": "miss",
        "data": {"version": version, "rows": 200, "sha256": DATA_SHA},
        "hyperparameters": {"rank": 4, "alpha": 8, "ctx": 4096},
        "command": "rwkv_miss_tune --rank 4",
        "started": "2026-10-12T08:00:00Z",
        "finished": "2026-10-12T10:00:00Z",
        "runs": [
            {
                "group": g,
                "lr": 2e-5,
                "lr_final": 2e-6,
                "started": "2026-10-12T08:00:00Z",
                "finished": "2026-10-12T09:00:00Z",
            }
            for g in groups
        ],
    }
    t.update(over)
    return t


def build_registry(root: Path, tmp: Path, *, with_miss: bool = True) -> Path:
    """A small valid registry: one tiny base, one State, two MiSS adapters."""
    from rwkv_registry.store.ops import add_base, add_entry, init_registry

    init_registry(root, name="test/registry")
    add_base(root, name=TINY_BASE, source="BlinkDL/rwkv7-g1", sha256=TINY_SHA, size=1234, arch=dict(TINY_ARCH))
    st = write_state(tmp / "src" / "s1.pth")
    add_entry(root, st, base=TINY_BASE, data_version="v1", train=state_train(), recommended=True)
    if with_miss:
        for i, g in enumerate(("r4-a", "r4-b")):
            f = tmp / "src" / g / "adapter-final.pth"
            write_miss(f, seed=i)
            add_entry(root, f, base=TINY_BASE, data_version="v2", train=miss_train(), group=g, recommended=i == 0)
    return root


def codes(report: Any) -> list[str]:
    return sorted({f.code for f in report.findings if str(f.severity) == "error"})


def all_codes(report: Any) -> list[str]:
    return sorted({f.code for f in report.findings})


def findings(root: Path, code: str | None = None, **kw: Any) -> list[Finding]:
    """The findings (of one code, if given) of a fresh (uncached) validation of ``root`` (``kw``: validate_registry's
    other options, e.g. ``since``)."""
    from rwkv_registry.engine.validate import validate_registry

    found = validate_registry(root, use_cache=False, **kw).findings
    return [f for f in found if code is None or f.code == code]


def messages_of(root: Path, code: str) -> list[str]:
    """The messages of the findings of ``code``."""
    return [f.message for f in findings(root, code)]


def where(root: Path, code: str) -> dict[str, list[str]]:
    """{path: [messages]} of the findings of ``code``."""
    out: dict[str, list[str]] = {}
    for f in findings(root, code):
        out.setdefault(f.path, []).append(f.message)
    return out


def edit_index(root: Path, fn: Any) -> None:
    """Edit index.json in place (bypassing the registry's own write path, as a careless user would)."""
    p = root / "index.json"
    data = json.loads(p.read_text())
    fn(data)
    p.write_text(json.dumps(data, indent=2))


def resum(root: Path) -> None:
    """SHA256SUMS of the files as they are, however damaged (``sums --force``): tests break one rule at a time."""
    from rwkv_registry.store.ops import write_sums

    write_sums(root, check_index=False)


def write_tiny_base(
    path: Path,
    *,
    n_layer: int = 2,
    n_embd: int = 128,
    vocab: int = 1000,
    ffn: int = 512,
    lora: int = 32,
    dtype: str = "bfloat16",
) -> Path:
    """An RWKV-7-shaped checkpoint (zeros) written by torch.save: every tensor name and shape of FORMATS §2."""
    import torch

    c, h = n_embd, n_embd // 64
    dt = getattr(torch, dtype)
    sd: dict[str, Any] = {"emb.weight": torch.zeros(vocab, c, dtype=dt)}
    sd["blocks.0.ln0.weight"] = torch.ones(c, dtype=dt)
    sd["blocks.0.ln0.bias"] = torch.zeros(c, dtype=dt)
    for i in range(n_layer):
        p = f"blocks.{i}."
        for n in ("ln1", "ln2"):
            sd[p + n + ".weight"] = torch.ones(c, dtype=dt)
            sd[p + n + ".bias"] = torch.zeros(c, dtype=dt)
        for x in ("x_r", "x_w", "x_k", "x_v", "x_a", "x_g", "w0", "a0", "v0", "k_k", "k_a"):
            sd[p + "att." + x] = torch.zeros(1, 1, c, dtype=dt)
        for x in ("w", "a", "v", "g"):
            sd[p + f"att.{x}1"] = torch.zeros(c, lora, dtype=dt)
            sd[p + f"att.{x}2"] = torch.zeros(lora, c, dtype=dt)
        sd[p + "att.r_k"] = torch.zeros(h, 64, dtype=dt)
        for x in ("receptance", "key", "value", "output"):
            sd[p + f"att.{x}.weight"] = torch.zeros(c, c, dtype=dt)
        sd[p + "att.ln_x.weight"] = torch.ones(c, dtype=dt)
        sd[p + "att.ln_x.bias"] = torch.zeros(c, dtype=dt)
        sd[p + "ffn.x_k"] = torch.zeros(1, 1, c, dtype=dt)
        sd[p + "ffn.key.weight"] = torch.zeros(ffn, c, dtype=dt)
        sd[p + "ffn.value.weight"] = torch.zeros(c, ffn, dtype=dt)
    sd["ln_out.weight"] = torch.ones(c, dtype=dt)
    sd["ln_out.bias"] = torch.zeros(c, dtype=dt)
    sd["head.weight"] = torch.zeros(vocab, c, dtype=dt)
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save(sd, path)
    return path


def hold_lock(root: str, ready: Any, seconds: float) -> None:
    """A child process (multiprocessing, spawn) that holds the registry's write lock for ``seconds``,
    setting ``ready`` once it has it."""
    import time

    from rwkv_registry.fs.atomic import registry_lock

    with registry_lock(root):
        ready.set()
        time.sleep(seconds)


GIT_ENV = {  # git as the tests run it: no user's configuration, a fixed author
    **os.environ,
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@e",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@e",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git_publish(root: Path, message: str = "publish v1") -> Path:
    """Make ``root`` a git repository with everything in it committed: its published state."""
    import subprocess

    for args in (("init", "-q", "-b", "main"), ("add", "-A"), ("commit", "-q", "-m", message)):
        subprocess.run(["git", *args], cwd=root, env=GIT_ENV, check=True, capture_output=True)
    return root


def git(root: Path, *args: str) -> str:
    """Run git in ``root`` as the tests do (GIT_ENV); its stdout."""
    return subprocess.run(["git", *args], cwd=root, env=GIT_ENV, check=True, capture_output=True, text=True).stdout


def add_base_by_metadata(root: Path, name: str, **kw: Any) -> dict[str, Any]:
    """Register base ``name`` from metadata only (a sha256 made from its name, size 1, the tiny architecture)."""
    from rwkv_registry.store.ops import add_base

    sha = hashlib.sha256(name.encode()).hexdigest()
    return add_base(root, name=name, source="BlinkDL/rwkv7-g1", sha256=sha, size=1, arch=dict(TINY_ARCH), **kw)


def errors(report: Any) -> list[str]:
    """The codes of a report's errors, sorted, each once."""
    return sorted({f.code for f in report.findings if str(f.severity) == "error"})


def same_tree(root: Path, files: dict[str, bytes]) -> bool:
    """``root`` holds exactly ``files``, byte for byte (nothing else but folders)."""
    held = {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}
    return held == files


def snapshot(root: Path, *, lock: bool = False) -> dict[str, str]:
    """Every file (sha256) and directory of ``root``, the lock file aside (with ``lock``: the lock file too)."""
    out = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        if p.name == LOCK_NAME and not lock:
            continue
        out[rel] = "dir" if p.is_dir() else hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def clean_error(err: str) -> str:
    """stderr flattened; asserts the error is a clean one."""
    assert "Traceback" not in err and "unexpected" not in err, err
    return " ".join(err.split())


def quiet(message: str) -> None:
    """A progress log that says nothing."""


def refresh(root: Path, rel: str) -> None:
    """Record the file's current sha256/size (and content_version) in index.json, then SHA256SUMS."""
    data = (root / rel).read_bytes()

    def fn(index: dict[str, Any]) -> None:
        for e in index["entries"]:
            if e["path"] == rel:
                e["file"] = {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}
                if e["method"] == "miss":
                    try:
                        from rwkv_registry.formats.ckpt import open_checkpoint

                        ck = open_checkpoint(data)
                        if ck.miss_manifest:
                            e["miss"]["content_version"] = json.loads(ck.miss_manifest)["content_version"]
                    except Exception:
                        pass

    edit_index(root, fn)
    from rwkv_registry.store.ops import write_readme

    write_readme(root)
    resum(root)


def custom_miss(
    path: Path,
    *,
    manifest_edit: Callable[[dict], None] | None = None,
    tensors_edit: Callable[[dict], None] | None = None,
    fix_cv: bool = True,
    arch: dict[str, Any] = TINY_ARCH,
    rank: int = 4,
) -> None:
    """A MiSS package with a hand-edited manifest or tensors (content_version fixed unless asked)."""
    from rwkv_registry.formats.pthwrite import RawTensor, write_pth

    tensors: dict[str, Any] = {}
    targets = []
    for layer in range(arch["n_layer"]):
        for j, t in enumerate(MISS_TARGETS):
            out_f, in_f = target_shape(arch, t)
            tensors[f"blocks.{layer}.{t}.D"] = RawTensor(
                "bfloat16", (out_f, rank), bf16_bytes(out_f * rank, layer * 10 + j)
            )
            targets.append(
                {
                    "name": f"blocks.{layer}.{t}.D",
                    "layer": layer,
                    "target": t,
                    "in_features": in_f,
                    "shape": [out_f, rank],
                }
            )
    manifest: dict[str, Any] = {
        "format_version": 1,
        "method": "miss",
        "dtype": "bfloat16",
        "layout": "modulo_rank_zero_pad",
        "kind": "inference_adapter",
        "rank": rank,
        "alpha": 8,
        "scale": 8 / rank,
        "base_fingerprint": hashlib.sha256(b"tiny base file").hexdigest(),
        "targets": targets,
    }
    if manifest_edit:
        manifest_edit(manifest)
    if tensors_edit:
        tensors_edit(tensors)
    if fix_cv:
        chunks = [
            bytes(tensors[t["name"]].data)
            for t in manifest["targets"]
            if isinstance(t, dict) and t.get("name") in tensors
        ]
        manifest["content_version"] = content_version(manifest, chunks)
    manifest.setdefault("content_version", "0" * 64)
    write_pth(path, tensors, layout="lightning", extra_entries={"miss.json": jsoncpp.dumps_bytes(manifest)})


def add_newer_base(root: Path, **kw: Any) -> dict[str, Any]:
    """Register NEWER_BASE (which supersedes TINY_BASE) from metadata."""
    from rwkv_registry.store.ops import add_base

    return add_base(
        root, name=NEWER_BASE, source="BlinkDL/rwkv7-g1", sha256="5" * 64, size=1234, arch=dict(TINY_ARCH), **kw
    )


def without_serialization_id(data: bytes, prefix: str) -> bytes:
    """``data`` with the 40 id digits and both copies of their CRC zeroed (exact positions)."""
    name = f"{prefix}/.data/serialization_id".encode()
    out = bytearray(data)
    info = zipfile.ZipFile(io.BytesIO(data)).getinfo(name.decode())
    nlen, elen = struct.unpack_from("<HH", data, info.header_offset + 26)
    start = info.header_offset + 30 + nlen + elen
    assert len(data[start : start + 40]) == 40 and data[start + 40 : start + 44] == b"PK\x07\x08"
    out[start : start + 40] = b"0" * 40
    out[start + 44 : start + 48] = bytes(4)  # data descriptor CRC
    central = data.rindex(name) - 46
    assert data[central : central + 4] == b"PK\x01\x02"
    out[central + 16 : central + 20] = bytes(4)  # central directory CRC
    return bytes(out)


def jsonschema_checks(monkeypatch: Any) -> list[Any]:
    """Every instance jsonschema is asked to check from now on (``Draft202012Validator.iter_errors``, the one way
    schemas/ asks it), in order: what a cached verdict spares shows as what is not in the list."""
    from jsonschema import Draft202012Validator

    seen: list[Any] = []
    real = Draft202012Validator.iter_errors

    def counted(self: Any, instance: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append(instance)
        return real(self, instance, *args, **kwargs)

    monkeypatch.setattr(Draft202012Validator, "iter_errors", counted)
    return seen
