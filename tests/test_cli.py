"""The command line: exit codes, messages, JSON reports, and writes that leave nothing half-done."""

from __future__ import annotations

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
    build_registry,
    miss_train,
    state_train,
    write_miss,
    write_state,
    write_tiny_base,
)

from rwkv_registry.cli.main import main
from rwkv_registry.core.errors import RefusedError
from rwkv_registry.engine.validate import validate_registry
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
    from rwkv_registry.cli.main import _plain_report

    for var in ("FORCE_COLOR", "TTY_COMPATIBLE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(sys, "stdout", __import__("io").StringIO())
    plain_ok = 0
    for text in _TRICKY:
        for target in ("/tmp/reg", "/tmp/some registry [x]", "C:\\reg"):
            report = _report([text, "second " + text], target)
            plain = _plain_report(report)
            if plain is not None:
                plain_ok += 1
                assert plain == _rich_text(report, width), (text, target)
    assert plain_ok >= 10  # most texts take the plain route
    everything = _report(_TRICKY)
    assert _plain_report(everything) is None  # control characters, emoji codes, backslashes: rich prints them
    assert _plain_report(_report(_TRICKY[:5])) is not None
    monkeypatch.setenv("FORCE_COLOR", "1")  # rich would colour the pipe
    assert _plain_report(_report(_TRICKY[:5])) is None


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
    from rwkv_registry.core.rules import rules_markdown

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
