"""The generated sections of the registry's README.md.

Two regions between HTML comment markers are generated from index.json and nothing else; the
rest of the README is the publisher's own text. ``validate`` regenerates both regions in memory
and reports RDM002 when the file differs; ``add-base``, ``add`` and ``rwkv-registry readme``
rewrite them.
"""

from __future__ import annotations

from typing import Any

BASES_BEGIN = "<!-- rwkv-registry:bases:begin -->"
BASES_END = "<!-- rwkv-registry:bases:end -->"
SECTIONS_BEGIN = "<!-- rwkv-registry:sections:begin -->"
SECTIONS_END = "<!-- rwkv-registry:sections:end -->"
MARKERS = ((BASES_BEGIN, BASES_END), (SECTIONS_BEGIN, SECTIONS_END))


def _cell(value: Any) -> str:
    if value is None or value == "":
        return "—"
    return str(value).replace("|", "\\|").replace("\n", " ")


def recorded_num(x: Any) -> str:
    """A score as recorded: a whole float keeps its ``.0`` (``46.0``, ``25.0``: means of runs, written with
    one decimal), an integer stays whole (``41``), anything else as ``str``."""
    if isinstance(x, float) and x.is_integer():
        return f"{x:.1f}"
    return str(x)


def render_bases_table(index: dict[str, Any]) -> str:
    lines = [
        "| Base directory | Source | Base sha256 | Vocabulary | Architecture | Status |",
        "|---|---|---|---|---|---|",
    ]
    for b in index.get("bases", []):
        arch = b.get("architecture") or {}
        shape = f"{arch.get('n_layer')}×{arch.get('n_embd')}, vocab {arch.get('vocab_size')}"
        src = b.get("source") or {}
        lines.append(
            f"| {_cell(b.get('name'))} | {_cell(src.get('repo'))}: {_cell(src.get('file'))} | "
            f"`{_cell(b.get('sha256'))}` | {_cell(b.get('vocab'))} | {shape} | {_cell(b.get('status'))} |"
        )
    if len(lines) == 2:
        lines.append("| (no base yet: `rwkv-registry add-base`) | | | | | |")
    return "\n".join(lines)


def _score_text(s: dict[str, Any]) -> str:
    if s.get("unit") != "percent":  # points: "41.0/60" when out of a known total
        return (
            f"{recorded_num(s.get('score'))}/{s['total']}"
            if s.get("total") is not None
            else recorded_num(s.get("score"))
        )
    text = f"{recorded_num(s.get('score'))}%"
    if s.get("solved") is not None and s.get("total") is not None:
        text += f" ({recorded_num(s['solved'])}/{s['total']})"
    return text


def _scores_rows(label: str, scores: list[dict[str, Any]]) -> list[str]:
    rows = []
    for s in scores:
        note = s.get("note") or ""
        cmp_ = s.get("comparison")
        extras = []
        if cmp_:
            extras.append(f"vs {cmp_['against']}: +{cmp_['wins']}/−{cmp_['losses']}, p={cmp_['p_value']}")
        categories = s.get("by_category") or {}
        if categories:
            extras.append(
                ", ".join(f"{k} {recorded_num(v.get('solved'))}/{v.get('total')}" for k, v in categories.items())
            )
        if s.get("run_scores"):
            extras.append("runs " + ", ".join(recorded_num(x) for x in s["run_scores"]))
        if s.get("content_version"):  # what the server registered for the measured adapter (IDX017)
            extras.append(f"content_version {s['content_version']}")
        if s.get("report"):
            extras.append(f"report: {s['report']}")
        for extra in extras:
            note = f"{note}; {extra}" if note else extra
        rows.append(
            f"| {_cell(label)} | {_cell(s.get('benchmark'))} | {_cell(s.get('date'))} | {_score_text(s)} | "
            f"{_cell(s.get('runs'))} | {_cell(s.get('backend'))} | {_cell(note)} |"
        )
    return rows


def render_sections(index: dict[str, Any]) -> str:
    out: list[str] = []
    entries = index.get("entries", [])
    unpublished = index.get("unpublished", [])
    for b in index.get("bases", []):
        name = b.get("name")
        prefix = f"{name}/"
        out += [f"### {name}", "", f"Status: {b.get('status')}. Paths are relative to `{prefix}`.", ""]
        mine = [e for e in entries if e.get("base") == name]
        out += ["| Path | Id | Method | Data | Profile | Sampling | Notes |", "|---|---|---|---|---|---|---|"]
        for e in mine:
            path = str(e.get("path", ""))
            rel = path[len(prefix) :] if path.startswith(prefix) else path
            data = e.get("data") or {}
            facts = [f"{data['rows']} rows"] if data.get("rows") is not None else []
            facts += [f"sha256 {str(data['sha256'])[:8]}…"] if data.get("sha256") else []
            data_text = f"{data.get('version')} ({', '.join(facts)})" if facts else str(data.get("version"))
            method = "State" if e.get("method") == "state" else f"MiSS r{(e.get('miss') or {}).get('rank')}"
            note = e.get("description") or ""
            if e.get("recommended"):
                note = f"{note} (recommended)" if note else "recommended"
            out.append(
                f"| {_cell(rel)} | {_cell(e.get('id'))} | {method} | {_cell(data_text)} | "
                f"{_cell(e.get('profile'))} | {_cell(e.get('sampling'))} | {_cell(note)} |"
            )
        trains = sorted({e.get("train") for e in mine if e.get("train")})
        for t in trains:
            rel = t[len(prefix) :] if t.startswith(prefix) else t
            out.append(f"| {_cell(rel)} | — | training parameters | — | — | — | trainer, hyper-parameters, command |")
        if not mine:
            out.append("| (no weights yet) | | | | | | |")
        misses = [e for e in mine if e.get("method") == "miss"]
        if misses:
            out += ["", "| Adapter | content_version |", "|---|---|"]
            out += [
                f"| {_cell(e.get('id'))} | `{_cell((e.get('miss') or {}).get('content_version'))}` |" for e in misses
            ]
        score_rows: list[str] = _scores_rows("base alone", b.get("scores", []))
        for e in mine:
            score_rows += _scores_rows(str(e.get("id")), e.get("scores", []))
        for u in unpublished:
            if u.get("base") == name:
                score_rows += _scores_rows(f"{u.get('id')} (not uploaded)", u.get("scores", []))
        if score_rows:
            out += [
                "",
                "| Weights | Benchmark | Date | Score | Runs | Backend | Note |",
                "|---|---|---|---|---|---|---|",
                *score_rows,
            ]
        issues = list(b.get("known_issues", []))
        for e in mine:
            issues += [f"{e.get('id')}: {i}" for i in e.get("known_issues", [])]
        if issues:
            out += ["", "Known issues:", *[f"- {i}" for i in issues]]
        out.append("")
    if index.get("known_issues"):
        out += ["### Known issues", "", *[f"- {i}" for i in index["known_issues"]], ""]
    return "\n".join(out).rstrip("\n")


def _replace(text: str, begin: str, end: str, body: str) -> str | None:
    i = text.find(begin)
    j = text.find(end, i + len(begin)) if i >= 0 else -1
    if i < 0 or j < 0:
        return None
    return text[: i + len(begin)] + "\n" + body + "\n" + text[j:]


_MARKER_PREFIX = "<!-- rwkv-registry:"
_MARKER_SHOWN = "&lt;!-- rwkv-registry:"  # Markdown shows it as the same text; no marker search finds it


def _defused(body: str) -> str:
    """``body`` with every text that starts like a generated-section marker escaped. A description (or any text of
    index.json) holding ``<!-- rwkv-registry:sections:end -->`` would otherwise end the region early: the next
    rewrite keeps everything after it, and each ``readme`` grows the file (RDM002 right after ``add``)."""
    return body.replace(_MARKER_PREFIX, _MARKER_SHOWN) if _MARKER_PREFIX in body else body


def render_bodies(index: dict[str, Any]) -> tuple[str, str]:
    """The two generated regions' bodies (the bases table, the per-base sections) rendered from ``index``, any text
    of it that looks like a marker escaped (:func:`_defused`)."""
    return _defused(render_bases_table(index)), _defused(render_sections(index))


def apply_bodies(text: str, bodies: tuple[str, str]) -> str | None:
    """The README with its generated regions replaced by ``bodies`` (:func:`render_bodies`); None if a marker is
    missing."""
    new = _replace(text, BASES_BEGIN, BASES_END, bodies[0])
    if new is None:
        return None
    return _replace(new, SECTIONS_BEGIN, SECTIONS_END, bodies[1])


def update_readme(text: str, index: dict[str, Any]) -> str | None:
    """The README with both generated regions rendered from ``index``; None if a marker is missing."""
    return apply_bodies(text, render_bodies(index))


def skeleton(title: str = "RWKV-7 weights") -> str:
    """README of a new registry: the publisher's text goes around the generated regions."""
    return f"""# {title}

Light weights (State files and MiSS adapters) trained on RWKV-7 bases. Each file is valid only for
the exact base file it was trained on: the first directory level is the base, and a new base gets
a new directory beside the old ones, which are never touched.

```
<base>/
  state/<data-version>/   State weights + train.json
  miss/<data-version>/    one sub-folder per run (adapter-final.pth) + train.json
index.json                machine-readable index (bases, entries, hashes, scores)
SHA256SUMS                sha256 of every file (`sha256sum -c SHA256SUMS`)
```

## Bases

{BASES_BEGIN}
{BASES_END}

## Files and scores

{SECTIONS_BEGIN}
{SECTIONS_END}

Kept honest by rwkv-registry: `rwkv-registry validate .` (also as a pre-commit hook, see .pre-commit-config.yaml)
"""
