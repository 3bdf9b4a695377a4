"""Text of index.json that looks like a generated-section marker of README.md (a description, a known issue, a
score's note holding ``<!-- rwkv-registry:sections:end -->``) is written escaped: ``add`` then ``readme`` twice leave
README.md as it was, and ``validate`` finds no RDM002 (before: the marker ended the region early, and every
``readme`` grew the file)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from regtools import TINY_BASE, edit_index, resum, state_train, write_state

from rwkv_registry.cli.main import main
from rwkv_registry.engine.validate import validate_registry
from rwkv_registry.index.readme import BASES_BEGIN, BASES_END, SECTIONS_BEGIN, SECTIONS_END


@pytest.mark.parametrize("marker", [BASES_BEGIN, BASES_END, SECTIONS_BEGIN, SECTIONS_END])
def test_a_description_holding_a_marker_leaves_readme_stable(
    reg: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], marker: str
) -> None:
    src = write_state(tmp_path / "in" / "s9.pth", seed=9)
    train = tmp_path / "train.json"
    train.write_text(json.dumps(state_train("v9")))
    argv = ["add", str(reg), str(src), "--base", TINY_BASE, "--data-version", "v9", "--train", str(train),
            "--description", f"before {marker} after"]  # fmt: skip
    assert main(argv) == 0
    after_add = (reg / "README.md").read_bytes()
    assert main(["readme", str(reg)]) == 0
    assert main(["readme", str(reg)]) == 0
    assert "generated sections were already up to date" in capsys.readouterr().out
    assert (reg / "README.md").read_bytes() == after_add
    text = after_add.decode()
    assert text.count(marker) == 1  # the README's own; the description's is shown escaped
    assert f"before &lt;{marker[1:]} after" in text
    codes = {f.code for f in validate_registry(reg).findings}
    assert not codes & {"RDM001", "RDM002"}
    assert json.loads((reg / "index.json").read_text())["entries"][-1]["description"] == f"before {marker} after"


def test_known_issues_and_notes_holding_markers_leave_readme_stable(reg: Path) -> None:
    def plant(index: dict) -> None:
        index["known_issues"] = [f"see {SECTIONS_END} here"]
        index["entries"][0]["known_issues"] = [f"x {BASES_END}"]

    edit_index(reg, plant)
    assert main(["readme", str(reg)]) == 0
    once = (reg / "README.md").read_bytes()
    assert main(["readme", str(reg)]) == 0
    assert (reg / "README.md").read_bytes() == once
    resum(reg)
    assert not {f.code for f in validate_registry(reg).findings} & {"RDM001", "RDM002"}
