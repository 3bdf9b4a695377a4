"""Batched evaluation runs: shared-prefix prefill, batched suffixes, chunked teacher forcing, decode.

A :class:`Job` is a prompt split into a ``prefix`` (the System turn, shared by every case with the
same tools) and a ``suffix``, plus either greedy generation after it or teacher-forced ``targets``
whose negative log-likelihood is summed (the loss rows). An :class:`Engine` run has four phases:

1. **prefixes**: each distinct prefix is prefilled once (``B = 1``, chunked), from the State if
   any, and every row starts from a copy of its prefix's state;
2. **suffixes**: all rows are fed their suffixes together, ``[A, c]`` tokens per forward, where
   ``c`` is the shortest remaining suffix; a row whose suffix ends leaves the group. No padding
   token ever enters a row's recurrence, and the head runs only on each chunk's last position.
   Rows with the same prompt (a case's generation row and its loss row) are fed once;
3. **targets** (loss rows): the targets are fed the same way with all positions' logits, and the
   log-probability of each next target is summed;
4. **decode** (generation rows): one token per row per step, greedy (``argmax`` of fp32 logits),
   cut before the first stop string as in :func:`rwkv_registry.model.generate`; a job's
   ``prefix_check`` stops its row once the output can no longer become valid (finish
   ``"invalid"``), so a broken call costs a few tokens, not the whole budget. Rows that finish
   leave the batch on the CPU; on CUDA the batch keeps its shape (finished rows are fed token 0
   and ignored) so that one captured step serves the whole decode
   (:class:`rwkv_registry.model.decode.Decoder`; ``RWKV_REGISTRY_SMOKE_GRAPHS=0`` turns graphs off,
   ``RWKV_REGISTRY_SMOKE_COMPILE=1`` compiles the step first).

Every logits row is checked for NaN/Inf and charged to its job. A run is exactly repeatable: the
same jobs give the same tokens and losses bit for bit (the smoke evaluation runs twice to check).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch

from rwkv_registry.model.decode import Decoder
from rwkv_registry.model.generate import prefill
from rwkv_registry.model.rwkv7 import RWKV7
from rwkv_registry.model.state import LayerState, RWKV7State, StateWeights
from rwkv_registry.model.tokenizer import RWKVTokenizer

Progress = Callable[[int], None]  # called with the number of rows that just finished
TARGET_CHUNK = 16  # teacher-forced tokens per forward: bounds the [A, c, V] logits


@dataclass(frozen=True)
class Job:
    """One row: feed ``prefix + suffix``; then generate greedily, or score ``targets``."""

    prefix: tuple[int, ...]
    suffix: tuple[int, ...]
    max_new: int = 0  # > 0: generate up to this many tokens after the suffix
    stops: tuple[bytes, ...] = ()  # stop strings (bytes) for generation
    stop_tokens: tuple[int, ...] = (0,)
    targets: tuple[int, ...] = ()  # teacher-forced after the suffix; their NLL is summed
    prefix_check: Callable[[str], bool] | None = None  # False: the output can no longer be valid, stop

    def __post_init__(self) -> None:
        if not self.suffix:
            raise ValueError("a job needs a non-empty suffix")
        if (self.max_new > 0) == bool(self.targets):
            raise ValueError("a job either generates (max_new > 0) or scores targets, not both")


@dataclass
class JobResult:
    """What one row produced."""

    tokens: tuple[int, ...] = ()  # generated ids (a stop token is not included)
    text: str = ""  # decoded output cut before the stop string
    finish: str = ""  # "stop_token" | "stop_string" | "max_tokens" | "invalid" | "scored"
    nll: float = 0.0  # summed negative log-likelihood of the targets (loss rows)
    nll_terms: tuple[float, ...] = ()  # per target token, for the determinism check
    finite: bool = True  # every logits row of this job (its prefix's included) was finite


@dataclass
class RunStats:
    """Counts and timing of one or more runs."""

    prefill_tokens: int = 0  # tokens of the distinct prefixes
    fed_tokens: int = 0  # suffix, target and generated tokens fed after the prefixes
    generated_tokens: int = 0
    forwards: int = 0
    seconds: float = 0.0
    graphed: bool = False

    def add(self, other: RunStats) -> None:
        """Accumulate another run."""
        self.prefill_tokens += other.prefill_tokens
        self.fed_tokens += other.fed_tokens
        self.generated_tokens += other.generated_tokens
        self.forwards += other.forwards
        self.seconds += other.seconds
        self.graphed = self.graphed or other.graphed


@dataclass
class Row:
    """One job in a run: its tokens and bytes so far, the log-losses of its targets, its result, whether it ended
    (:meth:`Engine.advance` takes its next token)."""

    job: Job
    result: JobResult = field(default_factory=JobResult)
    out_bytes: bytes = b""
    out: list[int] = field(default_factory=list)
    nll: list[float] = field(default_factory=list)
    done: bool = False


def _select(state: RWKV7State, idx: torch.Tensor) -> RWKV7State:
    return RWKV7State([LayerState(s.att_shift[idx], s.wkv[idx], s.ffn_shift[idx]) for s in state.layers])


def _write(state: RWKV7State, idx: torch.Tensor, part: RWKV7State) -> None:
    for s, p in zip(state.layers, part.layers, strict=True):
        s.att_shift[idx] = p.att_shift
        s.wkv[idx] = p.wkv
        s.ffn_shift[idx] = p.ffn_shift


class Engine:
    """Runs jobs on ``model`` (with ``time_state`` as every row's initial WKV state)."""

    def __init__(
        self,
        model: RWKV7,
        tokenizer: RWKVTokenizer,
        *,
        time_state: StateWeights | None = None,
        fixed_batch: bool | None = None,
        graphs: bool | None = None,
        compile: bool | str | None = None,
    ) -> None:
        """``fixed_batch`` (default: on CUDA) keeps finished rows in the decode batch; ``graphs``
        (default: on CUDA, unless ``RWKV_REGISTRY_SMOKE_GRAPHS=0``) replays each decode step as a
        CUDA graph; ``compile`` (default: ``RWKV_REGISTRY_SMOKE_COMPILE=1``) passes the step through
        ``torch.compile`` first (see :class:`~rwkv_registry.model.decode.Decoder`)."""
        self.model = model
        self.tok = tokenizer
        self.time_state = time_state
        cuda = model.device.type == "cuda"
        self.fixed_batch = cuda if fixed_batch is None else fixed_batch
        if graphs is None:
            graphs = cuda and os.environ.get("RWKV_REGISTRY_SMOKE_GRAPHS", "1") != "0"
        self.graphs = bool(graphs and cuda and self.fixed_batch)
        if compile is None:
            compile = os.environ.get("RWKV_REGISTRY_SMOKE_COMPILE", "0") == "1"
        self.compile = compile
        self._decoders: dict[int, Decoder] = {}

    @torch.inference_mode()
    def run(self, jobs: Sequence[Job], progress: Progress | None = None) -> tuple[list[JobResult], RunStats]:
        """Run ``jobs``; results in job order."""
        stats = RunStats()
        if not jobs:
            return [], stats
        t0 = time.perf_counter()
        rows = [Row(job) for job in jobs]
        state = self._prefixes(rows, stats)
        first = self._suffixes(rows, state, stats)  # per row: (argmax, logp of targets[0]) after the suffix
        loss_rows = [i for i, r in enumerate(rows) if r.job.targets]
        gen_rows = [i for i, r in enumerate(rows) if not r.job.targets]
        for i in loss_rows:
            rows[i].nll.append(-first[i][1])
        self._targets(rows, loss_rows, state, stats)
        if progress and loss_rows:
            progress(len(loss_rows))
        for i in gen_rows:
            if self.advance(rows[i], first[i][0], stats):
                rows[i].done = True
        if progress:
            progress(sum(1 for i in gen_rows if rows[i].done))
        self._decode(rows, [i for i in gen_rows if not rows[i].done], state, stats, progress)
        for r in rows:
            if r.job.targets:
                r.result.nll = float(sum(r.nll))
                r.result.nll_terms = tuple(r.nll)
                r.result.finish = "scored"
        stats.seconds = time.perf_counter() - t0
        return [r.result for r in rows], stats

    # ------------------------------------------------------------------------------ phases

    def _prefixes(self, rows: list[Row], stats: RunStats) -> RWKV7State:
        model = self.model
        prefixes: dict[tuple[int, ...], tuple[RWKV7State, bool]] = {}
        for r in rows:
            if r.job.prefix not in prefixes:
                state = model.new_state(1, self.time_state)
                finite = True
                if r.job.prefix:
                    logits, state = prefill(model, r.job.prefix, state)
                    finite = bool(torch.isfinite(logits).all())
                    stats.prefill_tokens += len(r.job.prefix)
                    stats.forwards += 1
                prefixes[r.job.prefix] = (state, finite)
        for r in rows:
            r.result.finite = prefixes[r.job.prefix][1]
        return RWKV7State.cat([prefixes[r.job.prefix][0] for r in rows])

    def _suffixes(self, rows: list[Row], state: RWKV7State, stats: RunStats) -> list[tuple[int, float]]:
        """Feed every suffix; returns each row's (argmax, logp of its first target) after it.

        Rows with the same prefix and suffix (a case's generation row and its loss row) are fed
        once; the others get a copy of the state at the end.
        """
        device = self.model.device
        groups: dict[tuple[tuple[int, ...], tuple[int, ...]], list[int]] = {}
        for i, r in enumerate(rows):
            groups.setdefault((r.job.prefix, r.job.suffix), []).append(i)
        members = {g[0]: g for g in groups.values()}  # representative -> every row of its group
        fed = dict.fromkeys(members, 0)
        first: list[tuple[int, float]] = [(0, 0.0)] * len(rows)
        active = list(members)
        while active:
            c = min(len(rows[i].job.suffix) - fed[i] for i in active)
            tokens = torch.tensor([rows[i].job.suffix[fed[i] : fed[i] + c] for i in active], dtype=torch.long)
            idx = torch.tensor(active, dtype=torch.long, device=device)
            logits, part = self.model.forward(tokens.to(device), _select(state, idx))  # [A, V]
            _write(state, idx, part)
            stats.forwards += 1
            stats.fed_tokens += c * len(active)
            slots, who = [], []  # a logits row per member of each group whose suffix just ended
            for k, i in enumerate(active):
                if fed[i] + c == len(rows[i].job.suffix):
                    slots += [k] * len(members[i])
                    who += members[i]
            if who:
                want = [rows[m].job.targets[0] if rows[m].job.targets else 0 for m in who]
                picks, bad, logp = _summarise(
                    logits[torch.tensor(slots, device=device)], torch.tensor(want, dtype=torch.long, device=device)
                )
                for m, pick, b, lp in zip(who, picks, bad, logp, strict=True):
                    first[m] = (pick, lp)
                    if b:
                        rows[m].result.finite = False
            for i in active:
                fed[i] += c
            active = [i for i in active if fed[i] < len(rows[i].job.suffix)]
        copies = [(m, rep) for rep, group in members.items() for m in group[1:]]
        if copies:
            dst = torch.tensor([m for m, _ in copies], dtype=torch.long, device=device)
            src = torch.tensor([rep for _, rep in copies], dtype=torch.long, device=device)
            _write(state, dst, _select(state, src))
        return first

    def _targets(self, rows: list[Row], loss_rows: list[int], state: RWKV7State, stats: RunStats) -> None:
        """Teacher-force each loss row's targets; the logits of target j score target j + 1."""
        device = self.model.device
        fed = {i: 0 for i in loss_rows}
        active = [i for i in loss_rows if len(rows[i].job.targets) > 1]
        while active:
            c = min(TARGET_CHUNK, *(len(rows[i].job.targets) - 1 - fed[i] for i in active))
            tokens = torch.tensor([rows[i].job.targets[fed[i] : fed[i] + c] for i in active], dtype=torch.long)
            nxt = torch.tensor([rows[i].job.targets[fed[i] + 1 : fed[i] + 1 + c] for i in active], dtype=torch.long)
            idx = torch.tensor(active, dtype=torch.long, device=device)
            logits, part = self.model.forward(tokens.to(device), _select(state, idx), full_output=True)  # [A, c, V]
            _write(state, idx, part)
            stats.forwards += 1
            stats.fed_tokens += c * len(active)
            lsm = torch.log_softmax(logits, dim=-1).gather(-1, nxt.to(device).unsqueeze(-1)).squeeze(-1)  # [A, c]
            bad = (~torch.isfinite(logits).all(dim=-1)).any(dim=-1)  # [A]
            lsm_rows, bad_rows = lsm.double().cpu().tolist(), bad.cpu().tolist()
            for i, lp, b in zip(active, lsm_rows, bad_rows, strict=True):
                rows[i].nll.extend(-x for x in lp)
                if b:
                    rows[i].result.finite = False
                fed[i] += c
            active = [i for i in active if fed[i] < len(rows[i].job.targets) - 1]

    def _decode(
        self, rows: list[Row], gen: list[int], state: RWKV7State, stats: RunStats, progress: Progress | None
    ) -> None:
        if not gen:
            return
        device = self.model.device
        state = _select(state, torch.tensor(gen, dtype=torch.long, device=device))
        active = list(gen)  # row index of each batch slot
        decoder = None
        if self.fixed_batch:  # one captured step per batch size, kept across runs (CUDA graphs when self.graphs)
            decoder = self._decoders.get(len(active))
            if decoder is None:
                decoder = Decoder(self.model, len(active), graphs=self.graphs, compile=self.compile)
                self._decoders[len(active)] = decoder
            decoder.load(state)
        while any(not rows[i].done for i in active):
            feed = [0 if rows[i].done else rows[i].out[-1] for i in active]
            tokens = torch.tensor(feed, dtype=torch.long).view(-1, 1)
            if decoder is not None:
                logits = decoder.step(tokens)  # [A, V]
            else:
                logits, state = self.model.forward(tokens.to(device), state)
            stats.forwards += 1
            stats.fed_tokens += sum(1 for i in active if not rows[i].done)
            picks, bad, _ = _summarise(logits, None)
            finished = 0
            for slot, i in enumerate(active):
                r = rows[i]
                if r.done:
                    continue
                if bad[slot]:
                    r.result.finite = False
                if self.advance(r, picks[slot], stats):
                    r.done = True
                    finished += 1
            if progress and finished:
                progress(finished)
            if decoder is None and finished:
                keep = [slot for slot, i in enumerate(active) if not rows[i].done]
                if keep:
                    state = _select(state, torch.tensor(keep, dtype=torch.long, device=device))
                active = [active[slot] for slot in keep]
        stats.graphed = stats.graphed or (decoder is not None and decoder.captured)

    # ------------------------------------------------------------------------------ helpers

    def advance(self, r: Row, pick: int, stats: RunStats) -> bool:
        """Take the greedy token ``pick`` for row ``r`` (a stop token, a stop string split across tokens, the token
        budget or the job's prefix check may end it); True when the row is done."""
        job = r.job
        if pick in job.stop_tokens:
            r.result.finish = "stop_token"
            return self._finish(r)
        r.out.append(pick)
        stats.generated_tokens += 1
        before = len(r.out_bytes)
        r.out_bytes += self.tok.decode_bytes([pick])
        longest = max((len(s) for s in job.stops), default=0)
        hit = _first_stop(r.out_bytes, job.stops, max(0, before - longest))
        if hit is not None:
            r.out_bytes = r.out_bytes[:hit]
            r.result.finish = "stop_string"
            return self._finish(r)
        if job.prefix_check is not None and not job.prefix_check(r.out_bytes.decode("utf-8", errors="ignore")):
            r.result.finish = "invalid"
            return self._finish(r)
        if len(r.out) >= job.max_new:
            r.result.finish = "max_tokens"
            return self._finish(r)
        return False

    @staticmethod
    def _finish(r: Row) -> bool:
        r.result.tokens = tuple(r.out)
        r.result.text = r.out_bytes.decode("utf-8", errors="replace")
        return True


def _summarise(logits: torch.Tensor, want: torch.Tensor | None) -> tuple[list[int], list[bool], list[float]]:
    """Per row of ``logits`` [A, V]: argmax, any non-finite value, log-probability of ``want``."""
    picks = logits.argmax(dim=-1)
    bad = ~torch.isfinite(logits).all(dim=-1)
    if want is None:
        lp = torch.zeros_like(picks, dtype=torch.float64)
    else:
        lp = torch.log_softmax(logits, dim=-1).gather(-1, want.view(-1, 1)).squeeze(-1)
    packed = torch.stack((picks.double(), bad.double(), lp.double()), dim=1).cpu().tolist()
    return [int(p) for p, _, _ in packed], [bool(b) for _, b, _ in packed], [float(x) for _, _, x in packed]


def _first_stop(data: bytes, stops: Sequence[bytes], start: int) -> int | None:
    """Offset of the earliest stop string in ``data`` at or after ``start``."""
    best: int | None = None
    for s in stops:
        at = data.find(s, start)
        if at >= 0 and (best is None or at < best):
            best = at
    return best
