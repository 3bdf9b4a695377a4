"""Tests from a mutation audit of the demo's training path: ``casegen`` (the shipped case files),
``chunked`` (the WKV-7 used while training) and ``train_tiny`` (the tiny State and MiSS). Each test
failed on at least one hand-made mutant that the rest of the suite let live: a case file written
into a missing folder or under the wrong name, the chunked WKV with another chunk size, bf16
inputs or ``state_out``, ..."""

from __future__ import annotations

import pytest
import torch

from rwkv_registry.kernels.wkv7 import wkv7_naive
from rwkv_registry.model.smoke import casegen
from rwkv_registry.model.smoke.chunked import wkv7_chunked
from rwkv_registry.smoke_cases import DEFAULT_CASES, TINY_CASES, builtin_path

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


def _inputs(B: int, T: int, H: int, seed: int, dtype: torch.dtype = torch.float64) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    N = 64

    def rnd(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=g, dtype=torch.float64)

    r, k, v = rnd(B, T, H, N), rnd(B, T, H, N) * 0.5, rnd(B, T, H, N)
    w = -torch.nn.functional.softplus(-rnd(B, T, H, N) * 2) - 0.5  # RWKV-7's decay: w <= -0.5
    kk = torch.nn.functional.normalize(rnd(B, T, H, N), dim=-1)
    a, b = -kk, kk * torch.rand(B, T, H, N, generator=g, dtype=torch.float64)
    s = rnd(B, H, N, N)
    return [t.to(dtype) for t in (r, w, k, v, a, b)] + [s.float() if dtype != torch.float64 else s]


def _close(x: torch.Tensor, ref: torch.Tensor, tol: float) -> bool:
    return float((x.double() - ref.double()).abs().max() / ref.double().std()) < tol


@pytest.mark.parametrize(("chunk", "T"), [(1, 5), (4, 11), (7, 21), (8, 16)], ids=str)
def test_chunked_wkv_equals_the_reference_for_any_chunk_size(chunk, T):
    leaves = _inputs(2, T, 2, seed=chunk * 10 + T)
    y1, s1 = wkv7_naive(*leaves)
    y2, s2 = wkv7_chunked(*leaves, chunk=chunk)
    assert y2.shape == y1.shape and s2.shape == s1.shape
    assert _close(y2, y1, 1e-5) and _close(s2, s1, 1e-5)


def test_chunked_wkv_takes_bf16_inputs_and_answers_in_fp32():
    leaves = _inputs(1, 19, 2, seed=3, dtype=torch.bfloat16)
    y1, s1 = wkv7_naive(*(t.double() for t in leaves))  # the same (rounded) inputs, in fp64
    y2, s2 = wkv7_chunked(*leaves)
    assert y2.dtype == torch.float32 and s2.dtype == torch.float32
    assert _close(y2, y1, 1e-4) and _close(s2, s1, 1e-4)


def test_chunked_wkv_writes_the_final_state_into_state_out():
    leaves = _inputs(2, 20, 1, seed=9, dtype=torch.float32)
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
