"""Statements of the user's documents (seed 000, seed 003) that docs/coverage.md maps to these tests.

IDX012: one adapter id per MiSS adapter of a base ("MiSS：注册成 adapter_id，请求时带上它").
IDX013: a score agrees with its own counts ("52.2%（296.5 题）" of 568, "每组跑两遍取平均", seed 003's tables
whose categories add up to the global line).
IDX014: a question-by-question comparison is of one run ("10-16 和 10-17 两天的推理后端版本不同，跨天只作参考";
"新旧基模的分数在同一天、同一后端上重跑后才能直接比较").
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from mutations import score_record
from regtools import TINY_BASE, edit_index, miss_train, write_miss

from rwkv_registry.core.errors import RefusedError
from rwkv_registry.engine.validate import validate_registry
from rwkv_registry.store.ops import add_entry

STATE = f"{TINY_BASE}/state/v1/s1.pth"
MISS_A = f"{TINY_BASE}/miss/v2/r4-a/adapter-final.pth"
EXAM = "App harness; inference backend of 2026-10-17"


def _score(**more: Any) -> dict[str, Any]:
    """The seed's exam score of 2026-10-17 (its backend named), with ``more`` in place of its fields."""
    return score_record(**{"backend": EXAM, **more})


def _findings(reg: Path, code: str, **scores: list[dict[str, Any]]) -> list[str]:
    """Set the scores of entries by path key (``state`` / ``miss``), then the messages of ``code``."""
    paths = {"state": STATE, "miss": MISS_A}

    def edit(index: dict[str, Any]) -> None:
        for e in index["entries"]:
            for key, sc in scores.items():
                if e["path"] == paths[key]:
                    e["scores"] = sc

    edit_index(reg, edit)
    return [f.message for f in validate_registry(reg, use_cache=False).findings if f.code == code]


# --- IDX013 ---------------------------------------------------------------------------------------------

SEED_000_EXAM = [(52.2, 296.5), (51.3, 291.5), (49.4, 280.5), (46.0, 261.0)]


def test_idx013_seed_000_exam_scores_agree_with_their_counts(reg: Path) -> None:
    """Every exam line of seed 000 (score% and solved of 568) passes, 46.0% for 261.0 (45.95) included."""
    scores = [_score(score=s, solved=n, benchmark=f"exam-{i}") for i, (s, n) in enumerate(SEED_000_EXAM)]
    assert _findings(reg, "IDX013", miss=scores) == []


@pytest.mark.parametrize(("score", "solved"), [(52.3, 296.5), (46.1, 261.0), (51.3, 296.5), (5.22, 296.5)])
def test_idx013_percent_copied_wrong(reg: Path, score: float, solved: float) -> None:
    found = _findings(reg, "IDX013", miss=[_score(score=score, solved=solved)])
    assert len(found) == 1 and f"score {score:g}%" in found[0] and f"solved {solved:g} of 568" in found[0]


SEED_003_STATE = {  # seed 003, "G1g + state-tuning": 58 of 82
    "abstention": {"solved": 12, "total": 17},
    "arguments": {"solved": 19, "total": 22},
    "hard-selection": {"solved": 16, "total": 23},
    "easy-selection": {"solved": 11, "total": 18},
    "multi-step": {"solved": 0, "total": 2},
}


def _points(**more: Any) -> dict[str, Any]:
    return (
        _score(
            benchmark="toolcall-judge", unit="points", score=58, solved=58, total=82, runs=1, by_category=SEED_003_STATE
        )
        | more
    )


def test_idx013_seed_003_points_and_categories_pass(reg: Path) -> None:
    """Seed 003's table: five categories adding up to the global 58/82; the rung-2 table leaves out multi-step
    (80 of 82 questions), so its categories are not compared with the total."""
    partial = {k: v for k, v in SEED_003_STATE.items() if k != "multi-step"}
    rung2 = _points(score=61, solved=61, by_category=partial | {"abstention": {"solved": 15, "total": 17}})
    rung2["by_category"]["arguments"] = {"solved": 16, "total": 22}
    rung2["by_category"]["easy-selection"] = {"solved": 14, "total": 18}
    assert _findings(reg, "IDX013", state=[_points(), rung2 | {"benchmark": "rung2"}]) == []


@pytest.mark.parametrize(
    ("edit", "words"),
    [
        ({"score": 61}, "score 61 but solved 58 of 82"),
        ({"by_category": SEED_003_STATE | {"arguments": {"solved": 18, "total": 22}}}, "categories solve 57 of 82"),
        ({"by_category": SEED_003_STATE | {"arguments": {"solved": 19, "total": 30}}}, "categories hold 90 questions"),
        ({"runs": 2, "run_scores": [57, 61]}, "run scores 57, 61 average 59"),
    ],
    ids=["points", "category-sum", "category-total", "run-mean"],
)
def test_idx013_points_categories_and_runs(reg: Path, edit: dict[str, Any], words: str) -> None:
    found = _findings(reg, "IDX013", state=[_points(**edit)])
    assert len(found) == 1 and words in found[0], found


def test_idx013_run_mean_allows_the_rounding_of_each_run(reg: Path) -> None:
    """Two runs recorded to one decimal average within 0.1 of the one-decimal headline (52.25 → 52.2 or 52.3)."""
    assert _findings(reg, "IDX013", miss=[_score(run_scores=[52.2, 52.3])]) == []
    assert _findings(reg, "IDX013", miss=[_score(run_scores=[52.0, 52.7])]) != []


def test_idx013_leaves_unknown_counts_alone(reg: Path) -> None:
    """A score without solved (the base's 21.4%) or without total is not compared."""
    assert _findings(reg, "IDX013", miss=[_score(score=21.4, solved=None), _score(total=None, benchmark="b")]) == []


# --- IDX014 ---------------------------------------------------------------------------------------------


def _vs_state() -> dict[str, Any]:
    return {"against": "s1", "wins": 95, "losses": 54, "p_value": 0.001}


def test_idx014_same_day_and_backend_passes(reg: Path) -> None:
    """Seed 000: v2.1 lr2e-5 against v2.0, both on 2026-10-17 with one backend."""
    mine = [_score(comparison=_vs_state())]
    assert _findings(reg, "IDX014", state=[_score(score=46.0, solved=261.0)], miss=mine) == []


@pytest.mark.parametrize(
    "theirs",
    [{"date": "2026-10-16"}, {"backend": "App harness; inference backend of 2026-10-16"}],
    ids=["other-day", "other-backend"],
)
def test_idx014_other_run_is_a_warning(reg: Path, theirs: dict[str, Any]) -> None:
    found = _findings(
        reg, "IDX014", state=[_score(score=46.0, solved=261.0, **theirs)], miss=[_score(comparison=_vs_state())]
    )
    assert len(found) == 1 and "compared question by question against 's1'" in found[0], found


def test_idx014_without_a_recorded_score_of_the_other_says_nothing(reg: Path) -> None:
    """The other weight has no exam score at all: no run to disagree with."""
    other_bench = [_score(benchmark="bfcl-product", date="2026-10-13")]
    assert _findings(reg, "IDX014", state=other_bench, miss=[_score(comparison=_vs_state())]) == []


def test_idx014_against_the_base_alone(reg: Path) -> None:
    """A comparison may name the base (seed 000's base alone on 2026-10-16)."""

    def edit(index: dict[str, Any]) -> None:
        index["bases"][0]["scores"] = [_score(date="2026-10-16", score=21.4, solved=None)]

    edit_index(reg, edit)
    vs_base = {"against": TINY_BASE, "wins": 95, "losses": 54, "p_value": 0.001}
    assert _findings(reg, "IDX014", miss=[_score(comparison=vs_base)]) != []
    assert _findings(reg, "IDX014", miss=[_score(comparison=vs_base, date="2026-10-16", score=46.9, solved=None)]) == []


# --- IDX012 ---------------------------------------------------------------------------------------------


def _adapter_ids(reg: Path, **by_path: str) -> list[str]:
    def edit(index: dict[str, Any]) -> None:
        for e in index["entries"]:
            if e["path"] in by_path:
                e["adapter_id"] = by_path[e["path"]]

    edit_index(reg, edit)
    return [f.message for f in validate_registry(reg, use_cache=False).findings if f.code == "IDX012"]


def test_idx012_distinct_adapter_ids_pass(reg: Path) -> None:
    assert _adapter_ids(reg, **{MISS_A: "v21-lr2e-5-e2"}) == []


def test_idx012_an_adapter_id_equal_to_another_entry_s_id(reg: Path) -> None:
    """The other entry has no explicit adapter_id: its id is the adapter id it registers under."""

    def drop(index: dict[str, Any]) -> None:
        for e in index["entries"]:
            if e["id"] == "v2-r4-b":
                e.pop("adapter_id", None)

    edit_index(reg, drop)
    found = _adapter_ids(reg, **{MISS_A: "v2-r4-b"})
    assert found == [f"entries 'v2-r4-a' and 'v2-r4-b' of base {TINY_BASE!r} both register as adapter 'v2-r4-b'"]


def _snapshot(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name != ".rwkv-registry.lock"
    }


def test_add_refuses_a_taken_adapter_id(reg: Path, tmp_path: Path) -> None:
    src = tmp_path / "new" / "adapter-final.pth"
    write_miss(src, seed=7)
    before = _snapshot(reg)
    with pytest.raises(RefusedError, match=r"adapter id 'v2-r4-a' is already the adapter id of entry 'v2-r4-a'"):
        add_entry(
            reg, src, base=TINY_BASE, data_version="v3", train=miss_train("v3"), group="r4-a", adapter_id="v2-r4-a"
        )
    assert _snapshot(reg) == before
    add_entry(reg, src, base=TINY_BASE, data_version="v3", train=miss_train("v3"), group="r4-a", adapter_id="v3-r4-a")
    index = json.loads((reg / "index.json").read_text())
    assert [e["adapter_id"] for e in index["entries"] if e["method"] == "miss"] == ["v2-r4-a", "v2-r4-b", "v3-r4-a"]
    assert validate_registry(reg, use_cache=False).ok


# --- IDX017 ---------------------------------------------------------------------------------------------


def _own_version(reg: Path) -> str:
    index = json.loads((reg / "index.json").read_text())
    return next(e["miss"]["content_version"] for e in index["entries"] if e["path"] == MISS_A)


def test_idx017_a_score_registered_as_the_file_passes(reg: Path) -> None:
    """Seed 000: "三个版本号与 2026-10-17 跑分时端点上登记的一致": the content_version the server registered when the
    adapter was scored is the file's own; null means not recorded."""
    own = _own_version(reg)
    assert _findings(reg, "IDX017", miss=[_score(content_version=own)], state=[_score(content_version=None)]) == []


def test_idx017_a_score_of_another_export_and_a_state_with_a_version(reg: Path) -> None:
    """Before the fix a score measured on another export of the adapter (the server registered another
    content_version) sat on this file's entry unremarked: the schema had no place for the registered version."""
    own = _own_version(reg)
    found = _findings(reg, "IDX017", miss=[_score(content_version="5" * 64)], state=[_score(content_version=own)])
    assert found == [
        f"entry 's1', exam 2026-10-17: records content_version {own}, but a State has none",
        f"entry 'v2-r4-a', exam 2026-10-17: measured on the adapter registered as content_version {'5' * 64}, "
        f"but this entry's file is {own}",
    ]
    from rwkv_registry.checks.catalogue import RULES

    assert str(RULES["IDX017"].severity) == "error"


def test_idx017_add_refuses_a_score_of_another_file(reg: Path, tmp_path: Path) -> None:
    src = tmp_path / "new" / "adapter-final.pth"
    write_miss(src, seed=7)
    before = _snapshot(reg)
    with pytest.raises(RefusedError, match="IDX017: entry 'v3-r4-a', exam 2026-10-17: measured on the adapter"):
        add_entry(
            reg,
            src,
            base=TINY_BASE,
            data_version="v3",
            train=miss_train("v3"),
            group="r4-a",
            scores=[_score(content_version="6" * 64)],
        )
    assert _snapshot(reg) == before


def test_readme_scores_show_the_registered_content_version(reg: Path) -> None:
    """Before the fix the README's scores table left out a score's content_version (IDX017's field), so a reader
    could not tell which export was measured. The row now shows it; validate renders with the same code, so a README
    not regenerated after recording it is RDM002, and regenerated it is clean."""
    from rwkv_registry.store.ops import write_readme

    own = _own_version(reg)
    assert _findings(reg, "RDM002", miss=[_score(content_version=own)], state=[_score(content_version=None)]) == [
        "the bases table or the per-base sections differ from index.json"
    ]
    write_readme(reg)
    rows = [
        line for line in (reg / "README.md").read_text().splitlines() if line.startswith("| ") and "| exam |" in line
    ]
    assert [r for r in rows if r.startswith("| v2-r4-a |")] == [
        f"| v2-r4-a | exam | 2026-10-17 | 52.2% (296.5/568) | 2 | {EXAM} | content_version {own} |"
    ]
    assert [r for r in rows if r.startswith("| s1 |")] == [
        f"| s1 | exam | 2026-10-17 | 52.2% (296.5/568) | 2 | {EXAM} | — |"
    ]
    assert "RDM002" not in {f.code for f in validate_registry(reg, use_cache=False).findings}


# --- IDX018, IDX019 ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("vocab", "vocab_size", "bad"),
    [
        ("rwkv_vocab_v20230424.txt", 65536, False),
        ("rwkv/rwkv_vocab_v20230424.txt", 65536, False),  # the file inside the rwkv package
        ("rwkv_vocab_v20230424.txt", 65529, True),  # its line count, not the padded embedding
        ("rwkv_vocab_v20230424.txt", 50277, True),  # a GPT-NeoX (Pile) model
        ("rwkv/rwkv_vocab_v20230424.txt", 777, True),
        ("20B_tokenizer.json", 50277, False),  # unknown offline: nothing to compare
    ],
)
def test_idx018_vocabulary_against_vocab_size(reg: Path, vocab: str, vocab_size: int, bad: bool) -> None:
    """Seed 000's bases table records the vocabulary file; before IDX018 nothing compared it with the base's
    architecture (the world vocabulary rwkv_vocab_v20230424 fills 65536 embedding rows, FORMATS §2)."""

    def edit(index: dict[str, Any]) -> None:
        index["bases"][0].update(vocab=vocab)
        index["bases"][0]["architecture"]["vocab_size"] = vocab_size

    edit_index(reg, edit)
    found = [f.message for f in validate_registry(reg, use_cache=False).findings if f.code == "IDX018"]
    assert found == (
        [
            f"base {TINY_BASE!r} records vocabulary {vocab!r} (65536 embedding rows), "
            f"but its architecture has vocab_size {vocab_size}"
        ]
        if bad
        else []
    )


@pytest.mark.parametrize(
    ("server", "version"),
    [
        ("rwkv_lightning v1.8.1 or later, with State upload and /v1/adapters", None),
        ("rwkv_lightning >= 1.9.0", None),
        ("rwkv_lightning_cuda v1.8.1+cu128", None),
        ("any OpenAI-compatible server 1.2.3", None),  # not rwkv_lightning: not compared
        ("rwkv_lightning (no version stated)", None),
        (None, None),
        ("rwkv_lightning v1.8.0, with State upload", "v1.8.0"),
        ("RWKV-Lightning >= 1.7.12.", "1.7.12"),
        ("rwkv_lightning v1.8.1-rc1 (State upload, /v1/adapters)", "v1.8.1-rc1"),
    ],
)
def test_idx019_server_version(reg: Path, server: str | None, version: str | None) -> None:
    """Seed 000: "需要支持 State 上传和 /v1/adapters 的 rwkv_lightning 推理服务（v1.8.1 及以后）". registry.server was
    free text that nothing read; a stated rwkv_lightning version is now compared as trainer versions are (TRN002)."""
    edit_index(reg, lambda i: i["registry"].update(server=server))
    found = [f for f in validate_registry(reg, use_cache=False).findings if f.code == "IDX019"]
    assert [f.message for f in found] == (
        [f"registry.server {server!r}: {version} is older than 1.8.1"] if version else []
    )
    assert all(str(f.severity) == "warning" for f in found)


# --- TRN011 ---------------------------------------------------------------------------------------------


def _steps(
    reg: Path, entry_total: dict[str, int], state_hyper: dict[str, Any], miss_run_steps: int | None
) -> list[str]:
    """Record total_steps on entries (by path key), hyper-parameters in the State's train.json, and ``steps`` on the
    MiSS run r4-a; the TRN011 messages."""
    paths = {"state": STATE, "miss": MISS_A}
    edit_index(
        reg,
        lambda i: [
            e.update(total_steps=entry_total[k]) for e in i["entries"] for k in entry_total if e["path"] == paths[k]
        ],
    )
    st = reg / f"{TINY_BASE}/state/v1/train.json"
    t = json.loads(st.read_text())
    t["hyperparameters"].update(state_hyper)
    st.write_text(json.dumps(t))
    if miss_run_steps is not None:
        mt = reg / f"{TINY_BASE}/miss/v2/train.json"
        m = json.loads(mt.read_text())
        m["runs"][0]["steps"] = miss_run_steps
        m["hyperparameters"]["steps"] = 5  # the run's own count comes first
        mt.write_text(json.dumps(m))
    return [f.message for f in validate_registry(reg, use_cache=False).findings if f.code == "TRN011"]


def test_trn011_seed_step_counts_agree(reg: Path) -> None:
    """Seed 000: "第 1224 步（共 1374 步）" (the State), "2 epoch 共 1378 步" (a MiSS run): the same counts in
    index.json and train.json pass; an unrecorded count on either side says nothing."""
    assert _steps(reg, {"state": 1374, "miss": 1378}, {"steps": 1374}, 1378) == []
    assert _steps(reg, {"state": 1374}, {"steps": None, "total_steps": None}, None) == []


def test_trn011_step_counts_that_disagree(reg: Path) -> None:
    """Before the fix an entry's total_steps and its train.json's step count could disagree without a word (the
    seed's "step 1224 of 1374" then points at a checkpoint of a run nobody can find)."""
    found = _steps(reg, {"state": 1500, "miss": 1378}, {"steps": 1374}, 2000)
    assert found == [
        "entry 'v2-r4-a' records total_steps 1378, train.json run 'r4-a' steps is 2000",
        "entry 's1' records total_steps 1500, train.json hyperparameters.steps is 1374",
    ]


# --- TRN009 ---------------------------------------------------------------------------------------------

SEED_MISS_RUNS = [  # seed 000: miss/v2.1/, three runs of 2 epochs, lr 1e-5, 2e-5, 3e-5
    {"group": f"r16-lr{lr}-e2", "lr": float(lr), "lr_final": float(lr) / 10, "epochs": 2, "steps": 1378}
    for lr in ("1e-5", "2e-5", "3e-5")
]


def _miss_entry(group: str, rank: int = 16) -> dict[str, Any]:
    return {"id": f"v21-{group}", "method": "miss", "group": group, "miss": {"rank": rank, "alpha": 32}}


def _names(entries: list[dict[str, Any]], runs: list[dict[str, Any]] | None = None, **hyper: Any) -> list[str]:
    from rwkv_registry.checks.train import train_findings

    method = entries[0]["method"]
    t: dict[str, Any] = {"method": method, "hyperparameters": hyper}
    if runs is not None:
        t["runs"] = runs
    d = f"{TINY_BASE}/{method}/v2.1"
    return [f.message for f in train_findings(f"{d}/train.json", d, t, entries, set()) if f.code == "TRN009"]


def test_trn009_the_seed_names_agree_with_their_records() -> None:
    entries = [_miss_entry(r["group"]) for r in SEED_MISS_RUNS]
    assert _names(entries, SEED_MISS_RUNS, rank=16, alpha=32) == []
    state = {"id": "v141b-s1224", "method": "state", "path": f"{TINY_BASE}/state/v1.41/v141b-s1224.pth"}
    assert _names([state | {"step": 1224, "total_steps": 1374}]) == []
    assert _names([state]) == []  # no step recorded: nothing to contradict


@pytest.mark.parametrize(
    ("entry", "run", "words"),
    [
        (_miss_entry("r16-lr2e-5-e2", rank=32), {}, "says rank 16, but index.json miss.rank records rank 32"),
        (_miss_entry("r16-lr2e-5-e2"), {"lr": 3e-5}, "says lr 2e-5, but its run in"),
        (_miss_entry("r16-lr2e-5-e2"), {"epochs": 3}, "says epochs 2, but"),
    ],
    ids=["rank", "lr", "epochs"],
)
def test_trn009_a_miss_group_name_contradicted(entry: dict[str, Any], run: dict[str, Any], words: str) -> None:
    runs = [dict(SEED_MISS_RUNS[1], **run)]
    found = _names([entry], runs)
    assert len(found) == 1 and words in found[0], found


def test_trn009_a_state_name_contradicted_and_names_without_numbers() -> None:
    path = f"{TINY_BASE}/state/v1.41/v141b-s1224.pth"
    found = _names([{"id": "v141b-s1224", "method": "state", "path": path, "step": 1374}])
    assert found == ["State v141b-s1224 says step 1224, but index.json records step 1374 (entry 'v141b-s1224')"]
    plain = [{"id": "s1", "method": "state", "path": f"{TINY_BASE}/state/v1/s1.pth", "step": 7}]
    assert _names(plain) == []  # "s1" alone is a name, not "-s<step>"
    assert _names([_miss_entry("final-a", rank=4)], [{"group": "final-a", "lr": 1e-4}]) == []


def test_trn009_epochs_may_come_from_the_shared_hyperparameters() -> None:
    runs = [{k: v for k, v in SEED_MISS_RUNS[1].items() if k != "epochs"}]
    assert _names([_miss_entry("r16-lr2e-5-e2")], runs, epochs=2) == []
    assert _names([_miss_entry("r16-lr2e-5-e2")], runs, epochs=1) != []


def test_add_shows_the_warnings_its_entry_brings_and_no_earlier_ones(
    reg: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`add` runs the train.json rules before writing: an error refuses, and a warning (TRN009 here) is shown once
    the entry is written (exit 0), as `validate` would report it. A later entry of the same directory that brings
    no warning of its own does not repeat its sibling's."""
    from rwkv_registry.cli.main import main

    train = tmp_path / "train.json"
    train.write_text(json.dumps(miss_train("v3", groups=("r4-lr3e-5", "r4-lr2e-5"))))

    def add(group: str, seed: int) -> int:
        src = tmp_path / group / "adapter-final.pth"
        write_miss(src, seed=seed)
        argv = ["add", str(reg), str(src), "--base", TINY_BASE, "--data-version", "v3", "--train", str(train)]
        return main([*argv, "--group", group])

    assert add("r4-lr3e-5", 7) == 0  # its run records lr 2e-5
    out, err = capsys.readouterr()
    assert "added miss entry v3-r4-lr3e-5" in out
    d = f"{TINY_BASE}/miss/v3"
    assert err.startswith(f"warning: TRN009 {d}/train.json: group r4-lr3e-5/ says lr 3e-5, but its run in"), err
    assert "\nhint: " in err and err.count("warning: ") == 1
    warned = [f for f in validate_registry(reg, use_cache=False).findings if f.path == f"{d}/train.json"]
    assert [(f.code, f.severity) for f in warned] == [("TRN009", "warning")]  # what add showed
    assert add("r4-lr2e-5", 8) == 0
    out, err = capsys.readouterr()
    assert "added miss entry v3-r4-lr2e-5" in out and err == ""


# --- TRN010 ---------------------------------------------------------------------------------------------


def _with_newer_base(reg: Path, command: str) -> list[str]:
    newer = TINY_BASE.replace("20260101", "20260301")

    def add(index: dict[str, Any]) -> None:
        b = json.loads(json.dumps(index["bases"][0]))
        b.update(name=newer, source=dict(b["source"], file=f"{newer}.pth"), sha256="5" * 64, status="active")
        index["bases"][0]["status"] = "frozen"
        index["bases"].append(b)

    edit_index(reg, add)
    for m in ("state", "miss"):
        (reg / newer / m).mkdir(parents=True)
        (reg / newer / m / ".gitkeep").write_bytes(b"")
    train = reg / f"{TINY_BASE}/state/v1/train.json"
    t = json.loads(train.read_text())
    t["command"] = command.format(own=f"{TINY_BASE}.pth", newer=f"{newer}.pth")
    train.write_text(json.dumps(t))
    return [f.message for f in validate_registry(reg, use_cache=False).findings if f.code == "TRN010"]


@pytest.mark.parametrize(
    ("command", "fires"),
    [
        ("rwkv_state_tune --model /m/{own} --lr 0.01", False),
        ("rwkv_state_tune --lr 0.01", False),
        ("rwkv_state_tune --model={newer} --init-state x --also {own}", False),
        ("rwkv_state_tune --model x-{newer}", False),
        ("rwkv_state_tune --model /m/{newer} --lr 0.01", True),
        ("rwkv_state_tune --model '{newer}'", True),
    ],
    ids=["own", "none", "both", "other-name-containing-it", "other", "quoted"],
)
def test_trn010_command_naming_another_base(reg: Path, command: str, fires: bool) -> None:
    found = _with_newer_base(reg, command)
    assert bool(found) is fires, found
    if fires:
        assert "(base 'rwkv7-tiny-20260301-ctx4096'), not this base's file rwkv7-tiny-20260101-ctx4096.pth" in found[0]


@pytest.mark.parametrize(
    ("command", "fires"),
    [
        ("rwkv_state_tune --model /m/{own} --lr 0.01", False),
        ("rwkv_state_tune --model /m/{own} --init-state /m/rwkv7-tiny-20260201-ctx4096.pth", False),
        ("rwkv_state_tune --model /m/model.pth --save v141b-s1224.pth", False),
        ("rwkv_state_tune --model x-rwkv7-tiny-20260201-ctx4096.pth", False),
        ("rwkv_state_tune --model /m/rwkv7-tiny-20260201-ctx4096.pth --lr 0.01", True),
        ("rwkv_state_tune --model=RWKV7-G1J-7.2B-20250801-CTX8192.pth", True),
    ],
    ids=["own", "own-and-another", "undated-names", "name-containing-it", "unregistered-newer", "other-family"],
)
def test_trn010_command_naming_an_unregistered_base_file(reg: Path, command: str, fires: bool) -> None:
    """Seed 000: weights are valid only on the base file they were trained on. Before the fix, a State whose
    train.json trained it on a base file not registered here (a newer dated base, not added yet) was accepted
    without a word under this base: TRN010 looked only for registered bases' files."""
    train = reg / f"{TINY_BASE}/state/v1/train.json"
    t = json.loads(train.read_text())
    t["command"] = command.format(own=f"{TINY_BASE}.pth")
    train.write_text(json.dumps(t))
    found = [f.message for f in validate_registry(reg, use_cache=False).findings if f.code == "TRN010"]
    file = command.split("=")[-1] if "=" in command else command.split()[2].rsplit("/", 1)[-1]
    expected = f"the command line names the base file {file} (not registered), not this base's file {TINY_BASE}.pth"
    assert found == ([expected] if fires else []), found


@pytest.mark.parametrize("folder", ["/m/g1/", "/m/"], ids=["its-folder", "another-folder"])
def test_trn010_another_base_recorded_in_a_folder_of_its_repository(reg: Path, folder: str) -> None:
    """source.file is the file's path in its Hub repository (IDX006 compares only its last component). Before the
    fix, a command naming such a registered base's file was also said to name a base file "not registered" (as well
    as the registered base's when it named the folder too, alone when it named another folder)."""
    newer = TINY_BASE.replace("20260101", "20260301")
    _with_newer_base(reg, "rwkv_state_tune --model " + folder + "{newer}")
    edit_index(reg, lambda i: i["bases"][1]["source"].update(file=f"g1/{newer}.pth"))
    found = [f.message for f in validate_registry(reg, use_cache=False).findings if f.code == "TRN010"]
    assert found == [f"the command line names g1/{newer}.pth (base {newer!r}), not this base's file {TINY_BASE}.pth"]


def test_trn010_does_not_echo_idx006(reg: Path) -> None:
    """A base whose recorded file name no longer matches its directory is IDX006 alone: a train.json whose command
    names the directory's file is not also TRN010 (that file is this base's, whatever source.file now says)."""
    train = reg / f"{TINY_BASE}/state/v1/train.json"
    t = json.loads(train.read_text())
    t["command"] = f"rwkv_state_tune --model /m/{TINY_BASE}.pth"
    train.write_text(json.dumps(t))
    edit_index(reg, lambda i: i["bases"][0]["source"].update(file="rwkv7-tiny-20260102-ctx4096.pth"))
    codes = {f.code for f in validate_registry(reg, use_cache=False).findings}
    assert "IDX006" in codes and "TRN010" not in codes, codes


# --- IDX015 ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("license_", "file", "fires"),
    [(None, None, False), ("apache-2.0", "LICENSE", False), ("MIT", None, False), (None, "LICENSE.txt", True)],
    ids=["none-chosen", "recorded", "recorded-without-file", "file-but-none-recorded"],
)
def test_idx015_license_file_and_index(reg: Path, license_: str | None, file: str | None, fires: bool) -> None:
    """Seed 000 ends "本仓库尚未指定许可证" (registry.license null); a LICENSE file then contradicts it."""
    from regtools import resum

    edit_index(reg, lambda i: i["registry"].update(license=license_))
    if file:
        (reg / file).write_text("Licensed under ...\n")
    resum(reg)
    report = validate_registry(reg, use_cache=False)
    found = [f"{f.path}: {f.message}" for f in report.findings if f.code == "IDX015"]
    assert found == ([f"{file}: {file} exists, but index.json records registry.license null"] if fires else [])
    assert report.ok


# --- what index.json and train.json must record (seed 000) ---------------------------------------------


def _drop(doc: dict[str, Any], dotted: str) -> dict[str, Any]:
    doc = json.loads(json.dumps(doc))
    *parents, last = dotted.split(".")
    node: Any = doc
    for p in parents:
        node = node[int(p)] if isinstance(node, list) else node[p]
    del node[last]
    return doc


@pytest.mark.parametrize(
    "key",
    [
        # "index.json：基模 sha256、方法、训练数据版本与 sha256、文件 sha256、跑分"
        "bases.0.sha256",
        "entries.0.method",
        "entries.0.data.version",
        "entries.0.data.sha256",
        "entries.0.file.sha256",
        "entries.0.scores",
        # "在 index.json 的 bases 里加新基模（来源、文件名、sha256、词表）"
        "bases.0.source",
        "bases.0.source.file",
        "bases.0.vocab",
        # the MiSS adapter's content_version, the repository's training data and licence lines
        "entries.1.miss.content_version",
        "registry.training_data",
        "registry.license",
    ],
)
def test_index_must_record_what_the_seed_lists(registry_template: Path, key: str) -> None:
    from rwkv_registry.schemas import schema_errors

    index = json.loads((registry_template / "index.json").read_text())
    assert index["entries"][1]["method"] == "miss"
    assert schema_errors("index", index) == []
    assert schema_errors("index", _drop(index, key)) != [], key


@pytest.mark.parametrize(
    ("method", "key"),
    [
        # "train.json（训练器与版本、超参、命令行、数据 sha256）"
        ("state", "trainer"),
        ("state", "trainer.version"),
        ("state", "hyperparameters"),
        ("state", "command"),
        ("state", "data.sha256"),
        # MiSS: "三组共用超参与各自学习率、等效命令行、起止时间"
        ("miss", "runs"),
        ("miss", "runs.0.lr"),
        ("miss", "started"),
        ("miss", "finished"),
    ],
)
def test_train_json_must_record_what_the_seed_lists(method: str, key: str) -> None:
    from regtools import state_train

    from rwkv_registry.schemas import schema_errors

    t = state_train() if method == "state" else miss_train()
    assert schema_errors("train", t) == []
    assert schema_errors("train", _drop(t, key)) != [], key


def test_idx012_is_not_an_echo_of_a_duplicate_id(reg: Path) -> None:
    """Two MiSS entries with one id (and so one default adapter id) are IDX001, said once."""

    def dup(index: dict[str, Any]) -> None:
        for e in index["entries"]:
            if e["id"] == "v2-r4-b":
                e["id"] = e["adapter_id"] = "v2-r4-a"

    edit_index(reg, dup)
    codes = [f.code for f in validate_registry(reg, use_cache=False).findings]
    assert "IDX001" in codes and "IDX012" not in codes


# --- IDX016 ---------------------------------------------------------------------------------------------


def _data_findings(reg: Path, *unpublished: dict[str, Any]) -> list[str]:
    from regtools import DATA_SHA

    def add(index: dict[str, Any]) -> None:
        for i, u in enumerate(unpublished):
            data = {"version": "v1", "rows": 100, "sha256": DATA_SHA} | u.get("data", {})
            item = {"id": f"u{i}", "base": TINY_BASE, "method": "state", "description": "", "scores": []}
            index.setdefault("unpublished", []).append(
                item | {k: v for k, v in u.items() if k != "data"} | {"data": data}
            )

    edit_index(reg, add)
    return [f.message for f in validate_registry(reg, use_cache=False).findings if f.code == "IDX016"]


def test_idx016_the_same_data_retrained_passes(reg: Path) -> None:
    """Seed 000: "用数据集仓库里同一份训练数据重训": the same version, sha256 and rows again; an unpublished
    weight that recorded neither; MiSS data of the same version name rendered apart."""
    assert (
        _data_findings(
            reg,
            {},
            {"data": {"rows": None, "sha256": None}},
            {"method": "miss", "data": {"sha256": "7" * 64, "rows": 5}},
        )
        == []
    )


@pytest.mark.parametrize(("data", "key"), [({"sha256": "6" * 64}, "sha256"), ({"rows": 3662}, "rows")])
def test_idx016_one_version_two_files(reg: Path, data: dict[str, Any], key: str) -> None:
    found = _data_findings(reg, {"data": data}, {"data": data})  # said once per version and field
    assert len(found) == 1 and found[0].startswith(f"state data v1: 's1' records {key} "), found


# --- the edges of IDX013 and TRN009 -----------------------------------------------------------------------------


def test_idx013_checks_a_benchmark_of_one_question(reg: Path) -> None:
    """A total of 1 is a count like any other: 0% with the one question solved is IDX013, 100% is not."""

    assert _findings(reg, "IDX013", miss=[_score(score=100.0, solved=1, total=1)]) == []
    found = _findings(reg, "IDX013", miss=[_score(score=0.0, solved=1, total=1)])
    assert len(found) == 1 and "solved 1 of 1" in found[0]


@pytest.mark.parametrize(
    "broken",
    [
        {"run_scores": []},
        {"by_category": {"a": {"total": 500}, "b": {"solved": 3, "total": 68}}},
        {"by_category": {"a": {"solved": 3, "total": "568"}}},
    ],
    ids=["no-run-scores", "category-without-solved", "category-total-text"],
)
def test_idx013_reads_past_a_score_that_breaks_the_schema(reg: Path, broken: dict[str, Any]) -> None:
    """A score whose run scores or categories break the schema is the schema's finding; the score sums of the
    other scores are still checked (no SCH005 'rules of check_scores skipped', no traceback)."""

    def edit(index: dict[str, Any]) -> None:
        e = next(e for e in index["entries"] if e["path"] == MISS_A)
        e["scores"] = [_score(benchmark="broken", **broken), _score(score=52.3, solved=296.5)]

    edit_index(reg, edit)
    found = validate_registry(reg, use_cache=False).findings
    assert not any(f.code == "SCH005" and "check_scores" in f.message for f in found), [f.message for f in found]
    assert any(f.code.startswith("SCH") and f.path == "index.json" for f in found)
    idx013 = [f.message for f in found if f.code == "IDX013"]
    assert len(idx013) == 1 and "score 52.3% but solved 296.5 of 568" in idx013[0], idx013


def test_idx013_categories_may_carry_the_rounding_of_their_means(reg: Path) -> None:
    """Categories solving 29.5 and 28.4 (means over runs, each rounded to a tenth) may add up to 58 solved;
    29.5 and 28.3 may not."""

    def points(b: float) -> dict[str, Any]:
        cats = {"a": {"solved": 29.5, "total": 300}, "b": {"solved": b, "total": 268}}
        return _score(unit="points", score=58, solved=58, by_category=cats)

    assert _findings(reg, "IDX013", miss=[points(28.4)]) == []
    found = _findings(reg, "IDX013", miss=[points(28.3)])
    assert len(found) == 1 and "the categories solve 57.8 of 568, the score says 58" in found[0], found


def test_trn009_reads_the_step_of_a_state_name_with_a_dot() -> None:
    """The step of ``g1.5-s1224.pth`` is 1224: only the extension is cut from the name."""
    state = {"id": "g15-s1224", "method": "state", "path": f"{TINY_BASE}/state/v1.41/g1.5-s1224.pth"}
    assert _names([state | {"step": 1224}]) == []
    found = _names([state | {"step": 1000}])
    assert len(found) == 1 and "State g1.5-s1224 says step 1224, but index.json records step 1000" in found[0]
