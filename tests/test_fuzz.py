"""Property-based fuzzing of every parser that reads files from strangers (hypothesis).

Each property: arbitrary or mutated input gives a result or the documented exception, never
another exception; accepted input also agrees with an independent reader (torch, Python's
json) where one exists. bench/fuzz.py runs the same targets for 100,000+ inputs.
"""

from __future__ import annotations

import io
import json
import math
import struct
from pathlib import Path
from typing import Any

import pytest
import torch
from ckpt_hostile import Entry, build_zip, safetensors_bytes, with_pickle
from conformance.lightning_cpp import lightning_bytes
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from regtools import TINY_BASE, build_registry, write_miss

from rwkv_registry.core.errors import CheckpointError, RegistryError
from rwkv_registry.engine.facts import facts_from_buffer
from rwkv_registry.formats.ckpt import open_checkpoint, sniff_kind
from rwkv_registry.formats.jsoncpp import dumps
from rwkv_registry.formats.jsonload import JsonLoadError, load_json_bytes
from rwkv_registry.formats.lfs import looks_like_lfs_pointer, parse_lfs_pointer
from rwkv_registry.formats.unpickle import parse_tensor_pickle
from rwkv_registry.index.sums import format_sums, parse_sums
from rwkv_registry.schemas import schema_errors

FAST = settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SLOW = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# --- seeds ------------------------------------------------------------------------------------------


def _torch_bytes(obj: Any) -> bytes:
    buf = io.BytesIO()
    torch.save(obj, buf)
    return buf.getvalue()


def _seeds() -> dict[str, bytes]:
    g = torch.Generator().manual_seed(3)
    module = torch.nn.Linear(3, 2)
    seeds = {
        "torch-dict": _torch_bytes({"a": torch.randn(3, 4, generator=g).bfloat16(), "b": torch.arange(5)}),
        "torch-state-dict": _torch_bytes(module.state_dict()),
        "torch-views": _torch_bytes({"all": (x := torch.randn(6, generator=g)), "tail": x[2:]}),
        "lightning": lightning_bytes({"blocks.0.att.time_state": torch.randn(2, 4, 4, generator=g).bfloat16()}),
        "safetensors": safetensors_bytes(
            {"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}, "__metadata__": {"k": "v"}}, bytes(8)
        ),
    }
    return seeds


SEEDS = _seeds()


def _miss_seed(tmp: Path) -> bytes:
    path = tmp / "adapter-final.pth"
    write_miss(path)
    return path.read_bytes()


INTERESTING = [0, 1, 0x7F, 0x80, 0xFF, 0xFFFF, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF]


@st.composite
def mutated(draw: st.DrawFn, seed: bytes) -> bytes:
    """``seed`` with a few byte edits, 32-bit interesting values, cuts, insertions or splices."""
    data = bytearray(seed)
    for _ in range(draw(st.integers(1, 6))):
        if not data:
            break
        pos = draw(st.integers(0, len(data) - 1))
        kind = draw(st.sampled_from(["byte", "u32", "cut", "delete", "insert", "splice"]))
        if kind == "byte":
            data[pos] = draw(st.integers(0, 255))
        elif kind == "u32":
            data[pos : pos + 4] = struct.pack("<I", draw(st.sampled_from(INTERESTING)))
        elif kind == "cut":
            del data[pos:]
        elif kind == "delete":
            del data[pos : pos + draw(st.integers(1, 16))]
        elif kind == "insert":
            data[pos:pos] = draw(st.binary(min_size=1, max_size=16))
        else:
            src = draw(st.integers(0, len(data) - 1))
            data[pos:pos] = data[src : src + draw(st.integers(1, 64))]
    return bytes(data)


def _torch_view(data: bytes) -> dict[str, tuple[str, tuple[int, ...], bytes]]:
    loaded = torch.load(io.BytesIO(data), weights_only=True, map_location="cpu")
    out = {}
    for name, t in loaded.items():
        raw = t.contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()
        out[name] = (str(t.dtype).removeprefix("torch."), tuple(t.shape), raw)
    return out


def _check_reader(data: bytes, *, against_torch: bool) -> None:
    """The safe reader's contract on one input, with torch as the oracle for accepted zips."""
    try:
        ckpt = open_checkpoint(data, verify_crc="all")
    except CheckpointError as e:
        assert e.code and e.message and e.hint
        return
    seen = {}
    for name, info in ckpt.tensors.items():
        raw = bytes(ckpt.tensor_bytes(name))
        assert len(raw) == info.nbytes == info.numel * info.itemsize
        seen[name] = (info.dtype, info.shape, raw)
    if against_torch and ckpt.kind == "torch-zip":
        assert _torch_view(data) == seen


# --- the safe checkpoint reader ---------------------------------------------------------------------------


@pytest.mark.parametrize("seed", sorted(SEEDS))
def test_reader_on_mutated_files(seed: str) -> None:
    @FAST
    @given(mutated(SEEDS[seed]))
    def run(data: bytes) -> None:
        _check_reader(data, against_torch=True)

    run()


@FAST
@given(st.binary(max_size=512))
def test_reader_on_arbitrary_bytes(data: bytes) -> None:
    _check_reader(data, against_torch=False)
    assert sniff_kind(data) in ("torch-zip", "safetensors", "lfs-pointer", "unknown")


def test_facts_of_mutated_miss_files(tmp_path: Path) -> None:
    seed = _miss_seed(tmp_path)

    @SLOW
    @given(mutated(seed))
    def run(data: bytes) -> None:
        facts = facts_from_buffer(data)  # findings, never an exception
        assert all(f["code"] and f["message"] for f in facts.findings)

    run()


# --- the pickle interpreter: programs made of the opcodes it knows, and of some it refuses --------------


def _s(text: str) -> bytes:
    raw = text.encode()
    return b"X" + struct.pack("<I", len(raw)) + raw


def _tensor(key: str, storage: str, numel: int, shape: list[int], offset: int) -> bytes:
    ints = b"".join(b"J" + struct.pack("<i", d) for d in shape)
    return (
        b"ctorch._utils\n_rebuild_tensor_v2\n((" + _s("storage") + f"ctorch\n{storage}\n".encode() + _s(key)
        + _s("cpu") + b"J" + struct.pack("<i", numel) + b"tQJ" + struct.pack("<i", offset) + b"(" + ints + b"t("
        + ints + b"t\x89}tR"
    )  # fmt: skip


# one-byte opcodes: the allowed ones and a few refused (STACK_GLOBAL, POP, EMPTY_LIST, MEMOIZE, INST)
OPCODES = [bytes([c]) for c in b"(})t\x85\x86\x87\x88\x89NQRbsu.\x930]\x94i"]
GLOBALS = ["collections OrderedDict", "torch._utils _rebuild_tensor_v2", "torch FloatStorage", "torch BFloat16Storage",
           "os system", "torch Tensor"]  # fmt: skip
TOKENS = st.one_of(
    st.sampled_from(OPCODES),
    st.sampled_from(GLOBALS).map(lambda t: b"c" + t.replace(" ", "\n").encode() + b"\n"),
    st.text(max_size=6).map(_s),
    st.integers(-(2**31), 2**31 - 1).map(lambda v: b"J" + struct.pack("<i", v)),
    st.integers(0, 255).map(lambda v: b"K" + bytes([v])),
    st.integers(0, 0xFFFF).map(lambda v: b"M" + struct.pack("<H", v)),
    st.binary(max_size=9).map(lambda raw: b"\x8a" + bytes([len(raw)]) + raw),
    st.integers(0, 255).map(lambda v: b"q" + bytes([v])),
    st.integers(0, 255).map(lambda v: b"h" + bytes([v])),
    st.integers(0, 2**32 - 1).map(lambda v: b"j" + struct.pack("<I", v)),
    st.builds(
        _tensor,
        st.sampled_from(["0", "1", "../x"]),
        st.sampled_from(["FloatStorage", "HalfStorage"]),
        st.integers(0, 8),
        st.lists(st.integers(0, 4), max_size=3),
        st.integers(0, 4),
    ),
)


@FAST
@given(st.lists(TOKENS, max_size=40), st.booleans())
def test_pickle_interpreter_on_opcode_programs(tokens: list[bytes], in_dict: bool) -> None:
    body = b"".join(tokens)
    pkl = b"\x80\x02}(" + body + b"u." if in_dict else b"\x80\x02" + body + b"."
    try:
        parsed = parse_tensor_pickle(pkl)
    except CheckpointError as e:
        assert e.code in ("PTH003", "PTH004", "PTH006", "PTH007", "PTH009", "PTH010")
        return
    assert all(isinstance(name, str) for name, _ in parsed.items)
    _check_reader(with_pickle(pkl, {"0": bytes(32), "1": bytes(16)}), against_torch=False)


# --- safetensors headers ---------------------------------------------------------------------------------

DTYPES = st.sampled_from(["F32", "BF16", "F16", "I64", "U8", "BOOL", "F8_E4M3", "X", 7])
UINTS = st.one_of(st.integers(0, 64), st.integers(-2, 2**64 + 2))
ENTRY = st.fixed_dictionaries(
    {"dtype": DTYPES, "shape": st.lists(UINTS, max_size=4), "data_offsets": st.lists(UINTS, max_size=3)}
)


@FAST
@given(
    st.dictionaries(st.text(max_size=6), st.one_of(ENTRY, st.integers(), st.text(max_size=4)), max_size=4),
    st.integers(0, 96),
    st.one_of(st.none(), st.integers(0, 2**64 - 1)),
)
def test_safetensors_headers(header: dict[str, Any], data_len: int, length: int | None) -> None:
    blob = safetensors_bytes(header, bytes(data_len), length=length)
    _check_reader(blob, against_torch=False)


# --- JSON: the strict loader, the JsonCpp serializer, the schemas ------------------------------------------

# Integers within a double's range: the loader refuses others (JsonCpp cannot hold them)
SCALARS = (
    st.none() | st.booleans() | st.integers(-(10**300), 10**300) | st.floats(allow_nan=False, allow_infinity=False)
)
JSON_VALUES = st.recursive(
    SCALARS | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=25,
)


def _as_jsoncpp(value: Any) -> Any:
    """What a JSON reader gets back from JsonCpp's text: integers beyond 64 bits become reals."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return value if -(2**63) <= value <= 2**64 - 1 else float(value)
    if isinstance(value, list):
        return [_as_jsoncpp(v) for v in value]
    if isinstance(value, dict):
        return {k: _as_jsoncpp(v) for k, v in value.items()}
    return value


@FAST
@given(JSON_VALUES)
def test_jsoncpp_round_trips_through_json(value: Any) -> None:
    text = dumps(value)
    assert text.isascii()
    assert json.loads(text) == _as_jsoncpp(value)


@FAST
@given(st.floats(allow_nan=True, allow_infinity=True))
def test_jsoncpp_reals_never_crash(x: float) -> None:
    text = dumps([x])
    back = json.loads(text.replace("1e+9999", "Infinity"))[0]
    assert (math.isnan(x) and back is None) or back == x


@FAST
@given(st.binary(max_size=300))
def test_json_loader_on_arbitrary_bytes(data: bytes) -> None:
    try:
        value = load_json_bytes(data)
    except JsonLoadError as e:
        assert e.reason and e.hint
        return
    assert value == json.loads(data)  # accepted: json agrees on the value


@FAST
@given(JSON_VALUES)
def test_json_loader_accepts_what_json_writes(value: Any) -> None:
    text = json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass")
    try:
        assert load_json_bytes(text) == value
    except JsonLoadError as e:  # only the documented refusals of valid JSON
        assert any(why in e.reason for why in ("surrogate", "UTF-8", "nested deeper"))


@FAST
@given(JSON_VALUES)
def test_schemas_on_arbitrary_values(value: Any) -> None:
    for name in ("index", "train", "miss"):
        errors = schema_errors(name, value)
        assert all(isinstance(p, str) and isinstance(m, str) for p, m in errors)


# --- SHA256SUMS and LFS pointers --------------------------------------------------------------------------


@FAST
@given(st.binary(max_size=400))
def test_sums_parser_on_arbitrary_bytes(data: bytes) -> None:
    good, bad = parse_sums(data)
    assert all(len(line.sha256) == 64 for line in good)
    assert all(isinstance(n, int) for n, _ in bad)


PATHS = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=20).filter(
    lambda p: not p.startswith("./")
)


@FAST
@given(st.dictionaries(PATHS, st.binary(min_size=32, max_size=32).map(bytes.hex), max_size=6))
def test_sums_round_trip(hashes: dict[str, str]) -> None:
    good, bad = parse_sums(format_sums(hashes))
    assert bad == []
    assert {line.path: line.sha256 for line in good} == hashes


OID = "ab" * 32
POINTER = f"version https://git-lfs.github.com/spec/v1\noid sha256:{OID}\nsize 123\n".encode()


@FAST
@given(st.one_of(st.binary(max_size=200), mutated(POINTER)))
def test_lfs_pointer_detection(data: bytes) -> None:
    pointer = parse_lfs_pointer(data)
    if pointer is not None:
        assert looks_like_lfs_pointer(data) and len(pointer.oid) == 64 and pointer.size >= 0
        assert sniff_kind(data) == "lfs-pointer"


# --- index.json / train.json loading ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def small_registry(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("fuzzreg")
    return build_registry(tmp / "reg", tmp, with_miss=False)


def test_load_index_on_mutated_index_json(small_registry: Path, tmp_path: Path) -> None:
    from rwkv_registry.store.ops import load_index

    seed = (small_registry / "index.json").read_bytes()
    root = tmp_path / "r"
    root.mkdir()

    @FAST
    @given(mutated(seed))
    def run(data: bytes) -> None:
        (root / "index.json").write_bytes(data)
        try:
            index = load_index(root)
        except RegistryError as e:
            assert e.message
            return
        assert schema_errors("index", index) == []

    run()


def _replace_somewhere(draw: st.DrawFn, doc: Any) -> Any:
    """``doc`` with one subtree (chosen by walking down) replaced by an arbitrary JSON value."""
    if not isinstance(doc, dict | list) or not doc or draw(st.integers(0, 3)) == 0:
        return draw(JSON_VALUES)
    keys = list(doc) if isinstance(doc, dict) else list(range(len(doc)))
    key = draw(st.sampled_from(keys))
    out = dict(doc) if isinstance(doc, dict) else list(doc)
    out[key] = _replace_somewhere(draw, doc[key])
    return out


@st.composite
def json_mutants(draw: st.DrawFn, doc: Any) -> Any:
    return _replace_somewhere(draw, doc)


def test_validate_never_crashes_on_schema_invalid_json(small_registry: Path, tmp_path: Path) -> None:
    import shutil

    from rwkv_registry.engine.validate import validate_registry

    index = json.loads((small_registry / "index.json").read_text())
    train_rel = f"{TINY_BASE}/state/v1/train.json"
    train = json.loads((small_registry / train_rel).read_text())
    reg = tmp_path / "reg"
    shutil.copytree(small_registry, reg)

    @SLOW
    @given(st.booleans(), st.data())
    def run(which: bool, data: st.DataObject) -> None:
        rel, doc = ("index.json", index) if which else (train_rel, train)
        (reg / rel).write_text(json.dumps(data.draw(json_mutants(doc))))
        validate_registry(reg, use_cache=False)  # findings, never an exception

    run()


# --- regressions: inputs bench/fuzz.py found --------------------------------------------------------------


def _archive_with(**changes: Any) -> bytes:
    """A torch.save archive of one tensor, one metadata record replaced or one attribute changed."""
    import zipfile

    z = zipfile.ZipFile(io.BytesIO(_torch_bytes({"w": torch.arange(4, dtype=torch.float32)})))
    entries = [Entry(i.filename, z.read(i.filename)) for i in z.infolist()]
    for e in entries:
        e.data = changes.get(e.name.split("/", 1)[1], e.data)
    return build_zip(entries)


@pytest.mark.parametrize(
    ("record", "value"),
    [
        ("version", b"11"),  # torch: "Attempted to read a PyTorch file with version 11"
        ("version", b"\x01"),  # torch: "Couldn't parse the version"
        (".storage_alignment", b"6x"),  # torch: int() fails
        (".data/serialization_id", b"\xe6\xff"),  # torch: UnicodeDecodeError
    ],
)
def test_metadata_torch_cannot_parse_is_refused(record: str, value: bytes) -> None:
    data = _archive_with(**{record: value})
    with pytest.raises(Exception):  # noqa: B017 - torch raises several types here
        torch.load(io.BytesIO(data), weights_only=True)
    with pytest.raises(CheckpointError) as info:
        open_checkpoint(data)
    assert info.value.code == "PTH001" and record in info.value.message


def test_metadata_torch_parses_is_accepted() -> None:
    data = _archive_with(version=b"10", **{".storage_alignment": b"64", ".data/serialization_id": b"1" * 40})
    assert torch.load(io.BytesIO(data), weights_only=True)["w"].tolist() == [0, 1, 2, 3]
    assert open_checkpoint(data).tensors["w"].shape == (4,)


def test_entry_marked_as_directory_is_refused() -> None:
    """miniz extracts nothing for a 'directory' (DOS attribute 0x10): torch.load returned a tensor of
    uninitialised memory for such a storage while the CRC check passed."""
    data = bytearray(_archive_with())
    cd = data.rfind(b"archive/data/0") - 46  # central header of the storage
    assert data[cd : cd + 4] == b"PK\x01\x02"
    struct.pack_into("<I", data, cd + 38, 0x7FFFFFFF)
    with pytest.raises(CheckpointError) as info:
        open_checkpoint(bytes(data))
    assert (info.value.code, info.value.message) == (
        "PTH011",
        "entry 'archive/data/0' is marked as a directory (attributes 0x7fffffff)",
    )


def test_miss_manifest_with_non_list_targets(tmp_path: Path) -> None:
    """facts.py took len() of any truthy `targets` (TypeError on a number)."""
    from rwkv_registry.formats.ckpt import open_checkpoint as open_ckpt
    from rwkv_registry.formats.pthwrite import RawTensor, write_pth

    seed = _miss_seed(tmp_path)
    ck = open_ckpt(seed)
    manifest = json.loads(ck.miss_manifest)
    tensors = {n: RawTensor(i.dtype, i.shape, bytes(ck.tensor_bytes(n))) for n, i in ck.tensors.items()}
    for bad in (1.5, 7, "targets", {"a": 1}):
        manifest["targets"] = bad
        raw = json.dumps(manifest).encode()
        write_pth(tmp_path / "m.pth", tensors, layout="lightning", extra_entries={"miss.json": raw})
        codes = {f["code"] for f in facts_from_buffer((tmp_path / "m.pth").read_bytes()).findings}
        assert "MIS007" in codes and "MIS009" in codes, codes


def test_zip64_locator_counting_zero_disks_is_refused() -> None:
    """torch (miniz) refuses a zip64 locator whose disk count is not 1; the reader took 0 for 1."""
    data = bytearray(_torch_bytes({"w": torch.zeros(2)}))
    locator = data.rfind(b"PK\x06\x07")
    struct.pack_into("<I", data, locator + 16, 0)
    with pytest.raises(RuntimeError, match="multidisk"):
        torch.load(io.BytesIO(bytes(data)), weights_only=True)
    with pytest.raises(CheckpointError) as info:
        open_checkpoint(bytes(data))
    assert (info.value.code, info.value.message) == ("PTH011", "multi-disk zip (zip64 locator: disk 0, 0 disks)")
