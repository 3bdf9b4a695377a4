"""MiSS adapters: the manifest, its ``content_version``, the server's refusal rules, and the writer.

Everything here is read from rwkv_lightning_cuda itself (Alic-Li/rwkv_lightning_cuda, the commit of
``src/miss/adapter.cpp`` cited as 43ceb30; FORMATS §4 "Verified against the real loader and writer"):

- ``tensor_name()``: a target's tensor is ``"blocks." + layer + "." + target + ".D"``, and the manifest's
  ``targets[].name`` is that same string, **with** ``.D`` (``adapter_manifest()``: ``v["name"] =
  tensor_name(t)``); ``load_package()`` throws "adapter target name mismatch" for anything else.
- ``content_version()``: sha256 of the manifest without ``content_version``, serialized by JsonCpp's
  ``StreamWriterBuilder`` with ``indentation = ""`` (:mod:`rwkv_registry.formats.jsoncpp`), then the 16-bit D values
  of every target, little-endian, in ``targets`` order. ``load_package`` removes ``tensor_source`` from an
  embedded manifest before that (``p->manifest.removeMember("tensor_source")``).
- ``load_package()``'s checks, each cited where it is applied (:func:`check_manifest`, :func:`server_values`,
  :func:`budget_findings` and :mod:`rwkv_registry.engine.facts`); ``docs/miss.md`` lists them with their codes.

:func:`write_miss_file` writes a package byte for byte as ``save_adapter_pth`` + ``write_pth`` do (used by the
demo, the tiny-model factory and the smoke trainer); ``tests/conformance`` holds writers made from the C++ lines
and checks the bytes are the same.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import struct
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, BinaryIO

from rwkv_registry.core.rules import E, Finding, Rule, Rulebook, W
from rwkv_registry.core.textsafe import clip
from rwkv_registry.formats import jsoncpp
from rwkv_registry.formats.ckpt import MANIFEST_TOO_LARGE_HINT
from rwkv_registry.formats.jsonload import is_finite_number
from rwkv_registry.index.arch import miss_target_shape

# --- the rules ----------------------------------------------------------------------------------------------------

RULES = Rulebook(
    # Each rule is one refusal of rwkv_lightning_cuda's loader (Alic-Li/rwkv_lightning_cuda src/miss/adapter.cpp
    # load_package, quoted in the title or the message); docs/miss.md maps every server rule to its code and test.
    Rule(
        "MIS001",
        E,
        "MiSS adapter without archive/miss.json (PTH has no embedded MiSS metadata)",
        "Export the adapter with rwkv_miss_tune's single-file writer, which embeds the manifest as the zip entry "
        "archive/miss.json (the only name the server looks up); a legacy adapter.json + adapter.pth folder is "
        "published with `rwkv-registry add REGISTRY FOLDER …`, which embeds its adapter.json.",
    ),
    Rule(
        "MIS002",
        E,
        "MiSS manifest larger than 8 MiB (adapter manifest too large)",
        MANIFEST_TOO_LARGE_HINT,  # the reader refuses such a manifest unread (formats/ckpt.py)
    ),
    Rule(
        "MIS003",
        E,
        "miss.json invalid (unsupported adapter format, invalid/duplicate adapter target, adapter target name "
        "mismatch)",
        'The manifest must be UTF-8 JSON with format_version 1, method "miss", dtype "bfloat16" or "float16", '
        'layout "modulo_rank_zero_pad", kind "inference_adapter", and per target name "blocks.L.<target>.D" (the '
        "tensor's name with its .D suffix), layer 0…1023, in_features and shape [out, rank] (1…2^20) as "
        "schemas/miss.schema.json says; re-export the adapter with rwkv_miss_tune rather than editing it.",
    ),
    Rule(
        "MIS004",
        E,
        "MiSS rank out of range (invalid adapter metadata)",
        "Write rank as a JSON integer 1…1024 (the server's limit), the second size of every D tensor; re-export.",
    ),
    Rule(
        "MIS005",
        E,
        "MiSS alpha or scale not a finite float32 (invalid adapter metadata)",
        "Write alpha and scale as JSON numbers (not strings or booleans) that are finite as float32, the type the "
        "server reads them as (|x| < 3.4e38); scale = alpha / rank.",
    ),
    Rule(
        "MIS006",
        E,
        "MiSS hash field is not 64 hex characters (invalid adapter metadata)",
        "base_fingerprint is the sha256 of the base file, content_version the adapter's digest: both 64 lower-case "
        "hex characters; re-export the adapter with rwkv_miss_tune.",
    ),
    Rule(
        "MIS007",
        E,
        "MiSS targets empty or duplicated (invalid adapter metadata, invalid/duplicate adapter target)",
        "List each (layer, target) once in targets, and at least one; re-export the adapter.",
    ),
    Rule(
        "MIS008",
        E,
        "MiSS target tensor missing or of the wrong dtype or shape (adapter tensor shape/dtype mismatch)",
        "Each target needs a tensor blocks.L.<target>.D of the manifest's dtype and shape [out, rank] (in a "
        "training checkpoint, blocks.L.<target>.D.master in float32); re-export the adapter with rwkv_miss_tune.",
    ),
    Rule(
        "MIS009",
        E,
        "MiSS tensor count differs from the target count (adapter tensor count mismatch)",
        "An adapter holds exactly one D tensor per target and nothing else (a training checkpoint 4 per target and "
        "initial_state); remove the extra tensors or list them in targets, and re-export.",
    ),
    Rule(
        "MIS010",
        E,
        "MiSS value non-finite or beyond ±65504 (nonfinite adapter weight, adapter weight overflows FP16, adapter "
        "cannot be represented by the FP16 inference runtime)",
        "The server refuses NaN, Inf and |x| > 65504; training diverged: publish an earlier checkpoint's adapter, or "
        "retrain with a lower learning rate.",
    ),
    Rule(
        "MIS011",
        E,
        "content_version does not match the file (adapter content digest mismatch)",
        "The embedded content_version is not the sha256 of the manifest and D values; re-export the "
        "adapter, never edit miss.json by hand.",
    ),
    Rule(
        "MIS012",
        E,
        "content_version differs from index.json",
        "index.json must record the content_version embedded in the file; fix index.json (re-run add).",
    ),
    Rule(
        "MIS013",
        E,
        "base_fingerprint is not the sha256 of the base holding the file",
        "The adapter was trained on another base file; the server refuses it. Move it under the base it "
        "was trained on, or retrain on this base. When GIT007 fires for the base and the fingerprint is its "
        "published sha256, the edit of index.json is the cause: restore the sha256 instead.",
    ),
    Rule(
        "MIS014",
        E,
        "MiSS target does not fit the base architecture",
        "Target out/in sizes must match the base (n_embd, ffn size); the adapter was made for another model size: "
        "add it under the base it was trained on.",
    ),
    Rule(
        "MIS015",
        E,
        "index.json MiSS fields differ from the manifest",
        "rank, alpha, scale and dtype in index.json must equal the manifest; re-run `rwkv-registry add`.",
    ),
    Rule(
        "MIS016",
        E,
        "unknown MiSS target (invalid/duplicate adapter target)",
        "Targets are att.receptance|key|value|output.weight, ffn.key.weight and ffn.value.weight of layers 0…L-1; "
        "remove the others from targets and re-export.",
    ),
    Rule(
        "MIS017",
        W,
        "MiSS scale is not alpha / rank",
        "The server uses the manifest's scale; re-export if alpha or rank was edited.",
    ),
    Rule(
        "MIS018",
        E,
        "a rwkv_miss_tune training checkpoint (training.pth), not the inference adapter",
        "Publish the adapter-final.pth that rwkv_miss_tune writes when training ends, not checkpoint-N/training.pth: "
        "the checkpoint is for resuming (fp32 masters, gradients, Adam moments: 8 times the adapter's bytes).",
    ),
    Rule(
        "MIS019",
        E,
        'miss.json tensor_source is not "D" or "master" (unsupported adapter tensor source)',
        'Remove tensor_source (an adapter\'s default is "D") or write "D"; only a training checkpoint says "master".',
    ),
    Rule(
        "MIS020",
        W,
        "MiSS D payload over the server's default adapter budgets",
        "Start the server with a larger RWKV_ADAPTER_RAM_MIB (default 1024), RWKV_ADAPTER_GPU_MIB (512) or "
        "RWKV_ADAPTER_STAGING_MIB (128), in MiB, or train with a smaller rank or fewer targets.",
    ),
    Rule(
        "MIS021",
        E,
        "legacy two-file MiSS package (adapter.json + adapter.pth) inside the registry",
        "Publish it with `rwkv-registry add REGISTRY FOLDER …` from outside the registry: add checks it with the "
        "server's rules and writes the single-file adapter-final.pth (same tensors and content_version, its "
        "adapter.json embedded); then delete the folder.",
    ),
    Rule(
        "MIS022",
        E,
        "checkpoint.json of a legacy training checkpoint refused by the server (invalid legacy MiSS checkpoint)",
        'The server needs kind "miss_training_checkpoint", tensor_digest the sha256 of training.pth, and config '
        "rank, alpha and base_fingerprint; keep the checkpoint.json the trainer wrote beside its training.pth.",
    ),
)
finding = RULES.finding

# MIS013's hint when GIT007 shows that the base's sha256, not the adapter, changed (checks/git.py,
# blame_the_base_edit)
MIS013_BY_BASE_EDIT = (
    "The adapter is where it belongs: its base's sha256 was changed in index.json after it was published (see "
    "GIT007). Restore the published sha256 (`git diff index.json`); do not move or retrain the adapter."
)

MISS_TARGETS = (  # adapter.cpp target_names, in TargetCount order
    "att.receptance.weight",
    "att.key.weight",
    "att.value.weight",
    "att.output.weight",
    "ffn.key.weight",
    "ffn.value.weight",
)
MANIFEST_MAX_BYTES = 8 * 2**20  # load_package: entry->uncompressed_size > (8ULL << 20) -> "adapter manifest too large"
MISS_DTYPES = ("bfloat16", "float16")
MANIFEST_ENTRY = "archive/miss.json"  # load_package: archive.value().find_entry("archive/miss.json"), exact name
TENSOR_SOURCES = ("D", "master")  # load_package: get("tensor_source", "D"); else "unsupported adapter tensor source"
MAX_LAYER = 1024  # load_package: t.layer < 0 || t.layer >= 1024
MAX_WIDTH = 1 << 20  # load_package: t.in <= 0 || t.in > (1 << 20) || t.out <= 0 || t.out > (1 << 20)
FP16_MAX = 65504.0  # load_package: std::abs(x) > 65504.0f -> "adapter cannot be represented by the FP16 ..."
# adapter_cache(): budget(name, fallback) in MiB from the environment, else the fallback; what each refuses
ADAPTER_BUDGETS: tuple[tuple[str, int, str, str], ...] = (
    (
        "RWKV_ADAPTER_RAM_MIB",
        1 << 30,
        "RAM budget",
        'registration is refused ("adapter RAM budget exceeded", load_package; "adapter RAM admission denied", '
        "register_adapter)",
    ),
    (
        "RWKV_ADAPTER_GPU_MIB",
        512 << 20,
        "GPU budget",
        'it registers, but the first request that uses it fails ("adapter exceeds GPU budget", admit_gpu)',
    ),
    (
        "RWKV_ADAPTER_STAGING_MIB",
        128 << 20,
        "pinned staging budget",
        'it registers, but the first request that uses it fails ("adapter exceeds pinned staging budget", acquire)',
    ),
)
_HEX64 = re.compile(r"^[0-9a-f]{64}$")
FIXED_FIELDS = {"format_version": 1, "method": "miss", "layout": "modulo_rank_zero_pad", "kind": "inference_adapter"}
# a training checkpoint's records (trainer.cpp Trainer::checkpoint): four fp32 per target, then initial_state
TRAINING_PARTS = ("master", "gradient", "adam_m", "adam_v")
_TRAINING_NAME = re.compile(
    r"^blocks\.\d+\.(?:" + "|".join(re.escape(t) for t in MISS_TARGETS) + r")\.D\.(?:master|gradient|adam_m|adam_v)$"
)


def tensor_name(layer: int, target: str) -> str:
    """The D tensor of ``target`` in ``layer``, and the manifest's ``targets[].name`` for it (adapter.cpp
    ``tensor_name()``: ``"blocks." + std::to_string(t.layer) + "." + target_names[t.target] + ".D"``)."""
    return f"blocks.{layer}.{target}.D"


def is_training_record(name: str) -> bool:
    """Whether ``name`` is one of the per-target records of a training checkpoint (``blocks.L.<target>.D.master``,
    ``.gradient``, ``.adam_m``, ``.adam_v``: trainer.cpp ``Trainer::checkpoint``)."""
    return bool(_TRAINING_NAME.match(name))


def looks_like_training_checkpoint(names: Iterable[str]) -> bool:
    """A ``training.pth`` by its records alone (the legacy form has no manifest): ``initial_state`` or
    ``….D.master`` records, and nothing but training records."""
    names = list(names)
    return (
        bool(names)
        and any(n == "initial_state" or n.endswith(".D.master") for n in names)
        and all(n == "initial_state" or is_training_record(n) for n in names)
    )


def float32_of(x: float) -> float:
    """``x`` rounded to float32 and widened back to a double, as C++ ``float`` -> ``Json::Value(double)`` does
    (the trainer's ``m["alpha"] = alpha_``, a ``float``); OverflowError when float32 cannot hold it."""
    value: float = struct.unpack("<f", struct.pack("<f", x))[0]
    return value


def float32_finite(x: Any) -> bool:
    """load_package's test of alpha and scale: JsonCpp ``isNumeric()`` (an int, uint or real; never a bool:
    json_value.cpp ``isNumeric() { return isDouble(); }``, ``isDouble()`` = int/uint/real) and
    ``std::isfinite(asFloat())``: a double that is finite but beyond float32 (1e39) is infinite there."""
    if not is_finite_number(x):
        return False
    try:
        float32_of(float(x))
    except OverflowError:
        return False
    return True


def content_version(manifest: Mapping[str, Any], d_chunks: Iterable[bytes | memoryview]) -> str:
    """The server's content version of a manifest and its D bytes (in ``targets`` order): adapter.cpp
    ``content_version()``, ``m.removeMember("content_version")``, ``json(m)``, then the 16-bit data."""
    body = {k: v for k, v in manifest.items() if k != "content_version"}
    h = hashlib.sha256(jsoncpp.dumps_bytes(body))
    for chunk in d_chunks:
        h.update(chunk)
    return h.hexdigest()


@dataclass(frozen=True)
class TargetSpec:
    """One usable target of a manifest (only built when the target passed the structural rules)."""

    layer: int
    target: str
    tensor: str
    in_features: int
    shape: tuple[int, int]


def check_manifest(manifest: Any, path: str) -> tuple[list[Finding], list[TargetSpec]]:
    """load_package's checks of a parsed manifest (no tensors, no base needed), after it removed
    ``tensor_source``. Returns the findings and the targets that can be checked further, in manifest order.

    Deliberately stricter than the server (docs/miss.md, "exceptions"): ``rank``, ``layer``, ``in_features`` and
    ``shape`` must be JSON integers (JsonCpp's ``asInt()`` would also take ``16.0``, ``16.5`` or ``true``), and
    ``shape`` exactly two of them (the server reads ``shape[0]`` and ``shape[1]`` only).
    """
    out: list[Finding] = []
    if not isinstance(manifest, dict):
        return [finding("MIS003", path, "miss.json is not a JSON object")], []
    # "unsupported adapter format": m["format_version"] != 1 || m["method"] != "miss" || dtype not float16/bfloat16
    # || m["layout"] != "modulo_rank_zero_pad" || m["kind"] != "inference_adapter" (Json::Value ==: same type too)
    for key, want in FIXED_FIELDS.items():
        got = manifest.get(key)
        if got != want or type(got) is not type(want):
            out.append(
                finding(
                    "MIS003",
                    path,
                    f"miss.json {key} is {_short(got)}, the server requires {want!r} (unsupported adapter format)",
                    hint=f"Write {key}: {jsoncpp.dumps(want)}, as rwkv_miss_tune's adapter_manifest() does (the same "
                    "JSON type: 1, not 1.0 or true); better, re-export the adapter with rwkv_miss_tune.",
                )
            )
    dtype = manifest.get("dtype")
    if dtype not in MISS_DTYPES:
        out.append(
            finding(
                "MIS003",
                path,
                f"miss.json dtype is {_short(dtype)}, the server requires 'bfloat16' or 'float16' (unsupported "
                "adapter format)",
                hint='Write dtype "bfloat16" (or "float16" for an fp16 adapter), the type of its D tensors.',
            )
        )
    # "invalid adapter metadata": rank <= 0 || rank > 1024 (asInt()), scale/alpha !isNumeric() || !isfinite(asFloat())
    rank: Any = manifest.get("rank")  # any JSON value
    rank_ok = isinstance(rank, int) and not isinstance(rank, bool) and 1 <= rank <= 1024
    if not rank_ok:
        out.append(finding("MIS004", path, f"miss.json rank is {_short(rank)}, the server accepts integers 1…1024"))
    for key in ("alpha", "scale"):
        value = manifest.get(key)
        if not float32_finite(value):
            why = (
                "finite as a double but not as the float32 the server reads it as (asFloat())"
                if is_finite_number(value)
                else "a boolean, which JsonCpp's isNumeric() does not count as a number"
                if isinstance(value, bool)
                else "not a finite number"
            )
            out.append(finding("MIS005", path, f"miss.json {key} is {_short(value)}, {why}"))
    if rank_ok and float32_finite(manifest.get("alpha")) and float32_finite(manifest.get("scale")):
        expected = float(manifest["alpha"]) / rank
        if not math.isclose(float(manifest["scale"]), expected, rel_tol=1e-6, abs_tol=1e-12):
            out.append(
                finding("MIS017", path, f"miss.json scale is {manifest['scale']!r} but alpha/rank is {expected!r}")
            )
    for key in ("base_fingerprint", "content_version"):
        value = manifest.get(key)
        if not (isinstance(value, str) and _HEX64.match(value)):
            out.append(finding("MIS006", path, f"miss.json {key} is {_short(value)}, not 64 lower-case hex"))
    targets = manifest.get("targets")
    specs: list[TargetSpec] = []
    if not isinstance(targets, list) or not targets:  # !m["targets"].isArray() || m["targets"].empty()
        out.append(finding("MIS007", path, "miss.json targets is empty or not a list"))
        return out, specs
    seen: set[tuple[int, str]] = set()
    misnamed: list[tuple[int, Any, str]] = []  # one finding for them all: an old writer names every target so
    for i, t in enumerate(targets):
        where = f"targets[{i}]"
        if not isinstance(t, dict):
            out.append(
                finding(
                    "MIS003",
                    path,
                    f"miss.json {where} is not an object",
                    hint="Each target is an object {name, layer, target, in_features, shape}.",
                )
            )
            continue
        layer, target = t.get("layer"), t.get("target")
        # "invalid/duplicate adapter target": unknown target, layer outside 0…1023, in/out outside 1…2^20,
        # shape[1] != rank, or a (layer, target) seen before
        if not (isinstance(layer, int) and not isinstance(layer, bool) and 0 <= layer < MAX_LAYER):
            out.append(
                finding(
                    "MIS003",
                    path,
                    f"miss.json {where}.layer is {_short(layer)}, the server requires an integer 0…{MAX_LAYER - 1}",
                    hint=f"Write {where}.layer as the block index (an integer from 0) of the tensor it adapts.",
                )
            )
            continue
        if target not in MISS_TARGETS:
            out.append(finding("MIS016", path, f"miss.json {where}.target is {_short(target)}"))
            continue
        if (layer, target) in seen:
            out.append(finding("MIS007", path, f"miss.json lists layer {layer} {target} twice"))
            continue
        seen.add((layer, target))
        expected = tensor_name(layer, target)
        if t.get("name") != expected:  # if (v["name"].asString() != name) -> "adapter target name mismatch"
            misnamed.append((i, t.get("name"), expected))
        shape = t.get("shape")
        in_features = t.get("in_features")
        if not (
            isinstance(shape, list)
            and len(shape) == 2
            and all(isinstance(s, int) and not isinstance(s, bool) and s >= 1 for s in shape)
            and shape[0] <= MAX_WIDTH
        ):
            out.append(
                finding(
                    "MIS003",
                    path,
                    f"miss.json {where}.shape is {_short(shape)}, not [out, rank] with 1 ≤ out ≤ {MAX_WIDTH}",
                    hint=f"Write {where}.shape as [out, rank]: the D tensor's shape, out the output width of the "
                    "linear layer it adapts.",
                )
            )
            continue
        if not (isinstance(in_features, int) and not isinstance(in_features, bool) and 1 <= in_features <= MAX_WIDTH):
            out.append(
                finding(
                    "MIS003",
                    path,
                    f"miss.json {where}.in_features is {_short(in_features)}, the server requires an integer "
                    f"1…{MAX_WIDTH}",
                    hint=f"Write {where}.in_features as the input width K of the linear layer it adapts.",
                )
            )
            continue
        if rank_ok and shape[1] != rank:
            out.append(
                finding("MIS008", path, f"miss.json {where}.shape {shape} has rank {shape[1]}, manifest rank is {rank}")
            )
            continue
        specs.append(TargetSpec(layer, target, expected, in_features, (shape[0], shape[1])))
    if misnamed:
        i, got, expected = misnamed[0]
        more = f"; {len(misnamed) - 1} more target(s) named otherwise too" if len(misnamed) > 1 else ""
        out.append(
            finding(
                "MIS003",
                path,
                f"miss.json targets[{i}].name is {_short(got)}, its layer and target say {expected!r} (the server "
                f"refuses anything else: adapter target name mismatch){more}",
                hint=f"Write each targets[].name as the tensor's name with its '.D' suffix ({expected!r} here), as "
                'rwkv_miss_tune\'s adapter_manifest() writes it ("blocks." + layer + "." + target + ".D"); '
                "then recompute content_version, or better re-export the adapter with rwkv_miss_tune.",
            )
        )
    if not out:  # what the checks above do not cover, schemas/miss.schema.json has the last word
        from rwkv_registry.schemas import schema_errors

        out += [
            finding(
                "MIS003",
                path,
                f"miss.json {where}: {msg}",
                hint="Make the manifest follow schemas/miss.schema.json (the fields rwkv_miss_tune writes).",
            )
            for where, msg in schema_errors("miss", manifest)
        ]
    return out, specs


def check_against_base(specs: list[TargetSpec], arch: Mapping[str, Any], path: str) -> list[Finding]:
    """Target layers, out sizes and ``in_features`` must fit the base architecture."""
    out: list[Finding] = []
    n_layer = int(arch["n_layer"])
    for s in specs:
        if s.layer >= n_layer:
            out.append(finding("MIS014", path, f"target {s.tensor}: layer {s.layer} but the base has {n_layer} layers"))
            continue
        want_out, want_in = miss_target_shape(arch, s.target)
        if s.shape[0] != want_out or s.in_features != want_in:
            out.append(
                finding(
                    "MIS014",
                    path,
                    f"target {s.tensor}: out {s.shape[0]}, in_features {s.in_features}; "
                    f"the base needs out {want_out}, in_features {want_in}",
                )
            )
    return out


def unmanifested_finding(path: str, names: Iterable[str]) -> Finding | None:
    """MIS001 for a file recorded as a MiSS adapter that holds D tensors (``names``) but no ``archive/miss.json``
    manifest: the server reads the manifest to know what they are. ``None`` when it holds none."""
    if any(n.endswith(".D") for n in names):
        return finding("MIS001", path, "the file holds D tensors but no archive/miss.json manifest")
    return None


LEGACY_FILES = ("adapter.json", "adapter.pth")  # the legacy two-file package: manifest, then tensors


def legacy_package_findings(
    folder: str, content: Iterable[Finding] | None, content_version: str | None = None
) -> list[Finding]:
    """MIS021 for a legacy two-file MiSS package (``<folder>/adapter.json`` + ``adapter.pth``) inside the registry,
    which the layout does not publish, with the server's verdict on it: ``content`` is what the server's rules say of
    its adapter.pth (an error among them: it would refuse it; none: it would load it, ``content_version`` named);
    ``None`` where the adapter.pth was not read (a Hub listing does not download it). The content findings follow
    the MIS021 finding, so the user reads the verdict before its reasons."""
    manifest, tensors = LEGACY_FILES
    form = f"a legacy two-file MiSS package ({manifest} + {tensors}), not the published form adapter-final.pth"
    if content is None:
        verdict = f"its {tensors} is not downloaded here: `rwkv-registry pull` it and validate the copy for the "
        return [finding("MIS021", folder, f"{form}; {verdict}server's verdict")]
    reasons = list(content)
    errors = sum(1 for f in reasons if f.severity == E)
    verdict = (
        f"the server would refuse it ({errors} finding(s) on {tensors} say why)"
        if errors
        else f"the server would load it (content_version {content_version})"
    )
    return [finding("MIS021", folder, f"{form}; {verdict}"), *reasons]


def _same(a: Any, b: Any) -> bool:
    """Equal, numbers within float rounding (a scale of 2.0 written as 2 or 2.0000000001)."""
    if is_finite_number(a) and is_finite_number(b):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    return bool(a == b)


def entry_manifest_findings(
    path: str, record: Mapping[str, Any], manifest: Mapping[str, Any], base: Mapping[str, Any] | None
) -> list[Finding]:
    """The rules between an adapter's index entry and its embedded manifest: MIS012 (the recorded
    ``content_version`` is not the embedded one), MIS015 (rank, alpha, scale or dtype recorded otherwise than in the
    manifest; numbers within float rounding are the same), MIS013 (``base_fingerprint`` is not the sha256 index.json
    records for the entry's ``base``). ``record`` is the entry's ``miss`` object ({} without one: SCH002 says so);
    a key it lacks is not compared. The shapes against the base's architecture are :func:`check_against_base`'s."""
    out: list[Finding] = []
    embedded = manifest.get("content_version")
    if "content_version" in record and record.get("content_version") != embedded:
        out.append(
            finding(
                "MIS012",
                path,
                f"index.json records content_version {record.get('content_version')}, the file embeds {embedded}",
            )
        )
    for key in ("rank", "alpha", "scale", "dtype"):
        if key in record and not _same(record.get(key), manifest.get(key)):
            out.append(
                finding(
                    "MIS015", path, f"index.json {key} is {record.get(key)!r}, the manifest says {manifest.get(key)!r}"
                )
            )
    recorded = base.get("sha256") if isinstance(base, Mapping) else None
    if base is not None and isinstance(recorded, str) and manifest.get("base_fingerprint") != recorded:
        out.append(
            finding(
                "MIS013",
                path,
                f"base_fingerprint {manifest.get('base_fingerprint')} is not the "
                f"sha256 of base {base.get('name')} ({recorded})",
                base=base.get("name"),
                base_fingerprint=manifest.get("base_fingerprint"),
            )
        )
    return out


def payload_bytes(specs: Iterable[TargetSpec]) -> int:
    """Bytes of the 16-bit D data the server keeps for these targets (``p->data.size() * 2``)."""
    return sum(s.shape[0] * s.shape[1] * 2 for s in specs)


def budget_findings(size: int, path: str) -> list[Finding]:
    """MIS020 warnings for a D payload of ``size`` bytes over the server's default adapter budgets (adapter.cpp
    ``adapter_cache()``: RWKV_ADAPTER_RAM_MIB 1 GiB, RWKV_ADAPTER_GPU_MIB 512 MiB, RWKV_ADAPTER_STAGING_MIB 128 MiB,
    in MiB when set). One warning, the tightest budget it exceeds first."""
    over = [(env, limit, what, effect) for env, limit, what, effect in ADAPTER_BUDGETS if size > limit]
    if not over:
        return []
    over.sort(key=lambda b: b[1])
    need = -(-size // (1 << 20))
    parts = [f"{what} {limit >> 20} MiB ({env}): {effect}" for env, limit, what, effect in over]
    envs = " and ".join(f"{env}={need}" for env, *_ in over)
    return [
        finding(
            "MIS020",
            path,
            f"the D payload is {size / (1 << 20):.1f} MiB, over the server's default " + "; ".join(parts),
            hint=f"Start the server with {envs} (or more; MiB), or train with a smaller rank or fewer targets.",
        )
    ]


def server_f16_bits(values: Any) -> Any:
    """float32 -> float16 bits exactly as the server converts an fp32 ``.master`` tensor (pth_tensor.cpp
    ``float_to_f16_bits``): ties rounded away from zero (``mant + 0x1000``), not to even as torch and the GPU's
    ``__float2half_rn`` do; magnitudes under 2^-24 to a signed 0 (``exp < -24``: nearest would give 2^-24 from 2^-25
    up); beyond ±65504 (from 65520 up, by that rounding) Inf; NaN 0x7e00."""
    import numpy as np

    bits = np.ascontiguousarray(values, dtype="<f4").view("<u4").astype(np.int64)
    sign = (bits >> 16) & 0x8000
    exp = ((bits >> 23) & 0xFF) - 127
    mant = bits & 0x7FFFFF
    out = np.zeros_like(bits)
    special = exp == 128
    out[special] = sign[special] | np.where(mant[special] == 0, 0x7C00, 0x7E00)
    big = (exp > 15) & ~special
    out[big] = sign[big] | 0x7C00
    normal = (exp >= -14) & (exp <= 15)
    half_exp = exp[normal] + 15
    half_mant = mant[normal] + 0x1000
    carry = (half_mant & 0x800000) != 0
    half_mant = np.where(carry, 0, half_mant)
    half_exp = half_exp + carry
    out[normal] = np.where(half_exp >= 31, sign[normal] | 0x7C00, sign[normal] | (half_exp << 10) | (half_mant >> 13))
    tiny = exp < -24
    out[tiny] = sign[tiny]
    sub = (exp >= -24) & (exp < -14)
    m = mant[sub] | 0x800000
    shift = -exp[sub] - 14
    out[sub] = sign[sub] | ((m >> (shift + 13)) + ((m >> (shift + 12)) & 1))
    return out.astype("<u2")


def server_bf16_bits(values: Any) -> Any:
    """float32 -> bfloat16 bits as the server converts an fp32 ``.master`` tensor (pth_tensor.cpp
    ``float_to_bf16_bits``: ``bits += 0x7fff + lsb``, round half to even)."""
    import numpy as np

    bits = np.ascontiguousarray(values, dtype="<f4").view("<u4").astype(np.int64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFFFFFF
    return (rounded >> 16).astype("<u2")


def server_values(
    data: bytes | memoryview, record_dtype: str, dtype: str
) -> tuple[bytes | memoryview, list[tuple[int, float, str]]]:
    """What load_package keeps of one target's tensor and why it would refuse it: ``(native 16-bit bytes, [(count,
    first bad value, the server's message)])``. ``record_dtype`` is the tensor's (the manifest dtype, or float32 for
    the ``.master`` record of a training checkpoint), ``dtype`` the manifest's: the loader reads the record with
    ``load_tensor_select(archive, r, bf16, !bf16, true)`` and checks, in this order, the float values ("nonfinite
    adapter weight"), the fp16 ones it made ("adapter weight overflows FP16") and the native ones ("adapter cannot be
    represented by the FP16 inference runtime": non-finite or |x| > 65504)."""
    import numpy as np

    bad: list[tuple[int, float, str]] = []

    def note(mask: Any, value_at: Any, message: str) -> None:
        count = int(np.count_nonzero(mask))
        if count:
            bad.append((count, float(value_at(int(np.argmax(mask)))), message))

    if record_dtype == "float32":
        f = np.frombuffer(data, dtype="<f4")
        note(~np.isfinite(f), f.__getitem__, "nonfinite adapter weight")
        ok = np.where(np.isfinite(f), f, 0).astype("<f4")
        if dtype == "float16":
            native = server_f16_bits(ok)
            note(((native & 0x7C00) == 0x7C00) & np.isfinite(f), f.__getitem__, "adapter weight overflows FP16")
        else:
            native = server_bf16_bits(ok)
            note(
                ((native & 0x7FFF) > 0x477F) & np.isfinite(f),
                lambda i: decode_16bit(int(native[i]), "bfloat16"),
                "adapter cannot be represented by the FP16 inference runtime",
            )
        return native.tobytes(), bad
    u = np.frombuffer(data, dtype="<u2")
    exponent = 0x7F80 if dtype == "bfloat16" else 0x7C00
    nonfinite = (u & exponent) == exponent

    def value_at(i: int) -> float:
        return decode_16bit(int(u[i]), dtype)

    note(nonfinite, value_at, "nonfinite adapter weight")
    if dtype == "bfloat16":  # every finite float16 is within ±65504
        note(
            ~nonfinite & ((u & 0x7FFF) > 0x477F),
            value_at,
            "adapter cannot be represented by the FP16 inference runtime",
        )
    return data, bad


def scan_values(data: bytes | memoryview, dtype: str) -> tuple[int, float | None]:
    """Count values that are non-finite or beyond ±65504 in 16-bit data; return (count, first bad value)."""
    import numpy as np

    u = np.frombuffer(data, dtype="<u2")
    if dtype == "bfloat16":
        # |x| > 65504 for bf16 means (bits & 0x7fff) > 0x477f (0x477f = 65280, next is 65536); Inf/NaN included.
        bad = (u & 0x7FFF) > 0x477F
    elif dtype == "float16":
        bad = (u & 0x7C00) == 0x7C00  # every finite fp16 is within ±65504
    else:
        raise ValueError(dtype)
    count = int(np.count_nonzero(bad))
    if not count:
        return 0, None
    first = int(u[int(np.argmax(bad))])
    return count, decode_16bit(first, dtype)


def decode_16bit(bits: int, dtype: str) -> float:
    """Value of one bf16/fp16 bit pattern (for messages)."""
    if dtype == "bfloat16":
        value: float = struct.unpack("<f", struct.pack("<I", bits << 16))[0]
        return value
    half: float = struct.unpack("<e", struct.pack("<H", bits))[0]
    return half


def _short(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


# --- writing ------------------------------------------------------------------------------------


def build_manifest(
    shapes: Mapping[str, tuple[int, ...]],
    *,
    rank: int,
    alpha: float,
    base_fingerprint: str,
    dtype: str = "bfloat16",
    in_features: Mapping[str, int] | None = None,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A manifest (without content_version) for D tensors named ``blocks.L.<target>.D``, as rwkv_miss_tune makes it
    (trainer.cpp ``export_adapter``: ``m["rank"] = rank_; m["alpha"] = alpha_; m["scale"] = alpha_ / rank_``, with
    ``alpha_`` a float32: both are float32 values widened to a double, written as reals, ``32.0`` and
    ``0.3333333432674408`` for alpha 32, rank 96; then ``adapter_manifest()``: the fixed fields and ``targets``,
    ``name`` the tensor name with ``.D``).

    ``in_features`` maps tensor names to the input width of their base linear layer; it must be
    given for every tensor (the D shape [out, rank] does not determine it).
    """
    if dtype not in MISS_DTYPES:
        raise ValueError(f"dtype must be one of {MISS_DTYPES}, got {dtype!r}")
    targets = []
    for name, shape in shapes.items():
        m = re.fullmatch(r"blocks\.(\d+)\.(.+)\.D", name)
        if not m or m.group(2) not in MISS_TARGETS:
            raise ValueError(f"{clip(name)!r} is not a MiSS tensor name blocks.L.<target>.D")
        if len(shape) != 2 or shape[1] != rank:
            raise ValueError(f"{name}: shape {tuple(shape)} is not [out, {rank}]")
        if in_features is None or name not in in_features:
            raise ValueError(f"in_features of {name} not given")
        targets.append(
            {
                "name": tensor_name(int(m.group(1)), m.group(2)),
                "layer": int(m.group(1)),
                "target": m.group(2),
                "in_features": int(in_features[name]),
                "shape": [int(shape[0]), int(shape[1])],
            }
        )
    alpha32 = float32_of(float(alpha))
    manifest: dict[str, Any] = {
        **FIXED_FIELDS,
        "dtype": dtype,
        "rank": int(rank),
        "alpha": alpha32,
        "scale": float32_of(alpha32 / float32_of(float(rank))),  # float / int in C++: a float32 quotient
        "base_fingerprint": base_fingerprint,
        "targets": targets,
    }
    if extra:
        manifest.update(extra)
    return manifest


def write_miss_file(
    dest: str | os.PathLike[str] | BinaryIO,
    tensors: Mapping[str, Any],
    *,
    rank: int,
    alpha: float,
    base_fingerprint: str,
    dtype: str = "bfloat16",
    in_features: Mapping[str, int] | None = None,
    arch: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Write a single-file MiSS package as rwkv_miss_tune does (``save_adapter_pth`` + ``write_pth``); return its
    manifest. The bytes equal those of ``tests/conformance/lightning_cpp.py``'s writer for the same input.

    ``tensors`` maps ``blocks.L.<target>.D`` to :class:`rwkv_registry.formats.pthwrite.RawTensor` of
    ``dtype`` and shape [out, rank]. ``in_features`` per tensor, or ``arch`` (a base architecture
    dict) to derive them.
    """
    from rwkv_registry.formats.pthwrite import write_pth

    shapes = {name: tuple(t.shape) for name, t in tensors.items()}
    if in_features is None:
        if arch is None:
            raise ValueError("give in_features or arch")
        in_features = {}
        for name in shapes:
            target = name.split(".", 2)[2][: -len(".D")]
            in_features[name] = miss_target_shape(arch, target)[1]
    for name, t in tensors.items():
        if t.dtype != dtype:
            raise ValueError(f"{name}: dtype {t.dtype} differs from package dtype {dtype}")
    manifest = build_manifest(
        shapes, rank=rank, alpha=alpha, base_fingerprint=base_fingerprint, dtype=dtype, in_features=in_features
    )
    ordered = {t["name"]: tensors[t["name"]] for t in manifest["targets"]}
    manifest["content_version"] = content_version(manifest, (bytes(t.data) for t in ordered.values()))
    write_pth(dest, ordered, layout="lightning", extra_entries={"miss.json": jsoncpp.dumps_bytes(manifest)})
    return manifest
