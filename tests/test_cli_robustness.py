"""Bad input and interruptions never give a traceback, an "unexpected" error or a half-written registry.

One test (or a few) per defect of the robustness audit: read-only and wrong paths for init, demo,
sums, recover and readme; the lock refused outside a registry; `sums` refusing to bless a damaged
registry; Ctrl-C before, at and after the commit point; the waiting notice of a blocked writer;
options that were silently ignored; messages that named the wrong problem; and `smoke` checking
everything that needs no model before torch is imported.
"""

from __future__ import annotations

import argparse
import errno
import hashlib
import json
import multiprocessing
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from regtools import (
    TINY_ARCH_ARG,
    TINY_BASE,
    TINY_SHA,
    clean_error,
    edit_index,
    hold_lock,
    miss_train,
    snapshot,
    state_train,
    write_miss,
    write_state,
)

from rwkv_registry.cli.main import main
from rwkv_registry.core.errors import RegistryIOError, UsageError
from rwkv_registry.fs import atomic
from rwkv_registry.fs.atomic import (
    JOURNAL_NAME,
    LOCK_NAME,
    TMP_PREFIX,
    Transaction,
    recover,
    registry_lock,
    require_registry,
)
from rwkv_registry.model.smoke.demo import check_tiny_registry_dir
from rwkv_registry.store.ops import init_registry

ARCH = TINY_ARCH_ARG


def transient(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob(".rwkv-registry*") if p.name != LOCK_NAME)


def _sigint_as_at_a_terminal() -> None:
    """In the child: Ctrl-C's default disposition. A test run started in the background (``make test &``,
    some CI runners) inherits SIGINT ignored, and Python then keeps it ignored."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rwkv_registry.cli.main", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        preexec_fn=_sigint_as_at_a_terminal,
    )


# --- 1. init -----------------------------------------------------------------------------------------------


def test_init_under_a_read_only_parent_is_an_io_error_naming_the_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    real_mkdir = Path.mkdir

    def read_only_mkdir(self: Path, *args: Any, **kwargs: Any) -> None:
        if tmp_path / "romnt" in (self, *self.parents):
            raise OSError(errno.EROFS, "Read-only file system", str(self))
        real_mkdir(self, *args, **kwargs)

    monkeypatch.setattr(Path, "mkdir", read_only_mkdir)  # root ignores chmod: a read-only mount, simulated
    target = tmp_path / "romnt" / "sub"
    assert main(["init", str(target)]) == 2
    err = clean_error(capsys.readouterr().err)
    assert f"cannot create the directory {target}: Read-only file system" in err
    assert "hint:" in err and "read-only" in err.split("hint:")[1]
    assert not target.exists()


def test_init_on_a_file_says_it_is_a_file(reg: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = snapshot(reg)
    assert main(["init", str(reg / "index.json")]) == 2
    assert "index.json: is a file, not a directory" in clean_error(capsys.readouterr().err)
    assert main(["init", str(reg)]) == 2
    assert "is already a registry" in clean_error(capsys.readouterr().err)
    assert snapshot(reg) == before


def test_a_failed_init_leaves_no_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(*args: Any, **kwargs: Any) -> None:
        raise RegistryIOError("disk full (simulated)")

    monkeypatch.setattr("rwkv_registry.store.ops._publish", fail)
    assert main(["init", str(tmp_path / "new")]) == 2
    assert not (tmp_path / "new").exists()


# --- 2. demo -----------------------------------------------------------------------------------------------


def test_demo_on_a_file_is_a_usage_error(reg: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", str(reg / "index.json")]) == 2
    assert "index.json: is a file, not a directory" in clean_error(capsys.readouterr().err)


def test_demo_force_on_another_registry_does_not_suggest_force(reg: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = snapshot(reg)
    assert main(["demo", str(reg), "--force"]) == 2
    err = clean_error(capsys.readouterr().err)
    assert "is not an earlier demo: --force replaces only a demo registry" in err
    assert "or --force" not in err
    assert main(["demo", str(reg)]) == 2  # without --force: not a demo, so --force is not offered either
    assert "--force" not in clean_error(capsys.readouterr().err)
    assert snapshot(reg) == before


# --- 3. SHA256SUMS a directory; a rename failing after the journal -----------------------------------------


def test_sums_refuses_when_sha256sums_is_a_directory_and_leaves_nothing(reg: Path) -> None:
    (reg / "SHA256SUMS").unlink()
    (reg / "SHA256SUMS").mkdir()
    before = snapshot(reg)
    out = run_cli("sums", str(reg))
    assert out.returncode == 2
    err = clean_error(out.stderr)
    assert "SHA256SUMS: is a directory; SHA256SUMS must be a file" in err and "Remove or rename" in err
    assert transient(reg) == [] and snapshot(reg) == before
    rec = run_cli("recover", str(reg))
    assert rec.returncode == 0 and "nothing to recover" in rec.stdout


def test_a_rename_failing_after_the_journal_keeps_it_for_recover(reg: Path) -> None:
    txn = Transaction(reg)
    txn.write_bytes("LICENSE", b"MIT\n")
    (reg / "LICENSE").mkdir()  # appears between staging and commit
    with pytest.raises(RegistryIOError, match="cannot finish the write") as info, txn:
        txn.commit()
    assert "rwkv-registry recover" in info.value.hint
    assert (reg / JOURNAL_NAME).exists() and len(list(reg.glob(TMP_PREFIX + "*"))) == 1  # not rolled back
    with pytest.raises(RegistryIOError, match="cannot finish an interrupted write"):
        recover(reg)  # never claims to have completed it
    assert (reg / JOURNAL_NAME).exists()
    (reg / "LICENSE").rmdir()
    assert "completed an interrupted write (1 of 1" in recover(reg)[0]
    assert (reg / "LICENSE").read_bytes() == b"MIT\n" and transient(reg) == []


def test_staging_a_file_where_a_directory_is_refuses_before_anything(reg: Path) -> None:
    (reg / "README.md").unlink()
    (reg / "README.md").mkdir()
    before = snapshot(reg)
    with pytest.raises(RegistryIOError, match="it is a directory, where a file belongs"), Transaction(reg) as txn:
        txn.write_bytes("README.md", b"x")
    assert snapshot(reg) == before and transient(reg) == []


# --- 4. paths that are not registries ---------------------------------------------------------------------


def test_sums_on_a_directory_without_index_json_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "notes.txt").write_text("x")
    assert main(["sums", str(plain)]) == 2
    assert "is not a registry (no index.json)" in clean_error(capsys.readouterr().err)
    assert sorted(p.name for p in plain.iterdir()) == ["notes.txt"]  # no SHA256SUMS, no lock file


@pytest.mark.parametrize(
    "argv",
    [
        ["sums", "{p}", "--check"],
        ["sums", "{p}"],
        ["recover", "{p}"],
        ["readme", "{p}"],
        ["validate", "{p}"],
        ["list", "{p}"],
        ["verify", "{p}", "--pubkey", "k.pub"],
        ["push", "{p}", "--repo", "o/r"],
        ["add", "{p}", "s.pth", "--base", "b", "--data-version", "v1", "--train", "t.json"],  # before reading them
        ["add-base", "{p}", "base.pth", "--source", "a/b"],  # before hashing a 14 GB file
    ],
)
def test_a_missing_path_is_not_a_directory_and_is_not_created(
    argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    nope = tmp_path / "nope"
    assert main([a.format(p=nope) for a in argv]) == 2
    assert f"{nope}: not a directory (it does not exist)" in clean_error(capsys.readouterr().err)
    assert not nope.exists()


# --- 5. the lock is taken only in a registry -----------------------------------------------------------------


def test_add_into_a_base_directory_names_the_registry_and_creates_nothing(
    reg: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    state = write_state(tmp_path / "in" / "s9.pth", seed=9)
    train = tmp_path / "in" / "train.json"
    train.write_text(json.dumps(state_train("v9")))
    before = snapshot(reg)
    wrong = reg / TINY_BASE
    argv = ["add", str(wrong), str(state), "--base", TINY_BASE, "--data-version", "v9", "--train", str(train)]
    assert main(argv) == 2
    err = clean_error(capsys.readouterr().err)
    assert f"{wrong} is not a registry (no index.json); give the registry root" in err
    assert f"inside the registry {reg}" in err or f"give {os.path.relpath(reg)}" in err
    assert not (wrong / LOCK_NAME).exists() and snapshot(reg) == before
    assert main(["validate", str(reg)]) == 0


def test_registry_lock_refuses_a_non_registry_unless_creating(tmp_path: Path) -> None:
    d = tmp_path / "d"
    d.mkdir()
    (d / "x").write_text("x")
    with pytest.raises(UsageError, match="is not a registry"), registry_lock(d):
        pass
    assert not (d / LOCK_NAME).exists()
    with pytest.raises(UsageError, match="not a directory"), registry_lock(tmp_path / "absent"):
        pass
    assert not (tmp_path / "absent").exists()
    with registry_lock(d, creating=True):  # init: the directory becomes a registry
        pass
    interrupted = tmp_path / "killed-init"  # only the transient files of a killed init: recover cleans it
    interrupted.mkdir()
    (interrupted / f"{TMP_PREFIX}abc-index.json").write_text("{}")
    with registry_lock(interrupted, quiet=True) as messages:
        assert messages == ["removed 1 temporary file(s) of an interrupted write"]
    with pytest.raises(UsageError):
        require_registry(interrupted, strict=True)


# --- 6. sums does not bless a damaged registry -----------------------------------------------------------------


def test_sums_refuses_a_truncated_weight_file(reg: Path, capsys: pytest.CaptureFixture[str]) -> None:
    weight = reg / TINY_BASE / "state" / "v1" / "s1.pth"
    with open(weight, "r+b") as f:
        f.truncate(100)
    before = snapshot(reg)
    assert main(["sums", str(reg)]) == 1
    err = clean_error(capsys.readouterr().err)
    assert f"{weight}: 100 bytes, but index.json records" in err
    assert "run `rwkv-registry validate" in err.lower() and "`--force` to write anyway" in err
    assert snapshot(reg) == before and transient(reg) == []
    assert main(["sums", str(reg), "--force"]) == 0
    assert snapshot(reg)["SHA256SUMS"] != before["SHA256SUMS"]


def test_sums_refuses_a_changed_weight_of_the_same_size(reg: Path, capsys: pytest.CaptureFixture[str]) -> None:
    weight = reg / TINY_BASE / "state" / "v1" / "s1.pth"
    data = bytearray(weight.read_bytes())
    data[len(data) // 2] ^= 1
    weight.write_bytes(bytes(data))
    assert main(["sums", str(reg)]) == 1
    err = clean_error(capsys.readouterr().err)
    now = hashlib.sha256(bytes(data)).hexdigest()
    recorded = json.loads((reg / "index.json").read_text())["entries"][0]["file"]["sha256"]
    assert f"HSH001 {weight}: sha256 is {now}, but index.json records {recorded}" in err  # whole hashes
    assert "The file or its record in index.json changed after it was registered" in err  # either may be wrong


def test_sums_refuses_an_unparsable_index(reg: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (reg / "index.json").write_text("{\n")
    before = snapshot(reg)
    assert main(["sums", str(reg)]) == 1
    err = clean_error(capsys.readouterr().err)
    assert "SHA256SUMS not written" in err and "index.json: line 2" in err and "--force" in err
    assert snapshot(reg) == before


def test_sums_still_writes_after_an_ordinary_edit(reg: Path) -> None:
    (reg / "README.md").write_text((reg / "README.md").read_text() + "\nmore\n")
    assert main(["sums", str(reg)]) == 0
    assert main(["sums", str(reg), "--check"]) == 0


# --- 7. Ctrl-C -------------------------------------------------------------------------------------------------


@pytest.fixture
def add_inputs(tmp_path: Path) -> list[str]:
    state = write_state(tmp_path / "in" / "s9.pth", seed=9)
    train = tmp_path / "in" / "train.json"
    train.write_text(json.dumps(state_train("v9")))
    return [str(state), "--base", TINY_BASE, "--data-version", "v9", "--train", str(train)]


def _interrupt_at(point: str, *argv: str) -> subprocess.CompletedProcess[str]:
    return run_cli(*argv, env={atomic.FAULT_ENV: point, atomic.FAULT_SIGNAL_ENV: "INT"})


@pytest.mark.parametrize("point", ["mkdir-0", "partial-0", "written-2", "staged"])
def test_ctrl_c_before_the_commit_point_rolls_back(point: str, reg: Path, add_inputs: list[str]) -> None:
    before = snapshot(reg)
    out = _interrupt_at(point, "add", str(reg), *add_inputs)
    assert out.returncode == 130
    assert clean_error(out.stderr) == "interrupted: nothing was written"
    assert transient(reg) == [] and snapshot(reg) == before


@pytest.mark.parametrize("point", ["journal-tmp", "journal", "rename-0", "renamed", "committed"])
def test_ctrl_c_at_or_after_the_commit_point_completes_and_says_so(
    point: str, reg: Path, add_inputs: list[str]
) -> None:
    out = _interrupt_at(point, "add", str(reg), *add_inputs)
    assert out.returncode == 130
    assert clean_error(out.stderr) == "interrupted after the write was committed: the entry is registered"
    assert transient(reg) == []
    index = json.loads((reg / "index.json").read_text())
    assert "s9" in {e["id"] for e in index["entries"]}
    assert main(["validate", str(reg)]) == 0


@pytest.mark.parametrize(("point", "committed"), [("mkdir-1", False), ("partial-2", False), ("rename-1", True)])
def test_ctrl_c_during_add_base(point: str, committed: bool, reg: Path) -> None:
    before = snapshot(reg)
    argv = ["add-base", str(reg), "--name", "rwkv7-tiny-20270101-ctx4096", "--sha256", "b" * 64, "--size", "5"]
    out = _interrupt_at(point, *argv, "--arch", ARCH, "--source", "BlinkDL/rwkv7-g1")
    assert out.returncode == 130 and transient(reg) == []
    if committed:
        assert "the base is registered" in clean_error(out.stderr)
        assert main(["validate", str(reg)]) == 0
    else:
        assert clean_error(out.stderr) == "interrupted: nothing was written"
        assert snapshot(reg) == before


@pytest.mark.usefixtures("sigint_as_at_a_terminal")
def test_interrupts_are_held_back_only_inside_the_block() -> None:
    with pytest.raises(KeyboardInterrupt), atomic.interrupts_deferred():
        os.kill(os.getpid(), signal.SIGINT)
        done = True  # reached: the interrupt waits for the end of the block
    assert done
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


# --- 8. a blocked writer says that it waits -------------------------------------------------------------------


def test_a_blocked_writer_says_that_it_waits(
    reg: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(atomic, "_stderr_is_terminal", lambda: True)
    ctx = multiprocessing.get_context("spawn")
    ready = ctx.Event()
    holder = ctx.Process(target=hold_lock, args=(str(reg), ready, 2.0))
    holder.start()
    try:
        assert ready.wait(30)
        t0 = time.monotonic()
        with registry_lock(reg, timeout=20):
            waited = time.monotonic() - t0
    finally:
        holder.join(30)
    err = capsys.readouterr().err
    assert "waiting for the lock held by another rwkv-registry command" in err and "(up to 20 s)" in err
    assert waited >= atomic.WAIT_NOTICE_TTY_S


def test_an_unblocked_writer_says_nothing(reg: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with registry_lock(reg):
        pass
    assert capsys.readouterr().err == ""


# --- 9. options that were silently ignored or made up ------------------------------------------------------------


def test_validate_full_on_a_local_path_is_a_usage_error(reg: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(reg), "--full"]) == 2
    assert "--full is only for a Hub target" in clean_error(capsys.readouterr().err)
    assert main(["validate", "hf://a/b", "--since", "HEAD"]) == 2
    assert "--since is for a local git registry" in clean_error(capsys.readouterr().err)


def test_add_base_requires_source(reg: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = snapshot(reg)
    argv = ["add-base", str(reg), "--name", "rwkv7-tiny-20270101-ctx4096", "--sha256", "b" * 64, "--size", "5"]
    assert main([*argv, "--arch", ARCH]) == 2
    assert "add-base needs --source OWNER/REPO" in clean_error(capsys.readouterr().err)
    assert snapshot(reg) == before
    assert main(["add-base", str(reg), "--from-hub", "a/b/c.pth", "--source", "a/b"]) == 2
    assert "--source is not used with --from-hub" in clean_error(capsys.readouterr().err)
    assert main([*argv, "--arch", ARCH, "--source", "BlinkDL/rwkv7-g1"]) == 0


# --- 10. messages that named the wrong problem ---------------------------------------------------------------------


def test_smoke_base_file_that_is_a_directory(reg: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["smoke", str(reg), "s1", "--base-file", str(tmp_path)]) == 2
    assert f"--base-file {tmp_path}: is a directory, not a base file" in clean_error(capsys.readouterr().err)


def test_signing_with_a_public_key_says_so(reg: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    key = tmp_path / "keys" / "k"
    key.parent.mkdir()
    assert main(["keygen", str(key)]) == 0
    capsys.readouterr()
    assert main(["sign", str(reg), "--key", f"{key}.pub"]) == 2
    err = clean_error(capsys.readouterr().err)
    assert "this is a public key; signing needs the private key" in err and f"({key};" in err
    assert "chmod" not in err
    assert not (reg / "SHA256SUMS.sig").exists()


def test_compare_names_a_missing_file_once_with_a_hint(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    nope = tmp_path / "nope.json"
    assert main(["compare", str(nope), str(nope)]) == 2
    err = clean_error(capsys.readouterr().err)
    assert err.count(str(nope)) == 1 and "cannot be read" in err and "hint:" in err


@pytest.mark.parametrize("command", [["list", "{p}"], ["show", "x", "--path", "{p}"]])
def test_list_and_show_name_the_path_that_is_not_a_registry(
    command: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main([a.format(p=empty) for a in command]) == 2
    assert f"{empty} is not a registry (no index.json)" in clean_error(capsys.readouterr().err)


def test_arch_errors_have_a_hint(reg: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["add-base", str(reg), "--name", "x", "--sha256", "b" * 64, "--size", "5", "--source", "a/b"]
    assert main([*argv, "--arch", "n_layer=2,n_embd=100,vocab_size=65536"]) == 2
    err = clean_error(capsys.readouterr().err)
    assert "n_embd 100" in err and "hint:" in err and "multiple of 64" in err


def test_readme_hint_warns_that_reset_drops_the_text(reg: Path, capsys: pytest.CaptureFixture[str]) -> None:
    readme = reg / "README.md"
    readme.write_text("My own text, no markers.\n")
    assert main(["readme", str(reg)]) == 1
    err = clean_error(capsys.readouterr().err)
    assert "--reset" in err and "DROPS the publisher's own text" in err and "back README.md up first" in err
    assert readme.read_text() == "My own text, no markers.\n"


# --- 11. smoke: checks before the model ------------------------------------------------------------------------------


def _smoke_in_subprocess(*argv: str) -> tuple[int, bool, str]:
    """(exit code, whether torch was imported, stderr) of ``main(["smoke", *argv])`` in a fresh process."""
    code = (
        "import sys; from rwkv_registry.cli.main import main; rc = main(sys.argv[1:]); "
        "print(json.dumps([rc, 'torch' in sys.modules]))"
    )
    out = subprocess.run([sys.executable, "-c", "import json; " + code, "smoke", *argv], capture_output=True, text=True)
    rc, torch_loaded = json.loads(out.stdout.strip().splitlines()[-1])
    return rc, torch_loaded, out.stderr


def test_smoke_refuses_bad_input_without_importing_torch(reg: Path, tmp_path: Path) -> None:
    base = tmp_path / "base.pth"
    base.write_bytes(b"not a base")
    rc, torch_loaded, err = _smoke_in_subprocess(str(reg), "no-such-entry", "--base-file", str(base))
    assert (rc, torch_loaded) == (2, False) and "no entry 'no-such-entry'" in clean_error(err)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "x"}\n')
    rc, torch_loaded, err = _smoke_in_subprocess(str(reg), "s1", "--base-file", str(base), "--cases", str(bad))
    assert (rc, torch_loaded) == (2, False) and "bad.jsonl:1" in clean_error(err)


def test_smoke_record_on_a_read_only_registry_fails_before_evaluating(
    reg: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import rwkv_registry.cli.main as cli

    base = tmp_path / "base.pth"
    base.write_bytes(b"x")
    real_open = os.open
    inside = str(reg.resolve())

    def read_only_open(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if os.path.abspath(path).startswith(inside) and flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT):
            raise OSError(errno.EROFS, "Read-only file system", str(path))
        return real_open(path, flags, *args, **kwargs)

    real_import = cli.importlib.import_module

    def no_evaluation(name: str, *args: Any) -> Any:
        assert "smoke" not in name, "the evaluation was started"
        return real_import(name, *args)

    monkeypatch.setattr(os, "open", read_only_open)  # root ignores chmod: a read-only mount, simulated
    monkeypatch.setattr(cli.importlib, "import_module", no_evaluation)
    before = snapshot(reg)
    assert main(["smoke", str(reg), "s1", "--base-file", str(base), "--cases", str(tmp_path / "x"), "--record"]) == 2
    err = clean_error(capsys.readouterr().err)
    assert "--record:" in err and "Read-only file system" in err and "nothing was evaluated" in err
    assert "without --record" in err
    assert snapshot(reg) == before


def test_smoke_on_a_toy_base_uses_the_tiny_cases(
    reg: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`smoke` of an entry whose base is a toy model, without --cases, evaluates the built-in tiny case set and says
    so on stderr; --cases given is used as given, without a note."""
    import types

    ran: list[argparse.Namespace] = []
    evaluation = types.ModuleType("rwkv_registry.model.smoke.cli")  # what `smoke` runs once its checks pass
    evaluation.cmd_smoke = lambda args: ran.append(args) or 0  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, evaluation.__name__, evaluation)
    base = tmp_path / "base.pth"
    base.write_bytes(b"x")
    assert main(["smoke", str(reg), "s1", "--base-file", str(base)]) == 0
    cases = ran[-1].cases
    assert cases is not None and Path(cases).name == "tiny_cases.jsonl" and Path(cases).is_file()
    err = " ".join(capsys.readouterr().err.split())
    assert "is a toy model (width 128): using the built-in tiny case set tiny_cases.jsonl" in err
    mine = tmp_path / "mine.jsonl"  # --cases given: used as given
    mine.write_text(Path(cases).read_text())
    assert main(["smoke", str(reg), "s1", "--base-file", str(base), "--cases", str(mine)]) == 0
    assert len(ran) == 2 and ran[-1].cases == str(mine) and capsys.readouterr().err == ""


def test_toy_base_detection() -> None:
    from rwkv_registry.index import smoke_cases as cases

    assert cases.is_toy_base({"architecture": {"n_embd": 128}})
    assert not cases.is_toy_base({"architecture": {"n_embd": 768}})  # RWKV-7 0.1B, the smallest release
    assert not cases.is_toy_base({"architecture": {"n_embd": 4096}}) and not cases.is_toy_base({})
    assert cases.default_cases({"architecture": {"n_embd": 4096}}) == cases.DEFAULT_CASES


def test_add_base_metadata_source_is_recorded(reg: Path) -> None:
    argv = ["add-base", str(reg), "--name", "rwkv7-tiny-20270101-ctx4096", "--sha256", "b" * 64, "--size", "5"]
    assert main([*argv, "--arch", ARCH, "--source", "someone/somewhere"]) == 0
    bases = json.loads((reg / "index.json").read_text())["bases"]
    assert bases[-1]["source"]["repo"] == "someone/somewhere"


def test_add_recommended_says_which_entry_lost_the_mark(reg: Path, add_inputs: list[str]) -> None:
    out = run_cli("add", str(reg), *add_inputs, "--recommended")
    assert out.returncode == 0, out.stderr
    assert "recommended instead of s1" in out.stdout


def test_add_entry_reports_displaced_ids_only_for_marked_entries(reg: Path, tmp_path: Path) -> None:
    from rwkv_registry.store.ops import add_entry, load_index

    train = state_train("v9")
    displaced: list[str] = []
    add_entry(
        reg,
        write_state(tmp_path / "a" / "s7.pth", seed=7),
        base=TINY_BASE,
        data_version="v9",
        train=train,
        displaced=displaced,
    )
    assert displaced == []  # not --recommended: nobody loses the mark
    add_entry(
        reg,
        write_state(tmp_path / "b" / "s8.pth", seed=8),
        base=TINY_BASE,
        data_version="v9",
        train=train,
        recommended=True,
        displaced=displaced,
    )
    marked = [e["id"] for e in load_index(reg)["entries"] if e["recommended"] and e["method"] == "state"]
    assert displaced == ["s1"] and len(marked) == 1 and marked != ["s1"]  # s7 was never marked: not listed


def test_sums_refuses_an_index_that_breaks_its_schema(reg: Path, capsys: pytest.CaptureFixture[str]) -> None:
    def damage(index: dict[str, Any]) -> None:
        del index["entries"][1]["file"]
        index["entries"][0]["recommended"] = "yes"

    edit_index(reg, damage)
    before = snapshot(reg)
    assert main(["sums", str(reg)]) == 1
    err = clean_error(capsys.readouterr().err)
    assert "SHA256SUMS not written: SCH002" in err and "index.json does not follow its schema" in err
    assert "entries[1]" in err and "Fix index.json" in err and "--force" in err
    assert snapshot(reg) == before
    assert main(["sums", str(reg), "--force"]) == 0


# --- write commands: what validate refuses, add refuses first -------------------------------------------------


def _train(tmp_path: Path, data: dict[str, Any]) -> str:
    p = tmp_path / f"train-{len(list(tmp_path.glob('train-*')))}.json"
    p.write_text(json.dumps(data))
    return str(p)


def _add_state(reg: Path, tmp_path: Path, name: str, *extra: str, train: dict[str, Any] | None = None) -> list[str]:
    st = write_state(tmp_path / "in" / name, seed=21)
    return ["add", str(reg), str(st), "--base", TINY_BASE, "--data-version", "v9",
            "--train", _train(tmp_path, train or state_train("v9")), *extra]  # fmt: skip


def test_add_refuses_a_trainer_older_than_1_8_1(reg: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = snapshot(reg)
    old = state_train("v9", trainer={"name": "rwkv_state_tune", "version": "1.8.0", "commit": None})
    assert main(_add_state(reg, tmp_path, "s9.pth", train=old)) == 1
    err = clean_error(capsys.readouterr().err)
    assert "TRN002" in err and f"{TINY_BASE}/state/v9/train.json" in err and "older than 1.8.1" in err
    assert "hint: Builds before v1.8.1" in err
    assert snapshot(reg) == before


def test_add_refuses_a_train_json_that_finished_before_it_started(
    reg: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = snapshot(reg)
    swapped = state_train("v9", started="2026-10-12T10:00:00Z", finished="2026-10-12T08:00:00Z")
    assert main(_add_state(reg, tmp_path, "s9.pth", train=swapped)) == 1
    err = clean_error(capsys.readouterr().err)
    assert (
        f"TRN012 {TINY_BASE}/state/v9/train.json: finished 2026-10-12T08:00:00Z is before started 2026-10-12T10:00:00Z"
        in err
    )
    assert "hint: `started` and `finished`" in err
    assert snapshot(reg) == before


@pytest.mark.parametrize("name", ["s3.pt", "S3.PTH", "s3"])
def test_add_refuses_a_state_name_outside_the_layout(
    name: str, reg: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = snapshot(reg)
    assert main(_add_state(reg, tmp_path, name)) == 2
    err = clean_error(capsys.readouterr().err)
    assert "LAY004" in err and "does not end in .pth or .safetensors" in err and ".pth (or .safetensors)" in err
    assert snapshot(reg) == before


def test_add_refuses_a_miss_adapter_with_profile_g1k(
    reg: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = snapshot(reg)
    adapter = tmp_path / "m" / "adapter-final.pth"
    write_miss(adapter, seed=7)
    argv = ["add", str(reg), str(adapter), "--base", TINY_BASE, "--data-version", "v7", "--group", "r4-a",
            "--train", _train(tmp_path, miss_train("v7")), "--profile", "g1k"]  # fmt: skip
    assert main(argv) == 2
    err = clean_error(capsys.readouterr().err)
    assert "--profile g1k" in err and "PRF001" in err and "g1k-think" in err
    assert snapshot(reg) == before


def test_add_refuses_a_sampling_preset_presets_go_does_not_define(
    reg: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Any preset of RWKV-Agent's presets.go is accepted (test_add_accepts_every_preset_of_presets_go); another name
    is refused (exit 2, nothing written) with the nearest preset suggested."""
    before = snapshot(reg)
    assert main(_add_state(reg, tmp_path, "s9.pth", "--sampling", "g1k-agnet")) == 2
    err = clean_error(capsys.readouterr().err)
    assert "--sampling 'g1k-agnet' is not a sampling preset of RWKV-Agent" in err
    assert "hint: Did you mean 'g1k-agent'? RWKV-Agent's presets.go defines greedy, g1k-agent, g1k-agent-fast" in err
    assert snapshot(reg) == before
    assert main(_add_state(reg, tmp_path, "s8.pth", "--sampling", "hot")) == 2
    err = clean_error(capsys.readouterr().err)
    assert "--sampling 'hot'" in err and "Did you mean" not in err
    assert snapshot(reg) == before
    with pytest.raises(SystemExit):
        main(["add", "--help"])
    helped = " ".join(capsys.readouterr().out.split())
    assert "presets.go: greedy, g1k-agent, g1k-agent-fast, g1k-stable, backend" in helped
    from rwkv_registry.store.ops import add_entry

    with pytest.raises(UsageError, match=r"--sampling 'G1K-agent' .* give one of greedy, g1k-agent") as e:
        add_entry(reg, write_state(tmp_path / "s7.pth"), base=TINY_BASE, data_version="v9", train=state_train("v9"),
                  sampling="G1K-agent")  # fmt: skip
    assert e.value.hint.startswith("Did you mean 'g1k-agent'? ")
    assert snapshot(reg) == before


@pytest.mark.parametrize("preset", ["greedy", "g1k-agent", "g1k-agent-fast", "g1k-stable", "backend"])
def test_add_accepts_every_preset_of_presets_go(
    preset: str, reg: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from rwkv_registry.engine.validate import validate_registry

    assert main(_add_state(reg, tmp_path, "s9.pth", "--sampling", preset)) == 0
    index = json.loads((reg / "index.json").read_text())
    assert [e["sampling"] for e in index["entries"] if e["id"] == "s9"] == [preset]
    assert not [f for f in validate_registry(reg, use_cache=False).findings if f.code.startswith(("PRF", "SCH"))]


def test_add_refuses_adapter_id_on_a_state(reg: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = snapshot(reg)
    assert main(_add_state(reg, tmp_path, "s9.pth", "--adapter-id", "x")) == 2
    assert "--adapter-id is only for MiSS adapters" in clean_error(capsys.readouterr().err)
    assert snapshot(reg) == before


def test_add_a_file_already_in_the_layout_says_to_move_it_out(
    reg: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    placed = write_state(reg / TINY_BASE / "state" / "v1" / "s3.pth", seed=5)
    argv = ["add", str(reg), str(placed), "--base", TINY_BASE, "--data-version", "v1",
            "--train", _train(tmp_path, state_train("v1"))]  # fmt: skip
    assert main(argv) == 1
    err = clean_error(capsys.readouterr().err)
    assert f"{TINY_BASE}/state/v1/s3.pth is already in the layout, but no entry" in err
    assert "Move the file out of the registry and add it from there" in err and "new name" not in err


def test_add_with_path_and_file_swapped_says_so(reg: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = _add_state(reg, tmp_path, "s9.pth")
    argv[1], argv[2] = argv[2], argv[1]
    assert main(argv) == 2
    err = clean_error(capsys.readouterr().err)
    assert (
        "PATH and FILE look swapped" in err
        and f"{reg} is a registry, and" in err
        and f"rwkv-registry add {reg} " in err
    )


def test_add_to_a_base_kept_active_explains_why_it_is_refused(reg: Path, tmp_path: Path) -> None:
    from rwkv_registry.core.errors import RefusedError
    from rwkv_registry.store.ops import add_base, add_entry

    newer = TINY_BASE.replace("20260101", "20260301")
    add_base(reg, name=newer, source="a/b", sha256="6" * 64, size=1, arch=_tiny_arch(), freeze_previous=False)
    with pytest.raises(RefusedError, match=r"GIT003 \(add-base --keep-previous-active kept its status active"):
        add_entry(reg, write_state(tmp_path / "s8.pth"), base=TINY_BASE, data_version="v9", train=state_train("v9"))


def _tiny_arch() -> dict[str, Any]:
    from regtools import TINY_ARCH

    return dict(TINY_ARCH)


def test_writes_warn_that_the_signature_went_stale(
    reg: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from rwkv_registry.store.signing import generate_keypair

    key = tmp_path / "keys" / "k"
    key.parent.mkdir()
    generate_keypair(key)
    assert main(["sign", str(reg), "--key", str(key)]) == 0
    sig = (reg / "SHA256SUMS.sig").read_bytes()
    capsys.readouterr()
    assert main(["sums", str(reg)]) == 0  # SHA256SUMS unchanged: no warning
    assert "warning" not in capsys.readouterr().err
    assert main(_add_state(reg, tmp_path, "s9.pth")) == 0
    err = clean_error(capsys.readouterr().err)
    assert f"warning: SHA256SUMS changed, so {reg / 'SHA256SUMS.sig'} no longer matches it" in err
    assert f"rwkv-registry sign {reg} --key KEY" in err
    assert (reg / "SHA256SUMS.sig").read_bytes() == sig  # kept, not deleted
    (reg / "README.md").write_text((reg / "README.md").read_text() + "\nmore\n")
    assert main(["sums", str(reg)]) == 0
    assert "SHA256SUMS.sig no longer matches it" in clean_error(capsys.readouterr().err)
    argv = ["add-base", str(reg), "--name", "rwkv7-other-20270101-ctx1", "--sha256", "b" * 64, "--arch", ARCH,
            "--source", "a/b"]  # fmt: skip
    assert main(argv) == 0
    assert "SHA256SUMS.sig no longer matches it" in clean_error(capsys.readouterr().err)


def test_init_inside_a_registry_is_a_usage_error(reg: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = snapshot(reg)
    for inner in (reg / "sub", reg / TINY_BASE / "state" / "deep"):
        assert main(["init", str(inner)]) == 2
        err = clean_error(capsys.readouterr().err)
        assert f"{inner}: lies inside the registry at {reg}" in err and "outside every registry" in err
    assert snapshot(reg) == before


@pytest.mark.parametrize(
    ("arch", "says"),
    [
        ("n_layer=2,n_embd=128,vocab_size=10,head_size=0", "head_size=0 is out of range"),
        ("n_layer=2,n_embd=-128,vocab_size=10", "n_embd=-128 is out of range"),
        ("n_layer=0,n_embd=128,vocab_size=10", "n_layer=0 is out of range"),
        ("n_layer=2,n_embd=128,vocab_size=10,head_size=2", "RWKV-7 heads are 64 wide"),
        ("n_layer=2,n_embd=128,vocab_size=10,n_head=4", "n_head 4 x head_size 64 != n_embd 128"),
        ("n_layer=2,n_embd=128,vocab_size=99999999", "vocab_size=99999999 is out of range"),
    ],
)
def test_add_base_arch_values_no_rwkv7_base_can_have(
    arch: str, says: str, reg: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = snapshot(reg)
    argv = ["add-base", str(reg), "--name", "x", "--sha256", "b" * 64, "--source", "a/b", "--arch", arch]
    assert main(argv) == 2
    err = clean_error(capsys.readouterr().err)
    assert says in err and "hint:" in err
    assert snapshot(reg) == before


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        (["--size", "-5"], "--size -5: give the base file's size in bytes"),
        (["--name", "rwkv7-t-20270101-ctx1.pth"], "Give --name rwkv7-t-20270101-ctx1."),
        (["--name", "rwkv7-t-20270101-ctx1.safetensors"], "Give --name rwkv7-t-20270101-ctx1."),
    ],
)
def test_add_base_bad_flag_values_are_usage_errors(
    extra: list[str], says: str, reg: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = snapshot(reg)
    argv = ["add-base", str(reg), "--name", "rwkv7-t-20270101-ctx1", "--sha256", "b" * 64, "--source", "a/b",
            "--arch", ARCH, *extra]  # fmt: skip
    assert main(argv) == 2
    assert says in clean_error(capsys.readouterr().err)
    assert snapshot(reg) == before


def test_add_base_refuses_a_base_file_registered_twice(reg: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = snapshot(reg)
    argv = ["add-base", str(reg), "--name", "rwkv7-tiny-20270101-ctx4096", "--sha256", TINY_SHA, "--size", "5"]
    assert main([*argv, "--arch", ARCH, "--source", "a/b"]) == 1
    assert f"base {TINY_BASE!r} already records sha256 {TINY_SHA}" in clean_error(capsys.readouterr().err)
    assert snapshot(reg) == before


def test_add_names_the_train_file_its_schema_and_a_bom_fix(
    reg: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    state = write_state(tmp_path / "in" / "s9.pth", seed=9)
    bad, bom = tmp_path / "in" / "bad.json", tmp_path / "in" / "bom.json"
    t = state_train("v9")
    del t["trainer"]
    bad.write_text(json.dumps(t))
    bom.write_bytes(b"\xef\xbb\xbf" + json.dumps(state_train("v9")).encode())
    argv = ["add", str(reg), str(state), "--base", TINY_BASE, "--data-version", "v9", "--train"]
    assert main([*argv, str(bad)]) == 1
    err = clean_error(capsys.readouterr().err)
    assert f"--train {bad} does not follow schemas/train.schema.json (SCH003)" in err and "trainer" in err
    assert main([*argv, str(bom)]) == 2
    assert "without a byte order mark" in clean_error(capsys.readouterr().err)


def test_add_base_error_is_the_first_line_of_stderr(reg: Path, tmp_path: Path) -> None:
    trunc = tmp_path / "trunc.pth"
    trunc.write_bytes(write_state(tmp_path / "s.pth").read_bytes()[:100])
    out = run_cli("add-base", str(reg), str(trunc), "--source", "a/b")
    assert out.returncode == 1 and out.stderr.startswith("error: "), out.stderr


def test_add_of_a_base_model_points_to_add_base(reg: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from regtools import write_tiny_base

    base = write_tiny_base(tmp_path / "rwkv7-tiny-20270101-ctx4096.pth")
    train = tmp_path / "train.json"
    train.write_text(json.dumps(state_train("v9")))
    before = snapshot(reg)
    argv = ["add", str(reg), str(base), "--base", TINY_BASE, "--data-version", "v9", "--train", str(train)]
    assert main(argv) == 2
    err = clean_error(capsys.readouterr().err)
    assert "a whole RWKV-7 model (emb.weight, head.weight)" in err and f"rwkv-registry add-base {reg} {base}" in err
    assert snapshot(reg) == before


def test_add_beside_a_train_json_that_is_not_an_object_is_refused(
    reg: Path, add_inputs: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    train = reg / TINY_BASE / "state" / "v9" / "train.json"  # add_inputs' data version
    train.parent.mkdir()
    train.write_text("[]")
    before = snapshot(reg)
    assert main(["add", str(reg), *add_inputs]) == 1  # this crashed (AttributeError) in the train.json merge
    assert "the existing train.json is not a JSON object (SCH003)" in clean_error(capsys.readouterr().err)
    assert snapshot(reg) == before


def test_readme_says_what_it_did(reg: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`readme --reset` drops the publisher's text: it says so, rather than "generated sections updated"."""
    readme = reg / "README.md"
    readme.write_text("My own words.\n\n" + readme.read_text())
    assert main(["readme", str(reg)]) == 0
    assert capsys.readouterr().out.strip() == "README.md generated sections were already up to date"
    edit_index(reg, lambda ix: ix["entries"][0].update(description="a new description"))
    assert main(["readme", str(reg)]) == 0
    assert capsys.readouterr().out.strip() == "README.md generated sections updated"
    assert "My own words." in readme.read_text()
    assert main(["readme", str(reg), "--reset"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert out == "README.md rebuilt from the skeleton: the publisher's own text was dropped"
    assert "My own words." not in readme.read_text()
    readme.unlink()
    assert main(["readme", str(reg)]) == 0
    assert capsys.readouterr().out.strip() == "README.md written from the skeleton, with its generated sections"


def test_readme_reads_readme_once_and_keeps_an_edit_saved_meanwhile(
    reg: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`readme` judges "unchanged" on the bytes it rendered from, not on a second read: README.md saved in an editor
    while it runs is neither reported as "updated" nor overwritten with the text read before the edit."""
    from rwkv_registry.store import ops

    readme = reg / "README.md"
    edited = readme.read_bytes() + b"\nSaved by hand while readme ran.\n"
    real = ops.apply_bodies

    def render_then_edit(text: str, bodies: tuple[str, str]) -> str | None:
        out = real(text, bodies)
        readme.write_bytes(edited)  # after README.md was read, before the command decides and writes
        return out

    monkeypatch.setattr(ops, "apply_bodies", render_then_edit)
    assert main(["readme", str(reg)]) == 0
    assert capsys.readouterr().out.strip() == "README.md generated sections were already up to date"
    assert readme.read_bytes() == edited
    assert not [f for f in ops.check_sums(reg) if str(f.severity) == "error"]  # SHA256SUMS lists the edited bytes


# --- a FIFO where a file should be: refused at once, never a hang ------------------------------------------------


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
@pytest.mark.parametrize("where", ["index.json", f"{TINY_BASE}/state/v1/s1.pth", "README.md"])
def test_a_fifo_in_the_registry_is_refused_without_waiting(reg: Path, tmp_path: Path, where: str) -> None:
    """Opening a FIFO blocks until another process writes to it: readme, sums, add and add-base hung for ever
    on a FIFO in place of index.json or of a weight file. Each now refuses at once, naming the file."""
    (reg / where).unlink()
    os.mkfifo(reg / where)
    write_state(tmp_path / "new.pth")
    (tmp_path / "train.json").write_text(json.dumps(state_train("v7")))
    train = str(tmp_path / "train.json")
    commands = [
        ["readme", str(reg)],
        ["sums", str(reg)],
        ["add", str(reg), str(tmp_path / "new.pth"), "--base", TINY_BASE, "--data-version", "v7", "--train", train],
        ["add-base", str(reg), "--name", "rwkv7-x-20270101", "--sha256", "ab" * 32, "--arch", ARCH, "--source", "a/b"],
    ]
    for args in commands:
        try:
            p = subprocess.run(
                [sys.executable, "-m", "rwkv_registry.cli.main", *args], capture_output=True, text=True, timeout=60
            )
        except subprocess.TimeoutExpired:
            pytest.fail(f"{args[0]} waits on the FIFO {where}")
        assert p.returncode in (1, 2), (args[0], p.stdout, p.stderr)
        err = clean_error(p.stderr)
        assert where in err and "not a regular file" in err, (args[0], err)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_given_as_a_file_is_named_as_one(reg: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fifo = tmp_path / "fifo.pth"
    os.mkfifo(fifo)
    (tmp_path / "train.json").write_text(json.dumps(state_train("v7")))
    train = str(tmp_path / "train.json")
    add = ["add", str(reg), str(fifo), "--base", TINY_BASE, "--data-version", "v7", "--train", train]
    for args in (add, ["add-base", str(reg), str(fifo), "--source", "a/b"]):
        assert main(args) == 2
        assert f"{fifo}: not a regular file" in clean_error(capsys.readouterr().err)
    assert main([*add[:2], str(tmp_path / "absent.pth"), *add[3:]]) == 2
    assert f"{tmp_path / 'absent.pth'}: no such file" in clean_error(capsys.readouterr().err)


def test_a_path_starting_with_a_dash_says_how_to_give_it(
    reg: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import shutil

    shutil.copytree(reg, tmp_path / "-reg")
    monkeypatch.chdir(tmp_path)
    for command in ("validate", "list", "readme"):
        with pytest.raises(SystemExit) as e:
            main([command, "-reg"])
        assert e.value.code == 2
        assert "-reg is a path here: write ./-reg, or put -- before it" in capsys.readouterr().err
    assert main(["list", "--", "-reg"]) == 0
    with pytest.raises(SystemExit):
        main(["validate", "-absent"])  # no such path: the ordinary message
    assert "is a path here" not in capsys.readouterr().err


# --- index.json a symbolic link leaving the registry (LAY005): never followed ------------------------------------


def test_an_index_json_linked_outside_the_registry_is_refused(
    reg: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """validate reports LAY005 for it; list and show did show the other file's registry, and add-base, sums and
    readme read it and replaced the link by a file. Each now refuses (exit 1, as validate fails), naming LAY005,
    and nothing is written: neither the registry nor the file the link points to changes."""
    from rwkv_registry.catalog.entries import Catalog

    outside = tmp_path / "elsewhere" / "index.json"
    outside.parent.mkdir()
    outside.write_bytes((reg / "index.json").read_bytes())
    (reg / "index.json").unlink()
    (reg / "index.json").symlink_to(outside)
    before, target = snapshot(reg), outside.read_bytes()
    write_state(tmp_path / "new.pth")
    (tmp_path / "train.json").write_text(json.dumps(state_train("v7")))
    train = str(tmp_path / "train.json")
    commands = [
        ["list", str(reg)],
        ["show", "--path", str(reg)],
        ["readme", str(reg)],
        ["sums", str(reg)],
        ["add", str(reg), str(tmp_path / "new.pth"), "--base", TINY_BASE, "--data-version", "v7", "--train", train],
        ["add-base", str(reg), "--name", "rwkv7-x-20270101", "--sha256", "ab" * 32, "--arch", ARCH, "--source", "a/b"],
    ]
    for args in commands:
        assert main(args) == 1, args[0]
        err = clean_error(capsys.readouterr().err)
        assert f"index.json is a symbolic link to {outside}, outside the registry (LAY005)" in err, (args[0], err)
        assert "hint: Replace the link by the file itself" in err
    assert snapshot(reg) == before and outside.read_bytes() == target and (reg / "index.json").is_symlink()
    cat = Catalog(reg)  # the TUI's data layer: the same refusal, not the other file's entries
    assert cat.entries == [] and cat.error is not None and "(LAY005)" in cat.error
    assert main(["validate", str(reg)]) == 1
    assert "LAY005 index.json" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        (["init", ""], "PATH"),
        (["demo", "", "--force"], "PATH"),
        (["validate", ""], "PATH"),
        (["show", "--path", ""], "--path"),
        (["add", ".", "", "--base", "b", "--data-version", "v1", "--train", "t.json"], "FILE"),
        (["keygen", ""], "KEY"),
    ],
)
def test_an_empty_path_is_refused_not_read_as_the_current_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], argv: list[str], flag: str
) -> None:
    """`rwkv-registry init "$DIR"` with DIR unset: pathlib reads "" as ".", so init wrote a registry into the current
    directory (and demo --force would replace an earlier demo there). An empty path is a usage error instead."""
    from rwkv_registry.cli.main import main

    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    assert f"{flag}: an empty path" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "argv",
    [
        ["add-base", "REG", "NOPE.pth", "--source", "a/b"],
        ["add", "REG", "NOPE.pth", "--base", "b", "--data-version", "v1", "--train", "NOPE.json"],
        ["validate", "REG", "--pubkey", "NOPE.pub"],
        ["sign", "REG", "--key", "NOPE"],
    ],
)
def test_a_missing_input_file_is_named_with_the_fix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    """Each of these said only 'no such file' / 'cannot read it', without the hint every message gives."""
    from rwkv_registry.cli.main import main
    from rwkv_registry.store.ops import init_registry

    init_registry(tmp_path / "reg")
    argv = [a.replace("REG", str(tmp_path / "reg")).replace("NOPE", str(tmp_path / "nope")) for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert str(tmp_path / "nope") in err.replace("\n", "") and "hint: Give" in err


def _earlier_demo(work: Path) -> Path:
    reg = work / "registry"
    init_registry(reg, name="demo/tiny-smoke")
    return reg


def _refused(work: Path, why: str) -> None:
    with pytest.raises(UsageError, match="is not an earlier tiny demo registry") as info:
        check_tiny_registry_dir(work)
    assert why in info.value.message


def test_a_tiny_registry_with_an_entry_the_demo_never_adds_is_not_replaced(tmp_path: Path) -> None:
    """D01: the tiny registry's name alone let a registry holding the user's own entries be deleted."""
    reg = _earlier_demo(tmp_path)
    index = json.loads((reg / "index.json").read_text())
    index["entries"].append({"id": "my-own-state"})
    (reg / "index.json").write_text(json.dumps(index))
    _refused(tmp_path, "its index.json is not the tiny demo's")


def test_a_tiny_registry_under_git_is_not_replaced(tmp_path: Path) -> None:
    """D02: a tiny demo registry the user made a git repository of (its history) was deleted with it."""
    reg = _earlier_demo(tmp_path)
    (reg / ".git").mkdir()
    _refused(tmp_path, "it is a git repository")


def test_a_link_in_place_of_the_tiny_registry_is_not_followed(tmp_path: Path) -> None:
    """D06: a symbolic link to an earlier tiny demo registry elsewhere passed the check (whose rmtree then fails
    on the link); D08: a dangling link there was taken for no registry at all."""
    elsewhere = _earlier_demo(tmp_path / "elsewhere")
    work = tmp_path / "work"
    work.mkdir()
    (work / "registry").symlink_to(elsewhere)
    _refused(work, "it is not a directory")
    (work / "registry").unlink()
    (work / "registry").symlink_to(tmp_path / "nowhere")
    _refused(work, "it is not a directory")


def test_leftovers_of_an_interrupted_write_do_not_stop_the_replacement(tmp_path: Path) -> None:
    """D04: the temporary file of a write killed in the earlier demo (which the demo wrote, and recover would
    remove) was taken for a file of the user's, and the demo refused to run again."""
    reg = _earlier_demo(tmp_path)
    (reg / f"{TMP_PREFIX}0123456789ab-index.json").write_text("{")
    check_tiny_registry_dir(tmp_path)


def test_a_link_to_a_directory_inside_the_tiny_registry_is_a_file_it_did_not_write(tmp_path: Path) -> None:
    """D11: a symbolic link to a directory (the user's data linked in) was skipped as a directory, and deleted."""
    reg = _earlier_demo(tmp_path)
    (tmp_path / "data").mkdir()
    (reg / "my-data").symlink_to(tmp_path / "data")
    _refused(tmp_path, "it holds files the demo did not write (my-data)")


def test_a_sha256sums_that_is_not_the_demos_stops_the_replacement(tmp_path: Path) -> None:
    """D09: a SHA256SUMS with lines that are no sha256sum lines was read for what it did parse."""
    reg = _earlier_demo(tmp_path)
    with (reg / "SHA256SUMS").open("a") as f:
        f.write("my notes, not a checksum\n")
    _refused(tmp_path, "is not a sha256sum line")


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        (["smoke", "REG", "e", "--base-file", ""], "--base-file"),
        (["smoke", "REG", "e", "--base-file", "b.pth", "--cases", ""], "--cases"),
        (["add", "REG", "s.pth", "--base", "b", "--data-version", "v1", "--train", ""], "--train"),
        (["sign", "REG", "--key", ""], "--key"),
        (["compare", "", "b.json"], "A.json"),
        (["compare", "a.json", ""], "B.json"),
    ],
)
def test_every_path_argument_that_is_empty_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], flag: str
) -> None:
    """E01/E02/E03/E05/E08: the empty-path check without B.json, --cases, --base-file or --train, or naming
    sign's --key 'KEY': each such argument read as the current directory, or named another one."""
    init_registry(tmp_path / "reg")
    argv = [str(tmp_path / "reg") if a == "REG" else a for a in argv]
    before = sorted(p.name for p in (tmp_path / "reg").iterdir())
    assert main(argv) == 2
    assert f"{flag}: an empty path" in capsys.readouterr().err
    assert sorted(p.name for p in (tmp_path / "reg").iterdir()) == before


def test_an_explicit_id_that_is_taken_is_refused_without_the_default_ids_story(
    reg: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """I07: the message of a taken ``--id`` explained where a default id comes from (a State's file stem), though
    the user gave the id; it names the entry holding it and a free id, as for a default id."""
    from regtools import TINY_BASE, state_train, write_state

    src = write_state(tmp_path / "in" / "other.pth", seed=5)
    train = tmp_path / "t.json"
    train.write_text(json.dumps(state_train("v7")))
    argv = ["add", str(reg), str(src), "--base", TINY_BASE, "--data-version", "v7", "--train", str(train)]
    assert main([*argv, "--id", "s1"]) == 1
    err = " ".join(capsys.readouterr().err.split())
    assert f"entry id 's1' exists (the entry at {TINY_BASE}/state/v1/s1.pth)" in err
    assert "default id" not in err and "--id s1-2" in err


def test_the_housekeeping_files_init_wrote_are_the_demos_until_edited(tmp_path: Path) -> None:
    """.gitignore and .pre-commit-config.yaml are not in SHA256SUMS: as init wrote them they are the demo's own
    (replaced), edited they are the user's (refused)."""
    reg = _earlier_demo(tmp_path)
    check_tiny_registry_dir(tmp_path)
    (reg / ".pre-commit-config.yaml").write_text("# my hooks\n")
    _refused(tmp_path, "it holds files the demo did not write (.pre-commit-config.yaml)")


def test_a_folder_nested_deeper_than_pythons_recursion_limit_is_walked(
    reg: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The writers' walk of the tree (SHA256SUMS, the listing a write recovers from) recursed once per level: a
    stray folder nested 1,100 deep (a build tree copied in by mistake) made ``sums`` end in a RecursionError. The
    one walk is iterative: ``sums`` lists the file at the bottom, and ``validate`` names the stray path."""
    levels = [os.path.join(reg, "stray")]
    for _ in range(1_100):  # one level at a time: pathlib's mkdir(parents=True) recurses too
        levels.append(os.path.join(levels[-1], "d"))
    for level in levels:
        os.mkdir(level)
    Path(levels[-1], "notes.txt").write_text("at the bottom\n")
    bottom = "stray" + "/d" * 1_100 + "/notes.txt"
    try:
        assert main(["sums", str(reg)]) == 0, capsys.readouterr().err
        assert f"  {bottom}\n" in (reg / "SHA256SUMS").read_text()
        capsys.readouterr()
        assert main(["validate", str(reg)]) == 1
        out = capsys.readouterr().out
        assert "Traceback" not in out and " stray" in out, out[-2000:]
    finally:  # bottom up, here: pytest's clean-up of old temporary folders (shutil.rmtree) recurses per level
        os.unlink(os.path.join(levels[-1], "notes.txt"))
        for level in reversed(levels):
            os.rmdir(level)
