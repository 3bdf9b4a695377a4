"""Peak memory of the safe reader, and of ``validate``, on every hostile zip input: the corpus
(tests/malicious/evil_cases.py) and the zip bombs (tests/malicious/bombs.py), each in a fresh child process
(tests/malicious/rss_probe.py: VmHWM).

Run from the repository root::

    .venv/bin/python bench/zip_rss.py              # the reader alone (open_checkpoint): one line per input
    .venv/bin/python bench/zip_rss.py --validate   # also validate_registry on a small registry holding the input

With ``--validate`` each input replaces the State file of a one-base registry (tests/regtools.build_registry,
built once in a child so that this process stays small; a bomb replaces its own target) and the child runs
``validate_registry`` over the whole registry. The bound the project holds to (issue 26): under 200 MB for every
input, the interpreter included. Figures in docs/security.md.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests" / "malicious"), str(ROOT / "tests" / "support")]

from bombs import BOMBS, STATE  # noqa: E402
from evil_cases import CASES, write_case  # noqa: E402
from rss_probe import MB, probe  # noqa: E402

BOUND = 200 * MB

_BUILD = """
import sys
sys.path.insert(0, sys.argv[2])
from pathlib import Path
from regtools import build_registry
build_registry(Path(sys.argv[1]) / "reg", Path(sys.argv[1]), with_miss=False)
"""


def _validate_peak(template: Path, work: Path, path: Path, target: str) -> tuple[str, int]:
    """The first finding on ``target`` but the HSH ones (SHA256SUMS no longer matches: the file was replaced) and
    the peak RSS of ``validate`` with ``path`` in the place of ``target``."""
    reg = work / "reg"
    shutil.rmtree(reg, ignore_errors=True)
    shutil.copytree(template, reg)
    shutil.copyfile(path, reg / target)
    run = probe("validate", str(reg), timeout=300)
    out = run.json()
    findings = out.get("findings", []) if isinstance(out, dict) else [["?", target]]
    codes = [f[0] for f in findings if f[1] == target and not f[0].startswith("HSH")]
    shutil.rmtree(reg)
    return (codes[0] if codes else "none"), run.max_rss


def main() -> int:
    """Open every input in a child; print its rule and peak RSS; exit 1 if one passes the bound."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--validate", action="store_true", help="also run validate on a registry holding each input")
    args = ap.parse_args()
    worst, worst_validate = 0, 0
    with tempfile.TemporaryDirectory(prefix="zip-rss-") as tmp:
        folder = Path(tmp)
        inputs: list[tuple[str, Path, str]] = [(f"case {c.id}", write_case(c, folder), STATE) for c in CASES.values()]
        for bomb in BOMBS.values():
            if bomb.target.endswith(".pth") and not bomb.slow:
                path = folder / f"bomb-{bomb.id}.pth"
                bomb.write(path)
                inputs.append((f"bomb {bomb.id}", path, bomb.target))
        template = folder / "template"
        if args.validate:
            template.mkdir()
            subprocess.run([sys.executable, "-c", _BUILD, str(template), str(ROOT / "tests" / "support")], check=True)
            print(f"{'input':40} {'open':9} {'peak MB':>7}   {'validate':9} {'peak MB':>7}")
        for label, path, target in inputs:
            run = probe("open", str(path), timeout=120)
            out = run.json()
            code = (out.get("code") if isinstance(out, dict) else "?") or "accepted"
            worst = max(worst, run.max_rss)
            line = f"{label:40} {code:9} {run.max_rss / MB:7.1f}"
            if args.validate:
                finding, peak = _validate_peak(template / "reg", folder, path, target)
                worst_validate = max(worst_validate, peak)
                line += f"   {finding:9} {peak / MB:7.1f}"
            print(line)
    print(f"largest peak, open_checkpoint: {worst / MB:.1f} MB over {len(inputs)} inputs (bound {BOUND // MB} MB)")
    if args.validate:
        print(f"largest peak, validate: {worst_validate / MB:.1f} MB over {len(inputs)} inputs")
    return 0 if max(worst, worst_validate) < BOUND else 1


if __name__ == "__main__":
    raise SystemExit(main())
