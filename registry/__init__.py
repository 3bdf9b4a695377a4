"""rwkv-registry: keep a repository of RWKV-7 State and MiSS weights honest.

The core (this package) never imports torch or textual, so ``rwkv-registry validate`` and the
pre-commit hook start fast. Usage from Python::

    from rwkv_registry.engine.validate import validate_registry
    report = validate_registry("path/to/registry")
    for f in report.findings:
        print(f.code, f.severity, f.path, f.message)

    from rwkv_registry.formats.ckpt import open_checkpoint          # safe, pickle-free reader
    ck = open_checkpoint("adapter-final.pth")
    print(ck.tensors["blocks.0.att.key.weight.D"].shape, ck.miss_manifest_bytes is not None)

Sub-packages ``rwkv_registry.model`` (RWKV-7 in PyTorch), ``rwkv_registry.kernels`` (WKV7 kernels)
and ``rwkv_registry.tui`` (Textual browser) build on this core, never the reverse.
"""

__version__ = "0.1.0"
