"""Side-by-side inference speed at the RWKV-7 7.2B shape: our engine against the ``rwkv`` package.

One command on the GPU machine (random bf16 weights built on the GPU, no model file needed)::

    python bench/gpu_engine.py --out results.json            # also writes results.md (the table)
    python bench/gpu_engine.py --wheels wheels/ --out r.json  # pure-Python wheels (rwkv, fla-core,
                                                              # flash-linear-attention, einops) unpacked
                                                              # and put on the path first (no network)
    python bench/gpu_engine.py --dry-run --out /tmp/r.json    # the whole script on a tiny CPU model

In order (each part is saved to ``--out`` as soon as it is done, so a timeout keeps what ran):

1. the machine's ceilings: device copy bandwidth (bytes read + written per second) and the bf16
   matmul rate;
2. random weights with the 7.2B shape (32 layers, width 4096, head 64, FFN 16384, vocabulary 65536,
   LoRA widths decay 128, aaa 128, mv 96, gate 480) generated on the GPU in the checkpoint layout;
3. our engine (``rwkv_registry.model.RWKV7``, WKV7 and fused Triton kernels; a preflight in
   subprocesses, where a bad memory access cannot spoil this process's CUDA context, turns the
   fused element-wise kernels off, then the WKV kernels too, and says so, should they fail; it
   also fills Triton's cache): prefill tok/s at B=1 for
   T=2048 and T=8192, decode tok/s at B=1 and B=64 (the model's ``Decoder``: one CUDA graph per
   batch size, state updated in place), the kernels one eager step launches and B=1 decode without
   the graph, decode with a random rank-16 MiSS adapter on the fly against merged, and the fast
   path's logits against the reference path (bf16 agreement);
4. the ``rwkv`` package 0.8.32 (``RWKV_V7_ON=1``, ``RWKV_CUDA_ON=1``, strategy ``cuda bf16``) on the
   same weights saved to /dev/shm (or a temporary folder), in a subprocess: prefill and B=1 decode,
   and its last-token logits against ours. Its CUDA extensions (nvcc, minutes) are compiled in the
   background from the start (``MAX_JOBS=4``), so the worker loads them built; a worker that runs
   out of time is killed with everything it started;
5. fla's ``chunk_rwkv7`` op against our ``wkv7`` on the same inputs (B=1, T=4096, H=64), in a
   subprocess; before it, our two kernels alone for every launch configuration (the ``op_sweep``
   entry of the JSON: the numbers to set ``kernels/wkv7/launch.py``'s ``TUNING`` from), and the
   fused element-wise ops (``kernels/timemix``, ``lora``, ``add_norm``, ``miss``) against their PyTorch
   references at M = 1, 64, 2048 rows (``fused_ops``); these op timings replay many calls from one
   CUDA graph (``timed_graph``), as the decode does, so a kernel of a few microseconds is not
   hidden by the host's cost of launching it;
6. a markdown table with ratios and the issue's targets, written beside ``--out``;
7. last, because compiling a 32-layer step may take minutes: decode through ``torch.compile``
   (B=1, then B=64 while at least ``COMPILE_RESERVE_S`` of ``--time-limit`` is left), and the
   table again.

A missing ``rwkv`` or ``fla`` (or a failed CUDA build) gives a row marked "not available" with the
reason. The parts run in a child process that :func:`supervise` watches: a part that hangs inside a
CUDA call (which SIGALRM cannot interrupt) or crashes costs its own figure and a restart of the
child, which replays the finished parts and goes on after it (a crash in building the weights or the
model, which every model figure needs, is first tried once more). The places that depend on the
model's API are the functions marked ``ADAPTER``.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/checkout.py, also when loaded by path
from checkout import bootstrap_package, unpack_wheels  # noqa: E402

RWKV_VERSION = "0.8.32"
COMPILE_RESERVE_S = 150  # the compiled decode runs only with this much of --time-limit left
TARGETS = {"prefill": 25_000, "decode_b1": 220, "decode_b64": 6_000, "miss_overhead_pct": 5.0}


@dataclass(frozen=True)
class Arch:
    """Shape of the random model (FORMATS §2 layout)."""

    n_layer: int
    n_embd: int
    head_size: int
    vocab: int
    ffn: int
    d_decay: int
    d_aaa: int
    d_mv: int
    d_gate: int


ARCH_7B = Arch(
    n_layer=32, n_embd=4096, head_size=64, vocab=65536, ffn=16384, d_decay=128, d_aaa=128, d_mv=96, d_gate=480
)
ARCH_TINY = Arch(n_layer=2, n_embd=128, head_size=64, vocab=1024, ffn=512, d_decay=32, d_aaa=32, d_mv=32, d_gate=32)


@dataclass(frozen=True)
class Plan:
    """What to run: the 7.2B plan on CUDA, a tiny one for ``--dry-run`` on the CPU."""

    arch: Arch
    device: str
    dtype: str  # "bfloat16" or "float32"
    prefill_lengths: tuple[int, ...]
    decode_batches: tuple[int, ...]
    decode_steps: int
    reps: int
    copy_bytes: int
    matmul_n: int
    rwkv_strategy: str
    rwkv_cuda: bool
    op_seq_len: int  # T of the WKV op comparison
    op_heads: int
    # the dry run keeps every part but does less in each (tests/kernels/test_gpu_engine_dry.py runs
    # it on 2 CPU cores): the fast path's logits check over 20 tokens (one whole chunk of 16 and a
    # partial one) and 2 steps, the compiled decode through Dynamo and AOTAutograd without inductor's
    # C++ code generation (the CPU's, not the GPU's Triton code; tests/model/test_model_decode.py
    # compiles the same step with inductor), one timed call where the GPU takes several
    vs_ref_tokens: int = 64
    vs_ref_steps: int = 8
    compile_backend: str = "inductor"
    warmup: int = 2


def make_plan(dry_run: bool, args: argparse.Namespace) -> Plan:
    if dry_run:
        return Plan(
            ARCH_TINY,
            "cpu",
            "float32",
            (32, 48),
            (1, 4),
            4,
            1,
            1 << 24,
            256,
            "cpu fp32",
            False,
            64,
            2,
            vs_ref_tokens=20,
            vs_ref_steps=2,
            compile_backend="aot_eager",
            warmup=1,
        )
    return Plan(
        ARCH_7B,
        "cuda",
        "bfloat16",
        (2048, 8192),
        (1, 64),
        args.decode_steps,
        args.reps,
        2 << 30,
        8192,
        "cuda bf16",
        True,
        4096,
        64,
    )


# ------------------------------------------------------------------------------ environment


def environment(plan: Plan) -> dict[str, Any]:
    import torch

    env: dict[str, Any] = {"python": sys.version.split()[0], "torch": torch.__version__, "device": plan.device}
    try:
        import triton

        env["triton"] = triton.__version__
    except ImportError:
        env["triton"] = None
    if plan.device == "cuda":
        env["gpu"] = torch.cuda.get_device_name()
        env["cuda"] = torch.version.cuda
    for dist in ("rwkv", "fla-core", "flash-linear-attention"):
        try:
            from importlib.metadata import version

            env[dist] = version(dist)
        except Exception:
            env[dist] = None
    return env


# ---------------------------------------------------------------------------------- timing


def sync(device: str) -> None:
    import torch

    if device == "cuda":
        torch.cuda.synchronize()


def timed(fn: Callable[[], Any], device: str, reps: int, warmup: int = 1) -> float:
    """Median wall time of ``fn`` in seconds, synchronised."""
    for _ in range(warmup):
        fn()
    sync(device)
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        sync(device)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def timed_graph(fn: Callable[[], Any], device: str, reps: int = 10, calls: int = 20) -> tuple[float, str]:
    """``(seconds per call, how)`` for a short op, without the host's cost of launching it: on CUDA
    ``calls`` calls are captured in one CUDA graph by the model's own
    :class:`~rwkv_registry.kernels.graph.GraphedStep` (warm-up calls on a side stream, which compile
    the kernels, and its host-sync check first), the graph is replayed ``reps`` times between CUDA
    events, and the median replay is divided by ``calls``. Elsewhere, or where the capture fails,
    :func:`timed` (host clock, launch cost included), and ``how`` says so."""
    if device != "cuda":
        return timed(fn, device, reps), "host clock"
    import torch

    from rwkv_registry.kernels.graph import GraphedStep

    try:
        anchor = torch.empty(0, device=device)  # GraphedStep captures for CUDA arguments
        step = GraphedStep(lambda _: [fn() for _ in range(calls)], anchor)
        step(anchor)
        torch.cuda.synchronize()
        times = []
        for _ in range(reps):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            step(anchor)
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) / 1e3 / calls)
        return statistics.median(times), "cuda graph"
    except Exception as exc:
        torch.cuda.synchronize()
        return timed(fn, device, reps, warmup=2), f"host clock (capture failed: {type(exc).__name__})"


def copy_bandwidth(plan: Plan) -> dict[str, Any]:
    import torch

    n = plan.copy_bytes
    src = torch.empty(n, dtype=torch.uint8, device=plan.device)
    src.fill_(1)
    dst = torch.empty_like(src)
    seconds = timed(lambda: dst.copy_(src), plan.device, reps=max(5, plan.reps))
    return {"bytes": n, "seconds": seconds, "GB_per_s": 2 * n / seconds / 1e9, "note": "read + write bytes"}


def matmul_rate(plan: Plan) -> dict[str, Any]:
    import torch

    n = plan.matmul_n
    dtype = getattr(torch, plan.dtype)
    a = torch.randn(n, n, device=plan.device, dtype=dtype)
    b = torch.randn(n, n, device=plan.device, dtype=dtype)
    seconds = timed(lambda: a @ b, plan.device, reps=max(5, plan.reps))
    return {"n": n, "dtype": plan.dtype, "seconds": seconds, "TFLOP_per_s": 2 * n**3 / seconds / 1e12}


# ------------------------------------------------------------------------------ weights


def arch_config(arch: Arch) -> Any:
    """The model's config for this shape (layer 0 keeps its unused v0/v1/v2, as released files do)."""
    from rwkv_registry.model.config import RWKV7Config

    return RWKV7Config(
        n_layer=arch.n_layer,
        n_embd=arch.n_embd,
        vocab_size=arch.vocab,
        n_head=arch.n_embd // arch.head_size,
        head_size=arch.head_size,
        dim_ffn=arch.ffn,
        d_decay=arch.d_decay,
        d_aaa=arch.d_aaa,
        d_mv=arch.d_mv,
        d_gate=arch.d_gate,
        d_mv0=arch.d_mv,
    )


def random_base(arch: Arch, device: str, dtype_name: str, seed: int = 0) -> dict[str, Any]:
    """Random weights of this shape made on ``device`` by the model's own factory (no file)."""
    import torch

    from rwkv_registry.model.tiny import tiny_base_tensors

    return tiny_base_tensors(arch_config(arch), seed=seed, device=device, dtype=getattr(torch, dtype_name))


def ceilings(sd: dict[str, Any], copy: dict[str, Any], mm: dict[str, Any]) -> dict[str, Any]:
    """Speed limits from the measured machine: decode B=1 reads every weight but the embedding once
    per token; prefill does 2 flops per weight of the blocks per token (head only at the last one)."""
    read_bytes = sum(t.numel() * t.element_size() for k, t in sd.items() if k != "emb.weight")
    block_params = sum(t.numel() for k, t in sd.items() if t.dim() == 2 and k not in ("emb.weight", "head.weight"))
    flops = 2 * block_params
    return {
        "bytes_read_per_token": read_bytes,
        "flops_per_prefill_token": flops,
        "decode_b1_tok_s": copy["GB_per_s"] * 1e9 / read_bytes,
        "prefill_tok_s": mm["TFLOP_per_s"] * 1e12 / flops,
    }


# ------------------------------------------------------------------------- our engine (ADAPTERS)


def build_model(sd: dict[str, Any], plan: Plan) -> Any:
    """ADAPTER: our model from a state dict (no copy: the tensors already have the dtype and device)."""
    import torch

    from rwkv_registry.model import RWKV7

    return RWKV7.from_state_dict(sd, device=plan.device, dtype=getattr(torch, plan.dtype))


PREFLIGHT_CONFIGS = (
    {"fused_ops": True, "wkv": "auto"},
    {"fused_ops": False, "wkv": "auto"},
    {"fused_ops": False, "wkv": "reference"},
)


def worker_preflight(payload: dict[str, Any]) -> dict[str, Any]:
    """In a fresh process (a bad memory access spoils a CUDA context for good): the random model
    with one configuration of the fast path, a 16-token prefill, an in-place step and a B=1 decode
    step through the CUDA graph; ``{"ok": True}`` or the reason. It also fills Triton's disk cache."""
    import torch

    bootstrap_package()
    from rwkv_registry.model.wkv import set_fused_ops, set_wkv_backend

    plan = Plan(**{**payload["plan"], "arch": Arch(**payload["plan"]["arch"])})
    set_fused_ops(payload["fused_ops"])
    if payload["wkv"] != "auto":
        set_wkv_backend(payload["wkv"])
    torch.set_grad_enabled(False)
    with kernels_path(plan):
        model = build_model(random_base(plan.arch, plan.device, plan.dtype), plan)
        ids = torch.tensor([payload["tokens"][:16]], dtype=torch.long, device=plan.device)
        logits, state = model.forward(ids)
        step = model.advance(ids[:, -1:], state)
        graphed = make_decoder(model, 1).step(ids[:, -1:])
        sync(plan.device)
    finite = all(bool(torch.isfinite(x).all()) for x in (logits, step, graphed))
    return {"ok": finite, "reason": None if finite else "non-finite logits"}


def preflight(plan: Plan, tokens: list[int], timeout: float, budget: float | None = None) -> dict[str, Any]:
    """The fast path tried in subprocesses before anything is timed: fused element-wise kernels on;
    should that fail (an exception, a crash, non-finite logits), off (their PyTorch references);
    should that fail too, the reference WKV loop as well. The first that works is set in this
    process, and every attempt is recorded, so that one broken kernel does not cost the whole run.
    Each attempt gets at most ``timeout`` s and all of them together ``budget`` s (a hang in a
    kernel's compilation must not eat the run: three attempts at ``timeout`` would)."""
    from rwkv_registry.model.wkv import set_fused_ops, set_wkv_backend

    deadline = time.monotonic() + (budget if budget is not None else 3 * timeout)
    tried = []
    for config in PREFLIGHT_CONFIGS:
        left = deadline - time.monotonic()
        if left < 10:
            tried.append({**config, "ok": False, "reason": "not tried: the preflight's time was spent"})
            continue
        payload = {"plan": asdict(plan), "tokens": tokens[:16], **config}
        answer = run_worker("preflight", payload, min(timeout, left), {})
        tried.append({**config, "ok": bool(answer.get("ok")), "reason": answer.get("reason")})
        if answer.get("ok"):
            fused, backend = bool(config["fused_ops"]), str(config["wkv"])
            set_fused_ops(fused)
            if backend != "auto":
                set_wkv_backend(backend)
            return {"fused_ops": "on" if fused else "off", "wkv": backend, "tried": tried}
    set_fused_ops(False)
    return {"fused_ops": "off", "wkv": "auto", "error": "no configuration ran in a subprocess", "tried": tried}


def apply_preflight(pre: dict[str, Any]) -> None:
    """Set in this process what :func:`preflight` chose (it does so itself; this is for a run
    restarted after a hung part, which replays the preflight's record instead of running it)."""
    from rwkv_registry.model.wkv import set_fused_ops, set_wkv_backend

    if not isinstance(pre, dict) or "fused_ops" not in pre:
        return
    set_fused_ops(pre["fused_ops"] == "on")
    if pre.get("wkv", "auto") != "auto":
        set_wkv_backend(pre["wkv"])


def make_decoder(model: Any, batch: int, compile: bool | str = False) -> Any:
    """ADAPTER: the model's fixed-batch decoder (``rwkv_registry.model.decode.Decoder``): on CUDA
    ``RWKV7.advance`` captured once as a CUDA graph, the state updated in place; with ``compile``
    (a backend name, "inductor" on the GPU) the step goes through ``torch.compile`` before the capture."""
    from rwkv_registry.model.decode import Decoder

    return Decoder(model, batch, compile=compile)


def ours_prefill(model: Any, plan: Plan, tokens: list[int]) -> dict[str, Any]:
    import torch

    out: dict[str, Any] = {}
    for T in plan.prefill_lengths:
        ids = torch.tensor([tokens[:T]], dtype=torch.long, device=plan.device)
        seconds = timed(functools.partial(model.forward, ids, None), plan.device, plan.reps)
        out[str(T)] = {"seconds": seconds, "tok_s": T / seconds}
    return out


def ours_logits(model: Any, plan: Plan, tokens: list[int]) -> Any:
    import torch

    T = plan.prefill_lengths[0]
    logits, _ = model.forward(torch.tensor([tokens[:T]], dtype=torch.long, device=plan.device), None)
    return logits[0].float().cpu()


def ours_decode(model: Any, plan: Plan, batch: int, compile: bool = False) -> dict[str, Any]:
    import torch

    decoder = make_decoder(model, batch, plan.compile_backend if compile else False)
    gen = torch.Generator().manual_seed(batch)
    tok = torch.randint(0, plan.arch.vocab, (batch, 1), generator=gen).to(plan.device)
    start = time.perf_counter()
    for _ in range(2):  # warm-up (compiles, captures the graph, fills caches)
        logits = decoder.step(tok)
    sync(plan.device)
    warmup = time.perf_counter() - start
    start = time.perf_counter()
    for _ in range(plan.decode_steps):
        logits = decoder.step(tok)
        tok = logits.argmax(dim=-1, keepdim=True)  # stays on the device
    sync(plan.device)
    seconds = time.perf_counter() - start
    finite = bool(torch.isfinite(logits).all())
    if decoder.captured:
        mode = "cuda-graph"
    else:
        mode = "eager" + (f" (capture failed: {decoder.capture_error})" if decoder.capture_error else "")
    if compile:
        how = "" if plan.compile_backend == "inductor" else f" ({plan.compile_backend})"
        mode = f"compiled{how}, {mode}"
    return {
        "mode": mode,
        "warmup_seconds": warmup,
        "steps": plan.decode_steps,
        "seconds": seconds,
        "tok_s": batch * plan.decode_steps / seconds,
        "finite": finite,
    }


@contextlib.contextmanager
def kernels_path(plan: Plan) -> Iterator[None]:
    """On the CPU (``--dry-run``) the interpreted Triton kernels stand in for the GPU's: sets
    ``TRITON_INTERPRET=1`` for the block and puts the previous value back."""
    saved = os.environ.get("TRITON_INTERPRET")
    if plan.device != "cuda":
        os.environ["TRITON_INTERPRET"] = "1"
    try:
        yield
    finally:
        if plan.device != "cuda":
            if saved is None:
                os.environ.pop("TRITON_INTERPRET", None)
            else:
                os.environ["TRITON_INTERPRET"] = saved


def ours_vs_reference(model: Any, plan: Plan, tokens: list[int]) -> dict[str, Any]:
    """ADAPTER: logits of the fast path (Triton chunk prefill, then in-place step kernel decodes)
    against the reference WKV loop on the same bf16 weights: relative RMS and max |Δ| / std per
    output (prefill of 64 tokens, then 8 steps; 20 and 2 in the dry run). On the CPU
    (``--dry-run``) the fast path is the Triton interpreter."""
    import torch

    from rwkv_registry.model.wkv import set_wkv_backend

    T, steps = plan.vs_ref_tokens, plan.vs_ref_steps

    def run(backend: str) -> list[Any]:
        previous = set_wkv_backend(backend)
        try:
            logits, state = model.forward(torch.tensor([tokens[:T]], device=plan.device))
            outs = [logits]
            for t in tokens[T : T + steps]:
                outs.append(model.advance(torch.tensor([[t]], device=plan.device), state))
            return [x.double().cpu() for x in outs]
        finally:
            set_wkv_backend(previous)

    with kernels_path(plan):
        fast = run("kernels")
    ref = run("reference")
    rms = [float((f - r).pow(2).mean().sqrt() / r.pow(2).mean().sqrt()) for f, r in zip(fast, ref, strict=True)]
    mx = [float((f - r).abs().max() / r.std()) for f, r in zip(fast, ref, strict=True)]
    return {"rel_rms_max": max(rms), "rel_rms": rms, "max_abs_over_std": max(mx), "tokens": T, "steps": steps}


def ours_launches(model: Any, plan: Plan) -> dict[str, Any]:
    """Kernels one eager decode step launches (B=1), what a CUDA graph replays: total, per layer,
    Triton launches, and the five most frequent ops (``rwkv_registry.kernels.launches``)."""
    import torch

    from rwkv_registry.kernels.launches import count_launches
    from rwkv_registry.model.wkv import set_wkv_backend

    state = model.new_state(1)
    tok = torch.zeros(1, 1, dtype=torch.long, device=plan.device)
    with kernels_path(plan):
        previous = set_wkv_backend("kernels")
        try:
            model.advance(tok, state)
            counts = count_launches(lambda: model.advance(tok, state, check=False))
        finally:
            set_wkv_backend(previous)
    return {
        "total": counts.total(),
        "per_layer": counts.total() / plan.arch.n_layer,
        "triton": counts.triton(),
        "top": dict(counts.most_common(5)),
    }


def ours_decode_eager(model: Any, plan: Plan) -> dict[str, Any]:
    """B=1 decode without the CUDA graph (every kernel launched from Python): what the graph saves."""
    import torch

    from rwkv_registry.model.decode import Decoder

    decoder = Decoder(model, 1, graphs=False)
    tok = torch.zeros(1, 1, dtype=torch.long, device=plan.device)
    steps = max(4, plan.decode_steps // 4)
    seconds = timed(lambda: [decoder.step(tok) for _ in range(steps)], plan.device, 1)
    return {"steps": steps, "seconds": seconds, "tok_s": steps / seconds}


def fused_op_calls(plan: Plan, M: int) -> dict[str, Callable[[str], Any]]:
    """The fused element-wise ops on random bf16 inputs of M rows, each a function of the backend."""
    import torch

    from rwkv_registry.kernels.add_norm import add_layer_norm, add_layer_norm_mix
    from rwkv_registry.kernels.lora import lora_down, lora_up
    from rwkv_registry.kernels.miss import miss_term_, relu_square_
    from rwkv_registry.kernels.timemix import tm_gates, tm_output, token_mix

    C, H, F = plan.arch.n_embd, plan.arch.n_embd // plan.arch.head_size, plan.arch.ffn
    gen = torch.Generator(device=plan.device).manual_seed(M)

    def rnd(*shape: int) -> Any:
        return torch.randn(*shape, generator=gen, device=plan.device).to(torch.bfloat16)

    x, shift, p = rnd(1, M, C), rnd(1, C), [rnd(C) for _ in range(6)]
    k, v, wz, az, vz, vf, y, r, g = (rnd(1, M, C) for _ in range(9))
    ffn_x, D, D16f = rnd(1, M, F), rnd(C, 16), rnd(F, 16)
    widths = (plan.arch.d_decay, plan.arch.d_aaa, plan.arch.d_gate, plan.arch.d_mv)
    downs, ups = [rnd(C, d) for d in widths], [rnd(d, C) for d in widths]
    hs = [rnd(1, M, d) for d in widths]
    rows, row_shift = (x.view(M, 1, C), k.view(M, 1, C)), rnd(M, C)  # M sequences of one token
    return {
        "lora_down x4": lambda be: lora_down([x, k, v, r], downs, ["tanh", "none", "sigmoid", "none"], backend=be),
        "lora_up x4": lambda be: lora_up(hs, ups, backend=be),
        "add_layer_norm_mix x6 (T=1)": lambda be: add_layer_norm_mix(*rows, p[0], p[1], 1e-5, row_shift, p, backend=be),
        "token_mix x6": lambda be: token_mix(x, shift, p, backend=be),
        "tm_gates": lambda be: tm_gates(k, v, wz, az, p[0], p[1], p[2], p[3], H, vf, vz, p[4], backend=be),
        "tm_output": lambda be: tm_output(y, r, k, v, g, p[0], p[1], p[2].view(H, -1), 64e-5, backend=be),
        "add_layer_norm": lambda be: add_layer_norm(x, k, p[0], p[1], 1e-5, backend=be),
        "add_layer_norm + MiSS r=16 K=16384": lambda be: add_layer_norm(
            x, k, p[0], p[1], 1e-5, miss=(ffn_x, D, 0.5), backend=be
        ),
        "relu_square_ + MiSS r=16 K=4096": lambda be: relu_square_(ffn_x, (x, D16f, 0.5), backend=be),
        "miss_term_ K=16384 r=16": lambda be: miss_term_(v, ffn_x, D, 0.5, backend=be),
    }


def ours_fused_ops(plan: Plan) -> dict[str, Any]:
    """Each fused element-wise op, Triton against its PyTorch reference, at the model's width:
    decode rows (M=1, 64) and a prefill (M=2048); microseconds per call, timed by
    :func:`timed_graph` (a decode step replays them from a CUDA graph, so launch cost is left out).
    Each backend gets freshly made inputs: the in-place ops (``relu_square_``, ``miss_term_``)
    change theirs on every call, which changes no timing but would feed one backend the other's
    results."""
    if plan.device != "cuda":
        return {"skipped": "CPU dry run (the interpreter says nothing about speed)"}
    out: dict[str, Any] = {}
    for M in (1, 64, 2048):
        names = list(fused_op_calls(plan, M))
        for name in names:
            row: dict[str, Any] = {}
            for be in ("triton", "reference"):
                fn = fused_op_calls(plan, M)[name]
                try:
                    seconds, row["timing"] = timed_graph(functools.partial(fn, be), plan.device)
                    row[be + "_us"] = 1e6 * seconds
                except Exception as exc:
                    row[be + "_error"] = f"{type(exc).__name__}: {exc}"[:200]
            out[f"{name} M={M}"] = row
    out["lora_down x4 M=1 block_k sweep"] = lora_block_k_sweep(plan)
    return out


def lora_block_k_sweep(plan: Plan) -> dict[str, Any]:
    """The grouped LoRA down-projection at one row for each ``block_k`` (K = 4096 walked in
    ``block_k`` steps by ~52 programs: the launch parameter most likely to matter at B=1)."""
    from rwkv_registry.kernels.lora import TUNING as LORA_TUNING

    call = fused_op_calls(plan, 1)["lora_down x4"]
    saved = dict(LORA_TUNING)
    out: dict[str, Any] = {}
    try:
        for block_k in (64, 128, 256, 512):
            LORA_TUNING["block_k"] = block_k
            try:
                out[str(block_k)] = 1e6 * timed_graph(lambda: call("triton"), plan.device)[0]
            except Exception as exc:
                out[str(block_k)] = f"{type(exc).__name__}: {exc}"[:200]
    finally:
        LORA_TUNING.update(saved)
    return out


def random_miss(model: Any, rank: int, plan: Plan) -> Any:
    """ADAPTER: a random rank-``rank`` MiSS adapter on every target of every layer (in memory)."""
    import torch

    from rwkv_registry.model.miss import TARGET_MODULES, MissAdapter

    gen = torch.Generator(device=plan.device).manual_seed(7)
    C, F = plan.arch.n_embd, plan.arch.ffn
    tensors, in_features = {}, {}
    for layer in range(plan.arch.n_layer):
        for target in TARGET_MODULES:
            n_in, n_out = {"ffn.key.weight": (C, F), "ffn.value.weight": (F, C)}.get(target, (C, C))
            name = f"blocks.{layer}.{target}.D"
            tensors[name] = (torch.randn(n_out, rank, generator=gen, device=plan.device) * 0.05).to(torch.bfloat16)
            in_features[name] = n_in
    return MissAdapter.from_tensors(tensors, in_features, rank=rank, alpha=float(rank))


def ours_miss(model: Any, plan: Plan) -> dict[str, Any]:
    """Decode B=1 with a MiSS adapter on the fly and merged (ADAPTER: ``apply_miss``/``remove_miss``)."""
    adapter = random_miss(model, 16, plan)
    out: dict[str, Any] = {}
    for mode in ("merge", "fly"):
        model.apply_miss(adapter, mode=mode, force=True)
        try:
            out[mode] = ours_decode(model, plan, 1)
        finally:
            model.remove_miss()
    out["fly_overhead_pct"] = 100.0 * (out["merge"]["tok_s"] / out["fly"]["tok_s"] - 1.0)
    return out


# --------------------------------------------------------------------------------- workers


class Interrupted(BaseException):
    """SIGTERM (``timeout`` in bench/h200.sh) or SIGINT: not an ``Exception``, so that no part
    records it as its own error and goes on; :func:`main` saves what ran, the table included."""


def _interrupt(signum: int, frame: object) -> None:
    raise Interrupted(f"signal {signum}")


def install_interrupt_handlers() -> None:
    """SIGTERM and SIGINT raise :class:`Interrupted` in the main thread: the workers' process groups
    are killed on the way out (a worker in its own session would outlive a plain exit and hold the
    GPU through the next step of h200.sh), and the results and the table are saved."""
    import signal

    signal.signal(signal.SIGTERM, _interrupt)
    signal.signal(signal.SIGINT, _interrupt)


def _die_with_parent() -> None:  # pragma: no cover - runs in the child, between fork and exec
    """Linux: the worker gets SIGKILL should this process die without killing it (a SIGKILL after
    the SIGTERM grace time of ``timeout --kill-after``). Best effort; nothing elsewhere."""
    with contextlib.suppress(Exception):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, 9)  # PR_SET_PDEATHSIG, SIGKILL


def save_for_rwkv(sd: dict[str, Any], plan: Plan) -> Path:
    """``torch.save`` the weights where the ``rwkv`` package can load them (it appends ``.pth``)."""
    import shutil

    import torch

    need = sum(t.numel() * t.element_size() for t in sd.values()) * 1.05 + (1 << 26)
    shm = Path("/dev/shm")
    folder = shm if shm.is_dir() and shutil.disk_usage(shm).free > need else Path(tempfile.gettempdir())
    path = folder / f"gpu_engine_{os.getpid()}.pth"
    torch.save({k: t.detach().to("cpu") for k, t in sd.items()}, path)
    return path


def _kill_group(proc: subprocess.Popen[Any]) -> None:
    """Kill a child started with ``start_new_session`` and everything it started (ninja, nvcc)."""
    import signal

    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    _release_group(proc)


_WORKER_OUT: Path | None = None  # in a worker: where its answer goes (partial answers too)
_GROUPS: Path | None = None  # under supervise: the file listing the process groups this child started


def spawn_group(cmd: list[str], **kwargs: Any) -> subprocess.Popen[Any]:
    """Start ``cmd`` in its own session (its own process group, which ``_kill_group`` kills whole); under
    :func:`supervise` its group is also written to ``groups`` in the child's folder, so that a supervisor that
    kills a hung child kills this group too: the worker's own children (nvcc, ninja, Triton's compiles) are in
    it, and PR_SET_PDEATHSIG reaches only the worker itself."""
    proc = subprocess.Popen(cmd, start_new_session=True, preexec_fn=_die_with_parent, **kwargs)
    if _GROUPS is not None:
        with open(_GROUPS, "a") as f:
            f.write(f"{proc.pid}\n")
    return proc


def _release_group(proc: subprocess.Popen[Any]) -> None:
    """A worker that ended (``_kill_group`` calls it for one it kills): strike its group from the supervisor's
    list, so that its number, free again once the group is empty, is never signalled later."""
    if _GROUPS is not None:
        with contextlib.suppress(OSError):
            kept = [line for line in _GROUPS.read_text().split() if line != str(proc.pid)]
            _GROUPS.write_text("".join(f"{line}\n" for line in kept))


def kill_recorded_groups(groups: Path) -> list[int]:
    """In the supervisor, after a hung child is killed: SIGKILL every process group the child wrote to
    ``groups`` (see :func:`spawn_group`) that still has a member; the groups signalled. The file is emptied."""
    import signal

    try:
        pgids = sorted({int(line) for line in groups.read_text().split() if line.isdigit()})
    except OSError:
        return []
    killed = []
    for pgid in pgids:
        try:
            os.killpg(pgid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            continue
        killed.append(pgid)
    groups.unlink(missing_ok=True)
    return killed


def worker_progress(answer: dict[str, Any]) -> None:
    """In a worker: save what is measured so far (marked ``partial``), so that a worker killed at
    its timeout or crashing later still hands back the parts it finished; its final answer
    replaces this one. Nothing outside a worker."""
    if _WORKER_OUT is None:
        return
    _write_text(_WORKER_OUT, json.dumps({**answer, "partial": True}, default=str))


def run_worker(kind: str, payload: dict[str, Any], timeout: float, env_extra: dict[str, str]) -> dict[str, Any]:
    """Run ``--worker kind`` in a subprocess (its own process group, all of which a timeout kills);
    its JSON answer, or ``{"available": False, "reason"}``."""
    with tempfile.TemporaryDirectory(prefix=f"gpu_engine_{kind}_") as tmp:
        inp, outp = Path(tmp) / "in.json", Path(tmp) / "out.json"
        inp.write_text(json.dumps(payload))
        env = {**os.environ, **env_extra}
        cmd = [
            sys.executable,
            str(Path(__file__).resolve()),
            "--worker",
            kind,
            "--worker-in",
            str(inp),
            "--worker-out",
            str(outp),
        ]
        proc = spawn_group(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            log, _ = proc.communicate(timeout=max(timeout, 1.0))
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            reason = f"timed out after {timeout:.0f} s"
            if outp.exists():  # what it measured before (worker_progress)
                return {**json.loads(outp.read_text()), "reason": reason}
            return {"available": False, "reason": reason}
        except BaseException:  # Interrupted: the worker and all it started go too
            _kill_group(proc)
            raise
        _release_group(proc)
        tail = (log or "").strip().splitlines()[-3:]
        if outp.exists():
            answer = json.loads(outp.read_text())
            if answer.get("partial"):  # it died after saving some parts
                answer["reason"] = f"worker exited {proc.returncode}: {' | '.join(tail)}"
            return answer
        return {"available": False, "reason": f"worker exited {proc.returncode}: {' | '.join(tail)}"}


def rwkv_env(plan: Plan) -> dict[str, str]:
    """The ``rwkv`` package's switches, and the build settings its CUDA extensions are compiled
    with (the same for the early build and the worker, so that the worker finds them built)."""
    env = {"RWKV_V7_ON": "1", "RWKV_JIT_ON": "1", "RWKV_CUDA_ON": "1" if plan.rwkv_cuda else "0", "MAX_JOBS": "4"}
    if plan.device == "cuda":
        import torch

        major, minor = torch.cuda.get_device_capability()
        env["TORCH_CUDA_ARCH_LIST"] = f"{major}.{minor}"
    return env


def start_rwkv_build(plan: Plan) -> tuple[subprocess.Popen[Any], Path, float] | None:
    """Start compiling the ``rwkv`` package's CUDA extensions (``import rwkv.model`` runs nvcc,
    minutes) in the background at once, so that its worker, much later, loads them built instead of
    building them inside its time. None where nothing is to be built."""
    if not plan.rwkv_cuda:
        return None
    log = Path(tempfile.mkstemp(prefix="gpu_engine_rwkv_build_", suffix=".log")[1])
    with open(log, "w") as f:
        proc = spawn_group(
            [sys.executable, "-c", "import rwkv.model"],
            env={**os.environ, **rwkv_env(plan)},
            stdout=f,
            stderr=subprocess.STDOUT,
        )
    return proc, log, time.monotonic()


def finish_rwkv_build(build: tuple[subprocess.Popen[Any], Path, float] | None, timeout: float) -> dict[str, Any]:
    """Wait (at most ``timeout`` s) for :func:`start_rwkv_build`; what it did."""
    if build is None:
        return {"built": "nothing to build (no CUDA)"}
    proc, log, started = build
    try:
        proc.wait(timeout=max(timeout, 1.0))
    except subprocess.TimeoutExpired:
        _kill_group(proc)
    else:
        _release_group(proc)
    text = log.read_text(errors="replace") if log.exists() else ""
    log.unlink(missing_ok=True)
    return {
        "returncode": proc.returncode,
        "seconds_since_start": round(time.monotonic() - started, 1),
        "fell_back_without_cublas": "Failed to build cuBLAS matmul" in text,
        "tail": text.strip().splitlines()[-3:],
    }


def worker_rwkv(payload: dict[str, Any]) -> dict[str, Any]:
    """The ``rwkv`` package on the saved weights: prefill per length, B=1 decode, last-token logits."""
    import torch

    try:
        from importlib.metadata import version

        found = version("rwkv")
    except Exception:
        found = None
    try:
        from rwkv.model import RWKV  # type: ignore[import-untyped, import-not-found, unused-ignore]
    except Exception as exc:
        return {"available": False, "reason": f"cannot import rwkv ({type(exc).__name__}: {exc})"}
    device = payload["device"]
    model = RWKV(model=payload["path"][: -len(".pth")], strategy=payload["strategy"])
    tokens = payload["tokens"]
    out: dict[str, Any] = {"available": True, "version": found, "prefill": {}}
    with torch.no_grad():
        for T in payload["lengths"]:
            seconds = timed(functools.partial(model.forward, tokens[:T], None), device, payload["reps"])
            out["prefill"][str(T)] = {"seconds": seconds, "tok_s": T / seconds}
            worker_progress(out)
        logits, _ = model.forward(tokens[: payload["lengths"][0]], None)
        torch.save(logits.float().cpu(), payload["logits_path"])
        worker_progress(out)
        _, state = model.forward(tokens[:16], None)
        tok = tokens[16]
        for _ in range(2):
            logits, state = model.forward([tok], state)
        sync(device)
        start = time.perf_counter()
        for _ in range(payload["steps"]):
            logits, state = model.forward([tok], state)
            tok = int(logits.argmax())
        sync(device)
        seconds = time.perf_counter() - start
    out["decode_b1"] = {"steps": payload["steps"], "seconds": seconds, "tok_s": payload["steps"] / seconds}
    return out


def op_inputs(T: int, H: int, B: int, device: str) -> list[Any]:
    """RWKV-7-like bf16 WKV inputs ``[B, T, H, 64]`` (w = -softplus(-x) - 0.5, a = -kk, b = kk * gate)."""
    import torch

    gen = torch.Generator(device=device).manual_seed(0)

    def randn(scale: float = 1.0) -> Any:
        return torch.randn(B, T, H, 64, generator=gen, device=device) * scale

    kk = torch.nn.functional.normalize(randn(), dim=-1)
    w = -torch.nn.functional.softplus(-(randn(1.5) - 0.5)) - 0.5
    r, k, v = randn(), randn(0.5), randn()
    a, b = -kk, kk * torch.sigmoid(randn())
    return [x.to(torch.bfloat16).contiguous() for x in (r, w, k, v, a, b)]


def ours_op_sweep(plan: Plan) -> dict[str, Any]:
    """Our WKV7 kernels alone at the 7.2B head count, for each launch configuration of
    ``launch.TUNING`` (block_v, num_warps): chunk at
    B=1, T=op_seq_len; step at B=1 and B=64; timed from CUDA graphs (:func:`timed_graph`), as the
    decode replays them, so that a step of a few microseconds is not hidden by its launch."""
    from rwkv_registry.kernels.wkv7 import launch, wkv7

    out: dict[str, Any] = {}
    if plan.device != "cuda":
        ins = op_inputs(plan.op_seq_len, plan.op_heads, 1, plan.device)
        seconds = timed(lambda: wkv7(*ins), plan.device, plan.reps)
        return {
            "auto": {"backend": launch.pick_backend(ins[0].device, plan.op_seq_len), "tok_s": plan.op_seq_len / seconds}
        }
    saved = {kind: dict(cfg) for kind, cfg in launch.TUNING.items()}
    try:
        cases = [("chunk", 1, plan.op_seq_len), ("step", 1, 1), ("step", 64, 1)]
        for kind, B, T in cases:
            ins = op_inputs(T, plan.op_heads, B, plan.device)
            calls = 4 if kind == "chunk" else 20  # a step runs for microseconds: time many per graph
            rows: list[dict[str, Any]] = []
            configs = [
                (block_v, num_warps)
                for block_v in (16, 32, 64)
                for num_warps in ((4, 8) if kind == "chunk" else (2, 4))
            ]
            for block_v, num_warps in configs:
                launch.TUNING[kind].update(block_v=block_v, num_warps=num_warps)
                config = {"block_v": block_v, "num_warps": num_warps}
                try:
                    seconds, how = timed_graph(functools.partial(wkv7, *ins, backend=kind), plan.device, calls=calls)
                except Exception as exc:
                    rows.append({**config, "error": repr(exc)[:200]})
                    continue
                rows.append({**config, "us": seconds * 1e6, "tok_s": B * T / seconds, "timing": how})
            ok = [r for r in rows if "us" in r]
            out[f"{kind} B={B} T={T}"] = {"best": min(ok, key=lambda r: r["us"]) if ok else None, "all": rows}
            launch.TUNING[kind].update(saved[kind])
            seconds, how = timed_graph(functools.partial(wkv7, *ins, backend=kind), plan.device, calls=calls)
            out[f"{kind} B={B} T={T}"]["default"] = {"us": seconds * 1e6, "tok_s": B * T / seconds, "timing": how}
    finally:
        for kind, cfg in saved.items():
            launch.TUNING[kind].update(cfg)
    return out


def worker_fla(payload: dict[str, Any]) -> dict[str, Any]:
    """Our ``wkv7`` and fla's ``chunk_rwkv7`` on the same bf16 inputs (no initial state)."""
    import torch

    bootstrap_package()
    from rwkv_registry.kernels.wkv7 import wkv7

    T, H, device = payload["T"], payload["H"], payload["device"]
    bf = op_inputs(T, H, 1, device)
    out: dict[str, Any] = {"available": False, "T": T, "H": H}
    ours_s = timed(lambda: wkv7(*bf), device, payload["reps"], warmup=payload.get("warmup", 2))
    out["ours"] = {"seconds": ours_s, "tok_s": T / ours_s}
    worker_progress(out)
    if device != "cuda":
        out["reason"] = "fla's kernels need CUDA"
        return out
    try:
        from fla.ops.rwkv7 import chunk_rwkv7  # type: ignore[import-not-found, import-untyped, unused-ignore]
    except Exception as exc:
        out["reason"] = f"cannot import fla.ops.rwkv7 ({type(exc).__name__}: {exc})"
        return out
    log_w = -torch.exp(bf[1].float()).to(torch.bfloat16)  # fla takes the log-decay

    def call_fla() -> Any:  # fla 0.6.0: chunk_rwkv7(r, w, k, v, a, b, scale, ...), w the log-decay
        return chunk_rwkv7(r=bf[0], w=log_w, k=bf[2], v=bf[3], a=bf[4], b=bf[5], scale=1.0, output_final_state=True)

    try:  # fla's own Triton kernels may not compile here: ours is measured all the same
        fla_s = timed(call_fla, device, payload["reps"], warmup=payload.get("warmup", 2))
        y_fla = call_fla()[0].float()
    except Exception as exc:
        out["reason"] = f"fla's chunk_rwkv7 failed ({type(exc).__name__}: {exc})"
        return out
    y_ours = wkv7(*bf)[0].float()
    out["available"] = True
    out["fla"] = {"seconds": fla_s, "tok_s": T / fla_s}
    out["y_rel_rms_ours_vs_fla"] = float(((y_ours - y_fla).pow(2).mean() / y_fla.pow(2).mean().clamp_min(1e-30)).sqrt())
    return out


# ---------------------------------------------------------------------------------- report


def _fmt(x: float | None, unit: str = "") -> str:
    if x is None:
        return "—"
    if x >= 100:
        return f"{x:,.0f}{unit}"
    return f"{x:.3g}{unit}"


def _ratio(a: float | None, b: float | None) -> str:
    return f"{a / b:.2f}×" if a and b else "—"


def _get(d: dict[str, Any], *path: str) -> Any:
    for key in path:
        if not isinstance(d, dict) or key not in d:
            return None
        d = d[key]
    return d


def table(results: dict[str, Any]) -> str:
    """The markdown table of the issue: ours, the rwkv package, ratio, target, ceiling."""
    plan = results.get("plan", {})
    lengths = plan.get("prefill_lengths", [])
    batches = plan.get("decode_batches", [])
    rk = results.get("rwkv", {})
    rk_na = None if rk.get("available") else f"not available: {rk.get('reason', 'not run')}"
    ceil = results.get("ceilings", {})
    rows = [
        "| measure | ours | rwkv " + RWKV_VERSION + " | ours / rwkv | target | ceiling |",
        "|---|---|---|---|---|---|",
    ]
    for T in lengths:
        ours = _get(results, "ours", "prefill", str(T), "tok_s")
        theirs = _get(rk, "prefill", str(T), "tok_s")
        rows.append(
            f"| prefill B=1 T={T} (tok/s) | {_fmt(ours)} | {rk_na or _fmt(theirs)} | {_ratio(ours, theirs)} "
            f"| ≥ {TARGETS['prefill']:,} | {_fmt(ceil.get('prefill_tok_s'))} |"
        )
    for B in batches:
        d = _get(results, "ours", "decode", str(B)) or {}
        theirs = _get(rk, "decode_b1", "tok_s") if B == 1 else None
        other = rk_na or (_fmt(theirs) if B == 1 else "one sequence at a time")
        target = TARGETS["decode_b1"] if B == 1 else TARGETS["decode_b64"] if B == 64 else None
        ceiling = _fmt(ceil.get("decode_b1_tok_s")) if B == 1 else "—"
        mode = f" ({d['mode']})" if d.get("mode") else ""
        rows.append(
            f"| decode B={B} (tok/s) | {_fmt(d.get('tok_s'))}{mode} | {other} | {_ratio(d.get('tok_s'), theirs)} "
            f"| {'≥ ' + format(target, ',') if target else '—'} | {ceiling} |"
        )
    for B, d in (_get(results, "ours", "decode_compiled") or {}).items():
        target = TARGETS["decode_b1"] if B == "1" else TARGETS["decode_b64"] if B == "64" else None
        theirs = _get(rk, "decode_b1", "tok_s") if B == "1" else None
        text = (
            f"{_fmt(d.get('tok_s'))} ({d['mode']}, first steps {d['warmup_seconds']:.0f} s)"
            if "tok_s" in d
            else d.get("error", "—")
        )
        rows.append(
            f"| decode B={B}, torch.compile (tok/s) | {text} | — | {_ratio(d.get('tok_s'), theirs)} "
            f"| {'≥ ' + format(target, ',') if target else '—'} | — |"
        )
    pre = _get(results, "ours", "preflight") or {}
    if pre.get("fused_ops") == "off" or pre.get("wkv") == "reference" or "error" in pre:
        failed = [t for t in pre.get("tried", []) if not t.get("ok")]
        why = "; ".join(f"{t['reason']}" for t in failed if t.get("reason")) or pre.get("error")
        off = "fused element-wise kernels" + (" and WKV kernels" if pre.get("wkv") == "reference" else "")
        rows.append(f"| {off} | OFF for this run ({why}); their PyTorch references ran | — | — | — | — |")
    eager = _get(results, "ours", "decode_eager", "tok_s")
    if eager is not None:
        rows.append(f"| decode B=1 without the CUDA graph (tok/s) | {_fmt(eager)} | — | — | — | — |")
    launches = _get(results, "ours", "launches") or {}
    if "total" in launches:
        rows.append(
            f"| kernels per decode step, eager (per layer) | {launches['total']} ({launches['per_layer']:.1f}, "
            f"{launches['triton']} Triton) | — | — | — | — |"
        )
    miss = _get(results, "ours", "miss") or {}
    if "error" in miss or "fly_overhead_pct" in miss:
        text = (
            f"{_fmt(_get(miss, 'fly', 'tok_s'))} on the fly, {_fmt(_get(miss, 'merge', 'tok_s'))} merged: "
            f"{miss['fly_overhead_pct']:+.1f}% time"
            if "fly_overhead_pct" in miss
            else f"not available: {miss['error']}"
        )
        rows.append(
            f"| decode B=1 with MiSS r16 (tok/s) | {text} | — | — | ≤ +{TARGETS['miss_overhead_pct']:.0f}% | — |"
        )
    vs = _get(results, "ours", "vs_reference") or {}
    if "rel_rms_max" in vs:
        rows.append(
            f"| fast path vs reference WKV, logits rel. RMS (T={vs['tokens']} + {vs['steps']} steps) "
            f"| {vs['rel_rms_max']:.3g} (max Δ/std {vs['max_abs_over_std']:.3g}) | — | — | ≤ 2e-2 (bf16) | — |"
        )
    err = _get(results, "logits_vs_rwkv", "rel_rms")
    if err is not None:
        rows.append(f"| last-token logits, rel. RMS vs rwkv (T={lengths[0]}) | {err:.3g} | — | — | bf16 (~1e-2) | — |")
    fla = results.get("fla", {})
    op = f"WKV op B=1 T={plan.get('op_seq_len')} H={plan.get('op_heads')} (M tok/s)"
    ours_op, fla_op = _get(fla, "ours", "tok_s"), _get(fla, "fla", "tok_s")
    theirs = _fmt(fla_op / 1e6) if fla.get("available") else f"not available: {fla.get('reason', 'not run')}"
    agree = _get(fla, "y_rel_rms_ours_vs_fla")
    note = f" (y rel. RMS {agree:.2g})" if agree is not None else ""
    rows.append(
        f"| {op}: ours vs fla chunk_rwkv7{note} | {_fmt(ours_op / 1e6 if ours_op else None)} | fla: {theirs} "
        f"| {_ratio(ours_op, fla_op)} | — | — |"
    )
    hung = results.get("hung_parts") or {}
    if hung:
        rows.append(
            f"| parts that hung or crashed (the run went on without each) | {'; '.join(hung)} | — | — | — | — |"
        )
    if results.get("interrupted"):
        rows.append(f"| the run stopped early | {results['interrupted']} | — | — | — | — |")
    copy, mm = results.get("copy", {}), results.get("matmul", {})
    rows.append(f"| copy bandwidth (GB/s, read + write) | {_fmt(copy.get('GB_per_s'))} | — | — | — | — |")
    what = f"{mm['dtype']} matmul {mm['n']}³" if "n" in mm else "matmul"
    rows.append(f"| {what} (TFLOP/s) | {_fmt(mm.get('TFLOP_per_s'))} | — | — | — | — |")
    env = results.get("environment", {})
    head = ", ".join(f"{k} {v}" for k, v in env.items() if v)
    return f"Environment: {head}\n\n" + "\n".join(rows) + "\n"


# ------------------------------------------------------------------------------------ main


class Run:
    """Collects results and saves them after every part.

    Under :func:`supervise` (``child_dir`` set) it also tells the supervisor which part runs and for
    how long it may (``part.json``), keeps what each finished part returned (``done.json``), and
    after a restart replays those parts from it instead of running them again and records the
    parts the supervisor stopped (``hung.json``) as timed out."""

    def __init__(self, out: Path, deadline: float, child_dir: Path | None = None) -> None:
        self.out = out
        self.deadline = deadline
        self.started = time.monotonic()
        self.min_part_s = 30.0
        self.results: dict[str, Any] = {}
        self.rwkv_build: tuple[subprocess.Popen[Any], Path, float] | None = None
        self.child_dir = child_dir
        self.done: dict[str, Any] = _read_json(child_dir / "done.json") if child_dir else {}
        self.hung: dict[str, str] = _read_json(child_dir / "hung.json") if child_dir else {}
        self._seq = 0
        self._beat = ""  # the id of the last heartbeat: this process's id and a count
        if self.hung:
            self.results["hung_parts"] = dict(self.hung)

    def left(self) -> float:
        return self.deadline - time.monotonic()

    def save(self) -> None:
        """The JSON, and the table beside it (``.md``) from whatever has run: a run killed at any
        point leaves both, the parts it did not reach marked "—" or "not run" (see :func:`save_results`)."""
        save_results(self.out, self.results)

    def part(self, name: str, fn: Callable[[], Any], share: float | None = 0.6, replay: bool = True) -> Any:
        """Run one part; an exception is recorded under ``name`` as ``{"error": ...}``, not raised.
        Past the deadline a part is not started. ``share``: the part is stopped (``PartTimeout``,
        by SIGALRM) after that share of the time left when it starts, at least ``min_part_s``, so
        that one hanging in Python code (a compile, a capture) leaves time to the parts after it;
        ``None`` for parts that keep their own time (workers). A hang inside a CUDA call returns to
        Python only with the call: under :func:`supervise` the supervisor kills this process
        ``HANG_GRACE_S`` after the part's limit (or the deadline), records the part as timed out and
        starts the run again, which replays the finished parts (``replay=False``: run again, for
        parts whose value is not data, such as the weights and the model; the supervisor also runs such a
        part once more after a crash in it before it counts it lost)."""
        if os.environ.get(TEST_HANG_ENV) == name:  # tests only (once: after the restart it is in self.hung)
            self.part(TEST_HANG_PART, _hang_in_native_code, share=0.0)
        if os.environ.get(TEST_DIE_ENV) == name:  # tests only, likewise
            self.part(TEST_DIE_PART, _die_in_native_code, share=0.0)
        if name in self.hung:
            print(f"[gpu_engine] {name}: left out, it hung in the run before", file=sys.stderr, flush=True)
            value = {"error": self.hung[name]}
            self._record(name, value, self.hung_seconds(name))
            return value
        if "value" in self.done.get(name, {}):
            print(f"[gpu_engine] {name}: kept from the run before the restart", file=sys.stderr, flush=True)
            self._record(name, self.done[name]["value"], self.done[name]["seconds"])
            return self.done[name]["value"]
        start = time.monotonic()
        if self.left() <= 0:
            print(f"[gpu_engine] {name}: skipped, the time limit is reached", file=sys.stderr, flush=True)
            return {"error": "skipped: the time limit was reached"}
        print(f"[gpu_engine] {name} ...", file=sys.stderr, flush=True)
        # share 0: one second (the test hang); otherwise at least min_part_s
        limit = None if share is None else max(self.min_part_s if share else 1.0, self.left() * share)
        # the caller stores a part's value in the results after the part saved them: save again now, so
        # that a child that dies or hangs in this part leaves the previous part's figure in the JSON too
        self.save()
        self._heartbeat(name, limit, retry=not replay)
        if os.environ.get(TEST_DIE_IN_ENV) == name and self._test_death_due():  # tests only
            _die_in_native_code()
        try:
            with _alarm(limit):
                value = fn()
        except Exception as exc:
            traceback.print_exc()
            value = {"error": f"{type(exc).__name__}: {exc}"}
            _release_device_memory()  # after an OOM (B=64, T=8192) the next parts still fit
        seconds = round(time.monotonic() - start, 2)
        if self.child_dir is not None:
            # First the part's end (and its value, to replay) in done.json, under the heartbeat's id; then
            # part.json cleared. A death between the two leaves part.json naming a part that done.json
            # says ended in this very heartbeat: the supervisor counts that as dying between parts, and
            # the restart replays the value (or, for parts that are not data, runs the part again).
            entry: dict[str, Any] = {"seconds": seconds, "beat": self._beat}
            if replay:
                with contextlib.suppress(TypeError, ValueError):  # not data (tensors, a model): run again
                    json.dumps(value)
                    entry["value"] = value
            self.done[name] = entry
            _write_json(self.child_dir / "done.json", self.done)
            if os.environ.get(TEST_DIE_AFTER_ENV) == name:  # tests only: die in that window
                _die_in_native_code()
        self._heartbeat(None, None)
        self._record(name, value, seconds)
        return value

    def hung_seconds(self, name: str) -> float | None:
        return _read_json(self.child_dir / "hung_seconds.json").get(name) if self.child_dir else None

    def _record(self, name: str, value: Any, seconds: float | None) -> None:
        self.results.setdefault("part_seconds", {})[name] = seconds
        self.save()

    def _heartbeat(self, name: str | None, limit: float | None, retry: bool = False) -> None:
        """Tell the supervisor which part runs now, its limit in seconds (None: the deadline) and whether a crash in
        it is worth one more try (``retry``: a part the later ones need, see :func:`supervise`)."""
        if self.child_dir is None:
            return
        self._seq += 1
        self._beat = f"{os.getpid()}-{self._seq}"
        _write_json(self.child_dir / "part.json", {"seq": self._beat, "name": name, "limit": limit, "retry": retry})

    def _test_death_due(self) -> bool:
        """Tests only: whether this run of the ``TEST_DIE_IN_ENV`` part dies, ``TEST_DIE_IN_TIMES_ENV`` times in all
        (default once), counted across restarts in the child folder."""
        if self.child_dir is None:
            return True
        count = self.child_dir / "test_deaths"
        died = len(count.read_text()) if count.exists() else 0
        if died >= int(os.environ.get(TEST_DIE_IN_TIMES_ENV, "1")):
            return False
        _write_text(count, "x" * (died + 1))
        return True


class PartTimeout(Exception):
    """A part ran past its share of the time (:meth:`Run.part`)."""


# Tests only: the name of a part before which a part that never returns (a stand-in for a CUDA call
# that hangs: it sleeps with SIGALRM blocked, so PartTimeout cannot stop it) is run, once.
TEST_HANG_ENV = "GPU_ENGINE_TEST_HANG_BEFORE"
TEST_HANG_PART = "test: a part that never returns"
# Tests only: the name of a part before which a part whose process dies (SIGKILL, a stand-in for a crash
# in native code or the OOM killer) is run, once; and of a part after whose saved result (done.json) the
# process dies before it clears part.json (the window between the two writes), each run of that part.
TEST_DIE_ENV = "GPU_ENGINE_TEST_DIE_BEFORE"
TEST_DIE_PART = "test: a part whose process dies"
TEST_DIE_AFTER_ENV = "GPU_ENGINE_TEST_DIE_AFTER"
# Tests only: the name of a part inside which the process dies (SIGKILL once its heartbeat is written), the
# number of times given by the second variable (default 1), counted across restarts.
TEST_DIE_IN_ENV = "GPU_ENGINE_TEST_DIE_IN"
TEST_DIE_IN_TIMES_ENV = "GPU_ENGINE_TEST_DIE_IN_TIMES"
HANG_GRACE_S = 15.0  # how long after its limit the supervisor waits for a part before killing the run
MAX_RESTARTS = 4
# The exit status of the script (the supervisor's; see supervise): EXIT_OK, the child's own 1 (an error
# outside the parts, its traceback in the log) or 2 (bad arguments), EXIT_STOPPED, EXIT_GAVE_UP. Never
# negative, and never 128 + a signal, which bench/h200.sh would read as timeout's SIGKILL.
EXIT_OK = 0
EXIT_STOPPED = 124  # stopped by the time: --time-limit spent with a part lost, or SIGTERM (timeout's)
EXIT_GAVE_UP = 3  # the child kept dying (a signal or a crash): MAX_RESTARTS restarts spent


def _hang_in_native_code() -> None:
    import signal

    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
    while True:
        time.sleep(3600)


def _die_in_native_code() -> None:
    import signal

    os.kill(os.getpid(), signal.SIGKILL)


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write_text(path: Path, text: str) -> None:
    """Atomically (temporary file, fsync, rename): a process killed at any moment leaves the old file or the
    new one, never a truncated one."""
    bootstrap_package()
    from rwkv_registry.fs.atomic import atomic_write_bytes

    atomic_write_bytes(path, text.encode())


def _write_json(path: Path, data: dict[str, Any]) -> None:
    _write_text(path, json.dumps(data))


def save_results(out: Path, results: dict[str, Any]) -> None:
    """Write the results to ``out`` and their table beside it (``.md``), the table also under
    ``results["table"]``. Each file is written atomically, the JSON first: a process killed between the
    two leaves the newer JSON, and :func:`supervise` rewrites the ``.md`` from it when the child ends.
    A table that cannot be made must not cost the JSON: the ``.md`` then says why."""
    out.parent.mkdir(parents=True, exist_ok=True)
    try:
        md = table(results)
        results.pop("table_error", None)
    except Exception as exc:
        results["table_error"] = f"{type(exc).__name__}: {exc}"
        md = f"No table: {results['table_error']}\n"
    results["table"] = md
    _write_text(out, json.dumps(results, indent=2, default=str))
    _write_text(out.with_suffix(".md"), md)


@contextlib.contextmanager
def _alarm(seconds: float | None) -> Iterator[None]:
    """Raise :class:`PartTimeout` in the main thread after ``seconds`` (no-op for None, off the
    main thread, or without SIGALRM); the previous handler is put back."""
    import signal
    import threading

    if seconds is None or not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(signum: int, frame: object) -> None:
        raise PartTimeout(f"stopped after {seconds:.0f} s, its share of the time left")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _release_device_memory() -> None:
    """Drop what a failed part left cached on the GPU (nothing without torch or CUDA)."""
    import gc

    gc.collect()
    torch = sys.modules.get("torch")
    if torch is not None:
        with contextlib.suppress(Exception):
            if torch.cuda.is_available():
                torch.cuda.empty_cache()


def write_table(run: Run, out: Path) -> None:
    """The markdown table into the results and beside ``out`` (regenerate it from a JSON with
    :func:`table`); :meth:`Run.save` writes it with every part too."""
    assert out == run.out
    run.save()


WORKERS: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "rwkv": worker_rwkv,
    "fla": worker_fla,
    "preflight": worker_preflight,
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=Path("gpu_engine_results.json"),
        help="JSON results (a .md table is written beside it)",
    )
    parser.add_argument("--dry-run", action="store_true", help="run every part on a tiny model on the CPU (for tests)")
    parser.add_argument("--wheels", type=Path, help="folder of pure-Python wheels to unpack onto the path first")
    parser.add_argument("--reps", type=int, default=3, help="timed repetitions of each prefill (median)")
    parser.add_argument("--decode-steps", type=int, default=64, help="tokens per decode measurement")
    parser.add_argument(
        "--time-limit", type=float, default=560.0, help="seconds for the whole run; workers get what is left"
    )
    parser.add_argument("--skip-rwkv", action="store_true", help="do not run the rwkv package")
    parser.add_argument("--skip-compile", action="store_true", help="do not measure torch.compile-d decode")
    parser.add_argument("--skip-fla", action="store_true", help="do not run fla's chunk_rwkv7")
    parser.add_argument("--worker", choices=tuple(WORKERS), help=argparse.SUPPRESS)
    parser.add_argument("--worker-in", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--worker-out", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--child-dir", type=Path, help=argparse.SUPPRESS)  # run by supervise()
    args = parser.parse_args(argv)
    if args.child_dir is None and args.worker is None:  # the supervisor: it imports neither torch nor the wheels
        return supervise(sys.argv[1:] if argv is None else argv, args)

    if args.wheels:
        _, skipped = unpack_wheels(args.wheels)
        if skipped and not args.worker:
            left_out = ", ".join(skipped)
            print(f"[gpu_engine] wheels left out (another platform, or unreadable): {left_out}", file=sys.stderr)
    if args.worker:
        global _WORKER_OUT
        _WORKER_OUT = args.worker_out
        payload = json.loads(args.worker_in.read_text())
        try:
            answer = WORKERS[args.worker](payload)
        except Exception as exc:
            traceback.print_exc()
            answer = {"available": False, "reason": f"{type(exc).__name__}: {exc}"}
            if args.worker_out.exists():  # the parts it finished before (worker_progress) stay
                answer = {**json.loads(args.worker_out.read_text()), "reason": answer["reason"]}
        _write_text(args.worker_out, json.dumps(answer, default=str))
        return 0

    bootstrap_package()
    import torch

    if not args.dry_run and not torch.cuda.is_available():
        parser.error("no CUDA device: run on the GPU machine, or use --dry-run for the tiny CPU version")
    plan = make_plan(args.dry_run, args)
    if args.child_dir is not None:
        global _GROUPS
        _GROUPS = args.child_dir / "groups"
    run = Run(args.out, time.monotonic() + args.time_limit, args.child_dir)
    install_interrupt_handlers()
    try:
        run.results["plan"] = asdict(plan)
        run.results["environment"] = run.part("environment", lambda: environment(plan))
        torch.set_grad_enabled(False)
        return measure(args, plan, run, torch)
    except Interrupted as exc:
        return interrupted(run, exc)
    finally:
        if run.rwkv_build is not None and run.rwkv_build[0].poll() is None:
            _kill_group(run.rwkv_build[0])


def supervise(argv: list[str], args: argparse.Namespace) -> int:
    """Run the measurement in a child process and watch it part by part: a part that does not
    return ``HANG_GRACE_S`` after its limit (a hang inside a CUDA call, which SIGALRM cannot
    interrupt) or past the deadline is recorded as timed out, the child is killed with what it
    started, and a new child goes on after that part, replaying the finished ones (see
    :class:`Run`): one hung part costs its own figure and a restart, not every later figure. A child
    that dies inside a part (a crash in native code, SIGKILL) loses that part alike, unless the part is one
    the later parts need (``replay=False``: the weights, the model), which is run once more first; one killed
    by a signal between parts loses none, and is restarted too. The whole stays within ``--time-limit``.
    SIGTERM (``timeout`` in bench/h200.sh) is passed on to the child, which saves and kills its workers.

    The exit status: ``EXIT_OK`` (0) when the child ran to its end (a lost part is named under
    ``hung_parts``); ``EXIT_STOPPED`` (124) when the time ran out (SIGTERM, or too little time left to
    restart); ``EXIT_GAVE_UP`` (3) after ``MAX_RESTARTS`` restarts; else the child's own positive status (1:
    an error outside the parts, whose traceback is in the log; 2: bad arguments). Never negative. Whatever
    the end, the JSON and its ``.md`` table agree (:func:`settle_results`)."""
    import shutil
    import signal

    deadline = time.monotonic() + args.time_limit
    install_interrupt_handlers()
    bootstrap_package()  # rwkv_registry.fs.atomic for the writes (the package does not import torch)
    child_dir = Path(tempfile.mkdtemp(prefix="gpu_engine_run_"))
    hung: dict[str, str] = {}
    hung_seconds: dict[str, float] = {}
    retried: set[str] = set()  # the parts run once more after the child died in them
    proc: subprocess.Popen[Any] | None = None
    stopped: str | None = None  # why the run ended early, for the results' "interrupted"
    try:
        for restart in range(MAX_RESTARTS + 1):
            left = deadline - time.monotonic()
            cmd = [sys.executable, str(Path(__file__).resolve()), *_without_time_limit(argv)]
            cmd += ["--time-limit", f"{left:.1f}", "--child-dir", str(child_dir)]
            (child_dir / "part.json").unlink(missing_ok=True)  # the killed child's last word
            proc = subprocess.Popen(cmd, start_new_session=True, preexec_fn=_die_with_parent)
            stuck = _watch(proc, child_dir / "part.json", deadline)
            if stuck is None:
                rc = proc.returncode
                lost = _lost_part(child_dir)
                if rc in (EXIT_OK, EXIT_STOPPED) or (rc > 0 and lost is None):
                    return rc  # its end, its SIGTERM, or its own error outside the parts: a restart repeats it
                death = _death(rc)
                if lost is None:  # killed between parts: nothing is lost, the restart replays them all
                    print(f"[gpu_engine] the run {death} between parts; restarting it", file=sys.stderr, flush=True)
                elif _lost_part_retries(child_dir) and lost not in retried:
                    # a part the later ones need (the weights, the model): one crash in it (a sticky CUDA error
                    # surfacing there, a process killed for memory) must not cost every figure after it
                    retried.add(lost)
                    print(
                        f"[gpu_engine] {lost}: the process {death} in it; running it once more (the parts after it "
                        "need it)",
                        file=sys.stderr,
                        flush=True,
                    )
                    lost = None
                else:  # it died inside a part (a crash in native code): that part is lost, not the rest
                    name, seconds = lost, 0.0
                    again = " (also when run once more)" if lost in retried else ""
                    why = f"the process {death} in it{again}; the run was restarted after it"
            else:
                name, seconds = stuck
                death = "hung"
                why = (
                    f"timed out: did not return {seconds:.0f} s after it started (a hang in native code, e.g. "
                    "a CUDA call); the run was restarted after it"
                )
                # a part that hung after its end was saved (and a hang outside the parts, named so) is kept
                lost = name if name == "between parts" or _lost_part(child_dir) == name else None
                _kill_group(proc)
                if lost is None:
                    print(f"[gpu_engine] {name}: hung after it was saved; restarting", file=sys.stderr, flush=True)
            kill_recorded_groups(child_dir / "groups")  # its workers' groups: their nvcc/ninja/compiles too
            _remove_weights_of(proc.pid)  # save_for_rwkv's file, which the child's finally did not remove
            if lost is not None:
                hung[name] = why
                hung_seconds[name] = round(seconds, 2)
                _write_json(child_dir / "hung.json", hung)
                _write_json(child_dir / "hung_seconds.json", hung_seconds)
                print(f"[gpu_engine] {name}: {hung[name]}", file=sys.stderr, flush=True)
            if deadline - time.monotonic() < 20:
                stopped = f"the run {death}, and the time left was too short to restart it"
                return EXIT_STOPPED
            if restart == MAX_RESTARTS:
                stopped = f"the run {death}, and {MAX_RESTARTS} restarts were spent: gave up"
                return EXIT_GAVE_UP
        raise AssertionError("unreachable: the last restart returns")  # pragma: no cover
    except Interrupted as exc:
        stopped = f"{exc}: the run was stopped from outside"
        if proc is not None and proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGTERM)  # it saves JSON and table, kills its workers
            try:
                proc.wait(timeout=7)  # within timeout --kill-after=10
            except subprocess.TimeoutExpired:
                _kill_group(proc)
        return EXIT_STOPPED
    finally:
        if proc is not None and proc.poll() is None:
            _kill_group(proc)
        kill_recorded_groups(child_dir / "groups")
        shutil.rmtree(child_dir, ignore_errors=True)
        settle_results(args.out, hung, stopped)


def _death(returncode: int) -> str:
    """How a child ended, in words: "was killed by SIGKILL", "exited 1"."""
    import signal

    if returncode < 0:
        with contextlib.suppress(ValueError):
            return f"was killed by {signal.Signals(-returncode).name}"
        return f"was killed by signal {-returncode}"
    return f"exited {returncode}"


def _finished_parts(child_dir: Path) -> dict[str, str]:
    """The parts the child finished, each with the id of the heartbeat it ran under (done.json)."""
    done = _read_json(child_dir / "done.json")
    return {name: str(entry.get("beat")) for name, entry in done.items() if isinstance(entry, dict)}


def _lost_part(child_dir: Path) -> str | None:
    """After the child ended: the part it died in (part.json names it), or None when it died between parts,
    including the moment after a part's end was saved (done.json, under the same heartbeat) and before
    part.json was cleared (see :meth:`Run.part`)."""
    beat = _read_json(child_dir / "part.json")
    name = beat.get("name")
    if not name:
        return None
    if _finished_parts(child_dir).get(str(name)) == str(beat.get("seq")):
        return None
    return str(name)


def _lost_part_retries(child_dir: Path) -> bool:
    """Whether the part the child died in (:func:`_lost_part`) asked for one more try (``replay=False``: the
    weights, the model, the weights' file for ``rwkv``, which the parts after it need)."""
    return _read_json(child_dir / "part.json").get("retry") is True


def settle_results(out: Path, hung: dict[str, str], stopped: str | None) -> None:
    """In the supervisor, once the child has ended: add what only the supervisor knows (the parts lost
    with the last child, why the run stopped) and write the JSON and its ``.md`` table again from it, so
    that the two agree however the child ended (killed between its two writes, or given up on)."""
    results = _read_json(out)
    if not results and not hung and not stopped:
        return  # the child never saved anything (bad arguments, no CUDA): nothing to settle
    if hung:
        results["hung_parts"] = {**results.get("hung_parts", {}), **hung}
    if stopped and not results.get("interrupted"):
        results["interrupted"] = stopped
    try:
        save_results(out, results)
    except Exception as exc:  # the child's files stay as they are; say so, not a traceback
        print(f"[gpu_engine] could not rewrite {out} and its table: {exc}", file=sys.stderr, flush=True)


def _without_time_limit(argv: list[str]) -> list[str]:
    out, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg == "--time-limit":
            skip = True
        elif not arg.startswith("--time-limit="):
            out.append(arg)
    return out


def _watch(proc: subprocess.Popen[Any], heartbeat: Path, deadline: float) -> tuple[str, float] | None:
    """Wait for the child; ``(part, seconds)`` when a part has to be stopped, None once it exits.
    A part may run its limit plus a grace (at most ``HANG_GRACE_S``, in which ``PartTimeout``
    unwinds what SIGALRM can interrupt); a part without a limit (workers, which keep their own
    time), until the deadline plus ``HANG_GRACE_S``."""
    seq, started = None, time.monotonic()
    current: dict[str, Any] = {}
    while proc.poll() is None:
        now = time.monotonic()
        beat = _read_json(heartbeat)
        if beat and beat.get("seq") != seq:
            seq, started, current = beat.get("seq"), now, beat
        name, limit = current.get("name"), current.get("limit")
        stop_at = deadline + HANG_GRACE_S
        if name and limit is not None:
            stop_at = min(stop_at, started + limit + min(HANG_GRACE_S, max(2.0, limit)))
        if now > stop_at:
            return str(name or "between parts"), now - started
        time.sleep(0.2)
    return None


def _remove_weights_of(pid: int) -> None:
    for folder in (Path("/dev/shm"), Path(tempfile.gettempdir())):
        (folder / f"gpu_engine_{pid}.pth").unlink(missing_ok=True)


def interrupted(run: Run, exc: BaseException) -> int:
    """Record the interruption and save what ran (JSON and table); exit status 124, as timeout's."""
    run.results["interrupted"] = f"{exc} after {time.monotonic() - run.started:.0f} s"
    print(f"[gpu_engine] interrupted ({exc}): results so far saved to {run.out}", file=sys.stderr, flush=True)
    run.save()
    return 124


def measure(args: argparse.Namespace, plan: Plan, run: Run, torch: Any) -> int:
    """Every part in turn (see the module docstring), each saved as it ends."""
    if not args.skip_rwkv:
        run.rwkv_build = start_rwkv_build(plan)  # nvcc in the background while the GPU is busy
    run.results["copy"] = run.part("copy", lambda: copy_bandwidth(plan))
    run.results["matmul"] = run.part("matmul", lambda: matmul_rate(plan))
    gen = torch.Generator().manual_seed(1)
    tokens = torch.randint(0, plan.arch.vocab, (max(plan.prefill_lengths) + 32,), generator=gen).tolist()
    ours: dict[str, Any] = {}
    run.results["ours"] = ours
    budget = run.left() / 2  # three attempts at 240 s each would be more than the whole run
    ours["preflight"] = run.part(
        "ours fast-path preflight (subprocesses)", lambda: preflight(plan, tokens, 240, budget), share=None
    )
    apply_preflight(ours["preflight"])  # again after a restart, where the part is replayed
    sd = run.part("random weights", lambda: random_base(plan.arch, plan.device, plan.dtype), replay=False)
    if "error" not in sd:
        run.results["ceilings"] = run.part("ceilings", lambda: ceilings(sd, run.results["copy"], run.results["matmul"]))
    model = run.part("build model", lambda: build_model(sd, plan), replay=False) if "error" not in sd else sd
    if isinstance(model, dict):  # the weights or the model could not be made
        ours["error"] = model["error"]
    else:
        ours["prefill"] = run.part("ours prefill", lambda: ours_prefill(model, plan, tokens))
        ours["decode"] = {}
        for B in plan.decode_batches:
            ours["decode"][str(B)] = run.part(f"ours decode B={B}", functools.partial(ours_decode, model, plan, B))
        ours["launches"] = run.part("ours launches per decode step", lambda: ours_launches(model, plan))
        ours["decode_eager"] = run.part("ours decode B=1 eager", lambda: ours_decode_eager(model, plan))
        ours["miss"] = run.part("ours MiSS fly vs merge", lambda: ours_miss(model, plan))
        ours["vs_reference"] = run.part("ours fast vs reference logits", lambda: ours_vs_reference(model, plan, tokens))
    ours["op_sweep"] = run.part("ours WKV op sweep", lambda: ours_op_sweep(plan))
    ours["fused_ops"] = run.part("ours fused element-wise ops", lambda: ours_fused_ops(plan))
    run.save()

    if not args.skip_rwkv and "error" in sd:
        run.results["rwkv"] = {"available": False, "reason": "no weights to give it"}
    elif not args.skip_rwkv:
        # fla's worker on the GPU may compile for minutes; the dry run's takes ~15 s, and 240 s left
        # the rwkv worker 6 s of h200.sh's dry run (it timed out there, untested)
        fla_reserve = 0 if args.skip_fla else 240 if plan.device == "cuda" else 60
        path = run.part("save weights for rwkv", lambda: str(save_for_rwkv(sd, plan)), replay=False)
        run.results["rwkv_build"] = run.part(
            "rwkv CUDA build (started at the beginning)",
            lambda: finish_rwkv_build(run.rwkv_build, run.left() - fla_reserve - 90),
            share=None,
        )
        if isinstance(path, str):
            try:
                with tempfile.TemporaryDirectory() as tmp:
                    logits_path = Path(tmp) / "rwkv_logits.pt"
                    payload = {
                        "path": path,
                        "strategy": plan.rwkv_strategy,
                        "device": plan.device,
                        "tokens": tokens,
                        "lengths": list(plan.prefill_lengths),
                        "reps": plan.reps,
                        "steps": min(plan.decode_steps, 32),
                        "logits_path": str(logits_path),
                    }
                    run.results["rwkv"] = run.part(
                        "rwkv package",
                        lambda: run_worker("rwkv", payload, run.left() - fla_reserve, rwkv_env(plan)),
                        share=None,
                    )
                    if run.results["rwkv"].get("available") and not isinstance(model, dict):

                        def compare() -> dict[str, Any]:
                            theirs = torch.load(logits_path)
                            mine = ours_logits(model, plan, tokens)
                            rel = float(((mine - theirs).pow(2).mean() / theirs.pow(2).mean().clamp_min(1e-30)).sqrt())
                            return {"rel_rms": rel, "T": plan.prefill_lengths[0]}

                        run.results["logits_vs_rwkv"] = run.part("ours logits vs rwkv", compare)
            finally:
                Path(path).unlink(missing_ok=True)
        else:
            run.results["rwkv"] = {"available": False, "reason": path.get("error", "weights not saved")}
    else:
        run.results["rwkv"] = {"available": False, "reason": "skipped (--skip-rwkv)"}
    run.save()

    if not args.skip_fla:
        reps = max(3, plan.reps) if plan.device == "cuda" else plan.reps
        payload = {"device": plan.device, "T": plan.op_seq_len, "H": plan.op_heads, "reps": reps, "warmup": plan.warmup}
        run.results["fla"] = run.part("fla chunk_rwkv7", lambda: run_worker("fla", payload, run.left(), {}), share=None)
    else:
        run.results["fla"] = {"available": False, "reason": "skipped (--skip-fla)"}
    write_table(run, args.out)  # everything the issue asks for; compiling may run into the time limit

    if not args.skip_compile and not isinstance(model, dict):  # torch.compile + graph, last: it may be slow
        ours["decode_compiled"] = {}
        for B in plan.decode_batches:
            if run.left() < COMPILE_RESERVE_S or (B != 1 and plan.device != "cuda"):
                reason = "CPU: B=1 only" if plan.device != "cuda" else f"under {COMPILE_RESERVE_S} s left"
                ours["decode_compiled"][str(B)] = {"error": f"skipped ({reason})"}
                continue
            ours["decode_compiled"][str(B)] = run.part(
                f"ours decode B={B} compiled", functools.partial(ours_decode, model, plan, B, compile=True), share=1.0
            )
        write_table(run, args.out)
    print(run.results["table"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
