"""RWKV-7 (x070, G1 family) in PyTorch, to run bases with State and MiSS weights.

Usage::

    import torch
    from rwkv_registry.model import RWKV7, load_state_weights, load_miss, get_tokenizer, generate, get_profile

    model = RWKV7.from_pth("base.pth", device="cpu", dtype=torch.float32)
    state = model.new_state(batch=1, time_state=load_state_weights("state.pth"))
    logits, state = model.forward(torch.tensor([[510, 3158]]), state)   # [B, V] at the last position
    model.apply_miss(load_miss("adapter-final.pth"), mode="merge")       # or mode="fly"; remove_miss()

    profile = get_profile("g1k-think")
    prompt = profile.render([("user", "List the files.")])
    [out] = generate(model, [prompt], max_tokens=64, profile=profile)   # greedy, exact

Modules: ``config`` (shapes), ``rwkv7`` (model), ``time_mix`` / ``channel_mix`` / ``block`` /
``lora`` / ``wkv`` (one concept each), ``state`` (State files), ``miss`` (MiSS), ``tokenizer``,
``profiles``, ``generate``, ``decode`` (fixed-batch decode steps, CUDA graphs on a GPU), ``tiny``
(test checkpoints).
"""

from rwkv_registry.model.config import RWKV7Config
from rwkv_registry.model.decode import Decoder
from rwkv_registry.model.errors import (
    FingerprintMismatchError,
    ModelError,
    ShapeMismatchError,
    WeightsFormatError,
)
from rwkv_registry.model.generate import Generation, generate
from rwkv_registry.model.miss import MissAdapter, MissLinear, MissTarget, load_miss
from rwkv_registry.model.profiles import (
    PROFILES,
    SAMPLING_PRESETS,
    Message,
    PromptProfile,
    SamplingPreset,
    ThinkingMode,
    get_profile,
    get_sampling,
)
from rwkv_registry.model.rwkv7 import RWKV7
from rwkv_registry.model.state import LayerState, RWKV7State, StateWeights, load_state_weights
from rwkv_registry.model.tokenizer import RWKVTokenizer, get_tokenizer
from rwkv_registry.model.wkv import set_fused_ops, set_wkv_backend, wkv7

__all__ = [
    "PROFILES",
    "RWKV7",
    "SAMPLING_PRESETS",
    "Decoder",
    "FingerprintMismatchError",
    "Generation",
    "LayerState",
    "Message",
    "MissAdapter",
    "MissLinear",
    "MissTarget",
    "ModelError",
    "PromptProfile",
    "RWKV7Config",
    "RWKV7State",
    "RWKVTokenizer",
    "SamplingPreset",
    "ShapeMismatchError",
    "StateWeights",
    "ThinkingMode",
    "WeightsFormatError",
    "generate",
    "get_profile",
    "get_sampling",
    "get_tokenizer",
    "load_miss",
    "load_state_weights",
    "set_fused_ops",
    "set_wkv_backend",
    "wkv7",
]
