"""Fetch the wheels the GPU machine lacks into ``.whl/`` and check them, before the one device call.

    python bench/wheels.py              # pip download (no dependencies, binaries only) into .whl/, then --check
    python bench/wheels.py --check      # only check: each listed wheel there, readable, one version each

The H200 machine has torch 2.11, triton 3.6 and Python 3.12 but no network (docs/kernels.md): ``bench/h200.sh``
unpacks what ``--wheels .whl`` brings (``bench/checkout.py``), and the device tool carries ``.whl`` with the run
(``run(command="bash bench/h200.sh", carry=[".whl"])``). ``rpds-py`` (of jsonschema) is compiled: it is fetched for
Python 3.12 (the H200) and 3.11 (this project's CPU machines, for ``DRY=1 bash bench/h200.sh``); the others are
pure Python. The check fails (exit 1, naming the wheel and the fix) on a wheel missing, unreadable, of another
version, or of a package that is there twice (two versions unpacked over each other mix their files), and when the
checkout and the wheels together pass the device tool's 64 MiB.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gpu_engine import RWKV_VERSION  # the version the benchmark's table names

REPO = Path(__file__).resolve().parents[1]
CARRY_LIMIT = 64 << 20  # the device tool's limit on the working tree and the carried paths together
PYTHONS = ("3.12", "3.11")  # the H200's Python, and the CPU machines' for the dry run
PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64")


@dataclass(frozen=True)
class Wheel:
    name: str  # as pip takes it
    version: str
    why: str
    compiled: bool = False  # one wheel per Python of PYTHONS


WHEELS = (
    Wheel("rwkv", RWKV_VERSION, "gpu_engine's comparison; the tokenizer's vocabulary for smoke_bench"),
    Wheel("fla-core", "0.6.0", "gpu_engine's fla chunk_rwkv7"),
    Wheel("flash-linear-attention", "0.6.0", "gpu_engine's fla chunk_rwkv7"),
    Wheel("einops", "0.8.2", "fla's"),
    Wheel("jsonschema", "4.26.0", "smoke_bench's case schema"),
    Wheel("jsonschema-specifications", "2025.9.1", "jsonschema's"),
    Wheel("referencing", "0.37.0", "jsonschema's"),
    Wheel("attrs", "26.1.0", "jsonschema's"),
    Wheel("rpds-py", "2026.9.1", "jsonschema's (referencing)", compiled=True),
)


def download(dest: Path) -> int:
    """``pip download`` every wheel of :data:`WHEELS` into ``dest``; pip's exit status (0: all fetched)."""
    dest.mkdir(parents=True, exist_ok=True)
    base = [sys.executable, "-m", "pip", "download", "-q", "--disable-pip-version-check", "--no-deps"]
    base += ["--only-binary=:all:", "--implementation", "cp", "-d", str(dest)]
    for p in PLATFORMS:
        base += ["--platform", p]
    for python in PYTHONS:
        wanted = [f"{w.name}=={w.version}" for w in WHEELS if w.compiled or python == PYTHONS[0]]
        rc = subprocess.run([*base, "--python-version", python, *wanted], check=False).returncode
        if rc:
            return rc
    return 0


def problems(folder: Path, tree_bytes: int) -> list[str]:
    """What is wrong with ``folder`` as the wheels of :data:`WHEELS` (empty: nothing)."""
    if not folder.is_dir():
        return [f"{folder}: no such folder; fix: python bench/wheels.py (fetches the wheels into it)"]
    from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename

    found: dict[str, list[tuple[Path, str, set[str]]]] = {}  # name -> (file, version, interpreter tags)
    for path in sorted(folder.glob("*.whl")):
        try:
            name, version, _, tags = parse_wheel_filename(path.name)
        except InvalidWheelFilename:
            continue  # not a wheel's name: checkout.unpack_wheels skips it too
        found.setdefault(name, []).append((path, str(version), {t.interpreter for t in tags}))
    out = []
    for w in WHEELS:
        wheels = found.get(canonicalize_name(w.name), [])
        versions = sorted({version for _, version, _ in wheels})
        if len(versions) > 1:
            out.append(
                f"{folder}: {w.name} is there in {len(versions)} versions ({', '.join(versions)}), unpacked over "
                f"each other; fix: keep {w.version} only"
            )
        mine = [(path, tags) for path, version, tags in wheels if version == w.version]
        if not mine:
            seen = f" (there: {', '.join(versions)})" if versions else ""
            out.append(f"{folder}: no {w.name} {w.version} wheel{seen}, {w.why}; fix: python bench/wheels.py")
            continue
        if w.compiled:
            for python in PYTHONS:
                tag = "cp" + python.replace(".", "")
                if not any(tag in tags for _, tags in mine):
                    out.append(
                        f"{folder}: no {w.name} {w.version} wheel for Python {python}; fix: python bench/wheels.py"
                    )
        for p, _ in mine:
            try:
                with zipfile.ZipFile(p) as zf:
                    bad = zf.testzip()
            except (OSError, zipfile.BadZipFile) as exc:
                bad = f"{type(exc).__name__}: {exc}"
            if bad:
                out.append(f"{p}: not a readable wheel ({bad}); fix: delete it and run python bench/wheels.py")
    total = tree_bytes + sum(p.stat().st_size for p in folder.glob("*.whl"))
    if total > CARRY_LIMIT:
        out.append(
            f"{folder}: the checkout and the wheels come to {total / 2**20:.1f} MiB, over the device tool's "
            f"{CARRY_LIMIT >> 20} MiB; fix: delete what the run does not need"
        )
    return out


def tree_size(repo: Path = REPO) -> int:
    """Bytes of the files git tracks in ``repo`` (what the device tool sends besides the carried paths)."""
    try:
        names = subprocess.run(
            ["git", "-C", str(repo), "ls-files", "-z"], capture_output=True, check=True, timeout=60
        ).stdout.split(b"\0")
    except (OSError, subprocess.SubprocessError):
        return 0
    total = 0
    for name in filter(None, names):
        try:
            total += (repo / name.decode()).lstat().st_size
        except OSError:
            pass
    return total


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dest", type=Path, default=REPO / ".whl", help="the folder of wheels (default: .whl/)")
    ap.add_argument("--check", action="store_true", help="only check the folder, download nothing")
    args = ap.parse_args(argv)
    if not args.check:
        rc = download(args.dest)
        if rc:
            print(
                f"error: pip download into {args.dest} failed (exit {rc}); fix: see pip's message above",
                file=sys.stderr,
            )
            return 1
    found = problems(args.dest, tree_size())
    for line in found:
        print(f"error: {line}", file=sys.stderr)
    if found:
        return 1
    wheels = sorted(args.dest.glob("*.whl"))
    size = sum(p.stat().st_size for p in wheels)
    print(f'{args.dest}: {len(wheels)} wheels, {size / 2**20:.1f} MiB, ready to carry (carry=[".whl"])')
    return 0


if __name__ == "__main__":
    sys.exit(main())
