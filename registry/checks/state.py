"""The State rules (STA001–STA007): a State file's tensors, their names, dtype, shape and values against its base."""

from __future__ import annotations

from rwkv_registry.core.rules import E, Rule, Rulebook, W

RULES = Rulebook(
    Rule(
        "STA001",
        E,
        "State tensor names are not exactly blocks.0…L-1.att.time_state",
        "A State file holds one `blocks.N.att.time_state` per layer of its base (N = 0 … L-1, each once); "
        "re-export it from rwkv_state_tune for this base.",
    ),
    Rule(
        "STA002",
        E,
        "State tensor shape does not match the base",
        "Each tensor is [H, 64, 64] with H = n_embd / 64 of the base; the file was trained for another base.",
    ),
    Rule(
        "STA003",
        E,
        "State dtype is not bfloat16 or float32",
        "Convert the state to bfloat16 or float32 before publishing.",
    ),
    Rule(
        "STA004",
        E,
        "State holds non-finite values",
        "NaN or Inf in the state: training diverged; use an earlier checkpoint.",
    ),
    Rule(
        "STA005",
        E,
        "State file larger than the server's 512 MiB upload limit",
        "rwkv_lightning_cuda refuses a State upload over 512 MiB; a State of a released base is far smaller "
        "(7.2B bf16: 16 MiB): keep only the blocks.N.att.time_state tensors, in bfloat16 or float32.",
    ),
    Rule(
        "STA006",
        W,
        "State file holds tensors besides blocks.N.att.time_state",
        "The server ignores them, but RWKV-PEFT's merge_state.py copies every key of a State into the base; "
        "save only the blocks.N.att.time_state tensors.",
    ),
    Rule(
        "STA007",
        W,
        "State file in safetensors format",
        "rwkv_lightning_cuda's /v1/state/upload reads only torch .pth archives, and RWKV-PEFT loads States with "
        "torch.load; publish the State as a .pth written by torch.save or the trainer.",
    ),
)
finding = RULES.finding
