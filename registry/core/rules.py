"""Every validation rule of the registry, in one place.

A rule has a stable code (never reused, never renumbered), a severity, a one-line
title and a fix hint. Code elsewhere refers to rules by code only and creates
findings with :func:`finding`. ``docs/rules.md`` is generated from this table
(``rwkv-registry rules --markdown``) and a test keeps the two equal.

Code prefixes: LAY layout, SCH JSON and schemas, IDX index consistency, HSH hashes
and SHA256SUMS, PTH checkpoint archives, LFS Git LFS, STA State files, MIS MiSS
adapters, TRN train.json, PRF profiles, RDM README, GIT git history, SIG signatures.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

from rwkv_registry.core.textsafe import MESSAGE_LIMIT, PATH_LIMIT, clip


class Severity(enum.StrEnum):
    """How bad a finding is. Only ``error`` makes ``validate`` exit 1."""

    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


@dataclass(frozen=True)
class Rule:
    """One validation rule."""

    code: str
    severity: Severity
    title: str
    hint: str


@dataclass(frozen=True)
class Finding:
    """One result of a rule on one path (relative to the registry root, POSIX form)."""

    code: str
    severity: Severity
    path: str
    message: str
    hint: str
    extra: dict[str, Any] = field(default_factory=dict, compare=False)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "code": self.code,
            "severity": str(self.severity),
            "path": self.path,
            "message": self.message,
            "hint": self.hint,
        }
        if self.extra:
            out["extra"] = self.extra
        return out


E, W, N = Severity.ERROR, Severity.WARNING, Severity.INFO

_RULES: tuple[Rule, ...] = (
    # --- layout -------------------------------------------------------------------
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
        "Replace the link by the file itself; nothing in the registry may point outside it.",
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
        "Two entries of one directory (`s1.pth` and `S1.pth`, `v1/` and `V1/`, or `é` written as one code point "
        "and as `e` plus a combining accent) are one file on macOS and Windows: a clone there keeps only one of "
        "them, and SHA256SUMS no longer matches. Rename or remove one (`git mv`), then run `rwkv-registry sums "
        "PATH`.",
    ),
    # --- JSON and schemas ---------------------------------------------------------
    Rule(
        "SCH001",
        E,
        "JSON file cannot be parsed",
        "Write UTF-8 JSON without duplicate keys, at most 64 levels deep; `python -m json.tool FILE` "
        "shows where it breaks.",
    ),
    Rule(
        "SCH002",
        E,
        "index.json does not follow its schema",
        "Fix the field named in the message; the schema is schemas/index.schema.json.",
    ),
    Rule(
        "SCH003",
        E,
        "train.json does not follow its schema",
        "Fix the field named in the message; the schema is schemas/train.schema.json.",
    ),
    Rule(
        "SCH004",
        E,
        "index.json or SHA256SUMS missing",
        "Run `rwkv-registry init PATH` for a new registry, or restore the file from git.",
    ),
    Rule(
        "SCH005",
        N,
        "rules skipped because a JSON file does not follow its schema",
        "Fix the schema errors reported for the file (SCH002/SCH003); the skipped rules run again then.",
    ),
    # --- index consistency --------------------------------------------------------
    Rule(
        "IDX001",
        E,
        "duplicate base name or weight id",
        "Give every base a unique name, and every entry and unpublished weight a unique id (they share one id space).",
    ),
    Rule(
        "IDX002",
        E,
        "entry or unpublished weight refers to an unknown base",
        "Add the base first (`rwkv-registry add-base`) or fix the item's `base`.",
    ),
    Rule(
        "IDX003",
        E,
        "entry method does not match the file's content",
        "A file with `blocks.N.att.time_state` tensors is a State, one with `archive/miss.json` a MiSS "
        "adapter; fix the entry's method.",
    ),
    Rule(
        "IDX004",
        W,
        "more than one recommended entry for a base and method",
        "Keep `recommended: true` on one entry per base and method.",
    ),
    Rule(
        "IDX005", E, "two entries record the same path", "Each weight file has exactly one entry; remove the duplicate."
    ),
    Rule(
        "IDX006",
        E,
        "base name differs from its file name",
        "A base directory is named after the base file without .pth, so that the server's base and the "
        "directory can be matched by eye; make `name` and `source.file` agree.",
    ),
    Rule(
        "IDX007",
        W,
        "base superseded by a newer one of its family is still active",
        'Old base directories are never touched: set the older base\'s status to "frozen" (`rwkv-registry '
        "add-base` does so unless given --keep-previous-active) and run `rwkv-registry sums`.",
    ),
    Rule(
        "IDX008",
        E,
        "score or step count inconsistent",
        "solved <= total (per category too), one run score per run, step <= total_steps, and a comparison's "
        "`against` names an entry or unpublished weight of the index.",
    ),
    Rule(
        "IDX009",
        W,
        "comparison p-value does not match its wins and losses",
        "p_value is the exact two-sided McNemar (sign) test of wins against losses; `rwkv-registry compare` "
        "computes it from result files.",
    ),
    Rule(
        "IDX010",
        E,
        "two bases with the same sha256",
        "One base file is registered under two names; keep one base (its name is the file name without .pth) "
        "and move the other's weights under it, or fix the sha256 that was copied by mistake.",
    ),
    Rule(
        "IDX011",
        W,
        "two entries hold the same bytes",
        "The same weight file is published twice under two names; remove the duplicate entry and its file "
        "unless the copy is deliberate (a State copied to another base is only valid after retraining on it).",
    ),
    Rule(
        "IDX012",
        E,
        "two MiSS entries of one base register under the same adapter id",
        "The server keeps one adapter per adapter_id (the entry's `adapter_id`, else its `id`): registering the "
        "second file replaces the first, and requests naming it get the wrong weights. Give each adapter of a base "
        "its own adapter_id.",
    ),
    Rule(
        "IDX013",
        W,
        "score does not match its solved/total, its run scores or its categories",
        "A percent score is 100 × solved / total, a points score equals solved, the headline is the mean of "
        "`run_scores`, and categories covering the whole benchmark add up to solved and total (each within the "
        "rounding of the numbers recorded); fix the number that was copied wrong.",
    ),
    Rule(
        "IDX014",
        W,
        "paired comparison against a weight scored on another day or backend",
        "A per-question comparison (+wins/−losses) is only meaningful within one run of the benchmark: the weight "
        "named in `against` must have a score on the same benchmark, date and backend (scores of other days or "
        "backends, or of another base, compare only loosely); record that score, or rerun both on the same day.",
    ),
    Rule(
        "IDX015",
        W,
        "a LICENSE file sits at the root but index.json records no licence",
        'index.json\'s registry.license is null ("no licence chosen yet") while LICENSE exists: record the licence '
        "the file grants (an SPDX id such as apache-2.0, or its name), or remove the file if none is chosen yet.",
    ),
    Rule(
        "IDX016",
        W,
        "one data version of one method records two different data files",
        "Training data does not depend on the base: retraining on a new base uses the same data version, whose "
        "sha256 and row count are then the same in every base directory (State and MiSS data are rendered apart, "
        "so only one method is compared). Fix the sha256 or rows copied wrong, or give re-rendered data a new "
        "version.",
    ),
    Rule(
        "IDX017",
        E,
        "score measured on another adapter file",
        "A score's content_version is what the inference server answered when the adapter was registered for that "
        "run; it must be the content_version of the entry's file (index.json miss.content_version, embedded in "
        "archive/miss.json). Another value means the score belongs to another file (an earlier export): move the "
        "score to that file's entry or to `unpublished`, or measure this file again. A State or a base has no "
        "content_version: leave it null.",
    ),
    Rule(
        "IDX018",
        W,
        "base vocabulary file does not fit its architecture's vocab_size",
        "A known vocabulary file fixes the embedding's row count (rwkv_vocab_v20230424.txt, the RWKV world "
        "vocabulary: 65536 rows). Record the vocabulary the base was trained with (`vocab` in its bases[] item), or "
        "check the base file: its vocab_size is read from emb.weight.",
    ),
    Rule(
        "IDX019",
        W,
        "registry.server names an rwkv_lightning older than v1.8.1",
        "Seed 000: the weights need an rwkv_lightning inference server v1.8.1 or later (State upload and "
        "/v1/adapters); a pre-release of 1.8.1 is older. Fix the version in index.json's registry.server, e.g. "
        '"rwkv_lightning >= v1.8.1 (State upload, /v1/adapters)".',
    ),
    Rule(
        "IDX020",
        W,
        "two scores of one weight on the same benchmark, date and backend",
        "One run of a benchmark is one score: merge the two into one (their mean as `score`, each run in "
        "`run_scores`, `runs` their count), or record the backend that differs; `rwkv-registry score --replace` "
        "replaces a score recorded wrong (docs/scores.md).",
    ),
    # --- hashes ---------------------------------------------------------------------
    Rule(
        "HSH001",
        E,
        "sha256 differs from index.json",
        "The file or its record in index.json changed after it was registered (`git status`, `git diff "
        "index.json` tell which): restore the changed one from git (`git checkout -- PATH` or "
        "`git checkout -- index.json`); new weights get a new entry (published weights never change).",
    ),
    Rule(
        "HSH002",
        E,
        "size differs from index.json",
        "The file changed or is truncated; restore it (`git lfs pull`, `git checkout -- PATH`).",
    ),
    Rule(
        "HSH003",
        E,
        "SHA256SUMS line malformed",
        "`sha256sum -c` cannot read the line either: each line is `<64 hex>  <path>` (or the forms sha256sum also "
        "reads: `<64 hex> *<path>`, `SHA256 (<path>) = <64 hex>`); regenerate it with `rwkv-registry sums PATH`.",
    ),
    Rule("HSH004", E, "file not listed in SHA256SUMS", "Regenerate SHA256SUMS with `rwkv-registry sums PATH`."),
    Rule(
        "HSH005",
        E,
        "SHA256SUMS lists a file that does not exist",
        "Regenerate SHA256SUMS with `rwkv-registry sums PATH`, or restore the file.",
    ),
    Rule(
        "HSH006",
        E,
        "SHA256SUMS hash differs from the file",
        "Restore the file from git, or, if the change is intended and the file is not published, "
        "regenerate SHA256SUMS with `rwkv-registry sums PATH`.",
    ),
    Rule(
        "HSH007",
        W,
        "SHA256SUMS is not in canonical form",
        "`sha256sum -c` reads it and every listed hash is checked, but `rwkv-registry sums PATH` rewrites it "
        "canonical: `<64 hex>  <path>` lines (lower-case hex, two spaces), sorted, LF line ends, no self entry.",
    ),
    # --- checkpoint archives --------------------------------------------------------
    Rule(
        "PTH001",
        E,
        "not a readable zip archive",
        "The file is truncated or not a torch checkpoint; re-export it with torch.save or the trainer.",
    ),
    Rule("PTH002", E, "zip entry fails its CRC-32 check", "The file is corrupt; re-download or re-export it."),
    Rule(
        "PTH003",
        E,
        "pickle refers to a global outside the allow-list",
        "Only tensors saved by torch.save or rwkv_lightning_cuda are accepted; the file may try to run "
        "code: do not load it, re-export the tensors from a trusted source.",
    ),
    Rule(
        "PTH004",
        E,
        "pickle uses an opcode outside the allow-list",
        "Re-save the tensors with torch.save(dict_of_tensors) or the trainer's own writer.",
    ),
    Rule(
        "PTH005",
        E,
        "TorchScript archive instead of a tensor checkpoint",
        "Save a plain dict of tensors (torch.save(model.state_dict())), not a scripted module.",
    ),
    Rule("PTH006", E, "tensor storage missing or out of bounds", "The archive is inconsistent; re-export it."),
    Rule("PTH007", E, "duplicate tensor name", "Each tensor name must appear once; re-export the checkpoint."),
    Rule(
        "PTH008",
        E,
        "unsafe or unexpected zip entry name",
        "Entries must share one prefix folder without `..`, `\\` or absolute paths; re-export the file.",
    ),
    Rule(
        "PTH009",
        E,
        "pickle structure is not a flat dict of tensors",
        "Save a flat dict name→tensor (torch.save(state_dict)).",
    ),
    Rule(
        "PTH010",
        E,
        "archive exceeds a resource bound",
        "The file declares more entries, bytes or nesting than any weight file needs; it is rejected unread.",
    ),
    Rule(
        "PTH011",
        E,
        "unsupported zip feature",
        "torch archives are stored (uncompressed), unencrypted, single-disk zips; re-export the file.",
    ),
    Rule(
        "PTH012",
        E,
        "safetensors header invalid",
        "Re-export with safetensors.torch.save_file (a State's header is a few KB; rwkv-registry reads headers of "
        "up to 8 MiB and 16,384 tensors: docs/security.md).",
    ),
    Rule(
        "PTH013",
        E,
        "unsupported tensor dtype or layout",
        "Weights are bfloat16, float16 or float32, contiguous, little-endian; convert before saving.",
    ),
    Rule(
        "PTH014",
        E,
        "zip end record is not the last 22 bytes of the file",
        "torch.save and rwkv_lightning_cuda end the file with an end record without comment; a comment or bytes "
        "after it (a second archive, junk) make zip readers pick different end records: torch's miniz takes the "
        "last signature. Re-export the file; do not append to it.",
    ),
    Rule(
        "PTH015",
        E,
        "zip entry names differ only in case",
        "torch looks entries up ignoring case (miniz), the server exactly: with data.pkl and DATA.PKL each may "
        "read another one. Re-export the file with torch.save or the trainer.",
    ),
    Rule(
        "PTH016",
        E,
        "zip extra field tag repeated in one header",
        "torch's miniz and the server read the first copy of a repeated field (a zip64 size or offset), other "
        "readers the last; no writer repeats one. Re-export the file.",
    ),
    Rule(
        "PTH017",
        E,
        "zip bytes that no entry owns",
        "Every byte must belong to a local header, its name, torch's padding, the data, its data descriptor, "
        "the central directory or an end record: bytes between entries, comments, unknown extra fields or "
        "descriptors nobody announced can hide a second file that another reader finds. Re-export the file.",
    ),
    Rule(
        "PTH018",
        E,
        "zip local header or data descriptor disagrees with the central directory",
        "A reader that walks the local headers (a streaming unzip) would read another name, size or entry than "
        "torch, which reads the directory. Re-export the file.",
    ),
    Rule(
        "PTH019",
        E,
        "archive member that neither torch.save nor the trainer writes",
        "Only data.pkl, byteorder, version, .data/version, .format_version, .storage_alignment, "
        ".data/serialization_id, data/<n> and, as archive/miss.json only, miss.json belong in a weight file; "
        "anything else is a file smuggled in for another reader (the server reads a MiSS manifest only as "
        "archive/miss.json). Re-export the tensors with torch.save or the trainer (rwkv_miss_tune writes "
        "archive/miss.json).",
    ),
    Rule(
        "PTH020",
        E,
        "torch archive without a version record",
        'torch.load refuses it ("Expected hasRecord(version)"); every torch.save and rwkv_lightning_cuda file '
        "has <prefix>/version. Re-export the file.",
    ),
    Rule(
        "PTH021",
        E,
        "tensor storage on a device torch does not load it from",
        "torch.load gives 'meta' storages no data (the server reads the bytes anyway) and needs the device for "
        "others; save CPU (or CUDA) tensors: torch.save({k: v.cpu() for k, v in state.items()}, path).",
    ),
    Rule(
        "PTH022",
        E,
        'zip "version needed to extract" that no producer writes',
        "torch writes 0, rwkv_lightning_cuda and Python's zipfile 20 (45 for a zip64 entry); Python's zipfile "
        "refuses an archive needing more than 6.3, torch never reads the field, so readers disagree on the file. "
        "Re-export it with torch.save or the trainer.",
    ),
    # --- git LFS ----------------------------------------------------------------------
    Rule(
        "LFS001",
        E,
        "Git LFS pointer where content should be",
        "Fetch the content with `git lfs pull` (or `git lfs pull --include PATH`).",
    ),
    Rule(
        "LFS002",
        E,
        ".gitattributes does not route weights through Git LFS",
        "Add `*.pth filter=lfs diff=lfs merge=lfs -text` and the same for `*.safetensors` "
        "(`rwkv-registry init` writes them).",
    ),
    # --- State ------------------------------------------------------------------------
    Rule(
        "STA001",
        E,
        "State tensor names are not exactly blocks.0…L-1.att.time_state",
        "A State file holds one `blocks.N.att.time_state` per layer of its base (N = 0 … L-1, each once); "
        "re-export it from rwkv_state_tune for this base.",
    ),
    Rule(
        "STA002",
        E,
        "State tensor shape does not match the base",
        "Each tensor is [H, 64, 64] with H = n_embd / 64 of the base; the file was trained for another base.",
    ),
    Rule(
        "STA003",
        E,
        "State dtype is not bfloat16 or float32",
        "Convert the state to bfloat16 or float32 before publishing.",
    ),
    Rule(
        "STA004",
        E,
        "State holds non-finite values",
        "NaN or Inf in the state: training diverged; use an earlier checkpoint.",
    ),
    Rule(
        "STA005",
        E,
        "State file larger than the server's 512 MiB upload limit",
        "rwkv_lightning_cuda refuses a State upload over 512 MiB; a State of a released base is far smaller "
        "(7.2B bf16: 16 MiB): keep only the blocks.N.att.time_state tensors, in bfloat16 or float32.",
    ),
    Rule(
        "STA006",
        W,
        "State file holds tensors besides blocks.N.att.time_state",
        "The server ignores them, but RWKV-PEFT's merge_state.py copies every key of a State into the base; "
        "save only the blocks.N.att.time_state tensors.",
    ),
    Rule(
        "STA007",
        W,
        "State file in safetensors format",
        "rwkv_lightning_cuda's /v1/state/upload reads only torch .pth archives, and RWKV-PEFT loads States with "
        "torch.load; publish the State as a .pth written by torch.save or the trainer.",
    ),
    # --- MiSS -------------------------------------------------------------------------
    # Each rule is one refusal of rwkv_lightning_cuda's loader (Alic-Li/rwkv_lightning_cuda src/miss/adapter.cpp
    # load_package, quoted in the title or the message); docs/miss.md maps every server rule to its code and test.
    Rule(
        "MIS001",
        E,
        "MiSS adapter without archive/miss.json (PTH has no embedded MiSS metadata)",
        "Export the adapter with rwkv_miss_tune's single-file writer, which embeds the manifest as the zip entry "
        "archive/miss.json (the only name the server looks up); a legacy adapter.json + adapter.pth folder is "
        "published with `rwkv-registry add REGISTRY FOLDER …`, which embeds its adapter.json.",
    ),
    Rule(
        "MIS002",
        E,
        "MiSS manifest larger than 8 MiB (adapter manifest too large)",
        "The server refuses manifests (archive/miss.json, adapter.json) over 8 MiB; re-export the adapter with "
        "rwkv_miss_tune, whose manifest lists only the targets.",
    ),
    Rule(
        "MIS003",
        E,
        "miss.json invalid (unsupported adapter format, invalid/duplicate adapter target, adapter target name "
        "mismatch)",
        'The manifest must be UTF-8 JSON with format_version 1, method "miss", dtype "bfloat16" or "float16", '
        'layout "modulo_rank_zero_pad", kind "inference_adapter", and per target name "blocks.L.<target>.D" (the '
        "tensor's name with its .D suffix), layer 0…1023, in_features and shape [out, rank] (1…2^20) as "
        "schemas/miss.schema.json says; re-export the adapter with rwkv_miss_tune rather than editing it.",
    ),
    Rule(
        "MIS004",
        E,
        "MiSS rank out of range (invalid adapter metadata)",
        "Write rank as a JSON integer 1…1024 (the server's limit), the second size of every D tensor; re-export.",
    ),
    Rule(
        "MIS005",
        E,
        "MiSS alpha or scale not a finite float32 (invalid adapter metadata)",
        "Write alpha and scale as JSON numbers (not strings or booleans) that are finite as float32, the type the "
        "server reads them as (|x| < 3.4e38); scale = alpha / rank.",
    ),
    Rule(
        "MIS006",
        E,
        "MiSS hash field is not 64 hex characters (invalid adapter metadata)",
        "base_fingerprint is the sha256 of the base file, content_version the adapter's digest: both 64 lower-case "
        "hex characters; re-export the adapter with rwkv_miss_tune.",
    ),
    Rule(
        "MIS007",
        E,
        "MiSS targets empty or duplicated (invalid adapter metadata, invalid/duplicate adapter target)",
        "List each (layer, target) once in targets, and at least one; re-export the adapter.",
    ),
    Rule(
        "MIS008",
        E,
        "MiSS target tensor missing or of the wrong dtype or shape (adapter tensor shape/dtype mismatch)",
        "Each target needs a tensor blocks.L.<target>.D of the manifest's dtype and shape [out, rank] (in a "
        "training checkpoint, blocks.L.<target>.D.master in float32); re-export the adapter with rwkv_miss_tune.",
    ),
    Rule(
        "MIS009",
        E,
        "MiSS tensor count differs from the target count (adapter tensor count mismatch)",
        "An adapter holds exactly one D tensor per target and nothing else (a training checkpoint 4 per target and "
        "initial_state); remove the extra tensors or list them in targets, and re-export.",
    ),
    Rule(
        "MIS010",
        E,
        "MiSS value non-finite or beyond ±65504 (nonfinite adapter weight, adapter weight overflows FP16, adapter "
        "cannot be represented by the FP16 inference runtime)",
        "The server refuses NaN, Inf and |x| > 65504; training diverged: publish an earlier checkpoint's adapter, or "
        "retrain with a lower learning rate.",
    ),
    Rule(
        "MIS011",
        E,
        "content_version does not match the file (adapter content digest mismatch)",
        "The embedded content_version is not the sha256 of the manifest and D values; re-export the "
        "adapter, never edit miss.json by hand.",
    ),
    Rule(
        "MIS012",
        E,
        "content_version differs from index.json",
        "index.json must record the content_version embedded in the file; fix index.json (re-run add).",
    ),
    Rule(
        "MIS013",
        E,
        "base_fingerprint is not the sha256 of the base holding the file",
        "The adapter was trained on another base file; the server refuses it. Move it under the base it "
        "was trained on, or retrain on this base. When GIT007 fires for the base and the fingerprint is its "
        "published sha256, the edit of index.json is the cause: restore the sha256 instead.",
    ),
    Rule(
        "MIS014",
        E,
        "MiSS target does not fit the base architecture",
        "Target out/in sizes must match the base (n_embd, ffn size); the adapter was made for another model size: "
        "add it under the base it was trained on.",
    ),
    Rule(
        "MIS015",
        E,
        "index.json MiSS fields differ from the manifest",
        "rank, alpha, scale and dtype in index.json must equal the manifest; re-run `rwkv-registry add`.",
    ),
    Rule(
        "MIS016",
        E,
        "unknown MiSS target (invalid/duplicate adapter target)",
        "Targets are att.receptance|key|value|output.weight, ffn.key.weight and ffn.value.weight of layers 0…L-1; "
        "remove the others from targets and re-export.",
    ),
    Rule(
        "MIS017",
        W,
        "MiSS scale is not alpha / rank",
        "The server uses the manifest's scale; re-export if alpha or rank was edited.",
    ),
    Rule(
        "MIS018",
        E,
        "a rwkv_miss_tune training checkpoint (training.pth), not the inference adapter",
        "Publish the adapter-final.pth that rwkv_miss_tune writes when training ends, not checkpoint-N/training.pth: "
        "the checkpoint is for resuming (fp32 masters, gradients, Adam moments: 8 times the adapter's bytes).",
    ),
    Rule(
        "MIS019",
        E,
        'miss.json tensor_source is not "D" or "master" (unsupported adapter tensor source)',
        'Remove tensor_source (an adapter\'s default is "D") or write "D"; only a training checkpoint says "master".',
    ),
    Rule(
        "MIS020",
        W,
        "MiSS D payload over the server's default adapter budgets",
        "Start the server with a larger RWKV_ADAPTER_RAM_MIB (default 1024), RWKV_ADAPTER_GPU_MIB (512) or "
        "RWKV_ADAPTER_STAGING_MIB (128), in MiB, or train with a smaller rank or fewer targets.",
    ),
    Rule(
        "MIS021",
        E,
        "legacy two-file MiSS package (adapter.json + adapter.pth) inside the registry",
        "Publish it with `rwkv-registry add REGISTRY FOLDER …` from outside the registry: add checks it with the "
        "server's rules and writes the single-file adapter-final.pth (same tensors and content_version, its "
        "adapter.json embedded); then delete the folder.",
    ),
    Rule(
        "MIS022",
        E,
        "checkpoint.json of a legacy training checkpoint refused by the server (invalid legacy MiSS checkpoint)",
        'The server needs kind "miss_training_checkpoint", tensor_digest the sha256 of training.pth, and config '
        "rank, alpha and base_fingerprint; keep the checkpoint.json the trainer wrote beside its training.pth.",
    ),
    # --- train.json ---------------------------------------------------------------------
    Rule(
        "TRN001",
        E,
        "data-version directory without train.json",
        "Write train.json beside the weights (trainer, version, hyper-parameters, command, data sha256).",
    ),
    Rule(
        "TRN002",
        E,
        "rwkv_lightning_cuda trainer (rwkv_state_tune, rwkv_miss_tune) older than v1.8.1",
        "Builds before v1.8.1 (commit 47df608, `segments` mask) put loss on the whole prompt; retrain with "
        "v1.8.1 or later.",
    ),
    Rule(
        "TRN003",
        E,
        "train.json data version or sha256 disagrees with the entries",
        "data.version, data.sha256 and data.rows must equal the entries of that directory and its name.",
    ),
    Rule(
        "TRN004",
        E,
        "MiSS group without its run in train.json, or run without group",
        "train.json `runs` lists one item per group sub-folder, with its learning rates and times.",
    ),
    Rule(
        "TRN005",
        E,
        "train.json method differs from its directory",
        '`method` is "state" under state/ and "miss" under miss/.',
    ),
    Rule("TRN006", N, "trainer build commit not recorded", "Record trainer.commit for new training runs."),
    Rule(
        "TRN007",
        E,
        "trainer does not match the method",
        "A State is trained with rwkv_state_tune and a MiSS adapter with rwkv_miss_tune; fix trainer.name, or "
        "move the weights under the right method.",
    ),
    Rule(
        "TRN008",
        E,
        "train.json rank or alpha differs from the MiSS adapters of its directory",
        "hyperparameters.rank and .alpha must be those the adapters were trained with (their miss.json, which "
        "index.json records): fix train.json, or the adapters come from another run.",
    ),
    Rule(
        "TRN009",
        W,
        "weight name states a rank, learning rate, epoch count or step that its records contradict",
        "Names like r16-lr2e-5-e2 (MiSS group) or v141b-s1224 (State, step 1224) are read by users choosing a file: "
        "they must agree with the adapter's rank (index.json miss.rank), its run's lr and epochs in train.json, and "
        "the entry's step; rename the weights before they are published, or fix the record that was copied wrong.",
    ),
    Rule(
        "TRN010",
        W,
        "train.json command line names another base's file",
        "The command line of a train.json under one base names another base's file (registered or not) and not "
        "its own: the weights were trained on that file, or copied from its directory without retraining (a State "
        "then loads but is not valid; a MiSS adapter is refused). Retrain on this base and record the command "
        "that did so.",
    ),
    Rule(
        "TRN011",
        W,
        "an entry's total_steps differs from the step count of its train.json",
        "index.json total_steps (the State's \"step 1224 of 1374\", a MiSS run's step count) is the number of "
        "optimizer steps the training ran, which train.json records as hyper-parameter `steps` (a MiSS run's own "
        "`steps` first): fix the one copied wrong.",
    ),
    Rule(
        "TRN012",
        E,
        "train.json says training finished before it started",
        "`started` and `finished` (the whole training's, and each run's in `runs`) are when it began and ended, "
        "RFC 3339 with an offset: one of them was copied wrong, the two are swapped, or an offset is missing or "
        "wrong (08:00+08:00 is 00:00Z); fix the time in train.json.",
    ),
    Rule(
        "TRN013",
        W,
        "train.json key that is no field of it but close to one",
        "train.json may hold more keys than its schema names (schemas/train.schema.json), so a misspelt field is "
        "not an error, and what it records is not read where the field is: rename the key to the field named in "
        'the message, or give a key of your own an "x-" prefix.',
    ),
    # --- profiles --------------------------------------------------------------------------
    Rule(
        "PRF001",
        E,
        "MiSS entry with a non-thinking prompt profile",
        "MiSS adapters were trained with thinking and must run with profile g1k-think (without it they score "
        "clearly worse).",
    ),
    Rule(
        "PRF002",
        W,
        "State entry with a thinking prompt profile",
        "State files were trained without thinking; use profile g1k.",
    ),
    Rule(
        "PRF003",
        E,
        "entry names a sampling preset RWKV-Agent does not define",
        "An entry's `sampling` must be a preset of RWKV-Agent's internal/samplingpreset/presets.go: greedy, "
        "g1k-agent, g1k-agent-fast, g1k-stable or backend (docs/profiles.md lists their values; the weights of "
        "seed 000 were scored with g1k-agent, the default of `add --sampling`). Fix the name in index.json.",
    ),
    # --- README ----------------------------------------------------------------------------
    Rule(
        "RDM001",
        E,
        "README.md missing or without generated sections",
        "README.md missing: `rwkv-registry readme PATH` writes it. Markers missing: put back "
        "`<!-- rwkv-registry:bases:begin -->`…`end` and `<!-- rwkv-registry:sections:begin -->`…`end`, or run "
        "`rwkv-registry readme PATH --reset` (rebuilds README.md from the skeleton, DROPPING your own text: back "
        "it up first). Not UTF-8: save it as UTF-8.",
    ),
    Rule(
        "RDM002",
        E,
        "README generated section out of date",
        "Regenerate it with `rwkv-registry readme PATH` (add-base and add keep it in step).",
    ),
    # --- git -------------------------------------------------------------------------------
    Rule(
        "GIT001",
        E,
        "published file modified",
        "Files under a base directory never change once committed; restore it "
        "(`git checkout HEAD -- PATH`) and publish the new weights under a new name or data version.",
    ),
    Rule(
        "GIT002",
        E,
        "published file deleted",
        "Old base directories are never touched; restore it with `git checkout HEAD -- PATH`.",
    ),
    Rule(
        "GIT003",
        E,
        "new file under a frozen or superseded base",
        "A frozen base, or one that a newer base of its family has superseded, gets no new files (its empty "
        ".gitkeep placeholders aside); add the weights under the newest base.",
    ),
    Rule(
        "GIT004",
        W,
        "git history unavailable",
        "Immutability could not be checked; run inside a git clone with git installed.",
    ),
    Rule(
        "GIT005",
        E,
        "frozen base reopened",
        "A frozen base stays frozen once committed (reopened, its old directory could take new files in a later "
        'commit): set its status back to "frozen" in index.json, and train on the newest base of its family '
        "(`rwkv-registry add-base` for a new one).",
    ),
    Rule(
        "GIT006",
        E,
        "git history unreadable in a git work tree",
        "The registry is in a git work tree, but git cannot read its history, so immutability (GIT001–GIT003, "
        "GIT005, GIT007) was not checked: install git or put it on PATH (`git --version`); give the user running "
        "validate read access to .git (`ls -l .git/objects`); when "
        "git says 'dubious ownership' (a clone owned by another user, as in CI containers), mark it safe with "
        "`git config --global --add safe.directory PATH`; or repair the object store (`git fsck`; clone the "
        "repository again if objects are missing).",
    ),
    Rule(
        "GIT007",
        E,
        "identity of a published base changed",
        "A base's sha256, size and file name say which base file its weights were trained on (a State loads on "
        "any base of its size, so nothing else checks it): once committed they never change. Restore the "
        "recorded values in index.json (`git diff index.json` shows them); a different base file is a new base: "
        "`rwkv-registry add-base` with that file, and retrain the weights on it.",
    ),
    # --- signatures (SHA256SUMS.sig) -----------------------------------------------------------
    Rule(
        "SIG001",
        E,
        "SHA256SUMS is not signed although keys are trusted",
        "Sign it with `rwkv-registry sign PATH --key KEY`, or drop the trusted keys if the registry is not signed.",
    ),
    Rule(
        "SIG002",
        E,
        "signature does not verify: SHA256SUMS changed after signing",
        "Find out who changed SHA256SUMS and why; if the change is yours, run `rwkv-registry sums PATH` "
        "and sign again with `rwkv-registry sign PATH --key KEY`.",
    ),
    Rule(
        "SIG003",
        E,
        "SHA256SUMS signed by an untrusted key",
        "Sign with a trusted key, or trust this key (`rwkv-registry sign PATH --key KEY --trust`, or --pubkey).",
    ),
    Rule(
        "SIG004",
        E,
        "SHA256SUMS.sig malformed or truncated",
        "Sign again with `rwkv-registry sign PATH --key KEY` (it rewrites SHA256SUMS.sig).",
    ),
)

RULES: dict[str, Rule] = {r.code: r for r in _RULES}

# MIS013's hint when GIT007 shows that the base's sha256, not the adapter, changed (Validator.blame_the_base_edit)
MIS013_BY_BASE_EDIT = (
    "The adapter is where it belongs: its base's sha256 was changed in index.json after it was published (see "
    "GIT007). Restore the published sha256 (`git diff index.json`); do not move or retrain the adapter."
)


def finding(code: str, path: str, message: str, *, hint: str | None = None, **extra: Any) -> Finding:
    """Build a finding of rule ``code`` on ``path`` (registry-relative, POSIX)."""
    rule = RULES[code]
    # a name quoted whole (a 20 MB tensor name, a path of SHA256SUMS) is cut here at the latest: no finding is
    # megabytes long, whatever it quotes (the quoting sites clip each name to 200 characters: textsafe.clip)
    return Finding(code, rule.severity, clip(path, PATH_LIMIT), clip(message, MESSAGE_LIMIT), hint or rule.hint,
                   dict(extra))  # fmt: skip


# Where the registry decides otherwise than rwkv_lightning_cuda's loader, on purpose: (what, codes, why, where
# the server's rule and the test are). Listed under the table of docs/rules.md.
DELIBERATE_DIFFERENCES: tuple[tuple[str, str, str, str], ...] = (
    (
        "JSON the server's JsonCpp also reads: comments, trailing commas, text after the value, duplicate keys",
        "SCH001, MIS003",
        "no producer writes them, a comment would be hashed, and readers disagree on duplicates",
        "miss.md#deliberate-exceptions, jsoncpp.md",
    ),
    (
        "`rank`, `layer`, `in_features`, `shape` given as `16.0` or `true` (JsonCpp's `asInt()` takes them)",
        "MIS003, MIS004",
        "the trainer writes integers; a real or a bool there is a hand edit that may mean something else",
        "miss.md#deliberate-exceptions",
    ),
    (
        "a manifest `shape` of more than two sizes (the server reads the first two)",
        "MIS008",
        "a third size has no meaning",
        "miss.md#deliberate-exceptions",
    ),
    (
        "hash fields in upper-case or non-hex 64-character strings (the server checks the length)",
        "MIS006",
        "no such string can equal the base's sha256 or the computed digest: the server would refuse it at use",
        "miss.md#deliberate-exceptions",
    ),
    (
        "a MiSS training checkpoint (`training.pth`, tensor_source master) at an adapter's place",
        "MIS018",
        "the server loads it, but it is 8 times the adapter and carries the optimizer state; publish adapter-final.pth",
        "miss.md#training-checkpoints",
    ),
    (
        "a State holding NaN or Inf (the server loads it)",
        "STA004",
        "both trainers refuse to write one, and every token generated with it would be NaN",
        "state-files.md",
    ),
    (
        "`blocks.01.att.time_state` (the server's `stoi` reads layer 1)",
        "STA001",
        "no producer writes it, and torch consumers look layer 1 up as `blocks.1.att.time_state`",
        "state-files.md",
    ),
    (
        "a strided tensor (`torch.save` of a transposed view; the server walks the strides)",
        "PTH013",
        "no producer writes one; save `.contiguous()`",
        "state-files.md",
    ),
    ("a State file name of 129 to 180 characters", "LAY004", "the layout's names stay portable", "state-files.md"),
    (
        "a `.safetensors` State (the server's upload opens torch zips only and refuses it)",
        "STA007 (warning)",
        "accepted with a warning, the one case where the registry keeps what the server refuses: a registry feature "
        "for torch consumers",
        "state-files.md",
    ),
    (
        "zip archives torch's miniz or the server's PthArchive would still open: a comment or second end record, "
        "names equal but for case, a repeated extra field, bytes no entry owns, members torch does not write",
        "PTH014-PTH019",
        "readers disagree on such files; what the registry accepts, torch and the server read identically",
        "security.md",
    ),
)


def rules_markdown() -> str:
    """docs/rules.md: the rules table, generated from :data:`RULES`, and :data:`DELIBERATE_DIFFERENCES`."""
    lines = [
        "# Validation rules",
        "",
        "Generated by `rwkv-registry rules --markdown` from `registry/core/rules.py`; do not edit by hand.",
        "",
        "| code | severity | rule | fix |",
        "|---|---|---|---|",
    ]
    for r in _RULES:
        hint = r.hint.replace("|", "\\|")
        title = r.title.replace("|", "\\|")
        lines.append(f"| {r.code} | {r.severity} | {title} | {hint} |")
    lines += [
        "",
        "## Deliberate differences from the server",
        "",
        "The registry refuses what no real producer writes even where rwkv_lightning_cuda's loader would take it, "
        "and accepts nothing the server refuses but the one case marked below. Each has its test, named in the "
        "document linked.",
        "",
        "| what | code | why | details |",
        "|---|---|---|---|",
    ]
    for what, code, why, where in DELIBERATE_DIFFERENCES:
        links = ", ".join(f"[{w.strip()}]({w.strip()})" for w in where.split(","))
        lines.append(f"| {what} | {code} | {why} | {links} |")
    return "\n".join(lines) + "\n"
