"""Batched greedy generation: exact, deterministic, mixed lengths, stops."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from rwkv_registry.core.errors import UsageError
from rwkv_registry.model import RWKV7, generate, get_profile, get_sampling, get_tokenizer, load_state_weights

PROMPTS = ["User: hi\n\nAssistant:", "Un prompt un peu plus long, en français, avec 中文.", '{"a": 1}']


def greedy_chain(model: RWKV7, prompt: list[int], n: int, state=None) -> list[int]:
    """n greedy tokens by plain forward calls (the definition generate must match)."""
    logits, state = model.forward(torch.tensor([prompt]), state)
    out = []
    for _ in range(n):
        t = int(logits[0].argmax())
        out.append(t)
        logits, state = model.forward(torch.tensor([[t]]), state)
    return out


def test_greedy_equals_argmax_chain(model: RWKV7) -> None:
    ids = get_tokenizer().encode(PROMPTS[0])
    with torch.no_grad():
        want = greedy_chain(model, ids, 8)
    [out] = generate(model, [PROMPTS[0]], max_tokens=8, stop_tokens=())
    assert list(out.tokens) == want
    assert out.finish_reason == "max_tokens" and out.stop is None and out.prompt_tokens == len(ids)
    assert out.text == get_tokenizer().decode(want)


def test_greedy_is_deterministic(model: RWKV7) -> None:
    a = generate(model, PROMPTS, max_tokens=10, stop_tokens=())
    b = generate(model, PROMPTS, max_tokens=10, stop_tokens=())
    assert a == b


def test_batch_of_mixed_lengths_equals_separate_runs(model: RWKV7) -> None:
    lengths = {len(get_tokenizer().encode(p)) for p in PROMPTS}
    assert len(lengths) == len(PROMPTS)  # really mixed
    together = generate(model, PROMPTS, max_tokens=10, stop_tokens=())
    alone = [generate(model, [p], max_tokens=10, stop_tokens=())[0] for p in PROMPTS]
    assert together == alone


def test_token_prompts_are_accepted(model: RWKV7) -> None:
    ids = get_tokenizer().encode(PROMPTS[1])
    assert generate(model, [ids], max_tokens=4) == generate(model, [PROMPTS[1]], max_tokens=4)


def test_stop_string_cuts_the_text(model: RWKV7) -> None:
    tok = get_tokenizer()
    [full] = generate(model, [PROMPTS[1]], max_tokens=12, stop_tokens=())
    # a stop string taken from the middle of the output
    pieces = [tok.decode_bytes([t]) for t in full.tokens]
    pick = next(i for i in range(3, len(pieces)) if pieces[i].strip() and _is_text(pieces[i]))
    stop = pieces[pick].decode("utf-8")
    data = b"".join(pieces)
    at = data.find(stop.encode())
    n = next(k for k in range(1, len(pieces) + 1) if stop.encode() in b"".join(pieces[:k]))
    [out] = generate(model, [PROMPTS[1]], max_tokens=12, stop_strings=[stop], stop_tokens=())
    assert out.finish_reason == "stop_string" and out.stop == stop
    assert out.text == data[:at].decode("utf-8", errors="replace")
    assert out.tokens == full.tokens[:n]


def test_stop_token_ends_before_it(model: RWKV7) -> None:
    [full] = generate(model, [PROMPTS[2]], max_tokens=10, stop_tokens=())
    stop = full.tokens[4]
    first = full.tokens.index(stop)
    [out] = generate(model, [PROMPTS[2]], max_tokens=10, stop_tokens=[stop])
    assert out.finish_reason == "stop_token" and out.stop == stop
    assert out.tokens == full.tokens[:first]


def test_rows_stop_independently(model: RWKV7) -> None:
    full = generate(model, PROMPTS[:2], max_tokens=8, stop_tokens=())
    stop = full[0].tokens[1]
    out = generate(model, PROMPTS[:2], max_tokens=8, stop_tokens=[stop])
    assert out[0].tokens == full[0].tokens[: full[0].tokens.index(stop)]
    want1 = full[1].tokens[: full[1].tokens.index(stop)] if stop in full[1].tokens else full[1].tokens
    assert out[1].tokens == want1


def test_fixed_batch_decoding_gives_the_same_generations(model: RWKV7) -> None:
    """The CUDA default (every row keeps its slot in one Decoder) equals rows leaving the batch."""
    full = generate(model, PROMPTS, max_tokens=8, stop_tokens=())
    stop = full[0].tokens[1]  # row 0 stops early, the others run on
    shrinking = generate(model, PROMPTS, max_tokens=8, stop_tokens=[stop], fixed_batch=False)
    fixed = generate(model, PROMPTS, max_tokens=8, stop_tokens=[stop], fixed_batch=True)
    assert fixed == shrinking
    assert len(fixed[0].tokens) < max(len(g.tokens) for g in fixed)


def test_profile_stops_and_state_file(model: RWKV7, tiny_state: Path) -> None:
    weights = load_state_weights(tiny_state)
    prompt = get_profile("g1k").render([("user", "hi")])
    ids = get_tokenizer().encode(prompt)
    with torch.no_grad():
        want = greedy_chain(model, ids, 6, model.new_state(1, weights))
        plain = greedy_chain(model, ids, 6)
    assert want != plain  # the State matters
    [out] = generate(model, [prompt], max_tokens=6, time_state=weights, stop_tokens=())
    assert list(out.tokens) == want
    [prof] = generate(model, [prompt], max_tokens=6, time_state=weights, profile=get_profile("g1k"))
    assert prof.tokens == tuple(_until_stop(want, get_profile("g1k").stop_strings))


def _until_stop(tokens: list[int], stops: tuple[str, ...]) -> list[int]:
    """Tokens up to token 0 (excluded) or up to the token completing a stop string (included)."""
    tok, out, data = get_tokenizer(), [], b""
    for t in tokens:
        if t == 0:
            break
        out.append(t)
        data += tok.decode_bytes([t])
        if any(s.encode() in data for s in stops):
            break
    return out


def test_sampling_preset_is_reproducible_with_a_seed(model: RWKV7) -> None:
    preset = get_sampling("g1k-agent")
    a = generate(model, PROMPTS, max_tokens=6, sampling=preset, seed=3, stop_tokens=())
    b = generate(model, PROMPTS, max_tokens=6, sampling=preset, seed=3, stop_tokens=())
    assert a == b and all(len(x.tokens) == 6 for x in a)


def test_bad_arguments_are_refused(model: RWKV7) -> None:
    with pytest.raises(UsageError, match="max_tokens must be at least 1, got 0"):
        generate(model, ["x"], max_tokens=0)
    with pytest.raises(UsageError, match="prompt 1 is empty"):
        generate(model, ["x", ""], max_tokens=1)
    assert generate(model, [], max_tokens=3) == []


def _is_text(b: bytes) -> bool:
    try:
        b.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True
