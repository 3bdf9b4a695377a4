"""Batched generation: B prompts of different lengths in one call.

Each prompt is prefilled on its own (no padding token ever enters the recurrence), then the
rows decode together, one token per step; a row leaves the batch when it stops. Greedy decoding
(the default) takes ``argmax`` of fp32 logits: the same prompt gives the same tokens on every run.

Stops, checked after every token: a stop token (not part of the output), a stop string (the
output is cut before it; matched on bytes, so a string split across tokens is found), or
``max_tokens``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import torch

from rwkv_registry.core.errors import UsageError
from rwkv_registry.model.decode import Decoder
from rwkv_registry.model.profiles import PromptProfile, SamplingPreset
from rwkv_registry.model.rwkv7 import RWKV7
from rwkv_registry.model.state import RWKV7State, StateWeights
from rwkv_registry.model.tokenizer import RWKVTokenizer, get_tokenizer

FinishReason = Literal["stop_token", "stop_string", "max_tokens"]
PREFILL_CHUNK = 4096


@dataclass(frozen=True)
class Generation:
    """The output of one prompt."""

    text: str  # decoded output, cut before the stop string
    tokens: tuple[int, ...]  # generated ids (a stop token is not included)
    finish_reason: FinishReason
    stop: str | int | None  # the stop string or token that ended it
    prompt_tokens: int


def prefill(model: RWKV7, tokens: Sequence[int], state: RWKV7State | None = None) -> tuple[torch.Tensor, RWKV7State]:
    """Run one prompt (``B = 1``) in chunks; returns ``(logits [1, V], state)``."""
    if not tokens:
        raise UsageError(
            "cannot prefill an empty prompt", hint="Give at least one token (an empty text encodes to none)."
        )
    logits = None
    for start in range(0, len(tokens), PREFILL_CHUNK):
        chunk = torch.tensor([list(tokens[start : start + PREFILL_CHUNK])], dtype=torch.long, device=model.device)
        logits, state = model.forward(chunk, state)
    assert logits is not None and state is not None
    return logits, state


@torch.inference_mode()
def generate(
    model: RWKV7,
    prompts: Sequence[str | Sequence[int]],
    *,
    max_tokens: int,
    stop_strings: Sequence[str] = (),
    stop_tokens: Sequence[int] = (0,),
    profile: PromptProfile | None = None,
    time_state: StateWeights | None = None,
    sampling: SamplingPreset | None = None,
    seed: int = 0,
    tokenizer: RWKVTokenizer | None = None,
    fixed_batch: bool | None = None,
) -> list[Generation]:
    """Generate for each prompt (text, or token ids); results in prompt order.

    ``fixed_batch`` (default: on CUDA) decodes every row until the last one stops, through one
    :class:`~rwkv_registry.model.decode.Decoder` (a CUDA graph replayed per token); otherwise rows
    that stop leave the batch. Both give the same tokens.

    ``profile`` adds its stop strings and tokens to the given ones. ``time_state`` (a State
    file) is the initial state of every row. ``sampling`` None or a greedy preset decodes
    greedily; another preset samples with a CPU generator seeded with ``seed`` (reproducible on
    one machine, not an exact-match path).
    """
    if max_tokens < 1:
        raise UsageError(f"max_tokens must be at least 1, got {max_tokens}", hint="Pass max_tokens=N with N >= 1.")
    if not prompts:
        return []
    tok = tokenizer or get_tokenizer()
    stops = [s.encode("utf-8") for s in (*stop_strings, *(profile.stop_strings if profile else ())) if s]
    stop_ids = set(stop_tokens) | set(profile.stop_tokens if profile else ())
    ids = [tok.encode(p) if isinstance(p, str) else [int(t) for t in p] for p in prompts]
    for i, p in enumerate(ids):
        if not p:
            raise UsageError(
                f"prompt {i} is empty", hint="Give every prompt some text (or at least one token id), or leave it out."
            )

    # Prefill each prompt alone, then decode all rows as one batch.
    firsts, states = [], []
    for p in ids:
        logits, state = prefill(model, p, model.new_state(1, time_state))
        firsts.append(logits)
        states.append(state)
    logits = torch.cat(firsts)  # [B, V]
    state = RWKV7State.cat(states)
    decoder = None
    if model.device.type == "cuda" if fixed_batch is None else fixed_batch:
        decoder = Decoder(model, len(ids))
        decoder.load(state)
    sampler = None if sampling is None or sampling.greedy else Sampler(sampling, len(ids), logits.shape[-1], seed)

    out_tokens: list[list[int]] = [[] for _ in ids]
    out_bytes = [b"" for _ in ids]
    done: dict[int, tuple[FinishReason, str | int | None, int]] = {}  # row -> (reason, stop, cut)
    active = list(range(len(ids)))
    for step in range(max_tokens):
        picks = logits.argmax(dim=-1).tolist() if sampler is None else sampler.pick(logits, active)
        still = []
        for row, t in zip(active, picks, strict=True):
            if t in stop_ids:
                done[row] = ("stop_token", t, len(out_bytes[row]))
                continue
            out_tokens[row].append(t)
            before = len(out_bytes[row])
            out_bytes[row] += tok.decode_bytes([t])
            hit = _first_stop(out_bytes[row], stops, max(0, before - max((len(s) for s in stops), default=0)))
            if hit is not None:
                cut, s = hit
                done[row] = ("stop_string", s.decode("utf-8"), cut)
                continue
            still.append(row)
        if not still or step == max_tokens - 1:
            active = still
            break
        if decoder is not None:  # every row keeps its slot; stopped rows are fed 0 and ignored
            last = {r: out_tokens[r][-1] for r in still}
            feed = torch.tensor([[last.get(r, 0)] for r in range(len(ids))], dtype=torch.long)
            logits = decoder.step(feed)[torch.tensor(still, device=model.device)]  # [A, V]
        else:
            if len(still) < len(active):  # drop the rows that stopped
                state = state.select([active.index(r) for r in still])
            feed = torch.tensor([[out_tokens[r][-1]] for r in still], dtype=torch.long, device=model.device)
            logits, state = model.forward(feed, state)
        active = still
    for row in active:
        done[row] = ("max_tokens", None, len(out_bytes[row]))

    results = []
    for row in range(len(ids)):
        reason, stop, cut = done[row]
        results.append(
            Generation(
                text=out_bytes[row][:cut].decode("utf-8", errors="replace"),
                tokens=tuple(out_tokens[row]),
                finish_reason=reason,
                stop=stop,
                prompt_tokens=len(ids[row]),
            )
        )
    return results


def _first_stop(data: bytes, stops: Sequence[bytes], start: int) -> tuple[int, bytes] | None:
    """The earliest stop string in ``data`` at or after ``start``: ``(offset, stop)``."""
    best: tuple[int, bytes] | None = None
    for s in stops:
        at = data.find(s, start)
        if at >= 0 and (best is None or at < best[0]):
            best = (at, s)
    return best


class Sampler:
    """Temperature / top-k / top-p sampling with presence and frequency penalties.

    Order as in the ``rwkv`` package's ``PIPELINE``: penalties on the logits, softmax, top-k,
    top-p cut, ``probs ** (1 / temperature)``, renormalise, draw.
    """

    def __init__(self, preset: SamplingPreset, rows: int, vocab: int, seed: int) -> None:
        self.p = preset
        self.counts = torch.zeros(rows, vocab)  # [B, V], decayed occurrence counts per row
        self.gen = torch.Generator().manual_seed(seed)

    def pick(self, logits: torch.Tensor, rows: list[int]) -> list[int]:
        """One token per line of ``logits`` [A, V], line ``i`` being batch row ``rows[i]`` (whose counts
        penalise it); every row's counts then decay, and each pick is counted in its row."""
        p = self.p
        x = logits.float().cpu()  # [A, V]
        counts = self.counts[rows]
        x = x - p.presence_penalty * (counts > 0) - p.frequency_penalty * counts
        probs = torch.softmax(x, dim=-1)
        if 0 < p.top_k < probs.shape[-1]:  # 0, or RWKV-Agent's NoTruncation (65536, the vocabulary): no cut
            kth = torch.topk(probs, p.top_k, dim=-1).values[:, -1:]
            probs = torch.where(probs < kth, 0.0, probs)
        if p.top_p < 1.0:
            sorted_p, _ = torch.sort(probs, dim=-1, descending=True)
            cum = torch.cumsum(sorted_p, dim=-1)
            idx = torch.searchsorted(cum, torch.full((cum.shape[0], 1), p.top_p)).clamp(max=cum.shape[-1] - 1)
            cutoff = torch.gather(sorted_p, -1, idx)
            probs = torch.where(probs < cutoff, 0.0, probs)
        if p.temperature != 1.0:
            probs = probs ** (1.0 / p.temperature)
        probs = probs / probs.sum(dim=-1, keepdim=True)
        picks = torch.multinomial(probs, 1, generator=self.gen).squeeze(-1).tolist()
        self.counts *= p.penalty_decay
        for row, t in zip(rows, picks, strict=True):
            self.counts[row, t] += 1.0
        return picks
