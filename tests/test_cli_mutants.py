"""Tests written against the mutants of the CLI mutation audit that the other tests let through.

registry/cli/main.py (exit codes, stdout/stderr, messages, defaults), registry/index/sums.py (the
``sha256sum -c`` format), registry/index/lineage.py, registry/formats/jsoncpp.py and registry/store/demo.py (its
fidelity to the seed README, seeds/000).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pytest
from regtools import TINY_SHA

from rwkv_registry.cli import main as cli
from rwkv_registry.cli.main import build_parser, main
from rwkv_registry.formats.jsoncpp import dumps
from rwkv_registry.fs import atomic
from rwkv_registry.index.lineage import family_of, superseded
from rwkv_registry.index.sums import format_sums, parse_sums

H = "ab" * 32


# --- cli.py: what a user sees ------------------------------------------------------------------------


def _with_handler(monkeypatch: pytest.MonkeyPatch, exc: BaseException) -> None:
    def handler(_args: argparse.Namespace) -> int:
        raise exc

    monkeypatch.setattr(cli, "cmd_rules", handler)


def test_human_report_names_the_file_after_the_code(registry: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(registry)]) == 0
    out = capsys.readouterr().out
    assert "OK " in out and "FAILED" not in out
    (registry / "stray.txt").write_text("x")
    assert main(["validate", str(registry)]) == 1
    out = capsys.readouterr().out
    assert "LAY001 stray.txt: " in out and "FAILED" in out


def test_validate_defaults_to_the_current_directory(
    registry: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(registry)
    assert main(["validate"]) == 0
    (registry / "stray.txt").write_text("x")
    assert main(["validate"]) == 1


def test_add_base_by_metadata_needs_arch(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    reg = tmp_path / "reg"
    assert main(["init", str(reg)]) == 0
    before = (reg / "index.json").read_bytes()
    code = main(["add-base", str(reg), "--name", "rwkv7-x-20260101", "--sha256", TINY_SHA, "--source", "a/b"])
    err = capsys.readouterr().err
    assert code == 2 and "--arch" in err and "hint:" in err
    assert (reg / "index.json").read_bytes() == before


def test_add_base_default_vocab_is_the_rwkv_world_vocab() -> None:
    args = build_parser().parse_args(["add-base", "r", "--name", "n", "--sha256", "x", "--arch", "a", "--source", "s"])
    assert args.vocab == "rwkv_vocab_v20230424.txt" and args.freeze_previous is True


def test_smoke_think_tokens_default_is_256() -> None:
    args = build_parser().parse_args(["smoke", "r", "e", "--base-file", "b.pth"])
    assert args.think_tokens == 256 and args.device == "auto"


def test_sums_check_and_force_together_is_a_usage_error(registry: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sums", str(registry), "--check", "--force"]) == 2
    err = capsys.readouterr().err
    assert "--force" in err and "hint:" in err


def test_sums_check_exit_code(registry: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sums", str(registry), "--check"]) == 0
    assert "SHA256SUMS: OK" in capsys.readouterr().out
    sums = registry / "SHA256SUMS"
    sums.write_bytes(sums.read_bytes().replace(b"\n", b"\r\n"))  # a warning (HSH007), not an error
    assert main(["sums", str(registry), "--check"]) == 0
    out = capsys.readouterr().out
    assert "warning HSH007" in out and "SHA256SUMS: OK" in out
    (registry / "stray.txt").write_text("x")
    assert main(["sums", str(registry), "--check"]) == 1
    assert "error(s)" in capsys.readouterr().out


def test_sums_force_writes_over_an_unparsable_index(registry: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (registry / "index.json").write_text("{not json")
    sums = (registry / "SHA256SUMS").read_bytes()
    assert main(["sums", str(registry)]) != 0
    assert (registry / "SHA256SUMS").read_bytes() == sums
    assert main(["sums", str(registry), "--force"]) == 0
    assert (registry / "SHA256SUMS").read_bytes() != sums


@pytest.mark.parametrize("command", ["list", "show"])
def test_list_and_show_refuse_a_directory_of_leftovers(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / f"{atomic.TMP_PREFIX}x").write_text("")  # a killed init: not a registry to list
    args = [command, str(tmp_path)] if command == "list" else [command, "--path", str(tmp_path)]
    assert main(args) == 2
    assert "is not a registry (no index.json)" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("smoke_code", "ok", "expected"), [(None, False, 1), (0, False, 1), (1, True, 1), (0, True, 0)]
)
def test_demo_exit_code_is_the_worst_of_validation_and_smoke(
    smoke_code: int | None, ok: bool, expected: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys
    import types

    from rwkv_registry.engine import validate
    from rwkv_registry.store import demo

    report = types.SimpleNamespace(
        ok=ok,
        findings=[],
        counts={"error": 0 if ok else 1, "warning": 0, "info": 0},
        stats={},
        target=str(tmp_path),
    )
    monkeypatch.setattr(demo, "build_demo", lambda path, **_kw: Path(path))
    monkeypatch.setattr(validate, "validate_registry", lambda _root: report)
    fake = types.ModuleType("rwkv_registry.model.smoke.demo")
    fake.run_demo_smoke = lambda _root, console: smoke_code  # type: ignore[attr-defined]
    fake.smoke_work_dir = lambda root: Path(f"{root}-smoke")  # type: ignore[attr-defined]
    fake.check_demo_smoke_dirs = lambda work: None  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "rwkv_registry.model.smoke.demo", fake)
    args = ["demo", str(tmp_path)] + (["--smoke"] if smoke_code is not None else [])
    assert main(args) == expected


def test_smoke_think_tokens_must_be_positive(registry: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["smoke", str(registry), "x", "--base-file", "b.pth", "--think-tokens", "0"])
    assert code == 2 and "--think-tokens 0" in capsys.readouterr().err


@pytest.mark.parametrize("n", ["4097", str(10**9)])
def test_smoke_think_tokens_are_bounded(registry: Path, capsys: pytest.CaptureFixture[str], n: str) -> None:
    """A thinking budget of a billion tokens would decode for days (every case, twice, entry and base): refused
    before anything runs, naming the option, the bound and why; the bound itself is accepted by the check."""
    from rwkv_registry.cli.main import MAX_THINK_TOKENS, check_think_tokens

    code = main(["smoke", str(registry), "x", "--base-file", "b.pth", "--think-tokens", n])
    err = " ".join(capsys.readouterr().err.split())
    assert code == 2 and f"--think-tokens {n}: give a number of tokens from 1 to 4096" in err
    assert "bounds the smoke run's time" in err
    check_think_tokens(MAX_THINK_TOKENS)


def test_smoke_without_torch_says_what_to_install(
    registry: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda n, *a: None if n == "torch" else real(n, *a))
    assert main(["smoke", str(registry), "x", "--base-file", "b.pth"]) == 2
    err = capsys.readouterr().err
    assert "'torch'" in err and "rwkv-registry[smoke]" in err


@pytest.mark.parametrize(
    ("name", "extra"),
    [("torch.cuda", "smoke"), ("textual.app", "tui"), ("triton", "smoke"), ("huggingface_hub.errors", "hub")],
)
def test_a_missing_optional_module_names_its_extra(
    name: str, extra: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _with_handler(monkeypatch, ModuleNotFoundError(f"No module named {name!r}", name=name))
    assert main(["rules"]) == 2
    captured = capsys.readouterr()
    assert f"pip install 'rwkv-registry[{extra}]'" in captured.err and captured.out == ""


def test_an_unexpected_error_is_one_message_exit_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("RWKV_REGISTRY_TRACEBACK", raising=False)
    _with_handler(monkeypatch, RuntimeError("boom"))
    assert main(["rules"]) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith("error: unexpected RuntimeError: boom\n")
    assert "RWKV_REGISTRY_TRACEBACK=1" in captured.err and "Traceback" not in captured.err
    monkeypatch.setenv("RWKV_REGISTRY_TRACEBACK", "1")
    with pytest.raises(RuntimeError, match="boom"):
        main(["rules"])


def test_a_closed_pipe_is_exit_0(monkeypatch: pytest.MonkeyPatch) -> None:
    _with_handler(monkeypatch, BrokenPipeError())
    assert main(["rules"]) == 0


def test_ctrl_c_in_a_command_is_exit_130(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(atomic, "committed_count", lambda: 0)
    _with_handler(monkeypatch, KeyboardInterrupt())
    assert main(["rules"]) == 130
    assert capsys.readouterr().err == "interrupted\n"


@pytest.mark.parametrize(
    ("command", "done", "expected"),
    [
        ("validate", 0, "interrupted"),
        ("sign", 0, "interrupted: nothing was written"),
        ("demo", 0, "interrupted: nothing was written"),
        ("add", 0, "interrupted: nothing was written"),
        ("sums", 1, "interrupted after the write was committed: SHA256SUMS was written"),
        ("add", 1, "interrupted after the write was committed: the entry is registered"),
        ("add", 2, "interrupted after 2 write(s) to the registry were committed"),
        ("sign", 1, "interrupted after 1 write(s) to the registry were committed"),
    ],
)
def test_interrupted_message(command: str, done: int, expected: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(atomic, "committed_count", lambda: done)
    assert cli._interrupted_message(argparse.Namespace(command=command, path="p")).startswith(expected)


def test_rules_json_severities(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rules", "--format", "json"]) == 0
    rules = json.loads(capsys.readouterr().out)
    assert rules and {r["severity"] for r in rules} <= {"error", "warning", "info"}
    assert all(r["code"] and r["hint"] for r in rules)


# --- sums.py: GNU sha256sum -c lines -------------------------------------------------------------------


def test_sums_parse_accepts_what_sha256sum_accepts() -> None:
    data = (
        f"{H} *bin.pth\n"  # binary mode
        f"{H.upper()}  ./up.txt\r\n"  # upper-case hex, ./ prefix, CRLF
        "# a comment\n"
        f"\\{H}  a\\nb\\\\c\\rd\n"  # escaped name
        f"{H}  lit\\nname\n"  # no leading backslash: taken literally
    ).encode()
    good, bad = parse_sums(data)
    assert bad == []
    assert [(g.lineno, g.sha256, g.path, g.crlf) for g in good] == [
        (1, H, "bin.pth", False),
        (2, H, "up.txt", True),
        (4, H, "a\nb\\c\rd", False),
        (5, H, "lit\\nname", False),
    ]


def test_sums_parse_rejects_a_short_hash_with_its_line_number() -> None:
    good, bad = parse_sums(f"{H}  ok\n{H[:63]}  short\n".encode())
    assert [g.path for g in good] == ["ok"] and bad == [(2, f"{H[:63]}  short")]


def test_sums_format_escapes_like_gnu_and_sorts_by_utf8_bytes() -> None:
    names = {"b": H, "B": H, "c\rr": H, "x\\y": H, "\udcff": H, "\uf000": H}
    text = format_sums(names)
    assert text.split(b"\n")[:-1] == [
        f"{H}  B".encode(),
        f"{H}  b".encode(),
        f"\\{H}  c\\rr".encode(),
        f"\\{H}  x\\\\y".encode(),
        f"{H}  ".encode() + "\uf000".encode(),
        f"{H}  ".encode() + b"\xff",
    ]
    assert format_sums({"a": H.upper()}) == f"{H}  a\n".encode()
    good, bad = parse_sums(text)
    assert bad == [] and sorted(g.path for g in good) == sorted(names)


# --- lineage.py ------------------------------------------------------------------------------------------


def test_family_needs_a_whole_eight_digit_date() -> None:
    assert family_of("rwkv7-old-19991231-ctx4096") == "rwkv7-old"
    assert family_of("rwkv7-x-202601011") == "rwkv7-x-202601011"  # nine digits: no date


def test_a_base_alone_is_not_superseded() -> None:
    assert superseded([{"name": "rwkv7-a-20260101"}]) == {}
    bases = [{"name": "rwkv7-a-20260101"}, {"name": "rwkv7-a-20260201"}, {"name": "rwkv7-b-20250101"}]
    assert superseded(bases) == {"rwkv7-a-20260101": "rwkv7-a-20260201"}
    renamed = [{"name": "rwkv7-a-20260101", "family": "f"}, {"name": "rwkv7-b-20260301", "family": "f"}]
    assert superseded(renamed) == {"rwkv7-a-20260101": "rwkv7-b-20260301"}  # the recorded family wins


# --- jsoncpp.py ------------------------------------------------------------------------------------------


def test_jsoncpp_boundaries() -> None:
    assert dumps(" \x7f/") == '" \x7f/"'
    assert dumps("\x1f\u00ff") == '"\\u001f\\u00ff"'
    assert dumps("\U0001f600") == '"\\ud83d\\ude00"'
    assert dumps([True, False, None]) == "[true,false,null]"
    assert dumps(2**63) == "9223372036854775808" and dumps(2**64) == "1.8446744073709552e+19"
    assert dumps([float("-inf"), float("inf")]) == "[-1e+9999,1e+9999]"
    assert dumps({"b": 1, "a": 2, "\u00e9": 3, "Z": 4}) == '{"Z":4,"a":2,"b":1,"\\u00e9":3}'


# --- demo.py: fidelity to the seed README (seeds/000) -----------------------------------------------------

SEED = "rwkv7-g1k-7.2b-20260930-ctx25600"
SEED_FACTS = {  # transcribed from the seed README; each string is checked against it when it is at hand
    "base_sha256": "0853d4ce2e4e0629762797d05036a84cc69fb2fb9eff5590dd22aeb518a4c842",
    "vocab": "rwkv_vocab_v20230424.txt",
}


def _seed_text() -> str | None:
    for p in sorted(Path("/work/shared/seeds").glob("000_*.txt")) if Path("/work/shared/seeds").is_dir() else []:
        return p.read_text("utf-8")
    return None


@pytest.fixture(scope="module")
def demo_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from rwkv_registry.store.demo import build_demo

    return build_demo(tmp_path_factory.mktemp("demo") / "demo", log=lambda _m: None)


@pytest.fixture(scope="module")
def demo_index(demo_root: Path) -> dict[str, Any]:
    return dict(json.loads((demo_root / "index.json").read_text("utf-8")))


def _scores(item: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [(s["benchmark"], s["date"], s["score"], s["solved"], s["total"]) for s in item["scores"]]


def test_demo_mirrors_the_seed(demo_index: dict[str, Any]) -> None:
    seed = _seed_text()
    if seed is not None:
        for fact in [*SEED_FACTS.values(), "3662", "5512", "feb2fd6b", "2fbf6760", "568", "+95/−54", "p=0.001"]:
            assert fact in seed, fact
    (base,) = demo_index["bases"]
    assert base["name"] == SEED and base["sha256"] == SEED_FACTS["base_sha256"]
    assert base["vocab"] == SEED_FACTS["vocab"] and base["source"]["repo"] == "BlinkDL/rwkv7-g1"
    assert _scores(base) == [("exam", "2026-10-16", 21.4, None, 568), ("bfcl-product", "2026-10-13", 44.0, 44.0, 60)]
    entries = {e["id"]: e for e in demo_index["entries"]}
    assert sorted(entries) == ["v141b-s1224", "v21-lr1e-5-e2", "v21-lr2e-5-e2", "v21-lr3e-5-e2"]
    state = entries["v141b-s1224"]
    assert state["path"] == f"{SEED}/state/v1.41/v141b-s1224.pth" and state["recommended"] is True
    assert (state["data"]["rows"], state["data"]["sha256"][:8], len(state["data"]["sha256"])) == (3662, "feb2fd6b", 64)
    assert (state["step"], state["total_steps"]) == (1224, 1374)
    assert _scores(state) == [
        ("exam", "2026-10-16", 46.9, None, 568),
        ("workbank-clean", "2026-10-13", 25.0, None, None),
        ("bfcl-product", "2026-10-13", 41.0, 41.0, 60),
        ("bash-probes", "2026-10-13", 9.0, 9.0, 26),
    ]
    expected_miss = {
        "v21-lr2e-5-e2": ("r16-lr2e-5-e2", True, 52.2, 296.5),
        "v21-lr1e-5-e2": ("r16-lr1e-5-e2", False, 51.3, 291.5),
        "v21-lr3e-5-e2": ("r16-lr3e-5-e2", False, 49.4, 280.5),
    }
    for eid, (group, rec, score, solved) in expected_miss.items():
        e = entries[eid]
        assert e["path"] == f"{SEED}/miss/v2.1/{group}/adapter-final.pth"
        assert e["recommended"] is rec and e["adapter_id"] == eid and e["profile"] == "g1k-think"
        assert (e["data"]["rows"], e["data"]["sha256"][:8], len(e["data"]["sha256"])) == (5512, "2fbf6760", 64)
        assert _scores(e) == [("exam", "2026-10-17", score, solved, 568)]
        assert e["miss"]["rank"] == 16
    comparison = entries["v21-lr2e-5-e2"]["scores"][0]["comparison"]
    assert comparison == {"against": "v20-r16-lr3e-5", "wins": 95, "losses": 54, "p_value": 0.001}
    unpublished = {u["id"]: _scores(u) for u in demo_index["unpublished"]}
    assert unpublished == {
        "v20-r16-lr3e-5": [("exam", "2026-10-17", 46.0, 261.0, 568)],
        "state-v1.3": [
            ("workbank-clean", "2026-10-13", 22.7, None, None),
            ("bfcl-product", "2026-10-13", 24.3, 24.3, 60),
            ("bash-probes", "2026-10-13", 2.0, 2.0, 26),
        ],
    }


def test_demo_train_json_carries_the_seed_learning_rates(demo_root: Path) -> None:
    state = json.loads((demo_root / SEED / "state/v1.41/train.json").read_text("utf-8"))
    hp = state["hyperparameters"]
    assert (hp["lr"], hp["lr_final"], hp["steps"]) == (0.01, 0.00167, 1374)
    miss = json.loads((demo_root / SEED / "miss/v2.1/train.json").read_text("utf-8"))
    assert miss["hyperparameters"]["rank"] == 16
    runs = {r["group"]: (r["lr"], r["lr_final"], r["epochs"], r["steps"]) for r in miss["runs"]}
    assert runs == {
        "r16-lr1e-5-e2": (1e-5, 1e-6, 2, 1378),
        "r16-lr2e-5-e2": (2e-5, 2e-6, 2, 1378),
        "r16-lr3e-5-e2": (3e-5, 3e-6, 2, 1378),
    }


# --- _hub_facts.py ----------------------------------------------------------------------------------------


class _RangeBytes(bytes):
    """A remote file's bytes, as header_facts reads them (Range reads are local here)."""

    def prefetch_zip_metadata(self) -> None:
        pass


@pytest.mark.parametrize(
    ("names", "method"),
    [
        (["blocks.0.att.time_state"], "state"),
        (["blocks.0.att.time_state", "emb.weight"], "state"),  # the server skips emb.weight (STA006)
        (["blocks.0.att.time_state", "emb.weight", "head.weight"], None),  # a whole model
        (["emb.weight"], None),
    ],
)
def test_remote_headers_call_a_file_state_as_the_local_facts_do(
    names: list[str], method: str | None, tmp_path: Path
) -> None:
    from rwkv_registry.formats.pthwrite import RawTensor, write_pth
    from rwkv_registry.hub.facts import header_facts

    path = tmp_path / "w.pth"
    write_pth(path, {n: RawTensor("bfloat16", (2, 2, 2), bytes(16)) for n in names}, layout="torch")
    data = path.read_bytes()
    facts = header_facts(_RangeBytes(data), size=len(data), sha256=H)
    assert facts.kind != "unknown" and [t[0] for t in facts.tensors] == names
    assert facts.method == method


def test_demo_without_force_never_replaces_an_earlier_demo(demo_root: Path) -> None:
    from rwkv_registry.core.errors import UsageError
    from rwkv_registry.store.demo import build_demo

    before = {p: p.stat().st_mtime_ns for p in demo_root.rglob("*")}
    with pytest.raises(UsageError) as e:
        build_demo(demo_root, log=lambda _m: None)
    assert "exists and is not empty" in e.value.message and "--force" in (e.value.hint or "")
    assert {p: p.stat().st_mtime_ns for p in demo_root.rglob("*")} == before


def test_demo_force_never_replaces_a_fresh_registry_of_another_name(tmp_path: Path) -> None:
    from rwkv_registry.core.errors import UsageError
    from rwkv_registry.store.demo import build_demo

    reg = tmp_path / "mine"
    assert main(["init", str(reg), "--name", "me/mine"]) == 0
    index = (reg / "index.json").read_bytes()
    with pytest.raises(UsageError, match="is not an earlier demo"):
        build_demo(reg, force=True, log=lambda _m: None)
    assert (reg / "index.json").read_bytes() == index
