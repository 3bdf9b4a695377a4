"""Old base directories are never touched (seed 000): a newer dated base of the same family
supersedes the old one, `add-base` freezes it, `add` refuses it, git refuses new files under it, and
`add` never rewrites a published train.json."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from regtools import NEWER_BASE, TINY_BASE, add_newer_base, build_registry, miss_train, write_miss

from rwkv_registry.core.errors import RefusedError, UsageError
from rwkv_registry.engine.validate import validate_registry
from rwkv_registry.index.lineage import base_date, family_of, superseded
from rwkv_registry.store.ops import add_base, add_entry, load_index

NEWER = NEWER_BASE


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _status(root: Path) -> dict[str, str]:
    return {b["name"]: b["status"] for b in load_index(root)["bases"]}


def test_family_and_date_come_from_the_name() -> None:
    assert family_of("rwkv7-g1k-7.2b-20260930-ctx25600") == "rwkv7-g1k-7.2b"
    assert base_date({"name": "rwkv7-g1k-7.2b-20260930-ctx25600"}) == "20260930"
    assert base_date({"name": "undated", "added": "2026-11-02"}) == "20261102"
    bases = [
        {"name": "rwkv7-g1k-7.2b-20260930-ctx25600"},
        {"name": "rwkv7-g1k-7.2b-20261101-ctx25600"},
        {"name": "rwkv7-g1k-2.9b-20250101-ctx4096"},  # another family: not superseded
        {"name": "rwkv7-g1k-7.2b-20261101-ctx8192"},  # same day: neither supersedes the other
    ]
    assert superseded(bases) == {"rwkv7-g1k-7.2b-20260930-ctx25600": "rwkv7-g1k-7.2b-20261101-ctx25600"}


def test_add_base_freezes_the_base_it_supersedes(tmp_path: Path) -> None:
    root = build_registry(tmp_path / "reg", tmp_path, with_miss=False)
    add_newer_base(root)
    assert _status(root) == {TINY_BASE: "frozen", NEWER: "active"}
    assert validate_registry(root, use_cache=False).ok


def test_keep_previous_active_is_reported(tmp_path: Path) -> None:
    root = build_registry(tmp_path / "reg", tmp_path, with_miss=False)
    add_newer_base(root, freeze_previous=False)
    assert _status(root) == {TINY_BASE: "active", NEWER: "active"}
    found = [f for f in validate_registry(root, use_cache=False).findings if f.code == "IDX007"]
    assert [f.message for f in found] == [
        f"base {TINY_BASE!r} is superseded by {NEWER!r} (same family, newer) but its status is active"
    ]


def test_add_refuses_a_superseded_base_even_if_active(tmp_path: Path) -> None:
    root = build_registry(tmp_path / "reg", tmp_path, with_miss=False)
    add_newer_base(root, freeze_previous=False)
    before = _snapshot(root)
    adapter = tmp_path / "m" / "adapter-final.pth"
    write_miss(adapter, seed=5)
    with pytest.raises(RefusedError, match=f"superseded by '{NEWER}'"):
        add_entry(root, adapter, base=TINY_BASE, data_version="v2", train=miss_train(), group="r4-a")
    assert _snapshot(root) == before


def test_base_name_must_be_the_file_name(tmp_path: Path) -> None:
    root = build_registry(tmp_path / "reg", tmp_path, with_miss=False)
    before = _snapshot(root)
    with pytest.raises(UsageError, match="differs from its file"):
        add_newer_base(root, source_file="something-else.pth")
    assert _snapshot(root) == before


def test_add_base_with_a_file_refuses_a_given_hash(tmp_path: Path) -> None:
    root = build_registry(tmp_path / "reg", tmp_path, with_miss=False)
    base = tmp_path / f"{NEWER}.pth"
    base.write_bytes(b"not read: the options are refused first")
    with pytest.raises(UsageError, match="--sha256 and --size"):
        add_base(root, base_file=base, source="BlinkDL/rwkv7-g1", sha256="5" * 64)


@pytest.mark.skipif(shutil.which("git") is None, reason="git not installed")
def test_git_refuses_new_files_under_a_superseded_base(tmp_path: Path) -> None:
    from regtools import git_publish

    root = build_registry(tmp_path / "reg", tmp_path, with_miss=False)
    add_newer_base(root, freeze_previous=False)
    git_publish(root, "two bases")
    stray = root / TINY_BASE / "state" / "v1" / "s9.pth"
    stray.write_bytes(b"x")
    found = [f for f in validate_registry(root, use_cache=False).findings if f.code == "GIT003"]
    assert [(f.path, f.message) for f in found] == [
        (
            f"{TINY_BASE}/state/v1/s9.pth",
            f"new untracked file under superseded base {TINY_BASE}; new weights go under {NEWER}",
        )
    ]


@pytest.mark.skipif(shutil.which("git") is None, reason="git not installed")
def test_add_does_not_rewrite_a_published_train_json(tmp_path: Path) -> None:
    """A new MiSS run in a committed data-version directory would change its train.json (GIT001)."""
    from regtools import git_publish

    root = build_registry(tmp_path / "reg", tmp_path, with_miss=True)
    git_publish(root, "publish")
    before = _snapshot(root)
    adapter = tmp_path / "m" / "adapter-final.pth"
    write_miss(adapter, seed=7)
    train = miss_train(groups=("r4-a", "r4-b", "r4-c"))
    with pytest.raises(RefusedError, match=r"miss/v2/train.json was published in commit \w+ .*“publish”") as e:
        add_entry(root, adapter, base=TINY_BASE, data_version="v2", train=train, group="r4-c")
    assert "--data-version v3" in e.value.hint
    assert _snapshot(root) == before
    # uncommitted, the same directory may still grow
    shutil.rmtree(root / ".git")
    add_entry(root, adapter, base=TINY_BASE, data_version="v2", train=train, group="r4-c")
    assert validate_registry(root, use_cache=False).ok
