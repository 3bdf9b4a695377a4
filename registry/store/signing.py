"""Ed25519 key pairs and the signing of SHA256SUMS, for ``keygen`` and ``sign`` (their handlers, and ``verify``'s,
are :mod:`rwkv_registry.cli.sign`; the checks of a signature, SIG001–SIG004, are
:mod:`rwkv_registry.checks.signatures`).
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import os
import stat
from pathlib import Path
from typing import Any

from rwkv_registry.checks.signatures import (
    SIG_FORMAT,
    PublicKey,
    index_keys,
    parse_public_key,
)
from rwkv_registry.core.errors import RefusedError, RegistryIOError, UsageError, os_error_hint
from rwkv_registry.fs.atomic import registry_around
from rwkv_registry.index.sums import SIG_NAME, SUMS_NAME

__all__ = [
    "generate_keypair",
    "load_private_key",
    "sign_registry",
    "signature_document",
]


def load_private_key(path: str | os.PathLike[str]) -> tuple[Any, PublicKey]:
    """(cryptography private key, its public key) from a PKCS#8 PEM file written by :func:`generate_keypair`."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    p = Path(path)
    try:
        data = p.read_bytes()
        mode = p.stat().st_mode
    except OSError as e:
        raise UsageError(
            f"--key {path}: cannot read it ({e.strerror or e})",
            hint="Give the private key file written by `rwkv-registry keygen KEY` (KEY, not KEY.pub).",
        ) from None
    if _looks_public(data):
        private = str(path)[: -len(".pub")] if str(path).endswith(".pub") else "KEY"
        raise UsageError(
            f"--key {path}: this is a public key; signing needs the private key",
            hint=f"Give the private key file written by `rwkv-registry keygen` ({private}; {path} is its public half, "
            "for `verify --pubkey` and `validate --pubkey`).",
            path=str(path),
        )
    if os.name == "posix" and mode & 0o077:
        raise RefusedError(
            f"--key {path}: the private key is readable by other users (mode {stat.S_IMODE(mode):04o})",
            hint=f"Run `chmod 600 {path}`.",
        )
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError) as e:
        raise UsageError(
            f"--key {path}: not an unencrypted PEM private key ({str(e).splitlines()[0] if str(e) else e})",
            hint="Use the KEY file written by `rwkv-registry keygen` (KEY.pub is the public half).",
        ) from None
    if not isinstance(key, Ed25519PrivateKey):
        raise UsageError(
            f"--key {path}: not an Ed25519 key",
            hint="Registry signatures are Ed25519: sign with a KEY made by `rwkv-registry keygen KEY`.",
        )
    raw = key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    comment = ""
    pub = Path(str(p) + ".pub")
    if pub.is_file():
        try:
            other = parse_public_key(pub.read_text("utf-8"), str(pub))
            comment = other.comment if other.raw == raw else ""
        except (UsageError, OSError, UnicodeDecodeError):
            pass
    return key, PublicKey(raw, comment, str(path))


def _looks_public(data: bytes) -> bool:
    """Is this the content of a public key file (one-line ``ed25519 …`` or a PEM public key)?"""
    if b"PRIVATE KEY" in data[:200]:
        return False
    try:
        parse_public_key(data.decode("utf-8"))
    except (UsageError, UnicodeDecodeError):
        return False
    return True


def _write_new(path: Path, data: bytes, mode: int) -> None:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    except FileExistsError:
        raise UsageError(f"{path} already exists", hint="Choose another KEY path; keygen never overwrites.") from None
    except OSError as e:
        raise RegistryIOError(
            f"cannot create {path}: {e.strerror or e}", hint=os_error_hint(e, path.parent), path=str(path)
        ) from e
    try:
        if hasattr(os, "fchmod"):
            os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
    except OSError as e:
        raise RegistryIOError(
            f"cannot write {path}: {e.strerror or e}", hint=os_error_hint(e, path.parent), path=str(path)
        ) from e


def _check_key_path(key: str | os.PathLike[str]) -> None:
    """Refuse a KEY that names no new file outside every registry (raises OSError for an unusable path)."""
    if not str(key).strip() or Path(key).is_dir():
        raise UsageError(
            f"keygen needs a file name for the private key, not {str(key)!r}",
            hint="e.g. rwkv-registry keygen ~/.config/rwkv-registry/signing.key (KEY.pub is written beside it).",
        )
    path = Path(key)
    parent = path.resolve().parent
    if not parent.is_dir():
        raise UsageError(
            f"{path.parent}: no such directory", hint=f"Create it first (mkdir -p {path.parent}), or give another KEY."
        )
    registry = registry_around(parent)
    if registry is not None:
        raise RefusedError(
            f"{path}: refusing to write a private key inside the registry {registry}",
            hint="Keep private keys outside every registry, e.g. ~/.config/rwkv-registry/signing.key.",
        )
    for p in (path, Path(str(path) + ".pub")):
        if p.exists():
            raise UsageError(f"{p} already exists", hint="Choose another KEY path; keygen never overwrites.")


def generate_keypair(key: str | os.PathLike[str], *, comment: str = "") -> tuple[Path, Path, PublicKey]:
    """Create ``KEY`` (private, mode 0600) and ``KEY.pub``; refuse to overwrite or to write into a registry."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    if "\n" in comment or "\r" in comment:
        raise UsageError(
            "--comment must be one line",
            hint='Give --comment without line breaks, e.g. --comment "alice@example.org 2026".',
        )
    try:
        _check_key_path(key)
    except OSError as e:  # a name too long, a loop of links, a component that is a file...
        raise UsageError(
            f"keygen: cannot use {str(key)!r} as the private key's path ({e.strerror or e})",
            hint="Give another KEY, e.g. ~/.config/rwkv-registry/signing.key.",
        ) from None
    path = Path(key)
    pub_path = Path(str(path) + ".pub")
    private = Ed25519PrivateKey.generate()
    pem = private.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    raw = private.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    public = PublicKey(raw, comment, str(pub_path))
    _write_new(path, pem, 0o600)
    try:
        _write_new(pub_path, public.line().encode("utf-8"), 0o644)
    except Exception:
        path.unlink(missing_ok=True)
        raise
    return path, pub_path, public


def signature_document(sums: bytes, private: Any, public: PublicKey, *, now: dt.datetime | None = None) -> bytes:
    """The bytes of SHA256SUMS.sig for ``sums`` signed with ``private``."""
    import json

    created = (now or dt.datetime.now(dt.UTC)).replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")
    doc = {
        "format": SIG_FORMAT,
        "algorithm": "ed25519",
        "key_id": public.id,
        "signed_file": SUMS_NAME,
        "sha256": hashlib.sha256(sums).hexdigest(),
        "signature": base64.b64encode(private.sign(sums)).decode("ascii"),
        "created": created,
        "comment": public.comment,
    }
    return (json.dumps(doc, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def sign_registry(path: str | os.PathLike[str], key: str | os.PathLike[str], *, trust: bool = False) -> PublicKey:
    """Sign the registry's SHA256SUMS with ``key``; with ``trust``, first record the key in index.json.

    Order, each step under the registry lock: (1) add the key to ``signing.trusted_keys`` if asked,
    after checking that SHA256SUMS matches every file (index.json, README and SHA256SUMS are then
    rewritten together, so nothing else is blessed), (2) check again that SHA256SUMS matches every
    file, (3) sign SHA256SUMS's bytes and write SHA256SUMS.sig atomically. A key the registry does
    not trust is refused unless ``trust`` (its signature would fail SIG003).
    """
    from rwkv_registry.fs.atomic import Transaction, refuse_link, registry_lock
    from rwkv_registry.store.ops import update_index

    root = Path(path)
    if not root.is_dir() or not (root / "index.json").is_file():
        raise UsageError(f"{path}: not a registry (no index.json)", hint="Give the registry's root directory.")
    key_path = Path(key).resolve()
    if root.resolve() in key_path.parents:
        raise RefusedError(
            f"--key {key}: the private key lies inside the registry being signed",
            hint="Move it outside the registry (and out of git history), then sign again.",
        )
    private, public = load_private_key(key)
    trusted = {k.b64 for k in index_keys(_read_index(root))}
    if trusted and public.b64 not in trusted and not trust:
        raise RefusedError(
            f"--key {key}: key {public.id} is not among the keys this registry trusts, so `validate` would "
            "reject its signature (SIG003); the current signature is kept",
            hint="Sign with a trusted key, or add this one with `sign --trust` (a reviewed change of index.json).",
        )
    # before the trust step: it would rewrite index.json, README.md and SHA256SUMS, then the signature be refused
    refuse_link(root / SIG_NAME, SIG_NAME)
    if trust and public.b64 not in trusted:
        _refuse_stale_sums(root)  # trusting rewrites SHA256SUMS: it must not bless files changed since

        def add_key(index: dict[str, Any]) -> None:
            signing = index.setdefault("signing", {"trusted_keys": []})
            keys = signing.setdefault("trusted_keys", [])
            if not any(k.get("public_key") == public.b64 for k in keys):
                item = {"id": public.id, "public_key": public.b64}
                if public.comment:
                    item["comment"] = public.comment
                keys.append(item)

        update_index(root, add_key, warn_signature=False)  # it signs next
    with registry_lock(root):
        _refuse_stale_sums(root)
        try:
            sums = (root / SUMS_NAME).read_bytes()
        except OSError as e:
            raise RegistryIOError(
                f"cannot read {root / SUMS_NAME}: {e.strerror or e}",
                hint=os_error_hint(e, root / SUMS_NAME),
                path=SUMS_NAME,
            ) from e
        with Transaction(root) as txn:
            txn.write_bytes(SIG_NAME, signature_document(sums, private, public))
            txn.commit()
    return public


def _refuse_stale_sums(root: Path) -> None:
    """Refuse to sign (or to trust a key, which rewrites SHA256SUMS) unless SHA256SUMS matches every file."""
    from rwkv_registry.store.ops import check_sums

    errors = [f for f in check_sums(root) if str(f.severity) == "error"]
    if errors:
        raise RefusedError(
            f"SHA256SUMS does not match the registry ({errors[0].code} {errors[0].path}: {errors[0].message})",
            hint="Review the change, run `rwkv-registry sums PATH` (or fix the files), then sign again.",
            findings=errors,
        )


def _read_index(root: Path) -> dict[str, Any] | None:
    from rwkv_registry.formats.jsonload import JsonLoadError, load_json_file

    try:
        value = load_json_file(root / "index.json")
    except JsonLoadError:
        return None  # update_index reports it properly
    return value if isinstance(value, dict) else None
