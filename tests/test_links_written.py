"""index.json, README.md and SHA256SUMS as symbolic links to files inside the registry (validate accepts them; a
link leaving it is LAY005). Every writer refuses to replace such a link with a file, with one message, before
anything is published; a writer that does not write the file leaves the link alone."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest
from regtools import TINY_BASE, state_train, write_state

from rwkv_registry.cli.main import main
from rwkv_registry.store.signing import generate_keypair

NEW_BASE = ["--name", "rwkv7-other-20260301-ctx4096", "--sha256", "7" * 64, "--size", "1234",
            "--source", "BlinkDL/rwkv7-g1", "--arch", "n_layer=2,n_embd=128,vocab_size=65536,ffn_size=512"]  # fmt: skip


def _snapshot(root: Path) -> dict[str, bytes | str]:
    out: dict[str, bytes | str] = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        if p.is_symlink():
            out[rel] = "-> " + os.readlink(p)
        elif p.is_file() and not rel.startswith(".rwkv-registry"):
            out[rel] = p.read_bytes()
    return out


def _argv(command: str, reg: Path, tmp_path: Path) -> list[str]:
    if command == "add-base":
        return ["add-base", str(reg), *NEW_BASE]
    if command == "add":
        src = write_state(tmp_path / "in" / "s9.pth", seed=9)
        train = tmp_path / "train.json"
        train.write_text(json.dumps(state_train("v9")))
        return ["add", str(reg), str(src), "--base", TINY_BASE, "--data-version", "v9", "--train", str(train)]
    if command == "readme --reset":
        return ["readme", str(reg), "--reset"]
    return [command, str(reg)]


WRITES = {  # what each command writes
    "add": {"index.json", "README.md", "SHA256SUMS"},
    "add-base": {"index.json", "README.md", "SHA256SUMS"},
    "readme --reset": {"README.md", "SHA256SUMS"},
    "readme": {"SHA256SUMS"},  # README.md already up to date: left as it is
    "sums": {"SHA256SUMS"},
}


@pytest.mark.parametrize("name", ["index.json", "README.md", "SHA256SUMS"])
@pytest.mark.parametrize("command", sorted(WRITES))
def test_a_link_inside_the_registry_is_never_replaced_by_a_file(
    reg: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, command: str
) -> None:
    link = reg / name
    real = reg / f"real-{name}"
    link.rename(real)
    link.symlink_to(real.name)
    argv = _argv(command, reg, tmp_path)
    before = _snapshot(reg)
    capsys.readouterr()
    code = main(argv)
    err = capsys.readouterr().err
    assert link.is_symlink() and os.readlink(link) == real.name  # the user's link is kept, whatever happened
    if name in WRITES[command]:
        assert code == 1, err
        assert f"{link} is a symbolic link (to {real.name})" in " ".join(err.split())
        assert "cp --remove-destination" in err
        assert _snapshot(reg) == before  # nothing published, nothing left behind
    else:
        assert code == 0, err


# --- sign ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["index.json", "README.md", "SHA256SUMS", "SHA256SUMS.sig"])
@pytest.mark.parametrize("trust", [False, True])
def test_sign_never_replaces_a_link(
    reg: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, trust: bool
) -> None:
    """sign writes SHA256SUMS.sig; ``--trust`` with a key not yet trusted writes index.json, README.md and SHA256SUMS
    first. A link among what it writes is refused before anything is written: before, ``sign --trust`` over a
    SHA256SUMS.sig link rewrote index.json, README.md and SHA256SUMS (the key trusted), then refused the signature."""
    (tmp_path / "keys").mkdir()
    old, _, _ = generate_keypair(tmp_path / "keys" / "old.key")
    new, _, _ = generate_keypair(tmp_path / "keys" / "new.key")
    key = old
    if name == "SHA256SUMS.sig":
        assert main(["sign", str(reg), "--key", str(old), "--trust"]) == 0  # a signature to link to
        key = new if trust else old  # a key to trust (--trust) or one already trusted
    link = reg / name
    real = reg / f"real-{name}"
    link.rename(real)
    link.symlink_to(real.name)
    if name != "SHA256SUMS":  # SHA256SUMS lists the link's target (sums refuses to write through the link)
        assert main(["sums", str(reg)]) == 0
    before = _snapshot(reg)
    capsys.readouterr()
    code = main(["sign", str(reg), "--key", str(key), *(["--trust"] if trust else [])])
    err = " ".join(capsys.readouterr().err.split())
    assert link.is_symlink() and os.readlink(link) == real.name
    if name == "SHA256SUMS":  # SHA256SUMS cannot list its own target: the registry is refused as changed
        assert code == 1 and "HSH004 real-SHA256SUMS: not listed" in err, err
        assert _snapshot(reg) == before
    elif trust or name == "SHA256SUMS.sig":
        assert code == 1, err
        assert f"{link} is a symbolic link (to {real.name})" in err, err
        assert "cp --remove-destination" in err, err
        assert _snapshot(reg) == before  # nothing published, nothing left behind
    else:  # sign writes SHA256SUMS.sig only: the link is left alone
        assert code == 0, err
        after = _snapshot(reg)
        assert set(after) - set(before) == {"SHA256SUMS.sig"}
        assert {k: v for k, v in after.items() if k != "SHA256SUMS.sig"} == before


@pytest.mark.parametrize("name", ["index.json", "README.md"])
def test_sums_and_validate_agree_on_a_link(reg: Path, capsys: pytest.CaptureFixture[str], name: str) -> None:
    """A link inside the registry is read through as its target, which SHA256SUMS lists: `sums` leaves the link out,
    and validate asks no more (before, it wanted the link listed too, HSH004, so no registry with such a link could
    pass after `sums`). A SHA256SUMS that lists the link is told so (HSH005)."""
    link = reg / name
    real = reg / f"real-{name}"
    link.rename(real)
    link.symlink_to(real.name)
    assert main(["sums", str(reg)]) == 0
    sums = (reg / "SHA256SUMS").read_text()
    assert f"  real-{name}\n" in sums and f"  {name}\n" not in sums
    capsys.readouterr()
    main(["validate", str(reg)])  # exit 1 here: the layout knows no `real-*` file at the root (LAY001)
    out = capsys.readouterr().out
    assert "LAY001" in out and not any(c in out for c in ("HSH004", "HSH005", "HSH006")), out
    line = f"{hashlib.sha256(real.read_bytes()).hexdigest()}  {name}"
    lines = sorted([*sums.splitlines(), line], key=lambda ln: ln.split("  ", 1)[1])
    (reg / "SHA256SUMS").write_text("\n".join(lines) + "\n")
    capsys.readouterr()
    assert main(["validate", str(reg)]) == 1
    out = " ".join(capsys.readouterr().out.split())
    assert f"HSH005 SHA256SUMS: lists {name}, which is a symbolic link (never followed)" in out, out
