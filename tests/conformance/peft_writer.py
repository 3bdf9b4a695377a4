"""State files as RWKV-PEFT's state tuning saves them, with the real ``torch.save`` (test helper).

Read in JL-er/RWKV-PEFT (commit 5b8aac9):

- ``rwkvt/rwkv7/att.py``, ``RWKV_Tmix_x070_State.__init__`` (picked by ``RWKV_Tmix_v7`` when
  ``RWKV_TRAIN_TYPE == 'state'``): ``self.time_state = nn.Parameter(torch.zeros(self.n_head, self.head_size,
  self.head_size))``; the block holds it as ``self.att`` (``rwkvt/rwkv7/block.py``), the model its blocks as
  ``self.blocks`` (``rwkvt/rwkv7/model.py``, class ``RWKV7``), and the LightningModule the model as ``self.model``
  (``rwkvt/lightning_train/light_rwkv.py``, class ``RWKV``): the parameter's key is
  ``model.blocks.<i>.att.time_state``;
- ``rwkvt/lightning_train/trainer.py``, ``train_callback.on_train_epoch_end``: ``to_save_dict = {k.replace("model.",
  ""): v for k, v in pl_module.state_dict().items()}``; with ``args.train_type == 'state'`` only the items whose
  name contains ``'state'`` are kept (a plain ``dict``); ``my_save`` calls ``torch.save(dd, ff)`` with ``ff =
  f"{args.proj_dir}/rwkv-{args.epoch_begin + trainer.current_epoch}.pth"``;
- the dtype: ``train.py`` maps ``--precision bf16`` (``scripts/demo-state-tuning.sh`` uses ``--precision bf16
  --strategy deepspeed_stage_1``) to Lightning's ``"bf16"``, under which DeepSpeed casts the module to bf16;
  ``fp32`` keeps fp32, and ``fp16`` gives fp16.

DeepSpeed ZeRO stage 1/2 (deepspeed ``runtime/zero/stage_1_and_2.py``, ``DeepSpeedZeroOptimizer.
_update_model_bit16_weights``: ``p.data = q.data`` for ``q`` in ``self.unflatten(self.bit16_groups_flat[i], …)``)
leaves every trainable parameter a view into one flat buffer: ``state_dict`` then holds views of one storage,
and ``torch.save`` writes that storage once with each tensor at its own storage offset. ``flat_buffer=True``
reproduces that (one device, so no round-robin reordering; ``pad`` extra elements at the end, as DeepSpeed
aligns the flat buffer).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any


def _modules(n_layer: int, n_head: int, head_size: int, dtype: Any) -> Any:
    import torch
    from torch import nn

    class Att(nn.Module):  # RWKV_Tmix_x070_State: the frozen weights beside the trained time_state
        def __init__(self) -> None:
            super().__init__()
            c = n_head * head_size
            self.receptance = nn.Linear(c, c, bias=False)
            self.ln_x = nn.GroupNorm(n_head, c)
            self.time_state = nn.Parameter(torch.zeros(n_head, head_size, head_size))

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.att = Att()

    class Model(nn.Module):  # RWKV7
        def __init__(self) -> None:
            super().__init__()
            self.emb = nn.Embedding(16, n_head * head_size)
            self.blocks = nn.ModuleList([Block() for _ in range(n_layer)])

    class PlModule(nn.Module):  # the LightningModule RWKV: self.model
        def __init__(self) -> None:
            super().__init__()
            self.model = Model()

    module = PlModule()
    module.requires_grad_(False)  # peft_loading.load_peft_model: only names with 'state' stay trainable
    for name, param in module.named_parameters():
        if "state" in name:
            param.requires_grad = True
    return module.to(dtype)


def peft_state_dict(
    n_layer: int,
    n_head: int,
    head_size: int = 64,
    *,
    dtype: str = "bfloat16",
    seed: int = 0,
    flat_buffer: bool = False,
    pad: int = 0,
) -> dict[str, Any]:
    """The dict ``on_train_epoch_end`` hands to ``torch.save`` after training moved the states off zero."""
    import torch

    torch.manual_seed(seed)
    module = _modules(n_layer, n_head, head_size, getattr(torch, dtype))
    with torch.no_grad():
        trainable = [p for p in module.parameters() if p.requires_grad]
        for p in trainable:
            p.copy_(torch.randn(p.shape) * 0.1)
        if flat_buffer:  # DeepSpeedZeroOptimizer._update_model_bit16_weights
            flat = torch.cat([p.detach().reshape(-1) for p in trainable] + [torch.zeros(pad, dtype=trainable[0].dtype)])
            at = 0
            for p in trainable:
                p.data = flat.narrow(0, at, p.numel()).view_as(p)
                at += p.numel()
    to_save_dict = {k.replace("model.", ""): v for k, v in module.state_dict().items()}
    return {name: state for name, state in to_save_dict.items() if "state" in name}


def write_peft_state(proj_dir: str | os.PathLike[str], epoch: int, state_dict: dict[str, Any]) -> Path:
    """``my_save``: ``torch.save(dd, f"{proj_dir}/rwkv-{epoch}.pth")``."""
    import torch

    path = Path(proj_dir) / f"rwkv-{epoch}.pth"
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save(state_dict, path)
    return path
