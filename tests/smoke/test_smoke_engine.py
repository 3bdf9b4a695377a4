"""The batched engine against the model's own generate() and forward(), and the chunked WKV."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
from wkv_inputs import wkv_inputs

from rwkv_registry.kernels.wkv7 import wkv7_naive
from rwkv_registry.model import RWKV7, generate, get_tokenizer, load_state_weights
from rwkv_registry.model.smoke.chunked import wkv7_chunked
from rwkv_registry.model.smoke.engine import Engine, Job, Row, RunStats
from rwkv_registry.model.tiny import make_tiny_base, make_tiny_state

STOPS = (b"\n\n", b"```")


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_tiny_base(tmp_path_factory.mktemp("engine") / "base.pth", seed=3)


@pytest.fixture(scope="module")
def model(base: Path) -> RWKV7:
    return RWKV7.from_pth(base, dtype=torch.float32)


def prompts() -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    tok = get_tokenizer()
    shared = tuple(tok.encode('System: Tools:\n{"name":"read_file"}\n\n'))
    other = tuple(tok.encode("System: Be brief.\n\n"))
    users = ["User: Open a.txt\n\nAssistant:", "User: Hi\n\nAssistant:", "User: Delete card 7 now please\n\nAssistant:"]
    out = [(shared, tuple(tok.encode(u))) for u in users]
    out.append((other, tuple(tok.encode(users[0]))))
    return out


def test_greedy_rows_equal_generate_one_by_one(model):
    tok = get_tokenizer()
    jobs = [Job(p, s, max_new=12, stops=STOPS) for p, s in prompts()]
    results, stats = Engine(model, tok).run(jobs)
    for job, res in zip(jobs, results, strict=True):
        [ref] = generate(model, [list(job.prefix + job.suffix)], max_tokens=12, stop_strings=("\n\n", "```"))
        assert res.tokens == ref.tokens
        assert res.text == ref.text
        assert res.finish == ref.finish_reason
    assert stats.prefill_tokens == len(prompts()[0][0]) + len(prompts()[3][0])  # two distinct prefixes
    assert stats.generated_tokens == sum(len(r.tokens) for r in results)


def test_fixed_batch_gives_the_same_tokens(model):
    tok = get_tokenizer()
    jobs = [Job(p, s, max_new=10, stops=STOPS) for p, s in prompts()]
    a, _ = Engine(model, tok, fixed_batch=False).run(jobs)
    engine = Engine(model, tok, fixed_batch=True)
    b, _ = engine.run(jobs)
    c, _ = engine.run(jobs)  # the second run reuses the first one's decoder (one capture on a GPU)
    assert [r.tokens for r in a] == [r.tokens for r in b] == [r.tokens for r in c]
    assert list(engine._decoders) == [len(jobs)]
    compiled, _ = Engine(model, tok, fixed_batch=True, compile="aot_eager").run(jobs)  # the compiled step
    assert [r.tokens for r in compiled] == [r.tokens for r in a]


def test_teacher_forced_loss_equals_a_full_forward(model):
    tok = get_tokenizer()
    (prefix, suffix), targets = prompts()[0], tuple(tok.encode(' read_file","arguments":{}}'))
    [res], _ = Engine(model, tok).run([Job(prefix, suffix, targets=targets)])
    ids = torch.tensor([list(prefix + suffix + targets)])
    logits, _ = model.forward(ids, full_output=True)  # [1, T, V]
    lsm = torch.log_softmax(logits[0], dim=-1)
    start = len(prefix) + len(suffix)
    want = [-float(lsm[start - 1 + j, t]) for j, t in enumerate(targets)]
    assert len(res.nll_terms) == len(targets)
    assert res.nll_terms == pytest.approx(want, rel=1e-4, abs=1e-4)
    assert res.nll == pytest.approx(sum(want), rel=1e-4)
    assert res.finish == "scored" and res.finite


def test_mixed_batch_and_repeat_runs_are_identical(model):
    tok = get_tokenizer()
    jobs = [Job(p, s, max_new=8, stops=STOPS) for p, s in prompts()]
    jobs += [Job(p, s, targets=tuple(tok.encode(" ok"))) for p, s in prompts()]
    eng = Engine(model, tok)
    a, _ = eng.run(jobs)
    b, _ = eng.run(jobs)
    assert [(r.tokens, r.nll_terms) for r in a] == [(r.tokens, r.nll_terms) for r in b]
    alone, _ = eng.run(jobs[:1])
    assert alone[0].tokens == a[0].tokens  # the other rows do not change a row's tokens
    scored_alone, _ = eng.run(jobs[4:])  # loss rows that shared their suffix with a generation row
    for x, y in zip(scored_alone, a[4:], strict=True):
        assert x.nll_terms == pytest.approx(y.nll_terms, rel=1e-5, abs=1e-5)


def test_initial_state_is_used_and_nan_is_reported(model, base, tmp_path):
    tok = get_tokenizer()
    jobs = [Job(p, s, max_new=6, stops=STOPS) for p, s in prompts()[:2]]
    plain, _ = Engine(model, tok).run(jobs)
    st = load_state_weights(make_tiny_state(tmp_path / "s.pth", base, seed=5, std=3.0))
    with_state, _ = Engine(model, tok, time_state=st).run(jobs)
    assert [r.tokens for r in plain] != [r.tokens for r in with_state]
    assert all(r.finite for r in with_state)
    bad = type(st)(tuple(t.clone().float() for t in st.time_state))
    bad.time_state[0][0, 0, 0] = math.nan
    broken, _ = Engine(model, tok, time_state=bad).run(jobs)
    assert not any(r.finite for r in broken)


def test_job_must_generate_or_score():
    with pytest.raises(ValueError):
        Job((1,), (2,))
    with pytest.raises(ValueError):
        Job((1,), (2,), max_new=3, targets=(4,))
    with pytest.raises(ValueError):
        Job((1,), (), max_new=3)


@pytest.mark.parametrize(("B", "T", "H"), [(2, 37, 2), (1, 16, 1), (3, 1, 2), (1, 70, 2)], ids=str)
def test_chunked_wkv_equals_the_reference(B, T, H):
    leaves = wkv_inputs(B, T, H, seed=B * 100 + T)
    g = torch.Generator().manual_seed(B * 100 + T + 1)
    for t in leaves:
        t.requires_grad_(True)
    y1, s1 = wkv7_naive(*leaves)
    y2, s2 = wkv7_chunked(*leaves)
    assert float(((y1 - y2).abs().max() / y1.std()).detach()) < 1e-5
    assert float(((s1 - s2).abs().max() / s1.std()).detach()) < 1e-5
    probe = torch.randn(y1.shape, generator=g, dtype=torch.float64)
    g1 = torch.autograd.grad((y1 * probe).sum() + (s1**2).sum(), leaves)
    g2 = torch.autograd.grad((y2 * probe).sum() + (s2**2).sum(), leaves)
    for x1, x2 in zip(g1, g2, strict=True):
        assert float((x1 - x2).abs().max() / x1.abs().max()) < 1e-4


def test_sha256_cache_is_keyed_by_stat(tmp_path):
    import hashlib
    import os

    from rwkv_registry.model.smoke.hashcache import cached_sha256

    f = tmp_path / "base.pth"
    f.write_bytes(b"weights" * 1000)
    want = hashlib.sha256(f.read_bytes()).hexdigest()
    assert cached_sha256(f) == (want, False)
    assert cached_sha256(f) == (want, True)
    f.write_bytes(b"Weights" * 1000)  # same size, new content: the stat key changes (mtime/ctime)
    st = f.stat()
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns + 1))
    assert cached_sha256(f) == (hashlib.sha256(f.read_bytes()).hexdigest(), False)


@pytest.mark.parametrize(
    ("phase", "gen_finite", "loss_finite"),
    [("_prefixes", False, False), ("_suffixes", False, False), ("_targets", True, False), ("_decode", False, True)],
)
def test_a_non_finite_logits_row_in_any_phase_is_charged_to_its_jobs(
    model, monkeypatch, phase, gen_finite, loss_finite
):
    """NaN logits (with a finite state) in one phase only: the prefix and the suffix are shared by
    both jobs, the teacher-forced targets belong to the loss job, the decode steps to the generation
    job. Each phase must report it, not only the ones after it."""
    tok = get_tokenizer()
    prefix, suffix = prompts()[0]
    jobs = [
        Job(prefix, suffix, max_new=3, stop_tokens=()),
        Job(prefix, suffix, targets=tuple(tok.encode(' read_file","arguments":{}}'))),
    ]
    active: list[str] = []
    real_forward = model.forward

    def forward(tokens, state=None, **kw):
        logits, st = real_forward(tokens, state, **kw)
        if active == [phase]:
            logits = logits.clone()
            logits[..., 5] = math.nan
        return logits, st

    def wrap(name):
        real = getattr(Engine, name)

        def run(self, *args, **kw):
            active.append(name)
            try:
                return real(self, *args, **kw)
            finally:
                active.pop()

        return run

    monkeypatch.setattr(model, "forward", forward)
    for name in ("_prefixes", "_suffixes", "_targets", "_decode"):
        monkeypatch.setattr(Engine, name, wrap(name))
    (gen, loss), _ = Engine(model, tok, fixed_batch=False).run(jobs)
    assert len(gen.tokens) >= 2  # the decode phase ran
    assert (gen.finite, loss.finite) == (gen_finite, loss_finite)


def test_a_call_that_can_no_longer_parse_stops_at_once(model):
    """A job's prefix check stops its row on the first token it refuses (finish "invalid")."""
    tok = get_tokenizer()
    prefix, suffix = prompts()[0]
    free = Job(prefix, suffix, max_new=6, stop_tokens=())
    checked = Job(prefix, suffix, max_new=6, stop_tokens=(), prefix_check=lambda text: False)
    (a, b), _ = Engine(model, tok, fixed_batch=False).run([free, checked])
    assert a.finish == "max_tokens" and len(a.tokens) == 6
    assert b.finish == "invalid" and b.tokens == a.tokens[:1]


@pytest.mark.parametrize(
    ("pieces", "text"),
    [(["x", "`", "``"], "x"), (["x", "``", "`"], "x"), (["ab", "\n", "```"], "ab\n"), (["a", "```"], "a")],
)
def test_a_stop_string_split_across_tokens_is_found(model, pieces, text):
    """The closing fence written as ``"`"`` + ``"``"`` (two tokens) stops the call like one
    ``"```"`` token; the text is cut just before it (as generate() does)."""
    tok = get_tokenizer()
    ids = [tok.encode(p) for p in pieces]
    assert all(len(i) == 1 for i in ids)  # each piece is one token
    engine, stats = Engine(model, tok), RunStats()
    row = Row(Job((1,), (2,), max_new=10, stops=(b"```",), stop_tokens=()))
    done = [engine.advance(row, i, stats) for [i] in ids]
    assert done == [False] * (len(ids) - 1) + [True]
    assert (row.result.finish, row.result.text) == ("stop_string", text)


def test_sha256_of_a_file_with_recent_whole_second_times_is_not_cached(tmp_path):
    """A coarse-clock file (whole-second mtime) written within that clock's step could be rewritten
    with the same size and times: its hash is never cached then (``facts.racy``), so the next call
    hashes again."""
    import hashlib
    import os
    import time

    from rwkv_registry.model.smoke.hashcache import cached_sha256

    f = tmp_path / "base.pth"
    f.write_bytes(b"weights" * 1000)
    now_s = time.time_ns() // 10**9
    os.utime(f, ns=(now_s * 10**9, now_s * 10**9))  # whole seconds, just now
    want = hashlib.sha256(f.read_bytes()).hexdigest()
    assert cached_sha256(f) == (want, False)
    assert cached_sha256(f) == (want, False)
