"""Hostile files inside a registry: `validate` reports a finding, never a traceback, never runs code.

Also the two independent producers the issue asks for: MiSS files written by an independent
implementation of the rwkv_lightning_cuda layout (tests/conformance/lightning_cpp.py, ported from
pth_writer.cpp) with a content_version computed here from FORMATS §4, and a tiny random RWKV-7 base from the
model's factory.
"""

from __future__ import annotations

import hashlib
import json
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import pytest
from ckpt_hostile import evil_pickle, with_pickle
from conformance.lightning_cpp import lightning_bytes, write_lightning
from regtools import (
    TINY_ARCH,
    TINY_BASE,
    TINY_SHA,
    bf16_bytes,
    build_registry,
    edit_index,
    miss_train,
    resum,
    state_train,
)

from rwkv_registry.checks.miss import MISS_TARGETS
from rwkv_registry.engine.validate import validate_registry
from rwkv_registry.store.ops import add_base, add_entry, init_registry, write_readme

STATE = f"{TINY_BASE}/state/v1/s1.pth"
MISS_A = f"{TINY_BASE}/miss/v2/r4-a/adapter-final.pth"


def plant(root: Path, rel: str, data: bytes) -> None:
    """Replace a weight file and record its hash, so only the content rules can object."""
    (root / rel).write_bytes(data)

    def fn(index: dict) -> None:
        for e in index["entries"]:
            if e["path"] == rel:
                e["file"] = {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}

    edit_index(root, fn)
    write_readme(root)
    resum(root)


def run_validate_subprocess(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rwkv_registry.cli.main", "validate", str(root), "--format", "json"],
        capture_output=True,
        text=True,
    )


def findings(out: subprocess.CompletedProcess[str]) -> set[str]:
    assert out.returncode == 1, out.stderr
    assert "Traceback" not in out.stderr
    return {f["code"] for f in json.loads(out.stdout)["findings"]}


@pytest.mark.parametrize("kind", ["posix system", "builtins eval", "subprocess Popen", "os system"])
def test_pickle_with_code_is_a_finding_and_nothing_runs(reg: Path, tmp_path: Path, kind: str) -> None:
    marker = tmp_path / "pwned"
    plant(reg, STATE, with_pickle(evil_pickle(kind, marker)))
    codes = findings(run_validate_subprocess(reg))
    assert "PTH003" in codes
    assert not marker.exists()


def test_truncated_zip(reg: Path) -> None:
    data = (reg / STATE).read_bytes()
    plant(reg, STATE, data[: len(data) // 2])
    assert "PTH001" in findings(run_validate_subprocess(reg))


def test_bad_crc(reg: Path) -> None:
    """data.pkl's CRC-32 changed wherever it is written (the local header, or its data descriptor in torch's layout,
    and the central header): the bytes no longer match."""
    data = bytearray((reg / STATE).read_bytes())
    flipped = 0
    for sig, name_len_at, name_at, crc_at in ((b"PK\x03\x04", 26, 30, 14), (b"PK\x01\x02", 28, 46, 16)):
        off = data.find(sig)
        while off >= 0:
            n = int.from_bytes(data[off + name_len_at : off + name_len_at + 2], "little")
            if bytes(data[off + name_at : off + name_at + n]).endswith(b"/data.pkl"):
                if not (sig == b"PK\x03\x04" and data[off + 6] & 0x08):  # else the local CRC is 0 (descriptor)
                    data[off + crc_at] ^= 0xFF
                flipped += 1
                if sig == b"PK\x01\x02" and data[off + 8] & 0x08:  # the descriptor after data.pkl's data
                    size, local = (
                        struct.unpack_from("<I", data, off + 20)[0],
                        struct.unpack_from("<I", data, off + 42)[0],
                    )
                    extra = struct.unpack_from("<H", data, local + 28)[0]
                    descriptor = local + 30 + n + extra + size
                    assert data[descriptor : descriptor + 4] == b"PK\x07\x08"
                    data[descriptor + 4] ^= 0xFF
            off = data.find(sig, off + 4)
    assert flipped == 2
    plant(reg, STATE, bytes(data))
    assert "PTH002" in findings(run_validate_subprocess(reg))


def test_zip_entry_with_dotdot(reg: Path) -> None:
    tensors = {"blocks.0.att.time_state": ("bfloat16", (2, 64, 64), bf16_bytes(2 * 64 * 64, 1))}
    data = lightning_bytes(tensors)
    evil = data.replace(b"archive/data/0", b"../rchive/dat0")
    plant(reg, STATE, evil)
    assert "PTH008" in findings(run_validate_subprocess(reg))


def test_duplicate_tensor_names(reg: Path) -> None:
    from conformance.lightning_cpp import lightning_pickle

    spec = ("blocks.0.att.time_state", "bfloat16", (2, 64, 64))
    raw = bf16_bytes(2 * 64 * 64, 1)
    pkl = lightning_pickle([spec, spec])
    data = lightning_bytes({"a": ("bfloat16", (2, 64, 64), raw), "b": ("bfloat16", (2, 64, 64), raw)}, pickle=pkl)
    plant(reg, STATE, data)
    assert "PTH007" in findings(run_validate_subprocess(reg))


def test_miss_manifest_over_8_mib(reg: Path) -> None:
    data = lightning_bytes(
        {"blocks.0.att.key.weight.D": ("bfloat16", (128, 4), bf16_bytes(512, 1))},
        miss_json=b'{"pad": "' + b"x" * (8 * 2**20) + b'"}',
    )
    plant(reg, MISS_A, data)
    assert "MIS002" in findings(run_validate_subprocess(reg))


@pytest.mark.parametrize("bits", [b"\xc0\x7f", b"\x80\x7f", b"\x80\xff", b"\x80\x47"])  # NaN, +Inf, -Inf, 65536
def test_nan_inf_or_huge_in_d(tmp_path: Path, bits: bytes) -> None:
    manifest, tensors = independent_miss(TINY_ARCH, TINY_SHA, poison=bits)
    root = build_registry(tmp_path / "reg", tmp_path, with_miss=False)
    bad = tmp_path / "bad" / "adapter-final.pth"
    bad.parent.mkdir()
    write_lightning(bad, tensors, json.dumps(manifest).encode())
    from rwkv_registry.core.errors import RefusedError

    with pytest.raises(RefusedError, match="MIS010"):
        add_entry(root, bad, base=TINY_BASE, data_version="v2", train=miss_train(), group="r4-a")


def test_non_utf8_and_deep_json(reg: Path) -> None:
    (reg / f"{TINY_BASE}/state/v1/train.json").write_bytes(b'{"trainer": "\xff\xfe"}')
    (reg / "index.json").write_text("[" * 10000 + "]" * 10000)
    codes = findings(run_validate_subprocess(reg))
    assert "SCH001" in codes


def test_lfs_pointer_and_symlink_out(reg: Path) -> None:
    oid = hashlib.sha256(b"weights").hexdigest()
    (reg / STATE).write_text(f"version https://git-lfs.github.com/spec/v1\noid sha256:{oid}\nsize 7\n")
    (reg / TINY_BASE / "miss" / "v2" / "r4-b" / "adapter-final.pth").unlink()
    (reg / TINY_BASE / "miss" / "v2" / "r4-b" / "adapter-final.pth").symlink_to("/etc/passwd")
    out = run_validate_subprocess(reg)
    codes = findings(out)
    assert {"LFS001", "LAY005"} <= codes
    lfs = next(f for f in json.loads(out.stdout)["findings"] if f["code"] == "LFS001")
    assert "git lfs pull" in lfs["hint"]


# --- independent producers -------------------------------------------------------------------------


def independent_miss(arch: dict, base_sha: str, *, rank: int = 4, poison: bytes | None = None) -> tuple[dict, dict]:
    """A MiSS package computed here from FORMATS §4 alone (compact sorted JSON = JsonCpp for these values)."""
    tensors, targets = {}, []
    for layer in range(arch["n_layer"]):
        for j, t in enumerate(MISS_TARGETS):
            c, f = arch["n_embd"], arch["ffn_size"]
            out_f, in_f = (c, c) if t.startswith("att.") else ((f, c) if t == "ffn.key.weight" else (c, f))
            raw = bytearray(bf16_bytes(out_f * rank, 1000 + layer * 10 + j))
            if poison is not None and layer == 0 and j == 0:
                raw[6:8] = poison
            tensors[f"blocks.{layer}.{t}.D"] = ("bfloat16", (out_f, rank), bytes(raw))
            targets.append(
                {
                    "name": f"blocks.{layer}.{t}.D",
                    "layer": layer,
                    "target": t,
                    "in_features": in_f,
                    "shape": [out_f, rank],
                }
            )
    manifest = {
        "format_version": 1,
        "method": "miss",
        "dtype": "bfloat16",
        "layout": "modulo_rank_zero_pad",
        "kind": "inference_adapter",
        "rank": rank,
        "alpha": 8,
        "scale": 2.0,
        "base_fingerprint": base_sha,
        "targets": targets,
    }
    body = json.dumps(manifest, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()
    h = hashlib.sha256(body)
    for t in targets:
        h.update(tensors[t["name"]][2])
    manifest["content_version"] = h.hexdigest()
    return manifest, tensors


def test_independent_writer_and_content_version_are_accepted(tmp_path: Path) -> None:
    root = build_registry(tmp_path / "reg", tmp_path, with_miss=False)
    manifest, tensors = independent_miss(TINY_ARCH, TINY_SHA)
    f = tmp_path / "ind" / "adapter-final.pth"
    f.parent.mkdir()
    write_lightning(f, tensors, json.dumps(manifest, indent=2).encode())  # pretty-printed, as a server might
    entry = add_entry(root, f, base=TINY_BASE, data_version="v2", train=miss_train(), group="r4-a")
    assert entry["miss"]["content_version"] == manifest["content_version"]
    report = validate_registry(root, use_cache=False)
    assert report.ok, [(x.code, x.message) for x in report.findings]
    assert zlib.crc32(f.read_bytes()) == zlib.crc32((root / entry["path"]).read_bytes())


def test_tiny_random_base_end_to_end(tmp_path: Path) -> None:
    """A random tiny RWKV-7 base from the model's factory, its State and MiSS: add-base, add, validate."""
    pytest.importorskip("torch")
    from rwkv_registry.model.tiny import make_tiny_base, make_tiny_miss, make_tiny_state

    base = make_tiny_base(tmp_path / "rwkv7-tiny-20260601-ctx512.pth", seed=3, vocab=65536)
    root = tmp_path / "reg"
    init_registry(root)
    b = add_base(root, base_file=base, source="BlinkDL/rwkv7-g1")
    assert b["architecture"]["n_layer"] == 2 and b["architecture"]["vocab_size"] == 65536
    st = make_tiny_state(tmp_path / "st" / "tiny-s1.pth", base, seed=4)
    add_entry(root, st, base=b["name"], data_version="v1", train=state_train())
    m = make_tiny_miss(tmp_path / "m" / "adapter-final.pth", base, seed=5)
    add_entry(root, m, base=b["name"], data_version="v2", train=miss_train(groups=("r4-a",)), group="r4-a")
    report = validate_registry(root, use_cache=False)
    assert report.ok, [(x.code, x.message) for x in report.findings]
    other = make_tiny_base(tmp_path / "other.pth", seed=9)
    wrong = make_tiny_miss(tmp_path / "w" / "adapter-final.pth", other, seed=5)
    from rwkv_registry.core.errors import RefusedError

    with pytest.raises(RefusedError, match="MIS013"):
        add_entry(root, wrong, base=b["name"], data_version="v2", train=miss_train(groups=("r4-b",)), group="r4-b")
