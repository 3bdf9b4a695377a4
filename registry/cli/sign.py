"""The handlers of ``keygen``, ``sign`` and ``verify``: arguments in, :mod:`rwkv_registry.store.signing` and
:mod:`rwkv_registry.checks.signatures` called, the outcome printed."""

from __future__ import annotations

import argparse
from pathlib import Path

from rwkv_registry.checks.signatures import check_signatures, read_signature
from rwkv_registry.cli.main import plain_console
from rwkv_registry.core.errors import UsageError
from rwkv_registry.fs.atomic import require_directory
from rwkv_registry.index.sums import SIG_NAME, SUMS_NAME
from rwkv_registry.store.signing import generate_keypair, sign_registry


def cmd_keygen(args: argparse.Namespace) -> int:
    """``rwkv-registry keygen KEY [--comment TEXT]``."""
    key, pub, public = generate_keypair(args.key, comment=args.comment or "")
    plain_console().print(
        f"created {key} (private, mode 0600: keep it secret, outside every registry) and {pub}\n"
        f"key id {public.id}; public key {public.b64}"
    )
    return 0


def cmd_sign(args: argparse.Namespace) -> int:
    """``rwkv-registry sign PATH --key KEY [--trust]``."""
    public = sign_registry(args.path, args.key, trust=bool(getattr(args, "trust", False)))
    plain_console().print(f"signed {SUMS_NAME} with key {public.id}: {Path(args.path) / SIG_NAME}")
    return 0


def cmd_verify(args: argparse.Namespace) -> int:
    """``rwkv-registry verify PATH --pubkey PUB...``: the signature, and SHA256SUMS against the files."""
    from rich.markup import escape

    from rwkv_registry.store.ops import check_sums

    root = Path(args.path)
    require_directory(root)
    for name in (SUMS_NAME, SIG_NAME):
        if (root / name).exists() and not (root / name).is_file():
            raise UsageError(f"{root / name}: not a file", hint=f"{name} must be a plain file; remove what is there.")
    present = {n for n in (SUMS_NAME, SIG_NAME) if (root / n).is_file()}
    findings = check_signatures(root, present, None, list(args.pubkey))
    if not any(f.code in ("SIG001", "SIG003", "SIG004") for f in findings):
        findings += check_sums(root)
    console = plain_console()
    for f in findings:
        console.print(f"{f.severity} {f.code} {escape(f.path)}: {escape(f.message)}")
        console.print(f"        [dim]fix: {escape(f.hint)}[/]")
    errors = [f for f in findings if str(f.severity) == "error"]
    if errors:
        console.print(f"[bold red]FAILED[/] {escape(str(root))}: {len(errors)} error(s)")
        return 1
    sig = read_signature((root / SIG_NAME).read_bytes())
    console.print(
        f"[bold green]OK[/] {escape(str(root))}: good signature by key {sig.key_id}"
        + (f" ({escape(sig.comment)})" if sig.comment else "")
        + "; SHA256SUMS matches every file"
    )
    return 0
