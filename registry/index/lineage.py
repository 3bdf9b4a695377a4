"""Which base supersedes which: a newer dated base of the same family.

The user's rule (seed 000, FORMATS §1): weights are valid only on the exact base file they were
trained on, and a change of base opens a new directory beside the old one, which is never touched
again. A base is *superseded* when another base of its family carries a later date; nothing new
goes under it (GIT003, ``add`` refuses) and its status should be ``frozen`` (IDX007).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

_DATED = re.compile(r"^(.*?)-((?:19|20)\d{6})(?:-|$)")


def family_of(name: str) -> str:
    """``rwkv7-g1k-7.2b-20260930-ctx25600`` -> ``rwkv7-g1k-7.2b``: the name up to its date."""
    m = _DATED.match(name)
    return m.group(1) if m else name


def base_date(base: Mapping[str, Any]) -> str | None:
    """The base's date as ``YYYYMMDD``: from its name, else from ``added`` (``YYYY-MM-DD``)."""
    m = _DATED.match(str(base.get("name", "")))
    if m:
        return m.group(2)
    added = base.get("added")
    if isinstance(added, str) and re.fullmatch(r"\d{4}-\d{2}-\d{2}", added):
        return added.replace("-", "")
    return None


def superseded(bases: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """``{old base name: the newest base of its family}`` for every base with a newer sibling."""
    newest: dict[str, tuple[str, str]] = {}
    dated: list[tuple[str, str, str]] = []
    for b in bases:
        name = b.get("name")
        date = base_date(b)
        if not isinstance(name, str) or date is None:
            continue
        family = b["family"] if isinstance(b.get("family"), str) else family_of(name)
        dated.append((name, family, date))
        if family not in newest or date > newest[family][0]:
            newest[family] = (date, name)
    return {name: newest[family][1] for name, family, date in dated if date < newest[family][0]}


def active_successor(bases: Iterable[Mapping[str, Any]], name: str) -> str | None:
    """The base new weights of ``name``'s family go under: the newest base of its family when that is not frozen,
    else the newest active base of the family other than ``name``; None when the family has none."""
    bases = [b for b in bases if isinstance(b, Mapping) and isinstance(b.get("name"), str)]
    newest = superseded(bases).get(name)
    status = {b["name"]: b.get("status") for b in bases}
    if newest is not None and status.get(newest) != "frozen":
        return newest
    family = next((b["family"] if isinstance(b.get("family"), str) else family_of(name)
                   for b in bases if b["name"] == name), family_of(name))  # fmt: skip
    active = [
        b for b in bases
        if b["name"] != name and b.get("status") != "frozen"
        and (b["family"] if isinstance(b.get("family"), str) else family_of(b["name"])) == family
    ]  # fmt: skip
    if not active:
        return None
    return max(active, key=lambda b: base_date(b) or "")["name"]
