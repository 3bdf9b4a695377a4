"""train.json rules (TRN003, TRN004, TRN007): its data version against its directory, MiSS runs against the group
folders of the data-version directory, and the trainers TRN007 is about.

The table of tests/test_validate_rules.py has each rule's basic passing and failing case; these are the cases of
branches that table does not reach. Most break one thing in the small valid registry (or in a MiSS manifest) and
assert the exact rule code, and usually the finding's path and message.
"""

from __future__ import annotations

import json
from pathlib import Path

from mutations import json_edit
from regtools import MISS_TRAIN, STATE_TRAIN, TINY_BASE, findings, messages_of, resum, where

# --- TRN003: data.version -------------------------------------------------------------------------------------------


def test_trn003_train_json_data_version_is_compared_with_its_directory(reg: Path) -> None:
    """Mutant: the directory comparison dropped (the per-entry comparison alone still fires)."""
    json_edit(reg, STATE_TRAIN, lambda t: t["data"].update(version="v9"))
    assert "data.version is 'v9' in directory v1/" in messages_of(reg, "TRN003")


# --- TRN004: group folders of the data-version directory ------------------------------------------------------------


def test_trn004_miss_run_without_group_folder(reg: Path) -> None:
    """train.json lists a MiSS run whose group folder was never published."""
    p = reg / MISS_TRAIN
    train = json.loads(p.read_text())
    train["runs"].append(dict(train["runs"][-1], group="r4-c"))
    p.write_text(json.dumps(train, indent=2))
    resum(reg)
    assert where(reg, "TRN004") == {MISS_TRAIN: [f"run 'r4-c' has no group directory {TINY_BASE}/miss/v2/r4-c/"]}


def test_trn004_groups_of_a_sibling_version_with_a_longer_name_are_not_counted(reg: Path) -> None:
    """Mutant: group folders found by `startswith(d)` instead of `d + "/"`: miss/v20/x counted as a group of v2."""
    (reg / TINY_BASE / "miss" / "v20" / "r4-z").mkdir(parents=True)
    assert findings(reg, "TRN004") == []


# --- TRN007: the trainer --------------------------------------------------------------------------------------------


def test_trn007_is_only_about_rwkv_lightning_cuda_trainers(reg: Path) -> None:
    """Mutant: TRN007 without `name in LIGHTNING_TRAINERS` blames any other trainer of a State."""
    json_edit(reg, STATE_TRAIN, lambda t: t["trainer"].update(name="rwkv_peft_state", version="0.3.0"))
    assert findings(reg, "TRN007") == []
