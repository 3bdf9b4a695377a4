"""Tests written by the mutation audit of the readers: jsonload, arch, facts (the validation cache),
pthwrite, lineage and jsoncpp. Each one kills at least one hand-written mutant that the older suite
let through (the mutant is named in the test's comment); none of them pins a value the code computes.
"""

from __future__ import annotations

import collections
import io
import json
import os
import struct
import zipfile
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from regtools import TINY_ARCH, TINY_BASE

from rwkv_registry.core.errors import RegistryIOError, UsageError
from rwkv_registry.core.fsio import sha256_file
from rwkv_registry.engine.facts import FactsCache, compute_facts, stat_key
from rwkv_registry.engine.validate import validate_registry
from rwkv_registry.formats import pthwrite
from rwkv_registry.formats.jsoncpp import dumps
from rwkv_registry.formats.jsonload import (
    JsonLoadError,
    is_finite_number,
    is_integer,
    load_json_bytes,
    load_json_file,
    read_json_bytes,
)
from rwkv_registry.formats.pthwrite import RawTensor, write_pth
from rwkv_registry.index.arch import (
    architecture_from_shapes,
    default_lora_widths,
    miss_target_shape,
    parse_arch_option,
    state_shape,
)
from rwkv_registry.index.lineage import base_date, family_of, superseded

STATE = f"{TINY_BASE}/state/v1/s1.pth"


# --- jsonload ------------------------------------------------------------------------------------


def _refusal(data: bytes, **kw: Any) -> JsonLoadError:
    with pytest.raises(JsonLoadError) as info:
        load_json_bytes(data, **kw)
    return info.value


def test_duplicate_key_is_located_at_its_second_occurrence_as_a_key_not_as_a_value() -> None:
    # J21: a string value equal to the key must not count as its first occurrence
    err = _refusal(b'{"k": "a",\n "a": 1,\n "a": 2}')
    assert (err.line, err.col) == (3, 2)
    # J20: the same name in a nested object is another object's key
    err = _refusal(b'{"a": {"a": 1},\n "b": 2, "a": 3}')
    assert (err.line, err.col) == (2, 10)


def test_nan_is_located_after_a_string_that_spells_it() -> None:
    # J22: the text "NaN" inside a string is not where the constant is
    err = _refusal(b'["NaN", "Infinity",\n  NaN]')
    assert (err.line, err.col) == (2, 3) and err.reason == "NaN is not a JSON number"


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(b'"\\udc00"', id="lone low surrogate"),  # J24
        pytest.param(b'{"\\ud800": 1}', id="lone surrogate in a key"),  # J25
        pytest.param(b'[["x", "\\ud83d"]]', id="lone surrogate in a list"),  # J26
        pytest.param(b'{"a": {"b": "\\uDFFF"}}', id="upper-case escape"),
    ],
)
def test_every_lone_surrogate_is_refused(data: bytes) -> None:
    assert "lone UTF-16 surrogate" in _refusal(data).reason


def test_surrogate_pairs_are_accepted_everywhere() -> None:
    assert load_json_bytes(b'{"\\ud83d\\ude00": ["\\ud83d\\ude00"]}') == {"\U0001f600": ["\U0001f600"]}


@pytest.mark.parametrize(
    ("data", "what"),
    [
        pytest.param(b"9" * 309, "an integer of 309 digits", id="309 digits"),  # J27
        pytest.param(b"[-" + b"9" * 309 + b"]", "an integer of 309 digits", id="negative"),  # J29
        pytest.param(b'{"a": {"b": 1e400}}', "a number", id="in an object"),  # J31
        pytest.param(b"[-1e400]", "a number", id="negative real"),
        pytest.param(b"1E+0400", "a number", id="upper-case exponent"),
        # a long mantissa with a short exponent overflows as surely as a long exponent (a bug: inf came back)
        pytest.param(b"1" + b"0" * 300 + b"e10", "a number", id="long mantissa"),
        pytest.param(b'{"x": -1' + b"0" * 250 + b".5E+60}", "a number", id="long negative mantissa"),
    ],
)
def test_numbers_beyond_a_double_are_refused(data: bytes, what: str) -> None:
    assert _refusal(data).reason == f"{what} is beyond the range of a double"


@pytest.mark.parametrize(
    "data",
    [
        b"8" * 308,  # below the largest double
        b"1" + b"0" * 300 + b"e7",  # 1e307
        b"1" + b"0" * 250 + b".0e57",  # 1e307
        b"1e-400",  # underflows to 0.0, which a double holds
        b"0." + b"0" * 400 + b"1e300",
    ],
)
def test_numbers_within_a_double_are_accepted(data: bytes) -> None:
    value = load_json_bytes(data)
    assert isinstance(value, int | float) and abs(value) <= 1.8e308


def test_is_integer_and_is_finite_number() -> None:
    # J38, J39: a bool is no count, and inf or NaN is no number
    assert is_integer(3) and not is_integer(True) and not is_integer(3.0)
    assert is_finite_number(3) and is_finite_number(-2.5)
    assert not is_finite_number(False) and not is_finite_number(float("inf")) and not is_finite_number(float("nan"))


def test_max_depth_is_the_callers() -> None:
    # J40
    assert load_json_bytes(b"[[[1]]]", max_depth=3) == [[[1]]]
    assert _refusal(b"[[[[1]]]]", max_depth=3).reason == "nested deeper than 3 levels"
    assert _refusal(b'{"a": {"b": 1}}', max_depth=1).col == 7


def test_message_without_a_path_has_no_empty_prefix() -> None:
    # J41
    err = _refusal(b"[1,]")
    assert str(err).startswith("line 1 column ")


@pytest.mark.parametrize("wrap", [bytearray, memoryview])
def test_bytearray_and_memoryview_are_accepted(wrap: Any) -> None:
    # J43
    assert load_json_bytes(wrap(b'{"a": 1}')) == {"a": 1}


def test_load_json_file_refuses_over_the_callers_limit_before_opening(tmp_path: Path, monkeypatch: Any) -> None:
    # J44: max_bytes given to load_json_file is checked by stat, the file is never opened
    p = tmp_path / "f.json"
    p.write_bytes(b'{"a": "' + b"x" * 100 + b'"}')
    opened: list[Path] = []
    real_open = Path.open

    def spy(self: Path, *a: Any, **kw: Any) -> Any:
        opened.append(self)
        return real_open(self, *a, **kw)

    monkeypatch.setattr(Path, "open", spy)
    with pytest.raises(JsonLoadError) as info:
        load_json_file(p, max_bytes=50)
    assert "over the limit of 50" in info.value.reason and opened == []
    assert load_json_file(p, max_bytes=200) == {"a": "x" * 100}


class _ReadSpy:
    """A file object that records the size of every read."""

    def __init__(self, f: Any, sizes: list[int]) -> None:
        self.f, self.sizes = f, sizes

    def read(self, n: int = -1) -> bytes:
        self.sizes.append(n)
        return bytes(self.f.read(n))

    def fileno(self) -> int:
        return int(self.f.fileno())

    def __enter__(self) -> _ReadSpy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.f.close()


@pytest.mark.parametrize("reader", [load_json_file, read_json_bytes])
def test_a_file_is_read_with_a_bound_even_if_it_grew_since_stat(tmp_path: Path, monkeypatch: Any, reader: Any) -> None:
    # J35: never read() without a size: a file that grows after stat (or a lying stat) stays bounded. The first read
    # asks for stat's size + 1 (read(n) allocates n bytes first); only a file that grew is read on, to the limit.
    import builtins

    from rwkv_registry.formats import jsonload

    p = tmp_path / "x.json"
    p.write_bytes(b"[1]")
    sizes: list[int] = []
    real_open = Path.open
    monkeypatch.setattr(Path, "open", lambda self, *a, **kw: _ReadSpy(real_open(self, *a, **kw), sizes))

    def spy_open(f: Any, *a: Any, **kw: Any) -> _ReadSpy:
        return _ReadSpy(builtins.open(f, *a, **kw), sizes)  # closed by the spy's __exit__

    monkeypatch.setattr(jsonload, "open", spy_open, raising=False)
    real_regular = jsonload.open_regular
    monkeypatch.setattr(jsonload, "open_regular", lambda f: _ReadSpy(real_regular(f), sizes))
    assert reader(p, max_bytes=10) in ([1], b"[1]")
    assert sizes == [4]
    sizes.clear()
    grow = _ReadSpy.read

    def growing(self: _ReadSpy, n: int = -1) -> bytes:
        if not self.sizes:
            with builtins.open(p, "ab") as f:
                f.write(b" " * 20)  # after stat, before the read
        return grow(self, n)

    monkeypatch.setattr(_ReadSpy, "read", growing)
    with pytest.raises(JsonLoadError, match="11 bytes, over the limit of 10"):
        reader(p, max_bytes=10)
    assert sizes == [4, 7]  # read on to the limit + 1, never past it


def test_read_json_bytes_bounds_the_read_even_when_stat_lies(tmp_path: Path, monkeypatch: Any) -> None:
    # J36, J37
    p = tmp_path / "f.json"
    p.write_bytes(b"[" + b"1," * 50 + b"1]")
    with pytest.raises(OSError) as info:
        read_json_bytes(p, max_bytes=20)
    assert "over the 20-byte limit" in str(info.value.strerror)
    real_fstat = os.fstat
    monkeypatch.setattr(os, "fstat", lambda fd: SimpleNamespace(st_size=1, st_mode=real_fstat(fd).st_mode))
    with pytest.raises(OSError) as info:
        read_json_bytes(p, max_bytes=20)
    assert info.value.size == 21  # type: ignore[attr-defined]  # max_bytes + 1 read, no more


# --- jsoncpp -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param(
            {"\U00010000": 1, "\uffff": 2}, '{"\\uffff":2,"\\ud800\\udc00":1}', id="keys by UTF-8 bytes"
        ),  # C12
        pytest.param(-(2**63), "-9223372036854775808", id="INT64_MIN"),  # C13
        pytest.param(-(2**63) - 1, "-9.2233720368547758e+18", id="below INT64_MIN"),
        pytest.param(2**64 - 1, "18446744073709551615", id="UINT64_MAX"),  # C14
        pytest.param(2**64, "1.8446744073709552e+19", id="above UINT64_MAX"),
        pytest.param((1, (2.5,)), "[1,[2.5]]", id="tuples"),  # C18
        pytest.param("\x1f\x7f\x80", '"\\u001f\x7f\\u0080"', id="0x1f 0x7f 0x80"),  # C06, C07
        pytest.param("\U0001f600\U0010ffff", '"\\ud83d\\ude00\\udbff\\udfff"', id="surrogate pairs"),  # C09
        pytest.param("\b/\f", '"\\b/\\f"', id="backspace and slash"),  # C10, C11
        pytest.param({"b": [True, False, None], "a": {}}, '{"a":{},"b":[true,false,null]}', id="literals"),  # C15
    ],
)
def test_jsoncpp_edge_values(value: object, expected: str) -> None:
    assert dumps(value) == expected


# --- lineage -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "family", "date"),
    [
        ("rwkv7-g1-202601011-ctx4096", "rwkv7-g1-202601011-ctx4096", None),  # L01: nine digits are no date
        ("a-20250101-b-20260101", "a", "20250101"),  # L02: the first date
        ("model-12345678", "model-12345678", None),  # L03: not a year of 19xx/20xx
        ("rwkv7-g1k-7.2b-20260930-ctx25600", "rwkv7-g1k-7.2b", "20260930"),  # L10
        ("rwkv7-g1-20260101", "rwkv7-g1", "20260101"),
    ],
)
def test_family_and_date_of_names(name: str, family: str, date: str | None) -> None:
    assert family_of(name) == family
    assert base_date({"name": name}) == date


def test_base_date_falls_back_to_added() -> None:
    assert base_date({"name": "custom", "added": "2026-12-31"}) == "20261231"  # L04, L11
    assert base_date({"name": "custom", "added": "2026-12-31T10:00:00Z"}) is None  # L05
    assert base_date({"name": "custom", "added": 20261231}) is None


def test_superseded_maps_old_bases_to_the_newest_only() -> None:
    bases = [
        {"name": "m-20250101"},
        {"name": "m-20260101"},
        {"name": "m-20250601"},
        {"name": "n-20240101"},
        {"name": 5, "added": "2027-01-01"},  # L09: no name, no base
        {"name": "old-custom", "added": "2024-01-01", "family": "fam"},
        {"name": "new-custom", "added": "2025-01-01", "family": "fam"},  # L08: the declared family
    ]
    assert superseded(bases) == {  # L07: the newest maps to nothing; L12: to the newest's name
        "m-20250101": "m-20260101",
        "m-20250601": "m-20260101",
        "old-custom": "new-custom",
    }


def test_a_date_at_the_end_of_the_name_is_the_base_date() -> None:
    """Mutant: the date had to be followed by `-` (a name ending in its date fell back to `added`)."""
    assert family_of("rwkv7-g1-20260101") == "rwkv7-g1"
    assert base_date({"name": "rwkv7-g1-20260101", "added": "2026-05-05"}) == "20260101"


def test_the_first_date_of_the_name_is_the_base_date() -> None:
    """Mutant: a greedy family match took the last date of a name holding two."""
    name = "rwkv7-g1-20250101-ft-20260101-ctx4096"
    assert family_of(name) == "rwkv7-g1"
    assert base_date({"name": name}) == "20250101"


def test_the_recorded_family_decides_what_supersedes_what() -> None:
    """Mutant: the family always derived from the name, ignoring the base's own `family` field."""
    bases = [
        {"name": "rwkv7-a-20250101", "family": "rwkv7-g1"},
        {"name": "rwkv7-b-20260101", "family": "rwkv7-g1"},
        {"name": "rwkv7-a-20260101", "family": "other"},
    ]
    assert superseded(bases) == {"rwkv7-a-20250101": "rwkv7-b-20260101"}


# --- arch ----------------------------------------------------------------------------------------


def _shapes(n_layer: int, c: int, h: int, v: int, f: int, lora: dict[str, int]) -> dict[str, tuple[int, ...]]:
    """The tensor table of an RWKV-7 base (FORMATS §2), every width distinct."""
    shapes: dict[str, tuple[int, ...]] = {"emb.weight": (v, c), "head.weight": (v, c), "ln_out.weight": (c,)}
    for i in range(n_layer):
        b = f"blocks.{i}."
        shapes |= {
            b + "att.r_k": (h, c // h),
            b + "att.w1": (c, lora["decay"]),
            b + "att.w2": (lora["decay"], c),
            b + "att.a1": (c, lora["aaa"]),
            b + "att.v1": (c, lora["mv"] + (7 if i == 0 else 0)),  # layer 0's v1 is ignored
            b + "att.g1": (c, lora["gate"]),
            b + "att.key.weight": (c, c),
            b + "ffn.key.weight": (f, c),
            b + "ffn.value.weight": (c, f),
        }
    return shapes


def test_architecture_is_read_from_the_shapes() -> None:
    # A01, A03, A04, A06-A11
    lora = {"decay": 32, "aaa": 48, "mv": 16, "gate": 80}
    arch = architecture_from_shapes(_shapes(3, 192, 3, 1000, 448, lora), dtype="bfloat16")
    assert arch == {
        "n_layer": 3,
        "n_embd": 192,
        "head_size": 64,
        "n_head": 3,
        "vocab_size": 1000,
        "ffn_size": 448,
        "lora": lora,
        "dtype": "bfloat16",
    }
    one = architecture_from_shapes(_shapes(1, 128, 2, 500, 512, lora))
    assert one["lora"]["mv"] is None and one["n_layer"] == 1 and "dtype" not in one


def test_architecture_refuses_gaps_and_inconsistent_heads() -> None:
    lora = {"decay": 32, "aaa": 32, "mv": 32, "gate": 32}
    shapes = _shapes(3, 128, 2, 500, 512, lora)
    gap = {k: s for k, s in shapes.items() if not k.startswith("blocks.1.")}
    with pytest.raises(UsageError, match=r"blocks \[1\] are missing"):  # A02
        architecture_from_shapes(gap)
    with pytest.raises(UsageError, match="inconsistent"):  # A05
        architecture_from_shapes({**shapes, "blocks.0.att.r_k": (2, 32)})


@pytest.mark.parametrize(
    ("name", "shape"),
    [
        ("emb.weight", (1000,)),
        ("blocks.0.att.r_k", (128,)),
        ("blocks.0.att.r_k", (2, 64, 1)),
        ("blocks.0.ffn.key.weight", ()),
        ("blocks.0.att.w1", (128,)),
        ("blocks.1.att.v1", (128,)),
    ],
)
def test_architecture_refuses_tensors_of_the_wrong_rank(name: str, shape: tuple[int, ...]) -> None:
    # a bug: add-base on such a file said "unexpected ValueError/IndexError ... this is a bug in rwkv-registry"
    lora = {"decay": 32, "aaa": 32, "mv": 32, "gate": 32}
    shapes = {**_shapes(2, 128, 2, 1000, 512, lora), name: shape}
    with pytest.raises(UsageError, match=f"tensor '{name}' has shape .*, not 2 dimensions"):
        architecture_from_shapes(shapes)


def test_add_base_of_a_file_with_a_one_dimensional_r_k_is_refused_cleanly(tmp_path: Path, capsys: Any) -> None:
    from rwkv_registry.cli.main import main
    from rwkv_registry.store.ops import init_registry

    init_registry(tmp_path / "reg", name="test/registry")
    base = tmp_path / "rwkv7-odd-20260101.pth"
    write_pth(
        base,
        {
            "emb.weight": RawTensor("bfloat16", (5, 128), bytes(1280)),
            "blocks.0.att.r_k": RawTensor("bfloat16", (128,), bytes(256)),
        },
    )
    assert main(["add-base", str(tmp_path / "reg"), str(base), "--source", "BlinkDL/rwkv7-g1"]) != 0
    err = capsys.readouterr().err
    assert "'blocks.0.att.r_k' has shape [128], not 2 dimensions" in err and "bug" not in err


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("n_layer=2,n_embd=128,vocab_size=", "is not KEY=VALUE"),  # A13
        ("n_layer=2,n_embd=128", "--arch needs vocab_size"),  # A14
        ("n_layer=0,n_embd=128,vocab_size=10", "n_layer=0 is out of range"),  # A15
        ("n_layer=2,n_embd=128,vocab_size=10,head_size=32", "head_size=32"),  # A17
        ("n_layer=2,n_embd=128,vocab_size=10,dtype=int8", "dtype 'int8'"),  # A18
        ("n_layer=2,n_embd=100,vocab_size=10", "not a multiple of the head size"),  # A21
        ("n_layer=2,n_embd=128,vocab_size=10,lora_decay=100000000", "lora_decay=100000000 is out of range"),  # A30
    ],
)
def test_arch_option_refusals(text: str, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        parse_arch_option(text)


def test_arch_option_defaults_and_given_values() -> None:
    arch = parse_arch_option("n_layer=2,n_embd=128,vocab_size=10,lora_decay=64")
    assert arch["ffn_size"] == 4 * 128 and arch["n_head"] == 2  # A19
    assert arch["lora"]["decay"] == 64  # A20
    from rwkv_registry.schemas import load_schema

    props = load_schema("index")["$defs"]["base"]["properties"]["architecture"]["properties"]
    tops = {key: int(props[key]["maximum"]) for key in ("n_layer", "vocab_size")}  # A16: up to index.json's maxima
    top = parse_arch_option(f"n_layer={tops['n_layer']},n_embd=128,vocab_size={tops['vocab_size']}")
    assert (top["n_layer"], top["vocab_size"]) == (tops["n_layer"], tops["vocab_size"])
    for key, n in tops.items():  # one more is refused
        given = {"n_layer": 2, "n_embd": 128, "vocab_size": 10, key: n + 1}
        with pytest.raises(UsageError, match=rf"{key}={n + 1} is out of range: give a whole number from 1 to {n}$"):
            parse_arch_option(",".join(f"{k}={v}" for k, v in given.items()))


@pytest.mark.parametrize(
    ("n_embd", "widths"),
    [
        # the LoRA widths of BlinkDL's released G1 bases (w1, a1, v1, g1 of the 0.1B, 1.5B and 7.2B files)
        (768, {"decay": 64, "aaa": 64, "mv": 32, "gate": 128}),
        (2048, {"decay": 96, "aaa": 96, "mv": 64, "gate": 256}),
        (4096, {"decay": 128, "aaa": 128, "mv": 96, "gate": 480}),
        (64, {"decay": 32, "aaa": 32, "mv": 32, "gate": 32}),  # never below 32
    ],
)
def test_default_lora_widths(n_embd: int, widths: dict[str, int]) -> None:
    # A23-A26
    assert default_lora_widths(n_embd) == widths


def test_target_and_state_shapes() -> None:
    arch = {"n_embd": 128, "ffn_size": 448, "n_head": 2, "head_size": 64}
    assert miss_target_shape(arch, "ffn.key.weight") == (448, 128)  # A27
    assert miss_target_shape(arch, "ffn.value.weight") == (128, 448)  # A28
    assert miss_target_shape(arch, "att.output.weight") == (128, 128)
    assert state_shape(arch) == (2, 64, 64)  # A29
    for unknown in ("ffn.receptance.weight", "attn.key.weight"):  # A31: "att." with its dot
        with pytest.raises(KeyError):
            miss_target_shape(arch, unknown)


def _base_shapes(n_head: int = 2, n_embd: int = 128, layers: tuple[int, ...] = (0, 1)) -> dict[str, tuple[int, ...]]:
    shapes: dict[str, tuple[int, ...]] = {"emb.weight": (1000, n_embd)}
    for i in layers:
        shapes[f"blocks.{i}.att.r_k"] = (n_head, 64)
        shapes[f"blocks.{i}.ffn.key.weight"] = (4 * n_embd, n_embd)
        for x in ("w1", "a1", "g1", "v1"):
            shapes[f"blocks.{i}.att.{x}"] = (n_embd, 32)
    return shapes


def test_architecture_from_shapes_refuses_heads_that_do_not_make_n_embd() -> None:
    """Mutant: the n_head x head_size == n_embd check dropped (a State's shape [H, 64, 64] depends on it)."""
    assert architecture_from_shapes(_base_shapes())["n_head"] == 2
    with pytest.raises(UsageError, match=r"r_k is \[3, 64\] but n_embd is 128"):
        architecture_from_shapes(_base_shapes(n_head=3))


def test_arch_option_refuses_a_head_size_other_than_64() -> None:
    """Mutant: the head_size == 64 check of --arch dropped (n_head then defaults to n_embd / head_size, consistent,
    and a State of [H, 32, 32] would be expected)."""
    assert parse_arch_option("n_layer=2,n_embd=128,vocab_size=1000,head_size=64")["n_head"] == 2
    with pytest.raises(UsageError, match="head_size=32: RWKV-7 heads are 64 wide"):
        parse_arch_option("n_layer=2,n_embd=128,vocab_size=1000,head_size=32")


# --- pthwrite ------------------------------------------------------------------------------------


def _raw(t: Any) -> RawTensor:
    import torch

    data = t.contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()
    return RawTensor(str(t.dtype).removeprefix("torch."), tuple(t.shape), data)


def _same_as_torch(tmp_path: Path, tensors: dict[str, Any]) -> None:
    """write_pth's bytes are torch.save's but for the random serialization id."""
    import torch
    from regtools import without_serialization_id

    (tmp_path / "torch").mkdir()
    (tmp_path / "ours").mkdir()
    torch.save(collections.OrderedDict(tensors), tmp_path / "torch" / "m.pth")
    write_pth(tmp_path / "ours" / "m.pth", {k: _raw(v) for k, v in tensors.items()})
    ours = (tmp_path / "ours" / "m.pth").read_bytes()
    theirs = (tmp_path / "torch" / "m.pth").read_bytes()
    assert without_serialization_id(ours, "m") == without_serialization_id(theirs, "m")
    loaded = torch.load(tmp_path / "ours" / "m.pth", weights_only=True)
    assert list(loaded) == list(tensors)
    for name, t in tensors.items():
        assert loaded[name].dtype == t.dtype and loaded[name].shape == t.shape and torch.equal(loaded[name], t)


def test_torch_layout_ints_at_the_opcode_boundaries(tmp_path: Path) -> None:
    # P01-P04: 255, 256, 65535, 65536 and 2**31 elements or strides (the last with zero elements)
    import torch

    _same_as_torch(
        tmp_path,
        {
            "k255": torch.ones(255, dtype=torch.int8),
            "k256": torch.ones(1, 256, dtype=torch.int8),
            "m65535": torch.ones(65535, dtype=torch.int8),
            "m65536": torch.ones(65536, 1, dtype=torch.int8),
            "three.dims": torch.ones(2, 3, 4, dtype=torch.int8),  # P07: TUPLE3
            "long stride": torch.zeros(0, 2**31, dtype=torch.int8),
            "longer stride": torch.zeros(0, 3, 2**40, dtype=torch.int8),
        },
    )


def test_torch_layout_with_more_than_256_memo_entries(tmp_path: Path) -> None:
    # P05, P06: BINPUT/BINGET become LONG_BINPUT/LONG_BINGET at memo index 256
    import torch

    tensors = {f"t{i}": torch.full((2,), float(i), dtype=torch.float16 if i % 2 else torch.bfloat16) for i in range(60)}
    _same_as_torch(tmp_path, tensors)


def _zip64_file(tmp_path: Path, monkeypatch: Any) -> bytes:
    monkeypatch.setattr(pthwrite, "_ZIP64_LIMIT", 100)
    write_pth(tmp_path / "z.pth", {"big": RawTensor("int16", (200,), bytes(400)), "b": RawTensor("int8", (2,), b"ab")})
    return (tmp_path / "z.pth").read_bytes()


def test_zip64_headers_are_what_miniz_writes(tmp_path: Path, monkeypatch: Any) -> None:
    data = _zip64_file(tmp_path, monkeypatch)
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        info = z.getinfo("z/data/0")
        assert info.file_size == 400
    off = info.header_offset
    nlen, elen = struct.unpack_from("<HH", data, off + 26)
    tag, size = struct.unpack_from("<HH", data, off + 30 + nlen)
    assert (tag, size) == (1, 24)  # sizes and the offset
    # P13: in the local header the compressed size is 0 (miniz); the central directory has both
    assert struct.unpack_from("<QQQ", data, off + 34 + nlen) == (400, 0, off)
    start = off + 30 + nlen + elen
    assert start % 64 == 0
    # P17, P18: a 64-bit data descriptor follows the data
    assert struct.unpack_from("<4sIQQ", data, start + 400) == (b"PK\x07\x08", info.CRC, 400, 400)
    # P19: the central directory's 32-bit sizes are the sentinel
    central = data.rindex(b"z/data/0") - 46
    assert data[central : central + 4] == b"PK\x01\x02"
    assert struct.unpack_from("<II", data, central + 20) == (0xFFFFFFFF, 0xFFFFFFFF)
    # P21, P22: the zip64 end record is 56 bytes (its size field says 44) and one disk
    record = data.rindex(b"PK\x06\x06")
    assert struct.unpack_from("<Q", data, record + 4)[0] == 44
    locator = data.rindex(b"PK\x06\x07")
    assert locator == record + 56 and struct.unpack_from("<IQI", data, locator + 4) == (0, record, 1)
    # P23: the 32-bit size and offset of the central directory are the sentinel too
    end = data.rindex(b"PK\x05\x06")
    assert struct.unpack_from("<II", data, end + 12) == (0xFFFFFFFF, 0xFFFFFFFF)


def test_end_record_counts_saturate_past_65535_entries(monkeypatch: Any) -> None:
    # P20: more than 0xFFFF entries: the 16-bit counts say 0xFFFF, the zip64 record the real number
    entries: list[tuple[str, bytes | memoryview]] = [(f"a/{i}", b"") for i in range(0x10001)]
    out = io.BytesIO()
    pthwrite._write_torch_zip(pthwrite._Out(out), entries)
    data = out.getvalue()
    end = data.rindex(b"PK\x05\x06")
    assert struct.unpack_from("<HH", data, end + 8) == (0xFFFF, 0xFFFF)
    record = data.rindex(b"PK\x06\x06")
    assert struct.unpack_from("<QQ", data, record + 24) == (0x10001, 0x10001)


def test_lightning_layout_refuses_offsets_past_4_gib() -> None:
    # P39
    out = pthwrite._Out(io.BytesIO())
    out.pos = 2**32  # the entry's offset would not fit the 32-bit field
    with pytest.raises(UsageError, match="4 GiB"):
        pthwrite._write_lightning_zip(out, [("archive/data/0", b"xx")])


def test_a_path_is_flushed_and_fsynced_before_it_is_closed(tmp_path: Path, monkeypatch: Any) -> None:
    # P25, P26: fsync sees every byte of the file (nothing left in Python's buffer)
    synced: list[int] = []
    real_fsync = os.fsync

    def spy(fd: int) -> None:
        synced.append(os.fstat(fd).st_size)
        real_fsync(fd)

    monkeypatch.setattr(pthwrite.os, "fsync", spy)
    path = tmp_path / "s.pth"
    write_pth(path, {"x": RawTensor("float32", (3,), bytes(12))})
    assert synced == [path.stat().st_size]


@pytest.mark.parametrize(
    ("tensors", "kw"),
    [
        ({"x": RawTensor("float32", (True, 1), bytes(4))}, {}),  # P28: a bool is no dimension
        ({"x": RawTensor("float32", (1,), bytes(4))}, {"extra_entries": {"a/b": b""}}),  # P31
        ({"x": RawTensor("float32", (1,), bytes(4))}, {"extra_entries": {".hidden": b""}}),  # P32
        ({"x": RawTensor("float32", (1,), bytes(4))}, {"prefix": "."}),  # P40
        ({"x": RawTensor("float32", (1,), bytes(4))}, {"prefix": ".."}),  # P40
        ({"x": RawTensor("int8", (2**31,), b"")}, {"layout": "lightning"}),  # P30: numel checked first
    ],
)
def test_more_bad_arguments(tmp_path: Path, tensors: dict[str, RawTensor], kw: dict[str, Any]) -> None:
    with pytest.raises(UsageError):
        write_pth(tmp_path / "bad.pth", tensors, **kw)
    assert not (tmp_path / "bad.pth").exists()


def test_lightning_numel_limit(monkeypatch: Any) -> None:
    # P30: 2**31 elements are refused before their bytes are looked at (a size check would need 2 GiB)
    monkeypatch.setattr(pthwrite, "DTYPE_ITEMSIZE", {**pthwrite.DTYPE_ITEMSIZE, "float32": 0})
    with pytest.raises(UsageError, match="numel"):
        write_pth(io.BytesIO(), {"x": RawTensor("float32", (2**31,), b"")}, layout="lightning")
    write_pth(io.BytesIO(), {"x": RawTensor("float32", (2**31 - 1,), b"")}, layout="lightning")


def test_unwritable_path_is_a_registry_error(tmp_path: Path) -> None:
    # P37
    with pytest.raises(RegistryIOError, match="cannot write"):
        write_pth(tmp_path, {"x": RawTensor("float32", (1,), bytes(4))})


def test_serialization_id_follows_the_tensor_bytes(tmp_path: Path) -> None:
    # P41: same names, dtypes and shapes but other values: another id
    def sid(data: bytes) -> bytes:
        buf = io.BytesIO()
        write_pth(buf, {"x": RawTensor("float32", (1,), data)})
        return zipfile.ZipFile(buf).read("archive/.data/serialization_id")

    assert sid(bytes(4)) != sid(b"\x00\x00\x80\x3f") and sid(bytes(4)) == sid(bytes(4))


def test_float_memoryview_is_written_as_bytes(tmp_path: Path) -> None:
    # P38: a memoryview of 4-byte items is 12 bytes, not 3
    import array

    import torch

    data = memoryview(array.array("f", [1.0, 2.0, 3.0]))
    write_pth(tmp_path / "m.pth", {"m": RawTensor("float32", (3,), data)})
    assert torch.equal(torch.load(tmp_path / "m.pth", weights_only=True)["m"], torch.tensor([1.0, 2.0, 3.0]))


# --- facts: what the cache remembers and when it trusts it ------------------------------------------


def test_stat_key_changes_with_every_part() -> None:
    # F01-F06: device, inode, path, size, mtime and ctime each change the key
    st = {"st_dev": 1, "st_ino": 2, "st_size": 3, "st_mtime_ns": 4, "st_ctime_ns": 5}
    key = stat_key(SimpleNamespace(**st), "/a")  # type: ignore[arg-type]
    for field in st:
        other = SimpleNamespace(**{**st, field: st[field] + 100})
        assert stat_key(other, "/a") != key, field  # type: ignore[arg-type]
    assert stat_key(SimpleNamespace(**st), "/b") != key  # type: ignore[arg-type]


def _cache_file() -> Path:
    files = list(Path(os.environ["RWKV_REGISTRY_CACHE_DIR"]).glob("validate-*.json"))
    assert len(files) == 1
    return files[0]


def _plant_sha(cache: dict[str, Any], sha: str) -> dict[str, Any]:
    for entry in cache["files"].values():
        entry["facts"]["sha256"] = sha
    return cache


@pytest.mark.parametrize(
    "version",
    [
        pytest.param(lambda v: [v[0], "0" * 64], id="other code"),  # F08: another digest of the checking code
        pytest.param(lambda v: [4, "0.1.0"], id="hand-bumped version"),  # F09: the stamp of the code before
    ],
)
def test_a_cache_of_another_version_is_not_trusted(registry: Path, version: Any) -> None:
    assert validate_registry(registry).ok
    path = _cache_file()
    cache = json.loads(path.read_text())
    cache["version"] = version(cache["version"])
    path.write_text(json.dumps(_plant_sha(cache, "0" * 64)))  # what a stale cache would claim
    report = validate_registry(registry)
    assert report.ok and report.stats["cache_hits"] == 0
    # the same planted facts under the right version are used: the test can see a trusted cache
    cache["version"] = json.loads(path.read_text())["version"]
    path.write_text(json.dumps(_plant_sha(cache, "0" * 64)))
    assert "HSH001" in {f.code for f in validate_registry(registry).findings}


def test_a_file_changed_while_it_is_read_is_not_cached(registry: Path, monkeypatch: Any) -> None:
    # the stat after reading differs from the one before: the facts are not remembered (and the next run,
    # whose stat differs too, reads the file again)
    import rwkv_registry.engine.facts as facts_mod

    p = registry / STATE
    real = facts_mod.compute_facts

    def compute_then_touch(path: Any) -> Any:
        result = real(path)
        if Path(path) == p:
            data = bytearray(p.read_bytes())
            data[-100] ^= 0x10
            p.write_bytes(bytes(data))  # same size; mtime and ctime move on
        return result

    monkeypatch.setattr(facts_mod, "compute_facts", compute_then_touch)
    validate_registry(registry)
    monkeypatch.setattr(facts_mod, "compute_facts", real)
    assert str(p) not in json.loads(_cache_file().read_text())["files"]  # F11: not remembered under the old key
    report = validate_registry(registry)
    assert "HSH001" in {f.code for f in report.findings} and report.stats["cache_hits"] == 2


def test_two_registries_keep_their_own_warm_caches(registry: Path, tmp_path: Path) -> None:
    # F13: one cache file per registry root; another root's run does not evict this one's entries
    from regtools import build_registry

    other = build_registry(tmp_path / "other", tmp_path / "other-src", with_miss=False)
    validate_registry(registry)
    validate_registry(other)
    assert validate_registry(registry).stats["cache_hits"] == 3
    assert validate_registry(other).stats["cache_hits"] == 1


def test_entries_of_deleted_files_are_dropped(registry: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # F14, F17: a removed file's entry leaves the cache (a "gone" journal line, read back), and its blobs leave the
    # cache file when it is rewritten
    from rwkv_registry.engine import facts

    validate_registry(registry)
    for p in sorted(registry.rglob("adapter-final.pth")):
        p.unlink()
    state = registry / STATE
    os.utime(state, ns=(state.stat().st_atime_ns, state.stat().st_mtime_ns + 10**9))  # a run with news to save
    validate_registry(registry)
    assert sorted(FactsCache(registry).files) == [str(registry / STATE)]
    monkeypatch.setattr(facts, "_JOURNAL_APPEND_MAX", 0)  # the next save rewrites the file
    os.utime(state, ns=(state.stat().st_atime_ns, state.stat().st_mtime_ns + 10**9))
    validate_registry(registry)
    cache = json.loads(_cache_file().read_text())
    assert sorted(cache["files"]) == [str(registry / STATE)]
    assert cache["blobs"] == {}


def test_cached_facts_keep_the_key_order_of_the_manifest(registry: Path, tmp_path: Path) -> None:
    # F15: a blob is the value it replaced, in its order (a reserialized manifest must not change)
    from dataclasses import asdict

    p = sorted(registry.rglob("adapter-final.pth"))[0]
    computed = compute_facts(p)
    cache = FactsCache(tmp_path / "elsewhere")
    cache.put(str(p), [1], computed)
    cache.save()
    again = FactsCache(tmp_path / "elsewhere").get(str(p), [1])
    assert again is not None
    assert json.dumps(asdict(again)) == json.dumps(asdict(computed))


def test_malformed_cache_entries_are_misses(registry: Path) -> None:
    # F32: an entry whose blob cannot be put back (TypeError inside get) is recomputed, never a traceback
    validate_registry(registry)
    path = _cache_file()
    cache = json.loads(path.read_text())
    for entry in cache["files"].values():
        if entry.get("blobs"):
            entry["facts"]["manifest"] = None  # {**None, ...} inside get
    path.write_text(json.dumps(cache))
    report = validate_registry(registry)
    assert report.ok and report.stats["cache_hits"] == 1


@pytest.mark.parametrize(
    ("damage", "hits"),
    [
        pytest.param({"files": []}, 0, id="files a list"),
        pytest.param({"files": None}, 0, id="files null"),
        pytest.param({"json": []}, 3, id="json a list"),
        pytest.param({"json": "x"}, 3, id="json a string"),
        pytest.param("entries", 0, id="entries not objects"),
    ],
)
def test_a_cache_of_the_wrong_shape_is_ignored(registry: Path, damage: Any, hits: int) -> None:
    # a cache file that parses but is not what this version writes: a cold run, never a traceback (a bug:
    # AttributeError out of FactsCache.get and get_json)
    assert validate_registry(registry).ok
    path = _cache_file()
    cache = json.loads(path.read_text())
    if damage == "entries":
        cache["files"] = {k: [1, 2] for k in cache["files"]}
    else:
        cache.update(damage)
    path.write_text(json.dumps(cache))
    report = validate_registry(registry)
    assert report.ok and report.stats["cache_hits"] == hits  # the facts of a damaged "files" are recomputed
    assert validate_registry(registry).stats["cache_hits"] == 3  # and rewritten whole


def test_a_warm_run_does_not_rewrite_the_cache(registry: Path) -> None:
    # F39: nothing new: the cache file is left as it is (same inode, same bytes)
    validate_registry(registry)
    before = _cache_file().stat()
    assert validate_registry(registry).stats["cache_hits"] == 3
    after = _cache_file().stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)


def test_facts_of_an_empty_file_and_of_an_lfs_pointer(tmp_path: Path) -> None:
    # F19: an empty file is PTH001; F18: a pointer (about 130 bytes, and up to 1023) is recognised
    import hashlib

    empty = tmp_path / "empty.pth"
    empty.write_bytes(b"")
    facts = compute_facts(empty)
    assert (facts.size, facts.sha256, facts.kind) == (0, hashlib.sha256(b"").hexdigest(), "unknown")
    assert [f["code"] for f in facts.findings] == ["PTH001"]
    oid = "a" * 64
    for extra in (b"", b"x-note " + b"y" * 800 + b"\n"):
        pointer = tmp_path / "pointer.pth"
        pointer.write_bytes(
            b"version https://git-lfs.github.com/spec/v1\n"
            + b"oid sha256:"
            + oid.encode()
            + b"\n"
            + b"size 36000000\n"
            + extra
        )
        facts = compute_facts(pointer)
        assert facts.kind == "lfs-pointer" and facts.lfs == {"oid": oid, "size": 36000000}
        assert [f["code"] for f in facts.findings] == ["LFS001"]


def test_sha256_file_counts_every_chunk(tmp_path: Path) -> None:
    # F30: a file over one 16 MiB chunk
    import hashlib

    p = tmp_path / "big.bin"
    data = b"ab" * (8 << 20) + b"xyz"
    p.write_bytes(data)
    seen: list[int] = []
    assert sha256_file(p, seen.append) == (hashlib.sha256(data).hexdigest(), len(data))
    assert sum(seen) == len(data) and len(seen) == 2
    # small files are read in pieces of their own size (at least 64 KiB): whole, whatever the size
    for size in (0, 1, (1 << 16) - 1, 1 << 16, (1 << 16) + 1, 3 << 20):
        data = bytes(i % 251 for i in range(size))
        p.write_bytes(data)
        seen.clear()
        assert sha256_file(p, seen.append) == (hashlib.sha256(data).hexdigest(), size)
        assert sum(seen) == size and len(seen) == (1 if size else 0)


def test_state_values_are_scanned_in_every_dtype(tmp_path: Path) -> None:
    # F20-F22: Inf in float32, NaN with a low mantissa in bfloat16, Inf in float16
    import torch

    cases = {
        "float32": (torch.float32, float("inf")),
        "bfloat16": (torch.bfloat16, float("nan")),
        "float16": (torch.float16, float("-inf")),
    }
    h, n = TINY_ARCH["n_head"], TINY_ARCH["head_size"]
    for name, (dtype, bad) in cases.items():
        t = torch.zeros(h, n, n, dtype=dtype)
        t[0, 0, 1] = bad
        if name == "bfloat16":
            t = t.view(torch.int16)
            t[0, 0, 1] = 0x7F81  # a NaN whose high mantissa bits are 0
            t = t.view(torch.bfloat16)
        path = tmp_path / f"{name}.pth"
        write_pth(path, {f"blocks.{i}.att.time_state": _raw(t) for i in range(TINY_ARCH["n_layer"])})
        facts = compute_facts(path)
        assert facts.method == "state"
        assert [f["code"] for f in facts.findings] == ["STA004", "STA004"], name


def test_largest_finite_state_values_are_not_flagged(tmp_path: Path) -> None:
    # F20, F21: 0x7F7F/0xFF7F (bfloat16) and 0x7BFF (float16, 65504) are finite, and so are 0x7F00, 0x7800
    import torch

    h, n = TINY_ARCH["n_head"], TINY_ARCH["head_size"]
    for dtype, bits in ((torch.bfloat16, (0x7F7F, -129, 0x7F00, 0x7E80)), (torch.float16, (0x7BFF, -1025, 0x7800))):
        t = torch.zeros(h, n, n, dtype=torch.int16)
        t.view(-1)[: len(bits)] = torch.tensor(bits, dtype=torch.int16)  # -129 is 0xFF7F, -1025 is 0xFBFF
        t = t.view(dtype)
        assert torch.isfinite(t.float()).all()
        path = tmp_path / f"{dtype}.pth".replace("torch.", "")
        write_pth(path, {f"blocks.{i}.att.time_state": _raw(t) for i in range(TINY_ARCH["n_layer"])})
        facts = compute_facts(path)
        assert facts.method == "state" and facts.findings == [], dtype


def test_a_state_is_what_the_server_counts_as_one(tmp_path: Path) -> None:
    # F23: one time_state beside another tensor is a State, as rwkv_lightning_cuda's upload check has it (the other
    # tensor is skipped, STA006); beside a whole model (emb.weight and head.weight) or a MiSS D tensor it is none,
    # and a name the server does not count as a time state (nothing between "blocks." and ".att") makes none
    state = RawTensor("float32", (2, 64, 64), bytes(2 * 64 * 64 * 4))
    one = RawTensor("float32", (1,), bytes(4))
    for others, method in (
        ({"blocks.0.att.key.weight": one}, "state"),
        ({"emb.weight": one, "head.weight": one}, None),
        ({"emb.weight": one}, "state"),
        ({"blocks.0.att.key.weight.D": one}, None),
    ):
        path = tmp_path / "mixed.pth"
        write_pth(path, {"blocks.0.att.time_state": state, **others})
        assert compute_facts(path).method == method, others
    write_pth(path, {"blocks..att.time_state": state})
    assert compute_facts(path).method is None


@pytest.mark.parametrize("over", [0, 1])
def test_manifest_size_limit_is_inclusive(tmp_path: Path, over: int) -> None:
    # F24: a miss.json of exactly MANIFEST_MAX_BYTES is read; one byte more is MIS002
    from rwkv_registry.checks.miss import MANIFEST_MAX_BYTES

    head = b'{"method": "miss", "pad": "'
    manifest = head + b"x" * (MANIFEST_MAX_BYTES + over - len(head) - 2) + b'"}'
    assert len(manifest) == MANIFEST_MAX_BYTES + over
    path = tmp_path / "adapter-final.pth"
    write_pth(
        path,
        {"blocks.0.att.key.weight.D": RawTensor("bfloat16", (1, 1), bytes(2))},
        layout="lightning",
        extra_entries={"miss.json": manifest},
    )
    facts = compute_facts(path)
    codes = [f["code"] for f in facts.findings]
    if over:
        assert codes == ["MIS002"] and facts.manifest is None
    else:
        assert "MIS002" not in codes and facts.manifest == json.loads(manifest)


def test_a_manifest_target_without_a_tensor(tmp_path: Path) -> None:
    # F26, F38: one more target than tensors (a target the manifest check refuses): MIS009, no content_version
    from regtools import write_miss

    from rwkv_registry.formats.ckpt import open_checkpoint

    src = tmp_path / "src.pth"
    manifest = write_miss(src)
    ck = open_checkpoint(src)
    tensors = {n: RawTensor(t.dtype, tuple(t.shape), bytes(ck.tensor_bytes(n))) for n, t in ck.tensors.items()}
    bogus = {**manifest["targets"][0], "name": "blocks.0.att.bogus.weight.D", "target": "att.bogus.weight"}
    manifest = {**manifest, "targets": [*manifest["targets"], bogus]}
    path = tmp_path / "adapter-final.pth"
    write_pth(path, tensors, layout="lightning", extra_entries={"miss.json": json.dumps(manifest).encode()})
    facts = compute_facts(path)
    n = len(tensors)
    assert any(f == {"code": "MIS009", "message": f"{n} tensors for {n + 1} targets"} for f in facts.findings)
    assert facts.content_version is None


def test_legacy_float16_adapter_gets_a_content_version(tmp_path: Path) -> None:
    # F27: content_version is recomputed for fp16 adapters too (FORMATS §4: bf16, or legacy fp16)
    from regtools import bf16_bytes, target_shape

    from rwkv_registry.checks.miss import MISS_TARGETS, write_miss_file

    tensors = {}
    for layer in range(TINY_ARCH["n_layer"]):
        for j, t in enumerate(MISS_TARGETS):
            out_f = target_shape(TINY_ARCH, t)[0]
            # bf16 bytes of 0.7-ish read as fp16 are finite too
            tensors[f"blocks.{layer}.{t}.D"] = RawTensor("float16", (out_f, 4), bf16_bytes(out_f * 4, layer * 10 + j))
    path = tmp_path / "adapter-final.pth"
    write_miss_file(path, tensors, rank=4, alpha=8, base_fingerprint="0" * 64, dtype="float16", arch=TINY_ARCH)
    facts = compute_facts(path)
    assert facts.method == "miss" and facts.content_version is not None
    assert facts.content_version == facts.manifest["content_version"]


# --- the keys of the JSON caches: the schema digest and the schema name ---------------------------


def test_cached_schema_errors_are_keyed_by_schema_digest_and_name(registry: Path, monkeypatch: Any) -> None:
    # V01, V02
    import rwkv_registry.engine.validate as validate_mod

    validate_registry(registry)
    path = _cache_file()
    cache = json.loads(path.read_text())
    assert cache["json"]
    cache["json"] = {k: [["$.planted", "planted error"]] for k in cache["json"]}
    path.write_text(json.dumps(cache))
    messages = [f.message for f in validate_registry(registry).findings]
    assert any("planted error" in m for m in messages)  # the cache is used: the test can see it
    path.write_text(json.dumps(cache))
    monkeypatch.setattr(validate_mod, "schema_digest", lambda: "another-schema")
    assert not any("planted error" in f.message for f in validate_registry(registry).findings)
    # the same bytes read under another schema are checked against that one
    v = validate_mod.Validator(registry, use_cache=True, since=None)
    rel = f"{TINY_BASE}/state/v1/train.json"
    assert v.load_json(rel, "train", "SCH003") is not None and not v.findings
    key = next(k for k in v.cache.json if k.startswith("train:"))
    v.cache.json[key] = [["$.planted", "planted error"]]
    v.load_json(rel, "miss", "SCH003")  # the code validate gives a schema error of a file
    assert not any(f.message == "$.planted: planted error" for f in v.findings)


def test_remembered_index_items_are_keyed_by_schema_digest(monkeypatch: Any) -> None:
    # S01
    import rwkv_registry.schemas as schemas_mod

    index = {"entries": [{"x": 1}]}
    memo: dict[str, Any] = {}
    first = schemas_mod.schema_errors("index", index, memo=memo)
    assert memo
    for k in memo:
        memo[k] = [[["planted"], "planted error"]]
    schemas_mod.forget_results()
    assert any(m == "planted error" for _, m in schemas_mod.schema_errors("index", index, memo=dict(memo)))
    monkeypatch.setattr(schemas_mod, "schema_digest", lambda: "another-schema")
    schemas_mod.forget_results()
    again = schemas_mod.schema_errors("index", index, memo=dict(memo))
    assert not any(m == "planted error" for _, m in again) and again == first
