"""Failing cases for rule branches that the rule table of test_validate_rules.py does not reach.

Each test breaks one thing in the small valid registry (or in a MiSS manifest) and asserts the exact
rule code, and usually the finding's path and message; ``test_clean_registry_reports_none_of_these``
is the passing case of every code at once. The ``add`` refusals assert that nothing changed on disk.
"""

from __future__ import annotations

import copy
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from regtools import (
    TINY_ARCH,
    TINY_BASE,
    build_registry,
    edit_index,
    miss_train,
    resum,
    state_train,
    write_miss,
    write_state,
)
from test_validate_rules import MISS_A, MISS_TRAIN, STATE, custom_miss, refresh

from rwkv_registry.checks.miss import TargetSpec, check_against_base, check_manifest
from rwkv_registry.core.errors import RefusedError
from rwkv_registry.core.rules import Finding
from rwkv_registry.engine.validate import validate_registry
from rwkv_registry.store.ops import add_entry, write_readme

CODES = ("IDX001", "LAY004", "LAY006", "TRN004", "HSH007", "SCH004", "RDM001", "MIS003", "MIS007", "MIS008", "MIS014")


def findings(root: Path, code: str) -> list[Finding]:
    """Findings of one code from a fresh (uncached) validation of ``root``."""
    return [f for f in validate_registry(root, use_cache=False).findings if f.code == code]


def where(root: Path, code: str) -> dict[str, list[str]]:
    """{path: [messages]} of the findings of ``code``."""
    out: dict[str, list[str]] = {}
    for f in findings(root, code):
        out.setdefault(f.path, []).append(f.message)
    return out


def test_clean_registry_reports_none_of_these(registry_template: Path) -> None:
    """A registry built by the registry's own commands gets none of the codes tested here."""
    found = {f.code for f in validate_registry(registry_template, use_cache=False).findings}
    assert not found & set(CODES), sorted(found & set(CODES))


# --- registry/engine/validate.py ----------------------------------------------------------------------------


def test_idx001_base_listed_twice(reg: Path) -> None:
    """A user pastes the same base twice into index.json."""
    edit_index(reg, lambda i: i["bases"].append(dict(i["bases"][0])))
    assert where(reg, "IDX001") == {"index.json": [f"base {TINY_BASE!r} is listed twice"]}


def test_lay006_unsafe_train_path(reg: Path) -> None:
    """An entry's `train` points outside the registry (../)."""

    def edit(index: dict[str, Any]) -> None:
        next(e for e in index["entries"] if e["path"] == STATE)["train"] = "../train.json"

    edit_index(reg, edit)
    [message] = where(reg, "LAY006")["index.json"]
    assert "train '../train.json' is not a safe relative path" in message


def test_lay004_badly_named_data_version_directory(reg: Path) -> None:
    """A data-version folder named `latest` instead of v1.41-style."""
    (reg / TINY_BASE / "state" / "latest").mkdir()
    assert where(reg, "LAY004") == {
        f"{TINY_BASE}/state/latest": ["data-version directory 'latest' must look like v1.41"]
    }


def test_lay004_foreign_folder_under_a_base(reg: Path) -> None:
    """A folder other than state/ or miss/ directly under a base."""
    (reg / TINY_BASE / "extras").mkdir()
    assert where(reg, "LAY004") == {f"{TINY_BASE}/extras": ["a base directory holds only state/ and miss/"]}


def test_trn004_miss_run_without_group_folder(reg: Path) -> None:
    """train.json lists a MiSS run whose group folder was never published."""
    p = reg / MISS_TRAIN
    train = json.loads(p.read_text())
    train["runs"].append(dict(train["runs"][-1], group="r4-c"))
    p.write_text(json.dumps(train, indent=2))
    resum(reg)
    assert where(reg, "TRN004") == {MISS_TRAIN: [f"run 'r4-c' has no group directory {TINY_BASE}/miss/v2/r4-c/"]}


def _sums_lines(root: Path) -> list[str]:
    return (root / "SHA256SUMS").read_text().splitlines(keepends=True)


def test_hsh007_duplicate_line(reg: Path) -> None:
    """SHA256SUMS lists the same file twice (a bad merge)."""
    lines = _sums_lines(reg)
    i = next(n for n, line in enumerate(lines) if line.endswith("  index.json\n"))
    (reg / "SHA256SUMS").write_text("".join([*lines[: i + 1], lines[i], *lines[i + 1 :]]))
    messages = where(reg, "HSH007")["SHA256SUMS"]
    assert f"line {i + 2}: index.json listed twice (first on line {i + 1})" in messages


def test_hsh007_sums_lists_itself(reg: Path) -> None:
    """SHA256SUMS was regenerated with a tool that hashed SHA256SUMS too."""
    lines = _sums_lines(reg)
    own = "0" * 64 + "  SHA256SUMS\n"
    lines = sorted([*lines, own], key=lambda line: line.split("  ", 1)[1].encode())
    (reg / "SHA256SUMS").write_text("".join(lines))
    messages = where(reg, "HSH007")["SHA256SUMS"]
    assert f"line {lines.index(own) + 1}: SHA256SUMS should not be listed" in messages


def test_hsh007_duplicate_in_sorted_sums_is_not_called_unsorted(reg: Path) -> None:
    """A sorted SHA256SUMS with one duplicated line is reported for the duplicate only."""
    lines = _sums_lines(reg)
    (reg / "SHA256SUMS").write_text("".join([lines[0], *lines]))  # still sorted by path
    assert [m for m in where(reg, "HSH007")["SHA256SUMS"] if "not sorted" in m] == []


def test_sch004_index_missing(reg: Path) -> None:
    """index.json was deleted."""
    (reg / "index.json").unlink()
    assert where(reg, "SCH004") == {"index.json": ["index.json is missing"]}


def test_rdm001_readme_missing(reg: Path) -> None:
    """README.md was deleted."""
    (reg / "README.md").unlink()
    assert where(reg, "RDM001") == {"README.md": ["README.md is missing: `rwkv-registry readme PATH` writes it"]}


def test_rdm001_readme_not_utf8(reg: Path) -> None:
    """README.md was saved in Latin-1 by an editor."""
    (reg / "README.md").write_bytes((reg / "README.md").read_bytes() + "café\n".encode("latin-1"))
    [message] = where(reg, "RDM001")["README.md"]
    assert message.startswith("cannot read README.md as UTF-8:")


# --- registry/checks/miss.py ----------------------------------------------------------------------------------


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


@pytest.fixture(scope="module")
def manifest(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The manifest of a valid MiSS package, as the registry's writer embeds it."""
    return write_miss(tmp_path_factory.mktemp("miss") / "adapter-final.pth")


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


# --- registry/checks/git.py ---------------------------------------------------------------------------


@pytest.mark.skipif(shutil.which("git") is None, reason="git not installed")
def test_git003_staged_new_file_under_frozen_base(tmp_path: Path) -> None:
    """The pre-commit case: a new weight file is `git add`-ed (not committed) under a frozen base."""
    from test_git import git, publish

    root = build_registry(tmp_path / "reg", tmp_path, with_miss=False)
    publish(root, "publish v1")
    edit_index(root, lambda i: i["bases"][0].update(status="frozen"))
    write_readme(root)
    resum(root)
    git(root, "commit", "-qam", "freeze")
    assert findings(root, "GIT003") == []
    rel = f"{TINY_BASE}/state/v1/s3.pth"
    write_state(root / rel, seed=3)
    git(root, "add", "--", rel)
    assert git(root, "ls-files", "--others", "--exclude-standard") == ""  # staged, not untracked
    assert where(root, "GIT003") == {rel: [f"new file under frozen base {TINY_BASE} (in the index)"]}


# --- registry/store/ops.py: add refusals -----------------------------------------------------------------


def snapshot(root: Path) -> dict[str, bytes | None]:
    """Every file's bytes and every directory (None) under ``root``."""
    return {p.relative_to(root).as_posix(): None if p.is_dir() else p.read_bytes() for p in root.rglob("*")}


def _freeze(root: Path) -> None:
    edit_index(root, lambda i: i["bases"][0].update(status="frozen"))


ADD_CASES: dict[str, tuple[Callable[[Path], None] | None, str, dict[str, Any], str]] = {
    # name: (prepare the registry, method of the file, add_entry arguments, message)
    "frozen-base": (_freeze, "state", {"data_version": "v1", "train": state_train()}, "is frozen"),
    "method-mismatch": (
        None,
        "state",
        {"data_version": "v1", "train": miss_train("v1")},
        "--train says method 'miss', the file is a state",
    ),
    "data-version-mismatch": (
        None,
        "state",
        {"data_version": "v3", "train": state_train("v1")},
        "--train data.version is 'v1', --data-version is 'v3'",
    ),
    "no-run-for-group": (
        None,
        "miss",
        {"data_version": "v2", "train": miss_train(), "group": "r4-c"},
        "--train has no run for group 'r4-c'",
    ),
}


@pytest.mark.parametrize("case", sorted(ADD_CASES))
def test_add_refusal_changes_nothing(case: str, reg: Path, tmp_path: Path) -> None:
    """`add` refuses a file that does not fit and leaves every byte of the registry as it was."""
    prepare, method, kw, message = ADD_CASES[case]
    if prepare:
        prepare(reg)
    if method == "state":
        src = write_state(tmp_path / "src" / "s2.pth", seed=3)
    else:
        src = tmp_path / "src" / "r4-c" / "adapter-final.pth"
        write_miss(src, seed=7)
    before = snapshot(reg)
    with pytest.raises(RefusedError) as info:
        add_entry(reg, src, base=TINY_BASE, **copy.deepcopy(kw))
    assert message in info.value.message
    assert snapshot(reg) == before


def test_validating_a_folder_inside_a_registry_names_the_root(reg: Path) -> None:
    """`validate REG/<base>` is a usage error pointing at the registry root, not a list of false findings."""
    from rwkv_registry.core.errors import UsageError

    with pytest.raises(UsageError, match="lies inside the registry at") as e:
        validate_registry(reg / TINY_BASE)
    assert str(reg.resolve()) in e.value.hint


def test_lay004_names_a_bad_file_name_in_the_right_place(reg: Path) -> None:
    """A State file with spaces or emoji in its name is told so, not just 'not part of the layout'."""
    (reg / TINY_BASE / "state" / "v1" / "ñoño 🚀.pth").write_bytes(b"x")
    messages = where(reg, "LAY004")[f"{TINY_BASE}/state/v1/ñoño 🚀.pth"]
    assert messages == [
        "file name 'ñoño 🚀.pth' is not usable: letters, digits, '.', '_' and '-', starting with a letter or digit"
    ]


def test_findings_of_one_file_come_in_line_order(reg: Path) -> None:
    """HSH003 on lines 1…12 is reported 1, 2, …, 12 (not 1, 10, 11, 12, 2, …)."""
    (reg / "SHA256SUMS").write_text("".join(f"bad line {i}\n" for i in range(12)))
    lines = [int(m.split(":")[0].split()[1]) for m in where(reg, "HSH003")["SHA256SUMS"]]
    assert lines == sorted(lines) and len(lines) == 12


def test_hsh005_says_when_the_listed_file_is_a_symlink(reg: Path) -> None:
    """A README.md replaced by a symbolic link is not 'missing': the message says what it is."""
    readme = reg / "README.md"
    target = reg.parent / "elsewhere.md"
    target.write_bytes(readme.read_bytes())
    readme.unlink()
    readme.symlink_to(target)
    assert where(reg, "HSH005")["SHA256SUMS"] == ["lists README.md, which is a symbolic link (never followed)"]


# --- LAY005: symbolic links ----------------------------------------------------------------------------


def test_lay005_link_inside_the_registry_is_not_reported(reg: Path) -> None:
    """LAY005 is about links that leave the registry; one to a file inside it is not reported by LAY005."""
    (reg / TINY_BASE / "state" / "v1" / "link.pth").symlink_to("s1.pth")
    (reg / TINY_BASE / "state" / "v2").symlink_to("v1", target_is_directory=True)
    assert where(reg, "LAY005") == {}


def test_lay005_link_to_a_sibling_with_the_registry_name_as_prefix(reg: Path) -> None:
    """A link to ``<root>-evil/...`` leaves the registry although its path starts with the root's."""
    outside = reg.parent / f"{reg.name}-evil"
    outside.mkdir()
    (outside / "s9.pth").write_bytes((reg / STATE).read_bytes())
    rel = f"{TINY_BASE}/state/v1/s9.pth"
    (reg / rel).symlink_to(outside / "s9.pth")
    assert where(reg, "LAY005") == {rel: [f"symbolic link to {outside / 's9.pth'} leaves the registry"]}


# --- State files in safetensors format -------------------------------------------------------------


def _state_safetensors(path: Path, shape: tuple[int, ...] = (2, 64, 64)) -> Path:
    """A State as safetensors.torch.save_file writes it (bf16, one tensor per layer of the tiny base)."""
    import torch
    from safetensors.torch import save_file

    g = torch.Generator().manual_seed(5)
    tensors = {
        f"blocks.{i}.att.time_state": (torch.randn(shape, generator=g) * 0.1).to(torch.bfloat16)
        for i in range(TINY_ARCH["n_layer"])
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    save_file(tensors, path, metadata={"format": "pt"})
    return path


def _add_safetensors_state(reg: Path, tmp_path: Path) -> str:
    src = _state_safetensors(tmp_path / "src" / "s2.safetensors")
    add_entry(reg, src, base=TINY_BASE, data_version="v1", train=state_train())
    return f"{TINY_BASE}/state/v1/s2.safetensors"


def test_safetensors_state_validates(reg: Path, tmp_path: Path) -> None:
    """A State saved as .safetensors is registered and validates like a .pth one, but for the STA007 warning
    (rwkv_lightning_cuda's upload reads torch .pth archives only)."""
    rel = _add_safetensors_state(reg, tmp_path)
    entry = next(e for e in json.loads((reg / "index.json").read_text())["entries"] if e["path"] == rel)
    assert entry["method"] == "state"
    report = validate_registry(reg, use_cache=False)
    assert [(f.code, f.path) for f in report.findings if f.path == rel] == [("STA007", rel)]
    assert not [f for f in report.findings if f.code[:3] in ("STA", "PTH", "LAY", "IDX") and f.code != "STA007"]
    assert report.ok


def test_safetensors_state_of_the_wrong_shape_is_sta002(reg: Path, tmp_path: Path) -> None:
    """The same State replaced by one trained for another base (heads of 32): STA002 on that file."""
    rel = _add_safetensors_state(reg, tmp_path)
    _state_safetensors(reg / rel, shape=(2, 32, 32))
    refresh(reg, rel)
    assert where(reg, "STA002") == {
        rel: ["blocks.0.att.time_state has shape [2, 32, 32], the base needs [2, 64, 64] [H, V, K]"]
    }
    assert where(reg, "PTH012") == {}
