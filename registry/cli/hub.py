"""The handlers of ``push`` and ``pull``: arguments in, :mod:`rwkv_registry.hub` called, its report printed."""

from __future__ import annotations

import argparse
import sys

from rwkv_registry.cli.main import plain_console, print_report
from rwkv_registry.core.errors import UsageError
from rwkv_registry.hub.remote import parse_hf_target
from rwkv_registry.hub.sync import PullInterrupted, pull_registry, push_registry

# push / pull-------------------------------------------------------------------------------------


def cmd_push(args: argparse.Namespace) -> int:
    """``rwkv-registry push PATH --repo OWNER/REPO [--revision main] [--message TEXT]``."""
    return push_registry(args.path, args.repo, revision=args.revision, message=args.message, log=_print).exit_code


def cmd_pull(args: argparse.Namespace) -> int:
    """``rwkv-registry pull OWNER/REPO PATH [--base NAME] [--revision REV] [--pubkey PUB]``: download, check,
    validate."""
    repo, revision = args.repo, args.revision
    if repo.startswith("hf://"):  # the form `validate` takes is accepted here too
        repo, at = parse_hf_target(repo)
        if at and revision and at != revision:
            raise UsageError(f"{args.repo} and --revision {revision} name two revisions", hint="Give one of them.")
        revision = revision or at
    try:
        report = pull_registry(repo, args.path, base=args.base, revision=revision, trusted_keys=args.pubkey, log=_print)
    except PullInterrupted as e:  # where the files downloaded so far are kept, and that the same pull resumes
        sys.stderr.write(e.message + "\n")
        return 130
    print_report(report, plain_console())
    if not report.ok:
        _print(
            f"The files are in {args.path}, but they do not validate: do not use or publish them as they are "
            f"(fix the Hub repository, or delete {args.path})."
        )
    return 0 if report.ok else 1


def _print(message: str) -> None:
    from rich.markup import escape

    plain_console().print(escape(message))
