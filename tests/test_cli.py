"""The command line: exit codes, messages, JSON reports, and writes that leave nothing half-done."""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from regtools import (
    TINY_ARCH,
    TINY_BASE,
    TINY_SHA,
    build_registry,
    miss_train,
    state_train,
    write_miss,
    write_state,
    write_tiny_base,
)

from rwkv_registry.cli import main as cli
from rwkv_registry.cli.main import build_parser, main
from rwkv_registry.core.errors import RefusedError
from rwkv_registry.engine.validate import validate_registry
from rwkv_registry.formats.jsoncpp import dumps
from rwkv_registry.fs import atomic
from rwkv_registry.index.lineage import family_of, superseded
from rwkv_registry.index.sums import format_sums, parse_sums
from rwkv_registry.schemas import schema_errors


def snapshot(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rwkv_registry.cli.main", *args], capture_output=True, text=True)


def test_validate_exit_codes_and_json(registry: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(registry), "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert schema_errors("report", report) == []
    assert report["ok"] is True and report["counts"]["error"] == 0
    (registry / "stray.txt").write_text("x")
    assert main(["validate", str(registry), "--format", "json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert schema_errors("report", report) == []
    assert {f["code"] for f in report["findings"]} >= {"LAY001", "HSH004"}


def test_text_report_names_file_rule_and_fix(registry: Path) -> None:
    (registry / "stray.txt").write_text("x")
    out = run_cli("validate", str(registry))
    assert out.returncode == 1
    assert "LAY001" in out.stdout and "stray.txt" in out.stdout and "fix:" in out.stdout
    assert "Traceback" not in out.stdout + out.stderr


_TRICKY = [
    "plain ASCII",
    "$.entries[3].score: 1.5 is not of type 'integer'",
    "markup-like [bold]x[/] and [/] and [link=x]y[/link] and [red",
    "unicode: ü, ellipsis …, dash – and wide 漢字 and 🙂, combining e\u0301",
    "a long line " + "x" * 300,
    "trailing spaces   ",
    "emoji code :thumbs_up: and :not_an_emoji: and 12:30:45",
    "a backslash \\[bold]x and one at the end \\",
    "control \x1b[31m red \x07 bell\ttab\rreturn\x85",
    "",
]


def _report(texts: list[str], target: str = "/tmp/some registry [x]") -> Any:
    from rwkv_registry.core.rules import Finding, Severity
    from rwkv_registry.engine.validate import Report

    findings = [Finding(f"R{i:03d}", list(Severity)[i % 3], t or "p", t, t[::-1]) for i, t in enumerate(texts)]
    return Report(target, findings, {"files": 12, "bytes_hashed": 3_456_789, "cache_hits": 7, "elapsed_s": 0.1234})


def _rich_text(report: Any, width: int) -> str:
    import io

    from rich.console import Console

    from rwkv_registry.cli.main import print_report

    buf = io.StringIO()
    print_report(report, Console(file=buf, highlight=False, soft_wrap=True, width=width))
    return buf.getvalue()


@pytest.mark.parametrize("width", [20, 80, 200])
def test_plain_text_report_is_what_rich_prints(width: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Piped, `validate` prints its text report without rich (not imported: 25-50 ms of a warm run); the bytes
    are rich's, line by line, for every text rich would print unchanged; the rest still goes through rich."""
    from rwkv_registry.cli.main import plain_report

    for var in ("FORCE_COLOR", "TTY_COMPATIBLE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(sys, "stdout", __import__("io").StringIO())
    plain_ok = 0
    for text in _TRICKY:
        for target in ("/tmp/reg", "/tmp/some registry [x]", "C:\\reg"):
            report = _report([text, "second " + text], target)
            plain = plain_report(report)
            if plain is not None:
                plain_ok += 1
                assert plain == _rich_text(report, width), (text, target)
    assert plain_ok >= 10  # most texts take the plain route
    everything = _report(_TRICKY)
    assert plain_report(everything) is None  # control characters, emoji codes, backslashes: rich prints them
    assert plain_report(_report(_TRICKY[:5])) is not None
    monkeypatch.setenv("FORCE_COLOR", "1")  # rich would colour the pipe
    assert plain_report(_report(_TRICKY[:5])) is None


@pytest.mark.parametrize("width", [20, 80, 200])
def test_a_writes_line_is_what_rich_prints(width: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """`add`, `add-base`, `sums` and `readme` print their line without rich when rich would print it unchanged
    (piped, no colour asked): the same bytes as rich's of the line with its control characters escaped
    (textsafe.printable: nothing of a registry reaches the terminal raw); markup, emoji codes, backslashes and
    colour still go through rich."""
    import io

    from rich.console import Console

    from rwkv_registry.cli import main as cli
    from rwkv_registry.core.textsafe import printable

    for var in ("FORCE_COLOR", "TTY_COMPATIBLE"):
        monkeypatch.delenv(var, raising=False)
    through_rich: list[str] = []
    real = cli._console
    monkeypatch.setattr(cli, "_console", lambda stderr=False: (through_rich.append("x"), real(stderr))[1])
    plain_ok = 0
    extra = ["added base rwkv7-g1a-0.1b (12 layers × 768, vocab 65536, sha256 0123456789ab…)", "id [bold]x[/bold]"]
    for text in [*_TRICKY, *extra]:
        want = io.StringIO()
        try:
            Console(file=want, highlight=False, soft_wrap=True, width=width).print(printable(text))
        except Exception:  # markup rich refuses ("[/]" closing nothing): it goes to rich, as before
            continue
        got = io.StringIO()
        monkeypatch.setattr(sys, "stdout", got)
        through_rich.clear()
        cli._say(text)
        monkeypatch.setattr(sys, "stdout", sys.__stdout__)
        assert got.getvalue() == want.getvalue(), text
        plain_ok += not through_rich
    assert plain_ok >= 5
    monkeypatch.setenv("FORCE_COLOR", "1")  # rich would colour the pipe
    through_rich.clear()
    monkeypatch.setattr(sys, "stdout", io.StringIO())
    cli._say("plain ASCII")
    assert through_rich


def test_piped_text_report_imports_no_rich(registry: Path) -> None:
    (registry / "stray.txt").write_text("x")
    probe = (
        "import sys\nfrom rwkv_registry.cli.main import main\ncode = main(['validate', sys.argv[1]])\n"
        "sys.stderr.write('RICH=%s' % any(m.startswith('rich') for m in sys.modules))\nraise SystemExit(code)\n"
    )
    env = {k: v for k, v in __import__("os").environ.items() if k not in ("FORCE_COLOR", "TTY_COMPATIBLE")}
    out = subprocess.run([sys.executable, "-c", probe, str(registry)], capture_output=True, text=True, env=env)
    assert out.returncode == 1 and "RICH=False" in out.stderr
    assert "LAY001 stray.txt: " in out.stdout and "\n        fix: " in out.stdout
    assert out.stdout.splitlines()[-1].startswith(f"FAILED {registry}: ")


def test_usage_errors_exit_2_without_traceback(tmp_path: Path) -> None:
    out = run_cli("validate", str(tmp_path / "nowhere"))
    assert out.returncode == 2 and "not a directory" in out.stderr and "Traceback" not in out.stderr
    out = run_cli("add-base", str(tmp_path), "--name", "x")
    assert out.returncode == 2 and "Traceback" not in out.stderr
    out = run_cli("frobnicate")
    assert out.returncode == 2


def test_init_refuses_non_empty_directory(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    assert main(["init", str(tmp_path)]) == 2


def test_add_base_reads_architecture_from_headers(tmp_path: Path) -> None:
    root = tmp_path / "reg"
    assert main(["init", str(root)]) == 0
    base = write_tiny_base(tmp_path / "rwkv7-tiny-20261001-ctx4096.pth", n_layer=3, n_embd=192, vocab=777, ffn=768)
    assert main(["add-base", str(root), str(base), "--source", "BlinkDL/rwkv7-g1"]) == 0
    index = json.loads((root / "index.json").read_text())
    b = index["bases"][0]
    assert b["name"] == "rwkv7-tiny-20261001-ctx4096" and b["family"] == "rwkv7-tiny"
    assert b["sha256"] == hashlib.sha256(base.read_bytes()).hexdigest() and b["size"] == base.stat().st_size
    assert b["architecture"] == {
        "n_layer": 3,
        "n_embd": 192,
        "head_size": 64,
        "n_head": 3,
        "vocab_size": 777,
        "ffn_size": 768,
        "lora": {"decay": 32, "aaa": 32, "mv": 32, "gate": 32},
        "dtype": "bfloat16",
    }
    assert (root / b["name"] / "state").is_dir() and (root / b["name"] / "miss").is_dir()
    assert b["name"] in (root / "README.md").read_text()
    assert main(["validate", str(root)]) == 0
    before = snapshot(root)
    assert main(["add-base", str(root), str(base), "--source", "BlinkDL/rwkv7-g1"]) == 1  # name exists
    assert snapshot(root) == before


def test_add_base_by_metadata_and_freeze_previous(tmp_path: Path) -> None:
    root = tmp_path / "reg"
    main(["init", str(root)])
    arch = "n_layer=2,n_embd=128,vocab_size=65536,ffn_size=512"
    assert (
        main(
            [
                "add-base",
                str(root),
                "--name",
                "rwkv7-t-20260101-ctx1",
                "--sha256",
                "a" * 64,
                "--size",
                "5",
                "--arch",
                arch,
                "--source",
                "BlinkDL/rwkv7-g1",
            ]
        )
        == 0
    )
    assert (
        main(
            [
                "add-base",
                str(root),
                "--name",
                "rwkv7-t-20260201-ctx1",
                "--sha256",
                "b" * 64,
                "--size",
                "5",
                "--arch",
                arch,
                "--source",
                "BlinkDL/rwkv7-g1",
                "--freeze-previous",
            ]
        )
        == 0
    )
    status = {b["name"]: b["status"] for b in json.loads((root / "index.json").read_text())["bases"]}
    assert status == {"rwkv7-t-20260101-ctx1": "frozen", "rwkv7-t-20260201-ctx1": "active"}
    bad_sha = ["add-base", str(root), "--name", "x", "--sha256", "zz", "--size", "5", "--arch", arch, "--source", "a/b"]
    assert main(bad_sha) == 2


def test_add_base_by_metadata_without_a_size(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The user's README gives a base's sha256 but not its size: --size may be left out (null)."""
    root = tmp_path / "reg"
    main(["init", str(root)])
    arch = "n_layer=32,n_embd=4096,vocab_size=65536"
    name = "rwkv7-g1k-7.2b-20260930-ctx25600"
    argv = ["add-base", str(root), "--name", name, "--sha256", "c" * 64, "--arch", arch, "--source", "BlinkDL/rwkv7-g1"]
    assert main(argv) == 0
    [base] = json.loads((root / "index.json").read_text())["bases"]
    assert base["size"] is None and base["sha256"] == "c" * 64
    assert validate_registry(root, use_cache=False).ok
    capsys.readouterr()
    assert main(["add-base", str(root), "--name", "rwkv7-x", "--sha256", "c" * 64, "--source", "a/b"]) == 2
    assert "--name, --sha256 and --arch (and --size when known)" in capsys.readouterr().err


def test_add_state_and_miss_through_cli(tmp_path: Path) -> None:
    root = tmp_path / "reg"
    from rwkv_registry.store.ops import add_base, init_registry

    init_registry(root)
    add_base(root, name=TINY_BASE, source="BlinkDL/rwkv7-g1", sha256="c" * 64, size=1, arch=dict(TINY_ARCH))
    st = write_state(tmp_path / "v1s10.pth")
    (tmp_path / "st.json").write_text(json.dumps(state_train()))
    assert (
        main(
            [
                "add",
                str(root),
                str(st),
                "--base",
                TINY_BASE,
                "--data-version",
                "v1",
                "--train",
                str(tmp_path / "st.json"),
                "--recommended",
            ]
        )
        == 0
    )
    mf = tmp_path / "g" / "adapter-final.pth"
    manifest = write_miss(mf, base_sha="c" * 64)
    (tmp_path / "mt.json").write_text(json.dumps(miss_train()))
    assert (
        main(
            [
                "add",
                str(root),
                str(mf),
                "--base",
                TINY_BASE,
                "--data-version",
                "v2",
                "--train",
                str(tmp_path / "mt.json"),
                "--group",
                "r4-a",
            ]
        )
        == 0
    )
    index = json.loads((root / "index.json").read_text())
    state, miss = index["entries"]
    assert state["id"] == "v1s10" and state["profile"] == "g1k" and state["recommended"] is True
    assert miss["id"] == "v2-r4-a" and miss["profile"] == "g1k-think"
    assert miss["miss"]["content_version"] == manifest["content_version"]
    assert (root / miss["path"]).read_bytes() == mf.read_bytes()
    train = json.loads((root / TINY_BASE / "miss" / "v2" / "train.json").read_text())
    assert [r["group"] for r in train["runs"]] == ["r4-a"]  # only the run of the group added
    assert main(["validate", str(root)]) == 0


def test_add_refuses_incompatible_file_and_changes_nothing(registry: Path, tmp_path: Path) -> None:
    before = snapshot(registry)
    wrong_base = tmp_path / "x" / "adapter-final.pth"
    write_miss(wrong_base, base_sha="d" * 64)  # trained on another base file
    out = run_cli(
        "add",
        str(registry),
        str(wrong_base),
        "--base",
        TINY_BASE,
        "--data-version",
        "v2",
        "--train",
        str(_train_file(tmp_path, miss_train(groups=("r4-c",)))),
        "--group",
        "r4-c",
    )
    assert out.returncode == 1, out.stderr
    assert "MIS013" in out.stderr and "base_fingerprint" in out.stderr
    big = tmp_path / "big.pth"
    write_state(big, dict(TINY_ARCH, n_head=4))  # shapes of another model size
    out = run_cli(
        "add",
        str(registry),
        str(big),
        "--base",
        TINY_BASE,
        "--data-version",
        "v1",
        "--train",
        str(_train_file(tmp_path, state_train())),
    )
    assert out.returncode == 1 and "STA002" in out.stderr
    assert snapshot(registry) == before


def test_add_refuses_nan_state(registry: Path, tmp_path: Path) -> None:
    before = snapshot(registry)
    bad = write_state(tmp_path / "nan.pth", poison=True)
    assert (
        main(
            [
                "add",
                str(registry),
                str(bad),
                "--base",
                TINY_BASE,
                "--data-version",
                "v1",
                "--train",
                str(_train_file(tmp_path, state_train())),
            ]
        )
        == 1
    )
    assert snapshot(registry) == before


def test_add_names_the_stray_tensor_of_a_state_file(
    registry: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A State with one tensor more is registered as the server takes it (it skips what is no time state), with
    the STA006 warning naming the tensor (before: STA001, refused; before that, IDX003, 'neither a State nor a
    MiSS adapter')."""
    import torch

    sd = {f"blocks.{i}.att.time_state": torch.zeros(2, 64, 64, dtype=torch.bfloat16) for i in range(2)}
    sd["emb.weight"] = torch.zeros(4, 128, dtype=torch.bfloat16)
    torch.save(sd, tmp_path / "extra.pth")
    args = ["add", str(registry), str(tmp_path / "extra.pth"), "--base", TINY_BASE, "--data-version", "v1"]
    assert main([*args, "--train", str(_train_file(tmp_path, state_train()))]) == 0
    err = capsys.readouterr().err
    assert f"STA006 {TINY_BASE}/state/v1/extra.pth: 1 tensor(s) besides the time states: ['emb.weight']" in err


def _train_file(tmp: Path, data: dict) -> Path:
    p = tmp / f"train-{hashlib.sha256(json.dumps(data).encode()).hexdigest()[:8]}.json"
    p.write_text(json.dumps(data))
    return p


def test_sums_write_and_check(registry: Path) -> None:
    assert main(["sums", str(registry), "--check"]) == 0
    (registry / "README.md").write_text((registry / "README.md").read_text() + "\nmore\n")
    assert main(["sums", str(registry), "--check"]) == 1
    assert main(["sums", str(registry)]) == 0
    assert main(["sums", str(registry), "--check"]) == 0


def test_rules_doc_is_generated_from_the_code() -> None:
    from rwkv_registry.checks.catalogue import rules_markdown

    doc = Path(__file__).resolve().parents[1] / "docs" / "rules.md"
    assert doc.read_text() == rules_markdown(), "run: rwkv-registry rules --markdown > docs/rules.md"


def test_build_registry_helper_is_valid(tmp_path: Path) -> None:
    root = build_registry(tmp_path / "r", tmp_path, with_miss=False)
    assert main(["validate", str(root)]) == 0


def test_add_base_reads_only_headers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The architecture comes from the pickle and zip directory: a tiny part of the file is read."""
    import rwkv_registry.formats.ckpt as ckpt
    from rwkv_registry.store.ops import read_base_architecture

    base = write_tiny_base(tmp_path / "b.pth", n_layer=4, n_embd=256, vocab=65536, ffn=1024)
    sources: list = []
    real = ckpt.FileSource

    class Counting(real):  # type: ignore[misc, valid-type]
        def __init__(self, path):
            super().__init__(path)
            sources.append(self)

    monkeypatch.setattr(ckpt, "FileSource", Counting)
    arch = read_base_architecture(base)
    assert arch["n_layer"] == 4 and arch["vocab_size"] == 65536
    read = sum(s.bytes_read for s in sources)
    size = base.stat().st_size
    assert size > 60_000_000 and 0 < read < 200_000, (read, size)


def test_retraining_on_a_new_base_gets_free_default_ids(registry: Path, tmp_path: Path) -> None:
    """Seed 000's workflow: the same data retrained on a newer base. The default ids (a State's file stem,
    `<data version>-<group>` for MiSS) are taken by the old base's entries, so the new ones get the base's date."""
    from rwkv_registry.store.ops import add_base, add_entry

    new = "rwkv7-tiny-20261201-ctx4096"
    add_base(registry, name=new, source="BlinkDL/rwkv7-g1", sha256="d" * 64, size=1234, arch=dict(TINY_ARCH))
    add_entry(
        registry, write_state(tmp_path / "again" / "s1.pth", seed=7), base=new, data_version="v1", train=state_train()
    )
    f = tmp_path / "again" / "r4-a" / "adapter-final.pth"
    write_miss(f, seed=5, base_sha="d" * 64)
    add_entry(registry, f, base=new, data_version="v2", train=miss_train(), group="r4-a")
    entries = {e["id"]: e for e in json.loads((registry / "index.json").read_text())["entries"]}
    assert entries["s1"]["base"] == TINY_BASE and entries["s1-20261201"]["base"] == new
    assert entries["v2-r4-a"]["base"] == TINY_BASE and entries["v2-r4-a-20261201"]["base"] == new
    assert entries["v2-r4-a-20261201"]["adapter_id"] == "v2-r4-a-20261201"
    assert validate_registry(registry, use_cache=False).ok
    # a default id taken under the same base stays a refused duplicate: no second renaming
    again = write_state(tmp_path / "again3" / "s1.pth", seed=9)
    with pytest.raises(RefusedError, match="entry id 's1-20261201' exists"):
        add_entry(registry, again, base=new, data_version="v3", train=state_train("v3"))


def test_init_says_the_commands_that_come_next(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`init` ends with what to do next, in order: add-base, add, git init (with LFS), pre-commit install, commit;
    the rwkv-registry lines are ones the parser accepts, naming the new registry."""
    import shlex

    from rwkv_registry.cli.main import build_parser

    root = tmp_path / "my reg"
    assert main(["init", str(root)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(f"created registry in {root}: ")
    assert out[1] == "next steps:"
    commands = [line.split("   # ")[0].strip() for line in out[2:]]
    q = shlex.quote(str(root))
    assert [c.split()[0] for c in commands] == ["rwkv-registry", "rwkv-registry", "git", "(cd", "git"]
    assert [c.split()[1] for c in commands[:2]] == ["add-base", "add"]
    assert commands[2] == f"git -C {q} init && git -C {q} lfs install"
    assert commands[3] == f"(cd {q} && pre-commit install)"
    assert "commit -m" in commands[4]
    for c in commands[:2]:
        args = build_parser().parse_args(shlex.split(c)[1:])
        assert args.path == str(root)
    # in a git work tree already: no `git init`
    (tmp_path / "repo" / ".git").mkdir(parents=True)
    assert main(["init", str(tmp_path / "repo" / "reg")]) == 0
    out = capsys.readouterr().out
    assert "pre-commit install" in out and " init &&" not in out


def _add_argv(root: Path, src: Path, train: Path, *extra: str, version: str = "v1") -> list[str]:
    return ["add", str(root), str(src), "--base", TINY_BASE, "--data-version", version, "--train", str(train), *extra]


def test_the_same_add_again_says_it_is_registered_and_writes_nothing(
    reg: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A rerun of an add (before the commit, say) is no error: the entry is named, exit 0, and the registry is
    byte for byte what it was; State and MiSS alike."""
    src = write_state(tmp_path / "in" / "s9.pth", seed=9)
    train = tmp_path / "in" / "train.json"
    train.write_text(json.dumps(state_train("v9")))
    argv = _add_argv(reg, src, train, "--description", "nine", "--recommended", version="v9")
    assert main(argv) == 0
    capsys.readouterr()
    before = snapshot(reg)
    assert main(argv) == 0
    out, err = capsys.readouterr()
    sha = hashlib.sha256(src.read_bytes()).hexdigest()
    assert out == (
        f"already registered: state entry s9 at {TINY_BASE}/state/v9/s9.pth (sha256 {sha[:12]}…), with the same "
        "values; nothing was written\n"
    )
    assert err == ""
    assert snapshot(reg) == before
    # a MiSS adapter of the template, added again as it was
    mf = tmp_path / "src" / "r4-b" / "adapter-final.pth"
    write_miss(mf, seed=1)
    mt = tmp_path / "mt.json"
    mt.write_text(json.dumps(miss_train()))
    assert main(_add_argv(reg, mf, mt, "--group", "r4-b", version="v2")) == 0
    assert capsys.readouterr().out.startswith(f"already registered: miss entry v2-r4-b at {TINY_BASE}/miss/v2/r4-b/")
    assert snapshot(reg) == before


def test_an_add_that_differs_from_the_registered_entry_names_each_difference(
    reg: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = snapshot(reg)
    train = tmp_path / "train.json"
    train.write_text(json.dumps(state_train()))
    other = write_state(tmp_path / "in" / "s1.pth", seed=5)  # another file of the registered name
    assert main(_add_argv(reg, other, train, "--recommended")) == 1
    err = capsys.readouterr().err
    old = json.loads((reg / "index.json").read_text())["entries"][0]["file"]["sha256"]
    new = hashlib.sha256(other.read_bytes()).hexdigest()
    assert err.startswith(
        f"error: {TINY_BASE}/state/v1/s1.pth is already registered as entry 's1', and this add differs from it: "
        f"file sha256: {old[:12]}… → {new[:12]}…\n"
    )
    assert (
        "hint: A registered entry is never replaced (published weights never change): new weights get a new name" in err
    )
    assert snapshot(reg) == before
    # the registered file itself, with another description, profile and training record
    same = tmp_path / "same" / "s1.pth"
    same.parent.mkdir()
    same.write_bytes((reg / TINY_BASE / "state" / "v1" / "s1.pth").read_bytes())
    train.write_text(json.dumps(state_train(hyperparameters={"lr": 0.02, "lr_final": 0.001, "ctx": 4096})))
    assert main(_add_argv(reg, same, train, "--recommended", "--description", "new words")) == 1
    line = capsys.readouterr().err.splitlines()[0]
    assert line.endswith(
        'differs from it: description: "" → "new words"; train.json hyperparameters: '
        '{"ctx":4096,"lr":0.01,"lr_final":0.001} → {"ctx":4096,"lr":0.02,"lr_final":0.001}'
    ), line
    assert snapshot(reg) == before


def test_add_base_says_which_base_it_froze_and_refusals_name_the_active_one(
    reg: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    newer = TINY_BASE.replace("20260101", "20260301")
    arch = "n_layer=2,n_embd=128,vocab_size=65536,ffn_size=512"
    argv = ["add-base", str(reg), "--name", newer, "--sha256", "b" * 64, "--size", "5", "--arch", arch]
    assert main([*argv, "--source", "BlinkDL/rwkv7-g1"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(f"added base {newer} ")
    assert out[1] == (
        f"base {TINY_BASE} is now frozen; new weights go under {newer} (old base directories are never touched)"
    )
    # an add under the frozen base names the base to use
    st = write_state(tmp_path / "in" / "s9.pth", seed=9)
    train = tmp_path / "train.json"
    train.write_text(json.dumps(state_train("v9")))
    add = ["add", str(reg), str(st), "--base", TINY_BASE, "--data-version", "v9", "--train", str(train)]
    assert main(add) == 1
    err = capsys.readouterr().err
    assert (
        f"error: base '{TINY_BASE}' is frozen: it gets no new files; new weights go under '{newer}', the active " in err
    )
    assert f"hint: Retrain on {newer} and add the weights there (--base {newer})." in err
    # a base kept active says nothing of freezing
    other = TINY_BASE.replace("20260101", "20260401")
    argv = ["add-base", str(reg), "--name", other, "--sha256", "c" * 64, "--size", "5", "--arch", arch]
    assert main([*argv, "--source", "BlinkDL/rwkv7-g1", "--keep-previous-active"]) == 0
    assert "now frozen" not in capsys.readouterr().out


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
