"""Every validation rule: the clean registry passes it, a targeted mutation fails it.

Each case mutates a freshly built tiny registry the way a careless publisher (or an attacker)
would, then runs the real validator and asserts the rule's code among the findings. The
clean-registry test is the passing case of every rule at once; ``test_every_rule_has_a_case``
keeps this table complete.
"""

from __future__ import annotations

import ast
import hashlib
import json
import math
import os
import shutil
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mutations import (
    entry_edit,
    json_edit,
    miss_no_manifest,
    miss_tensor_dtype,
    non_state_file,
    replace_miss,
    replace_state,
    same_base_file_twice,
    same_bytes_twice,
    score_record,
    scores_codes,
    set_key,
    vs_state,
)
from regtools import (
    MISS_A,
    MISS_TRAIN,
    STATE,
    STATE_TRAIN,
    TINY_ARCH,
    TINY_BASE,
    all_codes,
    bf16_bytes,
    custom_miss,
    edit_index,
    findings,
    refresh,
    resum,
    state_train,
    write_state,
)

from rwkv_registry.checks.catalogue import RULES
from rwkv_registry.checks.miss import build_manifest, scan_values, write_miss_file
from rwkv_registry.core.errors import RefusedError, UsageError
from rwkv_registry.engine.validate import validate_registry
from rwkv_registry.index.sums import parse_sums
from rwkv_registry.store.ops import add_entry, write_sums


def _text(root: Path, rel: str, text: str) -> None:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)


def _flip_byte(root: Path) -> None:
    p = root / STATE
    data = bytearray(p.read_bytes())
    data[-200] ^= 0x01  # inside the last storage, not in the zip directory
    p.write_bytes(bytes(data))


def _truncate(root: Path) -> None:
    p = root / STATE
    p.write_bytes(p.read_bytes()[:1000])
    refresh(root, STATE)


def _lfs_pointer(root: Path) -> None:
    oid = hashlib.sha256(b"x").hexdigest()
    (root / STATE).write_text(f"version https://git-lfs.github.com/spec/v1\noid sha256:{oid}\nsize 123\n")


def _symlink(root: Path) -> None:
    (root / TINY_BASE / "state" / "v1" / "link.pth").symlink_to("/etc/hostname")


def _fifo(root: Path) -> None:
    (root / "README.md").unlink()
    os.mkfifo(root / "README.md")


def _dup_entry(field: str) -> Callable[[Path], None]:
    def mutate(root: Path) -> None:
        def edit(index: dict) -> None:
            e = dict(index["entries"][0])
            if field == "id":
                e["path"] = f"{TINY_BASE}/state/v1/other.pth"
            else:
                e["id"] = "other"
            index["entries"].append(e)

        edit_index(root, edit)

    return mutate


def _sums_reverse(root: Path) -> None:
    p = root / "SHA256SUMS"
    lines = p.read_text().splitlines(keepends=True)
    p.write_text("".join(reversed(lines)))


def _miss_extra_tensor(tensors: dict) -> None:
    from rwkv_registry.formats.pthwrite import RawTensor

    tensors["blocks.0.att.extra.D"] = RawTensor("bfloat16", (4, 4), bf16_bytes(16, 1))


def _miss_nan(tensors: dict) -> None:
    from rwkv_registry.formats.pthwrite import RawTensor

    name = next(iter(tensors))
    t = tensors[name]
    data = bytearray(t.data)
    data[0:2] = b"\xc0\x7f"  # bf16 NaN
    tensors[name] = RawTensor(t.dtype, t.shape, bytes(data))


def _miss_big_manifest(root: Path) -> None:
    custom_miss(root / MISS_A, manifest_edit=lambda m: set_key(m, "padding", "x" * (8 * 2**20 + 10)))
    refresh(root, MISS_A)


def _miss_training_checkpoint(root: Path) -> None:
    """rwkv_miss_tune's checkpoint-N/training.pth (the conformance writer of Trainer::checkpoint) published as the
    adapter: MIS018."""
    import numpy as np
    from conformance.miss_adapter_cpp import trainer_targets
    from conformance.miss_tune_checkpoint import PARTS, checkpoint

    ts = trainer_targets(TINY_ARCH["n_layer"], TINY_ARCH["n_embd"], TINY_ARCH["ffn_size"], 4)
    count = sum(t.out * t.rank for t in ts)
    buffers = {p: np.full(count, 0.01, dtype=np.float32) for p in PARTS}
    config = {"base_fingerprint": hashlib.sha256(b"tiny base file").hexdigest(), "rank": 4, "alpha": 8.0}
    pth, _ = checkpoint(root.parent / "ckpt", ts, buffers, np.zeros(4, np.float32), config, rank=4, alpha=8.0)
    shutil.copyfile(pth, root / MISS_A)
    refresh(root, MISS_A)


def _miss_big_payload(root: Path) -> None:
    """A manifest whose first target is [2^20, 1024]: 2 GiB of D, over the server's default budgets (MIS020)."""

    def edit(m: dict[str, Any]) -> None:
        m.update(rank=1024, scale=8 / 1024)
        for t in m["targets"]:
            t["shape"][1] = 1024
        m["targets"][0]["shape"][0] = 1 << 20

    replace_miss(root, manifest_edit=edit)


def _miss_legacy_folder(root: Path) -> None:
    """save_package's adapter.json + adapter.pth (the conformance writer) copied into the layout: MIS021."""
    from conformance.miss_adapter_cpp import export_input, trainer_targets
    from conformance.miss_tune_package import save_package

    ts = trainer_targets(TINY_ARCH["n_layer"], TINY_ARCH["n_embd"], TINY_ARCH["ffn_size"], 4)
    data = bf16_bytes(sum(t.out * t.rank for t in ts), 3)
    fp = hashlib.sha256(b"tiny base file").hexdigest()
    save_package(root / f"{TINY_BASE}/miss/v2/old", export_input(4, 8.0, fp, bf16=True), ts, data)


def _miss_other_arch(root: Path) -> None:
    arch = dict(TINY_ARCH, n_embd=192, n_head=3, ffn_size=768)
    custom_miss(root / MISS_A, arch=arch)
    refresh(root, MISS_A)


def _unreadable(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import rwkv_registry.engine.facts as facts

    real = facts.compute_facts

    def fake(path: Any) -> Any:
        if str(path).endswith("s1.pth"):
            raise PermissionError(13, "Permission denied")
        return real(path)

    monkeypatch.setattr(facts, "compute_facts", fake)


def _newer_base(root: Path) -> None:
    """A newer dated base of the same family, registered beside the old one (which stays active)."""
    newer = TINY_BASE.replace("20260101", "20260301")

    def add(index: dict[str, Any]) -> None:
        b = json.loads(json.dumps(index["bases"][0]))
        b.update(name=newer, source=dict(b["source"], file=f"{newer}.pth"), sha256="5" * 64, added="2026-03-02")
        index["bases"].append(b)

    edit_index(root, add)
    (root / newer / "state").mkdir(parents=True)
    (root / newer / "state" / ".gitkeep").write_bytes(b"")
    (root / newer / "miss").mkdir()
    (root / newer / "miss" / ".gitkeep").write_bytes(b"")
    refresh(root, STATE)


def _rename_version_dir(root: Path) -> None:
    (root / TINY_BASE / "state" / "v1").rename(root / TINY_BASE / "state" / "v1.0")


def _state_named_for_another_step(root: Path) -> None:
    """A State whose name says step 5 registered (add only warns) with step 7."""
    from regtools import state_train

    from rwkv_registry.store.ops import add_entry

    src = write_state(root.parent / "src-trn009" / "v1b-s5.pth", seed=3)
    add_entry(root, src, base=TINY_BASE, data_version="v1", train=state_train(), step=7, total_steps=10)


def _trained_on_the_newer_base(root: Path) -> None:
    """The State's train.json says it was trained on another registered base's file."""
    _newer_base(root)
    newer = TINY_BASE.replace("20260101", "20260301")
    json_edit(root, STATE_TRAIN, lambda t: set_key(t, "command", f"rwkv_state_tune --model /models/{newer}.pth"))


def _total_steps_against_train(root: Path) -> None:
    """The State's entry says step 90 of 100, its train.json says the training ran 120 steps."""
    entry_edit(STATE, lambda e: e.update(step=90, total_steps=100))(root)
    json_edit(root, STATE_TRAIN, lambda t: t["hyperparameters"].update(steps=120))


def _unpublished_with_other_data(root: Path) -> None:
    """A weight never uploaded records data v1 of the State with another sha256 than the published State's."""

    def add(index: dict[str, Any]) -> None:
        index.setdefault("unpublished", []).append(
            {
                "id": "s0",
                "base": TINY_BASE,
                "method": "state",
                "data": {"version": "v1", "rows": 100, "sha256": "6" * 64},
                "description": "an earlier State, not uploaded",
                "scores": [],
            }
        )

    edit_index(root, add)


def _compared_across_days(root: Path) -> None:
    """The adapter compared question by question with the State, whose exam score is of another day."""
    entry_edit(STATE, lambda e: set_key(e, "scores", [score_record(date="2026-10-16", score=46.9, solved=None)]))(root)
    entry_edit(MISS_A, lambda e: set_key(e, "scores", [score_record(comparison=vs_state(95, 54, 0.001))]))(root)


CASES: dict[str, Callable[..., None]] = {
    "LAY001": lambda r: _text(r, "notes.txt", "hello"),
    "LAY002": lambda r: _text(r, "otherbase/state/v1/train.json", "{}"),
    "LAY003": lambda r: edit_index(r, lambda i: i["bases"].append(dict(i["bases"][0], name="ghost"))),
    "LAY004": lambda r: _text(r, f"{TINY_BASE}/state/v1/readme.txt", "x"),
    "LAY005": _symlink,
    "LAY006": entry_edit(STATE, lambda e: set_key(e, "path", "../evil.pth")),
    "LAY007": lambda r: shutil.copy(r / STATE, r / TINY_BASE / "state" / "v1" / "s2.pth"),
    "LAY008": lambda r: (r / STATE).unlink(),
    "LAY009": entry_edit(STATE, lambda e: set_key(e, "train", f"{TINY_BASE}/state/v9/train.json")),
    "LAY010": _unreadable,
    "LAY011": lambda r: (r / TINY_BASE / "state" / "v9").mkdir(),
    "LAY012": lambda r: _text(r, ".rwkv-registry-tmp-0123-index.json", "{}"),
    "LAY014": _rename_version_dir,
    "LAY015": _fifo,
    "LAY016": lambda r: [shutil.rmtree(p) if p.is_dir() else p.unlink() for p in r.iterdir()],
    "SCH001": lambda r: _text(r, "index.json", "{not json"),
    "SCH002": entry_edit(STATE, lambda e: set_key(e, "profile", "bogus")),
    "SCH003": lambda r: json_edit(r, STATE_TRAIN, lambda t: t.pop("trainer")),
    "SCH004": lambda r: (r / "SHA256SUMS").unlink(),
    "SCH005": entry_edit(STATE, lambda e: set_key(e, "file", "not an object")),
    "IDX001": _dup_entry("id"),
    "IDX002": entry_edit(STATE, lambda e: set_key(e, "base", "nowhere")),
    "IDX003": non_state_file,
    "IDX004": lambda r: edit_index(r, lambda i: [set_key(e, "recommended", True) for e in i["entries"]]),
    "IDX005": _dup_entry("path"),
    "IDX006": lambda r: edit_index(r, lambda i: i["bases"][0]["source"].update(file="rwkv7-tiny-20260101.pth")),
    "IDX007": _newer_base,
    "IDX008": entry_edit(STATE, lambda e: e.update(step=1400, total_steps=1374)),
    "IDX009": entry_edit(MISS_A, lambda e: set_key(e, "scores", [score_record(comparison=vs_state(95, 54, 0.9))])),
    "IDX010": same_base_file_twice,
    "IDX011": same_bytes_twice,
    "IDX012": entry_edit(MISS_A, lambda e: set_key(e, "adapter_id", "v2-r4-b")),
    "IDX013": entry_edit(MISS_A, lambda e: set_key(e, "scores", [score_record(solved=280.5)])),
    "IDX014": lambda r: _compared_across_days(r),
    "IDX015": lambda r: _text(r, "LICENSE.md", "Apache License 2.0"),
    "IDX016": lambda r: _unpublished_with_other_data(r),
    "HSH001": _flip_byte,
    "HSH002": entry_edit(STATE, lambda e: set_key(e, "file", dict(e["file"], size=e["file"]["size"] + 1))),
    "HSH003": lambda r: (r / "SHA256SUMS").open("a").write("not a line\n"),
    "HSH004": lambda r: _text(r, "LICENSE", "MIT"),
    "HSH005": lambda r: (r / "SHA256SUMS").open("a").write("0" * 64 + "  zzz-missing.txt\n"),
    "HSH006": lambda r: (r / "README.md").open("a").write("\nan edit\n"),
    "HSH007": _sums_reverse,
    "PTH001": _truncate,
    "LFS001": _lfs_pointer,
    "LFS002": lambda r: _text(r, ".gitattributes", "# nothing\n"),
    "STA001": lambda r: replace_state(r, n_layer=3),
    "STA002": lambda r: replace_state(r, shape=(2, 32, 32)),
    "STA003": lambda r: replace_state(r, dtype="float16"),
    "STA004": lambda r: replace_state(r, poison=True),
    "MIS001": miss_no_manifest,
    "MIS002": _miss_big_manifest,
    "MIS003": lambda r: replace_miss(r, manifest_edit=lambda m: set_key(m, "layout", "blocks")),
    "MIS004": lambda r: replace_miss(r, manifest_edit=lambda m: set_key(m, "rank", 2000)),
    "MIS005": lambda r: replace_miss(r, manifest_edit=lambda m: set_key(m, "alpha", "8")),
    "MIS006": lambda r: replace_miss(r, manifest_edit=lambda m: set_key(m, "base_fingerprint", "abc")),
    "MIS007": lambda r: replace_miss(r, manifest_edit=lambda m: set_key(m, "targets", [])),
    "MIS008": lambda r: replace_miss(r, tensors_edit=miss_tensor_dtype),
    "MIS009": lambda r: replace_miss(r, tensors_edit=_miss_extra_tensor),
    "MIS010": lambda r: replace_miss(r, tensors_edit=_miss_nan),
    "MIS011": lambda r: replace_miss(r, manifest_edit=lambda m: set_key(m, "content_version", "1" * 64), fix_cv=False),
    "MIS012": entry_edit(MISS_A, lambda e: set_key(e, "miss", dict(e["miss"], content_version="2" * 64))),
    "MIS013": lambda r: replace_miss(r, manifest_edit=lambda m: set_key(m, "base_fingerprint", "3" * 64)),
    "MIS014": _miss_other_arch,
    "MIS015": entry_edit(MISS_A, lambda e: set_key(e, "miss", dict(e["miss"], rank=8))),
    "MIS016": lambda r: replace_miss(r, manifest_edit=lambda m: m["targets"][0].update(target="att.gate.weight")),
    "MIS017": lambda r: replace_miss(r, manifest_edit=lambda m: set_key(m, "scale", 99.0)),
    "MIS018": _miss_training_checkpoint,
    "MIS019": lambda r: replace_miss(r, manifest_edit=lambda m: set_key(m, "tensor_source", "x")),
    "MIS020": _miss_big_payload,
    "MIS021": _miss_legacy_folder,
    "TRN001": lambda r: (r / STATE_TRAIN).unlink(),
    "TRN002": lambda r: json_edit(r, STATE_TRAIN, lambda t: t["trainer"].update(version="1.7.9")),
    "TRN003": lambda r: json_edit(r, STATE_TRAIN, lambda t: t["data"].update(sha256="4" * 64)),
    "TRN004": lambda r: json_edit(r, MISS_TRAIN, lambda t: t["runs"].pop()),
    "TRN005": lambda r: json_edit(r, STATE_TRAIN, lambda t: set_key(t, "method", "miss")),
    "TRN006": lambda r: json_edit(r, MISS_TRAIN, lambda t: t["trainer"].update(commit=None)),
    "TRN007": lambda r: json_edit(r, STATE_TRAIN, lambda t: t["trainer"].update(name="rwkv_miss_tune")),
    "TRN008": lambda r: json_edit(r, MISS_TRAIN, lambda t: t["hyperparameters"].update(alpha=16)),
    "TRN009": lambda r: _state_named_for_another_step(r),
    "TRN010": lambda r: _trained_on_the_newer_base(r),
    "IDX017": entry_edit(MISS_A, lambda e: set_key(e, "scores", [score_record(content_version="5" * 64)])),
    "IDX018": lambda r: edit_index(r, lambda i: i["bases"][0]["architecture"].update(vocab_size=50277)),
    "IDX019": lambda r: edit_index(r, lambda i: i["registry"].update(server="rwkv_lightning v1.8.1-rc1")),
    "IDX020": entry_edit(
        MISS_A, lambda e: set_key(e, "scores", [score_record(), score_record(score=52.3, solved=297.0)])
    ),
    "TRN011": lambda r: _total_steps_against_train(r),
    "TRN012": lambda r: json_edit(r, STATE_TRAIN, lambda t: t.update(finished="2026-10-12T07:59:59Z")),
    "TRN013": lambda r: json_edit(r, STATE_TRAIN, lambda t: t.update(finshed=t.pop("finished"))),
    "PRF001": entry_edit(MISS_A, lambda e: set_key(e, "profile", "g1k")),
    "PRF002": entry_edit(STATE, lambda e: set_key(e, "profile", "g1k-think")),
    "PRF003": entry_edit(STATE, lambda e: set_key(e, "sampling", "g1k-agnet")),
    "RDM001": lambda r: _text(r, "README.md", "# no markers\n"),
    "RDM002": entry_edit(STATE, lambda e: set_key(e, "description", "changed without regenerating the README")),
}
# Rules whose failing cases live elsewhere: the safe reader (tests/test_ckpt.py) raises the PTH/LFS codes
# on hostile archives, git immutability needs a repository (tests/test_git.py), signatures need keys
# (tests/test_signing.py). Each code names the test function that fails on it; test_every_rule_has_a_case
# checks, with ast, that the function exists and uses the code as a string literal in an assert, a comparison
# or its parametrize decorator (a comment or a docstring naming the code does not count).
ELSEWHERE: dict[str, tuple[str, str]] = {
    "MIS022": (
        "conformance/test_miss_conformance.py",
        "test_a_legacy_training_checkpoint_with_its_checkpoint_json",
    ),  # a checkpoint.json beside the file add is given: never inside a registry
    "LAY013": ("test_validate_walkthrough.py", "test_lay013_a_live_writer_is_one_finding"),
    "LAY017": ("test_name_twins.py", "test_validate_reports_files_that_differ_only_in_case_or_normalization"),
    "PTH002": ("test_ckpt.py", "test_bad_crc_in_data_pkl"),
    "PTH003": ("test_ckpt.py", "test_code_execution_globals"),
    "PTH004": ("test_ckpt.py", "test_opcodes_outside_the_allow_list"),
    "PTH005": ("test_ckpt.py", "test_torchscript_archive"),
    "PTH006": ("test_ckpt.py", "test_storage_missing_or_short"),
    "PTH007": ("test_ckpt.py", "test_duplicate_tensor_names"),
    "PTH008": ("test_ckpt.py", "test_unsafe_entry_names"),
    "PTH009": ("test_ckpt.py", "test_not_a_flat_dict_of_tensors"),
    "PTH010": ("test_ckpt.py", "test_too_many_entries"),
    "PTH011": ("test_ckpt.py", "test_compressed_entries"),
    "PTH012": ("test_ckpt.py", "test_bad_safetensors_headers"),
    "PTH013": ("test_ckpt.py", "test_big_endian_byteorder"),
    "PTH014": ("test_zip_strict.py", "test_a_second_archive_in_the_comment_is_refused_torch_reads_it"),
    "PTH015": ("test_zip_strict.py", "test_data_pkl_shadowed_by_upper_case_is_refused_torch_reads_the_other"),
    "PTH016": ("test_zip_strict.py", "test_a_zip64_offset_given_twice_is_refused_torch_reads_the_first"),
    "PTH017": ("test_zip_strict.py", "test_central_extra_fields_torch_does_not_write_are_refused"),
    "PTH018": ("test_zip_strict.py", "test_a_torch_descriptor_with_another_crc_is_refused"),
    "PTH019": ("test_zip_strict.py", "test_members_torch_does_not_write_are_refused"),
    "PTH020": ("test_zip_strict.py", "test_an_archive_without_version_record_is_refused_as_torch_does"),
    "PTH021": ("test_zip_strict.py", "test_a_meta_storage_is_refused_torch_loads_no_data"),
    "PTH022": ("test_zip_strict.py", "test_a_version_zipfile_cannot_extract_is_refused_torch_loads_it"),
    "GIT001": ("test_git.py", "test_modified_published_file_names_its_commit"),
    "GIT002": ("test_git.py", "test_deleted_published_file"),
    "GIT003": ("test_git.py", "test_new_file_under_frozen_base"),
    "GIT004": ("test_git.py", "test_git_unavailable_is_an_error_in_a_work_tree_a_warning_outside"),
    "GIT005": ("test_git.py", "test_reopening_a_frozen_base_is_refused_before_it_takes_files"),
    "GIT006": ("test_git.py", "test_corrupt_object_store_is_an_error"),
    "GIT007": ("test_git.py", "test_published_base_identity_changed_is_git007"),
    "SIG001": ("test_signing.py", "test_sig001_missing_signature_when_keys_are_trusted"),
    "SIG002": ("test_signing.py", "test_sig002_changed_byte_in_sha256sums"),
    "SIG003": ("test_signing.py", "test_sig003_wrong_key"),
    "SIG004": ("test_signing.py", "test_sig004_malformed_or_truncated_signature"),
    # the server's State rules, each beside the file the server takes (tests/conformance/)
    "STA005": ("conformance/test_state_server_rules.py", "test_sta005_an_upload_over_512_mib_is_refused"),
    "STA006": ("conformance/test_state_server_rules.py", "test_sta006_other_tensors_are_ignored_with_a_warning"),
    "STA007": ("conformance/test_state_server_rules.py", "test_sta007_a_safetensors_state_passes_with_a_warning"),
}


def test_clean_registry_passes_every_rule(registry_template: Path) -> None:
    report = validate_registry(registry_template, use_cache=False)
    bad = [f for f in report.findings if f.code not in ("TRN006", "GIT004")]  # GIT004: the template is no git clone
    assert bad == [], [f"{f.code} {f.path}: {f.message}" for f in bad]
    assert report.ok


def _checked_literals(func: ast.FunctionDef) -> set[str]:
    """String literals a test function checks: inside its asserts, its comparisons (``f.code == "X"`` in a
    ``next(...)`` that raises when nothing matches) and its decorators (``parametrize`` values). Comments are not
    in the tree; the docstring is neither an assert, a comparison nor a decorator."""
    nodes: list[ast.AST] = [*func.decorator_list]
    nodes += [n for stmt in func.body for n in ast.walk(stmt) if isinstance(n, ast.Assert | ast.Compare)]
    return {c.value for n in nodes for c in ast.walk(n) if isinstance(c, ast.Constant) and isinstance(c.value, str)}


def test_every_rule_has_a_case() -> None:
    assert set(RULES) == set(CASES) | set(ELSEWHERE)
    assert not set(CASES) & set(ELSEWHERE)
    here = Path(__file__).parent
    trees = {name: ast.parse((here / name).read_text()) for name, _ in ELSEWHERE.values()}
    for code, (name, func_name) in sorted(ELSEWHERE.items()):
        funcs = [n for n in trees[name].body if isinstance(n, ast.FunctionDef) and n.name == func_name]
        assert len(funcs) == 1 and func_name.startswith("test_"), f"{code}: no test {func_name} in {name}"
        assert code in _checked_literals(funcs[0]), f"{code}: {name}::{func_name} does not check it"


def test_the_case_check_ignores_comments_and_docstrings() -> None:
    """The check above cannot be fooled by a code that a test merely mentions."""
    source = 'def test_x():\n    """PTH002 is tested here."""\n    # PTH002\n    name = "PTH002"\n    assert True\n'
    [func] = ast.parse(source).body
    assert isinstance(func, ast.FunctionDef)
    assert "PTH002" not in _checked_literals(func)
    [real] = ast.parse('def test_y():\n    assert code_of(b"") == "PTH002"\n').body
    assert isinstance(real, ast.FunctionDef)
    assert "PTH002" in _checked_literals(real)


PRECISE_HINTS = {"MIS001", "MIS003", "MIS020"}  # rules whose findings may carry a hint naming the field to change


@pytest.mark.parametrize("code", sorted(CASES))
def test_rule_fails_on_its_mutation(code: str, reg: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mutate = CASES[code]
    if code == "LAY010":
        mutate(reg, monkeypatch)
    else:
        mutate(reg)
    report = validate_registry(reg, use_cache=False)
    found = {f.code for f in report.findings}
    assert code in found, f"{code} not reported; got {sorted(found)}"
    f = next(f for f in report.findings if f.code == code)
    # the rule's hint, or one that names what to change in this very file (MIS003: the field and its value)
    assert f.message and f.path is not None
    assert f.hint == RULES[code].hint or (code in PRECISE_HINTS and f.hint)
    assert f.severity == RULES[code].severity
    if RULES[code].severity == "error":
        assert not report.ok


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
@pytest.mark.parametrize("where", ["README.md", "SHA256SUMS", ".gitattributes", f"{TINY_BASE}/state/v1/train.json"])
def test_a_fifo_is_lay015_with_advice_for_its_place(reg: Path, where: str) -> None:
    """A FIFO in place of a top-level file is not a misplaced weight: LAY015 (not LAY004, whose hint says where
    weights go) names what it is, and is the one error: no "missing" echoes (RDM001, SCH004, LFS002, TRN001,
    HSH005 "does not exist") of a file that is there but never opened."""
    (reg / where).unlink()
    os.mkfifo(reg / where)
    found = validate_registry(reg, use_cache=False).findings
    [f] = [f for f in found if f.path == where and f.code.startswith("LAY")]
    assert (f.code, f.message) == ("LAY015", "a FIFO, not a regular file or directory")
    assert "Weights go to" not in f.hint and "README.md" in f.hint and "SHA256SUMS" in f.hint
    assert [g for g in found if g.severity == "error"] == [f]


def test_trn008_does_not_echo_a_wrong_index_record(reg: Path) -> None:
    """index.json's miss.rank differs from the file (MIS015) while train.json agrees with the file: the cause is
    reported once, not again as train.json disagreeing with the entry."""
    CASES["MIS015"](reg)
    found = {f.code for f in validate_registry(reg, use_cache=False).findings}
    assert "MIS015" in found and "TRN008" not in found


def test_trn006_is_only_a_note(registry_template: Path) -> None:
    report = validate_registry(registry_template, use_cache=False)
    notes = [f for f in report.findings if f.code == "TRN006"]
    assert [f.path for f in notes] == [STATE_TRAIN]  # the MiSS train.json records its commit


def test_trn002_is_about_rwkv_lightning_cuda_versions(reg: Path) -> None:
    """Another trainer's own version numbers are not compared with rwkv_lightning_cuda's 1.8.1."""
    json_edit(reg, STATE_TRAIN, lambda t: t["trainer"].update(name="rwkv_peft_state", version="0.3.0"))
    assert "TRN002" not in {f.code for f in validate_registry(reg, use_cache=False).findings}


def test_score_checks_pass_consistent_numbers(reg: Path) -> None:
    """The seed's own figures (+95/-54, p = 0.001; 12/17 abstention; two runs) are consistent."""
    ok = score_record(
        comparison=vs_state(95, 54, 0.001),
        by_category={"abstention": {"solved": 12, "total": 17}},
        run_scores=[52.0, 52.4],
    )
    assert not {"IDX008", "IDX009"} & scores_codes(reg, ok)


@pytest.mark.parametrize(
    "edit",
    [
        {"solved": 600},
        {"by_category": {"abstention": {"solved": 18, "total": 17}}},
        {"run_scores": [52.0]},
        {"comparison": vs_state(95, 54, 0.001) | {"against": "nobody"}},
        {"comparison": vs_state(500, 100, 0.0)},
    ],
    ids=["solved", "category", "run-count", "against", "differing"],
)
def test_score_inconsistencies_are_idx008(reg: Path, edit: dict[str, Any]) -> None:
    assert "IDX008" in scores_codes(reg, score_record(**edit))


def test_idx020_is_two_scores_of_one_run_only(reg: Path) -> None:
    """The same benchmark on another day or backend is another run: no IDX020; the same run twice is one."""
    other_day, other_backend = (
        score_record(date="2026-10-16"),
        score_record(backend="App harness; backend of 2026-10-17"),
    )
    assert "IDX020" not in scores_codes(reg, score_record(), other_day, other_backend)
    scores_codes(reg, score_record(), other_backend, score_record(score=52.3, solved=297.0))
    found = [f.message for f in validate_registry(reg, use_cache=False).findings if f.code == "IDX020"]
    assert found == ["entry 'v2-r4-a', exam 2026-10-17: a second score of that run (backend not recorded)"]


@pytest.mark.parametrize(("below", "bad"), [("v2-r4-a", False), ("nobody", True), ("s1", True)])
def test_on_top_of_names_another_weight(reg: Path, below: str, bad: bool) -> None:
    """A State trained on top of an adapter records it (seed 003's native composition)."""
    entry_edit(STATE, lambda e: set_key(e, "on_top_of", below))(reg)
    found = [f.message for f in validate_registry(reg, use_cache=False).findings if f.code == "IDX008"]
    assert found == ([f"entry 's1': on_top_of {below!r} is no other entry or unpublished weight"] if bad else [])


def test_unpublished_ids_share_the_entry_id_space_and_need_a_known_base(reg: Path) -> None:
    def add(index: dict[str, Any]) -> None:
        u = {
            "id": "s1",
            "base": "nowhere",
            "method": "miss",
            "data": {"version": "v2.0"},
            "description": "",
            "scores": [],
        }
        index["unpublished"] = [u]

    edit_index(reg, add)
    refresh(reg, STATE)
    found = [(f.code, f.message) for f in validate_registry(reg, use_cache=False).findings]
    assert ("IDX001", "unpublished id 's1' is also used by an entry or listed twice") in found
    assert any(c == "IDX002" and "unpublished weight 's1'" in m for c, m in found)


def test_miss_scale_in_the_index_is_checked(reg: Path) -> None:
    entry_edit(MISS_A, lambda e: set_key(e, "miss", dict(e["miss"], scale=e["miss"]["scale"] * 2)))(reg)
    found = [f for f in validate_registry(reg, use_cache=False).findings if f.code == "MIS015"]
    assert [f.message.split(" is ")[0] for f in found] == ["index.json scale"]


def test_trn006_also_when_the_commit_is_absent(reg: Path) -> None:
    json_edit(reg, MISS_TRAIN, lambda t: t["trainer"].pop("commit"))
    assert MISS_TRAIN in {f.path for f in validate_registry(reg, use_cache=False).findings if f.code == "TRN006"}


def test_state_train_json_without_times_is_valid(reg: Path) -> None:
    """The user's State train.json records no start or end time (seed 000)."""
    json_edit(reg, STATE_TRAIN, lambda t: [t.pop("started"), t.pop("finished")])
    resum(reg)
    assert validate_registry(reg, use_cache=False).ok


def test_a_broken_index_does_not_blame_the_base_directories(reg: Path) -> None:
    """With index.json unparseable, the weights' directories are not called unregistered (LAY002)."""
    _text(reg, "index.json", "{")
    codes = {f.code for f in validate_registry(reg, use_cache=False).findings}
    assert "SCH001" in codes and "LAY002" not in codes


# --- branches of single rules that the table above reaches only one way ------------------------------


def _lay009_paths(reg: Path) -> list[str]:
    """Paths of the LAY009 findings that compare an entry's fields with its path (not its `train`)."""
    return [
        f.path
        for f in validate_registry(reg, use_cache=False).findings
        if f.code == "LAY009" and f.message.endswith("does not match its path")
    ]


LAY009_CASES: dict[str, tuple[str, Callable[[dict[str, Any]], None], str]] = {
    # name: (entry, edit, the entry's path afterwards); each breaks one of base, method, data version, group, name
    "miss-under-state": (
        MISS_A,
        lambda e: set_key(e, "path", MISS_A.replace("/miss/", "/state/")),
        MISS_A.replace("/miss/", "/state/"),
    ),
    "state-under-miss": (
        STATE,
        lambda e: set_key(e, "path", STATE.replace("/state/", "/miss/")),
        STATE.replace("/state/", "/miss/"),
    ),
    "base": (STATE, lambda e: set_key(e, "base", "rwkv7-other-20260101-ctx4096"), STATE),
    "data-version": (STATE, lambda e: set_key(e, "data", dict(e["data"], version="v9")), STATE),
    "group": (MISS_A, lambda e: set_key(e, "group", "r4-b"), MISS_A),
    "file-name": (
        MISS_A,
        lambda e: set_key(e, "path", MISS_A.replace("adapter-final.pth", "adapter.pth")),
        MISS_A.replace("adapter-final.pth", "adapter.pth"),
    ),
}


@pytest.mark.parametrize("case", sorted(LAY009_CASES))
def test_lay009_each_field_of_the_path_is_compared(case: str, reg: Path) -> None:
    """LAY009 compares the entry's base, method, data version and group (and the adapter's file name) with its
    path; the train-path variant of LAY009 does not count here."""
    rel, edit, path = LAY009_CASES[case]
    entry_edit(rel, edit)(reg)
    assert _lay009_paths(reg) == [path]


def test_lay009_clean_entries_match_their_paths(registry_template: Path) -> None:
    assert _lay009_paths(registry_template) == []


@pytest.mark.parametrize(("key", "value"), [("rank", 8), ("alpha", 16), ("scale", 4.0), ("dtype", "float16")], ids=str)
def test_mis015_each_miss_field_of_the_index_is_compared(reg: Path, key: str, value: Any) -> None:
    """rank, alpha, scale and dtype of index.json's miss record are each compared with the embedded manifest."""
    entry_edit(MISS_A, lambda e: set_key(e, "miss", dict(e["miss"], **{key: value})))(reg)
    found = [f for f in validate_registry(reg, use_cache=False).findings if f.code == "MIS015"]
    assert [(f.path, f.message.split(" is ")[0]) for f in found] == [(MISS_A, f"index.json {key}")]


def test_trn003_data_rows_is_compared(reg: Path) -> None:
    json_edit(reg, STATE_TRAIN, lambda t: t["data"].update(rows=101))
    found = [(f.path, f.message) for f in validate_registry(reg, use_cache=False).findings if f.code == "TRN003"]
    assert found == [(STATE_TRAIN, "data.rows is 101, entry 's1' records 100")]


@pytest.mark.parametrize(
    ("version", "old"),
    [
        ("1.8.0", True),
        ("1.7.99", True),
        ("v1.8.0", True),
        ("1.8.1", False),
        ("v1.8.1", False),
        ("1.8.2", False),
        ("1.10.0", False),
        # pre-releases of 1.8.1 are older than 1.8.1 (PEP 440 / semver); before the fix they passed as 1.8.1
        ("1.8.1-rc1", True),
        ("1.8.1rc1", True),
        ("v1.8.1-beta.2", True),
        ("1.8.1.dev3", True),
        ("1.8.1-rc.1.x", True),  # not PEP 440: semver, a `-` suffix is a pre-release
        ("1.8.2-rc1", False),
        ("1.8.1.post1", False),
        ("1.8.1+cu128", False),
        ("1.8.1-3-g47df608", False),  # git describe: three commits after the tag
        ("1.8.0-3-g47df608", True),
        ("1.8.1 (47df608)", False),
    ],
)
def test_trn002_threshold_is_1_8_1(reg: Path, version: str, old: bool) -> None:
    """Versions compare as numbers: 1.8.0 is older than the minimum, 1.8.1 itself and 1.10.0 are not. The schema
    allows a leading v: v1.8.0 is as old as 1.8.0 (mutant: a version with a v was never compared)."""
    json_edit(reg, STATE_TRAIN, lambda t: t["trainer"].update(version=version))
    found = [f.message for f in validate_registry(reg, use_cache=False).findings if f.code == "TRN002"]
    assert found == ([f"trainer rwkv_state_tune {version} is older than 1.8.1"] if old else [])


@pytest.mark.parametrize(
    ("wins", "losses", "p", "bad"),
    [
        (95, 54, 0.05, True),  # exact 0.000983: off by 0.049, beyond the 0.005 floor
        (95, 54, 0.001, False),  # the exact value as papers round it
        (95, 54, 0.00098, False),
        (95, 54, 0.0055, False),  # within the 0.005 floor
        (95, 54, 0.0065, True),
        (10, 12, 0.7, False),  # exact 0.832: within 25 %
        (10, 12, 0.5, True),
    ],
)
def test_idx009_tolerance(reg: Path, wins: int, losses: int, p: float, bad: bool) -> None:
    """IDX009 allows max(0.005, 25 % of the exact p) for rounding, and no more."""
    assert ("IDX009" in scores_codes(reg, score_record(comparison=vs_state(wins, losses, p)))) is bad


def test_comparison_counts_beyond_the_exact_test_break_the_schema_and_stop_quickly(reg: Path) -> None:
    """wins or losses above 10^9 are refused by score.schema.json; the recomputation no longer hangs on them."""
    huge = score_record(total=4 * 10**12, comparison=vs_state(2 * 10**12, 54, 0.001))
    edit_index(reg, lambda i: next(e for e in i["entries"] if e["path"] == MISS_A).update(scores=[huge]))
    found = validate_registry(reg, use_cache=False).findings
    assert any(f.code == "SCH002" and "is more than the maximum 1000000000" in f.message for f in found)
    assert "IDX009" not in {f.code for f in found}
    assert "IDX009" not in scores_codes(
        reg, score_record(total=2 * 10**9, comparison=vs_state(10**9, 10**9 - 5, 0.9999))
    )


@pytest.mark.parametrize(
    ("text", "unrouted"),
    [
        ("*.pth diff=lfs merge=lfs -text\n*.safetensors filter=lfs diff=lfs merge=lfs -text\n", [".pth"]),
        ("*.pth filter=lfs diff=lfs merge=lfs -text\n# *.safetensors filter=lfs\n", [".safetensors"]),
        ("*.pth filter=lfs diff=lfs merge=lfs -text\n*.safetensors filter=lfs diff=lfs merge=lfs -text\n", []),
        ("* filter=lfs diff=lfs merge=lfs -text\n", []),
    ],
    ids=["no-filter", "commented", "both", "everything"],
)
def test_lfs002_needs_filter_lfs(reg: Path, text: str, unrouted: list[str]) -> None:
    """diff=lfs and merge=lfs without filter=lfs store the weights in git itself."""
    _text(reg, ".gitattributes", text)
    resum(reg)
    found = [(f.path, f.message) for f in validate_registry(reg, use_cache=False).findings if f.code == "LFS002"]
    assert found == [(".gitattributes", f"*{s} files are not routed through Git LFS") for s in unrouted]


@pytest.mark.parametrize(("step", "bad"), [(1373, False), (1374, False), (1375, True)])
def test_idx008_step_may_equal_total_steps(reg: Path, step: int, bad: bool) -> None:
    """The final checkpoint of a run has step == total_steps; only a step beyond it is inconsistent."""
    entry_edit(STATE, lambda e: e.update(step=step, total_steps=1374))(reg)
    found = [f.message for f in validate_registry(reg, use_cache=False).findings if f.code == "IDX008"]
    assert found == ([f"entry 's1': step {step} is beyond total_steps 1374"] if bad else [])


@pytest.mark.parametrize(
    ("sampling", "message"),
    [
        ("g1k-agnet", "entry 's1': sampling 'g1k-agnet' is not a preset of RWKV-Agent's presets.go (did you mean "
         "'g1k-agent'?)"),
        ("G1K-Stable", "entry 's1': sampling 'G1K-Stable' is not a preset of RWKV-Agent's presets.go (did you mean "
         "'g1k-stable'?)"),
        ("hot", "entry 's1': sampling 'hot' is not a preset of RWKV-Agent's presets.go"),
        ("", "entry 's1': sampling '' is not a preset of RWKV-Agent's presets.go"),
    ],
)  # fmt: skip
def test_prf003_names_the_preset_and_the_nearest_one(reg: Path, sampling: str, message: str) -> None:
    entry_edit(STATE, lambda e: set_key(e, "sampling", sampling))(reg)
    found = validate_registry(reg, use_cache=False).findings
    [f] = [f for f in found if f.code == "PRF003"]
    assert (f.path, f.message, f.severity) == (STATE, message, "error")
    assert "greedy, g1k-agent, g1k-agent-fast, g1k-stable or backend" in f.hint
    assert not [g for g in found if g.code.startswith("SCH")]  # a string is the rule's to judge, once


def test_a_sampling_that_is_no_string_is_the_schemas_not_prf003(reg: Path) -> None:
    entry_edit(STATE, lambda e: set_key(e, "sampling", 5))(reg)
    found = validate_registry(reg, use_cache=False).findings
    assert "PRF003" not in {f.code for f in found}
    assert any(f.code == "SCH002" and "sampling" in f.message and "expected string" in f.message for f in found)


@pytest.mark.parametrize("preset", ["greedy", "g1k-agent", "g1k-agent-fast", "g1k-stable", "backend"])
def test_every_preset_of_presets_go_passes_prf003(reg: Path, preset: str) -> None:
    entry_edit(STATE, lambda e: set_key(e, "sampling", preset))(reg)
    assert "PRF003" not in {f.code for f in validate_registry(reg, use_cache=False).findings}


def test_trn012_finished_before_started_overall_and_per_run(reg: Path) -> None:
    """The whole training's times and each MiSS run's; an offset is read (08:00+08:00 is 00:00Z): the same instant
    is no error, a time that is not RFC 3339 is SCH003's alone."""
    json_edit(
        reg, STATE_TRAIN, lambda t: t.update(started="2026-10-12T08:00:00+08:00", finished="2026-10-12T00:00:00Z")
    )
    json_edit(reg, MISS_TRAIN, lambda t: t["runs"][1].update(finished="2026-10-12T07:00:00Z"))
    found = [(f.path, f.message) for f in validate_registry(reg, use_cache=False).findings if f.code == "TRN012"]
    assert found == [
        (MISS_TRAIN, "runs[1] ('r4-b'): finished 2026-10-12T07:00:00Z is before started 2026-10-12T08:00:00Z")
    ]
    json_edit(reg, STATE_TRAIN, lambda t: t.update(finished="2026-10-11T23:59:59Z"))
    json_edit(reg, MISS_TRAIN, lambda t: t["runs"][1].update(finished="yesterday"))
    report = validate_registry(reg, use_cache=False)
    found = [(f.path, f.message) for f in report.findings if f.code == "TRN012"]
    assert found == [(STATE_TRAIN, "finished 2026-10-11T23:59:59Z is before started 2026-10-12T08:00:00+08:00")]
    assert any(f.code == "SCH003" and f.path == MISS_TRAIN for f in report.findings)


def test_trn013_names_the_field_a_misspelt_key_meant(reg: Path) -> None:
    """train.json's top level and its runs may hold keys of their own: one close to a field gets the field's name
    (the "did you mean" of the schema's closed objects, SCH003); an "x-" key, a key far from every field, or a
    near key beside the field itself are left alone."""
    json_edit(reg, MISS_TRAIN, lambda t: t.update(comand=t.pop("command"), notes="mine", **{"x-finshed": 1}))
    json_edit(reg, MISS_TRAIN, lambda t: t["runs"][0].update(lr_fianl=t["runs"][0].pop("lr_final")))
    json_edit(reg, STATE_TRAIN, lambda t: t.update(commands="both"))
    report = validate_registry(reg, use_cache=False)
    found = sorted((f.path, f.message) for f in report.findings if f.code == "TRN013")
    assert found == [
        (MISS_TRAIN, '$.comand: unknown key "comand" (did you mean "command"?)'),
        (MISS_TRAIN, '$.runs[0].lr_fianl: unknown key "lr_fianl" (did you mean "lr_final"?)'),
    ]
    assert all(f.severity == "warning" for f in report.findings if f.code == "TRN013")
    # the schema's own closed objects keep their SCH003 with its "did you mean"
    json_edit(reg, STATE_TRAIN, lambda t: t["trainer"].update(comit="47df608"))
    sch = [f.message for f in validate_registry(reg, use_cache=False).findings if f.code == "SCH003"]
    assert any('unknown property "comit" (did you mean "commit"?)' in m for m in sch), sch


def _f16(*bits: int) -> bytes:
    return struct.pack(f"<{len(bits)}H", *bits)


def test_float16_infinities_and_nans_are_all_counted_and_65504_is_not() -> None:
    """M28: (u & 0x7E00) == 0x7E00 took only the quiet NaNs for bad: an fp16 ±Inf passed MIS010.
    M32: the count of bad values reported as 1 whatever it was."""
    data = _f16(0x3C00, 0x7BFF, 0xFBFF, 0x7C00, 0x0001, 0xFC00, 0x7C01, 0x7E00)  # 1, ±65504, +Inf, tiny, -Inf, NaNs
    count, first = scan_values(data, "float16")
    assert count == 4
    assert first == math.inf
    assert scan_values(_f16(0x3C00, 0x7BFF, 0xFBFF, 0x0001, 0x8000), "float16") == (0, None)


def test_bfloat16_bad_values_are_counted_one_by_one() -> None:
    """M32 for bfloat16: three bad values (65536, -Inf, NaN) are three, the first one named."""
    data = _f16(0x3F80, 0x4780, 0x477F, 0xFF80, 0x7FC0)  # 1, 65536, 65280, -Inf, NaN
    assert scan_values(data, "bfloat16") == (3, 65536.0)


def test_the_writer_refuses_a_d_tensor_whose_second_size_is_not_the_rank() -> None:
    """M33: build_manifest checked the D shape's length only: a [out, 8] tensor went into a rank-4 manifest."""
    name = "blocks.0.att.key.weight.D"
    with pytest.raises(ValueError, match=r"is not \[out, 4\]"):
        build_manifest({name: (16, 8)}, rank=4, alpha=8.0, base_fingerprint="0" * 64, in_features={name: 16})
    manifest = build_manifest({name: (16, 4)}, rank=4, alpha=8.0, base_fingerprint="0" * 64, in_features={name: 16})
    assert manifest["targets"][0]["shape"] == [16, 4] and manifest["scale"] == 2.0


def test_the_writer_refuses_a_tensor_of_another_dtype_than_the_package(tmp_path: Path) -> None:
    """M36: without write_miss_file's dtype check, float16 D bytes were written in a package whose manifest
    says bfloat16 (another content, the same content_version rules): nothing is written."""
    from rwkv_registry.formats.pthwrite import RawTensor

    name = "blocks.0.att.key.weight.D"
    dest = tmp_path / "adapter-final.pth"
    with pytest.raises(ValueError, match="dtype float16 differs from package dtype bfloat16"):
        write_miss_file(
            dest,
            {name: RawTensor("float16", (16, 4), bytes(128))},
            rank=4,
            alpha=8.0,
            base_fingerprint="0" * 64,
            in_features={name: 16},
        )
    assert not dest.exists()


@pytest.mark.parametrize("name", ["blocks.0.att.gate.weight.D", "blocks.0.ln1.weight.D", "blocks.x.att.key.weight.D"])
def test_the_writer_refuses_a_tensor_that_is_no_miss_target(name: str) -> None:
    """M37: build_manifest checked the name's form only: a D tensor of a layer MiSS never targets (att.gate,
    which the server refuses as MIS016) went into the manifest."""
    with pytest.raises(ValueError, match="is not a MiSS tensor name"):
        build_manifest({name: (16, 4)}, rank=4, alpha=8.0, base_fingerprint="0" * 64, in_features={name: 16})


def test_a_value_of_80_characters_is_quoted_whole_and_a_longer_one_cut() -> None:
    """M38: _short cut a repr of exactly its limit (80 characters) too."""
    from rwkv_registry.checks.miss import check_manifest

    def message(target: str) -> str:
        findings, _ = check_manifest({"targets": [{"layer": 0, "target": target}]}, "a.pth")
        return next(f.message for f in findings if f.code == "MIS016")

    assert message("x" * 78).endswith("target is '" + "x" * 78 + "'")
    assert message("x" * 79).endswith("target is '" + "x" * 78 + "…")


V1 = f"{TINY_BASE}/state/v1"


def _register_copy(root: Path, name: str) -> str:
    """The State copied to ``name`` beside it and registered as a second entry (IDX011)."""
    copy = f"{V1}/{name}"
    shutil.copy(root / STATE, root / copy)

    def add(index: dict[str, Any]) -> None:
        e = json.loads(json.dumps(next(e for e in index["entries"] if e["path"] == STATE)))
        e.update(id=name.removesuffix(".pth"), path=copy, recommended=False)
        index["entries"].append(e)

    edit_index(root, add)
    resum(root)
    return copy


# --- LAY014 ------------------------------------------------------------------------------------------------


def test_lay014_a_renamed_directory_drops_the_findings_on_its_moved_train_json(reg: Path) -> None:
    """TRN006 (and TRN003) of the moved train.json are part of the move: only LAY014 is left."""
    (reg / V1).rename(reg / f"{V1}.0")
    assert all_codes(validate_registry(reg, use_cache=False)) == ["GIT004", "LAY014"]


def test_lay014_two_equally_good_copies_are_not_guessed(reg: Path) -> None:
    """The recorded file gone, its bytes at two new names, neither closer to the old one: no LAY014."""
    (reg / STATE).rename(reg / f"{V1}/s3.pth")
    shutil.copy(reg / f"{V1}/s3.pth", reg / f"{V1}/s4.pth")
    codes = {f.code for f in findings(reg)}
    assert "LAY014" not in codes and {"LAY008", "LAY007", "HSH004", "HSH005"} <= codes


def test_lay014_an_edited_upper_case_sha256_still_matches(reg: Path) -> None:
    """index.json's path edited and its sha256 in upper case (SCH002): the bytes still match the file."""
    moved = MISS_A.replace("adapter-final.pth", "adapter.pth")

    def edit(index: dict[str, Any]) -> None:
        e = next(e for e in index["entries"] if e["path"] == MISS_A)
        e.update(path=moved, file=dict(e["file"], sha256=e["file"]["sha256"].upper()))

    edit_index(reg, edit)
    [f] = findings(reg, "LAY014")
    assert f.path == MISS_A and f"index.json records {moved}" in f.message


def test_lay014_a_directory_moved_to_the_top_keeps_lay002(reg: Path) -> None:
    """A version directory moved out to the top: LAY014, and LAY002 for the new top-level directory stays
    (only a renamed base directory makes LAY002 + LAY003 part of the move)."""
    (reg / V1).rename(reg / "stray")
    found = [(f.code, f.path) for f in findings(reg) if f.severity == "error"]
    assert sorted(found) == [("LAY002", "stray"), ("LAY014", "stray")]


def test_lay014_one_new_copy_answers_one_missing_file(reg: Path) -> None:
    """Two registered files with the same bytes both gone, one file with those bytes left: it is matched once;
    the other missing file stays LAY008."""
    copy = _register_copy(reg, "s2.pth")
    (reg / STATE).rename(reg / f"{V1}/s9.pth")
    (reg / copy).unlink()
    found = findings(reg)
    assert [f.path for f in found if f.code == "LAY014"] == [f"{V1}/s9.pth"]
    assert (copy, "LAY008") in {(f.path, f.code) for f in found}


# --- LAY013, HSH001's git note -------------------------------------------------------------------------


def test_lay013_not_without_a_lock_file(reg: Path) -> None:
    (reg / ".rwkv-registry.lock").unlink(missing_ok=True)
    assert findings(reg, "LAY013") == []


@pytest.mark.skipif(shutil.which("git") is None, reason="git not installed")
def test_hsh001_git_note_in_a_registry_below_the_repository_root(reg: Path, tmp_path: Path) -> None:
    from regtools import git_publish

    outer = tmp_path / "outer"
    outer.mkdir()
    root = Path(shutil.move(reg, outer / "registry"))
    git_publish(outer)
    # index.json edited (a published file edited is GIT001 alone, naming HSH001: test_git.py)
    edit_index(root, lambda i: i["entries"][0]["file"].update(sha256="0" * 64))
    [f] = findings(root, "HSH001")
    assert f.path == STATE and f.message.endswith("(git: index.json changed since HEAD)")


# --- IDX011 / IDX010 -----------------------------------------------------------------------------------


def test_idx011_not_for_two_lfs_pointers_of_one_object(reg: Path) -> None:
    """Two LFS pointers with one oid are not the bytes (LFS001 says `git lfs pull`), so no IDX011."""
    copy = _register_copy(reg, "s1-copy.pth")
    oid = hashlib.sha256(b"x").hexdigest()
    for rel in (STATE, copy):
        (reg / rel).write_text(f"version https://git-lfs.github.com/spec/v1\noid sha256:{oid}\nsize 123\n")
    resum(reg)
    found = findings(reg)
    assert "LFS001" in {f.code for f in found} and [f for f in found if f.code == "IDX011"] == []


def test_idx011_every_copy_names_the_first_entry(reg: Path) -> None:
    a = _register_copy(reg, "s1-a.pth")
    b = _register_copy(reg, "s1-b.pth")
    found = {f.path: f.message for f in findings(reg, "IDX011")}
    assert set(found) == {a, b}
    assert all(f"entry 's1' at {STATE}" in m for m in found.values())


def test_idx010_a_sha256_in_upper_case_is_the_same_file(reg: Path) -> None:
    same_base_file_twice(reg)
    edit_index(reg, lambda i: i["bases"][1].update(sha256=i["bases"][1]["sha256"].upper()))
    [f] = findings(reg, "IDX010")
    assert f"{TINY_BASE}-copy" in f.message


def test_idx010_a_third_copy_names_the_first_base(reg: Path) -> None:
    same_base_file_twice(reg)

    def third(index: dict[str, Any]) -> None:
        b = json.loads(json.dumps(index["bases"][0]))
        b.update(name=f"{TINY_BASE}-third", source=dict(b["source"], file=f"{TINY_BASE}-third.pth"))
        index["bases"].append(b)

    edit_index(reg, third)
    found = findings(reg, "IDX010")
    assert len(found) == 2 and all(f.message.startswith(f"bases {TINY_BASE!r} and ") for f in found)


def test_idx010_not_for_a_base_listed_twice(reg: Path) -> None:
    """The same name twice is IDX001; its sha256 is no second base file."""
    edit_index(reg, lambda i: i["bases"].append(json.loads(json.dumps(i["bases"][0]))))
    found = {f.code for f in findings(reg)}
    assert "IDX001" in found and "IDX010" not in found


# --- HSH007: CR LF -----------------------------------------------------------------------------------------


def test_hsh007_one_crlf_line_is_reported(reg: Path) -> None:
    p = reg / "SHA256SUMS"
    lines = p.read_bytes().split(b"\n")
    lines[2] += b"\r"
    p.write_bytes(b"\n".join(lines))
    sums = [(f.code, f.message) for f in findings(reg) if f.code.startswith("HSH")]
    assert sums == [("HSH007", "1 line(s) end in CR LF (first: line 3), not LF")]


def test_parse_sums_skips_a_blank_crlf_line() -> None:
    lines, bad = parse_sums(b"0" * 64 + b"  a\r\n\r\n" + b"1" * 64 + b"  b\r\n")
    assert [(line.lineno, line.path, line.crlf) for line in lines] == [(1, "a", True), (3, "b", True)]
    assert bad == []


# --- ops: add, sums ----------------------------------------------------------------------------------------


def test_add_of_a_registry_into_a_registry_is_not_called_swapped(reg: Path, tmp_path: Path) -> None:
    """FILE a registry, PATH a registry too: nothing is swapped, FILE is a directory."""
    other = tmp_path / "other"
    shutil.copytree(reg, other)
    with pytest.raises(UsageError, match="is a directory, not a weight file"):
        add_entry(reg, other, base=TINY_BASE, data_version="v9", train=state_train("v9"))


def test_sums_written_where_none_was_warns_of_an_existing_signature(
    reg: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """SHA256SUMS gone (unreadable) beside SHA256SUMS.sig: the signature cannot match what is written."""
    (reg / "SHA256SUMS.sig").write_bytes(b"sig")
    (reg / "SHA256SUMS").unlink()
    write_sums(reg)
    assert "no longer matches it" in capsys.readouterr().err


# --- GIT003: only <base>/state/.gitkeep and <base>/miss/.gitkeep are placeholders ------------------------


@pytest.mark.skipif(shutil.which("git") is None, reason="git not installed")
def test_git003_an_empty_file_deeper_under_a_gitkeep_folder_is_no_placeholder(reg: Path) -> None:
    from regtools import add_base_by_metadata, git_publish

    git_publish(reg)
    older = TINY_BASE.replace("20260101", "20250101")
    add_base_by_metadata(reg, older)  # superseded at once: closed
    keep = reg / older / "miss" / ".gitkeep"
    keep.unlink()
    keep.mkdir()
    (keep / "x").write_bytes(b"")
    resum(reg)
    assert [f.path for f in findings(reg, "GIT003")] == [f"{older}/miss/.gitkeep/x"]


@pytest.mark.skipif(shutil.which("git") is None, reason="git not installed")
def test_add_base_of_another_family_ignores_a_base_superseded_before(reg: Path) -> None:
    """Only the bases that the new base closes are checked for uncommitted files: one superseded already
    (kept active) is GIT003's business, not a reason to refuse an unrelated base."""
    from regtools import add_base_by_metadata, git_publish

    git_publish(reg)
    add_base_by_metadata(reg, TINY_BASE.replace("20260101", "20260301"), freeze_previous=False)
    (reg / V1 / "notes.txt").write_text("uncommitted")
    assert "GIT003" in {f.code for f in findings(reg)}
    add_base_by_metadata(reg, "rwkv7-other-20270101-ctx4096")


def test_add_to_a_version_ignores_entries_of_a_longer_version_name(reg: Path, tmp_path: Path) -> None:
    """Adding to v1 reads the entries under v1/, not those under v10/ (whose data.version differs)."""
    add_entry(reg, write_state(tmp_path / "a" / "s10.pth", seed=10), base=TINY_BASE, data_version="v10",
              train=state_train("v10"))  # fmt: skip
    added = add_entry(reg, write_state(tmp_path / "b" / "s11.pth", seed=11), base=TINY_BASE, data_version="v1",
                      train=state_train("v1"))  # fmt: skip
    assert added["path"] == f"{TINY_BASE}/state/v1/s11.pth"
    by_path = {e["path"]: e for e in json.loads((reg / "index.json").read_text())["entries"]}
    assert by_path[f"{TINY_BASE}/state/v10/s10.pth"]["data"]["version"] == "v10"  # left as it was
    assert by_path[added["path"]]["data"]["version"] == "v1"
    assert validate_registry(reg, use_cache=False).ok


def test_sums_refuses_a_missing_registered_file_as_lay008(reg: Path) -> None:
    (reg / STATE).unlink()
    with pytest.raises(RefusedError, match=r"SHA256SUMS not written: LAY008 .*is missing"):
        write_sums(reg)


def test_lay014_a_base_moved_into_a_folder_names_both_paths(reg: Path) -> None:
    """The shared tail may not swallow a whole path: the old prefix was empty ('' looks renamed to archive/)."""
    (reg / "archive").mkdir()
    (reg / TINY_BASE).rename(reg / "archive" / TINY_BASE)
    [f] = [f for f in validate_registry(reg, use_cache=False).findings if f.code == "LAY014"]
    assert f.message.startswith(f"{TINY_BASE}/ looks renamed to archive/{TINY_BASE}/ (")
    assert f.extra["moved_from"] == TINY_BASE


def test_lay014_pairs_best_matches_first(reg: Path) -> None:
    """Two entries with one content, one of them deleted after a rename: the survivor pairs with the file of
    its own name, not with the one that sorts first (s1-copy < s1)."""
    v1 = f"{TINY_BASE}/state/v1"
    shutil.copy(reg / STATE, reg / v1 / "s1-copy.pth")

    def add_copy(index: dict[str, Any]) -> None:
        e = json.loads(json.dumps(next(e for e in index["entries"] if e["path"] == STATE)))
        e.update(id="s1-copy", path=f"{v1}/s1-copy.pth", recommended=False)
        index["entries"].append(e)

    edit_index(reg, add_copy)
    resum(reg)
    (reg / v1).rename(reg / f"{v1}.0")
    (reg / f"{v1}.0" / "s1-copy.pth").unlink()
    findings = validate_registry(reg, use_cache=False).findings
    moved = [f for f in findings if f.code == "LAY014"]
    assert [f.path for f in moved] == [f"{v1}.0"] and f"{v1}/ looks renamed to {v1}.0/" in moved[0].message
    assert [f.path for f in findings if f.code == "LAY008"] == [f"{v1}/s1-copy.pth"]  # the one really gone


# --- third audit (stop 19's code) ---------------------------------------------------------------------------


@pytest.mark.parametrize("junk", ["r4-a", ["r4-a"], {"group": ["r4-a"], "lr": 3e-5}])
def test_trn009_reads_past_a_run_that_is_no_object_or_has_no_group_name(reg: Path, junk: Any) -> None:
    """A run of a MiSS train.json that is not an object, or whose group is a list, is the schema's finding
    (SCH003); the group-name check (TRN009) reads on past it: the train.json rules are not skipped (SCH005)."""
    rel = f"{TINY_BASE}/miss/v2/train.json"
    t = json.loads((reg / rel).read_text())
    good = next(r for r in t["runs"] if r["group"] == "r4-a")
    t["runs"] = [junk, {**good, "group": "r4-a"}, *(r for r in t["runs"] if r["group"] != "r4-a")]
    (reg / rel).write_text(json.dumps(t, indent=2))
    resum(reg)
    found = findings(reg)
    assert any(f.code == "SCH003" and f.path == rel for f in found), [f.code for f in found]
    assert not any(f.code in ("SCH005", "TRN004") for f in found), [f.message for f in found]


def test_idx016_reads_past_weights_whose_data_is_no_object(reg: Path) -> None:
    """An unpublished weight whose data is not an object is the schema's finding; the data versions of the
    weights after it are still compared (IDX016), and the rule is not skipped (SCH005)."""
    from regtools import DATA_SHA

    def add(index: dict[str, Any]) -> None:
        item = {"base": TINY_BASE, "method": "state", "description": "", "scores": []}
        index["unpublished"] = [
            item | {"id": "u0", "data": "v1"},
            item | {"id": "u1", "data": {"version": "v1", "rows": 3662, "sha256": DATA_SHA}},
        ]

    edit_index(reg, add)
    found = findings(reg)
    assert not any(f.code == "SCH005" and "check_data_versions" in f.message for f in found)
    idx016 = [f.message for f in found if f.code == "IDX016"]
    assert len(idx016) == 1 and "records rows" in idx016[0] and "'u1'" in idx016[0], idx016


@pytest.mark.parametrize("command", [5, None, ["rwkv_state_tune", "--lr", "0.01"]])
def test_trn010_reads_past_a_command_line_that_is_no_string(reg: Path, command: Any) -> None:
    """SCH003 only: TRN010 has no command line to read, and the train.json rules are not skipped (no SCH005)."""
    path = reg / V1 / "train.json"
    t = json.loads(path.read_text())
    t["command"] = command
    path.write_text(json.dumps(t))
    resum(reg)
    codes = {f.code for f in findings(reg)}
    assert "SCH003" in codes and not codes & {"SCH005", "TRN010"}, codes


def test_idx016_compares_the_rows_of_a_weight_that_records_no_data_sha256(reg: Path) -> None:
    """An unpublished weight recording its rows and no sha256 (null): the rows are still compared."""

    def add(index: dict[str, Any]) -> None:
        item = {"base": TINY_BASE, "method": "state", "description": "", "scores": []}
        index["unpublished"] = [item | {"id": "u1", "data": {"version": "v1", "rows": 99, "sha256": None}}]

    edit_index(reg, add)
    found = findings(reg)
    assert not any(f.code.startswith("SCH") for f in found), [f.message for f in found]
    idx016 = [f.message for f in found if f.code == "IDX016"]
    assert len(idx016) == 1 and "records rows" in idx016[0] and "'u1' records 99" in idx016[0], idx016
