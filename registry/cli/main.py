"""The ``rwkv-registry`` command line.

Exit codes everywhere: 0 success / no errors, 1 validation errors found or a write refused,
2 usage or I/O error. ``--format json`` prints a report valid against its schema. Commands that
need torch (``smoke``) or textual (``tui``) import them only when they run, so ``validate`` and
the pre-commit hook start fast. ``RWKV_REGISTRY_TRACEBACK=1`` shows the traceback of an
unexpected error.
"""

from __future__ import annotations

import argparse
import importlib
import os
import re
import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from rwkv_registry import __version__
from rwkv_registry.core.errors import RegistryError, UsageError
from rwkv_registry.core.textsafe import printable
from rwkv_registry.index.sampling import DEFAULT_SAMPLING, SAMPLING_PRESETS

Handler = Callable[[argparse.Namespace], int]


class _Parser(argparse.ArgumentParser):
    near: str = ""  # " (did you mean --base for --bsae?)": the mistyped options of the words being parsed

    def error(self, message: str) -> Any:  # argparse's own errors: exit 2 with a clean message
        self.print_usage(sys.stderr)
        if self.near and "did you mean" not in message:
            message += self.near
        sys.stderr.write(f"{self.prog}: error: {message}\n")
        raise SystemExit(2)


def near_flags(parser: argparse.ArgumentParser, words: Sequence[str], *, named: bool = False) -> str:
    """`` (did you mean --base for --bsae?)``: each word of ``words`` that looks like an option ``parser`` does
    not know (nor abbreviates: argparse takes ``--bas`` for ``--base``), with the nearest one it knows (difflib);
    empty when none is close. Words after ``--`` are positionals. ``named``: the message names the word already
    (``unrecognized arguments: --recomended``): one suggestion is ``(did you mean --recommended?)``."""
    import difflib

    flags = [o for a in parser._actions for o in a.option_strings if o.startswith("--")]
    pairs = []
    for w in words:
        if w == "--":
            break
        name = w.split("=", 1)[0]
        if not name.startswith("--") or name in flags or sum(f.startswith(name) for f in flags) == 1:
            continue
        match = difflib.get_close_matches(name, flags, 1)
        if match:
            pairs.append((match[0], name))
    if named and len(pairs) == 1:
        return f" (did you mean {pairs[0][0]}?)"
    return f" (did you mean {', '.join(f'{m} for {n}' for m, n in pairs)}?)" if pairs else ""


def plain_console() -> Any:
    """A rich Console for a handler's own messages (stdout, no highlighting, lines not wrapped); registry text
    in them is escaped by the caller (``rich.markup.escape``)."""
    from rich.console import Console

    return Console(highlight=False, soft_wrap=True)


def _console(stderr: bool = False) -> Any:
    """A rich Console that shows registry text through :func:`~rwkv_registry.core.textsafe.printable` (a render hook):
    no control sequence of a registry reaches the terminal."""
    from rich.console import Console

    from rwkv_registry.core.textsafe import printable_console

    return printable_console(Console(stderr=stderr, highlight=False, soft_wrap=True))


def _say(text: str) -> None:
    """``_console().print(text)``: a write's one line on stdout. Written directly when rich would print it as it is
    (no colour: stdout is no terminal and neither FORCE_COLOR nor TTY_COMPATIBLE is set; no markup "[", nothing of
    :data:`_RICH_ALTERS`), without importing rich (about 20 ms of an ``add`` or ``add-base``); else through rich.
    Control characters (of a name from the registry) are shown escaped
    (:func:`~rwkv_registry.core.textsafe.printable`)."""
    text = printable(text)
    if "[" in text or _RICH_ALTERS.search(text) or "FORCE_COLOR" in os.environ or "TTY_COMPATIBLE" in os.environ:
        _console().print(text)
        return
    try:
        tty = sys.stdout.isatty()
    except (AttributeError, ValueError):
        tty = True
    if tty:
        _console().print(text)
        return
    sys.stdout.write(text + "\n")


def _print_json(data: Any) -> None:
    from rwkv_registry.core.textsafe import json_text

    sys.stdout.write(json_text(data) + "\n")  # exact JSON; what a terminal would obey escaped as \\uXXXX


# --- validate ---------------------------------------------------------------------------------------


# rich's console markup turns these into emoji (":name:"), drops or rewrites control characters and tabs, and
# its escape() treats a backslash before "[" or at the end specially: text holding any of them goes through rich
_RICH_ALTERS = re.compile(r"[\x00-\x1f\x7f-\x9f\\]|:\S*?:")


def plain_report(report: Any) -> str | None:
    """The text :func:`print_report` prints, without importing rich (25-50 ms of a warm `validate`), or None when
    rich's output could differ: stdout is a terminal (colours), FORCE_COLOR or TTY_COMPATIBLE is set (rich would
    colour a pipe or a file), or a line holds what rich's markup alters (:data:`_RICH_ALTERS`). Without colour,
    rich prints each line's text as it is (soft wrap: no wrapping, no padding), which is what this writes
    (tests/test_cli.py compares the two)."""
    if "FORCE_COLOR" in os.environ or "TTY_COMPATIBLE" in os.environ:
        return None
    try:
        if sys.stdout.isatty():
            return None
    except (AttributeError, ValueError):
        return None
    c = report.counts
    st = report.stats
    fetched = f", {st['bytes_fetched']:,} bytes fetched" if st.get("bytes_fetched") is not None else ""
    lines = []
    for f in report.findings:  # registry text shown escaped where it holds control characters (textsafe.printable)
        sev = str(f.severity)
        lines.append(f"{sev:7} {f.code} {printable(f.path)}: {printable(f.message)}")
        lines.append(f"        fix: {printable(f.hint)}")
    lines.append(
        f"{'OK' if report.ok else 'FAILED'} {printable(report.target)}: {c['error']} error(s), "
        f"{c['warning']} warning(s), "
        f"{c['info']} note(s); {st.get('files', 0)} files, {st.get('bytes_hashed', 0) / 1e6:.1f} MB hashed, "
        f"{st.get('cache_hits', 0)} cached{fetched}, {st.get('elapsed_s', 0):.2f} s"
    )
    if any(_RICH_ALTERS.search(line) for line in lines):
        return None
    return "".join(f"{line}\n" for line in lines)


def print_report(report: Any, console: Any = None) -> None:
    """Human output of a validation report, on ``console`` (a rich Console), or on stdout when None: as plain
    text when that is what rich would print (:func:`plain_report`), else through rich."""
    if console is None:
        text = plain_report(report)
        if text is not None:
            sys.stdout.write(text)
            return
        console = _console()
    from rich.markup import escape

    style = {"error": "bold red", "warning": "yellow", "info": "cyan"}
    for f in report.findings:
        sev = str(f.severity)
        path, message, hint = (escape(printable(x)) for x in (f.path, f.message, f.hint))
        console.print(f"[{style[sev]}]{sev:7}[/] {f.code} [bold]{path}[/]: {message}")
        console.print(f"        [dim]fix: {hint}[/]")
    c = report.counts
    st = report.stats
    verdict = "[bold green]OK[/]" if report.ok else "[bold red]FAILED[/]"
    fetched = f", {st['bytes_fetched']:,} bytes fetched" if st.get("bytes_fetched") is not None else ""
    console.print(
        f"{verdict} {escape(printable(report.target))}: {c['error']} error(s), {c['warning']} warning(s), "
        f"{c['info']} note(s); {st.get('files', 0)} files, {st.get('bytes_hashed', 0) / 1e6:.1f} MB hashed, "
        f"{st.get('cache_hits', 0)} cached{fetched}, {st.get('elapsed_s', 0):.2f} s"
    )


def cmd_validate(args: argparse.Namespace) -> int:
    target = args.path
    if args.full and not target.startswith("hf://"):
        raise UsageError(
            f"--full is only for a Hub target (hf://OWNER/REPO); {target} is a local directory",
            hint="A local validate always reads every file in full: drop --full.",
        )
    if args.since is not None and target.startswith("hf://"):
        raise UsageError(
            "--since is for a local git registry, not a Hub target",
            hint="Give a git revision of the registry's repository with a local PATH, or drop --since.",
        )
    if target.startswith("hf://"):
        mod = importlib.import_module("rwkv_registry.hub.commands")
        report = mod.validate_hub(target, full=args.full, trusted_keys=args.pubkey)
    else:
        from rwkv_registry.engine.validate import validate_registry

        report = validate_registry(target, use_cache=not args.no_cache, since=args.since, trusted_keys=args.pubkey)
    if args.format == "json":
        _print_json(report.to_json())
    else:
        print_report(report)
    return 0 if report.ok else 1


# --- write commands ------------------------------------------------------------------------------------


def cmd_init(args: argparse.Namespace) -> int:
    from rwkv_registry.store.ops import init_registry

    files = init_registry(args.path, name=args.name or "", title=args.title)
    _say(f"created registry in {args.path}: {', '.join(files)}")
    for line in init_next_steps(args.path):
        _say(line)
    return 0


def init_next_steps(path: str) -> list[str]:
    """What ``init`` prints after its line: the commands a new registry needs next, in order, with PATH quoted
    as a shell would need it (``git init`` left out where PATH is in a git work tree already)."""
    import shlex
    from pathlib import Path

    q = shlex.quote(path)
    steps = [
        (f"rwkv-registry add-base {q} BASE.pth --source OWNER/REPO", "register the base model"),
        (f"rwkv-registry add {q} FILE --base BASE --data-version V --train train.json", "add a State or MiSS file"),
    ]
    if not _in_git_work_tree(Path(path)):
        steps.append((f"git -C {q} init && git -C {q} lfs install", "weights go through Git LFS"))
    steps += [
        (f"(cd {q} && pre-commit install)", "validate before every commit (docs/precommit.md)"),
        (f"git -C {q} add -A && git -C {q} commit -m 'Publish the registry'", "then publish"),
    ]
    width = max(len(c) for c, _ in steps)
    return ["next steps:", *(f"  {c:{width}}   # {why}" for c, why in steps)]


def _in_git_work_tree(path: Any) -> bool:
    """Whether ``path`` or a directory above it holds ``.git`` (a work tree's; no git is run)."""
    p = path.resolve()
    return any((d / ".git").exists() for d in (p, *p.parents))


def _progress_bar(total: int, label: str) -> tuple[Any, Callable[[int], None]]:
    from rich.progress import BarColumn, DownloadColumn, Progress, TimeRemainingColumn, TransferSpeedColumn

    console = _console(stderr=True)
    progress = Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        TimeRemainingColumn(),
        console=console,
        transient=True,
        disable=not console.is_terminal,  # piped stderr: no bar, and no stray blank line before a message
    )
    task = progress.add_task(label, total=total)
    return progress, lambda n: progress.advance(task, n)


def cmd_add_base(args: argparse.Namespace) -> int:
    from rwkv_registry.core.rules import Finding
    from rwkv_registry.index.arch import parse_arch_option
    from rwkv_registry.store.ops import add_base

    warnings: list[Finding] = []  # what validate will warn of because of the new base, and did not before
    frozen: list[tuple[str, str]] = []  # (base, the newest of its family): the bases the new one froze

    if args.from_hub and args.source:
        raise UsageError(
            "--source is not used with --from-hub: the base's source is the Hub repository named there",
            hint="Drop --source.",
        )
    if not args.from_hub and not args.source:
        raise UsageError(
            "add-base needs --source OWNER/REPO: the repository the base file comes from (recorded in index.json)",
            hint="e.g. --source BlinkDL/rwkv7-g1 for the RWKV-7 G1 bases",
        )
    if args.from_hub:
        mod = importlib.import_module("rwkv_registry.hub.commands")
        base = mod.add_base_from_hub(
            args.path,
            args.from_hub,
            name=args.name,
            vocab=args.vocab,
            freeze_previous=args.freeze_previous,
            family=args.family,
            warnings=warnings,
            frozen=frozen,
        )
        return _print_added_base(base, warnings, frozen)
    common = {
        "name": args.name,
        "source": args.source,
        "vocab": args.vocab,
        "family": args.family,
        "freeze_previous": args.freeze_previous,
        "warnings": warnings,
        "frozen": frozen,
    }
    if args.base_file:
        size = os.path.getsize(args.base_file) if os.path.isfile(args.base_file) else 0
        progress, advance = _progress_bar(size, f"hashing {os.path.basename(args.base_file)}")
        with progress:
            base = add_base(
                args.path, base_file=args.base_file, sha256=args.sha256, size=args.size, progress=advance, **common
            )
    else:
        if not (args.name and args.sha256 and args.arch):
            raise UsageError(
                "give BASE_FILE, or --name, --sha256 and --arch (and --size when known)",
                hint="e.g. add-base REG --name rwkv7-x --sha256 HEX --size 123 "
                "--arch n_layer=32,n_embd=4096,vocab_size=65536 --source BlinkDL/rwkv7-g1",
            )
        base = add_base(args.path, sha256=args.sha256, size=args.size, arch=parse_arch_option(args.arch), **common)
    return _print_added_base(base, warnings, frozen)


def _print_added_base(base: dict[str, Any], warnings: list[Any], frozen: list[tuple[str, str]]) -> int:
    a = base["architecture"]
    _say(
        f"added base {base['name']} ({a['n_layer']} layers × {a['n_embd']}, vocab {a['vocab_size']}, "
        f"sha256 {base['sha256'][:12]}…)"
    )
    for old, newest in frozen:
        _say(f"base {old} is now frozen; new weights go under {newest} (old base directories are never touched)")
    _print_warnings(warnings)
    return 0


def cmd_add(args: argparse.Namespace) -> int:
    from rwkv_registry.core.rules import Finding
    from rwkv_registry.store.ops import add_entry

    displaced: list[str] = []  # the entries --recommended took the mark from
    warnings: list[Finding] = []  # what validate will warn of because of the new entry, and did not before
    notes: list[str] = []  # what add did beyond copying the file (a legacy MiSS package published as one file)
    unchanged: list[dict[str, Any]] = []  # the entry this very add made before (a rerun): nothing written
    entry = add_entry(
        args.path,
        args.file,
        base=args.base,
        data_version=args.data_version,
        train=args.train,
        group=args.group,
        entry_id=args.id,
        recommended=args.recommended,
        profile=args.profile,
        sampling=args.sampling,
        description=args.description or "",
        adapter_id=args.adapter_id,
        displaced=displaced,
        warnings=warnings,
        notes=notes,
        unchanged=unchanged,
    )
    if unchanged:
        _say(
            f"already registered: {entry['method']} entry {entry['id']} at {entry['path']} "
            f"(sha256 {entry['file']['sha256'][:12]}…), with the same values; nothing was written"
        )
        return 0
    for line in notes:
        _say(line)
    _say(f"added {entry['method']} entry {entry['id']} at {entry['path']} (sha256 {entry['file']['sha256'][:12]}…)")
    if displaced:
        _say(f"recommended instead of {', '.join(displaced)} (one recommended entry per base and method)")
    _print_warnings(warnings)
    return 0


def _print_warnings(warnings: list[Any]) -> None:
    """The warnings and notes (info) a write brought (``validate`` reports them from now on), on stderr, after its
    own line."""
    for f in warnings:
        label = "note" if str(f.severity) == "info" else "warning"
        sys.stderr.write(f"{label}: {f.code} {printable(f.path)}: {printable(f.message)}\nhint: {printable(f.hint)}\n")


def cmd_sums(args: argparse.Namespace) -> int:
    from rwkv_registry.store.ops import check_sums, write_sums

    if args.check and args.force:
        raise UsageError("--force is for writing SHA256SUMS; --check only reads", hint="Drop one of them.")
    if args.check:
        from rich.markup import escape

        findings = check_sums(args.path)
        console = _console()
        for f in findings:
            console.print(escape(f"{f.severity} {f.code} {printable(f.path)}: {printable(f.message)}"))
        errors = [f for f in findings if str(f.severity) == "error"]
        console.print("SHA256SUMS: OK" if not errors else f"SHA256SUMS: {len(errors)} error(s)")
        return 1 if errors else 0
    lines = write_sums(args.path, check_index=not args.force).count(b"\n")
    _say(f"SHA256SUMS written ({lines} files)")
    return 0


def cmd_readme(args: argparse.Namespace) -> int:
    from rwkv_registry.store.ops import write_readme

    done = write_readme(args.path, reset=args.reset)
    _say(
        {
            "created": "README.md written from the skeleton, with its generated sections",
            "rebuilt": "README.md rebuilt from the skeleton: the publisher's own text was dropped",
            "updated": "README.md generated sections updated",
            "unchanged": "README.md generated sections were already up to date",
        }[done]
    )
    return 0


def cmd_recover(args: argparse.Namespace) -> int:
    from rwkv_registry.fs.atomic import registry_lock

    with registry_lock(args.path, quiet=True) as messages:
        pass
    _console().print("; ".join(messages) if messages else "nothing to recover")
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from rwkv_registry.engine.validate import validate_registry
    from rwkv_registry.store.demo import build_demo

    console = _console()
    if args.smoke:  # the tiny registry beside PATH may be replaced only when the demo wrote it: checked first
        mod = importlib.import_module("rwkv_registry.model.smoke.demo")
        mod.check_demo_smoke_dirs(mod.smoke_work_dir(args.path))
    root = build_demo(args.path, force=args.force, log=lambda m: console.print(f"[dim]demo:[/] {m}"))
    report: Any = None
    try:  # Ctrl-C from here on: the demo registry is complete (main's message would say it is not)
        report = validate_registry(root)
        print_report(report, console)
        code = mod.run_demo_smoke(root, console=console) if args.smoke else 0
    except KeyboardInterrupt as e:
        sys.stderr.write(_demo_interrupted(args.path, report, getattr(e, "what", None)) + "\n")
        return 130
    return max(code, 0 if report.ok else 1)


def _demo_interrupted(path: str, report: Any, smoke: str | None) -> str:
    """Ctrl-C once the demo registry is written: it is complete; ``smoke`` says what the smoke part left."""
    done = f"interrupted: the demo registry in {path} is complete"
    if report is None:
        return f"{done} (it was being validated: `rwkv-registry validate {path}`)"
    done += " and valid" if report.ok else " and has the errors shown above"
    return f"{done}; the smoke demo was not finished: {smoke}" if smoke else done


def cmd_rules(args: argparse.Namespace) -> int:
    from rwkv_registry.checks.catalogue import RULES, rules_markdown

    if args.where:  # where each rule is checked and tested: rwkv_registry.cli.rules
        from rwkv_registry.cli import rules as where

        if args.markdown:
            raise UsageError(
                "--where and --markdown do not combine",
                hint="Give --where CODE for one rule, or --markdown for the whole catalogue.",
            )
        found = where.where(args.where)
        if args.format == "json":
            _print_json([item.to_json() for item in found])
        else:
            sys.stdout.write(where.render_where(found))
    elif args.markdown:
        sys.stdout.write(rules_markdown())
    elif args.format == "json":
        _print_json(
            [{"code": r.code, "severity": str(r.severity), "title": r.title, "hint": r.hint} for r in RULES.values()]
        )
    else:
        for r in RULES.values():
            print(f"{r.code}  {r.severity:7}  {r.title}")
    return 0


# --- commands implemented outside the core (imported only when they run) -------------------------------


def _lazy(target: str, precheck: Handler | None = None) -> Handler:
    """A handler that imports ``module:func`` only when it runs, after ``precheck`` (if any)."""

    def run(args: argparse.Namespace) -> int:
        if precheck is not None:
            precheck(args)
        module, _, func = target.partition(":")
        return int(getattr(importlib.import_module(module), func)(args))

    return run


def _require_index(args: argparse.Namespace) -> int:
    """``list`` / ``show``: the path must be a registry (named in the message, with the fix)."""
    from rwkv_registry.fs.atomic import require_registry

    require_registry(args.path, strict=True)
    return 0


def _require_directory(args: argparse.Namespace) -> int:
    """``tui``: the path must be a directory that can be read (named in the message, with the fix), checked
    before textual is imported."""
    from pathlib import Path

    from rwkv_registry.fs.atomic import require_directory

    require_directory(Path(args.path))
    return 0


# --think-tokens: the thinking pass decodes up to this many tokens for every case, twice (determinism), with the entry
# and with the base alone (200 passes for the 50 default cases), so it bounds the smoke run's time; 4096 is 16 times
# the default and far inside the 25,600-token context the g1k bases are trained for
MAX_THINK_TOKENS = 4096


def check_think_tokens(n: int) -> None:
    """Refuse a ``--think-tokens`` outside 1…:data:`MAX_THINK_TOKENS` (a usage error, exit 2)."""
    if not 1 <= n <= MAX_THINK_TOKENS:
        raise UsageError(
            f"--think-tokens {n}: give a number of tokens from 1 to {MAX_THINK_TOKENS}",
            hint=f"The thinking pass decodes up to N tokens for every case, twice, with the entry and with the base "
            f"alone, so N bounds the smoke run's time; the default is 256, and {MAX_THINK_TOKENS} is far more than a "
            "smoke test needs.",
        )


def _smoke_precheck(args: argparse.Namespace) -> int:
    """What ``smoke`` can refuse before torch is imported and anything is evaluated: the registry
    and the entry, the base file, the case file, and (``--record``) that the record can be written.
    A toy base (narrower than any released RWKV-7) without ``--cases`` gets the tiny case set."""
    import importlib.util
    from pathlib import Path

    from rwkv_registry.catalog.entries import check_base_path, find_entry
    from rwkv_registry.core.errors import RegistryIOError
    from rwkv_registry.fs.atomic import TMP_PREFIX, registry_lock, require_registry

    if importlib.util.find_spec("torch") is None:  # what to install comes first (main() words it)
        raise ModuleNotFoundError("No module named 'torch'", name="torch")
    check_think_tokens(args.think_tokens)
    root = require_registry(args.path, strict=True)
    _, base = find_entry(root, args.entry_id)
    base_file = Path(args.base_file)
    check_base_path(base_file, base)
    if args.record:
        try:
            with registry_lock(root):
                probe = root / f"{TMP_PREFIX}probe-{os.getpid()}"
                probe.open("xb").close()
                probe.unlink()
        except (RegistryIOError, OSError) as e:
            message = e.message if isinstance(e, RegistryIOError) else f"cannot write in {root}: {e.strerror or e}"
            hint = e.hint if isinstance(e, RegistryIOError) and e.hint else f"Make {root} writable."
            raise RegistryIOError(
                f"--record: {message}; nothing was evaluated",
                hint=f"{hint} Or run without --record.",
                path=str(root),
            ) from e
    from rwkv_registry.index import smoke_cases as cases

    if args.cases is None and cases.is_toy_base(base):
        args.cases = str(cases.builtin_path(cases.TINY_CASES))
        from rich.markup import escape

        arch = base.get("architecture") or {}
        _console(stderr=True).print(
            f"[dim]note:[/] base {escape(base['name'])} is a toy model (width {arch.get('n_embd')}): using the "
            f"built-in tiny case set {cases.TINY_CASES} (the built-in tool-calling cases need a released RWKV-7 base); "
            "--cases FILE chooses another"
        )
    if args.cases is not None:
        cases.load_cases(args.cases)  # every problem named with its line, before torch is imported
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="rwkv-registry", description="Keep a repository of RWKV-7 State and MiSS weights honest.")
    p.add_argument("--version", action="version", version=f"rwkv-registry {__version__}")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)

    def cmd(name: str, handler: Handler, help_: str) -> argparse.ArgumentParser:
        sp = sub.add_parser(name, help=help_, description=help_)
        sp.set_defaults(handler=handler)
        return sp

    fmt: dict[str, Any] = {"choices": ["text", "json"], "default": "text", "help": "output format (default text)"}

    sp = cmd("validate", cmd_validate, "check every rule on a registry (a directory or hf://OWNER/REPO[@REV])")
    sp.add_argument("path", nargs="?", default=".", help="registry root (default: current directory)")
    sp.add_argument("--format", **fmt)
    sp.add_argument("--no-cache", action="store_true", help="hash every file, ignore the cache")
    sp.add_argument("--since", metavar="REV", help="git baseline for immutability (default HEAD)")
    sp.add_argument("--full", action="store_true", help="hf://: also download MiSS files for content_version")
    sp.add_argument("--pubkey", action="append", metavar="PUB", help="trusted Ed25519 public key file (repeatable)")

    sp = cmd("init", cmd_init, "create a new registry")
    sp.add_argument("path")
    sp.add_argument("--name", help="repository name, e.g. OWNER/REPO")
    sp.add_argument("--title", default="RWKV-7 weights", help="the README's heading (default: %(default)s)")

    sp = cmd("add-base", cmd_add_base, "register a base model (from its file, from metadata, or from the Hub)")
    sp.add_argument("path")
    sp.add_argument("base_file", nargs="?", help="the base .pth (hashed; architecture read from its headers)")
    sp.add_argument(
        "--source",
        metavar="OWNER/REPO",
        help="the repository the base comes from, e.g. BlinkDL/rwkv7-g1 (required, except with --from-hub)",
    )
    sp.add_argument(
        "--from-hub",
        metavar="OWNER/REPO[@REV]/FILE",
        help="read sha256, size and architecture from the Hub (at revision REV; default: the default branch)",
    )
    sp.add_argument(
        "--vocab", default="rwkv_vocab_v20230424.txt", help="the tokenizer's vocabulary file (default: %(default)s)"
    )
    sp.add_argument("--name", help="directory name: the base file name without .pth (needed only without BASE_FILE)")
    sp.add_argument("--family", help="the base's family (default: the name up to its date)")
    sp.add_argument("--sha256", help="without BASE_FILE: the base's sha256")
    sp.add_argument("--size", type=int, help="without BASE_FILE: the base's size in bytes, when known")
    sp.add_argument("--arch", help="without BASE_FILE: n_layer=…,n_embd=…,vocab_size=…[,ffn_size=…,lora_decay=…]")
    sp.add_argument(
        "--keep-previous-active",
        dest="freeze_previous",
        action="store_false",
        help="leave older bases of the same family active (by default they are marked frozen: old base "
        "directories are never touched)",
    )
    sp.add_argument("--freeze-previous", action="store_true", help=argparse.SUPPRESS)  # the default; kept for scripts

    sp = cmd("add", cmd_add, "register a State or MiSS file under a base")
    sp.add_argument("path", help="registry root")
    sp.add_argument(
        "file",
        help="the State (.pth or .safetensors) or MiSS adapter (.pth) to add; or a legacy MiSS folder "
        "(adapter.json + adapter.pth), published as one adapter-final.pth",
    )
    sp.add_argument("--base", required=True, metavar="NAME", help="the base it was trained on (its directory name)")
    sp.add_argument("--data-version", required=True, help="e.g. v1.41")
    sp.add_argument(
        "--train", required=True, metavar="TRAIN_JSON", help="the run's train.json (schemas/train.schema.json)"
    )
    sp.add_argument("--group", help="MiSS run sub-folder, e.g. r16-lr2e-5-e2")
    sp.add_argument("--id", help="entry id (default: file stem for State, <version>-<group> for MiSS)")
    sp.add_argument("--adapter-id", help="MiSS only: adapter id used with rwkv-cli (default: the entry id)")
    sp.add_argument(
        "--recommended", action="store_true", help="the recommended entry of its base and method (takes the mark)"
    )
    sp.add_argument(
        "--profile", choices=["g1k", "g1k-think"], help="prompt profile (default: g1k for a State, g1k-think for MiSS)"
    )
    sp.add_argument(
        "--sampling",
        default=DEFAULT_SAMPLING,
        metavar="PRESET",
        help=f"sampling preset of RWKV-Agent's presets.go: {', '.join(SAMPLING_PRESETS)} (docs/profiles.md; "
        "default: %(default)s)",
    )
    sp.add_argument("--description", help="one line for the README table")

    sp = cmd("sums", cmd_sums, "write (or --check) SHA256SUMS")
    sp.add_argument("path")
    sp.add_argument("--check", action="store_true", help="only check SHA256SUMS against the files")
    sp.add_argument(
        "--force",
        action="store_true",
        help="write even when index.json cannot be read or breaks its schema, or a registered file differs from it",
    )

    sp = cmd("readme", cmd_readme, "regenerate README.md's generated sections")
    sp.add_argument("path")
    sp.add_argument(
        "--reset",
        action="store_true",
        help="rebuild README.md from the skeleton: the publisher's own text is dropped (back it up first)",
    )

    sp = cmd("recover", cmd_recover, "finish or undo an interrupted write")
    sp.add_argument("path")

    sp = cmd("demo", cmd_demo, "build and validate a registry that mirrors the seed repository")
    sp.add_argument("path")
    sp.add_argument(
        "--force",
        action="store_true",
        help="replace an earlier demo in PATH (never a git repository, nor one holding files the demo did not write)",
    )
    sp.add_argument("--smoke", action="store_true", help="also run the CPU smoke evaluation of tiny weights")

    # commands implemented outside the core module set: imported only when they run
    sp = cmd("list", _lazy("rwkv_registry.cli.catalog:cmd_list", _require_index), "list the entries of a registry")
    sp.add_argument("path", nargs="?", default=".")
    sp.add_argument(
        "--filter",
        metavar="QUERY",
        help="keep only the entries that match, as in the TUI's filter box: words, method:miss, base:NAME, "
        "data:v2.1, is:rec|frozen|active, is:error|warning|ok (these validate first)",
    )
    sp.add_argument("--format", **fmt)

    sp = cmd(
        "show",
        _lazy("rwkv_registry.cli.catalog:cmd_show", _require_index),
        "show one entry (or base, or weight never uploaded, or without an id the registry itself) in detail",
    )
    sp.add_argument(
        "entry_id",
        nargs="?",
        default=None,
        help="an entry id or its file's path, a base name, or an unpublished weight's id; "
        "none: the registry itself (training data, inference server, licence, bases, links)",
    )
    sp.add_argument("--path", default=".", help="registry root (default: current directory)")
    sp.add_argument("--format", **fmt)

    sp = cmd("tui", _lazy("rwkv_registry.tui.app:cmd_tui", _require_directory), "browse the registry in a terminal UI")
    sp.formatter_class = argparse.RawDescriptionHelpFormatter
    sp.add_argument("path", nargs="?", default=".")

    sp = cmd(
        "smoke",
        _lazy("rwkv_registry.model.smoke.cli:cmd_smoke", _smoke_precheck),
        "quick smoke evaluation of an entry on its base (GPU, or CPU for tiny models)",
    )
    sp.formatter_class = argparse.RawDescriptionHelpFormatter
    sp.add_argument("path", help="registry root")
    sp.add_argument("entry_id")
    sp.add_argument(
        "--base-file", required=True, metavar="BASE.pth", help="the base model file the entry was trained on"
    )
    sp.add_argument(
        "--device",
        choices=["auto", "cuda", "cpu"],
        default="auto",
        help="auto: CUDA when present (default: %(default)s)",
    )
    sp.add_argument(
        "--cases",
        metavar="FILE.jsonl",
        help="case set (default: the built-in tool-calling set; the built-in tiny set for a toy base)",
    )
    sp.add_argument("--record", action="store_true", help="append a smoke record to the entry in index.json")
    sp.add_argument(
        "--think-tokens",
        type=int,
        default=256,
        metavar="N",
        help=f"thinking budget of g1k-think, 1 to {MAX_THINK_TOKENS} (default: %(default)s)",
    )
    sp.add_argument(
        "--max-cpu-minutes",
        type=float,
        metavar="M",
        help="on the CPU, refuse a run estimated to take longer than M minutes (a note is printed beyond 5)",
    )
    sp.add_argument("--format", **fmt)

    sp = cmd(
        "compare",
        _lazy("rwkv_registry.cli.compare:cmd_compare"),
        "per-question comparison of two result files (exact McNemar test)",
    )
    sp.add_argument(
        "a",
        metavar="A.json",
        help='the baseline: a result file ({"format": "rwkv-registry-results/1", "results": [{"id", "score", '
        '"category"}, ...]}) or a `smoke --format json` report',
    )
    sp.add_argument("b", metavar="B.json", help="the candidate, in either form; wins and losses are B's")
    sp.add_argument("--format", **fmt)

    sp = cmd(
        "score",
        _lazy("rwkv_registry.cli.score:cmd_score"),
        "record a benchmark result of an entry, a base alone or a weight never uploaded",
    )
    sp.formatter_class = argparse.RawDescriptionHelpFormatter  # the example stays one line
    sp.epilog = (
        "The score goes to index.json, the README's tables and SHA256SUMS in one atomic\n"
        "write. Figures that validate would find inconsistent (IDX008, IDX009, IDX013,\n"
        "IDX014, IDX017, IDX020) are refused and nothing is written (docs/scores.md).\n\n"
        "The example is seed 000's MiSS v2.1 r16 lr2e-5, two runs averaged, against v2.0."
    )
    sp.add_argument("path", help="registry root")
    sp.add_argument(
        "target",
        metavar="TARGET",
        help="an entry id (or its file's path), a base name (the base alone) or an unpublished weight's id",
    )
    g = sp.add_argument_group("the run")
    g.add_argument("--benchmark", metavar="NAME", help="e.g. exam (default: the result file's)")
    g.add_argument("--date", metavar="YYYY-MM-DD", help="the day it was run (default: the result file's)")
    g.add_argument("--backend", metavar="TEXT", help="harness and inference backend it was measured with")
    g.add_argument("--report", metavar="PATH|URL", help="where the full report lives")
    g.add_argument("--note", metavar="TEXT", help="a remark for the README's table")
    g.add_argument(
        "--content-version",
        metavar="HEX",
        help="MiSS: the content_version the server answered when the adapter was registered for the run",
    )
    g = sp.add_argument_group("the result: per-question files, or figures")
    g.add_argument(
        "--results",
        action="append",
        metavar="FILE",
        help="per-question results (the format `compare` reads); one file per run, averaged (repeatable)",
    )
    g.add_argument("--score", metavar="X", help="the headline (default: computed; a percentage to 1 decimal)")
    g.add_argument("--unit", choices=["percent", "points"], default="percent", help="(default: %(default)s)")
    g.add_argument("--solved", metavar="N", help="questions solved (a mean over runs may be fractional: 296.5)")
    g.add_argument("--total", type=int, metavar="N", help="questions asked")
    g.add_argument("--runs", type=int, metavar="N", help="how many runs were averaged")
    g.add_argument("--run-scores", metavar="X,Y,…", help="each run's headline, in run order")
    g.add_argument("--category", action="append", metavar="NAME=SOLVED/TOTAL", help="a category's result (repeatable)")
    g = sp.add_argument_group("paired comparison (the exact McNemar test of `compare`)")
    g.add_argument("--against", metavar="ID", help="the entry, unpublished weight or base compared with")
    g.add_argument(
        "--against-results",
        action="append",
        metavar="FILE",
        help="its per-question results of the same run, one file per run (repeatable); needs --results",
    )
    g.add_argument("--wins", type=int, metavar="N", help="without files: questions only this weight solved")
    g.add_argument("--losses", type=int, metavar="N", help="without files: questions only the other one solved")
    g.add_argument("--p-value", metavar="P", help="as reported (default: the exact test's, to 3 digits)")
    sp.add_argument("--replace", action="store_true", help="replace the score of the same benchmark, date and backend")
    g = sp.add_argument_group("a weight never uploaded")
    g.add_argument("--new-unpublished", action="store_true", help="create TARGET as an unpublished weight")
    g.add_argument("--base", metavar="NAME", help="the base it was trained on")
    g.add_argument("--method", choices=["state", "miss"], help="how it was trained")
    g.add_argument("--data-version", metavar="V", help="its training data's version, e.g. v2.0")
    g.add_argument("--description", metavar="TEXT", help="one line for the README")

    sp = cmd("keygen", _lazy("rwkv_registry.cli.sign:cmd_keygen"), "create an Ed25519 signing key pair")
    sp.add_argument("key", metavar="KEY", help="private key file to create (mode 0600); KEY.pub beside it")
    sp.add_argument("--comment", default="", help="a note written after the key in KEY.pub")

    sp = cmd("sign", _lazy("rwkv_registry.cli.sign:cmd_sign"), "sign SHA256SUMS (writes SHA256SUMS.sig)")
    sp.add_argument("path")
    sp.add_argument("--key", required=True, metavar="KEY", help="the private key file made by `keygen`")
    sp.add_argument("--trust", action="store_true", help="first add the key to index.json signing.trusted_keys")

    sp = cmd("verify", _lazy("rwkv_registry.cli.sign:cmd_verify"), "verify SHA256SUMS.sig")
    sp.add_argument("path")
    sp.add_argument(
        "--pubkey", action="append", required=True, metavar="PUB", help="Ed25519 public key file (repeatable)"
    )

    sp = cmd(
        "push", _lazy("rwkv_registry.cli.hub:cmd_push"), "upload changed files to the Hub behind a validation gate"
    )
    sp.add_argument("path")
    sp.add_argument("--repo", required=True, metavar="OWNER/REPO", help="the Hub repository to commit to")
    sp.add_argument("--revision", default="main", help="the branch to commit to (default: %(default)s)")
    sp.add_argument("--message", default=None, help="the commit message (default: a summary of the changes)")

    sp = cmd("pull", _lazy("rwkv_registry.cli.hub:cmd_pull"), "download a Hub registry (or one base) and validate it")
    sp.add_argument("repo", metavar="OWNER/REPO")
    sp.add_argument("path")
    sp.add_argument("--base", metavar="NAME", help="the small files plus only this base's weights")
    sp.add_argument(
        "--pubkey",
        action="append",
        metavar="PUB",
        help="trusted Ed25519 public key file (repeatable): SHA256SUMS.sig must verify under it, or nothing is kept",
    )
    sp.add_argument(
        "--revision",
        default=None,
        help="branch, tag or commit (default: the default branch; or give hf://OWNER/REPO@REV)",
    )

    sp = cmd("rules", cmd_rules, "list the validation rules")
    form = sp.add_mutually_exclusive_group()
    form.add_argument("--markdown", action="store_true", help="print docs/rules.md")
    form.add_argument("--format", **fmt)
    sp.add_argument(
        "--where",
        action="extend",
        nargs="+",
        metavar="CODE",
        help="where rule CODE is checked (modules, lines) and tested (any case; several codes allowed)",
    )
    for name, sp in sub.choices.items():
        _path_option(sp)
        sp.formatter_class = argparse.RawDescriptionHelpFormatter  # the example stays one line
        sp.epilog = f"{sp.epilog}\n\n" if sp.epilog else ""
        sp.epilog += f"example: {EXAMPLES[name]}"
    return p


BASE = "rwkv7-g1k-7.2b-20260930-ctx25600"  # the base of seed 000, in the examples
# One example per command, the last line of its --help (and in docs/commands.md); words after four spaces and "(" are
# a remark, not part of the command line
EXAMPLES = {
    "validate": "rwkv-registry validate .    (or hf://OWNER/REPO; --format json for a machine-readable report)",
    "init": "rwkv-registry init my-weights --name OWNER/my-weights",
    "add-base": f"rwkv-registry add-base . {BASE}.pth --source BlinkDL/rwkv7-g1",
    "add": f"rwkv-registry add . v141b-s1224.pth --base {BASE} --data-version v1.41 --train train.json --recommended",
    "sums": "rwkv-registry sums . --check",
    "readme": "rwkv-registry readme .",
    "recover": "rwkv-registry recover .",
    "demo": "rwkv-registry demo demo-registry",
    "list": "rwkv-registry list . --filter method:miss",
    "show": "rwkv-registry show v141b-s1224 --path .",
    "tui": "rwkv-registry tui .    (/ filters, escape goes back to the tree, q quits)",
    "smoke": f"rwkv-registry smoke . v141b-s1224 --base-file {BASE}.pth --record",
    "compare": "rwkv-registry compare v20-r16-lr3e-5.json v21-lr2e-5-e2.json",
    "score": "rwkv-registry score . v21-lr2e-5-e2 --benchmark exam --date 2026-10-17 --solved 296.5 --total 568 "
    '--score 52.2 --runs 2 --backend "App harness; inference backend of 2026-10-17" --against v20-r16-lr3e-5 '
    "--wins 95 --losses 54 --p-value 0.001 --report docs/evaluations/exam-v21-20261017",
    "keygen": "rwkv-registry keygen release.key --comment 'release signing key'",
    "sign": "rwkv-registry sign . --key release.key --trust",
    "verify": "rwkv-registry verify . --pubkey release.key.pub",
    "push": "rwkv-registry push . --repo OWNER/rwkv-agent-weights",
    "pull": f"rwkv-registry pull No-22/rwkv-agent-weights weights --base {BASE}",
    "rules": "rwkv-registry rules --markdown",
}


def example_command(name: str) -> str:
    """The command line of ``name``'s example, without its remark."""
    return EXAMPLES[name].split("    (")[0]


def _synopsis(name: str, sp: argparse.ArgumentParser) -> str:
    """``rwkv-registry add PATH FILE --base NAME … [options]``: the positionals, the required options, and
    ``[options]`` when there are others (written here, not argparse's usage, whose wrapping differs by width and
    Python version)."""
    words = [f"rwkv-registry {name}"]
    optional = False
    for a in sp._actions:
        if a.dest in ("help", "path_flag") or a.help == argparse.SUPPRESS:
            continue
        meta = a.metavar if isinstance(a.metavar, str) else a.dest.upper()
        if not a.option_strings:
            required = a.nargs is None or (a.dest == "path" and sp.get_default("path_required"))
            words.append(meta if required else f"[{meta}]")
        elif a.required:
            words.append(f"{a.option_strings[-1]} {meta}" if a.nargs != 0 else a.option_strings[-1])
        else:
            optional = True
    return " ".join(words + (["[options]"] if optional else []))


def commands_markdown() -> str:
    """docs/commands.md: one section per command, with its synopsis, options and example, from the parser."""
    p = build_parser()
    sub = next(a for a in p._actions if isinstance(a, argparse._SubParsersAction))
    out = [
        "# Commands",
        "",
        "Generated from the command line's parser (`registry/cli/main.py`: `commands_markdown`); do not edit by hand.",
        "Every command that takes a registry root takes it as `PATH` or as `--path PATH` (`show`: `--path` only);",
        "`rwkv-registry COMMAND --help` prints the same. Exit codes: 0 success, 1 validation errors found or a write",
        "refused, 2 usage or I/O error. The pre-commit hook `init` writes is described in docs/precommit.md.",
        "",
    ]
    for name, sp in sub.choices.items():
        about = str(sp.description)
        out += [f"## {name}", "", f"{about[:1].upper()}{about[1:]}.", "", "```", _synopsis(name, sp), "```", ""]
        formatter = argparse.HelpFormatter(sp.prog)
        for a in sp._actions:
            if a.dest == "help" or a.help == argparse.SUPPRESS:
                continue
            if a.option_strings:
                meta = a.metavar if isinstance(a.metavar, str) else a.dest.upper()
                flag = ", ".join(a.option_strings) + (f" {meta}" if a.nargs != 0 else "")
            else:
                flag = a.metavar if isinstance(a.metavar, str) else a.dest.upper()
            text = formatter._expand_help(a) if a.help else ""
            if a.choices and a.option_strings:
                text += f" (one of: {', '.join(map(str, a.choices))})"
            out.append(f"- `{flag}`" + (f": {text}" if text else ""))
        out += ["", "Example:", "", "```sh", EXAMPLES[name], "```", ""]
    return "\n".join(out).rstrip("\n") + "\n"


def _path_option(sp: argparse.ArgumentParser) -> None:
    """Give a command whose positional PATH is the registry root a ``--path PATH`` as well (``show`` has only the
    option). The positional becomes optional for argparse; :func:`parse_command_line` requires one of the two."""
    for action in sp._actions:
        if action.dest == "path" and not action.option_strings:
            action.nargs, action.required = "?", False
            action.metavar = "PATH"
            action.help = action.help or "registry root"
            if action.default is None:  # a required PATH: "required" is checked once --path is known too
                sp.set_defaults(path_required=True)
            sp.set_defaults(path_default=action.default)
            action.default = None
            sp.add_argument(
                "--path", dest="path_flag", metavar="PATH", help="the registry root, as the positional PATH"
            )
            return


def _command_word(words: list[str]) -> int | None:
    """The index of the subcommand in ``words``: the first word not an option, if only the top level's own
    options (--help, --version) stand before it."""
    for i, w in enumerate(words):
        if not w.startswith("-"):
            return i
        if w not in ("-h", "--help", "--version"):
            return None
    return None


def parse_command_line(
    parser: argparse.ArgumentParser, argv: Sequence[str] | None = None
) -> tuple[argparse.Namespace, list[str]]:
    """``parser.parse_known_args(argv)``, with the subcommand's arguments parsed intermixed (options and positionals
    in any order, PATH optional when ``--path`` gives it), then PATH and ``--path`` reconciled: one of them is
    needed (where PATH has no default), and both may be given only when they name the same directory."""
    words = list(sys.argv[1:] if argv is None else argv)
    i = _command_word(words)
    sub = None
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) and i is not None:
            sub = action.choices.get(words[i])
    if sub is None or i is None:
        return parser.parse_known_args(words)
    rest = words[i + 1 :]
    if isinstance(sub, _Parser):
        sub.near = near_flags(sub, rest)  # said with any error of the command's parser ("required: --base")
    # intermixed parsing drops the "--" that makes the words after it positionals (`validate -- -reg`): read as
    # argparse always does then
    args, extra = sub.parse_known_args(rest) if "--" in rest else sub.parse_known_intermixed_args(rest)
    args.command = words[i]
    if hasattr(args, "path_flag"):
        _reconcile_path(sub, args)
    return args, extra


def _same_path(a: str, b: str) -> bool:
    return os.path.normpath(os.path.abspath(a)) == os.path.normpath(os.path.abspath(b))


def _reconcile_path(sub: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Set ``args.path`` from the positional PATH or ``--path``: the positionals after PATH move one place on when
    ``--path`` gave it and PATH took the next one's value (``add-base --path REG BASE.pth``); a PATH and a
    ``--path`` that differ are a usage error."""
    flag = args.path_flag
    del args.path_flag
    required = getattr(args, "path_required", False)
    default = getattr(args, "path_default", None)
    for name in ("path_required", "path_default"):
        if hasattr(args, name):
            delattr(args, name)
    if flag is None:
        if args.path is None:
            if required:
                sub.error("the following arguments are required: PATH (or --path PATH)")
            args.path = default
        return
    if args.path is None:
        args.path = flag
        return
    if _same_path(args.path, flag):
        return
    dests = [a.dest for a in sub._actions if not a.option_strings and a.dest != "help"]
    after = dests[dests.index("path") + 1 :]
    if after and getattr(args, after[-1]) is None:  # PATH took the value of the positional after it
        values = [args.path, *(getattr(args, d) for d in after[:-1])]
        for d, v in zip(after, values, strict=True):
            setattr(args, d, v)
        args.path = flag
        return
    sub.error(f"two registry roots, PATH {args.path} and --path {flag}: give it once, as PATH or as --path PATH")


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args, extra = parse_command_line(parser, argv)
        if extra:
            _unrecognized(parser, args, extra)
    except SystemExit as e:
        if e.code == 2:  # a file or directory whose name starts with '-' reads as an option
            words = list(sys.argv[1:] if argv is None else argv)
            words = words[: words.index("--")] if "--" in words else words
            for w in words:
                if w.startswith("-") and w != "-" and os.path.lexists(w):
                    sys.stderr.write(f"hint: {w} is a path here: write ./{w}, or put -- before it\n")
                    break
        raise
    try:
        _refuse_empty_paths(args)
        return int(args.handler(args))
    except RegistryError as e:
        console = _console(stderr=True)
        from rich.markup import escape

        # the file the error is about, where the message does not name it already (`index.json: base … twice`)
        message = f"{e.path}: {e.message}" if e.path and e.path not in e.message else e.message
        console.print(f"[bold red]error:[/] {escape(printable(message))}")
        if e.hint:
            console.print(f"[dim]hint:[/] {escape(printable(e.hint))}")
        return e.exit_code
    except ModuleNotFoundError as e:
        missing_extra = _OPTIONAL_EXTRAS.get((e.name or "").partition(".")[0])
        if missing_extra is None:
            return _unexpected(e)
        sys.stderr.write(
            f"error: `rwkv-registry {args.command}` needs {e.name!r}, which is not installed\n"
            f"hint: install the optional part: pip install 'rwkv-registry[{missing_extra}]' (or '[all]')\n"
        )
        return 2
    except KeyboardInterrupt:
        sys.stderr.write(_interrupted_message(args) + "\n")
        return 130
    except BrokenPipeError:
        return 0
    except Exception as e:  # never a traceback for users unless asked
        return _unexpected(e)


# The arguments that name a file or directory. An empty one (`"$DIR"` with DIR unset) is no path: pathlib reads it as
# the current directory, where `init` or `demo --force` would then write (or replace) files.
_PATH_ARGS = ("path", "base_file", "file", "train", "cases", "key", "a", "b")


def _refuse_empty_paths(args: argparse.Namespace) -> None:
    """Refuse an empty path argument (a usage error, exit 2) before the command runs."""
    for name in _PATH_ARGS:
        if getattr(args, name, None) == "":
            flag = {
                "path": "--path" if args.command == "show" else "PATH",
                "base_file": "--base-file",
                "file": "FILE",
                "train": "--train",
                "cases": "--cases",
                "key": "--key" if args.command == "sign" else "KEY",
                "a": "A.json",
                "b": "B.json",
            }[name]
            raise UsageError(
                f"{flag}: an empty path (an unset shell variable?)",
                hint="Give the file or directory; write . for the current directory.",
            )


def _unrecognized(parser: argparse.ArgumentParser, args: argparse.Namespace, extra: list[str]) -> NoReturn:
    """argparse's "unrecognized arguments", from the command's own parser (its usage, not the top
    level's) and with the nearest flag of that command when one is close (``--recomended``)."""
    sub = parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            sub = action.choices.get(getattr(args, "command", ""), parser)
    sub.error(f"unrecognized arguments: {' '.join(extra)}" + near_flags(sub, extra, named=True))


# What a command that was interrupted after its write was committed has done (Ctrl-C is held back
# during a commit, so a write is either rolled back or complete).
_COMMITTED = {
    "init": "the registry was created",
    "add-base": "the base is registered",
    "add": "the entry is registered",
    "sums": "SHA256SUMS was written",
    "readme": "README.md was updated",
    "smoke": "the smoke record was appended to index.json",
    "score": "the score is recorded",
}
_WRITERS = {*_COMMITTED, "sign", "demo"}


def _interrupted_message(args: argparse.Namespace) -> str:
    atomic = sys.modules.get("rwkv_registry.fs.atomic")
    done = atomic.committed_count() if atomic is not None else 0
    command = getattr(args, "command", "")
    if not done:
        return "interrupted: nothing was written" if command in _WRITERS else "interrupted"
    if command == "demo":
        return (
            f"interrupted after {done} write(s): the demo registry in {args.path} is incomplete; remove it, or run "
            f"`rwkv-registry demo {args.path} --force{' --smoke' if getattr(args, 'smoke', False) else ''}` "
            "to build it again"
        )
    if command in _COMMITTED and done == 1:
        return f"interrupted after the write was committed: {_COMMITTED[command]}"
    return (
        f"interrupted after {done} write(s) to the registry were committed, each complete "
        "(`rwkv-registry validate` shows the registry's state)"
    )


# Third-party modules of the optional parts: the core (validate, add, ...) needs none of them.
_OPTIONAL_EXTRAS = {"torch": "smoke", "rwkv": "smoke", "triton": "smoke", "textual": "tui", "huggingface_hub": "hub"}


def _unexpected(e: Exception) -> int:
    if os.environ.get("RWKV_REGISTRY_TRACEBACK"):
        raise e
    sys.stderr.write(
        f"error: unexpected {type(e).__name__}: {e}\n"
        "hint: this is a bug in rwkv-registry; rerun with RWKV_REGISTRY_TRACEBACK=1 and report it.\n"
    )
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
