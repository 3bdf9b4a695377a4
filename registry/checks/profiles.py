"""The profile rules (PRF001–PRF003): an entry's prompt profile fits its method (RWKV-Agent's ``prompt.go``: a
MiSS adapter answers with ``g1k-think``, a State with ``g1k``) and its sampling is a preset RWKV-Agent defines
(``presets.go``, :mod:`rwkv_registry.index.sampling`). Run by ``validate`` on every entry and by ``add`` on the new
one.
"""

from __future__ import annotations

from typing import Any

from rwkv_registry.core.rules import Finding, finding
from rwkv_registry.index.sampling import SAMPLING_PRESETS, did_you_mean


def profile_findings(path: str, e: dict[str, Any]) -> list[Finding]:
    """PRF001 (a MiSS entry with profile g1k), PRF002 (a State entry with profile g1k-think) and PRF003 (a sampling
    preset RWKV-Agent does not define; a sampling that is no string is the schema's, SCH002) of the entry ``e`` at
    ``path``."""
    out = []
    method, profile, sampling = e.get("method"), e.get("profile"), e.get("sampling")
    if method == "miss" and profile == "g1k":
        out.append(finding("PRF001", path, f"entry {e.get('id')!r} is MiSS with profile g1k"))
    if method == "state" and profile == "g1k-think":
        out.append(finding("PRF002", path, f"entry {e.get('id')!r} is a State with profile g1k-think"))
    if isinstance(sampling, str) and sampling not in SAMPLING_PRESETS:
        near = did_you_mean(sampling).rstrip()
        out.append(
            finding(
                "PRF003",
                path,
                f"entry {e.get('id')!r}: sampling {sampling!r} is not a preset of RWKV-Agent's presets.go"
                + (f" ({near[0].lower()}{near[1:]})" if near else ""),
            )
        )
    return out
