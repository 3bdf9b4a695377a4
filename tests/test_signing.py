"""Ed25519 signatures of SHA256SUMS: keygen, sign, verify, and the SIG rules of validate.

Failing cases of SIG001 (missing), SIG002 (SHA256SUMS changed), SIG003 (untrusted key) and SIG004
(malformed or truncated signature) live here; tests/test_validate_rules.py checks they exist.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import stat
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from rwkv_registry.cli.main import main
from rwkv_registry.core.errors import RefusedError, UsageError
from rwkv_registry.core.rules import RULES
from rwkv_registry.engine.validate import validate_registry
from rwkv_registry.store.signing import SIG_NAME, generate_keypair, sign_registry


@pytest.fixture
def keys(tmp_path: Path) -> tuple[Path, Path]:
    d = tmp_path / "keys"
    d.mkdir()
    key, pub, _ = generate_keypair(d / "signing.key", comment="release key")
    return key, pub


def sig_codes(report: object) -> list[str]:
    return sorted(f.code for f in report.findings if f.code.startswith("SIG"))  # type: ignore[attr-defined]


def test_keygen_writes_private_key_0600_and_public_line(keys: tuple[Path, Path]) -> None:
    key, pub = keys
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    assert key.read_bytes().startswith(b"-----BEGIN PRIVATE KEY-----")
    kind, b64, comment = pub.read_text().strip().split(" ", 2)
    assert kind == "ed25519" and len(base64.b64decode(b64)) == 32 and comment == "release key"
    private = serialization.load_pem_private_key(key.read_bytes(), password=None)
    raw = private.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    assert raw == base64.b64decode(b64)


def test_keygen_never_overwrites_and_never_writes_into_a_registry(keys: tuple[Path, Path], reg: Path) -> None:
    key, _ = keys
    before = key.read_bytes()
    with pytest.raises(UsageError, match="already exists"):
        generate_keypair(key)
    assert key.read_bytes() == before
    with pytest.raises(RefusedError, match="inside the registry"):
        generate_keypair(reg / "my.key")
    with pytest.raises(RefusedError, match="inside the registry"):
        generate_keypair(reg / "rwkv7-tiny-20260101-ctx4096" / "state" / "k.key")
    assert not (reg / "my.key").exists()


def test_signed_registry_validates_and_signature_is_plain_ed25519(reg: Path, keys: tuple[Path, Path]) -> None:
    key, pub = keys
    sign_registry(reg, key)
    report = validate_registry(reg, trusted_keys=[str(pub)])
    assert report.ok and sig_codes(report) == []
    # documented format: base64 Ed25519 signature of SHA256SUMS's exact bytes, checked here without our code
    doc = json.loads((reg / SIG_NAME).read_text())
    raw_pub = base64.b64decode(pub.read_text().split()[1])
    signature = base64.b64decode(doc["signature"])
    Ed25519PublicKey.from_public_bytes(raw_pub).verify(signature, (reg / "SHA256SUMS").read_bytes())
    assert doc["key_id"] == hashlib.sha256(raw_pub).hexdigest()[:16]


def test_sig001_missing_signature_when_keys_are_trusted(reg: Path, keys: tuple[Path, Path]) -> None:
    _, pub = keys
    report = validate_registry(reg, trusted_keys=[str(pub)])
    assert sig_codes(report) == ["SIG001"] and not report.ok
    assert validate_registry(reg).ok  # no trusted key, no signature: nothing to check


def test_sig002_changed_byte_in_sha256sums(reg: Path, keys: tuple[Path, Path]) -> None:
    key, pub = keys
    sign_registry(reg, key)
    sums = bytearray((reg / "SHA256SUMS").read_bytes())
    sums[5] = ord("0") if sums[5] != ord("0") else ord("1")
    (reg / "SHA256SUMS").write_bytes(bytes(sums))
    report = validate_registry(reg, trusted_keys=[str(pub)])
    assert "SIG002" in sig_codes(report)
    f = next(f for f in report.findings if f.code == "SIG002")
    assert "SHA256SUMS changed" in f.message and f.hint == RULES["SIG002"].hint


def test_sig003_wrong_key(reg: Path, keys: tuple[Path, Path], tmp_path: Path) -> None:
    key, _ = keys
    _, other_pub, other = generate_keypair(tmp_path / "keys" / "other.key")
    sign_registry(reg, key)
    report = validate_registry(reg, trusted_keys=[str(other_pub)])
    assert sig_codes(report) == ["SIG003"] and not report.ok
    assert other.id in next(f for f in report.findings if f.code == "SIG003").message


@pytest.mark.parametrize("damage", ["truncated-file", "truncated-signature", "not-json", "wrong-algorithm"])
def test_sig004_malformed_or_truncated_signature(reg: Path, keys: tuple[Path, Path], damage: str) -> None:
    key, pub = keys
    sign_registry(reg, key)
    sig = reg / SIG_NAME
    text = sig.read_text()
    if damage == "truncated-file":
        sig.write_text(text[: len(text) // 2])
    elif damage == "truncated-signature":
        doc = json.loads(text)
        doc["signature"] = base64.b64encode(base64.b64decode(doc["signature"])[:40]).decode()
        sig.write_text(json.dumps(doc))
    elif damage == "not-json":
        sig.write_bytes(b"\x00\x01binary")
    else:
        doc = json.loads(text)
        doc["algorithm"] = "rsa"
        sig.write_text(json.dumps(doc))
    report = validate_registry(reg, trusted_keys=[str(pub)])
    assert sig_codes(report) == ["SIG004"]


def test_the_four_failures_are_distinct_codes(reg: Path, keys: tuple[Path, Path], tmp_path: Path) -> None:
    key, pub = keys
    _, other_pub, _ = generate_keypair(tmp_path / "keys" / "other.key")
    seen = {sig_codes(validate_registry(reg, trusted_keys=[str(pub)]))[0]}  # missing
    sign_registry(reg, key)
    seen.add(sig_codes(validate_registry(reg, trusted_keys=[str(other_pub)]))[0])  # wrong key
    (reg / "SHA256SUMS").write_bytes((reg / "SHA256SUMS").read_bytes() + b"\n")
    seen.add(sig_codes(validate_registry(reg, trusted_keys=[str(pub)]))[0])  # changed
    (reg / SIG_NAME).write_bytes((reg / SIG_NAME).read_bytes()[:30])
    seen.add(sig_codes(validate_registry(reg, trusted_keys=[str(pub)]))[0])  # truncated
    assert seen == {"SIG001", "SIG002", "SIG003", "SIG004"}


def test_sign_trust_records_key_in_index_and_validate_uses_it(reg: Path, keys: tuple[Path, Path]) -> None:
    key, pub = keys
    sign_registry(reg, key, trust=True)
    index = json.loads((reg / "index.json").read_text())
    (item,) = index["signing"]["trusted_keys"]
    assert item["public_key"] == pub.read_text().split()[1] and item["comment"] == "release key"
    report = validate_registry(reg)  # keys from index.json, SHA256SUMS recomputed before signing
    assert report.ok and sig_codes(report) == []
    (reg / SIG_NAME).unlink()
    assert sig_codes(validate_registry(reg)) == ["SIG001"]
    # the private key is nowhere in the registry
    for p in reg.rglob("*"):
        if p.is_file():
            assert b"PRIVATE KEY" not in p.read_bytes(), p


def test_pubkey_on_the_command_line_overrides_keys_in_the_index(
    reg: Path, keys: tuple[Path, Path], tmp_path: Path
) -> None:
    _, pub = keys
    intruder_key, _, _ = generate_keypair(tmp_path / "keys" / "intruder.key")
    sign_registry(reg, intruder_key, trust=True)  # someone who can write the registry trusts their own key
    assert validate_registry(reg).ok
    assert sig_codes(validate_registry(reg, trusted_keys=[str(pub)])) == ["SIG003"]


def test_sign_refuses_key_inside_registry_loose_mode_and_stale_sums(
    reg: Path, keys: tuple[Path, Path], tmp_path: Path
) -> None:
    key, _ = keys
    inside = reg / "k.pem"
    inside.write_bytes(key.read_bytes())
    os.chmod(inside, 0o600)
    with pytest.raises(RefusedError, match="inside the registry"):
        sign_registry(reg, inside)
    inside.unlink()
    loose = tmp_path / "loose.key"
    loose.write_bytes(key.read_bytes())
    os.chmod(loose, 0o644)
    with pytest.raises(RefusedError, match="readable by other users"):
        sign_registry(reg, loose)
    (reg / "README.md").write_text((reg / "README.md").read_text() + "\nedited after sums\n")
    with pytest.raises(RefusedError, match="SHA256SUMS does not match"):
        sign_registry(reg, key)
    assert not (reg / SIG_NAME).exists()


def test_cli_keygen_sign_verify_and_exit_codes(reg: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    key = tmp_path / "k" / "id.key"
    key.parent.mkdir()
    assert main(["keygen", str(key), "--comment", "ci"]) == 0
    pub = Path(str(key) + ".pub")
    assert main(["sign", str(reg), "--key", str(key)]) == 0
    assert main(["verify", str(reg), "--pubkey", str(pub)]) == 0
    assert "good signature" in capsys.readouterr().out
    assert main(["validate", str(reg), "--pubkey", str(pub)]) == 0
    (reg / "SHA256SUMS").write_bytes((reg / "SHA256SUMS").read_bytes().replace(b"  ", b" *", 1))
    assert main(["verify", str(reg), "--pubkey", str(pub)]) == 1
    assert "SIG002" in capsys.readouterr().out
    bad = tmp_path / "bad.pub"
    bad.write_text("ssh-rsa AAAA nope\n")
    assert main(["verify", str(reg), "--pubkey", str(bad)]) == 2
    assert "not an rwkv-registry public key" in capsys.readouterr().err


def test_verify_also_checks_files_against_sha256sums(reg: Path, keys: tuple[Path, Path]) -> None:
    key, pub = keys
    sign_registry(reg, key)
    readme = reg / "README.md"
    readme.write_text(readme.read_text() + "\nchanged after signing\n")
    assert main(["verify", str(reg), "--pubkey", str(pub)]) == 1


def test_sign_trust_twice_records_the_key_once(reg: Path, keys: tuple[Path, Path]) -> None:
    key, _ = keys
    sign_registry(reg, key, trust=True)
    index_before = (reg / "index.json").read_bytes()
    sign_registry(reg, key, trust=True)
    assert (reg / "index.json").read_bytes() == index_before
    assert len(json.loads(index_before)["signing"]["trusted_keys"]) == 1
    assert validate_registry(reg).ok


def test_sign_trust_does_not_bless_files_changed_since_sha256sums(reg: Path, keys: tuple[Path, Path]) -> None:
    """Trusting a key rewrites SHA256SUMS: a file edited after the last `sums` must stop it, not be signed."""
    key, _ = keys
    train = reg / "rwkv7-tiny-20260101-ctx4096" / "state" / "v1" / "train.json"
    train.write_text(train.read_text().replace("1.8.1", "6.6.6"))
    before = {p: p.read_bytes() for p in reg.rglob("*") if p.is_file() and ".rwkv-registry" not in p.name}
    with pytest.raises(RefusedError, match="SHA256SUMS does not match"):
        sign_registry(reg, key, trust=True)
    assert {p: p.read_bytes() for p in before} == before and not (reg / SIG_NAME).exists()


def test_sign_with_an_untrusted_key_keeps_the_good_signature(
    reg: Path, keys: tuple[Path, Path], tmp_path: Path
) -> None:
    key, _ = keys
    sign_registry(reg, key, trust=True)
    good = (reg / SIG_NAME).read_bytes()
    other, _, _ = generate_keypair(tmp_path / "other.key")
    with pytest.raises(RefusedError, match="not among the keys this registry trusts"):
        sign_registry(reg, other)
    assert (reg / SIG_NAME).read_bytes() == good and validate_registry(reg).ok


def test_keygen_names_what_is_wrong_with_the_path(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="needs a file name"):
        generate_keypair("")
    with pytest.raises(UsageError, match="needs a file name"):
        generate_keypair(tmp_path)
    with pytest.raises(UsageError, match="no such directory") as e:
        generate_keypair(tmp_path / "missing" / "k")
    assert "mkdir -p" in e.value.hint


def test_verify_names_a_directory_where_the_signature_belongs(reg: Path, keys: tuple[Path, Path]) -> None:
    from rwkv_registry.cli.main import main

    _, pub = keys
    (reg / SIG_NAME).mkdir()
    assert main(["verify", str(reg), "--pubkey", str(pub)]) == 2


def test_sign_trust_of_a_second_key_does_not_warn_of_the_signature_it_replaces(
    reg: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    keys = [tmp_path / "k1", tmp_path / "k2"]
    for key in keys:
        assert main(["keygen", str(key)]) == 0
    assert main(["sign", str(reg), "--key", str(keys[0]), "--trust"]) == 0
    capsys.readouterr()
    assert main(["sign", str(reg), "--key", str(keys[1]), "--trust"]) == 0  # index.json and SHA256SUMS change
    assert "no longer matches" not in capsys.readouterr().err
    assert main(["validate", str(reg)]) == 0
