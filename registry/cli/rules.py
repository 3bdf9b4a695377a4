"""``rwkv-registry rules --where CODE``: where a rule is checked and where it is tested.

The package's own source files (found beside this module, under the directory of ``rwkv_registry``'s
``__init__.py``) are read with :mod:`ast`, never imported: every string constant equal to a rule code is a place
the rule is checked (``finding("MIS003", ...)``, ``Finding("MIS003", ...)``, a code in a dict, a tuple or a
conditional expression alike), except the rule's definition, ``Rule("MIS003", ...)`` in its family's module
(``checks/<family>.py``), which is shown first. In a source checkout (a
``tests/`` directory and ``pyproject.toml`` beside the package directory) the test files that mention the code
are listed too.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from rwkv_registry.checks.catalogue import RULES
from rwkv_registry.core.errors import UsageError
from rwkv_registry.core.rules import Rule

# the directory of the package rwkv_registry (registry/ in a source checkout): this module is rwkv_registry.cli.rules
PACKAGE_DIR = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Place:
    """A module of the package that checks a rule: its path as shown (``registry/checks/miss.py``) and the lines
    where the code appears as a string constant."""

    path: str
    lines: tuple[int, ...]


@dataclass(frozen=True)
class RuleWhere:
    """Where one rule is defined, checked (primary module first) and tested; ``tested_in`` is None outside a
    source checkout (no ``tests/`` beside the package)."""

    rule: Rule
    defined_in: Place | None
    checked_in: tuple[Place, ...]
    tested_in: tuple[str, ...] | None

    def to_json(self) -> dict[str, Any]:
        return {
            "code": self.rule.code,
            "severity": str(self.rule.severity),
            "title": self.rule.title,
            "defined_in": None
            if self.defined_in is None
            else {"path": self.defined_in.path, "lines": list(self.defined_in.lines)},
            "checked_in": [{"path": p.path, "lines": list(p.lines)} for p in self.checked_in],
            "tested_in": None if self.tested_in is None else list(self.tested_in),
        }


def rule_line(rule: Rule) -> str:
    """A rule's line in ``rwkv-registry rules``: code, severity, title."""
    return f"{rule.code}  {rule.severity:7}  {rule.title}"


def resolve_codes(words: Iterable[str]) -> list[str]:
    """The rule codes ``words`` name (any case, several per word when separated by commas), in order, once each.
    An unknown code is a usage error (exit 2) naming it."""
    codes: list[str] = []
    unknown: list[str] = []
    for word in words:
        for part in word.split(","):
            code = part.strip().upper()
            if not code:
                continue
            if code not in RULES:
                unknown.append(part.strip())
            elif code not in codes:
                codes.append(code)
    if unknown:
        said = ", ".join(repr(u) for u in unknown)
        raise UsageError(
            f"unknown rule code{'s' if len(unknown) > 1 else ''} {said}",
            hint="`rwkv-registry rules` lists every code (LAY001, MIS003, ...).",
        )
    if not codes:
        raise UsageError(
            "--where needs a rule code", hint="Give one, e.g. `--where MIS003`; `rwkv-registry rules` lists them."
        )
    return codes


def _definition_nodes(tree: ast.Module) -> set[int]:
    """``id()`` of the constants that define a code: the first argument of each ``Rule(...)``."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "Rule" and node.args:
            out.add(id(node.args[0]))
    return out


def code_occurrences(source: str, codes: Iterable[str], *, definitions: bool = False) -> dict[str, list[int]]:
    """The line of each string constant of ``source`` equal to one of ``codes``, by code (a line once per
    occurrence, in order): those of the checks, or (``definitions``) only those that define a rule,
    ``Rule("CODE", ...)``. A source that does not parse has none."""
    wanted = set(codes)
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return {}
    defining = _definition_nodes(tree)
    found: dict[str, list[int]] = {}
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and node.value in wanted
            and (id(node) in defining) == definitions
        ):
            found.setdefault(node.value, []).append(node.lineno)
    return {code: sorted(lines) for code, lines in found.items()}


def _python_files(top: Path) -> list[Path]:
    return sorted(p for p in top.rglob("*.py") if "__pycache__" not in p.parts and p.is_file())


@cache
def _package_index(package: Path, definitions: bool = False) -> dict[str, dict[str, list[int]]]:
    """Every rule code's occurrences in the package's modules (or, ``definitions``, its ``Rule("CODE", ...)``):
    code → {shown path → lines}."""
    index: dict[str, dict[str, list[int]]] = {}
    for path in _python_files(package):
        rel = path.relative_to(package)
        try:
            source = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        shown = (Path(package.name) / rel).as_posix()
        for code, lines in code_occurrences(source, RULES, definitions=definitions).items():
            index.setdefault(code, {})[shown] = lines
    return index


def defined_in(code: str, package: Path = PACKAGE_DIR) -> Place | None:
    """The module of ``package`` whose ``Rule("CODE", ...)`` defines ``code``, and its line; None if none does."""
    places = sorted(_package_index(package, True).get(code, {}).items())
    return Place(places[0][0], tuple(places[0][1])) if places else None


def checked_in(code: str, package: Path = PACKAGE_DIR) -> tuple[Place, ...]:
    """The modules of ``package`` that name ``code`` as a string constant: the one with the most occurrences
    first, ties by path."""
    places = _package_index(package).get(code, {})
    order = sorted(places.items(), key=lambda item: (-len(item[1]), item[0]))
    return tuple(Place(path, tuple(dict.fromkeys(lines))) for path, lines in order)


def tests_dir(package: Path = PACKAGE_DIR) -> Path | None:
    """``tests/`` beside the package directory in a source checkout (``pyproject.toml`` there too: an installed
    package's site-packages may hold some other distribution's ``tests``); None otherwise."""
    root = package.parent
    tests = root / "tests"
    return tests if tests.is_dir() and (root / "pyproject.toml").is_file() else None


@cache
def _test_texts(tests: Path) -> tuple[tuple[str, str], ...]:
    out = []
    for path in _python_files(tests):
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        out.append(((Path(tests.name) / path.relative_to(tests)).as_posix(), text))
    return tuple(out)


def tested_in(code: str, package: Path = PACKAGE_DIR) -> tuple[str, ...] | None:
    """The test files (``tests/**/*.py``) that mention ``code``, by path; None outside a source checkout."""
    tests = tests_dir(package)
    if tests is None:
        return None
    word = re.compile(rf"(?<![A-Za-z0-9_]){re.escape(code)}(?![0-9])")
    return tuple(path for path, text in _test_texts(tests) if word.search(text))


def where(words: Sequence[str], package: Path = PACKAGE_DIR) -> list[RuleWhere]:
    """Where each rule that ``words`` names is checked and tested (:func:`resolve_codes` reads the words)."""
    return [
        RuleWhere(RULES[code], defined_in(code, package), checked_in(code, package), tested_in(code, package))
        for code in resolve_codes(words)
    ]


def render_where(items: Sequence[RuleWhere]) -> str:
    """The text of ``rules --where``: per rule its ``rules`` line, then "defined in:", "checked in:" and
    "tested in:"."""
    blocks = []
    for item in items:
        lines = [rule_line(item.rule), "defined in:"]
        if item.defined_in is not None:
            lines.append(f"  {item.defined_in.path}: {', '.join(map(str, item.defined_in.lines))}")
        else:
            lines.append("  (no module defines this code)")
        lines.append("checked in:")
        if item.checked_in:
            lines += [f"  {p.path}: {', '.join(map(str, p.lines))}" for p in item.checked_in]
        else:
            lines.append("  (no module names this code)")
        if item.tested_in is None:
            lines.append("tested in: (tests/ not found: not a source checkout)")
        else:
            lines.append("tested in:")
            lines += [f"  {path}" for path in item.tested_in] or ["  (no test file mentions this code)"]
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks) + "\n"
