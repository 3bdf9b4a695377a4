"""Peak memory of the safe reader on every hostile zip input: the corpus (tests/malicious/evil_cases.py) and the zip
bombs (tests/malicious/bombs.py), each opened in a fresh child process (tests/malicious/rss_probe.py: VmHWM).

Run from the repository root::

    .venv/bin/python bench/zip_rss.py            # one line per input, then the largest peak

The bound the project holds to (issue 26): under 200 MB for every input, the interpreter included.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests" / "malicious"), str(ROOT / "tests")]

from bombs import BOMBS  # noqa: E402
from evil_cases import CASES, write_case  # noqa: E402
from rss_probe import MB, probe  # noqa: E402

BOUND = 200 * MB


def main() -> int:
    """Open every input in a child; print its rule and peak RSS; exit 1 if one passes the bound."""
    worst = 0
    with tempfile.TemporaryDirectory(prefix="zip-rss-") as tmp:
        folder = Path(tmp)
        inputs: list[tuple[str, Path]] = [(f"case {c.id}", write_case(c, folder)) for c in CASES.values()]
        for bomb in BOMBS.values():
            if bomb.target.endswith(".pth") and not bomb.slow:
                path = folder / f"bomb-{bomb.id}.pth"
                bomb.write(path)
                inputs.append((f"bomb {bomb.id}", path))
        for label, path in inputs:
            run = probe("open", str(path), timeout=120)
            out = run.json()
            code = (out.get("code") if isinstance(out, dict) else "?") or "accepted"
            worst = max(worst, run.max_rss)
            print(f"{label:40} {code:9} {run.max_rss / MB:6.1f} MB")
    print(f"largest peak: {worst / MB:.1f} MB over {len(inputs)} inputs (bound {BOUND // MB} MB)")
    return 0 if worst < BOUND else 1


if __name__ == "__main__":
    raise SystemExit(main())
