"""Every validation rule: the clean registry passes it, a targeted mutation fails it.

Each case mutates a freshly built tiny registry the way a careless publisher (or an attacker)
would, then runs the real validator and asserts the rule's code among the findings. The
clean-registry test is the passing case of every rule at once; ``test_every_rule_has_a_case``
keeps this table complete.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from regtools import (
    TINY_ARCH,
    TINY_BASE,
    bf16_bytes,
    edit_index,
    resum,
    target_shape,
    write_state,
)

from rwkv_registry import jsoncpp
from rwkv_registry.miss import MISS_TARGETS, content_version
from rwkv_registry.rules import RULES
from rwkv_registry.validate import validate_registry

STATE = f"{TINY_BASE}/state/v1/s1.pth"
MISS_A = f"{TINY_BASE}/miss/v2/r4-a/adapter-final.pth"
STATE_TRAIN = f"{TINY_BASE}/state/v1/train.json"
MISS_TRAIN = f"{TINY_BASE}/miss/v2/train.json"


def refresh(root: Path, rel: str) -> None:
    """Record the file's current sha256/size (and content_version) in index.json, then SHA256SUMS."""
    data = (root / rel).read_bytes()

    def fn(index: dict[str, Any]) -> None:
        for e in index["entries"]:
            if e["path"] == rel:
                e["file"] = {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}
                if e["method"] == "miss":
                    try:
                        from rwkv_registry.ckpt import open_checkpoint

                        ck = open_checkpoint(data)
                        if ck.miss_manifest:
                            e["miss"]["content_version"] = json.loads(ck.miss_manifest)["content_version"]
                    except Exception:
                        pass

    edit_index(root, fn)
    from rwkv_registry.ops import write_readme

    write_readme(root)
    resum(root)


def custom_miss(
    path: Path,
    *,
    manifest_edit: Callable[[dict], None] | None = None,
    tensors_edit: Callable[[dict], None] | None = None,
    fix_cv: bool = True,
    arch: dict[str, Any] = TINY_ARCH,
    rank: int = 4,
) -> None:
    """A MiSS package with a hand-edited manifest or tensors (content_version fixed unless asked)."""
    from rwkv_registry.pthwrite import RawTensor, write_pth

    tensors: dict[str, Any] = {}
    targets = []
    for layer in range(arch["n_layer"]):
        for j, t in enumerate(MISS_TARGETS):
            out_f, in_f = target_shape(arch, t)
            tensors[f"blocks.{layer}.{t}.D"] = RawTensor(
                "bfloat16", (out_f, rank), bf16_bytes(out_f * rank, layer * 10 + j)
            )
            targets.append(
                {
                    "name": f"blocks.{layer}.{t}",
                    "layer": layer,
                    "target": t,
                    "in_features": in_f,
                    "shape": [out_f, rank],
                }
            )
    manifest: dict[str, Any] = {
        "format_version": 1,
        "method": "miss",
        "dtype": "bfloat16",
        "layout": "modulo_rank_zero_pad",
        "kind": "inference_adapter",
        "rank": rank,
        "alpha": 8,
        "scale": 8 / rank,
        "base_fingerprint": hashlib.sha256(b"tiny base file").hexdigest(),
        "targets": targets,
    }
    if manifest_edit:
        manifest_edit(manifest)
    if tensors_edit:
        tensors_edit(tensors)
    if fix_cv:
        chunks = [
            bytes(tensors[f"{t['name']}.D"].data)
            for t in manifest["targets"]
            if isinstance(t, dict) and f"{t.get('name')}.D" in tensors
        ]
        manifest["content_version"] = content_version(manifest, chunks)
    manifest.setdefault("content_version", "0" * 64)
    write_pth(path, tensors, layout="lightning", extra_entries={"miss.json": jsoncpp.dumps_bytes(manifest)})


def _text(root: Path, rel: str, text: str) -> None:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)


def _json_edit(root: Path, rel: str, fn: Callable[[dict], None]) -> None:
    p = root / rel
    data = json.loads(p.read_text())
    fn(data)
    p.write_text(json.dumps(data, indent=2))


def _replace_state(root: Path, **kw: Any) -> None:
    write_state(root / STATE, **kw)
    refresh(root, STATE)


def _replace_miss(root: Path, **kw: Any) -> None:
    custom_miss(root / MISS_A, **kw)
    refresh(root, MISS_A)


def _entry(rel: str, fn: Callable[[dict], None]) -> Callable[[Path], None]:
    def mutate(root: Path) -> None:
        def edit(index: dict) -> None:
            for e in index["entries"]:
                if e["path"] == rel:
                    fn(e)

        edit_index(root, edit)

    return mutate


def _set(d: dict, key: str, value: Any) -> None:
    d[key] = value


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


def _non_state_file(root: Path) -> None:
    import torch

    torch.save({"foo": torch.zeros(2)}, root / STATE)
    refresh(root, STATE)


def _sums_reverse(root: Path) -> None:
    p = root / "SHA256SUMS"
    lines = p.read_text().splitlines(keepends=True)
    p.write_text("".join(reversed(lines)))


def _miss_tensor_dtype(tensors: dict) -> None:
    from rwkv_registry.pthwrite import RawTensor

    name = next(iter(tensors))
    t = tensors[name]
    tensors[name] = RawTensor("float16", t.shape, t.data)


def _miss_extra_tensor(tensors: dict) -> None:
    from rwkv_registry.pthwrite import RawTensor

    tensors["blocks.0.att.extra.D"] = RawTensor("bfloat16", (4, 4), bf16_bytes(16, 1))


def _miss_nan(tensors: dict) -> None:
    from rwkv_registry.pthwrite import RawTensor

    name = next(iter(tensors))
    t = tensors[name]
    data = bytearray(t.data)
    data[0:2] = b"\xc0\x7f"  # bf16 NaN
    tensors[name] = RawTensor(t.dtype, t.shape, bytes(data))


def _miss_big_manifest(root: Path) -> None:
    custom_miss(root / MISS_A, manifest_edit=lambda m: _set(m, "padding", "x" * (8 * 2**20 + 10)))
    refresh(root, MISS_A)


def _miss_other_arch(root: Path) -> None:
    arch = dict(TINY_ARCH, n_embd=192, n_head=3, ffn_size=768)
    custom_miss(root / MISS_A, arch=arch)
    refresh(root, MISS_A)


def _miss_no_manifest(root: Path) -> None:
    from rwkv_registry.pthwrite import RawTensor, write_pth

    write_pth(
        root / MISS_A,
        {"blocks.0.att.key.weight.D": RawTensor("bfloat16", (128, 4), bf16_bytes(512, 0))},
        layout="lightning",
    )
    refresh(root, MISS_A)


def _unreadable(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import rwkv_registry.facts as facts

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


def _score(**more: Any) -> dict[str, Any]:
    return {
        "benchmark": "exam",
        "date": "2026-10-17",
        "score": 52.2,
        "unit": "percent",
        "solved": 296.5,
        "total": 568,
        "runs": 2,
        "backend": None,
        "note": None,
        "report": None,
        **more,
    }


def _vs_state(wins: int, losses: int, p: float) -> dict[str, Any]:
    return {"against": "s1", "wins": wins, "losses": losses, "p_value": p}


CASES: dict[str, Callable[..., None]] = {
    "LAY001": lambda r: _text(r, "notes.txt", "hello"),
    "LAY002": lambda r: _text(r, "otherbase/state/v1/train.json", "{}"),
    "LAY003": lambda r: edit_index(r, lambda i: i["bases"].append(dict(i["bases"][0], name="ghost"))),
    "LAY004": lambda r: _text(r, f"{TINY_BASE}/state/v1/readme.txt", "x"),
    "LAY005": _symlink,
    "LAY006": _entry(STATE, lambda e: _set(e, "path", "../evil.pth")),
    "LAY007": lambda r: shutil.copy(r / STATE, r / TINY_BASE / "state" / "v1" / "s2.pth"),
    "LAY008": lambda r: (r / STATE).unlink(),
    "LAY009": _entry(STATE, lambda e: _set(e, "train", f"{TINY_BASE}/state/v9/train.json")),
    "LAY010": _unreadable,
    "LAY011": lambda r: (r / TINY_BASE / "state" / "v9").mkdir(),
    "LAY012": lambda r: _text(r, ".rwkv-registry-tmp-0123-index.json", "{}"),
    "SCH001": lambda r: _text(r, "index.json", "{not json"),
    "SCH002": _entry(STATE, lambda e: _set(e, "profile", "bogus")),
    "SCH003": lambda r: _json_edit(r, STATE_TRAIN, lambda t: t.pop("trainer")),
    "SCH004": lambda r: (r / "SHA256SUMS").unlink(),
    "SCH005": _entry(STATE, lambda e: _set(e, "file", "not an object")),
    "IDX001": _dup_entry("id"),
    "IDX002": _entry(STATE, lambda e: _set(e, "base", "nowhere")),
    "IDX003": _non_state_file,
    "IDX004": lambda r: edit_index(r, lambda i: [_set(e, "recommended", True) for e in i["entries"]]),
    "IDX005": _dup_entry("path"),
    "IDX006": lambda r: edit_index(r, lambda i: i["bases"][0]["source"].update(file="rwkv7-tiny-20260101.pth")),
    "IDX007": _newer_base,
    "IDX008": _entry(STATE, lambda e: e.update(step=1400, total_steps=1374)),
    "IDX009": _entry(MISS_A, lambda e: _set(e, "scores", [_score(comparison=_vs_state(95, 54, 0.9))])),
    "HSH001": _flip_byte,
    "HSH002": _entry(STATE, lambda e: _set(e, "file", dict(e["file"], size=e["file"]["size"] + 1))),
    "HSH003": lambda r: (r / "SHA256SUMS").open("a").write("not a line\n"),
    "HSH004": lambda r: _text(r, "LICENSE", "MIT"),
    "HSH005": lambda r: (r / "SHA256SUMS").open("a").write("0" * 64 + "  zzz-missing.txt\n"),
    "HSH006": lambda r: (r / "README.md").open("a").write("\nan edit\n"),
    "HSH007": _sums_reverse,
    "PTH001": _truncate,
    "LFS001": _lfs_pointer,
    "LFS002": lambda r: _text(r, ".gitattributes", "# nothing\n"),
    "STA001": lambda r: _replace_state(r, n_layer=3),
    "STA002": lambda r: _replace_state(r, shape=(2, 32, 32)),
    "STA003": lambda r: _replace_state(r, dtype="float16"),
    "STA004": lambda r: _replace_state(r, poison=True),
    "MIS001": _miss_no_manifest,
    "MIS002": _miss_big_manifest,
    "MIS003": lambda r: _replace_miss(r, manifest_edit=lambda m: _set(m, "layout", "blocks")),
    "MIS004": lambda r: _replace_miss(r, manifest_edit=lambda m: _set(m, "rank", 2000)),
    "MIS005": lambda r: _replace_miss(r, manifest_edit=lambda m: _set(m, "alpha", "8")),
    "MIS006": lambda r: _replace_miss(r, manifest_edit=lambda m: _set(m, "base_fingerprint", "abc")),
    "MIS007": lambda r: _replace_miss(r, manifest_edit=lambda m: _set(m, "targets", [])),
    "MIS008": lambda r: _replace_miss(r, tensors_edit=_miss_tensor_dtype),
    "MIS009": lambda r: _replace_miss(r, tensors_edit=_miss_extra_tensor),
    "MIS010": lambda r: _replace_miss(r, tensors_edit=_miss_nan),
    "MIS011": lambda r: _replace_miss(r, manifest_edit=lambda m: _set(m, "content_version", "1" * 64), fix_cv=False),
    "MIS012": _entry(MISS_A, lambda e: _set(e, "miss", dict(e["miss"], content_version="2" * 64))),
    "MIS013": lambda r: _replace_miss(r, manifest_edit=lambda m: _set(m, "base_fingerprint", "3" * 64)),
    "MIS014": _miss_other_arch,
    "MIS015": _entry(MISS_A, lambda e: _set(e, "miss", dict(e["miss"], rank=8))),
    "MIS016": lambda r: _replace_miss(r, manifest_edit=lambda m: m["targets"][0].update(target="att.gate.weight")),
    "MIS017": lambda r: _replace_miss(r, manifest_edit=lambda m: _set(m, "scale", 99.0)),
    "TRN001": lambda r: (r / STATE_TRAIN).unlink(),
    "TRN002": lambda r: _json_edit(r, STATE_TRAIN, lambda t: t["trainer"].update(version="1.7.9")),
    "TRN003": lambda r: _json_edit(r, STATE_TRAIN, lambda t: t["data"].update(sha256="4" * 64)),
    "TRN004": lambda r: _json_edit(r, MISS_TRAIN, lambda t: t["runs"].pop()),
    "TRN005": lambda r: _json_edit(r, STATE_TRAIN, lambda t: _set(t, "method", "miss")),
    "TRN006": lambda r: _json_edit(r, MISS_TRAIN, lambda t: t["trainer"].update(commit=None)),
    "TRN007": lambda r: _json_edit(r, STATE_TRAIN, lambda t: t["trainer"].update(name="rwkv_miss_tune")),
    "PRF001": _entry(MISS_A, lambda e: _set(e, "profile", "g1k")),
    "PRF002": _entry(STATE, lambda e: _set(e, "profile", "g1k-think")),
    "RDM001": lambda r: _text(r, "README.md", "# no markers\n"),
    "RDM002": _entry(STATE, lambda e: _set(e, "description", "changed without regenerating the README")),
}
# Rules whose failing cases live elsewhere: the safe reader (tests/test_ckpt.py) raises the PTH/LFS codes
# on hostile archives, git immutability needs a repository (tests/test_git.py), signatures need keys
# (tests/test_signing.py).
ELSEWHERE = {
    "PTH002",
    "PTH003",
    "PTH004",
    "PTH005",
    "PTH006",
    "PTH007",
    "PTH008",
    "PTH009",
    "PTH010",
    "PTH011",
    "PTH012",
    "PTH013",
    "GIT001",
    "GIT002",
    "GIT003",
    "GIT004",
    "SIG001",
    "SIG002",
    "SIG003",
    "SIG004",
}
CASE_FILES = {"GIT": "test_git.py", "SIG": "test_signing.py"}


def test_clean_registry_passes_every_rule(registry_template: Path) -> None:
    report = validate_registry(registry_template, use_cache=False)
    bad = [f for f in report.findings if f.code != "TRN006"]
    assert bad == [], [f"{f.code} {f.path}: {f.message}" for f in bad]
    assert report.ok


def test_every_rule_has_a_case() -> None:
    assert set(RULES) == set(CASES) | ELSEWHERE
    here = Path(__file__).parent
    for code in ELSEWHERE:
        path = here / CASE_FILES.get(code[:3], "test_ckpt.py")
        assert code in path.read_text(), f"{code} has no failing case in {path.name}"


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
    assert (f.message and f.hint == RULES[code].hint) or f.hint
    assert f.severity == RULES[code].severity
    if RULES[code].severity == "error":
        assert not report.ok


def test_trn006_is_only_a_note(registry_template: Path) -> None:
    report = validate_registry(registry_template, use_cache=False)
    notes = [f for f in report.findings if f.code == "TRN006"]
    assert [f.path for f in notes] == [STATE_TRAIN]  # the MiSS train.json records its commit


def test_trn002_is_about_rwkv_lightning_cuda_versions(reg: Path) -> None:
    """Another trainer's own version numbers are not compared with rwkv_lightning_cuda's 1.8.1."""
    _json_edit(reg, STATE_TRAIN, lambda t: t["trainer"].update(name="rwkv_peft_state", version="0.3.0"))
    assert "TRN002" not in {f.code for f in validate_registry(reg, use_cache=False).findings}


def _scores_of(reg: Path, *scores: dict[str, Any]) -> set[str]:
    edit_index(reg, lambda i: next(e for e in i["entries"] if e["path"] == MISS_A).update(scores=list(scores)))
    refresh(reg, MISS_A)
    return {f.code for f in validate_registry(reg, use_cache=False).findings}


def test_score_checks_pass_consistent_numbers(reg: Path) -> None:
    """The seed's own figures (+95/-54, p = 0.001; 12/17 abstention; two runs) are consistent."""
    ok = _score(
        comparison=_vs_state(95, 54, 0.001),
        by_category={"abstention": {"solved": 12, "total": 17}},
        run_scores=[52.0, 52.4],
    )
    assert not {"IDX008", "IDX009"} & _scores_of(reg, ok)


@pytest.mark.parametrize(
    "edit",
    [
        {"solved": 600},
        {"by_category": {"abstention": {"solved": 18, "total": 17}}},
        {"run_scores": [52.0]},
        {"comparison": _vs_state(95, 54, 0.001) | {"against": "nobody"}},
        {"comparison": _vs_state(500, 100, 0.0)},
    ],
    ids=["solved", "category", "run-count", "against", "differing"],
)
def test_score_inconsistencies_are_idx008(reg: Path, edit: dict[str, Any]) -> None:
    assert "IDX008" in _scores_of(reg, _score(**edit))


@pytest.mark.parametrize(("below", "bad"), [("v2-r4-a", False), ("nobody", True), ("s1", True)])
def test_on_top_of_names_another_weight(reg: Path, below: str, bad: bool) -> None:
    """A State trained on top of an adapter records it (seed 003's native composition)."""
    _entry(STATE, lambda e: _set(e, "on_top_of", below))(reg)
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
    _entry(MISS_A, lambda e: _set(e, "miss", dict(e["miss"], scale=e["miss"]["scale"] * 2)))(reg)
    found = [f for f in validate_registry(reg, use_cache=False).findings if f.code == "MIS015"]
    assert [f.message.split(" is ")[0] for f in found] == ["index.json scale"]


def test_trn006_also_when_the_commit_is_absent(reg: Path) -> None:
    _json_edit(reg, MISS_TRAIN, lambda t: t["trainer"].pop("commit"))
    assert MISS_TRAIN in {f.path for f in validate_registry(reg, use_cache=False).findings if f.code == "TRN006"}


def test_state_train_json_without_times_is_valid(reg: Path) -> None:
    """The user's State train.json records no start or end time (seed 000)."""
    _json_edit(reg, STATE_TRAIN, lambda t: [t.pop("started"), t.pop("finished")])
    resum(reg)
    assert validate_registry(reg, use_cache=False).ok


def test_a_broken_index_does_not_blame_the_base_directories(reg: Path) -> None:
    """With index.json unparseable, the weights' directories are not called unregistered (LAY002)."""
    _text(reg, "index.json", "{")
    codes = {f.code for f in validate_registry(reg, use_cache=False).findings}
    assert "SCH001" in codes and "LAY002" not in codes
