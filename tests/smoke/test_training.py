"""Tests from a mutation audit of the demo's training path: ``casegen`` (the shipped case files),
``chunked`` (the WKV-7 used while training) and ``train_tiny`` (the tiny State and MiSS). Each test
fails on at least one hand-made mutant, most of them mutants the rest of the suite let live: a case
file written into a missing folder or under the wrong name, the chunked WKV with another chunk size
or without ``state_out``, a cache key blind to a source file, a training batch scoring the wrong
position, a MiSS trained with another scale than inference applies, cached weights reused when a
file is missing, ..."""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import shutil
from dataclasses import asdict, replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import torch
from wkv_inputs import wkv_inputs

from rwkv_registry.checks.miss import tensor_name
from rwkv_registry.core.errors import UsageError
from rwkv_registry.index.smoke_cases import DEFAULT_CASES, TINY_CASES, builtin_path, load_cases
from rwkv_registry.kernels.wkv7 import wkv7_naive
from rwkv_registry.model import RWKV7, get_profile, get_tokenizer
from rwkv_registry.model.miss import TARGET_MODULES, MissAdapter, load_miss
from rwkv_registry.model.smoke import casegen, train_tiny
from rwkv_registry.model.smoke.chunked import wkv7_chunked
from rwkv_registry.model.smoke.prompt import ANSWER_PREFIX, THINK_CLOSE, PromptBuilder
from rwkv_registry.model.smoke.train_tiny import (
    TrainConfig,
    build_tiny_weights,
    cache_key,
    demo_base_tensors,
    train_miss,
    train_state,
    training_batch,
)
from rwkv_registry.model.tiny import miss_in_out, save_tensors, tiny_base_tensors, tiny_config

# ---------------------------------------------------------------------------------- casegen


def test_write_case_files_creates_the_folder_and_writes_both_shipped_files(tmp_path):
    folder = tmp_path / "not" / "yet"
    paths = casegen.write_case_files(folder)
    assert [p.name for p in paths] == [DEFAULT_CASES, TINY_CASES]
    for p in paths:
        assert p.parent == folder
        assert p.read_bytes() == builtin_path(p.name).read_bytes()
    again = casegen.write_case_files(folder)  # an existing folder is fine: the same files again
    assert again == paths and all(p.read_bytes() == builtin_path(p.name).read_bytes() for p in again)


# ---------------------------------------------------------------------------------- chunked WKV


def _close(x: torch.Tensor, ref: torch.Tensor, tol: float) -> bool:
    return float((x.double() - ref.double()).abs().max() / ref.double().std()) < tol


@pytest.mark.parametrize(("chunk", "T"), [(1, 5), (4, 11), (7, 21), (8, 16)], ids=str)
def test_chunked_wkv_equals_the_reference_for_any_chunk_size(chunk, T):
    leaves = wkv_inputs(2, T, 2, seed=chunk * 10 + T)
    y1, s1 = wkv7_naive(*leaves)
    y2, s2 = wkv7_chunked(*leaves, chunk=chunk)
    assert y2.shape == y1.shape and s2.shape == s1.shape
    assert _close(y2, y1, 1e-5) and _close(s2, s1, 1e-5)


def test_chunked_wkv_takes_bf16_inputs_and_answers_in_fp32():
    leaves = wkv_inputs(1, 19, 2, seed=3, dtype=torch.bfloat16)
    y1, s1 = wkv7_naive(*(t.double() for t in leaves))  # the same (rounded) inputs, in fp64
    y2, s2 = wkv7_chunked(*leaves)
    assert y2.dtype == torch.float32 and s2.dtype == torch.float32
    assert _close(y2, y1, 1e-4) and _close(s2, s1, 1e-4)


def test_chunked_wkv_writes_the_final_state_into_state_out():
    leaves = wkv_inputs(2, 20, 1, seed=9, dtype=torch.float32)
    state = leaves[-1]
    before = state.clone()
    out = torch.full_like(state, float("nan"))
    y, s = wkv7_chunked(*leaves, state_out=out)
    y_ref, s_ref = wkv7_naive(*(t.double() for t in leaves))
    assert s is out  # the model's in-place calls keep using the tensor they passed
    assert _close(out, s_ref, 1e-5) and _close(y, y_ref, 1e-5)
    assert torch.equal(state, before)  # the incoming state is left alone
    y_same, s_same = wkv7_chunked(*leaves)
    assert torch.equal(y_same, y) and torch.equal(s_same, out)


# ---------------------------------------------------------------------------------- train_tiny


def test_cache_key_follows_the_case_file_and_the_torch_release_not_its_build_tag(tmp_path, monkeypatch):
    config = TrainConfig()
    key = cache_key(config)
    assert cache_key(config, builtin_path(TINY_CASES)) == key
    edited = tmp_path / "cases.jsonl"
    edited.write_bytes(builtin_path(TINY_CASES).read_bytes() + b"\n")
    assert cache_key(config, edited) != key
    release = torch.__version__.split("+")[0]
    monkeypatch.setattr(torch, "__version__", release + "+cu999")
    assert cache_key(config) == key  # a CPU or CUDA build of one release trains the same bytes
    monkeypatch.setattr(torch, "__version__", "1.0.0")
    assert cache_key(config) != key


def test_cache_key_follows_the_model_and_smoke_sources_not_their_location(tmp_path, monkeypatch):
    import rwkv_registry
    import rwkv_registry.kernels

    model_dir = Path(train_tiny.__file__).resolve().parents[1]
    kernels_dir = Path(rwkv_registry.kernels.__file__).resolve().parent
    registry_dir = Path(rwkv_registry.__file__).resolve().parent
    copy = tmp_path / "model"
    shutil.copytree(model_dir, copy, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(kernels_dir, tmp_path / "kernels", ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "registry").mkdir()
    for name in train_tiny.REGISTRY_SOURCES:
        (tmp_path / "registry" / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(registry_dir / name, tmp_path / "registry" / name)
    config = TrainConfig()
    key = cache_key(config)
    monkeypatch.setattr(train_tiny, "__file__", str(copy / "smoke" / "train_tiny.py"))
    monkeypatch.setattr(rwkv_registry.kernels, "__file__", str(tmp_path / "kernels" / "__init__.py"))
    monkeypatch.setattr(rwkv_registry, "__file__", str(tmp_path / "registry" / "__init__.py"))
    assert cache_key(config) == key
    edits = (
        copy / "rwkv7.py",
        copy / "smoke" / "prompt.py",
        tmp_path / "kernels" / "timemix" / "reference.py",  # the element-wise ops the training runs
        tmp_path / "kernels" / "lora" / "reference.py",
        tmp_path / "registry" / "formats" / "pthwrite.py",  # writes the MiSS file
        tmp_path / "registry" / "index" / "smoke_cases.py",  # reads the case file
    )
    for edited in edits:
        original = edited.read_bytes()
        edited.write_bytes(original + b"\n# edited\n")
        assert cache_key(config) != key, edited
        edited.write_bytes(original)
    assert cache_key(config) == key


def test_cache_key_follows_the_vocabulary_and_the_cpu_kernels_torch_dispatches_to(tmp_path, monkeypatch):
    """ATEN_CPU_CAPABILITY=avx2 on an AVX512 machine, or MKL_CBWR=COMPATIBLE, trains other bytes; so
    would another vocabulary."""
    monkeypatch.delenv("MKL_CBWR", raising=False)
    import rwkv_registry.model.tokenizer as tokenizer

    config = TrainConfig()
    key = cache_key(config)
    capability = torch.backends.cpu.get_cpu_capability()
    monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda: capability + "-other")
    assert cache_key(config) != key
    monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda: capability)
    assert cache_key(config) == key
    monkeypatch.setenv("MKL_CBWR", "COMPATIBLE")  # MKL's other code path: other bytes
    assert cache_key(config) != key
    monkeypatch.delenv("MKL_CBWR")
    assert cache_key(config) == key
    vocab = tmp_path / "vocab.txt"
    vocab.write_bytes(tokenizer.default_vocab_path().read_bytes() + b"\n")
    monkeypatch.setattr(tokenizer, "default_vocab_path", lambda: vocab)
    assert cache_key(config) != key


def test_demo_base_has_the_decays_the_docstring_describes():
    config = TrainConfig()
    tensors = demo_base_tensors(config)
    plain = tiny_base_tensors(tiny_config(n_layer=config.n_layer, n_embd=config.n_embd), seed=config.seed)
    assert tensors.keys() == plain.keys()
    changed = set()
    for i in range(config.n_layer):
        for head in tensors[f"blocks.{i}.att.w0"].reshape(-1, 64):
            assert torch.all(head[0::2] == config.w0_slow)  # every other channel slow
            fast = head[1::2]
            assert float(fast[0]) == config.w0_fast[0] and float(fast[-1]) == config.w0_fast[1]
            assert torch.all(fast.diff() < 0)  # spread from fast (0) to slower (-4)
        a0 = f"blocks.{i}.att.a0"
        assert torch.allclose(tensors[a0], plain[a0] + config.a0_shift)
        changed |= {f"blocks.{i}.att.w0", a0}
    assert all(torch.equal(tensors[k], plain[k]) for k in plain.keys() - changed)


@pytest.mark.parametrize("profile", ["g1k", "g1k-think"])
def test_training_batch_teacher_forces_each_case_s_expected_answer(profile):
    tok = get_tokenizer()
    builder = PromptBuilder(get_profile(profile), tok)
    cases = list(load_cases(builtin_path(TINY_CASES)).cases)
    batch = training_batch(builder, cases)
    # thinking: the prompt ends "Assistant: <think" (prompt.go e3ed3d4), so the thought the MiSS learns is the
    # withheld ">" closed at once, as the evaluation's call prompt with that thinking continues it
    lead = tok.encode(">" + THINK_CLOSE + ANSWER_PREFIX) if builder.thinks else []
    assert batch.tokens.shape[0] == len(cases)
    for i, case in enumerate(cases):
        prompt = builder.think_prompt(case) if builder.thinks else builder.call_prompt(case)
        if builder.thinks:
            call = builder.call_prompt(case, ">").suffix
            assert list(call) == list(prompt.suffix) + lead
        assert batch.prefix == list(prompt.prefix)
        want = list(lead) + list(builder.completion_ids(case))
        mine = batch.rows == i
        cols, targets = batch.cols[mine], batch.targets[mine]
        assert targets.tolist() == want  # the whole answer (and, thinking, what closes the thought)
        n = len(prompt.suffix)
        assert batch.tokens[i, :n].tolist() == list(prompt.suffix)
        assert cols.tolist() == list(range(n - 1, n - 1 + len(want)))  # logits at j - 1 predict token j
        assert batch.tokens[i, cols + 1].tolist() == want
        assert not batch.tokens[i, n + len(want) :].any()  # right-padded with 0


def test_training_batch_refuses_cases_with_different_system_turns():
    builder = PromptBuilder(get_profile("g1k"), get_tokenizer())
    tiny = load_cases(builtin_path(TINY_CASES)).cases[0]
    desk = load_cases().cases[0]
    with pytest.raises(ValueError, match="one System turn"):
        training_batch(builder, [tiny, desk])


def _forward(model: RWKV7, tokens: torch.Tensor) -> torch.Tensor:
    with torch.no_grad():
        return model(tokens, full_output=True)[0]


def test_a_trained_miss_means_at_inference_what_it_meant_in_training(monkeypatch):
    """train_miss's own forward (W + scale * D[:, k % r]) and the model's MiSS agree on the D it returns,
    and the model gets its own linear maps back."""
    config = replace(TrainConfig(), miss_rank=4, miss_alpha=12.0)
    cfg = tiny_config(n_layer=2, n_embd=128, vocab=512)
    model = RWKV7.from_state_dict(tiny_base_tensors(cfg, seed=1))
    tokens = torch.tensor([[5, 17, 300, 2, 99, 401]])
    plain = _forward(model, tokens)
    seen: dict[str, torch.Tensor] = {}

    def fake_fit(model_, batch, params, hidden, *args, **kwargs) -> float:
        assert params and not any(p.any() for p in params)  # trained from zero
        g = torch.Generator().manual_seed(0)
        with torch.no_grad():
            for p in params:
                p.copy_(torch.randn(p.shape, generator=g) * 0.02)
        seen["logits"] = _forward(model_, tokens)
        return 0.0

    monkeypatch.setattr(train_tiny, "_fit", fake_fit)
    d = train_miss(model, None, config, lambda m: None)  # type: ignore[arg-type]  # fake_fit ignores the batch
    assert len(d) == cfg.n_layer * len(TARGET_MODULES)
    assert not torch.allclose(seen["logits"], plain, atol=1e-3)  # the D changed what the model computes
    assert torch.equal(_forward(model, tokens), plain)  # the base is back, unadapted
    in_features = {name: miss_in_out(cfg, name.split(".", 2)[2][: -len(".D")])[0] for name in d}
    adapter = MissAdapter.from_tensors(d, in_features, rank=config.miss_rank, alpha=config.miss_alpha)
    model.apply_miss(adapter, "fly", force=True)
    assert torch.allclose(_forward(model, tokens), seen["logits"], atol=1e-4, rtol=1e-4)


def test_the_state_starts_from_zero_and_learns_through_the_system_turn(monkeypatch):
    """The State's loss reaches it through the shared System prefix (the prefix runs with gradient)."""
    config = TrainConfig()
    model = RWKV7.from_state_dict(demo_base_tensors(config))
    cases = list(load_cases(builtin_path(TINY_CASES)).cases)
    batch = training_batch(PromptBuilder(get_profile("g1k"), get_tokenizer()), cases)
    seen: dict[str, list[torch.Tensor]] = {}

    def fake_fit(model_, batch_, params, hidden, *args, **kwargs) -> float:
        seen["start"] = [p.detach().clone() for p in params]
        hidden().square().sum().backward()
        seen["grad"] = [p.grad for p in params]
        return 0.0

    monkeypatch.setattr(train_tiny, "_fit", fake_fit)
    s0 = train_state(model, batch, config, lambda m: None)
    cfg = model.config
    assert s0.shape == (cfg.n_layer, cfg.n_head, cfg.head_size, cfg.head_size)
    assert not any(t.any() for t in seen["start"])
    [grad] = seen["grad"]
    assert grad is not None and all(grad[i].abs().sum() > 0 for i in range(cfg.n_layer))


def test_written_miss_holds_the_trained_tensors_in_bf16(tmp_path):
    config = replace(TrainConfig(), miss_rank=4, miss_alpha=12.0)
    cfg = tiny_config(n_layer=1, n_embd=128, vocab=512)
    base = save_tensors(tmp_path / "base.pth", tiny_base_tensors(cfg))
    g = torch.Generator().manual_seed(4)
    d = {tensor_name(0, t): torch.randn(miss_in_out(cfg, t)[1], config.miss_rank, generator=g) for t in TARGET_MODULES}
    train_tiny._write_miss(tmp_path / "m.pth", d, base, config, cfg)
    adapter = load_miss(tmp_path / "m.pth")
    assert adapter.rank == config.miss_rank and adapter.alpha == config.miss_alpha
    assert adapter.base_fingerprint == hashlib.sha256(base.read_bytes()).hexdigest()
    got = {t.name: t for t in adapter.targets}
    assert got.keys() == d.keys()
    for name, D in d.items():
        assert got[name].D.dtype == torch.bfloat16 and torch.equal(got[name].D, D.to(torch.bfloat16))
        assert got[name].in_features == miss_in_out(cfg, got[name].target)[0]


@pytest.fixture
def fake_training(monkeypatch):
    """build_tiny_weights with a training step that only writes its file (or fails when told)."""
    calls: list[str] = []
    fail: list[bool] = [False]

    def fake_part(part: str, base: str, out: str, config: TrainConfig) -> list[str]:
        if fail[0]:
            raise RuntimeError("training broke")
        calls.append(part)
        Path(out).write_bytes(part.encode())
        return [f"{part} trained"]

    monkeypatch.setattr(train_tiny, "_train_part", fake_part)
    return calls, fail


def test_cached_weights_are_reused_only_when_complete_and_recorded(tmp_path, fake_training):
    calls, fail = fake_training
    config = replace(TrainConfig(), n_embd=64)
    out = tmp_path / "w"
    first = build_tiny_weights(out, config=config, parallel=False)
    assert not first.reused and calls == ["state", "miss"]
    base = torch.load(first.base, weights_only=True)
    assert base.keys() == demo_base_tensors(config).keys()
    assert {t.dtype for t in base.values()} == {torch.bfloat16}  # a G1-format base file, as released
    assert build_tiny_weights(out, config=config, parallel=False).reused
    first.state.unlink()  # a file gone: train again
    again = build_tiny_weights(out, config=config, parallel=False)
    assert not again.reused and again.state.is_file()
    good = (out / "manifest.json").read_text()
    for manifest in ("{", "[1]", '{"key": 1}', "{}"):  # not the demo's manifest: refused, nothing touched
        (out / "manifest.json").write_text(manifest)
        with pytest.raises(UsageError, match=r"manifest\.json.* is not the demo's"):
            build_tiny_weights(out, config=config, parallel=False)
        assert (out / "manifest.json").read_text() == manifest
    (out / "manifest.json").write_text(good)
    assert calls == ["state", "miss"] * 2
    fail[0] = True
    first.miss.unlink()
    with pytest.raises(RuntimeError, match="training broke"):
        build_tiny_weights(out, config=config, parallel=False)
    left = json.loads((out / "manifest.json").read_text())
    assert "files" not in left  # a failed run leaves nothing that looks reusable, but claims what it wrote
    fail[0] = False
    assert not build_tiny_weights(out, config=config, parallel=False).reused


def test_a_truncated_or_changed_cached_file_is_trained_again(tmp_path, fake_training):
    """The manifest records each file's size and sha256: a file cut short (a writer killed mid-write before the
    writes were atomic, a full disk) or changed is not trusted, and the set is trained again."""
    calls, _ = fake_training
    config = replace(TrainConfig(), n_embd=64)
    out = tmp_path / "w"
    first = build_tiny_weights(out, config=config, parallel=False)
    whole = first.base.read_bytes()
    first.base.write_bytes(whole[: len(whole) // 2])  # truncated
    again = build_tiny_weights(out, config=config, parallel=False)
    assert not again.reused and again.base.read_bytes() == whole
    assert build_tiny_weights(out, config=config, parallel=False).reused
    first.state.write_bytes(b"st8te")  # same size, other bytes
    assert not build_tiny_weights(out, config=config, parallel=False).reused
    assert calls == ["state", "miss"] * 3
    recorded = json.loads((out / "manifest.json").read_text())["files"]
    assert recorded[first.miss.name] == {"size": 4, "sha256": hashlib.sha256(b"miss").hexdigest()}


def test_save_tensors_replaces_a_file_atomically(tmp_path, monkeypatch):
    """A write that fails before its rename (here: fsync) leaves the old file whole and no temporary file."""
    from rwkv_registry.core.errors import RegistryIOError

    path = save_tensors(tmp_path / "s.pth", {"a": torch.zeros(3)})
    old = path.read_bytes()

    def broken_fsync(fd: int) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "fsync", broken_fsync)
    with pytest.raises(RegistryIOError, match=r"s\.pth"):
        save_tensors(path, {"a": torch.ones(1000)})
    assert path.read_bytes() == old and sorted(p.name for p in tmp_path.iterdir()) == ["s.pth"]


def test_weights_of_another_key_are_trained_again_in_place(tmp_path, fake_training, monkeypatch):
    calls, _ = fake_training
    config = replace(TrainConfig(), n_embd=64)
    out = tmp_path / "w"
    first = build_tiny_weights(out, config=config, parallel=False)
    assert build_tiny_weights(out, config=config, parallel=False).reused
    # the folder moved to another CPU: a capability this one does not have (a fixed "AVX2" was this CPU's own on an
    # AVX2 machine, and the key did not change)
    other = "AVX512" if torch.backends.cpu.get_cpu_capability() == "AVX2" else "AVX2"
    monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda: other)
    again = build_tiny_weights(out, config=config, parallel=False)
    assert not again.reused and again.key != first.key and again.key == cache_key(config)
    assert json.loads((out / "manifest.json").read_text())["key"] == again.key
    assert build_tiny_weights(out, config=config, parallel=False).reused
    assert calls == ["state", "miss"] * 2


def test_a_failing_worker_is_reported_naming_its_part(tmp_path):
    job = ("miss", str(tmp_path / "no-base.pth"), str(tmp_path / "out.pth"), TrainConfig())
    with pytest.raises(RuntimeError, match=r"training the tiny weights failed \(miss\)"):
        train_tiny._run_parts_in_processes([job])
    assert not (tmp_path / "out.pth").exists()


def test_a_worker_that_runs_other_code_than_the_caller_refuses_to_train(tmp_path, monkeypatch):
    """The caller imported another copy of the training code than the one a fresh process finds (a
    mutation tool's copy first on ``sys.path``): its workers would train the installed code's bytes,
    not the caller's, and the cache would file them under the caller's key."""
    config = replace(TrainConfig(), n_layer=1, n_embd=64, state_steps=1, miss_steps=1)
    base = save_tensors(tmp_path / "base.pth", demo_base_tensors(config))
    model_dir = Path(train_tiny.__file__).resolve().parents[1]
    copy = tmp_path / "model"
    shutil.copytree(model_dir, copy, ignore=shutil.ignore_patterns("__pycache__"))
    mutant = copy / "smoke" / "train_tiny.py"
    source = mutant.read_text()
    assert source.count("step % cands.refresh == 0") == 1
    mutant.write_text(source.replace("step % cands.refresh == 0", "step % cands.refresh == 1"))
    monkeypatch.setattr(train_tiny, "__file__", str(mutant))  # this process "runs" the copy
    out = tmp_path / "state.pth"
    with pytest.raises(RuntimeError, match=r"failed \(state\): this worker would not train the caller's bytes"):
        train_tiny._run_parts_in_processes([("state", str(base), str(out), config)], cache_key(config))
    assert not out.exists()


def test_workers_import_the_package_folder_the_caller_imported(tmp_path, monkeypatch):
    """A caller that runs a copy of the package found first on its ``sys.path`` (a folder named
    ``rwkv_registry``, as a mutation tool makes it) starts workers that find the same copy first."""
    import subprocess

    import rwkv_registry

    seen: list[dict[str, str]] = []

    class FakePopen:
        returncode = 0

        def __init__(self, cmd: list[str], **kwargs: object) -> None:
            self.args: list[str] = cmd
            seen.append(kwargs["env"])  # type: ignore[arg-type]

        def communicate(self) -> tuple[str, str]:
            return "", ""

        def poll(self) -> int:  # asked once the workers are done (none may outlive the caller)
            return self.returncode

    monkeypatch.setattr(subprocess, "Popen", FakePopen)
    monkeypatch.setenv("PYTHONPATH", "/elsewhere")
    job = ("state", "base.pth", "out.pth", TrainConfig())
    copy = tmp_path / "copy" / "rwkv_registry"
    monkeypatch.setattr(rwkv_registry, "__file__", str(copy / "__init__.py"))
    train_tiny._run_parts_in_processes([job], "key")
    assert seen[-1]["PYTHONPATH"].split(os.pathsep) == [str(tmp_path / "copy"), "/elsewhere"]
    monkeypatch.setattr(rwkv_registry, "__file__", str(tmp_path / "registry" / "__init__.py"))  # an editable install
    train_tiny._run_parts_in_processes([job], "key")
    assert seen[-1]["PYTHONPATH"] == "/elsewhere"  # its finder maps the names; nothing to add


def test_main_without_exactly_one_folder_is_a_usage_error(capsys):
    assert train_tiny.main([]) == 2
    assert train_tiny.main(["a", "b"]) == 2
    assert "usage:" in capsys.readouterr().err


def test_training_in_process_leaves_threads_and_the_model_s_wkv_as_it_found_them(tmp_path):
    import rwkv_registry.model.time_mix as time_mix

    config = replace(TrainConfig(), state_steps=1, miss_steps=1)
    base = save_tensors(tmp_path / "base.pth", demo_base_tensors(config))
    wkv = time_mix.wkv7
    torch.set_num_threads(2)  # the autouse fixture restores its own value afterwards
    lines = train_tiny._train_part("state", str(base), str(tmp_path / "s.pth"), config)
    assert lines and "State: step 1/1" in lines[0]
    assert torch.get_num_threads() == 2
    assert time_mix.wkv7 is wkv


# ------------------------------------------------- train_tiny: schedule, candidates, key, worker


class _Head(torch.nn.Module):
    """The one part of a model that the training loop's candidate set reads: its head."""

    def __init__(self, weight: torch.Tensor) -> None:
        super().__init__()
        self.head = torch.nn.Linear(weight.shape[1], weight.shape[0], bias=False)
        with torch.no_grad():
            self.head.weight.copy_(weight)


def test_the_learning_rate_falls_from_its_peak_to_the_floor_along_a_cosine():
    floor, steps = 0.05, 40
    assert train_tiny._cosine(0, steps, floor) == pytest.approx(1.0)
    assert train_tiny._cosine(steps // 2, steps, floor) == pytest.approx((1 + floor) / 2)
    assert train_tiny._cosine(steps, steps, floor) == pytest.approx(floor)
    values = [train_tiny._cosine(s, steps, floor) for s in range(steps + 1)]
    assert all(a > b for a, b in itertools.pairwise(values))


def test_fit_steps_with_the_scheduled_rates_and_refreshes_the_rivals_every_tenth_and_last_steps(monkeypatch):
    torch.manual_seed(0)
    model = _Head(torch.randn(50, 8))
    batch = SimpleNamespace(targets=torch.tensor([3, 7, 3]))  # all that the loop reads of a batch
    x = torch.randn(3, 8, requires_grad=True)
    steps, lr, floor = 25, 0.5, 0.1
    step_of_call: list[int] = []
    rates: list[float] = []
    calls = {"hidden": 0}

    def hidden() -> torch.Tensor:
        calls["hidden"] += 1
        return x * 1.0

    real_update = train_tiny._Candidates.update

    def update(self: Any, m: Any, h: torch.Tensor) -> None:
        step_of_call.append(calls["hidden"] - 1)
        real_update(self, m, h)

    real_step = torch.optim.Adam.step

    fresh: list[torch.Tensor] = []
    x.register_hook(lambda g: fresh.append(g.clone()))
    stale: list[bool] = []

    def step(self: Any, *a: Any, **k: Any) -> Any:
        rates.append(self.param_groups[0]["lr"])
        stale.append(not torch.equal(x.grad, fresh[-1]))  # each step follows its own gradient, none summed
        return real_step(self, *a, **k)

    monkeypatch.setattr(train_tiny._Candidates, "update", update)
    monkeypatch.setattr(torch.optim.Adam, "step", step)
    log: list[str] = []
    loss = train_tiny._fit(model, batch, [x], hidden, steps, lr, floor, log.append, "T")
    assert step_of_call == [0, 10, 20, 22, 23, 24]
    assert len(fresh) == steps and stale == [False] * steps
    assert rates == pytest.approx([lr * train_tiny._cosine(s, steps, floor) for s in range(steps)])
    assert rates[0] == pytest.approx(lr) and rates[-1] > lr * floor
    assert [line.split(",")[0] for line in log] == ["T: step 1/25", "T: step 25/25"]
    assert f"loss {loss:.4f}" in log[-1]


def test_the_candidate_set_holds_every_target_and_the_top_rivals_of_each_position():
    weight = torch.zeros(20, 4)
    weight[:, 0] = torch.arange(20, dtype=torch.float32)  # token t scores t on h = e0
    model = _Head(weight)
    targets = torch.tensor([19, 2])  # the first position's target is its strongest token
    cands = train_tiny._Candidates(targets, top=3)
    assert cands.ids.tolist() == [2, 19] and cands.index.tolist() == [1, 0]
    h = torch.zeros(2, 4)
    h[:, 0] = 1.0
    cands.update(model, h)
    # the rivals are the three best tokens other than each position's own target
    assert cands.ids.tolist() == [2, 16, 17, 18, 19]
    assert cands.ids[cands.index].tolist() == targets.tolist()
    logits = h @ model.head.weight[cands.ids].t()
    expected = torch.nn.functional.cross_entropy(logits, cands.index)
    assert cands.loss(model, h).item() == pytest.approx(expected.item())
    assert cands.loss(model, h).item() != pytest.approx(
        torch.nn.functional.cross_entropy(h @ model.head.weight.t(), targets).item()
    )


def test_cache_key_follows_every_training_setting_and_the_names_of_the_sources(tmp_path, monkeypatch):
    config = TrainConfig()
    key = cache_key(config)
    for field, value in (("seed", 1), ("state_lr", 0.5), ("w0_fast", (0.0, -3.0)), ("a0_shift", -2.0)):
        assert cache_key(replace(config, **{field: value})) != key, field
    model_dir = Path(train_tiny.__file__).resolve().parents[1]
    copy = tmp_path / "model"
    shutil.copytree(model_dir, copy, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    monkeypatch.setattr(train_tiny, "__file__", str(copy / "smoke" / "train_tiny.py"))
    assert cache_key(config) == key
    (copy / "smoke" / "extra.py").write_text("")  # a new module, even an empty one, is a new source
    assert cache_key(config) != key


def test_a_worker_trains_its_part_with_the_parent_s_configuration(monkeypatch, capsys):
    config = replace(TrainConfig(), seed=3, w0_fast=(1.0, -2.0), miss_steps=7)
    seen: list[tuple[str, str, str, TrainConfig]] = []

    def fake_part(part: str, base: str, out: str, cfg: TrainConfig) -> list[str]:
        seen.append((part, base, out, cfg))
        return ["one", "two"]

    monkeypatch.setattr(train_tiny, "_train_part", fake_part)
    line = ["--part", "miss", "b.pth", "o.pth", json.dumps(asdict(config))]
    assert train_tiny.main([*line, train_tiny.cache_key(config)]) == 0
    assert seen == [("miss", "b.pth", "o.pth", config)]
    assert capsys.readouterr().out == "one\ntwo\n"
    assert train_tiny.main(line) == 2  # a short worker line is a usage error
    assert train_tiny.main([*line, train_tiny.cache_key(TrainConfig())]) == 3  # another key: refused
    assert len(seen) == 1


def test_main_trains_into_the_folder_and_names_the_three_files(tmp_path, monkeypatch, capsys):
    def fake_build(out, *, log):
        log("trained")
        return train_tiny.TinyWeights(Path(out) / "b.pth", Path(out) / "s.pth", Path(out) / "m.pth", "k", False)

    monkeypatch.setattr(train_tiny, "build_tiny_weights", fake_build)
    assert train_tiny.main([str(tmp_path)]) == 0
    assert capsys.readouterr().out == f"trained\nbase {tmp_path}/b.pth\nstate {tmp_path}/s.pth\nmiss {tmp_path}/m.pth\n"


def test_an_interrupted_caller_leaves_no_worker_training(tmp_path, monkeypatch):
    """Ctrl-C (or any error) in the caller while its workers train stops them: none goes on to write its file
    after the caller has reported the weights unfinished."""
    import subprocess
    import sys

    started: list[subprocess.Popen] = []
    real = subprocess.Popen

    class Sleeper(real):  # type: ignore[misc,valid-type]
        def __init__(self, cmd, **kw):
            super().__init__([sys.executable, "-c", "import time; time.sleep(60)"], **kw)
            started.append(self)

        def communicate(self, *a, **k):
            raise KeyboardInterrupt

    monkeypatch.setattr(subprocess, "Popen", Sleeper)
    jobs = [(part, str(tmp_path / "b.pth"), str(tmp_path / f"{part}.pth"), TrainConfig()) for part in ("state", "miss")]
    with pytest.raises(KeyboardInterrupt):
        train_tiny._run_parts_in_processes(jobs, "key")
    assert len(started) == 2 and all(p.poll() is not None for p in started)


def test_the_base_is_drawn_the_same_whatever_default_dtype_the_caller_set(tmp_path, fake_training):
    """The base is drawn in the caller, before the workers start: an fp64 default dtype there drew other
    numbers (70 of 72 tensors), filed under the same cache key."""
    config = replace(TrainConfig(), n_embd=64)
    plain = build_tiny_weights(tmp_path / "a", config=config, parallel=False).base.read_bytes()
    before = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        other = build_tiny_weights(tmp_path / "b", config=config, parallel=False).base.read_bytes()
        assert torch.get_default_dtype() == torch.float64  # the caller's setting is restored
    finally:
        torch.set_default_dtype(before)
    assert other == plain
