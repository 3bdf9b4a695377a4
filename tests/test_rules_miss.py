"""MiSS adapter rules (MIS003-MIS015, MIS017): the embedded miss.json checked field by field (``check_manifest``,
directly and through `validate`), the targets against the base's architecture (``check_against_base``), the scan
of the D values, content_version and base_fingerprint, and index.json's record of the adapter.

The table of tests/test_validate_rules.py has each rule's basic passing and failing case; these are the cases of
branches that table does not reach. Most break one thing in the small valid registry (or in a MiSS manifest) and
assert the exact rule code, and usually the finding's path and message.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mutations import entry_edit, set_key
from regtools import MISS_A, TINY_ARCH, TINY_BASE, custom_miss, findings, messages_of, refresh, where, write_miss

from rwkv_registry.checks.miss import TargetSpec, check_against_base, check_manifest
from rwkv_registry.engine.validate import validate_registry


@pytest.fixture(scope="module")
def manifest(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The manifest of a valid MiSS package, as the registry's writer embeds it."""
    return write_miss(tmp_path_factory.mktemp("miss") / "adapter-final.pth")


def _manifest_codes(manifest: dict[str, Any], **edit: Any) -> list[tuple[str, str]]:
    from rwkv_registry.checks.miss import check_manifest

    m = json.loads(json.dumps(manifest)) | edit
    return [(f.code, f.message) for f in check_manifest(m, "a.pth")[0] if f.code != "MIS008"]


# --- miss.json: check_manifest (MIS003-MIS008, MIS017) --------------------------------------------------------------


def _set_target(i: int, key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def edit(m: dict[str, Any]) -> None:
        m["targets"][i][key] = value

    return edit


def _dtype(m: dict[str, Any]) -> None:
    m["dtype"] = "float32"


def _dup_target(m: dict[str, Any]) -> None:
    m["targets"].insert(1, dict(m["targets"][0]))


MANIFEST_CASES: dict[str, tuple[str, Callable[[dict[str, Any]], None], str]] = {
    "bad-dtype": (
        "MIS003",
        _dtype,
        "miss.json dtype is 'float32', the server requires 'bfloat16' or 'float16' (unsupported adapter format)",
    ),
    "bad-layer": (
        "MIS003",
        _set_target(1, "layer", -1),
        "miss.json targets[1].layer is -1, the server requires an integer 0…1023",
    ),
    "layer-1024": (
        "MIS003",
        _set_target(1, "layer", 1024),
        "miss.json targets[1].layer is 1024, the server requires an integer 0…1023",
    ),
    "bad-shape": (
        "MIS003",
        _set_target(1, "shape", [128]),
        "miss.json targets[1].shape is [128], not [out, rank] with 1 ≤ out ≤ 1048576",
    ),
    "bad-in-features": (
        "MIS003",
        _set_target(1, "in_features", 0),
        "miss.json targets[1].in_features is 0, the server requires an integer 1…1048576",
    ),
    "in-features-bool": (
        "MIS003",
        _set_target(1, "in_features", True),
        "miss.json targets[1].in_features is True, the server requires an integer 1…1048576",
    ),
    "dup-target": ("MIS007", _dup_target, "miss.json lists layer 0 att.receptance.weight twice"),
    "name-mismatch": (
        "MIS003",
        _set_target(1, "name", "blocks.9.att.key.weight.D"),
        "miss.json targets[1].name is 'blocks.9.att.key.weight.D', its layer and target say "
        "'blocks.0.att.key.weight.D' (the server refuses anything else: adapter target name mismatch)",
    ),
    "name-without-d": (
        "MIS003",
        _set_target(1, "name", "blocks.0.att.key.weight"),
        "miss.json targets[1].name is 'blocks.0.att.key.weight', its layer and target say "
        "'blocks.0.att.key.weight.D' (the server refuses anything else: adapter target name mismatch)",
    ),
    "name-missing": (
        "MIS003",
        lambda m: m["targets"][1].pop("name"),
        "miss.json targets[1].name is None, its layer and target say 'blocks.0.att.key.weight.D' (the server "
        "refuses anything else: adapter target name mismatch)",
    ),
    "rank-mismatch": (
        "MIS008",
        _set_target(1, "shape", [128, 2]),
        "miss.json targets[1].shape [128, 2] has rank 2, manifest rank is 4",
    ),
}


def test_valid_manifest_passes_the_checker(manifest: dict[str, Any]) -> None:
    """The writer's own manifest has no structural finding and every target is usable."""
    found, specs = check_manifest(manifest, "a.pth")
    assert found == [] and len(specs) == len(manifest["targets"])


@pytest.mark.parametrize("case", sorted(MANIFEST_CASES))
def test_manifest_branch_gives_exactly_its_code(case: str, manifest: dict[str, Any]) -> None:
    """A hand-edited miss.json broken in one place gets exactly one finding, of the right code."""
    code, edit, message = MANIFEST_CASES[case]
    m = copy.deepcopy(manifest)
    edit(m)
    found, specs = check_manifest(m, "a.pth")
    assert [(f.code, f.path, f.message) for f in found] == [(code, "a.pth", message)]
    # the broken target is not checked further; dtype is package-wide, a name or a schema detail not fatal
    skipped = 0 if case in ("bad-dtype", "name-mismatch", "name-without-d", "name-missing") else 1
    assert len(specs) == len(m["targets"]) - skipped


@pytest.mark.parametrize("case", sorted(MANIFEST_CASES))
def test_manifest_branch_reaches_validate(case: str, reg: Path) -> None:
    """The same broken miss.json inside a published adapter fails `validate` with that code."""
    code, edit, message = MANIFEST_CASES[case]
    custom_miss(reg / MISS_A, manifest_edit=edit)  # content_version recomputed for the edited manifest
    refresh(reg, MISS_A)
    assert message in where(reg, code)[MISS_A]


@pytest.mark.parametrize(
    ("edit", "code", "message"),
    [
        (
            {"format_version": True},
            "MIS003",
            "miss.json format_version is True, the server requires 1 (unsupported adapter format)",
        ),
        (
            {"format_version": 1.0},
            "MIS003",
            "miss.json format_version is 1.0, the server requires 1 (unsupported adapter format)",
        ),
        ({"rank": 0}, "MIS004", "miss.json rank is 0, the server accepts integers 1…1024"),
        ({"rank": True}, "MIS004", "miss.json rank is True, the server accepts integers 1…1024"),
        ({"scale": float("inf")}, "MIS005", "miss.json scale is inf, not a finite number"),
        (
            {"base_fingerprint": "AB" * 32},
            "MIS006",
            f"miss.json base_fingerprint is {'AB' * 32!r}, not 64 lower-case hex",
        ),
        ({"content_version": "x"}, "MIS006", "miss.json content_version is 'x', not 64 lower-case hex"),
    ],
    ids=["bool-version", "float-version", "rank-0", "rank-bool", "scale-inf", "upper-hex", "content-version"],
)
def test_manifest_field_rules(manifest: dict[str, Any], edit: dict[str, Any], code: str, message: str) -> None:
    """Mutants: the type test of the fixed fields dropped (true == 1, 1.0 == 1); rank 0 or a boolean rank accepted;
    scale not checked; upper-case hex accepted; content_version not checked."""
    assert (code, message) in _manifest_codes(manifest, **edit)


def test_manifest_rank_1024_is_the_largest_accepted(manifest: dict[str, Any]) -> None:
    """Mutant: `rank < 1024`."""
    codes = {c for c, _ in _manifest_codes(manifest, rank=1024, scale=8 / 1024)}
    assert "MIS004" not in codes
    assert "MIS004" in {c for c, _ in _manifest_codes(manifest, rank=1025)}


@pytest.mark.parametrize(("i", "shape"), [(0, [128, 4, 1]), (1, [0, 4])], ids=["three-dims", "zero-out"])
def test_manifest_target_shape_is_two_positive_sizes(manifest: dict[str, Any], i: int, shape: list[int]) -> None:
    """Mutants: a shape of more than two sizes, or a size 0, accepted."""
    targets = json.loads(json.dumps(manifest["targets"]))
    targets[i]["shape"] = shape
    assert (
        "MIS003",
        f"miss.json targets[{i}].shape is {shape}, not [out, rank] with 1 ≤ out ≤ 1048576",
    ) in _manifest_codes(manifest, targets=targets)


def test_manifest_a_boolean_layer_is_refused_by_the_hand_check(manifest: dict[str, Any]) -> None:
    """Mutant: a boolean layer (`true`, an int to Python) passed the layer check; only the schema fallback then
    caught it, with a message about JSON paths instead of the field's own."""
    targets = json.loads(json.dumps(manifest["targets"]))
    targets[0]["layer"] = True
    assert ("MIS003", "miss.json targets[0].layer is True, the server requires an integer 0…1023") in _manifest_codes(
        manifest, targets=targets
    )


def test_mis017_a_scale_off_by_a_ten_thousandth(manifest: dict[str, Any]) -> None:
    """Mutant: scale compared with alpha / rank at a 1 % tolerance instead of float rounding (1e-6)."""
    assert "MIS017" in {c for c, _ in _manifest_codes(manifest, scale=2.0002)}
    assert "MIS017" not in {c for c, _ in _manifest_codes(manifest, scale=2.000000001)}


# --- MIS009, MIS010: the tensors and their values -------------------------------------------------------------------


def test_mis009_also_when_a_target_tensor_is_missing(reg: Path) -> None:
    """Mutant: MIS009 only for tensors that are no target, not for fewer tensors than targets."""
    from mutations import replace_miss

    replace_miss(reg, tensors_edit=lambda t: t.pop("blocks.1.ffn.value.weight.D"))
    found = {f.code: f.message for f in findings(reg) if f.path == MISS_A and f.code.startswith("MIS")}
    assert found.get("MIS009") == "11 tensors for 12 targets"
    assert "MIS008" in found


def test_scan_values_limits() -> None:
    """Mutants: bf16 65280 (0x477F, the largest value within ±65504) counted as too big; fp16 Inf missed."""
    from rwkv_registry.checks.miss import scan_values

    assert scan_values(bytes.fromhex("7f47"), "bfloat16") == (0, None)
    assert scan_values(bytes.fromhex("8047"), "bfloat16") == (1, 65536.0)
    assert scan_values(bytes.fromhex("007c"), "float16") == (1, float("inf"))
    assert scan_values(bytes.fromhex("ff7b"), "float16") == (0, None)


def test_mis010_a_bad_value_in_a_later_tensor(reg: Path) -> None:
    """Mutant: only the first target's D values scanned; the rule table poisons the first tensor."""
    from mutations import replace_miss

    from rwkv_registry.formats.pthwrite import RawTensor

    def poison_last(tensors: dict[str, Any]) -> None:
        name = list(tensors)[-1]
        t = tensors[name]
        tensors[name] = RawTensor(t.dtype, t.shape, t.data[:-2] + b"\x80\x7f")  # bf16 +Inf, the last value

    replace_miss(reg, tensors_edit=poison_last)
    assert messages_of(reg, "MIS010") == [
        "blocks.1.ffn.value.weight.D: 1 value(s) refused: nonfinite adapter weight (first: inf)"
    ]


# --- MIS011, MIS012, MIS013: content_version and base_fingerprint ---------------------------------------------------


def _embedded_manifest(path: Path) -> dict[str, Any]:
    from rwkv_registry.formats.ckpt import open_checkpoint

    raw = open_checkpoint(path.read_bytes()).miss_manifest
    assert raw is not None
    return dict(json.loads(bytes(raw)))


def test_mis011_a_content_version_differing_only_in_its_last_digit(reg: Path) -> None:
    """Mutant: the embedded content_version compared with the recomputed one by the 16 digits the message shows."""
    from mutations import replace_miss

    real = _embedded_manifest(reg / MISS_A)["content_version"]
    near = real[:-1] + ("0" if real[-1] != "0" else "1")
    replace_miss(reg, manifest_edit=lambda m: set_key(m, "content_version", near), fix_cv=False)
    assert len(messages_of(reg, "MIS011")) == 1


def test_mis012_compares_the_index_with_the_embedded_content_version(reg: Path) -> None:
    """Mutant: MIS012 compared index.json with the content_version recomputed from the bytes instead of the one
    embedded in miss.json: a tampered file (MIS011) whose index.json records what it embeds got a second,
    self-contradicting MIS012, and a file whose content_version cannot be recomputed (MIS008) got one too."""
    from mutations import miss_tensor_dtype, replace_miss

    replace_miss(reg, manifest_edit=lambda m: set_key(m, "content_version", "1" * 64), fix_cv=False)
    codes = {f.code for f in findings(reg) if f.path == MISS_A}
    assert "MIS011" in codes and "MIS012" not in codes
    replace_miss(reg, tensors_edit=miss_tensor_dtype)
    codes = {f.code for f in findings(reg) if f.path == MISS_A}
    assert "MIS008" in codes and "MIS012" not in codes


def test_mis013_a_fingerprint_differing_only_in_its_last_digit(reg: Path) -> None:
    """Mutant: base_fingerprint compared by a prefix (the 16 digits a message shows): the whole sha256 must match."""
    from mutations import replace_miss
    from regtools import TINY_SHA

    near = TINY_SHA[:-1] + ("0" if TINY_SHA[-1] != "0" else "1")
    replace_miss(reg, manifest_edit=lambda m: set_key(m, "base_fingerprint", near))
    assert messages_of(reg, "MIS013") == [f"base_fingerprint {near} is not the sha256 of base {TINY_BASE} ({TINY_SHA})"]


# --- MIS014: the targets against the base (check_against_base) ------------------------------------------------------


def test_mis014_layer_beyond_base(manifest: dict[str, Any]) -> None:
    """An adapter trained on a deeper model targets a layer the base does not have."""
    t = manifest["targets"][0]
    spec = TargetSpec(2, t["target"], f"blocks.2.{t['target']}.D", t["in_features"], tuple(t["shape"]))
    found = check_against_base([spec], TINY_ARCH, "a.pth")
    assert [(f.code, f.message) for f in found] == [
        ("MIS014", f"target blocks.2.{t['target']}.D: layer 2 but the base has 2 layers")
    ]
    last = TargetSpec(1, spec.target, f"blocks.1.{spec.target}.D", spec.in_features, spec.shape)
    assert check_against_base([last], TINY_ARCH, "a.pth") == []  # the base's last layer is fine


def test_mis014_layer_beyond_base_in_registry(reg: Path) -> None:
    """A 3-layer adapter (otherwise well formed) published under the 2-layer base."""
    custom_miss(reg / MISS_A, arch=dict(TINY_ARCH, n_layer=3))
    refresh(reg, MISS_A)
    report = validate_registry(reg, use_cache=False)
    assert {f.code for f in report.findings if f.code.startswith("MIS")} == {"MIS014"}
    messages = [f.message for f in report.findings if f.code == "MIS014"]
    assert len(messages) == 6 and all("layer 2 but the base has 2 layers" in m for m in messages)


@pytest.mark.parametrize(("out", "in_features"), [(129, 128), (128, 129)], ids=["out", "in"])
def test_mis014_out_and_in_sizes_are_each_compared(out: int, in_features: int) -> None:
    """Mutants: only one of the two sizes compared with the base (the rule table changes both at once)."""
    from rwkv_registry.checks.miss import TargetSpec, check_against_base

    spec = TargetSpec(0, "att.key.weight", "blocks.0.att.key.weight.D", in_features, (out, 4))
    found = check_against_base([spec], TINY_ARCH, "a.pth")
    assert [f.message for f in found] == [
        f"target blocks.0.att.key.weight.D: out {out}, in_features {in_features}; the base needs out 128, "
        "in_features 128"
    ]


def test_mis014_the_first_target_is_checked_against_the_base(reg: Path) -> None:
    """Mutant: the architecture check skipped the manifest's first target (the rule table breaks all of them)."""
    from mutations import replace_miss

    replace_miss(reg, manifest_edit=lambda m: m["targets"][0].update(in_features=129))
    assert messages_of(reg, "MIS014") == [
        "target blocks.0.att.receptance.weight.D: out 128, in_features 129; the base needs out 128, in_features 128"
    ]


# --- MIS015: index.json's record of the adapter ---------------------------------------------------------------------


def test_mis015_scale_equal_within_float_rounding_passes(reg: Path) -> None:
    """Mutant: `_same` compares exactly; a scale of 2.0 recorded as 2.0000000000001 is the same number."""
    entry_edit(MISS_A, lambda e: set_key(e, "miss", dict(e["miss"], scale=2.0000000000001)))(reg)
    assert findings(reg, "MIS015") == []
    entry_edit(MISS_A, lambda e: set_key(e, "miss", dict(e["miss"], scale=2.001)))(reg)
    assert [f.message.split(" is ")[0] for f in findings(reg, "MIS015")] == ["index.json scale"]
