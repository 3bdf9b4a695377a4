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
from mutations import (
    entry_edit,
    json_edit,
    miss_no_manifest,
    non_state_file,
    replace_state,
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
    build_registry,
    custom_miss,
    edit_index,
    miss_train,
    refresh,
    resum,
    state_train,
    write_miss,
    write_state,
)

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
    from regtools import git, git_publish

    root = build_registry(tmp_path / "reg", tmp_path, with_miss=False)
    git_publish(root, "publish v1")
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


def _findings(root: Path, code: str | None = None) -> list[Finding]:
    found = validate_registry(root, use_cache=False).findings
    return [f for f in found if code is None or f.code == code]


def _messages(root: Path, code: str) -> list[str]:
    return [f.message for f in _findings(root, code)]


# --- LAY006: safe_rel -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [f"{TINY_BASE}/state/./v1/s1.pth", f"{TINY_BASE}\\state\\v1\\s1.pth", f"/{STATE}"],
    ids=["dot", "backslash", "absolute"],
)
def test_lay006_dot_components_backslashes_and_absolute_paths_are_unsafe(reg: Path, path: str) -> None:
    """Mutants: `.` dropped from the refused components; the backslash test dropped."""
    entry_edit(STATE, lambda e: set_key(e, "path", path))(reg)
    assert _messages(reg, "LAY006") == [f"entry 's1': path {path!r} is not a safe relative path"]


def test_safe_rel_is_the_component_test() -> None:
    """safe_rel decides on ``/path/`` by substrings: the same answers as splitting on ``/`` and refusing an empty,
    ``.`` or ``..`` component, a leading ``/``, a backslash or an empty path, for every path of up to five
    characters over ``/``, ``.``, ``a`` and a backslash, and for a few longer ones."""
    import itertools

    from rwkv_registry.index.layout import safe_rel

    def by_parts(path: object) -> bool:
        if not isinstance(path, str) or not path or path.startswith("/") or "\\" in path:
            return False
        return all(part not in ("", ".", "..") for part in path.split("/"))

    paths: list[object] = [None, 3, b"a", "", "...", "a/.../b", "a/..b/c", "a/b./c", f"{TINY_BASE}/state/v1/s1.pth"]
    for n in range(1, 6):
        paths += ["".join(p) for p in itertools.product("/.a\\", repeat=n)]
    assert [safe_rel(p) for p in paths] == [by_parts(p) for p in paths]
    assert sum(map(by_parts, paths)) > 50  # both answers are exercised


# --- TRN rules -----------------------------------------------------------------------------------------------


def test_trn007_is_only_about_rwkv_lightning_cuda_trainers(reg: Path) -> None:
    """Mutant: TRN007 without `name in LIGHTNING_TRAINERS` blames any other trainer of a State."""
    json_edit(reg, STATE_TRAIN, lambda t: t["trainer"].update(name="rwkv_peft_state", version="0.3.0"))
    assert _findings(reg, "TRN007") == []


def test_trn003_train_json_data_version_is_compared_with_its_directory(reg: Path) -> None:
    """Mutant: the directory comparison dropped (the per-entry comparison alone still fires)."""
    json_edit(reg, STATE_TRAIN, lambda t: t["data"].update(version="v9"))
    assert "data.version is 'v9' in directory v1/" in _messages(reg, "TRN003")


# --- MIS015: numbers within float rounding --------------------------------------------------------------------


def test_mis015_scale_equal_within_float_rounding_passes(reg: Path) -> None:
    """Mutant: `_same` compares exactly; a scale of 2.0 recorded as 2.0000000000001 is the same number."""
    entry_edit(MISS_A, lambda e: set_key(e, "miss", dict(e["miss"], scale=2.0000000000001)))(reg)
    assert _findings(reg, "MIS015") == []
    entry_edit(MISS_A, lambda e: set_key(e, "miss", dict(e["miss"], scale=2.001)))(reg)
    assert [f.message.split(" is ")[0] for f in _findings(reg, "MIS015")] == ["index.json scale"]


# --- layout: LAY001, LAY002, LAY004, LAY007, LAY012 -------------------------------------------------------------

B = TINY_BASE
LAYOUT_CASES: dict[str, tuple[list[str], dict[str, str]]] = {
    # name: (files created, {LAY004 path: message start}); every other file of the case is in its place
    "gitkeep-in-base": ([f"{B}/.gitkeep"], {}),
    "gitkeep-in-method": ([f"{B}/miss/.gitkeep"], {}),
    "version-without-digit": (
        [f"{B}/state/vx/train.json"],
        {f"{B}/state/vx": "data-version directory 'vx'", f"{B}/state/vx/train.json": "this place"},
    ),
    "state-file-under-miss": ([f"{B}/miss/v2/s9.pth"], {f"{B}/miss/v2/s9.pth": "this place is not part"}),
    "second-file-in-group": ([f"{B}/miss/v2/r4-a/adapter.pth"], {f"{B}/miss/v2/r4-a/adapter.pth": "this place"}),
    "bad-group-name": (
        [f"{B}/miss/v2/r4 c/adapter-final.pth"],
        {f"{B}/miss/v2/r4 c/adapter-final.pth": "group folder 'r4 c' is not usable"},
    ),
    "long-name": ([f"{B}/state/v1/{'a' * 125}.pth"], {f"{B}/state/v1/{'a' * 125}.pth": "file name"}),
    "longest-name": ([f"{B}/state/v1/{'a' * 124}.pth"], {}),
    "stray-top-folder": (["stray/sub/x.txt"], {}),
}


@pytest.mark.parametrize("case", sorted(LAYOUT_CASES))
def test_lay004_places_of_the_layout(case: str, reg: Path) -> None:
    """Mutants of _layout_ok / check_layout: `<base>/.gitkeep` refused; a data-version folder without a digit
    accepted; a State file under miss/, a second file in a group folder, a bad group name or a name over 128
    characters accepted; a folder that is no base (LAY002) also blamed file by file and folder by folder (LAY004).
    A misplaced weight file is LAY004 only, not also an unregistered weight (LAY007)."""
    files, want = LAYOUT_CASES[case]
    for rel in files:
        (reg / rel).parent.mkdir(parents=True, exist_ok=True)
        (reg / rel).write_bytes(b"" if rel.endswith(".gitkeep") else b"x")
    found = _findings(reg)
    got = {f.path: f.message for f in found if f.code == "LAY004"}
    assert sorted(got) == sorted(want)
    assert all(got[p].startswith(m) for p, m in want.items()), got
    assert not [f for f in found if f.code == "LAY007" and f.path in want]


def test_lay012_the_journal_of_an_interrupted_write(reg: Path) -> None:
    """Mutant: only the temporary files were LAY012, the journal a mere unknown root file."""
    (reg / ".rwkv-registry.journal").write_text("{}")
    found = _findings(reg)
    assert [f.path for f in found if f.code == "LAY012"] == [".rwkv-registry.journal"]
    assert not [f for f in found if f.code == "LAY001"]


@pytest.mark.parametrize("name", ["LICENSE", "LICENSE.md", "LICENSE.txt", ".gitignore"])
def test_lay001_license_files_are_known_root_files(reg: Path, name: str) -> None:
    """Mutant: LICENSE.md dropped from the root files."""
    (reg / name).write_text("MIT")
    assert _findings(reg, "LAY001") == []


# --- index.json: IDX001, IDX002, IDX005, IDX006, IDX008, IDX004 ---------------------------------------------------


def _unpublished(uid: str, base: str = TINY_BASE) -> dict[str, Any]:
    return {"id": uid, "base": base, "method": "miss", "data": {"version": "v2.0"}, "description": "", "scores": []}


def test_idx001_unpublished_weight_listed_twice(reg: Path) -> None:
    """Mutant: unpublished ids were not added to the id space (only clashes with entries found)."""
    edit_index(reg, lambda i: set_key(i, "unpublished", [_unpublished("u1"), _unpublished("u1")]))
    assert _messages(reg, "IDX001") == ["unpublished id 'u1' is also used by an entry or listed twice"]


def test_idx005_the_duplicate_entry_is_not_checked_against_the_file(reg: Path) -> None:
    """Mutant: without `continue`, the second entry of a path replaced the first one, whose file record is the one
    compared with the file; the duplicate is IDX005 and nothing else."""

    def dup(index: dict[str, Any]) -> None:
        e = json.loads(json.dumps(index["entries"][0]))
        e.update(id="other", file={"sha256": "0" * 64, "size": 1}, recommended=False)
        index["entries"].append(e)

    edit_index(reg, dup)
    found = [(f.code, f.path) for f in _findings(reg) if f.path == STATE]
    assert found == [("IDX005", STATE)]


def test_idx002_a_miss_entry_with_an_unknown_base(reg: Path) -> None:
    """Mutant: IDX002 checked only State entries (the rule table breaks a State)."""
    entry_edit(MISS_A, lambda e: set_key(e, "base", "nowhere"))(reg)
    assert _messages(reg, "IDX002") == ["entry 'v2-r4-a' refers to base 'nowhere', which index.json does not list"]


@pytest.mark.parametrize("file", [TINY_BASE.upper() + ".pth", TINY_BASE + "-extra.pth", f"dir/{TINY_BASE}.bin"])
def test_idx006_the_file_name_must_be_the_base_name_exactly(reg: Path, file: str) -> None:
    """Mutants: names compared without case, or by prefix. The suffix is not part of the name (stem)."""
    edit_index(reg, lambda i: i["bases"][0]["source"].update(file=file))
    found = _messages(reg, "IDX006")
    assert found == (
        []
        if file.endswith(".bin")
        else [f"base {TINY_BASE!r} comes from file {file!r}: its directory must be {file.removesuffix('.pth')!r}"]
    )


def test_idx008_on_top_of_a_base_is_refused(reg: Path) -> None:
    """Mutant: on_top_of accepted base names too (a comparison's `against` may name a base, on_top_of may not)."""
    entry_edit(STATE, lambda e: set_key(e, "on_top_of", TINY_BASE))(reg)
    assert _messages(reg, "IDX008") == [f"entry 's1': on_top_of {TINY_BASE!r} is no other entry or unpublished weight"]


def test_idx008_boundaries_that_are_consistent(reg: Path) -> None:
    """Mutants: solved == total, a category solved == total and wins + losses == total called inconsistent; a
    comparison against the base alone called unknown."""
    score = score_record(
        solved=568,
        by_category={"abstention": {"solved": 17, "total": 17}},
        comparison=dict(vs_state(300, 268, 0.2), against=TINY_BASE),
    )
    assert "IDX008" not in scores_codes(reg, score)


def test_idx004_recommended_is_counted_per_base(reg: Path, tmp_path: Path) -> None:
    """Mutant: recommended entries counted per method across bases; each base has its own recommended State."""
    from rwkv_registry.store.ops import add_base, add_entry

    other = "rwkv7-other-20260101-ctx4096"
    add_base(reg, name=other, source="BlinkDL/rwkv7-g1", sha256="7" * 64, size=1234, arch=dict(TINY_ARCH))
    st = write_state(tmp_path / "o1.pth", seed=7)
    add_entry(reg, st, base=other, data_version="v1", train=state_train(), recommended=True)
    found = _findings(reg)
    assert not [f for f in found if f.code == "IDX004"]
    assert not [f for f in found if str(f.severity) == "error"], found


# --- check_file, check_state: IDX003, STA001, STA002 -------------------------------------------------------------


def test_idx003_a_state_entry_holding_d_tensors_is_idx003_not_mis001(reg: Path) -> None:
    """Mutant: MIS001 (MiSS without manifest) for any entry whose file holds D tensors, a State's too."""
    miss_no_manifest(reg)
    (reg / STATE).write_bytes((reg / MISS_A).read_bytes())
    refresh(reg, STATE)
    found = {f.code for f in _findings(reg) if f.path == STATE}
    assert found == {"IDX003"}


def test_idx003_stops_the_file_checks(reg: Path) -> None:
    """Mutant: without `return` after IDX003, the State rules ran on a file that is no State (STA001)."""
    non_state_file(reg)
    assert {f.code for f in _findings(reg) if f.path == STATE} == {"IDX003"}


def test_sta002_once_per_file_and_for_the_head_count(reg: Path) -> None:
    """Mutants: one STA002 per tensor instead of per file; the head count H not compared."""
    replace_state(reg, shape=(2, 32, 32))
    assert len(_findings(reg, "STA002")) == 1
    replace_state(reg, shape=(3, 64, 64))
    assert _messages(reg, "STA002") == [
        "blocks.0.att.time_state has shape [3, 64, 64], the base needs [2, 64, 64] [H, V, K]"
    ]


def test_sta001_a_missing_layer_is_named(reg: Path) -> None:
    """Mutant: the expected names bounded by the file's own count, so that a missing last layer went unseen."""
    replace_state(reg, n_layer=1)
    assert _messages(reg, "STA001") == ["1 state tensors for a 2-layer base; missing ['blocks.1.att.time_state']"]


# --- TRN004: group folders of the data-version directory ------------------------------------------------------


def test_trn004_groups_of_a_sibling_version_with_a_longer_name_are_not_counted(reg: Path) -> None:
    """Mutant: group folders found by `startswith(d)` instead of `d + "/"`: miss/v20/x counted as a group of v2."""
    (reg / TINY_BASE / "miss" / "v20" / "r4-z").mkdir(parents=True)
    assert _findings(reg, "TRN004") == []


# --- lineage: family and date --------------------------------------------------------------------------------


def test_a_date_at_the_end_of_the_name_is_the_base_date() -> None:
    """Mutant: the date had to be followed by `-` (a name ending in its date fell back to `added`)."""
    from rwkv_registry.index.lineage import base_date, family_of

    assert family_of("rwkv7-g1-20260101") == "rwkv7-g1"
    assert base_date({"name": "rwkv7-g1-20260101", "added": "2026-05-05"}) == "20260101"


def test_the_first_date_of_the_name_is_the_base_date() -> None:
    """Mutant: a greedy family match took the last date of a name holding two."""
    from rwkv_registry.index.lineage import base_date, family_of

    name = "rwkv7-g1-20250101-ft-20260101-ctx4096"
    assert family_of(name) == "rwkv7-g1"
    assert base_date({"name": name}) == "20250101"


def test_the_recorded_family_decides_what_supersedes_what() -> None:
    """Mutant: the family always derived from the name, ignoring the base's own `family` field."""
    from rwkv_registry.index.lineage import superseded

    bases = [
        {"name": "rwkv7-a-20250101", "family": "rwkv7-g1"},
        {"name": "rwkv7-b-20260101", "family": "rwkv7-g1"},
        {"name": "rwkv7-a-20260101", "family": "other"},
    ]
    assert superseded(bases) == {"rwkv7-a-20250101": "rwkv7-b-20260101"}


# --- arch: a base described from its shapes ------------------------------------------------------------------


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
    from rwkv_registry.core.errors import UsageError
    from rwkv_registry.index.arch import architecture_from_shapes

    assert architecture_from_shapes(_base_shapes())["n_head"] == 2
    with pytest.raises(UsageError, match=r"r_k is \[3, 64\] but n_embd is 128"):
        architecture_from_shapes(_base_shapes(n_head=3))


def test_arch_option_refuses_a_head_size_other_than_64() -> None:
    """Mutant: the head_size == 64 check of --arch dropped (n_head then defaults to n_embd / head_size, consistent,
    and a State of [H, 32, 32] would be expected)."""
    from rwkv_registry.core.errors import UsageError
    from rwkv_registry.index.arch import parse_arch_option

    assert parse_arch_option("n_layer=2,n_embd=128,vocab_size=1000,head_size=64")["n_head"] == 2
    with pytest.raises(UsageError, match="head_size=32: RWKV-7 heads are 64 wide"):
        parse_arch_option("n_layer=2,n_embd=128,vocab_size=1000,head_size=32")


# --- gitcheck: GIT001, GIT003 ----------------------------------------------------------------------------------

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git not installed")
V1 = f"{TINY_BASE}/state/v1"


def _two_bases_published(root: Path) -> None:
    """The registry with a newer base of its family (the old one left active, so superseded but not frozen),
    committed."""
    from regtools import add_newer_base, git_publish

    add_newer_base(root, freeze_previous=False)
    git_publish(root, "two bases")


@needs_git
def test_git003_a_staged_new_file_under_a_superseded_base(reg: Path) -> None:
    """Mutants: a new file in the diffs (not untracked) closed only by `frozen`, not by a newer base; the index
    (`git add`) not compared (the working-tree diff then names the wrong place)."""
    from regtools import git

    _two_bases_published(reg)
    (reg / V1 / "s9.pth").write_bytes(b"x")
    git(reg, "add", "-A")
    found = [(f.path, f.message) for f in _findings(reg, "GIT003")]
    newer = TINY_BASE.replace("20260101", "20260301")
    assert found == [
        (f"{V1}/s9.pth", f"new file under superseded base {TINY_BASE} (in the index); new weights go under {newer}")
    ]


@needs_git
def test_git003_a_base_superseded_at_the_baseline_stays_closed(reg: Path) -> None:
    """Mutant: only today's index.json decides what is superseded; dropping the newer base from index.json in the
    same change does not reopen the old one."""
    from regtools import NEWER_BASE

    _two_bases_published(reg)
    edit_index(reg, lambda i: set_key(i, "bases", [b for b in i["bases"] if b["name"] != NEWER_BASE]))
    (reg / V1 / "s9.pth").write_bytes(b"x")
    assert [f.path for f in _findings(reg, "GIT003")] == [f"{V1}/s9.pth"]


@needs_git
def test_git001_a_published_file_replaced_by_a_symlink(reg: Path) -> None:
    """Mutant: a type change (git status T: the file became a symbolic link) was not a modification."""
    from regtools import git_publish

    git_publish(reg)
    (reg / STATE).unlink()
    (reg / STATE).symlink_to("train.json")
    found = [(f.path, f.message.split(",")[0]) for f in _findings(reg, "GIT001")]
    assert found == [(STATE, "modified in the working tree")]


@needs_git
def test_git001_in_a_registry_below_the_repository_root(reg: Path, tmp_path: Path) -> None:
    """Mutant: paths from git not made relative to the registry (its base directories then never match)."""
    from regtools import git_publish

    outer = tmp_path / "outer"
    outer.mkdir()
    root = Path(shutil.move(reg, outer / "registry"))
    git_publish(outer)
    p = root / STATE
    p.write_bytes(p.read_bytes()[:-1] + bytes([p.read_bytes()[-1] ^ 1]))
    assert [f.path for f in _findings(root, "GIT001")] == [STATE]


# --- sums.py: the SHA256SUMS parser ----------------------------------------------------------------------------


def test_parse_sums_accepts_what_sha256sum_writes() -> None:
    """Mutants: binary-mode lines (`*`) refused; 65 hex digits accepted; comments called malformed; `./` kept;
    upper-case hex kept; `\\n` escapes of a `\\`-marked line not decoded."""
    from rwkv_registry.index.sums import parse_sums

    h = "ab" * 32
    data = (
        f"# made by sha256sum\n{h}  plain\n{h} *binary\n{h}  ./dotted\n{h.upper()}  upper\n"
        f"\\{h}  new\\nline\n{h}0  too-long\n"
    ).encode()
    lines, bad = parse_sums(data)
    assert [(line.lineno, line.path) for line in lines] == [
        (2, "plain"),
        (3, "binary"),
        (4, "dotted"),
        (5, "upper"),
        (6, "new\nline"),
    ]
    assert {line.sha256 for line in lines} == {h}
    assert [n for n, _ in bad] == [7]


# --- readme.py -------------------------------------------------------------------------------------------------


def test_readme_cells_escape_the_pipe(reg: Path) -> None:
    """Mutant: a `|` in a description written raw into the table (it splits the row into more columns)."""
    from rwkv_registry.index.readme import render_sections
    from rwkv_registry.store.ops import load_index

    entry_edit(STATE, lambda e: set_key(e, "description", "fast | small"))(reg)
    assert "| fast \\| small (recommended) |" in render_sections(load_index(reg))


def test_readme_markers_out_of_order_are_missing_markers(reg: Path) -> None:
    """Mutant: the end marker searched from the start of the text, so that an end before its begin was used."""
    from rwkv_registry.index.readme import BASES_BEGIN, BASES_END, SECTIONS_BEGIN, SECTIONS_END, update_readme
    from rwkv_registry.store.ops import load_index

    text = f"{BASES_END}\n{BASES_BEGIN}\n{SECTIONS_BEGIN}\n{SECTIONS_END}\n"
    assert update_readme(text, load_index(reg)) is None
    (reg / "README.md").write_text(text)
    assert [f.message.split(";")[0] for f in _findings(reg, "RDM001")] == [
        "the generated-section markers are missing (out of order)"
    ]


# --- miss.py: check_manifest, check_against_base, scan_values ------------------------------------------------------


def _manifest_codes(manifest: dict[str, Any], **edit: Any) -> list[tuple[str, str]]:
    from rwkv_registry.checks.miss import check_manifest

    m = json.loads(json.dumps(manifest)) | edit
    return [(f.code, f.message) for f in check_manifest(m, "a.pth")[0] if f.code != "MIS008"]


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


def test_scan_values_limits() -> None:
    """Mutants: bf16 65280 (0x477F, the largest value within ±65504) counted as too big; fp16 Inf missed."""
    from rwkv_registry.checks.miss import scan_values

    assert scan_values(bytes.fromhex("7f47"), "bfloat16") == (0, None)
    assert scan_values(bytes.fromhex("8047"), "bfloat16") == (1, 65536.0)
    assert scan_values(bytes.fromhex("007c"), "float16") == (1, float("inf"))
    assert scan_values(bytes.fromhex("ff7b"), "float16") == (0, None)


# --- facts: MIS009 ---------------------------------------------------------------------------------------------


def test_mis009_also_when_a_target_tensor_is_missing(reg: Path) -> None:
    """Mutant: MIS009 only for tensors that are no target, not for fewer tensors than targets."""
    from mutations import replace_miss

    replace_miss(reg, tensors_edit=lambda t: t.pop("blocks.1.ffn.value.weight.D"))
    found = {f.code: f.message for f in _findings(reg) if f.path == MISS_A and f.code.startswith("MIS")}
    assert found.get("MIS009") == "11 tensors for 12 targets"
    assert "MIS008" in found


# --- check_train_files, check_sums, check_readme on a damaged registry ---------------------------------------------


def test_a_folder_that_is_no_base_is_lay002_only(reg: Path) -> None:
    """Mutant: data-version directories looked for under any top folder, so that a stray `x/state/v1` also got the
    train.json rules (TRN001)."""
    (reg / "stray" / "state" / "v1").mkdir(parents=True)
    (reg / "stray" / "state" / "v1" / "notes.txt").write_text("x")
    resum(reg)
    assert {(f.code, f.path) for f in _findings(reg) if f.path.startswith("stray")} == {("LAY002", "stray")}


def test_a_temporary_file_is_lay012_and_not_hsh004(reg: Path) -> None:
    """Mutant: the temporary files of an interrupted write counted as files SHA256SUMS must list."""
    tmp = f"{TINY_BASE}/state/v1/.rwkv-registry-tmp-0123-s2.pth"
    (reg / tmp).write_bytes(b"x")
    assert [(f.code, f.path) for f in _findings(reg) if f.path == tmp] == [("LAY012", tmp)]


def test_hsh007_unsorted_is_not_said_of_a_file_with_malformed_lines(reg: Path) -> None:
    """Mutant: the order checked also when lines are malformed (HSH003 says to regenerate the file already)."""
    p = reg / "SHA256SUMS"
    p.write_text("not a line\n" + "".join(reversed(p.read_text().splitlines(keepends=True))))
    found = _findings(reg)
    assert [f.message for f in found if f.code == "HSH003"] == ["line 1: 'not a line'"]
    assert [f for f in found if f.code == "HSH007"] == []


def test_readme_rules_wait_for_a_valid_index(reg: Path) -> None:
    """Mutant: the README rules ran on an index.json that broke its schema, instead of one SCH005 note."""
    entry_edit(STATE, lambda e: set_key(e, "scores", "not a list"))(reg)
    found = _findings(reg)
    assert ("SCH005", "README.md", "README rules skipped until index.json follows its schema") in {
        (f.code, f.path, f.message) for f in found
    }


def test_sums_listing_a_path_that_is_not_utf8_is_hsh005_not_a_crash(reg: Path) -> None:
    """The order check encoded the listed paths strictly: a byte that is no UTF-8 in a SHA256SUMS path (parsed with
    surrogateescape, as sha256sum writes names) crashed validate with UnicodeEncodeError. Found by the audit's
    equivalent-mutant review of the sort key (`p.encode()` vs a plain string sort)."""
    p = reg / "SHA256SUMS"
    p.write_bytes(p.read_bytes() + b"0" * 64 + b"  zz-\xff.txt\n")
    found = _findings(reg)
    assert [f.message for f in found if f.code == "HSH005"] == ["lists zz-\udcff.txt, which does not exist"]
    assert [f for f in found if f.code == "HSH007"] == []  # sorted by bytes: 0xff after every ASCII path


def test_mis014_the_first_target_is_checked_against_the_base(reg: Path) -> None:
    """Mutant: the architecture check skipped the manifest's first target (the rule table breaks all of them)."""
    from mutations import replace_miss

    replace_miss(reg, manifest_edit=lambda m: m["targets"][0].update(in_features=129))
    assert _messages(reg, "MIS014") == [
        "target blocks.0.att.receptance.weight.D: out 128, in_features 129; the base needs out 128, in_features 128"
    ]


# --- a second audit (hashes, content_version, base fingerprint) -------------------------------------------------


def test_hsh002_a_file_larger_than_recorded(reg: Path) -> None:
    """Mutant: HSH002 only for a file smaller than index.json records (`want_size > f.size`): a file that grew
    (bytes appended) kept its size finding only through HSH001."""
    size = (reg / STATE).stat().st_size
    entry_edit(STATE, lambda e: set_key(e, "file", dict(e["file"], size=size - 1)))(reg)
    assert _messages(reg, "HSH002") == [f"size is {size} bytes, index.json records {size - 1}"]


def test_mis012_compares_the_index_with_the_embedded_content_version(reg: Path) -> None:
    """Mutant: MIS012 compared index.json with the content_version recomputed from the bytes instead of the one
    embedded in miss.json: a tampered file (MIS011) whose index.json records what it embeds got a second,
    self-contradicting MIS012, and a file whose content_version cannot be recomputed (MIS008) got one too."""
    from mutations import miss_tensor_dtype, replace_miss

    replace_miss(reg, manifest_edit=lambda m: set_key(m, "content_version", "1" * 64), fix_cv=False)
    codes = {f.code for f in _findings(reg) if f.path == MISS_A}
    assert "MIS011" in codes and "MIS012" not in codes
    replace_miss(reg, tensors_edit=miss_tensor_dtype)
    codes = {f.code for f in _findings(reg) if f.path == MISS_A}
    assert "MIS008" in codes and "MIS012" not in codes


def test_mis013_a_fingerprint_differing_only_in_its_last_digit(reg: Path) -> None:
    """Mutant: base_fingerprint compared by a prefix (the 16 digits a message shows): the whole sha256 must match."""
    from mutations import replace_miss
    from regtools import TINY_SHA

    near = TINY_SHA[:-1] + ("0" if TINY_SHA[-1] != "0" else "1")
    replace_miss(reg, manifest_edit=lambda m: set_key(m, "base_fingerprint", near))
    assert _messages(reg, "MIS013") == [f"base_fingerprint {near} is not the sha256 of base {TINY_BASE} ({TINY_SHA})"]


def test_sums_a_path_listed_twice_is_judged_by_each_of_its_lines(reg: Path) -> None:
    """Mutant: without `continue`, the second line of a path listed twice replaced the first one, so a wrong first
    line followed by a right one passed. Each listing is checked, as `sha256sum -c` checks each line: the wrong one
    is HSH006 naming its line, besides the HSH007 warning for the second listing. (A wrong later line was only
    that warning: validate passed what sha256sum -c refuses; tests/test_sums_lines.py.)"""
    p = reg / "SHA256SUMS"
    lines = p.read_text().splitlines()
    first = next(n for n, line in enumerate(lines, 1) if line.endswith(f"  {STATE}"))
    good = lines[first - 1][:64]
    lines[first - 1] = f"{'0' * 64}  {STATE}"
    p.write_text("\n".join([*lines, f"{good}  {STATE}"]) + "\n")
    found = _findings(reg)
    assert sorted(f.code for f in found if f.code.startswith("HSH")) == ["HSH006", "HSH007"]
    assert next(f.message for f in found if f.code == "HSH007") == (
        f"line {len(lines) + 1}: {STATE} listed twice (first on line {first})"
    )
    hsh006 = next(f for f in found if f.code == "HSH006")
    assert (hsh006.path, hsh006.message) == (STATE, f"sha256 is {good}, SHA256SUMS line {first} says {'0' * 64}")


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


def test_readme_lists_each_adapter_content_version(reg: Path) -> None:
    """Mutant: the `Adapter | content_version` table dropped from the per-base section (validate renders the
    README with the same code, so RDM002 cannot see it): seed 000 publishes what the server answers on
    registration, and users compare it by eye."""
    from rwkv_registry.index.readme import render_sections
    from rwkv_registry.store.ops import load_index

    index = load_index(reg)
    text = render_sections(index)
    assert "| Adapter | content_version |" in text
    for e in index["entries"]:
        if e["method"] == "miss":
            assert f"| {e['id']} | `{e['miss']['content_version']}` |" in text


# --- facts: values and content_version of the files --------------------------------------------------------------


def test_sta004_an_infinite_float32_state_value(reg: Path) -> None:
    """Mutant: float32 States scanned for NaN only (`np.isnan`), so +Inf (a diverged run) passed."""
    import torch

    sd = {f"blocks.{i}.att.time_state": torch.zeros(2, 64, 64) for i in range(2)}
    sd["blocks.1.att.time_state"][1, 2, 3] = float("inf")
    torch.save(sd, reg / STATE)
    refresh(reg, STATE)
    assert _messages(reg, "STA004") == ["blocks.1.att.time_state holds 1 NaN/Inf value(s)"]


def test_mis010_a_bad_value_in_a_later_tensor(reg: Path) -> None:
    """Mutant: only the first target's D values scanned; the rule table poisons the first tensor."""
    from mutations import replace_miss

    from rwkv_registry.formats.pthwrite import RawTensor

    def poison_last(tensors: dict[str, Any]) -> None:
        name = list(tensors)[-1]
        t = tensors[name]
        tensors[name] = RawTensor(t.dtype, t.shape, t.data[:-2] + b"\x80\x7f")  # bf16 +Inf, the last value

    replace_miss(reg, tensors_edit=poison_last)
    assert _messages(reg, "MIS010") == [
        "blocks.1.ffn.value.weight.D: 1 value(s) refused: nonfinite adapter weight (first: inf)"
    ]


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
    assert len(_messages(reg, "MIS011")) == 1


def test_readme_lists_a_shared_train_json_once(reg: Path) -> None:
    """Mutant: one `training parameters` row per entry instead of per train.json: the two MiSS runs of v2 share
    miss/v2/train.json, which was listed twice."""
    from rwkv_registry.index.readme import render_sections
    from rwkv_registry.store.ops import load_index

    rows = [r for r in render_sections(load_index(reg)).splitlines() if "| training parameters |" in r]
    assert [r.split(" | ")[0] for r in rows] == ["| miss/v2/train.json", "| state/v1/train.json"]


def test_lay005_not_for_a_link_to_the_registry_root_itself(reg: Path) -> None:
    """Mutant: a symbolic link to the root counted as leaving the registry; it stays inside (never followed), and a
    top-level directory that is no base is LAY002."""
    (reg / "loop").symlink_to(reg)
    found = [(f.code, f.path) for f in _findings(reg) if f.path == "loop"]
    assert found == [("LAY002", "loop")]


def test_sta006_a_state_file_with_one_more_tensor_is_a_state_with_a_warning(reg: Path) -> None:
    """Mutant: a file counted as a State only when every tensor is a `blocks.N.att.time_state`: the server takes a
    State with one tensor more (it skips the others), so the registry does, with STA006 naming the tensor, and the
    State rules run on its time states. A file that holds a whole model (emb.weight and head.weight) beside time
    states is no State: STA001 names the others (IDX003 for an entry that says miss)."""
    import torch

    sd = {f"blocks.{i}.att.time_state": torch.zeros(2, 64, 64, dtype=torch.bfloat16) for i in range(2)}
    sd["blocks.0.att.time_shift"] = torch.zeros(128, dtype=torch.bfloat16)
    torch.save(sd, reg / STATE)
    refresh(reg, STATE)
    found = [f for f in _findings(reg) if f.path == STATE]
    assert [(f.code, f.message) for f in found] == [
        ("STA006", "1 tensor(s) besides the time states: ['blocks.0.att.time_shift']")
    ]
    sd["blocks.1.att.time_state"] = torch.zeros(2, 32, 32, dtype=torch.bfloat16)
    torch.save(sd, reg / STATE)
    refresh(reg, STATE)
    assert {f.code for f in _findings(reg) if f.path == STATE} == {"STA002", "STA006"}
    sd = {"blocks.0.att.time_state": torch.zeros(2, 64, 64), "emb.weight": torch.zeros(4, 128)}
    sd["head.weight"] = torch.zeros(4, 128)
    torch.save(sd, reg / STATE)
    refresh(reg, STATE)
    found = [f for f in _findings(reg) if f.path == STATE]
    assert [(f.code, f.message) for f in found] == [
        ("STA001", "1 state tensors and others besides: unexpected ['emb.weight', 'head.weight']")
    ]
    # an entry that says miss still gets IDX003: the file is no MiSS adapter either
    edit_index(reg, lambda ix: ix["entries"][0].update(method="miss"))
    assert "IDX003" in {f.code for f in _findings(reg) if f.path == STATE}


@needs_git
def test_git003_a_staged_placeholder_of_a_closed_base_is_no_new_file(reg: Path) -> None:
    """Mutant: the `.gitkeep` exception applied to untracked files only: an older base, closed at once, whose empty
    placeholders are staged (`git add -A` before the commit) was GIT003 for each of them."""
    from regtools import add_base_by_metadata, git, git_publish

    git_publish(reg)
    older = TINY_BASE.replace("20260101", "20250101")
    add_base_by_metadata(reg, older)
    git(reg, "add", "-A")
    assert _findings(reg, "GIT003") == []


@needs_git
def test_git003_an_empty_gitkeep_deeper_than_a_method_folder_is_a_new_file(reg: Path) -> None:
    """Mutant: any empty `.gitkeep` taken for a placeholder: only `<base>/state/.gitkeep` and `<base>/miss/.gitkeep`
    are what add-base makes; one in a data-version folder of a closed base is a new file there."""
    from regtools import add_base_by_metadata, git_publish

    git_publish(reg)
    older = TINY_BASE.replace("20260101", "20250101")
    add_base_by_metadata(reg, older)  # superseded at once: closed
    (reg / older / "state" / "v1").mkdir()
    (reg / older / "state" / "v1" / ".gitkeep").write_bytes(b"")
    assert [f.path for f in _findings(reg, "GIT003")] == [f"{older}/state/v1/.gitkeep"]
