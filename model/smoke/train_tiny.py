"""Deterministic training of the demo's tiny State and tiny MiSS on the tiny smoke set.

``python -m rwkv_registry.model.smoke.train_tiny OUT_DIR`` writes ``rwkv7-tiny-demo.pth`` (the
base), ``tiny-state.pth`` and ``tiny-miss.pth`` (+ ``manifest.json``), or reuses them when
``OUT_DIR`` already holds files made from the same inputs (the model, kernel and smoke sources,
the tiny case file, the vocabulary, the configuration, the torch release and the CPU capability:
:func:`cache_key`).

- **The base** is a tiny random RWKV-7 (2 layers, width 128, the full 65536 vocabulary) from
  :func:`rwkv_registry.model.tiny.tiny_base_tensors`, with one change: random decays forget
  within a few tokens, while a State has to cross a 155-token System turn and the user's words
  have to reach the answer ten tokens later. So every other decay channel is slow (``w0 = -6``:
  0.2 % lost per token) and the others are spread over half-lives of 2 to 60 tokens (``w0`` from
  0 to -4); the in-context learning rate is lowered (``a0 - 3``). A random model never writes a
  valid call: the base alone scores 0.
- **Training** uses the reference model itself (``RWKV7``, autograd) on every case of
  ``data/tiny_cases.jsonl``, rendered exactly as the smoke evaluation renders it: the State with
  ``g1k`` (loss on the call after the opener), the MiSS with ``g1k-think`` (loss on ``></think>``,
  the opener and the call). Full-batch Adam from zero (the seed's "initial state zero, fixed data
  order") with a cosine learning rate: State 300 steps at 1.0, MiSS (rank 32) 150 steps at 0.002.
- **Speed** (about 30 s on two cores, once; then the files are reused): the State and the MiSS
  train in two processes of one thread each; the WKV recurrence runs in its chunked form
  (:mod:`~rwkv_registry.model.smoke.chunked`, equal to the reference up to float rounding); the
  softmax is taken over the targets and their strongest rivals, refreshed from a full-vocabulary
  pass every 10 steps (:class:`_Candidates`); the MiSS does not backpropagate through the System
  turn (its state is recomputed with the current adapter every step, without gradient).
- Same inputs, same bytes, in one process or in the two workers, by construction: no random
  numbers are drawn after the base, and both paths train under :func:`training_numerics` (one
  thread, fp32, full-precision matmuls, reference element-wise ops, the caller's settings
  restored). In-process training used to inherit the caller's settings, which a fresh worker did
  not: ``torch.set_float32_matmul_precision("medium")`` (bf16 matmuls on the CPU), an fp64 default
  dtype or ``set_wkv_backend("kernels")`` with ``TRITON_INTERPRET=1`` each gave other bytes. And a
  worker imports the package anew: it finds the caller's copy first (:func:`_run_parts_in_processes`)
  and refuses to train unless its :func:`cache_key` is the caller's. The mutation audit's
  difference was most likely a mutant in a copy of the package first on the caller's ``sys.path``, trained by
  the caller while its workers trained the installed code. Code patched in memory (monkeypatched,
  edited after its import) is out of a worker's sight: train it with ``parallel=False``.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import math
import os
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from torch import nn

from rwkv_registry.checks.miss import tensor_name
from rwkv_registry.fs.atomic import atomic_write_bytes
from rwkv_registry.index.smoke_cases import TINY_CASES, Case, builtin_path, load_cases
from rwkv_registry.model.config import RWKV7Config
from rwkv_registry.model.miss import TARGET_MODULES
from rwkv_registry.model.profiles import get_profile
from rwkv_registry.model.rwkv7 import RWKV7
from rwkv_registry.model.smoke.prompt import ANSWER_PREFIX, THINK_CLOSE, PromptBuilder
from rwkv_registry.model.state import LayerState, RWKV7State, StateWeights
from rwkv_registry.model.tiny import save_tensors, tiny_base_tensors, tiny_config
from rwkv_registry.model.tokenizer import get_tokenizer

BASE_NAME = "rwkv7-tiny-demo.pth"
STATE_NAME = "tiny-state.pth"
MISS_NAME = "tiny-miss.pth"
MANIFEST = "manifest.json"
WRITER = "rwkv_registry.model.smoke.train_tiny"  # the manifest's mark: the demo wrote the files it lists
WRITTEN = (BASE_NAME, STATE_NAME, MISS_NAME)  # what build_tiny_weights writes (and replaces) beside MANIFEST


@dataclass(frozen=True)
class TrainConfig:
    """Everything that decides the bytes of the trained files (part of the cache key)."""

    seed: int = 0
    n_layer: int = 2
    n_embd: int = 128
    state_steps: int = 300
    state_lr: float = 1.0
    miss_steps: int = 150
    miss_lr: float = 0.002
    miss_rank: int = 32
    miss_alpha: float = 64.0
    min_lr_ratio: float = 0.05
    w0_slow: float = -6.0  # decay of every other channel (-6: 0.2 % lost per token)
    w0_fast: tuple[float, float] = (0.0, -4.0)  # the other channels, spread over this range
    a0_shift: float = -3.0  # lowers the in-context learning rate


@dataclass(frozen=True)
class TinyWeights:
    """The trained demo files."""

    base: Path
    state: Path
    miss: Path
    key: str
    reused: bool


# environment variables read once by the math libraries, out of training_numerics' reach, that change
# the bytes (MKL_CBWR=COMPATIBLE did; MKL_ENABLE_INSTRUCTIONS=AVX2, ONEDNN_MAX_CPU_ISA=AVX2,
# OMP_NUM_THREADS and PYTHONHASHSEED did not, 2026-11-30)
NUMERIC_ENV = ("MKL_CBWR",)
# registry modules the training runs: the MiSS file format and its writer, the case loader
REGISTRY_SOURCES = (
    "checks/miss.py",
    "formats/pthwrite.py",
    "formats/unpickle.py",
    "formats/ckpt.py",
    "index/smoke_cases.py",
)


def key_sources() -> list[tuple[str, Path]]:
    """The source files whose code decides the bytes, each with a name that does not depend on where
    the package lives: every ``.py`` of ``model/`` (the smoke code included) and of ``kernels/`` (the
    element-wise references the model runs), and :data:`REGISTRY_SOURCES`."""
    import rwkv_registry
    import rwkv_registry.kernels

    model_dir = Path(__file__).resolve().parents[1]
    kernels_dir = Path(rwkv_registry.kernels.__file__).resolve().parent
    registry_dir = Path(rwkv_registry.__file__).resolve().parent
    found = [(f"model/{p.relative_to(model_dir).as_posix()}", p) for p in model_dir.rglob("*.py")]
    found += [(f"kernels/{p.relative_to(kernels_dir).as_posix()}", p) for p in kernels_dir.rglob("*.py")]
    found += [(f"registry/{name}", registry_dir / name) for name in REGISTRY_SOURCES]
    return sorted(found)


def cache_key(config: TrainConfig, cases_path: Path | None = None) -> str:
    """sha256 over everything that decides the bytes: the sources (:func:`key_sources`), the case
    file, the tokenizer's vocabulary, the configuration, the torch release, the CPU capability
    torch dispatches to (AVX512 and AVX2 kernels round differently) and :data:`NUMERIC_ENV`. The
    numerical settings are fixed by :func:`training_numerics`, part of the sources."""
    from rwkv_registry.model.tokenizer import default_vocab_path

    h = hashlib.sha256()
    for name, src in key_sources():
        h.update(name.encode() + b"\0" + src.read_bytes())
    h.update((cases_path or builtin_path(TINY_CASES)).read_bytes())
    h.update(default_vocab_path().read_bytes())
    h.update(json.dumps(asdict(config), sort_keys=True).encode())
    h.update(torch.__version__.split("+")[0].encode())
    h.update(torch.backends.cpu.get_cpu_capability().encode())
    for name in NUMERIC_ENV:
        h.update(f"\0{name}={os.environ.get(name, '')}".encode())
    return h.hexdigest()


def demo_base_tensors(config: TrainConfig) -> dict[str, torch.Tensor]:
    """The tiny demo base (fp32): random weights, decays set as the module docstring says."""
    cfg = tiny_config(n_layer=config.n_layer, n_embd=config.n_embd)
    tensors = tiny_base_tensors(cfg, seed=config.seed)
    n = cfg.head_size
    w0 = torch.empty(n)
    w0[0::2] = config.w0_slow
    w0[1::2] = torch.linspace(config.w0_fast[0], config.w0_fast[1], n // 2)
    for i in range(cfg.n_layer):
        tensors[f"blocks.{i}.att.w0"] = w0.repeat(cfg.n_head).view(1, 1, -1).clone()
        tensors[f"blocks.{i}.att.a0"] = tensors[f"blocks.{i}.att.a0"] + config.a0_shift
    return tensors


# ----------------------------------------------------------------------------------- the batch


@dataclass
class TrainBatch:
    """Teacher-forced rows sharing one System prefix."""

    prefix: list[int]
    tokens: torch.Tensor  # [B, T] suffix + targets, right-padded with 0 (padding never scored)
    rows: torch.Tensor  # [P] row of each scored position
    cols: torch.Tensor  # [P] position whose logits predict the target
    targets: torch.Tensor  # [P]


def training_batch(builder: PromptBuilder, cases: list[Case]) -> TrainBatch:
    """Rows for ``cases`` rendered as the smoke evaluation renders them (thinking left empty)."""
    seqs: list[tuple[list[int], int]] = []
    prefixes = set()
    for case in cases:
        prompt = builder.think_prompt(case) if builder.thinks else builder.call_prompt(case)
        prefixes.add(prompt.prefix)
        # the thinking pass writes the ">" the prompt withholds, then (trained: at once) closes the block
        lead = builder.tok.encode(builder.profile.withheld + THINK_CLOSE + ANSWER_PREFIX) if builder.thinks else []
        seqs.append((list(prompt.suffix) + lead + list(builder.completion_ids(case)), len(prompt.suffix)))
    if len(prefixes) != 1:
        raise ValueError("the tiny training set must share one System turn")
    width = max(len(s) for s, _ in seqs)
    tokens = torch.zeros(len(seqs), width, dtype=torch.long)
    rows, cols, targets = [], [], []
    for i, (seq, start) in enumerate(seqs):
        tokens[i, : len(seq)] = torch.tensor(seq)
        for j in range(start, len(seq)):
            rows.append(i)
            cols.append(j - 1)  # the logits at j - 1 predict token j
            targets.append(seq[j])
    return TrainBatch(list(prefixes.pop()), tokens, torch.tensor(rows), torch.tensor(cols), torch.tensor(targets))


# ----------------------------------------------------------------------------------- training


def _blocks(model: RWKV7, x: torch.Tensor, state: RWKV7State) -> tuple[torch.Tensor, RWKV7State]:
    """The model's blocks on embeddings ``x`` [B, T, C] (no head)."""
    v_first = None
    layers = []
    for block, layer_state in zip(model.blocks, state.layers, strict=True):
        x, new_state, v_first = block(x, layer_state, v_first)
        layers.append(new_state)
    return x, RWKV7State(layers)


def _hidden(model: RWKV7, batch: TrainBatch, time_state: StateWeights | None, prefix_grad: bool) -> torch.Tensor:
    """``ln_out`` of the positions that predict the targets: ``[P, C]``."""
    with torch.set_grad_enabled(prefix_grad and torch.is_grad_enabled()):
        state = model.new_state(1, time_state)
        _, state = _blocks(model, model.emb(torch.tensor([batch.prefix])), state)
    B = batch.tokens.shape[0]
    state = RWKV7State(
        [
            LayerState(s.att_shift.expand(B, -1), s.wkv.expand(B, -1, -1, -1), s.ffn_shift.expand(B, -1))
            for s in state.layers
        ]
    )
    x, _ = _blocks(model, model.emb(batch.tokens), state)  # [B, T, C]
    return model.ln_out(x[batch.rows, batch.cols])  # [P, C]


class _Candidates:
    """The vocabulary the loss is normalised over: every target plus the strongest rivals.

    A full softmax over 65536 tokens at every scored position is most of a step's cost, so the
    loss uses the targets and the ``top`` highest-scoring other tokens of each position, found
    with a full (gradient-free) pass every ``refresh`` steps and on the last steps; a rival that
    climbs in between is caught at the next refresh. Greedy decoding later uses the full vocabulary.
    """

    def __init__(self, targets: torch.Tensor, refresh: int = 10, top: int = 32) -> None:
        self.targets = targets
        self.refresh = refresh
        self.top = top
        self.ids = torch.unique(targets)
        self.index = torch.searchsorted(self.ids, targets)

    def update(self, model: RWKV7, h: torch.Tensor) -> None:
        with torch.no_grad():
            logits = model.head(h.detach())  # [P, V]
            logits[torch.arange(len(self.targets)), self.targets] = -float("inf")
            rivals = logits.topk(self.top, dim=-1).indices.flatten()
        self.ids = torch.unique(torch.cat((self.targets, rivals)))
        self.index = torch.searchsorted(self.ids, self.targets)

    def loss(self, model: RWKV7, h: torch.Tensor) -> torch.Tensor:
        logits = h @ model.head.weight[self.ids].t()  # [P, |ids|]
        return nn.functional.cross_entropy(logits, self.index)


@contextlib.contextmanager
def _chunked_wkv() -> Iterator[None]:
    """Run the model's WKV through the chunked form (same recurrence) while training."""
    import rwkv_registry.model.time_mix as time_mix
    from rwkv_registry.model.smoke.chunked import wkv7_chunked

    original = time_mix.wkv7
    time_mix.wkv7 = wkv7_chunked
    try:
        yield
    finally:
        time_mix.wkv7 = original


def _flushes_denormals() -> bool:
    """Whether this thread flushes denormal fp32 inputs to zero (torch has a setter, no getter)."""
    return float(torch.tensor(1e-39, dtype=torch.float32) * 1.0) == 0.0


@contextlib.contextmanager
def training_numerics() -> Iterator[None]:
    """The numerical conditions of the training, the same in any process, restored afterwards.

    :func:`_train_part` runs under it both in this process (``parallel=False``) and in a worker
    (``--part``), so the two cannot differ by what a process happened to set before: one intra-op
    thread; fp32 as the default dtype; fp32 matmuls at full precision on the CPU (oneDNN's
    ``fp32_precision`` "ieee": ``torch.set_float32_matmul_precision("medium")`` in a caller makes
    them bf16 and changes the bytes); denormals kept, not flushed; torch's deterministic mode off
    (its default: on, it fills every new tensor with NaN first, 5 % slower); gradients on, outside
    any inference mode; the model's reference element-wise ops, never the Triton kernels that
    :func:`~rwkv_registry.model.set_wkv_backend` ("kernels") with ``TRITON_INTERPRET=1`` picks for
    gradient-free passes; the chunked WKV (:func:`_chunked_wkv`).
    """
    from rwkv_registry.model.wkv import set_fused_ops, set_wkv_backend

    mkldnn_matmul = torch.backends.mkldnn.matmul  # type: ignore[attr-defined]  # set at import, not in the stubs
    threads = torch.get_num_threads()
    dtype = torch.get_default_dtype()
    precision = mkldnn_matmul.fp32_precision
    flush = _flushes_denormals()
    deterministic = torch.are_deterministic_algorithms_enabled()
    warn_only = torch.is_deterministic_algorithms_warn_only_enabled()
    backend = set_wkv_backend("reference")
    fused = set_fused_ops(False)
    try:
        torch.set_num_threads(1)
        torch.set_default_dtype(torch.float32)
        mkldnn_matmul.fp32_precision = "ieee"
        torch.set_flush_denormal(False)
        torch.use_deterministic_algorithms(False)
        with torch.inference_mode(False), torch.enable_grad(), _chunked_wkv():
            yield
    finally:
        torch.use_deterministic_algorithms(deterministic, warn_only=warn_only)
        torch.set_flush_denormal(flush)
        mkldnn_matmul.fp32_precision = precision
        torch.set_default_dtype(dtype)
        torch.set_num_threads(threads)
        set_fused_ops(fused)
        set_wkv_backend(backend)


def _cosine(step: int, steps: int, floor: float) -> float:
    return floor + (1 - floor) * 0.5 * (1 + math.cos(math.pi * step / steps))


def _fit(
    model: RWKV7,
    batch: TrainBatch,
    params: list[torch.Tensor],
    hidden: Callable[[], torch.Tensor],
    steps: int,
    lr: float,
    floor: float,
    log: Callable[[str], None],
    what: str,
) -> float:
    opt = torch.optim.Adam(params, lr=lr)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: _cosine(s, steps, floor))
    cands = _Candidates(batch.targets)
    loss = float("nan")
    t0 = time.perf_counter()
    for step in range(steps):
        h = hidden()
        if step % cands.refresh == 0 or step >= steps - 3:
            cands.update(model, h)
        value = cands.loss(model, h)
        opt.zero_grad(set_to_none=True)
        value.backward()
        opt.step()
        sched.step()
        loss = float(value.detach())
        if step % 50 == 0 or step == steps - 1:
            log(f"{what}: step {step + 1}/{steps}, loss {loss:.4f} ({time.perf_counter() - t0:.1f} s)")
    return loss


def train_state(model: RWKV7, batch: TrainBatch, config: TrainConfig, log: Callable[[str], None]) -> torch.Tensor:
    """A State ``[L, H, N, N]`` (fp32) trained from zero; the base stays frozen."""
    cfg = model.config
    s0 = torch.zeros(cfg.n_layer, cfg.n_head, cfg.head_size, cfg.head_size, requires_grad=True)

    def hidden() -> torch.Tensor:
        return _hidden(model, batch, StateWeights(tuple(s0[i] for i in range(cfg.n_layer))), prefix_grad=True)

    _fit(model, batch, [s0], hidden, config.state_steps, config.state_lr, config.min_lr_ratio, log, "State")
    return s0.detach().clone()


class _TrainMiss(nn.Module):
    """A linear map with a trainable MiSS ``D``: ``W + scale * D[:, k % r]`` (one matmul)."""

    def __init__(self, base: nn.Linear, rank: int, scale: float) -> None:
        super().__init__()
        self.base = base
        self.scale = scale
        self.D = nn.Parameter(torch.zeros(base.out_features, rank))
        self.cols: torch.Tensor
        self.register_buffer("cols", torch.arange(base.in_features) % rank, persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return nn.functional.linear(x, self.base.weight + self.scale * self.D[:, self.cols])


def train_miss(
    model: RWKV7, batch: TrainBatch, config: TrainConfig, log: Callable[[str], None]
) -> dict[str, torch.Tensor]:
    """MiSS ``D`` tensors ``{blocks.L.<target>.D: [out, rank]}`` (fp32) trained from zero."""
    scale = config.miss_alpha / config.miss_rank
    wrapped: list[tuple[nn.Module, str, nn.Linear, _TrainMiss, str]] = []
    for layer, block in enumerate(model.blocks):
        for target, (sub, attr) in TARGET_MODULES.items():
            parent = getattr(block, sub)
            lin = getattr(parent, attr)
            mod = _TrainMiss(lin, config.miss_rank, scale)
            setattr(parent, attr, mod)
            wrapped.append((parent, attr, lin, mod, tensor_name(layer, target)))
    try:
        _fit(
            model,
            batch,
            [m.D for *_, m, _ in wrapped],
            lambda: _hidden(model, batch, None, prefix_grad=False),
            config.miss_steps,
            config.miss_lr,
            config.min_lr_ratio,
            log,
            "MiSS",
        )
    finally:
        for parent, attr, lin, _, _ in wrapped:
            setattr(parent, attr, lin)
    return {name: m.D.detach().clone() for *_, m, name in wrapped}


# ----------------------------------------------------------------------------------- files


def _write_miss(
    path: Path, d_tensors: dict[str, torch.Tensor], base_path: Path, config: TrainConfig, cfg: RWKV7Config
) -> None:
    from rwkv_registry.checks.miss import write_miss_file
    from rwkv_registry.formats.pthwrite import RawTensor
    from rwkv_registry.model.loading import sha256_file
    from rwkv_registry.model.tiny import miss_in_out

    tensors = {}
    for name, t in d_tensors.items():
        raw = t.to(torch.bfloat16).contiguous().view(torch.uint16).numpy().tobytes()
        tensors[name] = RawTensor("bfloat16", tuple(t.shape), raw)
    in_features = {name: miss_in_out(cfg, name.split(".", 2)[2][: -len(".D")])[0] for name in d_tensors}
    buf = io.BytesIO()  # written whole, then renamed into place: a killed worker leaves no truncated file
    write_miss_file(
        buf,
        tensors,
        rank=config.miss_rank,
        alpha=config.miss_alpha,
        base_fingerprint=sha256_file(base_path),
        dtype="bfloat16",
        in_features=in_features,
    )
    atomic_write_bytes(path, buf.getvalue())


def _train_part(part: str, base_path: str, out_path: str, config: TrainConfig) -> list[str]:
    """Train one file (``part`` is "state" or "miss") from the base file; returns the log lines.

    Top-level so that it can run in a worker process; under :func:`training_numerics` in both.
    """
    lines: list[str] = []
    tok = get_tokenizer()
    cases = list(load_cases(builtin_path(TINY_CASES)).cases)
    with training_numerics():
        model = RWKV7.from_pth(base_path, dtype=torch.float32)
        if part == "state":
            batch = training_batch(PromptBuilder(get_profile("g1k"), tok), cases)
            s0 = train_state(model, batch, config, lines.append)
            save_tensors(out_path, {f"blocks.{i}.att.time_state": s0[i] for i in range(s0.shape[0])})
        else:
            batch = training_batch(PromptBuilder(get_profile("g1k-think"), tok), cases)
            d = train_miss(model, batch, config, lines.append)
            _write_miss(Path(out_path), d, Path(base_path), config, model.config)
    return lines


def _run_parts_in_processes(jobs: list[tuple[str, str, str, TrainConfig]], key: str | None = None) -> list[list[str]]:
    """Run :func:`_train_part` for each job in its own Python process, all at once.

    A worker imports ``rwkv_registry`` anew, from wherever its ``sys.path`` finds it: not
    necessarily the code this process runs (another copy first on this process's ``sys.path``, as
    a mutation tool puts it). So the folder holding this
    process's ``rwkv_registry`` package goes first on the workers' ``PYTHONPATH`` (when the package
    is a folder of that name: not an editable install, whose finder maps the names), and each worker
    is given ``key`` (default: :func:`cache_key` of the job's configuration, computed here) and
    refuses to train unless its own :func:`cache_key` is the same: same sources, case file,
    vocabulary, configuration, torch release and CPU capability, hence the same bytes as here.
    """
    # What a worker cannot see, checked 2026-12-01: train_tiny patches nothing before it starts its workers.
    # Its own in-memory patches (training_numerics: threads, default dtype, matmul precision, denormals, WKV
    # backend, fused ops; _chunked_wkv: time_mix.wkv7) are made inside _train_part by the process that trains,
    # worker or caller, and undone after; a worker gets only files (the base, drawn by the caller under
    # training_numerics too), the configuration as JSON and the key; no DataLoader, no fork. What it misses is
    # a patch made by a caller: today only tests patch train_tiny (_train_part, _fit, _Candidates.update,
    # __file__) and each trains with parallel=False, calls the patched function itself, or runs workers to
    # show that they train the code on disk. A caller patching the code and training with parallel=True gets
    # the bytes of the code on disk, which is what the cache key (sources on disk) stands for: the cache stays
    # true, so this is harmless. The one hazard is the reverse, patched code trained with parallel=False into
    # a folder shared with real runs (filed under the unpatched key); the tests train such code in tmp_path.
    import subprocess

    import rwkv_registry

    env = dict(os.environ)
    package = Path(rwkv_registry.__file__).resolve().parent
    if package.name == "rwkv_registry":
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(package.parent), env.get("PYTHONPATH", "")]))
    procs = []
    for part, base, out, config in jobs:
        cmd = [
            sys.executable,
            "-m",
            "rwkv_registry.model.smoke.train_tiny",
            "--part",
            part,
            base,
            out,
            json.dumps(asdict(config)),
            key or cache_key(config),
        ]
        procs.append(subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env))
    results = []
    try:
        for p in procs:
            out_text, err_text = p.communicate()
            if p.returncode != 0:
                what = str(p.args[4])  # type: ignore[index]  # the part, from the cmd list above
                raise RuntimeError(f"training the tiny weights failed ({what}): {err_text.strip()[-2000:]}")
            results.append(out_text.splitlines())
    finally:  # interrupted (Ctrl-C) or failed: no worker goes on training, or writes its file, behind the caller
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    return results


def _file_record(path: Path) -> dict[str, object]:
    """What the manifest records of a trained file, and a reuse checks: its size and sha256 (a file truncated or
    changed since, by a crash of an older writer, a full disk or a hand, is trained again, not trusted)."""
    from rwkv_registry.model.loading import sha256_file

    return {"size": path.stat().st_size, "sha256": sha256_file(path)}


def _claimed(manifest: Path) -> set[str]:
    """The file names ``manifest`` says the demo wrote; ValueError when it is not a manifest of the demo's.

    A manifest carries :data:`WRITER` and lists in ``writes`` the files a run is about to write (before the
    first of them, so that an interrupted run still owns what it left); an older demo's manifest (no mark)
    is recognised by its shape: a ``key`` and the records of exactly the three files.
    """
    if manifest.is_symlink() or not manifest.is_file():
        raise ValueError(f"{MANIFEST} is not a plain file")
    try:
        data = json.loads(manifest.read_bytes())
    except ValueError:
        raise ValueError(f"{MANIFEST} is not the demo's (not JSON)") from None
    if isinstance(data, dict) and data.get("writer") == WRITER and isinstance(data.get("writes"), list):
        return {name for name in data["writes"] if name in WRITTEN}
    if (
        isinstance(data, dict)
        and isinstance(data.get("key"), str)
        and isinstance(data.get("files"), dict)
        and set(data["files"]) == set(WRITTEN)
    ):
        return set(WRITTEN)
    raise ValueError(f"{MANIFEST} is not the demo's (no {WRITER!r} mark)")


def check_weights_dir(out_dir: str | Path) -> None:
    """Refuse (:class:`~rwkv_registry.core.errors.UsageError`, exit 2) when :func:`build_tiny_weights` would replace
    or delete in ``out_dir`` a file the demo did not write.

    It writes :data:`WRITTEN` and :data:`MANIFEST` there; a file of one of those names is the demo's only
    when a manifest of the demo's (:func:`_claimed`) lists it. Anything else (a user's ``tiny-state.pth``,
    a ``manifest.json`` of another tool, a link, a folder) is left as it is.
    """
    from rwkv_registry.core.errors import UsageError

    out = Path(out_dir)
    hint = (
        "Nothing was touched. Move those files away, or keep the tiny weights in another folder "
        "(RWKV_REGISTRY_SMOKE_WEIGHTS=DIR), then run the command again."
    )
    if out.is_symlink() or (out.exists() and not out.is_dir()):
        raise UsageError(f"{out} is not a directory: the tiny weights are written into that folder", hint=hint)
    manifest = out / MANIFEST
    claimed: set[str] = set()
    try:
        if manifest.exists() or manifest.is_symlink():
            claimed = _claimed(manifest)
    except (OSError, ValueError) as e:
        raise UsageError(
            f"{manifest}: {e}: the demo writes and replaces that file with its tiny weights",
            hint=hint,
            path=str(manifest),
        ) from None
    foreign = []
    for name in WRITTEN:
        p = out / name
        if p.is_symlink() or (p.exists() and (not p.is_file() or name not in claimed)):
            foreign.append(name)
    if foreign:
        raise UsageError(
            f"{out}: {', '.join(foreign)} {'was' if len(foreign) == 1 else 'were'} not written by the demo "
            f"(no {MANIFEST} of the demo's lists {'it' if len(foreign) == 1 else 'them'}), and the demo writes its "
            "tiny weights under those names",
            hint=hint,
            path=str(out),
        )


def build_tiny_weights(
    out_dir: str | Path,
    *,
    config: TrainConfig | None = None,
    log: Callable[[str], None] = lambda m: None,
    parallel: bool = True,
) -> TinyWeights:
    """Train (or reuse) the demo's tiny base, State and MiSS in ``out_dir``.

    Only files the demo wrote are replaced there (:func:`check_weights_dir`: a user's file of one of
    the names is refused, UsageError).

    ``parallel`` trains the State and the MiSS in two worker processes (one thread each; the
    same bytes as in one process: :func:`training_numerics`, :func:`_run_parts_in_processes`).
    """
    config = config or TrainConfig()
    out = Path(out_dir)
    key = cache_key(config)
    manifest = out / MANIFEST
    files = TinyWeights(out / BASE_NAME, out / STATE_NAME, out / MISS_NAME, key, True)
    try:
        recorded = json.loads(manifest.read_text())
        if recorded["key"] == key and all(
            _file_record(p) == recorded["files"][p.name] for p in (files.base, files.state, files.miss)
        ):
            log(f"reusing the tiny weights in {out} (key {key[:12]}…)")
            return files
    except (OSError, ValueError, KeyError, TypeError):
        pass
    check_weights_dir(out)
    out.mkdir(parents=True, exist_ok=True)
    # the names about to be written, claimed before the first of them (and no longer reusable: no "files")
    mark = {"writer": WRITER, "writes": list(WRITTEN), "key": key}
    atomic_write_bytes(manifest, (json.dumps(mark, indent=2) + "\n").encode())
    t0 = time.perf_counter()
    with training_numerics():  # drawn here, in the caller: an fp64 default dtype drew other numbers (2026-12-01)
        tensors = demo_base_tensors(config)
    save_tensors(files.base, {k: v.to(torch.bfloat16) for k, v in tensors.items()})
    log(f"training the tiny State ({config.state_steps} steps) and MiSS ({config.miss_steps} steps) on the CPU…")
    jobs = [("state", str(files.base), str(files.state), config), ("miss", str(files.base), str(files.miss), config)]
    results = _run_parts_in_processes(jobs, key) if parallel else [_train_part(*job) for job in jobs]
    for lines in results:
        for line in lines:
            log(line)
    record = {
        **mark,
        "config": asdict(config),
        "seconds": round(time.perf_counter() - t0, 1),
        "files": {p.name: _file_record(p) for p in (files.base, files.state, files.miss)},
    }
    atomic_write_bytes(manifest, (json.dumps(record, indent=2) + "\n").encode())
    log(f"tiny weights trained in {time.perf_counter() - t0:.1f} s into {out}")
    return TinyWeights(files.base, files.state, files.miss, key, False)


def main(argv: list[str] | None = None) -> int:
    """``python -m rwkv_registry.model.smoke.train_tiny OUT_DIR`` (``--part`` is internal)."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) == 6 and args[0] == "--part":  # a worker of build_tiny_weights(parallel=True)
        raw = json.loads(args[4])
        fields = {k: tuple(v) if isinstance(v, list) else v for k, v in raw.items()}
        config = TrainConfig(**fields)  # type: ignore[arg-type]  # asdict(config) of the parent
        mine = cache_key(config)
        if mine != args[5]:
            print(
                f"this worker would not train the caller's bytes: its inputs have the key {mine[:12]}…, "
                f"the caller's {args[5][:12]}… (it runs {Path(__file__).resolve()}: "
                "other sources than the caller's, or another torch, CPU capability or vocabulary); "
                "train in one process (build_tiny_weights(parallel=False)) or run the code this worker imports",
                file=sys.stderr,
            )
            return 3
        for line in _train_part(args[1], args[2], args[3], config):
            print(line, flush=True)
        return 0
    if len(args) != 1:
        print("usage: python -m rwkv_registry.model.smoke.train_tiny OUT_DIR", file=sys.stderr)
        return 2
    from rwkv_registry.core.errors import RegistryError

    try:
        w = build_tiny_weights(args[0], log=print)
    except RegistryError as e:  # a folder holding files the demo did not write: refused, no traceback
        print(f"error: {e.message}" + (f"\nhint: {e.hint}" if e.hint else ""), file=sys.stderr)
        return e.exit_code
    print(f"base {w.base}\nstate {w.state}\nmiss {w.miss}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
