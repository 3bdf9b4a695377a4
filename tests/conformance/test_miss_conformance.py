"""MiSS files as rwkv_lightning_cuda's own writers make them, through `add` and `validate` on a fresh registry.

The files come from the writers of this folder, ported from the C++ (tests/conformance/miss_*.py, which cite their
lines), never from rwkv_registry's writer. The expected verdict is the server's: what ``load_package``
(src/miss/adapter.cpp, 43ceb30) accepts is added and validates; what it refuses is refused, and the test names the
server's own message. docs/miss.md maps each server rule to its code and to the test here.
"""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conformance.lightning_cpp import WriteTensor, json_compact, json_styled, write_pth
from conformance.miss_adapter_cpp import (
    HostTensor,
    adapter_manifest,
    content_version,
    export_input,
    f32,
    tensor_name,
    trainer_targets,
)
from conformance.miss_tune_adapter import save_adapter_pth
from conformance.miss_tune_checkpoint import PARTS, checkpoint
from conformance.miss_tune_package import save_package
from regtools import TINY_ARCH, TINY_BASE, TINY_SHA, miss_train

from rwkv_registry.cli.main import main
from rwkv_registry.engine.validate import validate_registry

LAYERS, CHANNELS, FFN = TINY_ARCH["n_layer"], TINY_ARCH["n_embd"], TINY_ARCH["ffn_size"]
GROUP = "r4-a"
PUBLISHED = f"{TINY_BASE}/miss/v2/{GROUP}/adapter-final.pth"


# --- inputs -------------------------------------------------------------------------------------------------


def d_data(ts: list[HostTensor], *, bf16: bool, seed: int = 0, poke: dict[int, int] | None = None) -> bytes:
    """The trainer's 16-bit D vector: small normal values (bf16 by truncation of fp32, fp16 by numpy's cast);
    ``poke`` sets raw 16-bit patterns at element indices."""
    count = sum(t.out * t.rank for t in ts)
    vals = (np.random.default_rng(seed).standard_normal(count) * 0.01).astype(np.float32)
    u = (vals.view(np.uint32) >> 16).astype("<u2") if bf16 else vals.astype("<f2").view("<u2")
    for i, bits in (poke or {}).items():
        u[i] = bits
    return u.tobytes()


def adapter(
    *, bf16: bool = True, rank: int = 4, alpha: float = 8.0, base: str = TINY_SHA, poke: dict[int, int] | None = None
) -> bytes:
    """rwkv_miss_tune's adapter-final.pth (export_adapter -> save_adapter_pth)."""
    ts = trainer_targets(LAYERS, CHANNELS, FFN, rank)
    return save_adapter_pth(export_input(rank, alpha, base, bf16=bf16), ts, d_data(ts, bf16=bf16, poke=poke))


def edited(
    edit: Callable[[dict[str, Any]], None] | None = None,
    *,
    rank: int = 4,
    recompute: bool = True,
    tensors: Callable[[list[WriteTensor]], None] | None = None,
    source: Any = None,
    raw: str | None = None,
) -> bytes:
    """save_adapter_pth's file with its manifest edited after adapter_manifest (``recompute``: content_version
    again, as the server computes it: without content_version and tensor_source), its records edited, or a
    ``tensor_source`` added to the embedded manifest."""
    ts = trainer_targets(LAYERS, CHANNELS, FFN, rank)
    data = d_data(ts, bf16=True)
    m = adapter_manifest(export_input(rank, 8.0, TINY_SHA, bf16=True), ts, data)
    if edit is not None:
        edit(m)
    if recompute:
        m["content_version"] = content_version(m, data)
    if source is not None:
        m["tensor_source"] = source
    write = [
        WriteTensor(tensor_name(t), [t.out, t.rank], False, data[t.offset * 2 : (t.offset + t.out * t.rank) * 2], True)
        for t in ts
    ]
    if tensors is not None:
        tensors(write)
    return write_pth(write, json_compact(m) if raw is None else raw)


# --- a fresh registry ----------------------------------------------------------------------------------------


@pytest.fixture
def reg(tmp_path: Path) -> Path:
    """A registry with the tiny base only (regtools' architecture and sha256)."""
    from rwkv_registry.store.ops import add_base, init_registry

    root = tmp_path / "reg"
    init_registry(root, name="test/registry")
    add_base(root, name=TINY_BASE, source="BlinkDL/rwkv7-g1", sha256=TINY_SHA, size=1234, arch=dict(TINY_ARCH))
    return root


def _train(tmp_path: Path, rank: int = 4, alpha: float = 8.0) -> str:
    p = tmp_path / "train.json"
    p.write_text(json.dumps(miss_train(hyperparameters={"rank": rank, "alpha": alpha, "ctx": 4096})))
    return str(p)


def add(
    reg: Path, src: Path, capsys: pytest.CaptureFixture[str], *, group: str = GROUP, rank: int = 4, alpha: float = 8.0
) -> tuple[int, str, str]:
    """`rwkv-registry add` of ``src``: (exit code, stdout, stderr)."""
    capsys.readouterr()
    rc = main(
        [
            "add",
            str(reg),
            str(src),
            "--base",
            TINY_BASE,
            "--data-version",
            "v2",
            "--train",
            _train(reg.parent, rank, alpha),
            "--group",
            group,
        ]
    )
    out, err = capsys.readouterr()
    return rc, out, err


def put(tmp_path: Path, data: bytes, name: str = "adapter-final.pth") -> Path:
    src = tmp_path / "src" / name
    src.parent.mkdir(parents=True, exist_ok=True)
    src.write_bytes(data)
    return src


def errors(reg: Path) -> dict[str, list[str]]:
    """The error findings of `validate`, code -> messages."""
    out: dict[str, list[str]] = {}
    for f in validate_registry(reg, use_cache=False).findings:
        if str(f.severity) == "error":
            out.setdefault(f.code, []).append(f.message)
    return out


def published_as(reg: Path, data: bytes, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``data`` in the place of a published adapter (added valid, then replaced, index.json and SHA256SUMS updated
    as a careless publisher would): what `validate` says of the file itself."""
    from regtools import edit_index, resum

    from rwkv_registry.store.ops import write_readme

    rc, _, err = add(reg, put(tmp_path, adapter(), "good.pth"), capsys)
    assert rc == 0, err
    (reg / PUBLISHED).write_bytes(data)
    try:
        manifest = json.loads(zipfile.ZipFile(io.BytesIO(data)).read("archive/miss.json"))
    except (KeyError, ValueError):
        manifest = {}

    def record(index: dict[str, Any]) -> None:
        e = index["entries"][0]
        e["file"] = {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}
        for key, fits in (
            ("content_version", lambda v: isinstance(v, str) and len(v) == 64),
            ("dtype", lambda v: v in ("bfloat16", "float16")),
            ("rank", lambda v: isinstance(v, int) and not isinstance(v, bool) and 1 <= v <= 1024),
            ("alpha", lambda v: isinstance(v, int | float) and not isinstance(v, bool) and abs(v) < 1e300),
            ("scale", lambda v: isinstance(v, int | float) and not isinstance(v, bool) and abs(v) < 1e300),
        ):
            value = manifest.get(key) if isinstance(manifest, dict) else None
            if fits(value):  # the manifest's own values where index.json can hold them: the file's rules are left
                e["miss"][key] = value

    edit_index(reg, record)
    write_readme(reg)
    resum(reg)


# --- what the server accepts ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("bf16", "rank", "alpha"), [(True, 4, 8.0), (False, 4, 8.0), (True, 3, 32.0)], ids=["bf16", "fp16", "bf16-r3"]
)
def test_an_adapter_written_by_rwkv_miss_tune_is_added_and_validates(
    reg: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], bf16: bool, rank: int, alpha: float
) -> None:
    """The issue: every adapter rwkv_miss_tune writes (targets[].name with .D) was refused with MIS003. load_package
    accepts it: so do add and validate, and the entry records the manifest's numbers (alpha a real, scale the
    float32 quotient: 10.666666984558105 for 32 / 3)."""
    rc, out, err = add(reg, put(tmp_path, adapter(bf16=bf16, rank=rank, alpha=alpha)), capsys, rank=rank, alpha=alpha)
    assert rc == 0, err
    assert f"added miss entry v2-{GROUP} at {PUBLISHED}" in out
    assert errors(reg) == {}
    entry = json.loads((reg / "index.json").read_text())["entries"][0]
    assert entry["miss"]["scale"] == f32(f32(alpha) / rank) and entry["miss"]["dtype"] == (
        "bfloat16" if bf16 else "float16"
    )
    assert main(["validate", str(reg)]) == 0


@pytest.mark.parametrize("bf16", [True, False], ids=["bf16", "fp16"])
@pytest.mark.parametrize(("rank", "alpha"), [(4, 8.0), (96, 32.0), (3, 0.1)])
def test_the_registry_writer_writes_the_bytes_rwkv_miss_tune_writes(bf16: bool, rank: int, alpha: float) -> None:
    """rwkv_registry.checks.miss.write_miss_file
    (the demo's, the smoke trainer's, the tiny factory's) and save_adapter_pth
    give the same bytes for the same D values: alpha a float32 written as a real (32.0, 0.10000000149011612), scale
    the float32 alpha_ / rank_ widened (0.3333333432674408 for 32 / 96), names with .D, the C++ zip and pickle."""
    from rwkv_registry.checks.miss import write_miss_file
    from rwkv_registry.formats.pthwrite import RawTensor

    ts = trainer_targets(LAYERS, CHANNELS, FFN, rank)
    data = d_data(ts, bf16=bf16)
    cpp = save_adapter_pth(export_input(rank, alpha, TINY_SHA, bf16=bf16), ts, data)
    dtype = "bfloat16" if bf16 else "float16"
    tensors = {
        tensor_name(t): RawTensor(dtype, (t.out, t.rank), data[t.offset * 2 : (t.offset + t.out * t.rank) * 2])
        for t in ts
    }
    buf = io.BytesIO()
    manifest = write_miss_file(
        buf, tensors, rank=rank, alpha=alpha, base_fingerprint=TINY_SHA, dtype=dtype, arch=TINY_ARCH
    )
    assert buf.getvalue() == cpp
    assert manifest["targets"][0]["name"] == "blocks.0.att.receptance.weight.D"
    assert json.loads(zipfile.ZipFile(io.BytesIO(cpp)).read("archive/miss.json")) == manifest


def test_tensor_source_d_is_accepted_and_left_out_of_the_content_version(
    reg: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """load_package: ``tensor_source`` "D" (the default) is read, then removed before content_version is hashed
    (``p->manifest.removeMember("tensor_source")``): a manifest whose content_version was computed without it is
    the server's, and the registry's."""
    rc, _, err = add(reg, put(tmp_path, edited(source="D")), capsys)
    assert rc == 0, err
    assert errors(reg) == {}


def test_alpha_as_a_json_integer_is_accepted(reg: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """isNumeric() is true for an int: alpha 8 (not 8.0) loads; content_version hashes it as 8."""
    rc, _, err = add(reg, put(tmp_path, edited(lambda m: m.update(alpha=8))), capsys)
    assert rc == 0, err


# --- what the server refuses ----------------------------------------------------------------------------------

REFUSED: dict[str, tuple[Callable[[], bytes], str, str, str]] = {
    # case: (file, our code, a part of our message, the server's message)
    "name-without-D": (
        lambda: edited(lambda m: [t.update(name=t["name"][: -len(".D")]) for t in m["targets"]]),
        "MIS003",
        "targets[0].name is 'blocks.0.att.receptance.weight', its layer and target say "
        "'blocks.0.att.receptance.weight.D'",
        "adapter target name mismatch",
    ),
    "tensor-source-x": (
        lambda: edited(source="x"),
        "MIS019",
        "tensor_source is 'x'",
        "unsupported adapter tensor source",
    ),
    "tensor-source-number": (
        lambda: edited(source=1),
        "MIS019",
        "tensor_source is 1",
        "unsupported adapter tensor source",  # asString() of 1 is "1"
    ),
    "alpha-1e39": (
        lambda: edited(lambda m: m.update(alpha=1e39)),
        "MIS005",
        "alpha is 1e+39, finite as a double but not as the float32",
        "invalid adapter metadata",  # !std::isfinite(m["alpha"].asFloat())
    ),
    "alpha-true": (
        lambda: edited(lambda m: m.update(alpha=True)),
        "MIS005",
        "alpha is True, a boolean, which JsonCpp's isNumeric() does not count",
        "invalid adapter metadata",  # !m["alpha"].isNumeric()
    ),
    "scale-string": (
        lambda: edited(lambda m: m.update(scale="2.0")),
        "MIS005",
        "scale is '2.0', not a finite number",
        "invalid adapter metadata",
    ),
    "rank-0": (
        lambda: edited(lambda m: m.update(rank=0)),
        "MIS004",
        "rank is 0, the server accepts integers 1…1024",
        "invalid adapter metadata",
    ),
    "rank-1025": (
        lambda: edited(lambda m: m.update(rank=1025)),
        "MIS004",
        "rank is 1025",
        "invalid adapter metadata",
    ),
    "duplicate-target": (
        lambda: edited(lambda m: m["targets"].insert(1, dict(m["targets"][0]))),
        "MIS007",
        "lists layer 0 att.receptance.weight twice",
        "invalid/duplicate adapter target",
    ),
    "wrong-dtype": (
        lambda: edited(tensors=lambda w: w.__setitem__(0, WriteTensor(w[0].name, w[0].shape, True, w[0].data))),
        "MIS008",
        "blocks.0.att.receptance.weight.D is float16, the server requires bfloat16",
        "adapter tensor shape/dtype mismatch",
    ),
    "count-mismatch": (
        lambda: edited(tensors=lambda w: w.append(WriteTensor("blocks.0.att.extra.D", [4, 4], False, bytes(32), True))),
        "MIS009",
        "13 tensors for 12 targets (not targets: blocks.0.att.extra.D)",
        "adapter tensor count mismatch",
    ),
    "value-65536": (
        lambda: adapter(poke={3: 0x4780}),  # bf16 65536: finite, beyond the fp16 runtime
        "MIS010",
        "blocks.0.att.receptance.weight.D: 1 value(s) refused: adapter cannot be represented by the FP16 inference "
        "runtime (first: 65536.0)",
        "adapter cannot be represented by the FP16 inference runtime",
    ),
    "value-nan": (
        lambda: adapter(poke={5: 0x7FC0}),
        "MIS010",
        "1 value(s) refused: nonfinite adapter weight (first: nan)",
        "nonfinite adapter weight",
    ),
    "manifest-over-8-MiB": (
        lambda: edited(lambda m: m.update(padding="x" * (8 << 20))),
        "MIS002",
        "archive/miss.json holds 8390",
        "adapter manifest too large",
    ),
    "manifest-not-json": (
        lambda: edited(raw='{"format_version": 1,'),
        "MIS003",
        "archive/miss.json",
        "invalid embedded MiSS manifest",
    ),
    "content-version-wrong": (
        lambda: edited(lambda m: m.update(content_version="1" * 64), recompute=False),
        "MIS011",
        "embedded content_version 1111111111111111… but the file's content gives",
        "adapter content digest mismatch",
    ),
    "content-version-with-tensor-source": (
        # hashed with tensor_source, which the server removes first: not its digest
        lambda: edited(
            lambda m: m.update(tensor_source="D", content_version=content_version(m | {"tensor_source": "D"}, b"")),
            recompute=False,
        ),
        "MIS011",
        "embedded content_version",
        "adapter content digest mismatch",
    ),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_what_the_server_refuses_add_refuses(
    reg: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str
) -> None:
    """Each file load_package refuses (its message in the table) is refused by add: exit 1, the rule's code and
    the field in the message, a hint, and the registry unchanged."""
    make, code, message, server = REFUSED[case]
    before = (reg / "index.json").read_bytes()
    rc, _, err = add(reg, put(tmp_path, make()), capsys)
    assert rc == 1, err
    assert f"refused: {code} " in err and message in err, (server, err)
    assert "\nhint: " in err
    assert (reg / "index.json").read_bytes() == before and not (reg / PUBLISHED).exists()


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_what_the_server_refuses_validate_refuses(
    reg: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str
) -> None:
    """The same file in a published adapter's place: validate exits 1 with the rule's code on it."""
    make, code, message, server = REFUSED[case]
    published_as(reg, make(), tmp_path, capsys)
    found = errors(reg)
    assert any(message in m for m in found.get(code, [])), (server, found)
    assert main(["validate", str(reg)]) == 1


def test_a_manifest_under_another_prefix_is_not_seen(
    reg: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """load_package looks up only ``archive/miss.json`` (find_entry: ``entry.name == name``, exact and
    case-sensitive). torch.save names the prefix after the file: ``adapter-final/miss.json`` is no manifest to the
    server ("PTH has no embedded MiSS metadata") and torch never reads it: a member no reader reads, PTH019 to add
    and validate (the reader returns no manifest for it)."""
    torch = pytest.importorskip("torch")
    ts = trainer_targets(LAYERS, CHANNELS, FFN, 4)
    data = d_data(ts, bf16=True)
    u = np.frombuffer(data, dtype="<u2")
    sd = {
        tensor_name(t): torch.from_numpy(u[t.offset : t.offset + t.out * t.rank].astype(np.int16).copy())
        .view(torch.bfloat16)
        .reshape(t.out, t.rank)
        for t in ts
    }
    src = tmp_path / "src" / "adapter-final.pth"
    src.parent.mkdir(parents=True)
    torch.save(sd, src)
    manifest = adapter_manifest(export_input(4, 8.0, TINY_SHA, bf16=True), ts, data)
    with zipfile.ZipFile(src, "a") as zf:
        assert zf.namelist()[0].startswith("adapter-final/")
        zf.writestr("adapter-final/miss.json", json_compact(manifest))
    rc, _, err = add(reg, src, capsys)
    assert rc == 1 and "refused: PTH019 entry adapter-final/miss.json is a MiSS manifest under another prefix" in err
    assert "only as archive/miss.json" in err
    published_as(reg, src.read_bytes(), tmp_path, capsys)
    assert any("adapter-final/miss.json" in m for m in errors(reg)["PTH019"])


# --- training checkpoints ------------------------------------------------------------------------------------


def _buffers(ts: list[HostTensor], *, tie: bool = False, big: float | None = None) -> dict[str, np.ndarray]:
    count = sum(t.out * t.rank for t in ts)
    rng = np.random.default_rng(7)
    # values a float16 holds exactly, so none on a tie: the trainer (ties to even) and the server (ties away) agree
    master = (rng.standard_normal(count) * 0.01).astype(np.float16).astype(np.float32)
    if tie:
        master[2] = np.float32(1.0 + 2.0**-11)  # halfway between two float16 neighbours of 1.0: 1.0 by the
        # trainer's rounding (to even), 1.0009765625 by the server's (away from zero)
    if big is not None:
        master[1] = np.float32(big)
    return {part: (master if part == "master" else rng.standard_normal(count).astype(np.float32)) for part in PARTS}


def _config(rank: int = 4, alpha: float = 8.0) -> dict[str, Any]:
    return {"base_fingerprint": TINY_SHA, "rank": rank, "alpha": alpha, "seed": 1, "planned_steps": 100}


def _checkpoint(tmp_path: Path, *, bf16: bool = False, embedded: bool = True, **kw: Any) -> tuple[Path, Path]:
    ts = trainer_targets(LAYERS, CHANNELS, FFN, 4)
    return checkpoint(
        tmp_path / "run" / "checkpoint-100",
        ts,
        _buffers(ts, **kw),
        np.zeros(8, dtype=np.float32),
        _config(),
        rank=4,
        alpha=8.0,
        bf16=bf16,
        embedded=embedded,
    )


@pytest.mark.parametrize("bf16", [False, True], ids=["fp16-trainer", "bf16-trainer"])
def test_a_training_checkpoint_is_reported_for_what_it_is(
    reg: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], bf16: bool
) -> None:
    """training.pth with its embedded manifest (tensor_source "master", 4 × 12 + 1 fp32 records): the server
    would load it, and the registry says it is a training checkpoint (MIS018), to publish adapter-final.pth
    instead; no count or dtype error (the server's count rule for it is 4 × targets + 1)."""
    pth, _ = _checkpoint(tmp_path, bf16=bf16)
    assert "\n\t" in zipfile.ZipFile(pth).read("archive/miss.json").decode()  # the default (styled) JsonCpp writer
    rc, _, err = add(reg, pth, capsys)
    assert rc == 1 and "refused: MIS018 a rwkv_miss_tune training checkpoint (training.pth" in err, err
    assert "the server would load it" in err and "adapter-final.pth" in err
    published_as(reg, pth.read_bytes(), tmp_path, capsys)
    assert sorted(errors(reg)) == ["MIS018"]


def test_a_training_checkpoint_on_a_float16_tie_is_refused_by_the_server(
    reg: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The fp16 trainer hashes its masters rounded to even (__float2half_rn); the server rounds them with
    float_to_f16_bits, ties away from zero: one master on a tie and load_package throws "adapter content digest
    mismatch". The registry computes what the server computes, and says why."""
    pth, _ = _checkpoint(tmp_path, tie=True)
    published_as(reg, pth.read_bytes(), tmp_path, capsys)
    found = errors(reg)
    assert sorted(found) == ["MIS011", "MIS018"]
    assert "ties to even" in found["MIS011"][0] and "the server refuses this checkpoint" in found["MIS011"][0]


def test_a_master_beyond_float16_is_refused(reg: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """load_package: the fp16 value the server makes of a master 70000 is Inf: "adapter weight overflows FP16"."""
    pth, _ = _checkpoint(tmp_path, big=70000.0)
    published_as(reg, pth.read_bytes(), tmp_path, capsys)
    assert any("adapter weight overflows FP16 (first: 70000.0)" in m for m in errors(reg)["MIS010"])


def test_a_legacy_training_checkpoint_alone_is_refused_as_the_server_refuses_it(
    reg: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The trainer before the embedded manifest (fc45586) wrote training.pth without one: alone, the server refuses
    it ("PTH has no embedded MiSS metadata; legacy checkpoints require sibling checkpoint.json"), and the registry
    says it is a training checkpoint (MIS018), not a tensor-name or count error."""
    pth, meta = _checkpoint(tmp_path, embedded=False)
    meta.unlink()
    rc, _, err = add(reg, pth, capsys)
    assert rc == 1 and "refused: MIS018 a legacy rwkv_miss_tune training checkpoint" in err, err
    published_as(reg, pth.read_bytes(), tmp_path, capsys)
    found = errors(reg)
    assert sorted(found) == ["MIS018"] and "legacy checkpoints require sibling checkpoint.json" in found["MIS018"][0]


def test_a_legacy_training_checkpoint_with_its_checkpoint_json(
    reg: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """With its checkpoint.json beside it, the server builds a manifest and loads it: add reads it as the server
    does and still refuses to publish a training checkpoint (MIS018), with no other finding; a checkpoint.json of
    other bytes (tensor_digest) is MIS022, the server's "invalid legacy MiSS checkpoint"."""
    pth, meta = _checkpoint(tmp_path, embedded=False)
    rc, _, err = add(reg, pth, capsys)
    assert rc == 1 and "refused: MIS018" in err and "checkpoint.json beside it" in err and "(and" not in err, err
    data = json.loads(meta.read_text())
    data["tensor_digest"] = "0" * 64
    meta.write_text(json_styled(data))
    rc, _, err = add(reg, pth, capsys)
    assert rc == 1 and "(and 1 more: MIS022)" in err, err
    from rwkv_registry.engine.misspkg import checkpoint_facts

    found = checkpoint_facts(pth, meta).content_findings("training.pth")
    mis022 = [f.message for f in found if f.code == "MIS022"]
    assert len(mis022) == 1 and "tensor_digest is '" + "0" * 64 + "'" in mis022[0]
    assert "invalid legacy MiSS checkpoint" in mis022[0]


# --- the legacy two-file package ----------------------------------------------------------------------------


def _package(tmp_path: Path, *, edit: Callable[[dict[str, Any]], None] | None = None) -> tuple[Path, bytes]:
    """save_package's folder and, for the same input, the file save_adapter_pth writes."""
    ts = trainer_targets(LAYERS, CHANNELS, FFN, 4)
    data = d_data(ts, bf16=True)
    m = export_input(4, 8.0, TINY_SHA, bf16=True)
    folder = save_package(tmp_path / "old" / "adapter-final", m, ts, data)
    if edit is not None:
        manifest = json.loads((folder / "adapter.json").read_text())
        edit(manifest)
        (folder / "adapter.json").write_text(json_compact(manifest) + "\n")
    return folder, save_adapter_pth(m, ts, data)


@pytest.mark.parametrize("form", ["folder", "second-file"])
def test_a_legacy_package_is_checked_and_published_as_the_single_file(
    reg: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], form: str
) -> None:
    """load_package reads a folder with adapter.json + adapter.pth (and an adapter.pth without archive/miss.json
    beside its adapter.json): add checks it with the same rules and publishes the single file save_adapter_pth
    writes for the same adapter, byte for byte, so the server computes the same content_version."""
    folder, single = _package(tmp_path)
    rc, out, err = add(reg, folder if form == "folder" else folder / "adapter.pth", capsys)
    assert rc == 0, err
    assert "a legacy two-file package (adapter.json + adapter.pth), published as the single-file" in out
    assert (reg / PUBLISHED).read_bytes() == single
    cv = json.loads((folder / "adapter.json").read_text())["content_version"]
    assert json.loads((reg / "index.json").read_text())["entries"][0]["miss"]["content_version"] == cv
    assert errors(reg) == {}


@pytest.mark.parametrize(
    ("edit", "code", "message"),
    [
        (
            lambda m: m["targets"][0].update(name="blocks.0.att.receptance.weight"),
            "MIS003",
            "adapter target name mismatch",
        ),
        (lambda m: m.update(padding="x" * (8 << 20)), "MIS002", "adapter.json is 8390"),
        (lambda m: m.update(rank=2000), "MIS004", "rank is 2000"),
    ],
    ids=["name", "over-8-MiB", "rank"],
)
def test_a_legacy_package_the_server_refuses_is_refused(
    reg: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    edit: Callable[[dict[str, Any]], None],
    code: str,
    message: str,
) -> None:
    """adapter.json is judged as an embedded manifest is (over 8 MiB: "adapter manifest too large")."""
    folder, _ = _package(tmp_path, edit=edit)
    rc, _, err = add(reg, folder, capsys)
    assert rc == 1 and f"refused: {code} " in err and message in err, err
    assert not (reg / PUBLISHED).exists()


def test_a_legacy_package_inside_the_registry_is_reported_with_the_servers_verdict(
    reg: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A legacy folder copied into <base>/miss/<version>/<group>/ is not the published form (MIS021, not two
    LAY004), and validate says whether the server would load it; a broken one gets the findings that say why."""
    folder, _ = _package(tmp_path)
    inside = reg / TINY_BASE / "miss" / "v2" / "old"
    shutil.copytree(folder, inside)
    found = validate_registry(reg, use_cache=False).findings
    mis021 = [f for f in found if f.code == "MIS021"]
    assert [f.path for f in mis021] == [f"{TINY_BASE}/miss/v2/old"]
    assert "the server would load it (content_version" in mis021[0].message
    assert not [f for f in found if f.code == "LAY004"]
    manifest = json.loads((inside / "adapter.json").read_text())
    manifest["rank"] = 0
    (inside / "adapter.json").write_text(json_compact(manifest))
    found = validate_registry(reg, use_cache=False).findings
    assert "the server would refuse it" in next(f.message for f in found if f.code == "MIS021")
    assert any(f.code == "MIS004" and f.path == f"{TINY_BASE}/miss/v2/old/adapter.pth" for f in found)


# --- the server's budgets ---------------------------------------------------------------------------------------


def test_a_payload_over_the_staging_budget_is_a_warning_naming_the_variable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """adapter_cache(): RWKV_ADAPTER_STAGING_MIB defaults to 128 MiB; a 144 MiB D payload registers, then fails at
    its first request ("adapter exceeds pinned staging budget"). add accepts it with a warning that names the
    budget and the variable; validate keeps the warning (exit 0)."""
    from rwkv_registry.store.ops import add_base, init_registry

    arch = dict(TINY_ARCH, n_layer=1, n_embd=8192, n_head=128, ffn_size=32768)
    root = tmp_path / "big"
    init_registry(root, name="test/registry")
    add_base(root, name=TINY_BASE, source="BlinkDL/rwkv7-g1", sha256=TINY_SHA, size=1234, arch=arch)
    ts = trainer_targets(1, 8192, 32768, 1024)
    data = bytes(sum(t.out * t.rank for t in ts) * 2)  # zeros
    src = put(tmp_path, save_adapter_pth(export_input(1024, 1024.0, TINY_SHA, bf16=True), ts, data))
    rc, _, err = add(root, src, capsys, rank=1024, alpha=1024.0)
    assert rc == 0, err
    assert "warning: MIS020" in err and "pinned staging budget 128 MiB (RWKV_ADAPTER_STAGING_MIB)" in err
    assert "RWKV_ADAPTER_STAGING_MIB=144" in err
    src.unlink()
    found = validate_registry(root, use_cache=False)
    assert found.ok and "MIS020" in {f.code for f in found.findings}


@pytest.mark.parametrize(
    ("mib", "names"),
    [
        (128, []),
        (129, ["RWKV_ADAPTER_STAGING_MIB"]),
        (513, ["RWKV_ADAPTER_STAGING_MIB", "RWKV_ADAPTER_GPU_MIB"]),
        (1025, ["RWKV_ADAPTER_STAGING_MIB", "RWKV_ADAPTER_GPU_MIB", "RWKV_ADAPTER_RAM_MIB"]),
    ],
)
def test_each_default_budget_is_named_with_what_the_server_does(mib: int, names: list[str]) -> None:
    """The three defaults of adapter_cache() (1 GiB RAM: registration refused; 512 MiB GPU and 128 MiB staging:
    the first use fails), each named with its variable and the server's message, at one byte over."""
    from rwkv_registry.checks.miss import budget_findings

    found = budget_findings((mib - 1 << 20) + 1, "a.pth") if mib > 128 else budget_findings(128 << 20, "a.pth")
    assert [f.code for f in found] == (["MIS020"] if names else [])
    for name in names:
        assert f"({name})" in found[0].message and f"{name}={mib}" in found[0].hint
    if "RWKV_ADAPTER_RAM_MIB" in names:
        assert 'registration is refused ("adapter RAM budget exceeded"' in found[0].message


def test_the_ported_json_writers_match_the_registrys_serializer() -> None:
    """The compact JsonCpp port here and rwkv_registry.formats.jsoncpp agree on a manifest's tricky values (the two were
    written apart: this one from json_writer.cpp, that one from FORMATS §4)."""
    from rwkv_registry.formats import jsoncpp

    value = {"b": 1.0, "a": [1, "é/\u0001"], "c": {"z": 0.1, "y": None, "x": True}, "big": 2**63, "neg": -(2**63)}
    assert json_compact(value) == jsoncpp.dumps(value)
    assert (
        json_styled({"a": [1, {"b": []}], "c": {}})
        == '{\n\t"a" : \n\t[\n\t\t1,\n\t\t{\n\t\t\t"b" : []\n\t\t}\n\t],\n\t"c" : {}\n}'
    )
    assert hashlib.sha256(json_compact({}).encode()).hexdigest() == hashlib.sha256(b"{}").hexdigest()


def _floats() -> np.ndarray:
    """float32 values of every kind: random, float16 ties, subnormals of both, the ±65504/65520 boundary, Inf, NaN."""
    rng = np.random.default_rng(11)
    x = [rng.standard_normal(2000).astype(np.float32) * np.float32(10.0) ** rng.integers(-9, 6, 2000)]
    halves = rng.integers(0, 0x7C00, 500).astype("<u2").view("<f2").astype(np.float32)
    ties = (halves.view("<u4") + 0x1000).view(np.float32)  # exactly half a float16 step above a float16
    x += [halves, ties, -ties]
    x.append(
        np.array(
            [
                0.0,
                -0.0,
                65504.0,
                65519.996,
                65520.0,
                70000.0,
                2.0**-24,
                2.0**-25,
                3 * 2.0**-26,
                1e-30,
                np.inf,
                -np.inf,
                np.nan,
                3.4e38,
                -3.4e38,
            ],
            dtype=np.float32,
        )
    )
    return np.concatenate(x).astype(np.float32)


def test_the_registrys_fp32_to_16_bit_rounding_is_the_servers() -> None:
    """registry.miss.server_f16_bits / server_bf16_bits (vectorized) against a line-for-line port of pth_tensor.cpp's
    float_to_f16_bits / float_to_bf16_bits, side by side on generated values; and they differ from torch's rounding
    (ties to even) on float16 ties and between 2^-25 and 2^-24 (the server gives 0), which is why a fp16 training
    checkpoint can be refused."""
    from conformance.pth_tensor_cpp import float_to_bf16_bits, float_to_f16_bits

    from rwkv_registry.checks.miss import server_bf16_bits, server_f16_bits

    x = _floats()
    finite = np.isfinite(x)
    assert server_f16_bits(x).tolist() == [float_to_f16_bits(float(v)) for v in x]
    assert server_bf16_bits(x[finite]).tolist() == [float_to_bf16_bits(float(v)) for v in x[finite]]
    with np.errstate(over="ignore"):
        even = x.astype("<f2").view("<u2")
    differs = (server_f16_bits(x) != even) & finite
    near, server = (
        even[differs].view("<f2").astype(np.float64),
        server_f16_bits(x[differs]).view("<f2").astype(np.float64),
    )
    wide = x[differs].astype(np.float64)
    tie = np.abs(wide - near) == np.abs(server - wide)
    flushed = (np.abs(wide) > 2.0**-25) & (np.abs(wide) < 2.0**-24) & (server == 0)  # exp < -24: the sign only
    assert tie.any() and flushed.any() and np.all(tie | flushed)


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        (3.4028234663852886e38, True),
        (3.4028235677973362e38, True),
        (3.4028235677973366e38, False),
        (1e39, False),
        (1e30, True),
        (10**30, True),
        (True, False),
        ("1", False),
        (None, False),
    ],
)
def test_alpha_is_finite_as_the_float32_the_server_reads(
    reg: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], value: Any, ok: bool
) -> None:
    """load_package: ``!m["alpha"].isNumeric() || !std::isfinite(m["alpha"].asFloat())``: FLT_MAX itself loads,
    FLT_MAX + half an ulp (which rounds to Inf, to even) does not; an integer is numeric, a boolean or string is not."""
    from rwkv_registry.checks.miss import float32_finite

    assert float32_finite(value) is ok
    _, _, err = add(reg, put(tmp_path, edited(lambda m: m.update(alpha=value))), capsys, alpha=8.0)
    assert ("MIS005" not in err) is ok, err


def test_a_legacy_folder_is_read_from_its_adapter_json_even_when_its_pth_embeds_a_manifest(
    reg: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Given a directory, load_package reads dir/adapter.json and never looks for archive/miss.json (``single`` is
    false): a stale manifest inside its adapter.pth (here one with names without .D) changes nothing."""
    folder, single = _package(tmp_path)
    ts = trainer_targets(LAYERS, CHANNELS, FFN, 4)
    data = d_data(ts, bf16=True)
    stale = adapter_manifest(export_input(4, 8.0, TINY_SHA, bf16=True), ts, data)
    for t in stale["targets"]:
        t["name"] = t["name"][: -len(".D")]
    write = [
        WriteTensor(tensor_name(t), [t.out, t.rank], False, data[t.offset * 2 : (t.offset + t.out * t.rank) * 2], True)
        for t in ts
    ]
    (folder / "adapter.pth").write_bytes(write_pth(write, json_compact(stale)))
    rc, _, err = add(reg, folder, capsys)
    assert rc == 0, err
    assert (reg / PUBLISHED).read_bytes() == single


class _HubFile:
    """A file as the Hub's Range reads serve it to the header path (rwkv_registry.hub.facts.header_facts)."""

    def __init__(self, data: bytes) -> None:
        from rwkv_registry.formats.ckpt import MemorySource

        self._source = MemorySource(data)
        self.size = self._source.size

    def prefetch_zip_metadata(self) -> None:
        pass

    def read(self, offset: int, length: int) -> memoryview:
        return self._source.read(offset, length)


@pytest.mark.parametrize(
    "case",
    [
        "name-without-D",
        "tensor-source-x",
        "alpha-1e39",
        "duplicate-target",
        "wrong-dtype",
        "count-mismatch",
        "training",
    ],
)
def test_the_hub_header_path_applies_the_same_rules(tmp_path: Path, case: str) -> None:
    """`validate hf://…` reads a MiSS file's headers only: it reaches the same findings as a local read, but for
    those that need the values (MIS010, MIS011)."""
    from rwkv_registry.engine.facts import facts_from_buffer
    from rwkv_registry.hub.facts import header_facts

    data = _checkpoint(tmp_path)[0].read_bytes() if case == "training" else REFUSED[case][0]()
    local = facts_from_buffer(data)
    remote = header_facts(_HubFile(data), size=len(data), sha256=local.sha256)  # type: ignore[arg-type]
    assert remote.method == local.method == "miss"
    assert [(f["code"], f["message"]) for f in remote.findings] == [
        (f["code"], f["message"]) for f in local.findings if f["code"] not in ("MIS010", "MIS011")
    ]
    assert remote.findings


def test_the_manifest_entry_name_is_case_sensitive(
    reg: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """find_entry compares with ``==``: a file whose entries are ``Archive/…`` (the C++ writer's bytes, the
    prefix's case changed) has no ``archive/miss.json`` for the server: its ``Archive/miss.json`` is PTH019."""
    from conformance.lightning_cpp import write_zip

    with zipfile.ZipFile(io.BytesIO(adapter())) as zf:
        entries = [("Archive/" + i.filename.split("/", 1)[1], zf.read(i)) for i in zf.infolist()]
    rc, _, err = add(reg, put(tmp_path, write_zip(entries)), capsys)
    assert rc == 1 and "refused: PTH019 entry Archive/miss.json is a MiSS manifest under another prefix" in err, err
