"""The ``rwkv-registry`` console script.

:func:`rwkv_registry.cli.main.main` turns Ctrl-C inside a command into exit code 130 and a one-line
message; this wrapper does the same for a Ctrl-C that lands earlier, while Python imports the CLI or
parses its arguments (the first tenth of a second), which otherwise printed a traceback.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence


def run(argv: Sequence[str] | None = None) -> int:
    try:
        from rwkv_registry.cli.main import main

        return main(argv)
    except KeyboardInterrupt:
        sys.stderr.write("interrupted before the command started: nothing was done\n")
        return 130
