"""Smoke evaluation of a registry entry on its base (``rwkv-registry smoke``)."""
