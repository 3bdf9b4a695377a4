"""The sampling presets RWKV-Agent defines: names and parameters, one table for the whole tool.

Source: No-22-Github/RWKV-Agent ``internal/samplingpreset/presets.go`` (the ``presets`` map; the only stored
version, commit 0e6083de, with its test ``presets_test.go::TestPresetValuesArePinned`` at 7c0c39c0). The
numbers are RWKV-Agent's measured winners of its 2026-09-23 g1k sampling sweep; ``description`` is the
preset's ``Use`` there. ``NoTruncation`` (65536, the RWKV World vocabulary size) is how RWKV-Agent spells
"no top-k cut" because its CLI rejects a top_k of 0. docs/profiles.md lists them.

``add --sampling``, index.json's schema (``entries[].sampling``), validate (PRF003) and the model package
(:func:`rwkv_registry.model.get_sampling`) all read this table. It imports nothing heavy.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

# presets.go: const NoTruncation = 65536 ("the top_k that keeps every candidate")
NO_TRUNCATION = 65536


@dataclass(frozen=True)
class SamplingPreset:
    """Sampling parameters. ``top_k`` 0, or at least the vocabulary size, and ``top_p == 1`` disable those cuts."""

    name: str
    description: str
    temperature: float
    top_p: float
    top_k: int
    presence_penalty: float
    frequency_penalty: float
    penalty_decay: float  # counts are multiplied by this after every generated token

    @property
    def greedy(self) -> bool:
        """True when the preset always takes the most likely token (top_k 1 makes temperature and top_p inert)."""
        return self.top_k == 1


SAMPLING_PRESETS: dict[str, SamplingPreset] = {
    s.name: s
    for s in (
        SamplingPreset(
            name="greedy",
            description="regression and debugging; closest to reproducible (batching still moves about ±1 case)",
            temperature=1.0,
            top_p=1.0,
            top_k=1,
            presence_penalty=0.0,
            frequency_penalty=0.0,
            penalty_decay=1.0,
        ),
        SamplingPreset(
            name="g1k-agent",
            description="default for tool-calling decisions; best bfcl-product (mean 48/60)",
            temperature=0.3,
            top_p=0.5,
            top_k=NO_TRUNCATION,
            presence_penalty=0.0,
            frequency_penalty=0.0,
            penalty_decay=1.0,
        ),
        SamplingPreset(
            name="g1k-agent-fast",
            description="long multi-step agent tasks; same score band as g1k-agent, ~27% faster (a light penalty "
            "curbs loops; presence 1.0 already costs score)",
            temperature=0.3,
            top_p=0.5,
            top_k=NO_TRUNCATION,
            presence_penalty=0.5,
            frequency_penalty=0.1,
            penalty_decay=0.996,
        ),
        SamplingPreset(
            name="g1k-stable",
            description="A/B comparisons with few replicas; smallest run-to-run spread",
            temperature=1.0,
            top_p=0.3,
            top_k=20,
            presence_penalty=0.0,
            frequency_penalty=0.0,
            penalty_decay=1.0,
        ),
        SamplingPreset(
            name="backend",
            description="rwkv_lightning's own defaults; chat and the fastest runs (heavy penalty halves output length)",
            temperature=1.0,
            top_p=0.3,
            top_k=20,
            presence_penalty=2.0,
            frequency_penalty=0.2,
            penalty_decay=0.996,
        ),
    )
}

# seed 000: "采样用 --sampling g1k-agent" (both kinds of weights were scored with it)
DEFAULT_SAMPLING = "g1k-agent"


def did_you_mean(name: str, known: list[str] | tuple[str, ...] | None = None) -> str:
    """``"Did you mean 'g1k-agent'? "`` for the known name closest to ``name``, or ``""``."""
    names = list(SAMPLING_PRESETS if known is None else known)
    close = difflib.get_close_matches(name, names, n=1, cutoff=0.6)
    if not close and name.lower() in {n.lower() for n in names}:  # a case slip
        close = [n for n in names if n.lower() == name.lower()]
    return f"Did you mean {close[0]!r}? " if close else ""


def unknown_sampling_hint(name: str) -> str:
    """The hint for a sampling preset name RWKV-Agent does not define."""
    return (
        did_you_mean(name)
        + f"RWKV-Agent's presets.go defines {', '.join(SAMPLING_PRESETS)} (docs/profiles.md lists their values); "
        f"{DEFAULT_SAMPLING} is the default."
    )
