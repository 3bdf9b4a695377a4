"""Ed25519 signatures of SHA256SUMS: keygen, sign, verify, and the SIG rules of validate.

Failing cases of SIG001 (missing), SIG002 (SHA256SUMS changed), SIG003 (untrusted key) and SIG004
(malformed or truncated signature) live here; tests/test_validate_rules.py checks they exist.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import stat
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from rwkv_registry.checks.catalogue import RULES
from rwkv_registry.checks.signatures import parse_public_key, read_signature
from rwkv_registry.cli.main import main
from rwkv_registry.core.errors import RefusedError, UsageError
from rwkv_registry.engine.validate import validate_registry
from rwkv_registry.index.sums import SIG_NAME
from rwkv_registry.store.signing import generate_keypair, sign_registry


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

    from rwkv_registry.core.errors import RegistryIOError

    real_open = os.open

    def read_only(path: object, flags: int, *args: object) -> int:
        if str(path).endswith("k.key") and flags & os.O_CREAT:
            raise OSError(errno.EROFS, "Read-only file system")
        return real_open(path, flags, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", read_only)
    with pytest.raises(RegistryIOError, match=r"cannot create .*Read-only file system"):
        generate_keypair(tmp_path / "k.key")
    assert not (tmp_path / "k.key").exists()


# --- third audit (mut4): each test below failed on a mutant that the tests above let live ----------------


def test_a_public_key_without_comment_is_one_line_without_a_trailing_space(tmp_path: Path) -> None:
    _, pub, public = generate_keypair(tmp_path / "k.key")
    assert pub.read_text() == f"ed25519 {public.b64}\n"
    assert parse_public_key(pub.read_text()).comment == ""


def test_ed25519_without_a_key_is_a_usage_error(tmp_path: Path, reg: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(UsageError, match="without a key"):
        parse_public_key("ed25519\n")
    pub = tmp_path / "empty.pub"
    pub.write_text("ed25519 \n")
    assert main(["validate", str(reg), "--pubkey", str(pub)]) == 2
    assert "without a key" in capsys.readouterr().err


def test_a_pem_public_key_of_another_algorithm_is_refused_by_name() -> None:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    pem = (
        ec.generate_private_key(ec.SECP256R1())
        .public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    )
    with pytest.raises(UsageError, match="not an Ed25519 key"):
        parse_public_key(pem.decode("ascii"), "ec.pub")


def test_a_bare_base64_public_key_is_accepted(tmp_path: Path, reg: Path, keys: tuple[Path, Path]) -> None:
    key, pub = keys
    public = parse_public_key(pub.read_text())
    bare = tmp_path / "bare.pub"
    bare.write_text(public.b64 + "\n")
    assert parse_public_key(bare.read_text()).raw == public.raw
    sign_registry(reg, key)
    assert sig_codes(validate_registry(reg, trusted_keys=[str(bare)])) == []


def test_signing_with_the_public_half_says_so(reg: Path, keys: tuple[Path, Path]) -> None:
    _, pub = keys
    with pytest.raises(UsageError, match="this is a public key; signing needs the private key"):
        sign_registry(reg, pub)
    assert not (reg / SIG_NAME).exists()


def test_a_private_key_of_another_algorithm_is_refused_by_name(reg: Path, tmp_path: Path) -> None:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    key = tmp_path / "ec.key"
    key.write_bytes(
        ec.generate_private_key(ec.SECP256R1()).private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    key.chmod(0o600)
    with pytest.raises(UsageError, match="not an Ed25519 key"):
        sign_registry(reg, key)
    assert not (reg / SIG_NAME).exists()


def test_a_comment_with_a_carriage_return_is_refused(tmp_path: Path) -> None:
    for comment in ("a\rb", "a\nb"):
        with pytest.raises(UsageError, match="one line"):
            generate_keypair(tmp_path / "k.key", comment=comment)
    assert list(tmp_path.iterdir()) == []


def test_keygen_leaves_no_private_key_when_the_public_one_cannot_be_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno

    from rwkv_registry.core.errors import RegistryIOError

    real_open = os.open

    def no_pub(path: object, flags: int, *args: object) -> int:
        if str(path).endswith(".pub") and flags & os.O_CREAT:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_open(path, flags, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", no_pub)
    with pytest.raises(RegistryIOError, match="No space left"):
        generate_keypair(tmp_path / "k.key")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("field", ["format", "algorithm", "key_id", "signature"])
def test_a_signature_file_missing_a_required_field_is_malformed(reg: Path, keys: tuple[Path, Path], field: str) -> None:
    key, pub = keys
    sign_registry(reg, key)
    doc = json.loads((reg / SIG_NAME).read_text())
    del doc[field]
    (reg / SIG_NAME).write_text(json.dumps(doc))
    assert sig_codes(validate_registry(reg, trusted_keys=[str(pub)])) == ["SIG004"]


def test_sig002_says_what_sha256sums_was_when_signed(reg: Path, keys: tuple[Path, Path]) -> None:
    key, pub = keys
    sign_registry(reg, key)
    signed = json.loads((reg / SIG_NAME).read_text())
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", signed["created"])  # UTC, to the second
    with (reg / "SHA256SUMS").open("a") as f:
        f.write("\n")
    [sig002] = [f for f in validate_registry(reg, trusted_keys=[str(pub)]).findings if f.code == "SIG002"]
    assert f"signed when its sha256 was {signed['sha256'][:12]}" in sig002.message


def test_verify_names_the_signer_s_comment(
    reg: Path, keys: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    key, pub = keys
    sign_registry(reg, key)
    assert main(["verify", str(reg), "--pubkey", str(pub)]) == 0
    assert "(release key)" in capsys.readouterr().out


def test_sign_over_an_index_that_is_not_an_object_is_refused_cleanly(
    reg: Path, keys: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    key, _ = keys
    (reg / "index.json").write_text("[1]\n")
    assert main(["sign", str(reg), "--key", str(key)]) == 1
    err = capsys.readouterr().err
    assert "SHA256SUMS does not match" in err and "bug" not in err
    assert not (reg / SIG_NAME).exists()


def test_cli_sign_trust_records_the_key(reg: Path, keys: tuple[Path, Path]) -> None:
    key, pub = keys
    assert main(["sign", str(reg), "--key", str(key), "--trust"]) == 0
    trusted = json.loads((reg / "index.json").read_text())["signing"]["trusted_keys"]
    assert [k["public_key"] for k in trusted] == [parse_public_key(pub.read_text()).b64]
    assert sig_codes(validate_registry(reg)) == []


@pytest.mark.parametrize("doc", ["[]", '"text"', "null", "7"])
def test_a_signature_file_that_is_not_an_object_is_malformed(reg: Path, keys: tuple[Path, Path], doc: str) -> None:
    _, pub = keys
    (reg / SIG_NAME).write_text(doc)
    assert sig_codes(validate_registry(reg, trusted_keys=[str(pub)])) == ["SIG004"]
    assert sig_codes(validate_registry(reg)) == ["SIG004"]  # malformed whether or not keys are trusted


def test_a_signature_is_not_judged_when_no_key_is_trusted(reg: Path, keys: tuple[Path, Path]) -> None:
    key, _ = keys
    sign_registry(reg, key)
    assert sig_codes(validate_registry(reg)) == []


def test_sig002_of_a_signature_made_by_another_key_over_the_same_sums(reg: Path, keys: tuple[Path, Path]) -> None:
    key, pub = keys
    sign_registry(reg, key)
    doc = json.loads((reg / SIG_NAME).read_text())
    raw = bytearray(base64.b64decode(doc["signature"]))
    raw[0] ^= 1
    doc["signature"] = base64.b64encode(bytes(raw)).decode()
    (reg / SIG_NAME).write_text(json.dumps(doc))
    [sig002] = [f for f in validate_registry(reg, trusted_keys=[str(pub)]).findings if f.code == "SIG002"]
    assert "or the signature was not made by this key" in sig002.message and "signed when" not in sig002.message


def test_unreadable_trusted_keys_in_the_index_are_skipped(keys: tuple[Path, Path]) -> None:
    from rwkv_registry.checks.signatures import index_keys

    _, pub = keys
    good = parse_public_key(pub.read_text())
    items = [{"public_key": 5}, {"public_key": None}, "text", {"public_key": good.b64, "comment": 3}]
    assert [k.raw for k in index_keys({"signing": {"trusted_keys": items}})] == [good.raw]


def test_a_key_inside_the_registry_is_refused_whatever_the_path_given(
    reg: Path, keys: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    key, _ = keys
    inside = reg / "signing.key"
    inside.write_bytes(key.read_bytes())
    inside.chmod(0o600)
    monkeypatch.chdir(reg.parent)
    with pytest.raises(RefusedError, match="inside the registry being signed"):
        sign_registry(reg.name, inside)
    assert not (reg / SIG_NAME).exists()
