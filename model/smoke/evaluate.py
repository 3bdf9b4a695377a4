"""The smoke evaluation itself: check the base file, load base and entry, run both sides twice.

:func:`run_smoke` is what ``rwkv-registry smoke`` calls. Steps:

1. read ``index.json``; find the entry and its base record (unknown entry: :class:`UsageError`);
   without a case file, a toy base (:func:`~rwkv_registry.index.smoke_cases.is_toy_base`) gets
   the tiny case set, the others the built-in tool-calling set;
2. hash the base file (cached by stat key) and compare with the base record's sha256; a mismatch
   stops with both hashes named (exit 2), before anything is loaded; the entry file is checked
   against its own recorded sha256 too;
3. load the base (CUDA bf16 when available, else CPU fp32) and the entry (State as initial WKV
   state, MiSS merged into the weights); an entry that cannot be applied (wrong shapes, non-finite
   MiSS values, another base's fingerprint) is *broken*: :class:`BrokenEntryError` (exit 1);
4. run the cases with the entry's prompt profile, greedy, and then the base alone on the same
   cases; each side runs twice so that determinism is checked token for token;
5. score every case (:mod:`~rwkv_registry.model.smoke.scoring`) and compare the sides.
"""

from __future__ import annotations

import math
import platform
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

import torch

from rwkv_registry.catalog.entries import check_base_path, find_entry
from rwkv_registry.cli.main import MAX_THINK_TOKENS
from rwkv_registry.core.errors import RegistryError, UsageError, os_error_hint
from rwkv_registry.index.smoke_cases import TINY_CASES, Case, CaseSet, builtin_path, is_toy_base, load_cases
from rwkv_registry.model.errors import ModelError
from rwkv_registry.model.profiles import get_profile
from rwkv_registry.model.rwkv7 import RWKV7
from rwkv_registry.model.smoke.engine import Engine, Job, JobResult, RunStats
from rwkv_registry.model.smoke.hashcache import cached_sha256
from rwkv_registry.model.smoke.prompt import CALL_STOPS, STOP_TOKENS, THINK_STOPS, PromptBuilder, stop_bytes
from rwkv_registry.model.smoke.scoring import CallScore, call_prefix_ok, score_call
from rwkv_registry.model.state import StateWeights
from rwkv_registry.model.tokenizer import get_tokenizer


class BrokenEntryError(RegistryError):
    """The entry cannot be used on its base: the smoke verdict is *broken* (exit 1)."""

    exit_code = 1


@dataclass(frozen=True)
class Settings:
    """Knobs of a smoke run (documented in docs/smoke.md)."""

    max_call_tokens: int | None = None  # tokens allowed for one call; None: 2 x the longest expected + 16
    think_tokens: int = 256  # thinking budget of the g1k-think profile
    parse_failure_threshold: float = 0.2  # entry parse failures above this share: broken
    alpha: float = 0.05  # significance level of the McNemar test
    runs: int = 2  # each side runs this many times; all runs must give the same tokens
    stop_early: bool = True  # False: every call runs to its token budget (a timing's worst case)

    def __post_init__(self) -> None:
        if not 1 <= self.think_tokens <= MAX_THINK_TOKENS:  # as `smoke --think-tokens` refuses it
            raise ValueError(f"think_tokens {self.think_tokens}: give a number of tokens from 1 to {MAX_THINK_TOKENS}")
        if self.runs < 1:
            raise ValueError(f"runs {self.runs}: at least one run per side (two check determinism)")


class Progress(Protocol):
    """What a progress display offers the runner."""

    def phase(self, description: str, total: int) -> None:
        """Start a phase with ``total`` units of work."""

    def advance(self, n: int) -> None:
        """``n`` more units are done."""


class _NoProgress:
    def phase(self, description: str, total: int) -> None:
        pass

    def advance(self, n: int) -> None:
        pass


@dataclass
class SideRun:
    """One side (the entry, or the base alone) on every case."""

    label: str
    scores: list[CallScore]
    calls: list[JobResult]  # the call pass of the first run
    thinking: list[JobResult] | None  # the thinking pass of the first run (g1k-think)
    nll: list[float]  # summed NLL of each case's expected completion
    nll_tokens: list[int]
    deterministic: list[bool]  # all runs gave the same tokens (and losses) for this case
    finite: list[bool]  # every logits row of this case was finite, in every run
    stats: RunStats = field(default_factory=RunStats)

    @property
    def solved(self) -> int:
        """Cases answered correctly."""
        return sum(s.correct for s in self.scores)

    @property
    def mean_loss(self) -> float | None:
        """Mean per-token NLL of the expected completions (None when not finite)."""
        total = sum(self.nll_tokens)
        value = sum(self.nll) / total if total else None
        return value if value is not None and value == value and abs(value) != float("inf") else None


@dataclass
class Environment:
    """Where the run happened."""

    device: str  # "cpu" or "cuda"
    device_name: str  # e.g. "NVIDIA H200" or "cpu (x86_64)"
    dtype: str
    torch: str
    cuda: str | None


@dataclass
class SmokeResult:
    """Everything the report needs."""

    root: Path
    entry: dict[str, Any]
    base: dict[str, Any]
    base_file: Path
    base_sha256: str
    base_hash_cached: bool
    cases: CaseSet
    profile: str
    settings: Settings
    env: Environment
    entry_side: SideRun
    base_side: SideRun
    timing: dict[str, float]


def pick_device(name: str) -> tuple[str, torch.dtype]:
    """``auto``: CUDA (bf16) when available, else CPU (fp32). ``cuda`` without a GPU: UsageError."""
    if name not in ("auto", "cuda", "cpu"):
        raise UsageError(
            f"--device {name!r}: use auto, cuda or cpu",
            hint="Or drop --device: auto takes CUDA when there is a GPU, else the CPU.",
        )
    cuda = torch.cuda.is_available()
    if name == "cuda" and not cuda:
        raise UsageError("--device cuda: no CUDA device is available", hint="Use --device cpu (tiny models only).")
    if name == "cuda" or (name == "auto" and cuda):
        return "cuda", torch.bfloat16
    return "cpu", torch.float32


def fp32_bytes(base: dict[str, Any]) -> int:
    """About how many bytes the base takes in fp32 (the CPU's dtype), from its recorded architecture.

    Per layer the four C×C projections of time mixing and the two C×F matrices of the channel mix (F = 4C when
    not recorded), plus the embedding and the head (V×C each); LoRAs and vectors are left out (under 1 %).
    """
    arch = base.get("architecture") or {}
    try:
        c, layers, vocab = int(arch["n_embd"]), int(arch["n_layer"]), int(arch["vocab_size"])
        ffn = int(arch.get("ffn_size") or 4 * c)
    except (KeyError, TypeError, ValueError):
        return 0
    return 4 * (layers * (4 * c * c + 2 * c * ffn) + 2 * vocab * c)


def physical_memory() -> int:
    """The machine's RAM in bytes (0 when the platform does not say)."""
    import os

    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, ValueError, OSError):
        return 0


def check_cpu_memory(base: dict[str, Any], device: str) -> None:
    """Refuse (exit 2, before the base is hashed) a CPU run whose fp32 copy of the base cannot fit in RAM:
    it would be killed by the kernel half-way, with no message, after hashing the whole base file."""
    need, have = fp32_bytes(base), physical_memory()
    if device == "cpu" and have and need > have:
        raise UsageError(
            f"base {base['name']!r} needs about {need / 2**30:.1f} GiB in fp32 on the CPU, and this machine has "
            f"{have / 2**30:.1f} GiB of memory{'' if torch.cuda.is_available() else ' (and no CUDA device)'}",
            hint="Run the smoke evaluation on a machine with a CUDA GPU (the base is loaded in bf16 there); "
            "on the CPU it is meant for tiny models.",
        )


CPU_NOTE_MINUTES = 5.0  # a CPU run estimated longer than this gets a note before it starts
SLOW_CPU_FLOPS = 2e9  # a run under CPU_NOTE_MINUTES even at this rate (FLOP/s) is not estimated (tiny models)


def flops_per_token(base: dict[str, Any]) -> int:
    """About how many FLOP one token costs the base (2 per weight of the matrices it is multiplied by: the
    projections of every layer and the head; the embedding is a lookup), from :func:`fp32_bytes`; 0 when
    the architecture is not recorded."""
    arch = base.get("architecture") or {}
    try:
        head = int(arch["vocab_size"]) * int(arch["n_embd"])
    except (KeyError, TypeError, ValueError):
        return 0
    return 2 * (fp32_bytes(base) // 4 - head)


def smoke_tokens(builder: PromptBuilder, cases: CaseSet, settings: Settings) -> int:
    """An upper bound of the tokens a smoke run feeds the model: for each side and run, every shared System
    turn once, and per case its suffix for the call and again for the loss rows, the call's whole token
    budget, the expected completion, and with a thinking profile the thinking pass and its text (at most
    ``think_tokens``) in both later prompts."""
    budget = call_budget(builder, cases, settings)
    prefixes: set[tuple[int, ...]] = set()
    per_run = 0
    for case in cases.cases:
        call = builder.call_prompt(case)
        prefixes.add(call.prefix)
        per_run += 2 * len(call.suffix) + budget + len(builder.completion_ids(case))
        if builder.thinks:
            think = builder.think_prompt(case)
            prefixes.add(think.prefix)
            per_run += len(think.suffix) + 3 * settings.think_tokens
    per_run += sum(len(p) for p in prefixes)
    return 2 * settings.runs * per_run


def cpu_matmul_flops() -> float:
    """This CPU's fp32 matmul rate (FLOP/s) with torch's current threads: the best of three 256×1024 by
    1024×1024 products, after one to warm up (0.5 GFLOP each: 0.2 s on the loaded 2-core test machine).
    An upper bound of what the model's passes reach (they also run element-wise ops and smaller matrices)."""
    g = torch.Generator().manual_seed(0)
    a = torch.randn(256, 1024, generator=g)
    b = torch.randn(1024, 1024, generator=g)
    best = float("inf")
    for i in range(4):
        t0 = time.perf_counter()
        torch.mm(a, b)
        if i:
            best = min(best, time.perf_counter() - t0)
    return 2 * 256 * 1024 * 1024 / max(best, 1e-9)


def _minutes(seconds: float) -> str:
    minutes = round(seconds / 60)
    return f"{minutes // 60} h {minutes % 60:02d} min" if minutes >= 60 else f"{max(minutes, 1)} min"


def check_cpu_time(
    base: dict[str, Any],
    builder: PromptBuilder,
    cases: CaseSet,
    settings: Settings,
    max_minutes: float | None = None,
) -> str | None:
    """Estimate a CPU run's time before it starts: a note to print when it exceeds :data:`CPU_NOTE_MINUTES`
    (else None), or :class:`UsageError` (exit 2, before the base is hashed) when it exceeds ``max_minutes``.

    The estimate is ``flops_per_token × smoke_tokens`` at this CPU's measured matmul rate
    (:func:`cpu_matmul_flops`): a lower bound of the time, since the passes run slower than a large matmul.
    A run that would end within the note's limit even at :data:`SLOW_CPU_FLOPS` is not measured.
    """
    if max_minutes is not None and not max_minutes > 0:
        raise UsageError(
            f"--max-cpu-minutes {max_minutes:g}: not a positive number of minutes",
            hint="Give --max-cpu-minutes a number above 0 (e.g. 30), or leave it out to run without a limit.",
        )
    tokens = smoke_tokens(builder, cases, settings)
    flops = flops_per_token(base) * tokens
    limit = min(CPU_NOTE_MINUTES, max_minutes or CPU_NOTE_MINUTES)
    if flops <= SLOW_CPU_FLOPS * 60 * limit:
        return None
    rate = cpu_matmul_flops()
    seconds = flops / rate
    how = (
        f"{tokens:,} tokens through base {base['name']!r} at "
        f"{flops_per_token(base) / 1e9:.1f} GFLOP each, at this CPU's measured fp32 matmul rate of "
        f"{rate / 1e9:.0f} GFLOP/s"
    )
    if max_minutes is not None and seconds > 60 * max_minutes:
        raise UsageError(
            f"smoke on the CPU would take at least about {_minutes(seconds)} ({how}): over --max-cpu-minutes "
            f"{max_minutes:g}",
            hint="Run it on a machine with a CUDA GPU (--device auto uses it), or raise --max-cpu-minutes.",
        )
    if seconds <= 60 * CPU_NOTE_MINUTES:
        return None
    return (
        f"on the CPU this smoke run takes at least about {_minutes(seconds)} ({how}). Ctrl-C stops it (nothing is "
        "written before it ends); a machine with a CUDA GPU is the place for a base of this size (--device auto "
        "uses it); --max-cpu-minutes N refuses a run estimated longer than N minutes."
    )


def environment(device: str, dtype: torch.dtype) -> Environment:
    """The device name and the torch/CUDA versions recorded with a result."""
    if device == "cuda":
        name = torch.cuda.get_device_name(torch.cuda.current_device())
    else:
        name = f"cpu ({platform.machine() or 'unknown'})"
    return Environment(device, name, str(dtype).replace("torch.", ""), torch.__version__, torch.version.cuda)


def check_base_file(
    base_file: Path, base: dict[str, Any], entry_id: str, progress: Callable[[int], None] | None = None
) -> tuple[str, bool]:
    """sha256 of ``base_file`` (cached) checked against the base record; UsageError on a mismatch."""
    check_base_path(base_file, base)
    try:
        digest, cached = cached_sha256(base_file, progress=progress)
    except OSError as e:
        raise UsageError(
            f"{base_file}: cannot read the base file ({e.strerror or e})",
            hint=os_error_hint(e, base_file),
            path=str(base_file),
        ) from None
    if digest != base["sha256"]:
        raise UsageError(
            f"{base_file} is not the base of entry {entry_id!r}: its sha256 is {digest}, but base "
            f"{base['name']!r} is recorded with sha256 {base['sha256']}",
            hint="Weights are valid only on the exact base file they were trained on (a MiSS adapter is refused "
            "on any other); give that file to --base-file.",
        )
    return digest, cached


def check_entry_file(root: Path, entry: dict[str, Any]) -> Path:
    """The entry's weight file, checked against its recorded sha256 (cached hash)."""
    path = root / entry["path"]
    if not path.is_file():
        raise UsageError(
            f"{path}: the file of entry {entry['id']!r} is missing",
            hint="Fetch the registry's weights (git lfs pull, or rwkv-registry pull).",
        )
    try:
        digest, _ = cached_sha256(path)
    except OSError as e:
        raise UsageError(
            f"{path}: cannot read the entry file ({e.strerror or e})", hint=os_error_hint(e, path), path=str(path)
        ) from None
    want = entry["file"]["sha256"]
    if digest != want:
        raise UsageError(
            f"{path}: sha256 {digest} differs from index.json's {want} for entry {entry['id']!r}",
            hint="The file changed since it was registered; `rwkv-registry validate` shows the problem.",
        )
    return path


def load_entry(model: RWKV7, entry: dict[str, Any], path: Path) -> StateWeights | None:
    """Apply the entry to ``model``: a State is returned (initial state), a MiSS is merged."""
    from rwkv_registry.model.miss import load_miss
    from rwkv_registry.model.state import load_state_weights

    try:
        if entry["method"] == "state":
            # a NaN State is run, not refused: the report then shows its non-finite logits (exit 1)
            weights = load_state_weights(path, check_finite=False)
            model.new_state(1, weights)  # checks the shapes against the base
            return weights
        model.apply_miss(load_miss(path), mode="merge")
        return None
    except ModelError as e:
        hint = e.hint or "Retrain or re-export the weights for this base."
        if "force=True" in hint:  # the model API's override; smoke has none (a mismatch is the finding)
            hint = "Use the weights trained on this base file, or register them under the base they were trained on."
        raise BrokenEntryError(
            f"entry {entry['id']!r} cannot be used on its base: {e.message}", hint=hint, path=str(path)
        ) from None


def run_side(
    label: str,
    model: RWKV7,
    builder: PromptBuilder,
    cases: CaseSet,
    settings: Settings,
    time_state: StateWeights | None,
    progress: Progress,
) -> SideRun:
    """Run one side ``settings.runs`` times on every case and score the first run."""
    engine = Engine(model, builder.tok, time_state=time_state)
    stats = RunStats()
    runs: list[tuple[list[JobResult] | None, list[JobResult], list[JobResult]]] = []
    n = len(cases.cases)
    for run in range(settings.runs):
        suffix = f" (run {run + 1}/{settings.runs})" if settings.runs > 1 else ""
        thinking = None
        if builder.thinks:
            progress.phase(f"{label}: thinking{suffix}", n)
            jobs = [_think_job(builder, c, settings) for c in cases.cases]
            thinking, st = engine.run(jobs, progress.advance)
            stats.add(st)
        progress.phase(f"{label}: calls{suffix}", 2 * n)
        jobs = []
        for i, c in enumerate(cases.cases):
            p = builder.call_prompt(c, thinking[i].text if thinking else None)
            jobs.append(
                Job(
                    p.prefix,
                    p.suffix,
                    max_new=call_budget(builder, cases, settings),
                    stops=stop_bytes(CALL_STOPS) if settings.stop_early else (),
                    stop_tokens=STOP_TOKENS if settings.stop_early else (),
                    prefix_check=call_prefix_ok if settings.stop_early else None,
                )
            )
        for i, c in enumerate(cases.cases):
            p = builder.call_prompt(c, thinking[i].text if thinking else None)
            jobs.append(Job(p.prefix, p.suffix, targets=builder.completion_ids(c)))
        results, st = engine.run(jobs, progress.advance)
        stats.add(st)
        runs.append((thinking, results[:n], results[n:]))
    first_think, first_calls, first_loss = runs[0]
    deterministic = []
    finite = []
    for i in range(n):
        same = all(_same(runs[0], r, i) for r in runs[1:])
        deterministic.append(same)
        ok = True
        for think, calls, loss in runs:
            ok = ok and calls[i].finite and loss[i].finite and (think is None or think[i].finite)
        finite.append(ok)
    scores = [score_call(c, first_calls[i].text) for i, c in enumerate(cases.cases)]
    return SideRun(
        label=label,
        scores=scores,
        calls=first_calls,
        thinking=first_think,
        nll=[r.nll for r in first_loss],
        nll_tokens=[len(builder.completion_ids(c)) for c in cases.cases],
        deterministic=deterministic,
        finite=finite,
        stats=stats,
    )


def call_budget(builder: PromptBuilder, cases: CaseSet, settings: Settings) -> int:
    """Tokens allowed for one call: the setting, or twice the longest expected completion + 16."""
    if settings.max_call_tokens is not None:
        return settings.max_call_tokens
    return 2 * max(len(builder.completion_ids(c)) for c in cases.cases) + 16


def _think_job(builder: PromptBuilder, case: Case, settings: Settings) -> Job:
    p = builder.think_prompt(case)
    return Job(
        p.prefix, p.suffix, max_new=settings.think_tokens, stops=stop_bytes(THINK_STOPS), stop_tokens=STOP_TOKENS
    )


def _same(a: tuple[Any, ...], b: tuple[Any, ...], i: int) -> bool:
    think_a, calls_a, loss_a = a
    think_b, calls_b, loss_b = b
    if (think_a is None) != (think_b is None):
        return False
    if think_a is not None and think_a[i].tokens != think_b[i].tokens:
        return False
    return calls_a[i].tokens == calls_b[i].tokens and _same_floats(loss_a[i].nll_terms, loss_b[i].nll_terms)


def _same_floats(a: Sequence[float], b: Sequence[float]) -> bool:
    """Equal, NaN equal to NaN: a NaN loss twice is deterministic (it is reported as non-finite)."""
    return len(a) == len(b) and all(x == y or (math.isnan(x) and math.isnan(y)) for x, y in zip(a, b, strict=True))


def run_smoke(
    root: str | Path,
    entry_id: str,
    base_file: str | Path,
    *,
    device: str = "auto",
    cases_path: str | Path | None = None,
    settings: Settings | None = None,
    progress: Progress | None = None,
    max_cpu_minutes: float | None = None,
    note: Callable[[str], None] | None = None,
) -> SmokeResult:
    """Evaluate ``entry_id`` of the registry at ``root`` on ``base_file`` (see the module docstring).

    On the CPU the run's time is estimated first (:func:`check_cpu_time`): beyond a few minutes ``note``
    gets a note; beyond ``max_cpu_minutes`` the run is refused (UsageError) before the base is hashed."""
    t_start = time.perf_counter()
    settings = settings or Settings()
    prog: Progress = progress or _NoProgress()
    root = Path(root)
    base_path = Path(base_file)
    entry, base = find_entry(root, entry_id)
    if cases_path is None and is_toy_base(base):  # the default cases need a released RWKV-7
        cases_path = builtin_path(TINY_CASES)
    cases = load_cases(cases_path)
    dev, dtype = pick_device(device)
    check_cpu_memory(base, dev)
    profile = get_profile(entry["profile"])
    builder = PromptBuilder(profile, get_tokenizer())
    if dev == "cpu":
        message = check_cpu_time(base, builder, cases, settings, max_cpu_minutes)
        if message is not None and note is not None:
            note(message)
    size = base_path.stat().st_size if base_path.is_file() else 0
    prog.phase("checking the base file's sha256", max(size, 1))
    t0 = time.perf_counter()
    digest, cached = check_base_file(base_path, base, entry_id, prog.advance)
    entry_path = check_entry_file(root, entry)
    t_hash = time.perf_counter() - t0
    settings = replace(settings, max_call_tokens=call_budget(builder, cases, settings))
    prog.phase("loading the base", 1)
    t0 = time.perf_counter()
    model = RWKV7.from_pth(base_path, device=dev, dtype=dtype, fingerprint=digest)
    time_state = load_entry(model, entry, entry_path)
    prog.advance(1)
    t_load = time.perf_counter() - t0
    t0 = time.perf_counter()
    entry_side = run_side("entry", model, builder, cases, settings, time_state, prog)
    model.remove_miss()  # the base alone: original weights, bit for bit
    base_side = run_side("base", model, builder, cases, settings, None, prog)
    t_eval = time.perf_counter() - t0
    return SmokeResult(
        root=root,
        entry=entry,
        base=base,
        base_file=base_path,
        base_sha256=digest,
        base_hash_cached=cached,
        cases=cases,
        profile=profile.name,
        settings=settings,
        env=environment(dev, dtype),
        entry_side=entry_side,
        base_side=base_side,
        timing={"hash_s": t_hash, "load_s": t_load, "eval_s": t_eval, "wall_s": time.perf_counter() - t_start},
    )
