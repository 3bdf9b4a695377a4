"""Checks of registry/index/readme.py that a mutation audit found no test for.

``validate`` renders the README's generated regions with the same functions that ``add`` and ``readme`` write
them with, so a change of the rendering passes every validation test: these tests read the rendered text itself.
Each kills at least one hand-made mutant of readme.py (named R.. in its docstring) that the rest of the suite let
live.
"""

from __future__ import annotations

from typing import Any

from rwkv_registry.index.readme import (
    BASES_BEGIN,
    BASES_END,
    SECTIONS_BEGIN,
    SECTIONS_END,
    apply_bodies,
    recorded_num,
    render_bases_table,
    render_sections,
    skeleton,
    update_readme,
)

OLD = "rwkv7-g1-1.5b-20250101-ctx4096"
NEW = "rwkv7-g1-1.5b-20260101-ctx4096"


def _base(name: str, status: str, **more: Any) -> dict[str, Any]:
    return {
        "name": name,
        "status": status,
        "source": {"repo": "BlinkDL/rwkv7-g1", "file": f"{name}.pth"},
        "sha256": "ab" * 32,
        "vocab": "rwkv_vocab_v20230424.txt",
        "architecture": {"n_layer": 24, "n_embd": 2048, "vocab_size": 65536},
        **more,
    }


def _index() -> dict[str, Any]:
    return {
        "bases": [
            _base(OLD, "frozen", known_issues=["slow on long prompts"]),
            _base(
                NEW,
                "active",
                scores=[{"benchmark": "bfcl", "date": "2026-01-02", "score": 40, "unit": "percent", "runs": 1}],
            ),
        ],
        "entries": [
            {
                "id": "old-state",
                "base": OLD,
                "path": f"{OLD}/state/v1/old-state.pth",
                "method": "state",
                "data": {"version": "v1"},
                "train": f"{OLD}/state/v1/train.json",
            },
            {
                "id": "s1",
                "base": NEW,
                "path": f"{NEW}/state/v1/s1.pth",
                "method": "state",
                "data": {"version": "v1", "rows": 0, "sha256": "0123456789abcdef" * 4},
                "profile": "g1k",
                "description": "first | try\nsecond line",
                "recommended": True,
                "train": f"{NEW}/state/v1/train.json",
                "known_issues": ["forgets the system prompt"],
                "scores": [
                    {
                        "benchmark": "bfcl",
                        "date": "2026-01-03",
                        "score": 46.25,
                        "unit": "percent",
                        "solved": 37,
                        "total": 80,
                        "runs": 2,
                        "run_scores": [45.0, 47],
                        "backend": "",
                        "note": "greedy",
                        "comparison": {"against": "base", "wins": 9, "losses": 2, "p_value": 0.065},
                        "by_category": {"easy": {"solved": 20, "total": 30}, "hard": {"solved": 17, "total": 50}},
                        "report": "reports/s1.json",
                    },
                    {"benchmark": "points", "date": "2026-01-04", "score": 41.0, "total": 60, "runs": 1},
                ],
            },
            {
                "id": "v2-r16",
                "base": NEW,
                "path": f"{NEW}/miss/v2/r16/adapter-final.pth",
                "method": "miss",
                "data": {"version": "v2"},
                "miss": {"rank": 16, "content_version": "cafe" * 16},
                "train": f"{NEW}/miss/v2/train.json",
            },
        ],
        "unpublished": [
            {"id": "gone", "base": NEW, "scores": [{"benchmark": "bfcl", "date": "2026-01-05", "score": 30}]},
            {"id": "elsewhere", "base": OLD, "scores": [{"benchmark": "bfcl", "date": "2026-01-06", "score": 31}]},
        ],
        "known_issues": ["the tokenizer file is shared"],
    }


def _section(text: str, name: str) -> str:
    """The part of the rendered sections under ``### name``, up to the next heading."""
    start = text.index(f"### {name}\n")
    end = text.find("\n### ", start + 1)
    return text[start : end if end >= 0 else len(text)]


def test_recorded_num_keeps_whole_floats_and_every_other_value_as_written() -> None:
    """R04: every float formatted with one decimal turned 46.25 into 46.2."""
    assert recorded_num(46.0) == "46.0"
    assert recorded_num(46.25) == "46.25"
    assert recorded_num(41) == "41"


def test_the_bases_table_lists_each_base_with_its_shape_and_escaped_cells() -> None:
    """R01: an empty value is an em dash, not an empty cell; R02/R03: a '|' or a newline in a value is escaped
    (else it splits the row); R05: the placeholder row only without bases; R06: layers before width."""
    empty = render_bases_table({"bases": []}).splitlines()
    assert len(empty) == 3 and empty[2].startswith("| (no base yet")
    index = {"bases": [_base(OLD, "frozen", vocab="", source={"repo": "a|b", "file": "x\ny.pth"})]}
    lines = render_bases_table(index).splitlines()
    assert len(lines) == 3
    row = lines[2]
    assert f"| {OLD} | a\\|b: x y.pth | `{'ab' * 32}` | — | 24×2048, vocab 65536 | frozen |" == row


def test_each_base_section_holds_its_own_entries_with_paths_relative_to_it() -> None:
    """R11: every entry under every base; R12: full paths instead of paths relative to the base; R13: 0 rows
    dropped; R14: the data sha256 cut at 8 hex digits; R15: the recommended mark; R16: the train.json rows;
    R17: the '(no weights yet)' row only for a base without entries; R18: the content_version table."""
    text = render_sections(_index())
    old, new = _section(text, OLD), _section(text, NEW)
    assert "s1" not in old and "old-state" not in new
    assert "| state/v1/old-state.pth | old-state | State | v1 |" in old
    assert (
        "| state/v1/s1.pth | s1 | State | v1 (0 rows, sha256 01234567…) | g1k | — | "
        "first \\| try second line (recommended) |"
    ) in new
    assert "| miss/v2/r16/adapter-final.pth | v2-r16 | MiSS r16 | v2 | — | — | — |" in new
    assert "| state/v1/train.json | — | training parameters |" in new
    assert "| miss/v2/train.json | — | training parameters |" in new
    assert "| state/v1/train.json | — | training parameters |" in old
    assert "(no weights yet)" not in text
    assert f"| v2-r16 | `{'cafe' * 16}` |" in new and "content_version" not in old
    index = _index()
    index["entries"] = []
    assert _section(render_sections(index), NEW).count("| (no weights yet) |") == 1


def test_scores_render_every_recorded_detail_in_the_section_of_their_base() -> None:
    """R07: percent against points; R08: solved/total only when both are known; R09: +wins/−losses in that
    order; R10: the note first, then the details; R19: an unpublished weight's scores under its own base only;
    R25/R26/R27: run scores, the report and every category; R28: points out of a known total; R29: the base
    alone's scores."""
    text = render_sections(_index())
    old, new = _section(text, OLD), _section(text, NEW)
    assert "| base alone | bfcl | 2026-01-02 | 40% | 1 | — | — |" in new
    assert (
        "| s1 | bfcl | 2026-01-03 | 46.25% (37/80) | 2 | — | greedy; vs base: +9/−2, p=0.065; easy 20/30, hard 17/50; "
        "runs 45.0, 47; report: reports/s1.json |"
    ) in new
    assert "| s1 | points | 2026-01-04 | 41.0/60 | 1 | — | — |" in new
    assert "| gone (not uploaded) | bfcl | 2026-01-05 | 30 |" in new and "elsewhere" not in new
    assert "| elsewhere (not uploaded) | bfcl | 2026-01-06 | 31 |" in old and "gone" not in old
    index = _index()
    index["entries"][1]["scores"] = [{"benchmark": "b", "date": "d", "score": 50, "unit": "percent", "solved": 4}]
    assert "| s1 | b | d | 50% | — | — | — |" in render_sections(index)


def test_known_issues_of_bases_entries_and_the_registry_are_listed_and_nothing_trails() -> None:
    """R20: the base's own known issues; R21: the registry's; R24: no blank line at the end of the region."""
    text = render_sections(_index())
    assert "Known issues:\n- slow on long prompts" in _section(text, OLD)
    assert "Known issues:\n- s1: forgets the system prompt" in _section(text, NEW)
    assert text.endswith("### Known issues\n\n- the tokenizer file is shared")


def test_the_regions_are_replaced_between_their_own_markers_only() -> None:
    """R22: an end marker quoted above its begin marker (in the publisher's text) was taken as the region's end;
    R23: a README without its end marker gave a mangled text instead of None."""
    prose = f"Our README keeps {BASES_END} quoted in its text.\n\n"
    text = prose + skeleton()
    out = update_readme(text, _index())
    assert out is not None and out.startswith(prose)
    assert out.count(BASES_END) == 2 and "24×2048" in out.split(BASES_BEGIN, 1)[1].split(BASES_END, 1)[0]
    assert apply_bodies(skeleton().replace(SECTIONS_END, ""), ("a", "b")) is None
    assert apply_bodies(skeleton().replace(BASES_END, ""), ("a", "b")) is None
    assert f"{SECTIONS_BEGIN}\nb\n{SECTIONS_END}" in (apply_bodies(skeleton(), ("a", "b")) or "")
