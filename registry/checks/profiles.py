"""The profile rules (PRF001–PRF003): an entry's prompt profile fits its method (RWKV-Agent's ``prompt.go``: a
MiSS adapter answers with ``g1k-think``, a State with ``g1k``) and its sampling is a preset RWKV-Agent defines
(``presets.go``, :mod:`rwkv_registry.index.sampling`). Run by ``validate`` on every entry and by ``add`` on the new
one.
"""

from __future__ import annotations

from typing import Any

from rwkv_registry.core.rules import E, Finding, Rule, Rulebook, W
from rwkv_registry.index.sampling import SAMPLING_PRESETS, did_you_mean

# --- the rules ----------------------------------------------------------------------------------------------------

RULES = Rulebook(
    Rule(
        "PRF001",
        E,
        "MiSS entry with a non-thinking prompt profile",
        "MiSS adapters were trained with thinking and must run with profile g1k-think (without it they score "
        "clearly worse).",
    ),
    Rule(
        "PRF002",
        W,
        "State entry with a thinking prompt profile",
        "State files were trained without thinking; use profile g1k.",
    ),
    Rule(
        "PRF003",
        E,
        "entry names a sampling preset RWKV-Agent does not define",
        "An entry's `sampling` must be a preset of RWKV-Agent's internal/samplingpreset/presets.go: greedy, "
        "g1k-agent, g1k-agent-fast, g1k-stable or backend (docs/profiles.md lists their values; the weights of "
        "seed 000 were scored with g1k-agent, the default of `add --sampling`). Fix the name in index.json.",
    ),
)
finding = RULES.finding


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
