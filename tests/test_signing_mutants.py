"""Tests from a mutation audit of registry/signing.py: each failed on at least one mutant that the
signing tests let through (a field of SHA256SUMS.sig not checked, a group-readable key accepted, a
key file overwritten in a race, a public key decoded leniently...), or on a real bug."""

from __future__ import annotations

import base64
import json
import os
import stat
from pathlib import Path

import pytest
import test_signing

from rwkv_registry.cli import main
from rwkv_registry.errors import RefusedError, UsageError
from rwkv_registry.signing import SIG_NAME, generate_keypair, parse_public_key, read_signature, sign_registry
from rwkv_registry.validate import validate_registry

keys = test_signing.keys  # the same fixture: a fresh Ed25519 key pair
sig_codes = test_signing.sig_codes


def _edit_sig(reg: Path, **fields: object) -> None:
    doc = json.loads((reg / SIG_NAME).read_text())
    doc.update(fields)
    (reg / SIG_NAME).write_text(json.dumps(doc))


@pytest.mark.parametrize(
    "fields",
    [
        {"format": "rwkv-registry-signature/2"},
        {"signed_file": "index.json"},
        {"key_id": "ABCDEF0123456789"},  # upper case
        {"key_id": "abcdef012345678"},  # 15 digits
        {"key_id": 12},
        {"signature": "not base64!"},
    ],
    ids=lambda f: "-".join(f"{k}={v}" for k, v in f.items()),
)
def test_every_field_of_the_signature_file_is_checked(
    reg: Path, keys: tuple[Path, Path], fields: dict[str, object]
) -> None:
    key, pub = keys
    sign_registry(reg, key)
    _edit_sig(reg, **fields)
    assert sig_codes(validate_registry(reg, trusted_keys=[str(pub)])) == ["SIG004"]


def test_a_signature_file_over_64_kib_is_malformed(reg: Path, keys: tuple[Path, Path]) -> None:
    key, pub = keys
    sign_registry(reg, key)
    doc = json.loads((reg / SIG_NAME).read_text())
    doc["comment"] = "x" * 70_000  # the signature itself still verifies
    (reg / SIG_NAME).write_text(json.dumps(doc))
    assert sig_codes(validate_registry(reg, trusted_keys=[str(pub)])) == ["SIG004"]


def test_a_signature_without_sha256sums_covers_nothing(reg: Path, keys: tuple[Path, Path]) -> None:
    key, pub = keys
    sign_registry(reg, key)
    (reg / "SHA256SUMS").unlink()
    report = validate_registry(reg, trusted_keys=[str(pub)])
    assert "SIG002" in sig_codes(report)
    assert "covers nothing" in next(f.message for f in report.findings if f.code == "SIG002")


@pytest.mark.parametrize("mode", [0o640, 0o604, 0o660, 0o700 | 0o004])
def test_a_private_key_readable_by_group_or_others_is_refused(reg: Path, keys: tuple[Path, Path], mode: int) -> None:
    key, _ = keys
    os.chmod(key, mode)
    with pytest.raises(RefusedError, match=f"readable by other users \\(mode {mode:04o}\\)"):
        sign_registry(reg, key)
    assert not (reg / SIG_NAME).exists()
    os.chmod(key, 0o400)  # owner-only, read-only: fine
    sign_registry(reg, key)


def test_keygen_never_overwrites_a_key_created_meanwhile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The existence check and the write are two steps: O_EXCL keeps a key created in between."""
    key = tmp_path / "k.key"
    real_exists = Path.exists

    def race(self: Path, *args: object, **kwargs: object) -> bool:
        if self == key and not real_exists(self):
            key.write_bytes(b"someone else's key")  # appears right after the check
            return False
        return real_exists(self)

    monkeypatch.setattr(Path, "exists", race)
    with pytest.raises(UsageError, match="already exists"):
        generate_keypair(key)
    assert key.read_bytes() == b"someone else's key" and not Path(str(key) + ".pub").exists()


def test_keygen_writes_0600_whatever_the_umask(tmp_path: Path) -> None:
    old = os.umask(0)
    try:
        key, pub, _ = generate_keypair(tmp_path / "k.key")
    finally:
        os.umask(old)
    assert stat.S_IMODE(key.stat().st_mode) == 0o600 and stat.S_IMODE(pub.stat().st_mode) == 0o644


def test_keygen_names_an_unusable_path_instead_of_reporting_a_bug(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before the fix a file name over the system's limit gave 'unexpected OSError ... this is a bug'."""
    long = tmp_path / ("k" * 300)
    for key in (long, long / "x"):
        with pytest.raises(UsageError, match="File name too long"):
            generate_keypair(key)
        assert main(["keygen", str(key)]) == 2
        err = capsys.readouterr().err
        assert "cannot use" in err and "bug" not in err


def test_a_foreign_pub_file_lends_no_comment(reg: Path, tmp_path: Path) -> None:
    """KEY.pub beside KEY but of another key: the signature's comment is not taken from it."""
    key, _, _ = generate_keypair(tmp_path / "a.key", comment="mine")
    _, other_pub, _ = generate_keypair(tmp_path / "b.key", comment="someone else")
    Path(str(key) + ".pub").write_text(other_pub.read_text())
    sign_registry(reg, key)
    assert read_signature((reg / SIG_NAME).read_bytes()).comment == ""


@pytest.mark.parametrize(
    "text",
    [
        "ed25519 !!!notbase64!!!",
        "ed25519 " + base64.b64encode(b"\1" * 31).decode(),
        "ed25519 " + base64.b64encode(b"\1" * 33).decode(),
        base64.b64encode(b"\1" * 16).decode(),
        "ed25519 " + base64.b64encode(b"\1" * 32).decode()[:-1],  # padding cut
    ],
)
def test_public_keys_of_the_wrong_length_or_encoding_are_refused(text: str) -> None:
    with pytest.raises(UsageError):
        parse_public_key(text)
    assert len(parse_public_key("ed25519 " + base64.b64encode(b"\1" * 32).decode() + " c").raw) == 32


def test_verify_reports_the_files_as_well_when_sha256sums_changed(
    reg: Path, keys: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """SIG002 (SHA256SUMS edited) still lets verify say which files disagree with it."""
    key, pub = keys
    sign_registry(reg, key)
    sums = (reg / "SHA256SUMS").read_text().splitlines(keepends=True)
    _, name = sums[0].split("  ", 1)
    sums[0] = f"{'0' * 64}  {name}"
    (reg / "SHA256SUMS").write_text("".join(sums))
    assert main(["verify", str(reg), "--pubkey", str(pub)]) == 1
    out = capsys.readouterr().out
    assert "SIG002" in out and "HSH006" in out and name.strip() in out


def test_keygen_on_a_read_only_file_system_is_an_io_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Only an existing file is 'already exists'; any other failure to create the key says what it was."""
    import errno

    from rwkv_registry.errors import RegistryIOError

    real_open = os.open

    def read_only(path: object, flags: int, *args: object) -> int:
        if str(path).endswith("k.key") and flags & os.O_CREAT:
            raise OSError(errno.EROFS, "Read-only file system")
        return real_open(path, flags, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", read_only)
    with pytest.raises(RegistryIOError, match=r"cannot create .*Read-only file system"):
        generate_keypair(tmp_path / "k.key")
    assert not (tmp_path / "k.key").exists()
