"""The immutability policy: what may change in a registry once its files are published (GIT001–GIT003, GIT005,
GIT007). One policy, asked by ``validate`` (against git's history, :mod:`rwkv_registry.checks.git`), by ``add``
and ``add-base`` (before they write, :mod:`rwkv_registry.store.ops`) and by ``push`` (against the Hub's files,
:mod:`rwkv_registry.hub.sync`):

- a published file under a base directory never changes (GIT001) and is never deleted (GIT002);
- a base that is ``frozen``, or that a newer base of its family supersedes (IDX007), is *closed*: it gets no new
  file (GIT003), its empty ``state/.gitkeep`` and ``miss/.gitkeep`` placeholders aside (what add-base makes, so that
  git keeps the method folders; they carry nothing);
- a base closed in either of two indexes (as published, and now) is closed: unfreezing a base in the same change
  does not open it, and a frozen base stays frozen (GIT005);
- the file a base was published with (its sha256, size, file name) stays that file while anything relies on it
  (GIT007).

"Published" is decided by the caller: committed at git's baseline, or present on the Hub.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from rwkv_registry.index.layout import METHODS
from rwkv_registry.index.lineage import superseded

Bases = Mapping[Any, Mapping[str, Any]]


def bases_by_name(index: Any) -> dict[Any, dict[str, Any]]:
    """An index.json's bases by name (none when it has no list of them)."""
    bases = index.get("bases") if isinstance(index, dict) else None
    return {b.get("name"): b for b in bases if isinstance(b, dict)} if isinstance(bases, list) else {}


def closed_bases(*indexes: Bases) -> dict[Any, str]:
    """The bases closed in any of ``indexes`` (bases by name, as :func:`bases_by_name` gives them), and how:
    ``frozen`` by status, else ``superseded`` when a newer base of their family exists there (IDX007)."""
    closed = {n: "frozen" for bases in indexes for n, b in bases.items() if b.get("status") == "frozen"}
    for bases in indexes:
        for n in superseded(bases.values()):
            closed.setdefault(n, "superseded")
    return closed


def base_dir(rel: str, known: Iterable[Any]) -> str | None:
    """The base whose directory holds ``rel`` (a registry-relative path), when it is one of ``known``."""
    top = rel.split("/", 1)[0] if "/" in rel else None
    return top if top is not None and top in known else None


def placeholder_name(rel: str) -> bool:
    """``<base>/state/.gitkeep`` or ``<base>/miss/.gitkeep``: a placeholder when it is also empty."""
    parts = rel.split("/")
    return len(parts) == 3 and parts[1] in METHODS and parts[2] == ".gitkeep"


def empty_under(root: Path) -> Callable[[str], bool]:
    """``empty(rel)`` for :func:`change_code`: whether the file at registry-relative ``rel`` under ``root`` is empty
    (one that cannot be stat'ed is not)."""

    def empty(rel: str) -> bool:
        try:
            return (root / rel).stat().st_size == 0
        except OSError:
            return False

    return empty


def change_code(
    rel: str,
    status: str,
    known: Iterable[Any],
    closed: Mapping[Any, str],
    empty: Callable[[str], bool] = lambda rel: False,
) -> str | None:
    """The rule a change to a published registry breaks, or None when it may be made. ``status``: git's letter for
    the change of ``rel`` against what was published (``M`` modified, ``T`` its type changed, ``D`` deleted, ``A``
    added; anything else is no change to judge); ``known``: the bases of either index; ``closed``:
    :func:`closed_bases` of both; ``empty(rel)``: whether the file is empty (asked only of a placeholder's name)."""
    base = base_dir(rel, known)
    if base is None:
        return None  # outside every base directory: index.json, SHA256SUMS, README.md, misplaced files (LAY)
    if status in ("M", "T"):
        return "GIT001"
    if status == "D":
        return "GIT002"
    if status == "A" and base in closed and not (placeholder_name(rel) and empty(rel)):
        return "GIT003"
    return None


def reopened(bases_then: Bases, bases_now: Bases) -> list[tuple[Any, Any]]:
    """``(base name, its status now)`` for each base frozen as published whose status is another now (GIT005):
    else one change reopens it and the next adds files under it."""
    out = []
    for name, then in bases_then.items():
        now = bases_now.get(name)
        if then.get("status") == "frozen" and now is not None and now.get("status") != "frozen":
            out.append((name, now.get("status")))
    return out


def base_identity_changes(bases_then: Bases, bases_now: Bases, index: Any) -> list[tuple[Any, str]]:
    """``(base name, what changed)`` for each base of ``bases_then`` (bases by name, as published) whose sha256,
    size (when it was known) or file name differs in ``bases_now`` while weights, unpublished weights or scores of
    ``index`` rely on it: they were trained or measured on the old file, and a State, which carries no fingerprint,
    would silently claim the new one (GIT007)."""
    relied: set[Any] = set()
    for key in ("entries", "unpublished"):
        items = index.get(key) if isinstance(index, dict) else None
        relied |= {x.get("base") for x in items if isinstance(x, dict)} if isinstance(items, list) else set()
    out: list[tuple[Any, str]] = []
    for name, then in sorted(bases_then.items(), key=lambda kv: str(kv[0])):
        now = bases_now.get(name)
        if now is None or (name not in relied and not now.get("scores")):
            continue
        src_then: Mapping[str, Any] = then["source"] if isinstance(then.get("source"), dict) else {}
        src_now: Mapping[str, Any] = now["source"] if isinstance(now.get("source"), dict) else {}
        changed = [
            f"{what} {old!r} → {new!r}"
            for what, old, new in (
                ("sha256", then.get("sha256"), now.get("sha256")),
                ("size", then.get("size"), now.get("size")),
                ("source.file", src_then.get("file"), src_now.get("file")),
            )
            if old is not None and new != old  # a size recorded as null (registered by metadata) may be filled in
        ]
        if changed:
            out.append((name, "; ".join(changed)))
    return out
