"""Bytes in, facts out: the one zip reader, the pickle-free unpickler, checkpoints, JsonCpp, LFS pointers.

Knows file formats, not the registry: imports only :mod:`rwkv_registry.core`."""
