"""The safe reader's rules: PTH001–PTH022 (checkpoint archives: a .pth is a torch zip archive that torch.load and
rwkv_lightning_cuda read identically, its pickle read without being executed) and LFS001 (a Git LFS
pointer where content should be). They sit here, beside their checks, because the reader decides them:
formats/zipread.py (the archive's structure), formats/unpickle.py (the pickle), formats/ckpt.py (the tensors) raise
:func:`refusal` with the rule's code; engine/facts.py records it as a finding. LFS002, on .gitattributes, is
``checks/lfs.py``'s.
"""

from __future__ import annotations

from rwkv_registry.core.errors import CheckpointError
from rwkv_registry.core.rules import E, Rule, Rulebook

RULES = Rulebook(
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
    Rule(
        "LFS001",
        E,
        "Git LFS pointer where content should be",
        "Fetch the content with `git lfs pull` (or `git lfs pull --include PATH`).",
    ),
)
finding = RULES.finding


def refusal(code: str, message: str, *, hint: str = "", path: str = "") -> CheckpointError:
    """The reader's refusal of a file under rule ``code`` (one of :data:`RULES`, unless ``hint`` is given): its fix
    is the rule's own unless ``hint`` says more."""
    return CheckpointError(code, message, hint=hint or RULES[code].hint, path=path)
