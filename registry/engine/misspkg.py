"""MiSS packages whose manifest is not inside the ``.pth``: the legacy forms ``load_package`` still reads.

rwkv_lightning_cuda ``src/miss/adapter.cpp`` ``load_package(dir)`` takes a file or a directory. For a file without
the entry ``archive/miss.json`` it looks, in this order, for

1. ``checkpoint.json`` beside it: a legacy training checkpoint (``training.pth`` of the trainer before it embedded
   its manifest, ``src/miss/trainer.cpp`` at fc45586, ``Trainer::checkpoint``). The server builds the manifest
   from its ``config`` and the ``<name>.D.master`` records (:func:`checkpoint_manifest`) and recomputes the
   content version; it refuses the file when the checkpoint.json is over 8 MiB ("checkpoint metadata too
   large"), not JSON, not of ``kind`` "miss_training_checkpoint" or its ``tensor_digest`` is not the sha256 of the
   file ("invalid legacy MiSS checkpoint"), or its rank is not positive ("invalid rank");
2. ``adapter.json`` beside it, or, for a directory, ``adapter.json`` and ``adapter.pth`` in it: the legacy two-file
   package that ``save_package`` writes (``adapter.pth`` by ``write_pth`` without a manifest, ``adapter.json``
   ``json(m) << '\\n'``). The manifest is that file's (over 8 MiB: "adapter manifest too large"), used as it is:
   ``tensor_source`` is not read there, and is hashed.

The rules after that are those of an embedded manifest (:func:`rwkv_registry.engine.facts.miss_facts`). ``add`` accepts
the two-file package and publishes it as the single-file form (:func:`embedded_package`: the same tensors, its
manifest embedded, so the server computes the same content_version); ``validate`` reports one left inside a
registry (MIS021) with the verdict of these rules.
"""

from __future__ import annotations

import mmap
import os
import re
from pathlib import Path
from typing import Any

from rwkv_registry.checks.miss import LEGACY_FILES, MANIFEST_MAX_BYTES
from rwkv_registry.engine.facts import FileFacts, facts_from_buffer, miss_facts

ADAPTER_JSON, ADAPTER_PTH = LEGACY_FILES
CHECKPOINT_JSON = "checkpoint.json"
CHECKPOINT_MAX_BYTES = 8 << 20  # std::filesystem::file_size(meta) > (8ULL << 20): "checkpoint metadata too large"


def legacy_folder(path: Path) -> tuple[Path, Path] | None:
    """``(adapter.pth, adapter.json)`` of a directory holding both (the ``save_package`` form), else None."""
    pth, manifest = path / ADAPTER_PTH, path / ADAPTER_JSON
    return (pth, manifest) if path.is_dir() and pth.is_file() and manifest.is_file() else None


def sibling_metadata(path: Path) -> tuple[str, Path] | None:
    """What load_package reads beside a single ``.pth`` that has no ``archive/miss.json``: ``checkpoint.json``
    first, then ``adapter.json`` (its ``else if (single && exists(parent / "checkpoint.json"))``, then ``meta =
    parent / "adapter.json"``); None when neither is there."""
    for name in (CHECKPOINT_JSON, ADAPTER_JSON):
        p = path.parent / name
        if p.is_file():
            return name, p
    return None


def has_embedded_manifest(path: Path) -> bool:
    """Whether the file has the entry ``archive/miss.json`` (then load_package reads that and no sibling); False
    for a file that cannot be opened as a checkpoint (its facts say why)."""
    from rwkv_registry.checks.miss import MANIFEST_ENTRY
    from rwkv_registry.core.errors import CheckpointError
    from rwkv_registry.formats.ckpt import open_checkpoint

    try:
        with open_checkpoint(path) as ck:
            return ck.miss_manifest is not None and f"{ck.prefix}/miss.json" == MANIFEST_ENTRY
    except (CheckpointError, OSError):
        return False


def _mapped_facts(pth: Path) -> tuple[FileFacts, Any, Any]:
    """(facts of the file alone, its mmap, the opened checkpoint or None)."""
    from rwkv_registry.core.errors import CheckpointError
    from rwkv_registry.core.fsio import open_regular
    from rwkv_registry.formats.ckpt import MemorySource, open_checkpoint

    with open_regular(pth) as f:
        size = os.fstat(f.fileno()).st_size
        mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) if size else None
    if mm is None:
        return facts_from_buffer(b""), None, None
    facts = facts_from_buffer(mm)
    try:
        ck = open_checkpoint(MemorySource(mm)) if facts.kind == "torch-zip" else None
    except CheckpointError:
        ck = None
    return facts, mm, ck


def _retarget(facts: FileFacts) -> None:
    """Forget the MiSS verdict of the file alone (MIS001, MIS018, or those of a manifest embedded in an adapter.pth,
    which load_package does not read when it is given the directory): the package's replaces it."""
    facts.findings = [f for f in facts.findings if not f["code"].startswith("MIS")]
    facts.method, facts.manifest, facts.targets, facts.content_version = "miss", None, [], None


def package_facts(pth: Path, manifest_path: Path) -> FileFacts:
    """The facts of the legacy package ``pth`` + ``manifest_path`` (an adapter.json) under load_package's rules:
    those of ``pth``'s bytes (sha256, readers) and the MiSS rules with the manifest read from ``manifest_path``.
    The 8 MiB limit is applied by size, before the file is read."""
    facts, mm, ck = _mapped_facts(pth)
    try:
        if ck is None or any(f["code"].startswith("PTH") for f in facts.findings):
            return facts
        _retarget(facts)
        size = manifest_path.stat().st_size
        if size > MANIFEST_MAX_BYTES:  # file_size(meta) > (8ULL << 20): "adapter manifest too large", unread
            facts.findings.append(
                {
                    "code": "MIS002",
                    "message": f"{ADAPTER_JSON} is {size} bytes, the server's limit is {MANIFEST_MAX_BYTES} "
                    "(adapter manifest too large)",
                }
            )
            return facts
        miss_facts(facts, ck, manifest_path.read_bytes(), origin=ADAPTER_JSON)
        return facts
    finally:
        if ck is not None:
            ck.close()
        if mm is not None:
            try:
                mm.close()
            except BufferError:
                pass


def checkpoint_facts(pth: Path, checkpoint_path: Path) -> FileFacts:
    """The facts of a legacy training checkpoint ``pth`` with its ``checkpoint.json``: MIS018 (it is no inference
    adapter), MIS022 for what makes the server refuse the checkpoint.json, and the MiSS rules on the manifest the
    server builds from it (:func:`checkpoint_manifest`)."""
    facts, mm, ck = _mapped_facts(pth)
    try:
        if ck is None or any(f["code"].startswith("PTH") for f in facts.findings):
            return facts
        _retarget(facts)
        facts.findings.append(
            {
                "code": "MIS018",
                "message": "a legacy rwkv_miss_tune training checkpoint (training.pth without archive/miss.json, "
                "with checkpoint.json beside it): the server builds its manifest from checkpoint.json and loads the "
                "fp32 .D.master records rounded to float16, unless another finding here is a reason it refuses it",
            }
        )
        manifest, problems = checkpoint_manifest(ck, checkpoint_path, facts.sha256)
        for message in problems:
            facts.findings.append({"code": "MIS022", "message": f"{CHECKPOINT_JSON}: {message}"})
        if manifest is not None:
            miss_facts(facts, ck, None, origin=CHECKPOINT_JSON, manifest=manifest)
        return facts
    finally:
        if ck is not None:
            ck.close()
        if mm is not None:
            try:
                mm.close()
            except BufferError:
                pass


_LAYER = re.compile(r"^[0-9]+$")


def checkpoint_manifest(ck: Any, checkpoint_path: Path, sha256: str) -> tuple[dict[str, Any] | None, list[str]]:
    """The manifest load_package builds for a legacy training checkpoint, and why it would refuse one (then None).

    adapter.cpp: ``checkpoint["kind"] != "miss_training_checkpoint" || checkpoint["tensor_digest"].asString() !=
    fingerprint_file(dir)`` -> "invalid legacy MiSS checkpoint"; ``m["rank"] = config["rank"]``, ``m["alpha"] =
    config["alpha"]``, ``m["rank"].asInt() <= 0`` -> "invalid rank", ``m["scale"] = config["alpha"].asFloat() /
    m["rank"].asInt()`` (a float32 quotient), ``m["base_fingerprint"] = config["base_fingerprint"]``; one target per
    record ``blocks.<digits>.<target>.D.master`` of two dimensions (else "invalid master D shape" / "invalid layer
    name"), its ``in_features`` the out size of an ``ffn.key`` target for ``ffn.value``, else of any other target
    ("legacy checkpoint lacks input widths" when there is none); then ``adapter_manifest(m, ts, {})``."""
    from rwkv_registry.checks.miss import FIXED_FIELDS, MISS_TARGETS, float32_of, tensor_name
    from rwkv_registry.formats.jsonload import JsonLoadError, load_json_bytes

    size = checkpoint_path.stat().st_size
    if size > CHECKPOINT_MAX_BYTES:
        return None, [f"{size} bytes, over the server's 8 MiB (checkpoint metadata too large)"]
    try:
        meta = load_json_bytes(checkpoint_path.read_bytes(), path=CHECKPOINT_JSON)
    except JsonLoadError as e:
        return None, [f"{e} (invalid legacy MiSS checkpoint)"]
    if not isinstance(meta, dict):
        return None, ["not a JSON object (invalid legacy MiSS checkpoint)"]
    problems = []
    if meta.get("kind") != "miss_training_checkpoint":
        problems.append(
            f"kind is {meta.get('kind')!r}, not 'miss_training_checkpoint' (invalid legacy MiSS checkpoint)"
        )
    digest = meta.get("tensor_digest")
    if digest != sha256:
        problems.append(
            f"tensor_digest is {digest!r}, the sha256 of the training.pth beside it is {sha256} (invalid legacy MiSS "
            "checkpoint): the checkpoint.json belongs to other bytes"
        )
    config = meta.get("config")
    config = config if isinstance(config, dict) else {}
    rank, alpha = config.get("rank"), config.get("alpha")
    if not (isinstance(rank, int) and not isinstance(rank, bool) and rank > 0):
        problems.append(f"config.rank is {rank!r}, not a positive integer (invalid rank)")
    if problems or not isinstance(rank, int):
        return None, problems
    scale: Any = None
    if isinstance(alpha, int | float) and not isinstance(alpha, bool):
        try:
            scale = float32_of(float32_of(float(alpha)) / float32_of(float(rank)))
        except OverflowError:
            scale = float("inf")
    targets: list[dict[str, Any]] = []
    channels = hidden = 0
    for name, t in ck.tensors.items():
        if not name.endswith(".D.master"):
            continue
        if len(t.shape) != 2:
            return None, [f"record {name} has shape {list(t.shape)}, not [out, rank] (invalid master D shape)"]
        for target in MISS_TARGETS:
            suffix = f".{target}.D.master"
            if len(name) <= len(suffix) + 7 or not name.startswith("blocks.") or not name.endswith(suffix):
                continue
            layer = name[7 : len(name) - len(suffix)]
            if not _LAYER.match(layer):
                return None, [f"record {name}: layer {layer!r} is not a number (invalid layer name)"]
            out, r = int(t.shape[0]), int(t.shape[1])
            if target == "ffn.key.weight":
                hidden = out
            else:
                channels = out
            targets.append({"layer": int(layer), "target": target, "out": out, "rank": r})
    manifest: dict[str, Any] = {"rank": rank, "alpha": alpha, "scale": scale}
    if "base_fingerprint" in config:
        manifest["base_fingerprint"] = config["base_fingerprint"]
    listed = []
    for t in targets:
        width = hidden if t["target"] == "ffn.value.weight" else channels
        if not width:
            return None, ["no target gives the input widths (legacy checkpoint lacks input widths)"]
        listed.append(
            {
                "name": tensor_name(t["layer"], t["target"]),
                "layer": t["layer"],
                "target": t["target"],
                "in_features": width,
                "shape": [t["out"], t["rank"]],
            }
        )
    manifest.update(FIXED_FIELDS)
    manifest["dtype"] = "float16"  # adapter_manifest: if (m["dtype"] != "bfloat16") m["dtype"] = "float16"
    manifest["targets"] = listed
    manifest["content_version"] = "0" * 64  # recomputed from the data (legacy): a placeholder of 64 characters
    return manifest, []


def embedded_package(pth: Path, manifest: dict[str, Any]) -> bytes:
    """The single-file package of a legacy two-file one: the tensors of ``pth`` in ``targets`` order and
    ``manifest`` as the entry ``archive/miss.json`` (JsonCpp's compact form), which is what ``save_adapter_pth``
    writes for that manifest and data (``write_pth(path, write, json(adapter_manifest(m, ts, data)))``): the server
    reads the same manifest and D values from it, so its content_version is the legacy package's."""
    import io

    from rwkv_registry.formats import jsoncpp
    from rwkv_registry.formats.ckpt import open_checkpoint
    from rwkv_registry.formats.pthwrite import RawTensor, write_pth

    with open_checkpoint(pth) as ck:
        tensors = {}
        for t in manifest["targets"]:
            info = ck.tensors[t["name"]]
            tensors[t["name"]] = RawTensor(info.dtype, tuple(info.shape), bytes(ck.tensor_bytes(t["name"])))
    buf = io.BytesIO()
    write_pth(buf, tensors, layout="lightning", extra_entries={"miss.json": jsoncpp.dumps_bytes(manifest)})
    return buf.getvalue()
