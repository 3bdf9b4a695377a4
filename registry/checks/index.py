"""The index.json consistency rules (IDX001–IDX020): ids, bases, paths, scores and what they
record against each other."""

from __future__ import annotations

from rwkv_registry.core.rules import E, Rule, Rulebook, W

RULES = Rulebook(
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
)
finding = RULES.finding
