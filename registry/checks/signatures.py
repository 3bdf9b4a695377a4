"""The SIG rules of ``validate`` (SIG001–SIG004): public keys, the SHA256SUMS.sig document, its verification.

SHA256SUMS lists the sha256 of every file of the registry; signing its exact bytes therefore
vouches for the whole registry. The signature sits beside it in ``SHA256SUMS.sig`` (not listed in
SHA256SUMS). Files:

- **private key** (``KEY``): PKCS#8 PEM, unencrypted, created with mode 0600 and never inside a
  registry; ``openssl pkey -in KEY -pubout`` reads it.
- **public key** (``KEY.pub``): one line ``ed25519 <base64 of the raw 32-byte key> <comment>``;
  a bare base64 key or a PEM ``PUBLIC KEY`` is accepted too.
- **key id**: the first 16 hex digits of sha256(raw public key).
- **SHA256SUMS.sig**: JSON ``{"format": "rwkv-registry-signature/1", "algorithm": "ed25519",
  "key_id", "signed_file": "SHA256SUMS", "sha256" (of SHA256SUMS, informative), "signature"
  (base64 of the 64-byte Ed25519 signature of SHA256SUMS's bytes), "created", "comment"}``.
  ``openssl pkeyutl -verify -pubin -inkey PUB.pem -rawin -in SHA256SUMS -sigfile SIG.bin`` checks it
  once the base64 signature is decoded to SIG.bin.

Trust: keys given with ``--pubkey`` are the only ones trusted when present; otherwise the keys of
index.json ``signing.trusted_keys``. (Keys recorded in the registry protect against accidents and
partial tampering; someone able to rewrite index.json can add their own key, so pin keys with
``--pubkey`` where it matters.) With no trusted key and no signature, nothing is checked.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rwkv_registry.core.errors import UsageError
from rwkv_registry.core.rules import E, Finding, Rule, Rulebook
from rwkv_registry.index.sums import SIG_NAME, SUMS_NAME

# --- the rules ----------------------------------------------------------------------------------------------------

RULES = Rulebook(
    Rule(
        "SIG001",
        E,
        "SHA256SUMS is not signed although keys are trusted",
        "Sign it with `rwkv-registry sign PATH --key KEY`, or drop the trusted keys if the registry is not signed.",
    ),
    Rule(
        "SIG002",
        E,
        "signature does not verify: SHA256SUMS changed after signing",
        "Find out who changed SHA256SUMS and why; if the change is yours, run `rwkv-registry sums PATH` "
        "and sign again with `rwkv-registry sign PATH --key KEY`.",
    ),
    Rule(
        "SIG003",
        E,
        "SHA256SUMS signed by an untrusted key",
        "Sign with a trusted key, or trust this key (`rwkv-registry sign PATH --key KEY --trust`, or --pubkey).",
    ),
    Rule(
        "SIG004",
        E,
        "SHA256SUMS.sig malformed or truncated",
        "Sign again with `rwkv-registry sign PATH --key KEY` (it rewrites SHA256SUMS.sig).",
    ),
)
finding = RULES.finding

__all__ = [
    "PUB_PREFIX",
    "SIG_FORMAT",
    "PublicKey",
    "Signature",
    "SignatureFormatError",
    "check_signatures",
    "index_keys",
    "key_id",
    "load_public_key",
    "parse_public_key",
    "read_signature",
]


SIG_FORMAT = "rwkv-registry-signature/1"


PUB_PREFIX = "ed25519"


_KEY_ID = re.compile(r"^[0-9a-f]{16}$")


_B64 = re.compile(r"^[A-Za-z0-9+/]+={0,2}$")


def key_id(raw: bytes) -> str:
    """The id of a raw 32-byte Ed25519 public key: first 16 hex digits of its sha256."""
    return hashlib.sha256(raw).hexdigest()[:16]


@dataclass(frozen=True)
class PublicKey:
    """A raw Ed25519 public key and where it came from."""

    raw: bytes
    comment: str = ""
    origin: str = ""

    @property
    def id(self) -> str:
        """Key id (see :func:`key_id`)."""
        return key_id(self.raw)

    @property
    def b64(self) -> str:
        """Standard base64 of the raw key (44 characters), as index.json records it."""
        return base64.b64encode(self.raw).decode("ascii")

    def line(self) -> str:
        """The one-line public key file format."""
        return f"{PUB_PREFIX} {self.b64} {self.comment}".rstrip() + "\n"

    def verifies(self, signature: bytes, data: bytes) -> bool:
        """Does ``signature`` sign ``data`` under this key?"""
        from cryptography.exceptions import InvalidSignature
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

        try:
            Ed25519PublicKey.from_public_bytes(self.raw).verify(signature, data)
        except (InvalidSignature, ValueError):
            return False
        return True


_PUB_HINT = "Use the KEY.pub file written by `rwkv-registry keygen KEY`, unchanged (ed25519 <base64> [comment])."


def _decode_raw_key(text: str, origin: str) -> bytes:
    if not _B64.match(text):
        raise UsageError(f"{origin}: the key is not base64", hint="A public key file holds `ed25519 <base64> ...`.")
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise UsageError(
            f"{origin}: the key is not valid base64",
            hint=_PUB_HINT,
        ) from None
    if len(raw) != 32:
        raise UsageError(
            f"{origin}: an Ed25519 public key is 32 bytes, this one {len(raw)}",
            hint=_PUB_HINT,
        )
    return raw


def parse_public_key(text: str, origin: str = "<key>") -> PublicKey:
    """A public key from its file content (one-line, bare base64 or PEM). Raises :class:`UsageError`."""
    text = text.strip()
    if text.startswith("-----BEGIN PUBLIC KEY-----"):
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

        try:
            key = serialization.load_pem_public_key(text.encode("ascii"))
        except (ValueError, UnicodeEncodeError):
            raise UsageError(
                f"{origin}: unreadable PEM public key",
                hint="Give the KEY.pub file written by `rwkv-registry keygen KEY`, or an Ed25519 PEM public key whole.",
            ) from None
        if not isinstance(key, Ed25519PublicKey):
            raise UsageError(
                f"{origin}: not an Ed25519 key",
                hint="Registry signatures are Ed25519: make a key pair with `rwkv-registry keygen KEY`.",
            )
        raw = key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
        return PublicKey(raw, "", origin)
    fields = text.split(None, 2)
    if not fields:
        raise UsageError(
            f"{origin}: empty public key file",
            hint=_PUB_HINT,
        )
    if fields[0] == PUB_PREFIX:
        if len(fields) < 2:
            raise UsageError(
                f"{origin}: `ed25519` without a key",
                hint=_PUB_HINT,
            )
        return PublicKey(_decode_raw_key(fields[1], origin), fields[2] if len(fields) > 2 else "", origin)
    if len(fields) == 1:
        return PublicKey(_decode_raw_key(fields[0], origin), "", origin)
    raise UsageError(
        f"{origin}: not an rwkv-registry public key (it starts {fields[0][:20]!r})",
        hint="Use the KEY.pub file written by `rwkv-registry keygen`.",
    )


def load_public_key(path: str | os.PathLike[str]) -> PublicKey:
    """Read a public key file. Raises :class:`UsageError` naming the file."""
    p = Path(path)
    try:
        text = p.read_text("utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise UsageError(
            f"--pubkey {path}: cannot read it ({getattr(e, 'strerror', None) or e})",
            hint="Give a public key file (KEY.pub, written by `rwkv-registry keygen KEY`).",
        ) from None
    return parse_public_key(text, str(path))


@dataclass(frozen=True)
class Signature:
    """A parsed SHA256SUMS.sig."""

    key_id: str
    signature: bytes
    sums_sha256: str | None
    comment: str


class SignatureFormatError(ValueError):
    """SHA256SUMS.sig is malformed (rule SIG004)."""


def read_signature(data: bytes) -> Signature:
    """Parse SHA256SUMS.sig; raise :class:`SignatureFormatError` saying what is wrong."""
    from rwkv_registry.formats.jsonload import JsonLoadError, load_json_bytes

    try:
        doc = load_json_bytes(data, path=SIG_NAME, max_bytes=64 * 1024)
    except JsonLoadError as e:
        raise SignatureFormatError(f"not valid JSON ({e.reason}): truncated or damaged") from None
    if not isinstance(doc, dict):
        raise SignatureFormatError(f"a JSON {type(doc).__name__}, not an object")
    if doc.get("format") != SIG_FORMAT:
        raise SignatureFormatError(f"format is {doc.get('format')!r}, expected {SIG_FORMAT!r}")
    if doc.get("algorithm") != "ed25519":
        raise SignatureFormatError(f"algorithm is {doc.get('algorithm')!r}, only 'ed25519' is supported")
    if doc.get("signed_file", SUMS_NAME) != SUMS_NAME:
        raise SignatureFormatError(f"signs {doc.get('signed_file')!r}, not {SUMS_NAME}")
    kid = doc.get("key_id")
    if not isinstance(kid, str) or not _KEY_ID.match(kid):
        raise SignatureFormatError(f"key_id {kid!r} is not 16 lower-case hex digits")
    sig = doc.get("signature")
    if not isinstance(sig, str) or not _B64.match(sig):
        raise SignatureFormatError("signature is missing or not base64")
    try:
        raw = base64.b64decode(sig, validate=True)
    except (binascii.Error, ValueError):
        raise SignatureFormatError("signature is not valid base64 (truncated?)") from None
    if len(raw) != 64:
        raise SignatureFormatError(f"an Ed25519 signature is 64 bytes, this one {len(raw)} (truncated?)")
    sums = doc.get("sha256")
    comment = doc.get("comment")
    return Signature(kid, raw, sums if isinstance(sums, str) else None, comment if isinstance(comment, str) else "")


def index_keys(index: dict[str, Any] | None) -> list[PublicKey]:
    """Trusted keys recorded in index.json ``signing.trusted_keys`` (unreadable ones are skipped)."""
    signing = (index or {}).get("signing")
    items = signing.get("trusted_keys") if isinstance(signing, dict) else None
    out: list[PublicKey] = []
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, dict) or not isinstance(item.get("public_key"), str):
            continue
        try:
            raw = _decode_raw_key(item["public_key"], "index.json")
        except UsageError:
            continue
        comment = item["comment"] if isinstance(item.get("comment"), str) else ""
        out.append(PublicKey(raw, comment, "index.json"))
    return out


def check_signatures(
    root: Path, tree_files: set[str], index: dict[str, Any] | None, trusted_keys: list[str]
) -> list[Finding]:
    """SIG001–SIG004 for the registry at ``root``.

    ``trusted_keys`` are public key files (``--pubkey``); when given they are the only trusted
    keys, else index.json's ``signing.trusted_keys`` are. ``tree_files`` are the registry's
    relative paths. No trusted key and no SHA256SUMS.sig: no finding at all.
    """
    cli = [load_public_key(p) for p in trusted_keys]
    trusted = cli or index_keys(index)
    source = "--pubkey" if cli else "index.json signing.trusted_keys"
    if SIG_NAME not in tree_files:
        if not trusted:
            return []
        return [
            finding(
                "SIG001",
                SIG_NAME,
                f"SHA256SUMS is not signed, but {len(trusted)} key(s) are trusted ({source}: "
                f"{', '.join(k.id for k in trusted)})",
            )
        ]
    try:
        sig = read_signature((root / SIG_NAME).read_bytes())
    except SignatureFormatError as e:
        return [finding("SIG004", SIG_NAME, str(e))]
    except OSError as e:
        return [finding("LAY010", SIG_NAME, f"cannot read: {e.strerror or e}")]
    if not trusted:
        return []
    key = {k.id: k for k in trusted}.get(sig.key_id)
    if key is None:
        return [
            finding(
                "SIG003",
                SIG_NAME,
                f"signed by key {sig.key_id}, which is not trusted ({source}: {', '.join(k.id for k in trusted)})",
            )
        ]
    if SUMS_NAME not in tree_files:
        return [finding("SIG002", SIG_NAME, "SHA256SUMS is missing: the signature covers nothing")]
    try:
        sums = (root / SUMS_NAME).read_bytes()
    except OSError as e:
        return [finding("LAY010", SUMS_NAME, f"cannot read: {e.strerror or e}")]
    if key.verifies(sig.signature, sums):
        return []
    now = hashlib.sha256(sums).hexdigest()
    detail = (
        f" (signed when its sha256 was {sig.sums_sha256[:12]}…, now {now[:12]}…)"
        if sig.sums_sha256 and sig.sums_sha256 != now
        else " (or the signature was not made by this key)"
    )
    return [finding("SIG002", SUMS_NAME, f"the signature by key {key.id} does not verify: SHA256SUMS changed{detail}")]
