"""``python -m rwkv_registry``: the same as the ``rwkv-registry`` command."""

import sys

from ._entry import run

sys.exit(run())
