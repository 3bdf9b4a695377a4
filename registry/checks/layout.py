"""The layout rules (LAY001–LAY017): what may lie where in a registry, under which names, and how it may be linked."""

from __future__ import annotations

from rwkv_registry.core.rules import E, Rule, Rulebook, W
from rwkv_registry.fs.atomic import CASE_TWIN_HINT, LINK_OUTSIDE_HINT

RULES = Rulebook(
    Rule(
        "LAY001",
        E,
        "unknown entry at the registry root",
        "Only index.json, SHA256SUMS (and SHA256SUMS.sig), README.md, LICENSE (.md, .txt), .gitattributes, "
        ".gitignore, .pre-commit-config.yaml and one directory per base may sit at the root; move or delete "
        "the entry.",
    ),
    Rule(
        "LAY002",
        E,
        "base directory not recorded in index.json",
        "Register it with `rwkv-registry add-base`, or remove the directory.",
    ),
    Rule(
        "LAY003",
        E,
        "base in index.json has no directory",
        "Create `<base>/state` and `<base>/miss` (add-base does), or remove the base from index.json.",
    ),
    Rule(
        "LAY004",
        E,
        "file in a place the layout does not allow",
        "Weights go to <base>/state/<data-version>/<name>.pth (or .safetensors) or "
        "<base>/miss/<data-version>/<group>/adapter-final.pth (the single-file package; a legacy "
        "adapter.json + adapter.pth folder is published with `rwkv-registry add REGISTRY FOLDER …`, which checks "
        "it and writes adapter-final.pth: MIS021), with train.json beside the versions; move or delete the file.",
    ),
    Rule(
        "LAY005",
        E,
        "symbolic link leaving the registry",
        LINK_OUTSIDE_HINT,  # the writers' refusals carry it too (fs/atomic.py)
    ),
    Rule(
        "LAY006",
        E,
        "unsafe recorded path",
        "Record paths relative to the registry root, with `/` separators, without `..` or a leading `/`.",
    ),
    Rule(
        "LAY007", E, "weight file without an entry in index.json", "Register it with `rwkv-registry add`, or delete it."
    ),
    Rule(
        "LAY008",
        E,
        "entry whose file is missing",
        "Restore the file (`git checkout -- PATH`, `git lfs pull`) or remove the entry from index.json.",
    ),
    Rule(
        "LAY009",
        E,
        "entry path does not match its base, method, data version or group",
        "Entry fields and the path must agree: <base>/<method>/<data-version>/…; fix one of them.",
    ),
    Rule(
        "LAY010",
        E,
        "file cannot be read",
        "Check permissions and the file system; the validator needs read access to every file.",
    ),
    Rule(
        "LAY011",
        W,
        "empty directory",
        "Remove the empty directory (git does not track it) or add the weights that belong there.",
    ),
    Rule(
        "LAY012",
        E,
        "interrupted write left behind",
        "A write command was killed; run `rwkv-registry recover PATH` (any write command also recovers): "
        "it completes a journaled write or removes its temporary files.",
    ),
    Rule(
        "LAY013",
        E,
        "a write is in progress",
        "Another rwkv-registry command holds the registry's lock and is writing; wait for it to finish, then "
        "validate again (nothing else was checked: the tree is half-written).",
    ),
    Rule(
        "LAY014",
        E,
        "files look moved or renamed",
        "Files recorded in index.json or SHA256SUMS are missing, and files with the same sha256 sit elsewhere: "
        "published paths never change; move them back (`git mv NEW OLD`), or, if an entry's path in index.json "
        "was edited, restore it (`git checkout -- index.json`). The per-file findings of the move are left out "
        "until then.",
    ),
    Rule(
        "LAY015",
        E,
        "not a regular file or directory",
        "Only regular files and directories are hashed and published (a FIFO, socket or device file is not): delete "
        "it and put the file itself in its place: `rwkv-registry readme PATH` writes README.md, `rwkv-registry sums "
        "PATH` SHA256SUMS, `rwkv-registry init` the .gitattributes it shows; in a git clone, `git checkout -- PATH` "
        "restores a committed one.",
    ),
    Rule(
        "LAY016",
        E,
        "not a registry",
        "Check the path: a registry's root holds index.json, README.md, SHA256SUMS and one directory per base "
        "(<base>/state, <base>/miss). To start one here: `rwkv-registry init PATH`, then `rwkv-registry add-base "
        "PATH BASE_FILE --source OWNER/REPO`; `rwkv-registry demo PATH` builds an example registry.",
    ),
    Rule(
        "LAY017",
        E,
        "names that differ only in letter case or Unicode normalization",
        CASE_TWIN_HINT,  # the writers' refusals carry it too (fs/atomic.py)
    ),
)
finding = RULES.finding
