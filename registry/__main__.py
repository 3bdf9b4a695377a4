"""``python -m rwkv_registry``: the same as the ``rwkv-registry`` command."""

import sys

from ._entry import run

if __name__ == "__main__":
    sys.exit(run())
