"""Tests that kill hand-written mutants of MiSS/State application, prompt profiles and generation.

A mutation audit of ``model/miss.py``, ``model/state.py`` (and their application in
``model/rwkv7.py``), ``model/profiles.py`` and ``model/generate.py`` left these behaviours open.
Each test checks against an independent computation written here from FORMATS.md (§3 State
files, §4 MiSS, §6 the G1 chat format) or from the ``rwkv`` package's sampler, not against the
code under test: MiSS merged by hand with an explicit 0/1 block matrix, State tensors compared
by name, prompts spelled out, and generation driven by a scripted stand-in model whose logits
are chosen by the test.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import math
import zipfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
import torch
from model_helpers import rel_err, write_torch_save_package

from rwkv_registry.model import (
    RWKV7,
    MissAdapter,
    ShapeMismatchError,
    WeightsFormatError,
    generate,
    get_profile,
    get_sampling,
    get_tokenizer,
    load_miss,
    load_state_weights,
)
from rwkv_registry.model.generate import Sampler, prefill
from rwkv_registry.model.miss import MissLinear
from rwkv_registry.model.profiles import Message, PromptProfile, SamplingPreset, ThinkingMode
from rwkv_registry.model.state import LayerState, RWKV7State
from rwkv_registry.model.tiny import make_tiny_state, miss_in_out, save_tensors, tiny_miss_tensors

generate_module = importlib.import_module("rwkv_registry.model.generate")  # the package re-exports the function

TOKS = [5, 300, 65000, 12, 261, 4444, 9, 70, 1000, 33]

# ------------------------------------------------------------------------------ MiSS by hand

RANK = 5  # 128 and 512 are not multiples of 5: every target has a partial last block
ALPHA = 3.0


def block_matrix(rank: int, in_features: int) -> torch.Tensor:
    """P [rank, K] with P[j, k] = 1 where k % rank == j (FORMATS §4: S = X @ P^T, the last block
    zero padded, which the modulo does by itself)."""
    P = torch.zeros(rank, in_features)
    for k in range(in_features):
        P[k % rank, k] = 1.0
    return P


def miss_tensors(model: RWKV7, *, seed: int = 11, targets: tuple[str, ...] | None = None) -> dict[str, torch.Tensor]:
    return tiny_miss_tensors(model.config, rank=RANK, seed=seed, std=0.05, targets=targets)


def make_adapter(model: RWKV7, tensors: dict[str, torch.Tensor]) -> MissAdapter:
    ins = {n: miss_in_out(model.config, n.split(".", 2)[2][:-2])[0] for n in tensors}
    return MissAdapter.from_tensors(tensors, ins, rank=RANK, alpha=ALPHA)


def hand_merged_state_dict(
    base: dict[str, torch.Tensor], tensors: dict[str, torch.Tensor], scale: float
) -> dict[str, torch.Tensor]:
    """``W + scale * D @ P`` for every ``blocks.L.<target>.D`` in fp32: the adapted weight of
    ``blocks.L.<target>`` (D [out, rank] as stored, no transpose)."""
    out = {k: v.float().clone() for k, v in base.items()}
    for name, D in tensors.items():
        key = name[: -len(".D")]
        W = out[key]
        out[key] = W + scale * (D.float() @ block_matrix(D.shape[1], W.shape[1]))
    return out


def logits_of(model: RWKV7) -> torch.Tensor:
    with torch.no_grad():
        logits, _ = model.forward(torch.tensor([TOKS]), full_output=True)
    return logits


def test_merged_weights_equal_the_hand_merge_exactly(model: RWKV7) -> None:
    """Every target of every layer gets W + scale * D @ P, and nothing else changes."""
    tensors = miss_tensors(model)
    adapter = make_adapter(model, tensors)
    assert adapter.scale == ALPHA / RANK
    base = {k: v.clone() for k, v in model.state_dict().items()}
    want = hand_merged_state_dict(base, tensors, ALPHA / RANK)
    model.apply_miss(adapter, mode="merge", force=True)
    got = model.state_dict()
    changed = {k for k in base if not torch.equal(got[k], base[k])}
    assert changed == {n[: -len(".D")] for n in tensors}
    for k, v in want.items():
        assert torch.equal(got[k], v), k


def test_bf16_merge_rounds_once_from_fp32(tiny_base: Path) -> None:
    """The merged bf16 weight is the fp32 sum rounded once (not D rounded to bf16 first)."""
    model = RWKV7.from_pth(tiny_base, dtype=torch.bfloat16)
    tensors = miss_tensors(model)
    base = {k: v.clone() for k, v in model.state_dict().items()}
    scale = 0.3  # the scaled D is not a bf16 number: a second rounding shows
    model.apply_miss(dataclasses.replace(make_adapter(model, tensors), scale=scale), mode="merge", force=True)
    want = hand_merged_state_dict(base, tensors, scale)
    for name in tensors:
        key = name[: -len(".D")]
        assert torch.equal(model.state_dict()[key], want[key].to(torch.bfloat16)), key


@pytest.mark.parametrize("mode", ["merge", "fly"])
def test_every_target_alone_matches_a_hand_merged_base(model: RWKV7, mode: str) -> None:
    """One target at a time, each layer: the logits equal those of a base whose weight was merged
    by hand, so an adapter applied to another target or layer (or transposed) shows."""
    base_sd = {k: v.clone() for k, v in model.state_dict().items()}
    plain = logits_of(model)
    for layer in range(model.config.n_layer):
        for target in ("att.receptance.weight", "att.key.weight", "att.value.weight", "att.output.weight"):
            _check_single(model, base_sd, plain, layer, target, mode)
        for target in ("ffn.key.weight", "ffn.value.weight"):
            _check_single(model, base_sd, plain, layer, target, mode)


def _check_single(
    model: RWKV7, base_sd: dict[str, torch.Tensor], plain: torch.Tensor, layer: int, target: str, mode: str
) -> None:
    name = f"blocks.{layer}.{target}.D"
    tensors = {name: miss_tensors(model, seed=20 + layer)[name] * 4}  # a larger D: a clear change
    hand = RWKV7.from_state_dict(hand_merged_state_dict(base_sd, tensors, ALPHA / RANK))
    want = logits_of(hand)
    model.apply_miss(make_adapter(model, tensors), mode=mode, force=True)  # type: ignore[arg-type]
    got = logits_of(model)
    model.remove_miss()
    assert rel_err(want, plain) > 1e-2, name  # the target matters: the comparison has teeth
    assert rel_err(got, want) < 1e-4, (name, mode)  # fp32 rounding of two summation orders


@pytest.mark.parametrize("mode", ["merge", "fly"])
def test_the_adapters_scale_is_what_is_applied(model: RWKV7, mode: str) -> None:
    """The package's ``scale`` (not recomputed from alpha/rank) is the factor of the MiSS term."""
    tensors = miss_tensors(model)
    adapter = dataclasses.replace(make_adapter(model, tensors), scale=1.7)
    hand = RWKV7.from_state_dict(hand_merged_state_dict(model.state_dict(), tensors, 1.7))
    model.apply_miss(adapter, mode=mode, force=True)  # type: ignore[arg-type]
    assert rel_err(logits_of(model), logits_of(hand)) < 1e-5


def test_in_features_of_another_width_is_refused(model: RWKV7) -> None:
    tensors = miss_tensors(model, targets=("att.key.weight",))
    adapter = MissAdapter.from_tensors(tensors, dict.fromkeys(tensors, 256), rank=RANK, alpha=ALPHA)
    with pytest.raises(ShapeMismatchError, match=r"with in_features 256, the model's layer needs D \[128, 5\]"):
        model.apply_miss(adapter, force=True)
    assert model.miss is None


def test_miss_linear_refuses_a_D_of_another_output_width() -> None:
    lin = torch.nn.Linear(10, 6, bias=False)
    with pytest.raises(ValueError, match=r"MiSS D shape \[7, 5\] does not fit linear \[out=6, rank\]"):
        MissLinear(lin, torch.zeros(7, RANK), 0.5)


# ---------------------------------------------------------------------------- MiSS packages


def _manifest(path: Path) -> dict:
    with zipfile.ZipFile(path) as zf:
        return json.loads(zf.read("archive/miss.json"))


def _package(model: RWKV7, tmp_path: Path, **over: object) -> Path:
    return write_torch_save_package(tmp_path / "adapter-final.pth", make_adapter(model, miss_tensors(model)), **over)


def test_manifest_scale_is_read_from_the_file(model: RWKV7, tmp_path: Path) -> None:
    assert load_miss(_package(model, tmp_path)).scale == ALPHA / RANK
    assert load_miss(_package(model, tmp_path, scale=0.25)).scale == 0.25
    # absent: alpha / rank (3 / 5, not rank / alpha); the manifest written must really lack it
    path = write_torch_save_package(
        tmp_path / "no-scale.pth", make_adapter(model, miss_tensors(model)), drop=("scale",)
    )
    assert "scale" not in _manifest(path)
    assert load_miss(path).scale == ALPHA / RANK == 0.6


def test_a_target_listed_twice_is_refused(model: RWKV7, tmp_path: Path) -> None:
    targets = _manifest(_package(model, tmp_path))["targets"]
    path = _package(model, tmp_path, targets=[*targets, targets[3]])
    with pytest.raises(WeightsFormatError, match=r"target 'blocks\.0\.att\.output\.weight\.D' appears twice"):
        load_miss(path)


def test_tensors_missing_from_targets_are_refused(model: RWKV7, tmp_path: Path) -> None:
    targets = _manifest(_package(model, tmp_path))["targets"]
    path = _package(model, tmp_path, targets=targets[:-1])
    with pytest.raises(
        WeightsFormatError, match=r"tensors not listed in targets: \['blocks\.1\.ffn\.value\.weight\.D'\]"
    ):
        load_miss(path)


def test_non_finite_values_are_refused(model: RWKV7, tmp_path: Path) -> None:
    tensors = miss_tensors(model)
    tensors["blocks.1.att.value.weight.D"][3, 2] = float("inf")
    path = write_torch_save_package(tmp_path / "a.pth", make_adapter(model, tensors))
    with pytest.raises(WeightsFormatError, match=r"blocks\.1\.att\.value\.weight\.D: tensor has non-finite values"):
        load_miss(path)


def test_in_features_is_required(model: RWKV7, tmp_path: Path) -> None:
    targets = _manifest(_package(model, tmp_path))["targets"]
    targets[0].pop("in_features")
    with pytest.raises(WeightsFormatError, match=r"in_features is None, expected a positive integer"):
        load_miss(_package(model, tmp_path, targets=targets))


def test_rank_must_match_the_tensors_and_stay_in_range(model: RWKV7, tmp_path: Path) -> None:
    with pytest.raises(
        WeightsFormatError, match=r"blocks\.0\.att\.receptance\.weight\.D: tensor is .* expected \[out, rank=6\]"
    ):
        load_miss(_package(model, tmp_path, rank=6))
    with pytest.raises(WeightsFormatError, match=r"rank is 1025, expected an integer in 1\.\.1024"):
        load_miss(_package(model, tmp_path, rank=1025))


def test_old_manifests_take_layer_and_target_from_the_name(model: RWKV7, tmp_path: Path) -> None:
    targets = [
        {"name": t["name"], "in_features": t["in_features"]} for t in _manifest(_package(model, tmp_path))["targets"]
    ]
    loaded = load_miss(_package(model, tmp_path, targets=targets))
    assert [(t.layer, t.target) for t in loaded.targets] == [
        (int(n.split(".")[1]), n.split(".", 2)[2][:-2]) for n in miss_tensors(model)
    ]


# ------------------------------------------------------------------------------------ State


def test_state_layers_are_matched_by_name_not_file_order(tmp_path: Path) -> None:
    """12 layers written in name order (0, 1, 10, 11, 2, ...): layer i is blocks.i, whatever the order."""
    tensors = {f"blocks.{i}.att.time_state": torch.full((2, 4, 4), float(i)) for i in range(12)}
    for order in (sorted(tensors), list(reversed(tensors))):
        path = save_tensors(tmp_path / "s.pth", {k: tensors[k] for k in order})
        weights = load_state_weights(path)
        assert weights.shape == (12, 2, 4, 4)
        for i, t in enumerate(weights.time_state):
            assert torch.equal(t, tensors[f"blocks.{i}.att.time_state"]), (order, i)


def test_state_layers_of_different_shapes_are_refused(tmp_path: Path) -> None:
    path = save_tensors(
        tmp_path / "s.pth",
        {"blocks.0.att.time_state": torch.zeros(2, 64, 64), "blocks.1.att.time_state": torch.zeros(4, 64, 64)},
    )
    with pytest.raises(WeightsFormatError) as e:
        load_state_weights(path)
    assert str(e.value) == (
        f"{path}: blocks.1.att.time_state has shape [4, 64, 64], expected [H, V, K] like layer 0 [2, 64, 64]"
    )


def test_state_entry_with_a_suffix_is_refused(tmp_path: Path) -> None:
    path = save_tensors(
        tmp_path / "s.pth",
        {"blocks.0.att.time_state": torch.zeros(2, 64, 64), "blocks.0.att.time_state_old": torch.zeros(2, 64, 64)},
    )
    with pytest.raises(WeightsFormatError, match=r"unexpected entry 'blocks\.0\.att\.time_state_old'"):
        load_state_weights(path)


def test_in_place_decoding_never_writes_into_the_loaded_state(model: RWKV7, tiny_base: Path, tmp_path: Path) -> None:
    """An fp32 State file: each request starts from the file's values, even after advance()
    (the in-place decode step) ran on an earlier request's state."""
    path = make_tiny_state(tmp_path / "s32.pth", tiny_base, seed=9, dtype=torch.float32)
    raw = torch.load(path, weights_only=True)
    weights = load_state_weights(path)
    for _ in range(2):
        state = model.new_state(1, weights)
        model.advance(torch.tensor([TOKS[:4]]), state)
        for i, t in enumerate(weights.time_state):
            assert torch.equal(t, raw[f"blocks.{i}.att.time_state"]), i
    fresh = model.new_state(2, weights)
    for i, layer in enumerate(fresh.layers):
        for b in range(2):
            assert torch.equal(layer.wkv[b], raw[f"blocks.{i}.att.time_state"])


def test_advance_from_a_new_state_equals_forward(model: RWKV7, tiny_state: Path) -> None:
    weights = load_state_weights(tiny_state)
    with torch.no_grad():
        _, s1 = model.forward(torch.tensor([TOKS[:5]]), model.new_state(1, weights))
        want, _ = model.forward(torch.tensor([TOKS[5:]]), s1)
    state = model.new_state(1, weights)
    model.advance(torch.tensor([TOKS[:5]]), state)
    got = model.advance(torch.tensor([TOKS[5:]]), state)
    assert rel_err(got, want) < 1e-5


def test_bf16_model_keeps_the_wkv_state_in_fp32(tiny_base: Path, tiny_state: Path) -> None:
    model = RWKV7.from_pth(tiny_base, dtype=torch.bfloat16)
    raw = torch.load(tiny_state, weights_only=True)
    for state in (model.new_state(2), model.new_state(2, load_state_weights(tiny_state))):
        for layer in state.layers:
            assert layer.wkv.dtype == torch.float32
            assert layer.att_shift.dtype == layer.ffn_shift.dtype == torch.bfloat16
    state = model.new_state(1, load_state_weights(tiny_state))
    for i, layer in enumerate(state.layers):
        assert torch.equal(layer.wkv[0], raw[f"blocks.{i}.att.time_state"].float())


def _busy_state(model: RWKV7) -> RWKV7State:
    with torch.no_grad():
        _, state = model.forward(torch.tensor([TOKS[:4], TOKS[4:8]]))
    return state


def test_copy_shares_no_tensor(model: RWKV7) -> None:
    state = _busy_state(model)
    saved = [[t.clone() for t in (s.att_shift, s.wkv, s.ffn_shift)] for s in state.layers]
    dup = state.copy()
    for s in dup.layers:
        for t in (s.att_shift, s.wkv, s.ffn_shift):
            t.add_(1.0)
    for s, want in zip(state.layers, saved, strict=True):
        for t, w in zip((s.att_shift, s.wkv, s.ffn_shift), want, strict=True):
            assert torch.equal(t, w)


def test_to_detach_and_rows_keep_each_tensor_in_its_slot(model: RWKV7) -> None:
    state = _busy_state(model)
    moved = state.to("cpu")
    for a, b in zip(state.layers, moved.layers, strict=True):
        assert (
            torch.equal(a.att_shift, b.att_shift)
            and torch.equal(a.wkv, b.wkv)
            and torch.equal(a.ffn_shift, b.ffn_shift)
        )
    want = [t[1] for s in state.layers for t in (s.att_shift, s.wkv, s.ffn_shift)]
    got = state.to_rwkv_list(1)
    assert len(got) == len(want) and all(torch.equal(a, b) for a, b in zip(got, want, strict=True))
    s0 = torch.zeros(model.config.n_layer, 2, 64, 64, requires_grad=True)
    from rwkv_registry.model import StateWeights

    _, trained = model.forward(torch.tensor([TOKS[:3]]), model.new_state(1, StateWeights(tuple(s0))))
    assert trained.layers[0].wkv.requires_grad
    assert not any(t.requires_grad for s in trained.detach().layers for t in (s.att_shift, s.wkv, s.ffn_shift))


# --------------------------------------------------------------------------------- profiles


@pytest.mark.parametrize(
    ("thinking", "end"),
    [
        (ThinkingMode.OFF, "Assistant:"),
        (ThinkingMode.FAST, "Assistant: <think></think"),  # prompt.go e3ed3d4: the final ">" withheld
        (ThinkingMode.FULL, "Assistant: <think"),
    ],
)
def test_thinking_suffixes_as_in_formats(thinking: ThinkingMode, end: str) -> None:
    profile = PromptProfile("p", "", thinking, ("\n\n",), (0,))
    assert profile.render([("user", "hi")]) == "User: hi\n\n" + end


def test_system_and_tool_text_are_cleaned_like_user_text() -> None:
    prompt = get_profile("g1k").render(
        [("system", "  Tools:\r\n\r\n\r\nnone \n"), ("user", "go"), ("tool", "\n a.txt\r\rb.txt\n\n\n")]
    )
    assert prompt == "System: Tools:\nnone\n\nUser: go\n\nTool: a.txt\nb.txt\n\nAssistant:"


def test_roles_are_case_insensitive_and_content_comes_first() -> None:
    prompt = get_profile("g1k").render([("User", "hi"), {"role": "ASSISTANT", "content": "yes", "text": "no"}])
    assert prompt == "User: hi\n\nAssistant: yes\n\nAssistant:"
    assert Message.coerce({"role": "tool", "text": "t"}) == Message("tool", "t")


# ------------------------------------------------------------------------- generation (scripted)

NL, OK, USER, COLON, HELLO, A, B, C = 11, 2095, 24281, 59, 34550, 66, 67, 68
VOCAB = 65536
Step = int | dict[int, float]  # one token (a clear argmax) or some tokens' logits (others very low)


class ScriptedModel:
    """A stand-in for RWKV7 in ``generate``: the prompt's first token picks a script, whose n-th
    entry gives the logits after n tokens of output (then token 0 for ever). The state carries the
    script id and the step, so batches, row selection and prefill work as with the real model."""

    def __init__(self, scripts: dict[int, Sequence[Step]]) -> None:
        self.scripts = scripts
        self.device = torch.device("cpu")
        self.forwards = 0

    def new_state(self, batch: int = 1, time_state: object = None) -> RWKV7State:
        z = torch.zeros(batch, 1)
        return RWKV7State([LayerState(z.clone(), torch.zeros(batch, 1, 1, 1), z.clone())])

    def forward(self, tokens: torch.Tensor, state: RWKV7State) -> tuple[torch.Tensor, RWKV7State]:
        self.forwards += 1
        s = state.layers[0]
        started = s.ffn_shift[:, 0] > 0
        sid = torch.where(started, s.att_shift[:, 0], tokens[:, 0].float())
        step = s.ffn_shift[:, 0] + 1  # prefill counts as the first step
        logits = torch.full((tokens.shape[0], VOCAB), -1e4)
        for b in range(tokens.shape[0]):
            script = self.scripts[int(sid[b])]
            n = int(step[b]) - 1
            entry: Step = script[n] if n < len(script) else 0
            for t, v in ({entry: 50.0} if isinstance(entry, int) else entry).items():
                logits[b, t] = v
        return logits, RWKV7State([LayerState(sid[:, None].clone(), s.wkv.clone(), step[:, None].clone())])


def run(scripts: dict[int, Sequence[Step]], prompts: list[list[int]], **kw: object):
    model = ScriptedModel(scripts)
    kw.setdefault("max_tokens", 8)
    out = generate(model, prompts, tokenizer=get_tokenizer(), fixed_batch=False, **kw)  # type: ignore[arg-type]
    return out, model


def test_profile_stop_token_applies_without_explicit_stop_tokens() -> None:
    [g], _ = run({1000: [OK, 0, OK]}, [[1000, 5]], stop_tokens=(), profile=get_profile("g1k"))
    assert (g.tokens, g.text, g.finish_reason, g.stop) == ((OK,), "ok", "stop_token", 0)


@pytest.mark.parametrize(
    ("script", "stop"),
    [([OK, NL, USER, COLON, OK], "\nUser:"), ([OK, NL, NL, OK], "\n\n")],
    ids=["new-user-turn", "blank-line"],
)
def test_profile_stop_strings_split_across_tokens(script: list[int], stop: str) -> None:
    """FORMATS §6: the G1 profiles stop at "\\n\\n" and at a new User turn, each arriving as
    several tokens; the output is cut before the stop, the completing token is kept in tokens."""
    for name in ("g1k", "g1k-think"):
        [g], _ = run({1000: script}, [[1000]], stop_tokens=(), profile=get_profile(name))
        n = len(script) - 1
        assert (g.text, g.finish_reason, g.stop, g.tokens) == ("ok", "stop_string", stop, tuple(script[:n])), name


def test_the_earliest_stop_wins_within_one_token() -> None:
    [g], _ = run({1000: [HELLO]}, [[1000]], stop_strings=["lo", "el"])
    assert (g.text, g.stop, g.tokens) == ("h", "el", (HELLO,))


def test_max_tokens_is_exact_and_costs_no_extra_forward() -> None:
    [g], model = run({1000: [A, B, C, A, B, C]}, [[1000, 1, 2]], max_tokens=4)
    assert (g.tokens, g.finish_reason, g.text) == ((A, B, C, A), "max_tokens", "ABCA")
    assert model.forwards == 1 + 3  # the prefill, then one step per token but the last


def test_greedy_preset_takes_the_first_of_tied_tokens() -> None:
    for seed in range(8):
        [g], _ = run({1000: [{B: 1.0, C: 1.0}]}, [[1000]], max_tokens=1, sampling=get_sampling("greedy"), seed=seed)
        assert g.tokens == (B,)


def test_penalties_follow_each_row_after_another_row_stops() -> None:
    """Row 0 stops after one token; row 1 with a large presence penalty must use its own counts,
    so its first three tokens are A, B and C in some order, for every seed."""
    preset = SamplingPreset("p", "", 1.0, 1.0, 0, 100.0, 0.0, 1.0)
    even = {A: 0.0, B: 0.0, C: 0.0}
    for seed in range(20):
        out, _ = run({1000: [even, 0], 1001: [even] * 4}, [[1000], [1001]], max_tokens=3, sampling=preset, seed=seed)
        assert out[0].finish_reason == "stop_token" and len(out[0].tokens) == 1
        assert sorted(out[1].tokens) == [A, B, C], seed


def test_prefill_in_chunks_carries_the_state(model: RWKV7, monkeypatch: pytest.MonkeyPatch) -> None:
    with torch.no_grad():
        want, wstate = model.forward(torch.tensor([TOKS]))
        monkeypatch.setattr(generate_module, "PREFILL_CHUNK", 3)
        got, gstate = prefill(model, TOKS)
    assert rel_err(got, want) < 1e-5
    for a, b in zip(gstate.to_rwkv_list(), wstate.to_rwkv_list(), strict=True):
        assert rel_err(a, b) < 1e-5


# ------------------------------------------------------------------- the sampler vs the rwkv package


def rwkv_sample_probs(logits: np.ndarray, temperature: float, top_p: float, top_k: int) -> np.ndarray:
    """The distribution the ``rwkv`` package's ``PIPELINE.sample_logits`` draws from (CPU branch),
    written out: softmax, top-p cut at the first sorted probability whose running sum reaches
    top_p, top-k, ``probs ** (1 / temperature)``, normalise."""
    e = np.exp(logits - logits.max())
    probs = e / e.sum()
    sorted_ids = np.argsort(probs)
    sorted_probs = probs[sorted_ids][::-1]
    if top_p < 1.0:  # the package's top_p=1 may cut to one token by rounding; 1 means off here
        cutoff = float(sorted_probs[np.argmax(np.cumsum(sorted_probs) >= top_p)])
        probs[probs < cutoff] = 0
    if 0 < top_k < len(probs):
        probs[sorted_ids[:-top_k]] = 0
    if temperature != 1.0:
        probs = probs ** (1.0 / temperature)
    return probs / probs.sum()


class Spy:
    """Replaces torch.multinomial: records the distributions and returns the given picks."""

    def __init__(self, picks: list[list[int]]) -> None:
        self.picks, self.seen = picks, []

    def __call__(self, probs: torch.Tensor, n: int, generator: torch.Generator | None = None) -> torch.Tensor:
        self.seen.append(probs.double() / probs.double().sum(dim=-1, keepdim=True))
        return torch.tensor(self.picks[len(self.seen) - 1])[:, None]


@pytest.mark.parametrize(
    ("temperature", "top_p", "top_k"),
    [(0.3, 0.5, 0), (1.0, 0.9, 0), (2.0, 0.7, 3), (0.7, 1.0, 5), (1.0, 0.35, 0)],
    ids=["g1k-agent", "nucleus", "hot-top3", "top5", "tight-nucleus"],
)
def test_sampler_distribution_equals_the_rwkv_package(
    monkeypatch: pytest.MonkeyPatch, temperature: float, top_p: float, top_k: int
) -> None:
    logits = torch.tensor([math.sin(1.7 * i) * 3 for i in range(40)])  # distinct values, no ties
    spy = Spy([[0]])
    monkeypatch.setattr(torch, "multinomial", spy)
    preset = SamplingPreset("p", "", temperature, top_p, top_k, 0.0, 0.0, 1.0)
    Sampler(preset, 1, 40, 0).pick(logits[None], [0])
    want = rwkv_sample_probs(logits.double().numpy(), temperature, top_p, top_k)
    assert np.allclose(spy.seen[0][0].numpy(), want, atol=1e-6)


def test_sampler_penalties_decay_per_row(monkeypatch: pytest.MonkeyPatch) -> None:
    """The package's chat loop: logits[t] -= presence + frequency * count[t] for tokens seen; after
    each pick every count is multiplied by the decay, then the picked token's count grows by 1.
    Each row keeps its own counts, also after another row left the batch."""
    presence, frequency, decay = 0.4, 0.3, 0.9
    picks = [[3, 7], [3, 3], [5]]  # rows (0, 1), (0, 1), then row 1 alone
    spy = Spy(picks)
    monkeypatch.setattr(torch, "multinomial", spy)
    sampler = Sampler(SamplingPreset("p", "", 1.0, 1.0, 0, presence, frequency, decay), 2, 10, 0)
    logits = torch.linspace(0.0, 1.0, 10)
    counts = [dict[int, float](), dict[int, float]()]
    for rows, chosen, seen in zip([[0, 1], [0, 1], [1]], picks, range(3), strict=True):
        sampler.pick(logits.expand(len(rows), -1).clone(), rows)
        for k, row in enumerate(rows):
            x = logits.double().clone()
            for t, c in counts[row].items():
                x[t] -= presence + frequency * c
            want = torch.softmax(x, dim=-1)
            assert torch.allclose(spy.seen[seen][k], want, atol=1e-6), (seen, row)
        for row_counts in counts:  # decay every row's counts, then count the picks
            for t in row_counts:
                row_counts[t] *= decay
        for row, t in zip(rows, chosen, strict=True):
            counts[row][t] = counts[row].get(t, 0.0) + 1.0


def test_sampler_seed_is_used() -> None:
    preset = SamplingPreset("p", "", 1.0, 1.0, 0, 0.0, 0.0, 1.0)
    logits = torch.zeros(1, 1000)

    def draws(seed: int) -> list[int]:
        s = Sampler(preset, 1, 1000, seed)
        return [s.pick(logits, [0])[0] for _ in range(5)]

    assert draws(1) == draws(1) and draws(1) != draws(2)


def test_rank_1024_is_the_largest_accepted_and_in_features_must_be_positive(model: RWKV7, tmp_path: Path) -> None:
    """The manifest's bounds are inclusive: rank 1..1024 (1024 loads), in_features ≥ 1 (0 is refused)."""
    tensors = tiny_miss_tensors(model.config, rank=1024, seed=3, std=0.01, targets=("att.key.weight",))
    ins = {n: miss_in_out(model.config, n.split(".", 2)[2][:-2])[0] for n in tensors}
    path = write_torch_save_package(
        tmp_path / "wide.pth", MissAdapter.from_tensors(tensors, ins, rank=1024, alpha=1024.0)
    )
    wide = load_miss(path)
    assert (wide.rank, wide.scale) == (1024, 1.0)
    targets = _manifest(_package(model, tmp_path))["targets"]
    targets[0]["in_features"] = 0
    with pytest.raises(WeightsFormatError, match=r"in_features is 0, expected a positive integer"):
        load_miss(_package(model, tmp_path, targets=targets))
