"""``python -m rwkv_registry``: the same as the ``rwkv-registry`` command."""

import sys

from rwkv_registry.cli.entry import run

if __name__ == "__main__":
    sys.exit(run())
