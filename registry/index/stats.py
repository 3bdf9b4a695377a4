"""The exact McNemar test of paired comparisons: ``compare``, ``score``, the smoke report and the IDX checks of
recorded p-values all use this one function."""

from __future__ import annotations

import math

__all__ = ["MAX_DISCORDANT", "mcnemar_exact"]

MAX_DISCORDANT = 10**9
"""The most wins (or losses) the test takes; score.schema.json caps ``wins`` and ``losses`` here too."""
_EXACT_UP_TO = 20_000  # discordant pairs summed in exact integers; above, in floats from the largest term down


def mcnemar_exact(wins: int, losses: int) -> float:
    """Exact two-sided McNemar p-value for ``wins`` and ``losses`` discordant pairs.

    Up to 20,000 pairs the binomial tail is summed in exact integers, each coefficient from the one
    before, with one correctly rounded division; above, in floats from the largest term
    ``C(n, k) / 2^n`` (from ``lgamma``) down until the terms no longer count, which keeps the
    relative error below 1e-9 and the time below a second up to :data:`MAX_DISCORDANT` each.
    """
    if wins < 0 or losses < 0:
        raise ValueError("counts must be non-negative")
    if wins > MAX_DISCORDANT or losses > MAX_DISCORDANT:
        raise ValueError(f"counts above {MAX_DISCORDANT:,} are not taken")
    n = wins + losses
    k = min(wins, losses)
    if 2 * k >= n:  # wins == losses (or none): the tail holds at least half the mass
        return 1.0
    if n <= _EXACT_UP_TO:
        term = tail = 1
        for i in range(k):
            term = term * (n - i) // (i + 1)  # C(n, i + 1), exact
            tail += term
        return min(1.0, 2 * tail / 2**n)
    log_top = math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1) - n * math.log(2)
    ratio_sum, term_ratio = 0.0, 1.0  # the tail over its largest term C(n, k) / 2^n
    for i in range(k, -1, -1):
        ratio_sum += term_ratio
        term_ratio *= i / (n - i + 1)  # C(n, i - 1) / C(n, i)
        if term_ratio < 1e-18 * ratio_sum:
            break
    return min(1.0, math.exp(math.log(2) + log_top + math.log(ratio_sum)))
