"""What a validation rule is, and what it finds.

A rule has a stable code (never reused, never renumbered), a severity, a one-line title and a fix hint. Each family
defines its rules in a :class:`Rulebook` beside its checks, ``registry/checks/<family>.py``, and makes findings with
that book's :meth:`Rulebook.finding`; ``registry/checks/catalogue.py`` joins the families into the catalogue that
``rwkv-registry rules`` prints and ``docs/rules.md`` is generated from (a test keeps the two equal).

Code prefixes: LAY layout, SCH JSON and schemas, IDX index consistency, HSH hashes and SHA256SUMS, PTH checkpoint
archives, LFS Git LFS, STA State files, MIS MiSS adapters, TRN train.json, PRF profiles, RDM README, GIT git history,
SIG signatures.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from rwkv_registry.core.textsafe import MESSAGE_LIMIT, PATH_LIMIT, clip


class Severity(enum.StrEnum):
    """How bad a finding is. Only ``error`` makes ``validate`` exit 1."""

    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


@dataclass(frozen=True)
class Rule:
    """One validation rule."""

    code: str
    severity: Severity
    title: str
    hint: str


@dataclass(frozen=True)
class Finding:
    """One result of a rule on one path (relative to the registry root, POSIX form)."""

    code: str
    severity: Severity
    path: str
    message: str
    hint: str
    extra: dict[str, Any] = field(default_factory=dict, compare=False)

    def amended(self, message: str, *, hint: str | None = None) -> Finding:
        """This finding with another message (cut as any finding's is) and, if given, a more precise hint: a later
        step that knows the cause better says so on the same finding (``checks/git.py``'s folding)."""
        return Finding(self.code, self.severity, self.path, clip(message, MESSAGE_LIMIT), hint or self.hint,
                       dict(self.extra))  # fmt: skip

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "code": self.code,
            "severity": str(self.severity),
            "path": self.path,
            "message": self.message,
            "hint": self.hint,
        }
        if self.extra:
            out["extra"] = self.extra
        return out


E, W, N = Severity.ERROR, Severity.WARNING, Severity.INFO


class Rulebook(Mapping[str, Rule]):
    """Rules by code, in the order given: one family's, beside its checks (``checks/<family>.py``), or the whole
    catalogue (:data:`rwkv_registry.checks.catalogue.RULES`). A code given twice is refused."""

    def __init__(self, *rules: Rule) -> None:
        self._rules: dict[str, Rule] = {}
        for r in rules:
            if r.code in self._rules:
                raise ValueError(f"rule {r.code} is defined twice")
            self._rules[r.code] = r

    def __getitem__(self, code: str) -> Rule:
        return self._rules[code]

    def __iter__(self) -> Iterator[str]:
        return iter(self._rules)

    def __len__(self) -> int:
        return len(self._rules)

    def finding(self, code: str, path: str, message: str, *, hint: str | None = None, **extra: Any) -> Finding:
        """A finding of rule ``code`` (one of this book's) on ``path`` (registry-relative, POSIX); ``hint``: a fix
        more precise than the rule's own."""
        rule = self._rules[code]
        # a name quoted whole (a 20 MB tensor name, a path of SHA256SUMS) is cut here at the latest: no finding is
        # megabytes long, whatever it quotes (the quoting sites clip each name to 200 characters: textsafe.clip)
        return Finding(code, rule.severity, clip(path, PATH_LIMIT), clip(message, MESSAGE_LIMIT), hint or rule.hint,
                       dict(extra))  # fmt: skip
