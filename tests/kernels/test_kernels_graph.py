"""rwkv_registry.kernels.graph: nesting of step arguments (CPU) and CUDA-graph replay (GPU only)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
import torch

from rwkv_registry.kernels.graph import GraphedStep, flatten, unflatten


@dataclass
class _Layer:
    shift: torch.Tensor
    wkv: torch.Tensor


@dataclass
class _State:
    layers: list[_Layer]
    note: str = "x"


def _state(batch: int, device: str = "cpu") -> _State:
    return _State(
        [_Layer(torch.randn(batch, 8, device=device), torch.randn(batch, 2, 4, 4, device=device)) for _ in range(2)]
    )


def _step(tokens: torch.Tensor, state: _State) -> tuple[torch.Tensor, _State]:
    layers = []
    x = tokens.float()
    for layer in state.layers:
        wkv = layer.wkv * 0.5 + x[:, :, None, None]
        layers.append(_Layer(layer.shift + 1, wkv))
        x = x + wkv.sum(dim=(2, 3))[:, :1]
    return x, _State(layers, state.note)


def test_flatten_round_trip_keeps_nesting_and_constants() -> None:
    tree = ({"a": torch.ones(2), "n": 3}, [_state(1), None])
    leaves, spec = flatten(tree)
    assert len(leaves) == 5
    rebuilt = unflatten(spec, [t * 2 for t in leaves])
    assert rebuilt[0]["n"] == 3 and rebuilt[1][1] is None and rebuilt[1][0].note == "x"
    assert torch.equal(rebuilt[0]["a"], torch.full((2,), 2.0))
    assert torch.equal(rebuilt[1][0].layers[1].wkv, tree[1][0].layers[1].wkv * 2)


def test_on_cpu_the_step_runs_eagerly_with_the_same_checks() -> None:
    tokens, state = torch.ones(3, 1), _state(3)
    step = GraphedStep(_step, tokens, state)
    assert not step.captured
    got, _ = step(tokens, state)
    want, _ = _step(tokens, state)
    assert torch.equal(got, want)
    with pytest.raises(ValueError, match=r"differ from those it was captured for"):
        step(torch.ones(4, 1), _state(4))


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_graph_replay_equals_eager_over_several_steps() -> None:
    tokens, state = torch.ones(3, 1, device="cuda"), _state(3, "cuda")
    step = GraphedStep(_step, tokens, state)
    assert step.captured
    eager_state, graph_state = state, state
    for i in range(4):
        t = torch.full((3, 1), float(i), device="cuda")
        want, eager_state = _step(t, eager_state)
        got, graph_state = step(t, graph_state)
        assert torch.allclose(got, want)
    assert torch.allclose(graph_state.layers[1].wkv, eager_state.layers[1].wkv)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_a_step_that_syncs_is_refused_before_capture() -> None:
    def syncing(x: torch.Tensor) -> torch.Tensor:
        return x * float(x.sum().item())

    with pytest.raises(RuntimeError, match=r"synchronises with the host"):
        GraphedStep(syncing, torch.ones(2, device="cuda"))
