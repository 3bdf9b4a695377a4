"""Checks of registry/engine/facts.py's racy-clean rule that a mutation audit found no test for.

Each test kills a hand-made mutant (named in its docstring) that tests/test_cache.py let live.
"""

from __future__ import annotations

from rwkv_registry.engine.facts import RACY_COARSE_NS, racy

SECOND = 10**9


def test_whole_second_times_are_racy_up_to_but_not_at_the_coarse_step() -> None:
    """G13: ``>=`` for ``>`` held a file whose whole-second times lie exactly one coarse step (2 s) before the
    start as racy: a write after the start gets a later stamp even on FAT's 2 s clock, so its facts may be
    cached. One nanosecond less than the step is still racy."""
    now = 1_800_000_000 * SECOND
    step_old = now - RACY_COARSE_NS
    assert not racy([0, 0, "p", 1, step_old, step_old], now)
    assert racy([0, 0, "p", 1, step_old, step_old], now - 1)
    assert racy([0, 0, "p", 1, step_old, now - SECOND], now)  # the newer of the two times decides
