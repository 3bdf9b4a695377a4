"""Rich renderings of the catalogue, shared by ``rwkv-registry show`` and the TUI's details pane,
and the ``list`` / ``show`` commands. The data comes from :mod:`rwkv_registry.catalog.entries`; rich is
imported only when a renderable is built, textual never.
"""

from __future__ import annotations

import functools
import re
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from rwkv_registry.catalog.entries import (
    CURRENT_MARK,
    FILTER_FIELDS,
    FILTER_HELP,
    FRACTIONS,
    FROZEN_TAG,
    METHOD_LABEL,
    METHODS,
    RECOMMENDED_MARK,
    SEVERITY_MARK,
    SEVERITY_STYLE,
    Bar,
    Catalog,
    Comparison,
    EntryFilter,
    FindingIndex,
    MissSummary,
    NodeRef,
    TrainInfo,
    as_dict,
    as_list,
    as_text,
    data_text,
    duration_text,
    fingerprint_matches,
    human_size,
    num,
    score_num,
    score_text,
    short_size,
    unknown_field_text,
)
from rwkv_registry.core.errors import UsageError
from rwkv_registry.core.rules import Finding
from rwkv_registry.core.textsafe import json_text, printable

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
    from rich.measure import Measurement
    from rich.text import Text


# --- rich renderables (shared by `show` and the TUI) --------------------------------------------------------


class BarChart:
    """A horizontal bar chart of one benchmark, drawn with block characters (readable without colour).

    Bars scale to 100 for percentages, else to the largest total (or score). ``▶`` marks the
    current entry; the base alone and weights never uploaded are labelled as such.
    """

    def __init__(self, title: str, bars: Sequence[Bar], *, max_label: int = 22) -> None:
        self.title = title
        self.bars = list(bars)
        self.max_label = max_label

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        from rich.measure import Measurement

        return Measurement(min(24, options.max_width), options.max_width)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        from rich.text import Text

        yield Text(self.title, style="bold")
        if not self.bars:
            yield Text("  (no scores)", style="dim")
            return
        width = options.max_width
        labels = [_bar_label(b) for b in self.bars]
        lw = min(max(len(x) for x in labels), self.max_label)
        values = [score_text({"score": b.score, "unit": b.unit, "total": b.total}) for b in self.bars]
        vw = max(len(v) for v in values)
        dates = {b.date for b in self.bars}
        show_dates = len(dates) > 1
        years = {d[:5] for d in dates}
        same_year = len(years) == 1 and all(re.match(r"^\d{4}-\d\d-\d\d$", d) for d in dates)
        shown = {b.date: (b.date[5:] if same_year else b.date) for b in self.bars}
        dw = max(len(d) for d in shown.values()) + 1 if show_dates else 0
        bar_w = max(4, width - (2 + lw + 1 + 1 + vw + dw))
        if self.bars[0].unit == "percent":
            scale = 100.0
        else:
            scale = float(max([b.total or 0 for b in self.bars] + [b.score for b in self.bars]) or 1)
        for bar, label, value in zip(self.bars, labels, values, strict=True):
            style = (
                "bold"
                if bar.current
                else "dim"
                if bar.kind == "base"
                else "italic"
                if bar.kind == "unpublished"
                else ""
            )
            cells = max(0.0, min(1.0, bar.score / scale)) * bar_w
            full = int(cells)
            part = FRACTIONS[int((cells - full) * 8)] if full < bar_w else ""
            drawn = ("█" * full + part.strip()).ljust(bar_w)
            text = Text(CURRENT_MARK + " " if bar.current else "  ", style="bold")
            text.append(_fit(label, lw).ljust(lw), style=style)
            text.append(" ")
            text.append(drawn, style="bold yellow" if bar.current else "blue" if bar.kind == "entry" else "dim")
            text.append(" " + value.rjust(vw), style=style)
            if show_dates:
                text.append(" " + shown[bar.date], style="dim")
            yield text
        if not show_dates and dates:
            yield Text(f"  all on {next(iter(dates))}", style="dim")
        elif same_year:
            yield Text(f"  year {next(iter(years))[:4]}; different days compare loosely", style="dim")
        if any(b.kind == "unpublished" for b in self.bars):
            yield Text("  † never uploaded", style="dim")


@functools.cache
def _table_class() -> Any:
    """rich's ``Table``, except that string cells are plain text. Strings from index.json and
    train.json are never read as Rich markup: a description holding ``[/]`` crashed ``show`` and the
    TUI, and ``[bold]…[/]`` was silently swallowed."""
    from rich.table import Table
    from rich.text import Text

    class PlainTable(Table):
        def add_row(self, *renderables: Any, **kwargs: Any) -> None:
            super().add_row(*(Text(r) if isinstance(r, str) else r for r in renderables), **kwargs)

    return PlainTable


def _bar_label(b: Bar) -> str:
    return f"{b.label}†" if b.kind == "unpublished" else b.label


def _fit(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(0, width - 1)] + "…"


def _kv_table() -> Any:
    Table = _table_class()

    t = Table.grid(padding=(0, 1))
    t.add_column(style="bold", no_wrap=True)
    t.add_column(overflow="fold")
    return t


def _mark(ok: bool | None, yes: str, no: str, unknown: str = "not checked") -> Text:
    from rich.text import Text

    if ok is None:
        return Text(f"? {unknown}", style="dim")
    return Text(f"✓ {yes}", style="green") if ok else Text(f"✗ {no}", style="bold red")


def render_entry_info(cat: Catalog, e: dict[str, Any], *, usage: bool = True) -> RenderableType:
    """Id, file, size, sha256, data, profiles, description, known issues and (``usage``) the usage command."""
    from rich.console import Group
    from rich.text import Text

    t = _kv_table()
    method = as_text(e.get("method"))
    title = Text(as_text(e.get("id")), style="bold")
    title.append(f"  {METHOD_LABEL.get(method, method)}")
    if e.get("recommended") is True:
        title.append(f"  {RECOMMENDED_MARK} recommended", style="bold yellow")
    base = as_text(e.get("base"))
    base_text = Text(base)
    if cat.base_status(base) == "frozen":
        base_text.append(f" {FROZEN_TAG}", style="cyan")
    elif cat.base_status(base) == "unknown":
        base_text.append(" (not in index.json)", style="bold red")
    t.add_row("file", as_text(e.get("path")))
    t.add_row("size", human_size(as_dict(e.get("file")).get("size")))
    t.add_row("sha256", as_text(as_dict(e.get("file")).get("sha256"), "—"))
    t.add_row("base", base_text)
    t.add_row("base sha256", as_text(as_dict(cat.base(base)).get("sha256"), "—"))
    t.add_row("data", data_text(e))
    if e.get("group"):
        t.add_row("group", as_text(e.get("group")))
    if e.get("on_top_of"):
        t.add_row("on top of", f"{as_text(e.get('on_top_of'))} (trained and used with it)")
    t.add_row("profile", as_text(e.get("profile"), "—"))
    t.add_row("sampling", as_text(e.get("sampling"), "—"))
    if e.get("method") == "miss":
        t.add_row("adapter id", as_text(e.get("adapter_id")) or as_text(e.get("id")))
    if e.get("step") is not None:
        total = e.get("total_steps")
        t.add_row("step", f"{e['step']} of {total}" if total is not None else as_text(e["step"]))
    if e.get("description"):
        t.add_row("note", as_text(e.get("description")))
    for i, issue in enumerate(as_list(e.get("known_issues"))):
        t.add_row("known issue" if i == 0 else "", Text(as_text(issue), style="yellow"))
    if not usage:
        return Group(title, t)
    return Group(title, t, Text(""), *render_usage(cat, e))


def render_usage(cat: Catalog, e: dict[str, Any]) -> list[Text]:
    """The usage heading, the rwkv-cli command and the profile/sampling reminder."""
    from rich.text import Text

    u = cat.usage(e)
    return [
        Text("usage (from the registry root)", style="bold"),
        Text(u.command, style="green"),
        Text(u.then, style="dim"),
    ]


def render_train(info: TrainInfo, e: dict[str, Any] | None = None) -> RenderableType:
    """train.json: trainer and version, data, hyper-parameters, per-run learning rates, command, times."""
    from rich.console import Group
    from rich.text import Text

    head = Text(info.rel, style="bold")
    if info.data is None:
        return Group(head, Text(f"✗ {info.error}", style="bold red"))
    t = info.data
    table = _kv_table()
    trainer = as_dict(t.get("trainer"))
    tr = Text(f"{as_text(trainer.get('name'), '?')} {as_text(trainer.get('version'), '?')}")
    if "commit" in trainer:
        commit = trainer.get("commit")
        tr.append(f" (commit {commit})" if commit else " (build commit not recorded)", style="dim")
    table.add_row("trainer", tr)
    table.add_row("method", METHOD_LABEL.get(as_text(t.get("method")), as_text(t.get("method"), "?")))
    data = as_dict(t.get("data"))
    parts = [as_text(data.get("version"), "?")]
    if data.get("rows") is not None:
        parts.append(f"{data['rows']} rows")
    parts.append(f"sha256 {as_text(data.get('sha256'), '—')}")
    table.add_row("data", " · ".join(parts))
    for i, (k, v) in enumerate(as_dict(t.get("hyperparameters")).items()):
        value = ", ".join(num(x) for x in v) if isinstance(v, list) else num(v)
        table.add_row("hyper-params" if i == 0 else "", Text.assemble((f"{k} ", "dim"), value))
    table.add_row("started", f"{as_text(t.get('started'), '—')}")
    took = duration_text(t.get("started"), t.get("finished"))
    table.add_row("finished", f"{as_text(t.get('finished'), '—')}" + (f"  ({took})" if took else ""))
    items: list[Any] = [head, table]
    runs = [r for r in as_list(t.get("runs")) if isinstance(r, dict)]
    if runs:
        items += [Text(""), Text(f"runs ({len(runs)})", style="bold")]
        group = e.get("group") if e else None
        for r in runs:
            mine = group is not None and r.get("group") == group
            line = Text(CURRENT_MARK + " " if mine else "  ", style="bold")
            line.append(as_text(r.get("group"), "?"), style="bold" if mine else "")
            line.append(f"  lr {num(r.get('lr'))}")
            if r.get("lr_final") is not None:
                line.append(f" → {num(r.get('lr_final'))}")
            if r.get("epochs") is not None:
                line.append(f"  {num(r.get('epochs'))} epochs")
            if r.get("steps") is not None:
                line.append(f"  {num(r.get('steps'))} steps")
            items.append(line)
            took = duration_text(r.get("started"), r.get("finished"))
            items.append(
                Text(
                    f"    {as_text(r.get('started'), '?')} → {as_text(r.get('finished'), '?')}"
                    + (f" ({took})" if took else ""),
                    style="dim",
                )
            )
    items += [Text(""), Text("command", style="bold"), Text(as_text(t.get("command"), "—"), style="green")]
    if t.get("notes"):
        items += [Text(""), Text(as_text(t.get("notes")), style="italic")]
    return Group(*items)


def render_miss(cat: Catalog, e: dict[str, Any], summary: MissSummary | None) -> RenderableType:
    """Rank, alpha, scale, targets, content_version and the base fingerprint with its match mark."""
    from rich.console import Group
    from rich.text import Text

    if summary is None:
        return Text("A State entry has no MiSS manifest.", style="dim")
    head = Text("archive/miss.json", style="bold")
    if summary.source != "none":  # "none": the file was never read (missing, or not a regular file)
        head.append(f"  (from the {summary.source})", style="dim")
    if summary.error:
        return Group(head, Text(f"✗ {summary.error}", style="bold red"))
    t = _kv_table()
    t.add_row("rank", num(summary.rank))
    t.add_row("alpha", num(summary.alpha))
    t.add_row("scale", num(summary.scale))
    t.add_row("dtype", as_text(summary.dtype, "—"))
    per = f" ({summary.targets // summary.layers} per layer × {summary.layers} layers)" if summary.layers else ""
    t.add_row("targets", f"{summary.targets}{per}")
    if summary.target_kinds:
        t.add_row("", Text(", ".join(summary.target_kinds), style="dim"))
    recorded = as_dict(e.get("miss")).get("content_version")
    t.add_row("content_version", as_text(summary.content_version, "—"))
    t.add_row(
        "",
        _mark(
            recorded == summary.content_version,
            "index.json records the same",
            f"index.json records {as_text(recorded, 'nothing')}",
        ),
    )
    if summary.source == "validation cache":
        t.add_row(
            "",
            _mark(
                summary.recomputed == summary.content_version if summary.recomputed else None,
                "recomputed from the bytes: same",
                f"recomputed from the bytes: {summary.recomputed}",
                "could not be recomputed",
            ),
        )
    else:
        t.add_row("", Text("? recomputed on the next validation", style="dim"))
    base = cat.base(as_text(e.get("base")))
    t.add_row("base fingerprint", as_text(summary.base_fingerprint, "—"))
    t.add_row(
        "",
        _mark(
            fingerprint_matches(summary, base),
            f"matches base {as_text(e.get('base'))}",
            f"does not match base {as_text(e.get('base'))} ({as_text(as_dict(base).get('sha256'), 'unknown')})",
            "base not in index.json",
        ),
    )
    return Group(head, t)


def render_scores(
    cat: Catalog,
    base: str,
    *,
    entry: dict[str, Any] | None = None,
    only: Iterable[str] | None = None,
    table: bool = True,
) -> RenderableType:
    """An entry's (or, with ``table``, the base alone's) scores as a table, then one bar chart per
    benchmark across the base's weights (``only`` those entries, plus the base alone)."""
    from rich.console import Group
    from rich.text import Text

    only = list(only) if only is not None else None
    items: list[Any] = []
    if entry is not None or table:
        own = as_list(entry.get("scores")) if entry is not None else as_list(as_dict(cat.base(base)).get("scores"))
        label = "scores" if entry is not None else f"scores of {base} alone"
        items += [Text(label, style="bold"), _scores_table(own)] if own else [Text(f"{label}: none", style="dim")]
    current = as_text(entry.get("id")) if entry is not None else ""
    ids = [current] if entry is not None else only
    for bench, unit in cat.benchmarks(base, ids):
        title = f"{bench} · {'percent' if unit == 'percent' else 'points'}"
        items += [Text(""), BarChart(title, cat.score_bars(base, bench, unit, current=current, only=only))]
    if not items:
        items.append(Text("no scores", style="dim"))
    return Group(*items)


def _scores_table(scores: list[Any]) -> Any:
    Table = _table_class()

    table = Table(box=None, padding=(0, 1), show_edge=False, header_style="bold")
    table.add_column("benchmark", no_wrap=True)
    table.add_column("date", no_wrap=True)
    table.add_column("score", justify="right", no_wrap=True)
    table.add_column("detail", overflow="fold")
    for s in scores:
        if not isinstance(s, dict):
            continue
        detail = []
        if s.get("solved") is not None and s.get("total") is not None and s.get("unit") == "percent":
            detail.append(f"{score_num(s['solved'])}/{s['total']}")
        if s.get("runs") is not None:
            runs = as_list(s.get("run_scores"))
            detail.append(f"{s['runs']} runs" + (f" ({', '.join(score_num(x) for x in runs)})" if runs else ""))
        categories = as_dict(s.get("by_category"))
        if categories:
            detail.append(
                ", ".join(
                    f"{k} {score_num(as_dict(v).get('solved'))}/{as_dict(v).get('total')}"
                    for k, v in categories.items()
                )
            )
        cmp_ = as_dict(s.get("comparison"))
        if cmp_:
            wins, losses, p = cmp_.get("wins"), cmp_.get("losses"), num(cmp_.get("p_value"))
            detail.append(f"vs {as_text(cmp_.get('against'))} +{wins}/−{losses} p={p}")
        if s.get("note"):
            detail.append(as_text(s.get("note")))
        table.add_row(as_text(s.get("benchmark")), as_text(s.get("date")), score_text(s), "; ".join(detail))
    return table


def render_smoke(e: dict[str, Any]) -> RenderableType:
    """Smoke records: verdict, entry vs base, wins/losses and where it ran."""
    from rich.console import Group
    from rich.text import Text

    records = [r for r in as_list(e.get("smoke")) if isinstance(r, dict)]
    if not records:
        return Text("smoke: no records (rwkv-registry smoke PATH ID --base-file BASE --record)", style="dim")
    items: list[Any] = [Text(f"smoke records ({len(records)})", style="bold")]
    for r in records:
        verdict = as_text(r.get("verdict"), "?")
        es, bs = as_dict(r.get("entry_score")), as_dict(r.get("base_score"))
        line = Text("✓ PASS " if verdict == "pass" else "✗ FAIL ", style="green" if verdict == "pass" else "bold red")
        line.append(
            f"{as_text(r.get('date'))}  entry {es.get('solved')}/{es.get('total')} vs base {bs.get('solved')}/"
            f"{bs.get('total')}  +{r.get('wins')}/−{r.get('losses')} p={num(r.get('p_value'))}"
        )
        items.append(line)
        items.append(
            Text(
                f"    {as_text(r.get('device'))}, torch {as_text(r.get('torch'))}, {r.get('cases')} cases, profile "
                f"{as_text(r.get('profile'))}",
                style="dim",
            )
        )
        for cat_name, tally in as_dict(es.get("by_category")).items():
            btally = as_dict(as_dict(bs.get("by_category")).get(cat_name))
            items.append(
                Text(
                    f"    {cat_name}: {as_dict(tally).get('solved')}/{as_dict(tally).get('total')} "
                    f"(base {btally.get('solved', '?')}/{btally.get('total', '?')})",
                    style="dim",
                )
            )
    return Group(*items)


def render_findings(
    findings: Sequence[Finding], *, checked: bool = True, title: str = "validation", within: str = ""
) -> RenderableType:
    """Findings with severity words, code, path, message and fix; paths under ``within/`` are shown
    relative to it (``…/state/v1/train.json``)."""
    from rich.console import Group
    from rich.text import Text

    if not checked:
        return Group(Text(title, style="bold"), Text("· not validated yet (press v)", style="dim"))
    if not findings:
        return Group(Text(title, style="bold"), Text("✓ no findings", style="green"))
    order = {"error": 0, "warning": 1, "info": 2}
    items: list[Any] = [Text(f"{title} ({len(findings)} finding{'s' if len(findings) != 1 else ''})", style="bold")]
    for f in sorted(findings, key=lambda f: (order.get(str(f.severity), 3), f.path, f.code)):
        sev = str(f.severity)
        line = Text(f"{SEVERITY_MARK.get(sev, '?')} {sev:<7} ", style=SEVERITY_STYLE.get(sev, ""))
        line.append(f"{f.code} ", style="bold")
        shown = f.path
        if within and shown.startswith(within + "/"):
            shown = "…/" + shown[len(within) + 1 :]
        line.append(shown)
        items += [line, Text(f"    {f.message}"), Text(f"    fix: {f.hint}", style="dim")]
    return Group(*items)


def render_base_info(cat: Catalog, b: dict[str, Any]) -> RenderableType:
    """A base: status, source, sha256, size, vocabulary, architecture, notes, its entries."""
    from rich.console import Group
    from rich.text import Text

    name = as_text(b.get("name"))
    status = as_text(b.get("status"), "?")
    title = Text(name, style="bold")
    title.append(f"  {FROZEN_TAG}" if status == "frozen" else f"  {status}", style="cyan" if status == "frozen" else "")
    t = _kv_table()
    t.add_row("family", as_text(b.get("family"), "—"))
    src = as_dict(b.get("source"))
    rev = f"@{src['revision']}" if src.get("revision") else ""
    t.add_row("source", f"{as_text(src.get('repo'), '?')}: {as_text(src.get('file'), '?')}{rev}")
    t.add_row("sha256", as_text(b.get("sha256"), "—"))
    t.add_row("size", human_size(b.get("size")) if b.get("size") is not None else "not recorded")
    t.add_row("vocab", as_text(b.get("vocab"), "—"))
    a = as_dict(b.get("architecture"))
    lora = as_dict(a.get("lora"))
    t.add_row(
        "architecture",
        f"{a.get('n_layer')} layers × {a.get('n_embd')}, {a.get('n_head')} heads of {a.get('head_size')}, "
        f"vocab {a.get('vocab_size')}, ffn {a.get('ffn_size')}, {as_text(a.get('dtype'), '?')}",
    )
    if lora:
        t.add_row(
            "",
            Text(
                f"lora decay {lora.get('decay')} · aaa {lora.get('aaa')} · mv {lora.get('mv')} · gate "
                f"{lora.get('gate')}",
                style="dim",
            ),
        )
    t.add_row("added", as_text(b.get("added"), "—"))
    mine = [e for e in cat.entries if as_text(e.get("base")) == name]
    counts = ", ".join(f"{sum(1 for e in mine if e.get('method') == m)} {METHOD_LABEL[m]}" for m in METHODS)
    t.add_row("entries", f"{len(mine)} ({counts})")
    if b.get("notes"):
        t.add_row("notes", as_text(b.get("notes")))
    for i, issue in enumerate(as_list(b.get("known_issues"))):
        t.add_row("known issue" if i == 0 else "", Text(as_text(issue), style="yellow"))
    items: list[Any] = [title, t]
    if status == "frozen":
        items += [
            Text(""),
            Text("Frozen: superseded by a newer base of its family; this directory is never touched.", style="cyan"),
        ]
    return Group(*items)


def render_group_info(cat: Catalog, ref: NodeRef) -> RenderableType:
    """A method or data-version node: what is under it."""
    from rich.console import Group
    from rich.text import Text

    entries = cat.entries_under(ref)
    title = Text(ref.prefix + "/", style="bold")
    items: list[Any] = [title]
    if ref.kind == "version" and entries:
        items.append(Text(f"data {data_text(entries[0])}"))
        items.append(Text(f"train.json {Catalog.train_rel(entries[0])}", style="dim"))
    items.append(Text(""))
    for e in entries:
        line = Text(f"{RECOMMENDED_MARK if e.get('recommended') is True else ' '} ", style="bold yellow")
        line.append(as_text(e.get("id")), style="bold")
        if ref.kind == "method":
            line.append(f"  {as_text(as_dict(e.get('data')).get('version'))}")
        line.append(f"  {short_size(as_dict(e.get('file')).get('size'))}", style="dim")
        if e.get("description"):
            line.append(f"  {as_text(e.get('description'))}")
        items.append(line)
    if not entries:
        items.append(Text("(no entries)", style="dim"))
    return Group(*items)


def render_registry_info(cat: Catalog) -> RenderableType:
    """The registry: name, title, what it is for, counts, known issues and links (or index.json's problem)."""
    from rich.console import Group
    from rich.text import Text

    title = Text(cat.name, style="bold")
    if cat.error:
        return Group(
            title, Text(""), Text(f"✗ {cat.error}", style="bold red"), Text(f"fix: {cat.error_hint}", style="dim")
        )
    about = cat.describe_registry()
    reg = about["registry"]
    t = _kv_table()
    if reg.get("title"):
        t.add_row("title", as_text(reg.get("title")))
    if reg.get("description"):
        t.add_row("about", as_text(reg.get("description")))
    t.add_row("training data", as_text(reg.get("training_data"), "—"))
    t.add_row("server", as_text(reg.get("server"), "—"))
    t.add_row("license", as_text(reg.get("license"), "none chosen yet"))
    frozen = sum(1 for b in about["bases"] if b["status"] == "frozen")
    t.add_row("bases", f"{len(about['bases'])}" + (f" ({frozen} frozen)" if frozen else ""))
    t.add_row("entries", f"{about['entries']['total']} ({_per_method(about['entries'])})")
    if about["unpublished"]:
        t.add_row("not uploaded", ", ".join(about["unpublished"]))
    for i, issue in enumerate(about["known_issues"]):
        t.add_row("known issue" if i == 0 else "", Text(issue, style="yellow"))
    for i, link in enumerate(about["links"]):
        t.add_row("links" if i == 0 else "", f"{link['title']}: {link['url']}")
    items: list[Any] = [title, t]
    if not about["bases"]:
        items += [Text(""), Text("No base yet: add one with `rwkv-registry add-base PATH BASE.pth`.", style="dim")]
    return Group(*items)


def _per_method(counts: dict[str, int]) -> str:
    """``1 State, 3 MiSS``."""
    return ", ".join(f"{counts[m]} {METHOD_LABEL[m]}" for m in METHODS)


def render_comparison(cmp: Comparison, *, context: int = 3) -> Iterator[RenderableType]:
    """Fields, score deltas and the side-by-side train.json diff (``=`` same, ``~`` changed, ``-``/``+``
    one side only); unchanged lines farther than ``context`` from a change fold into ``⋮``."""
    Table = _table_class()
    from rich.text import Text

    a_id, b_id = as_text(cmp.a.get("id")), as_text(cmp.b.get("id"))
    fields = Table(box=None, padding=(0, 1), header_style="bold", expand=True)
    fields.add_column("", width=1, no_wrap=True)
    fields.add_column("field", no_wrap=True)
    fields.add_column(f"A: {a_id}", overflow="fold", ratio=1)
    fields.add_column(f"B: {b_id}", overflow="fold", ratio=1)
    for label, va, vb in cmp.fields:
        same = va == vb
        fields.add_row("=" if same else "≠", label, va, vb, style="dim" if same else "bold")
    yield fields
    yield Text("")
    scores = Table(
        box=None,
        padding=(0, 1),
        header_style="bold",
        title="scores (latest per benchmark)",
        title_justify="left",
        title_style="bold",
    )
    scores.add_column("benchmark", no_wrap=True)
    scores.add_column("A", justify="right", no_wrap=True)
    scores.add_column("B", justify="right", no_wrap=True)
    scores.add_column("B − A", justify="right", no_wrap=True)
    scores.add_column("note", overflow="fold")
    for d in cmp.scores:
        delta = d.delta
        dtext = (
            Text("—")
            if delta is None
            else Text(f"{delta:+g}", style="green" if delta > 0 else "red" if delta < 0 else "")
        )
        note = (
            ""
            if d.a is None or d.b is None
            else "same day and backend"
            if d.same_day
            else (f"different days ({as_text(d.a.get('date'))} / {as_text(d.b.get('date'))}): compare loosely")
            if d.a.get("date") != d.b.get("date")
            else "same day, different backends: compare loosely"
        )
        scores.add_row(d.benchmark, score_text(d.a) if d.a else "—", score_text(d.b) if d.b else "—", dtext, note)
    if not cmp.scores:
        scores.add_row("(none)", "", "", "", "")
    yield scores
    yield Text("")
    diff = Table(
        box=None,
        padding=(0, 1),
        header_style="bold",
        expand=True,
        title=f"train.json: {cmp.train_changes} line(s) differ",
        title_justify="left",
        title_style="bold",
    )
    diff.add_column("", width=1, no_wrap=True)
    diff.add_column(f"A: {cmp.train_labels[0]}", overflow="fold", ratio=1)
    diff.add_column(f"B: {cmp.train_labels[1]}", overflow="fold", ratio=1)
    styles = {"=": "dim", "~": "bold yellow", "-": "bold red", "+": "bold green"}
    for row in fold_same(cmp.train_rows, context):
        if row is None:
            diff.add_row("", Text("⋮", style="dim"), Text("⋮", style="dim"))
        else:
            op, left, right = row
            diff.add_row(op if op != "=" else " ", left, right, style=styles[op])
    yield diff


def fold_same(rows: Sequence[tuple[str, str, str]], context: int) -> list[tuple[str, str, str] | None]:
    """Keep ``context`` unchanged rows around each change; a None row stands for the folded ones.
    A negative ``context`` keeps everything."""
    if context < 0:
        return list(rows)
    changed = [i for i, r in enumerate(rows) if r[0] != "="]
    keep = {j for i in changed for j in range(i - context, i + context + 1)}
    out: list[tuple[str, str, str] | None] = []
    for i, r in enumerate(rows):
        if i in keep or r[0] != "=":
            out.append(r)
        elif out and out[-1] is None:
            continue
        else:
            out.append(None)
    return out


# --- the commands --------------------------------------------------------------------------------------------


def _console() -> Console:
    """The console of ``list`` and ``show``: everything it prints goes through
    :func:`~rwkv_registry.core.textsafe.printable` (a render hook), so no control sequence of a registry reaches the
    terminal."""
    from rich.console import Console

    from rwkv_registry.core.textsafe import printable_console

    console: Console = printable_console(Console(highlight=False, soft_wrap=False))
    return console


def _list_table(title: str, rows: Iterable[Sequence[str]]) -> Any:
    """One base's table of ``list``: id, method, data, size, ★, profile, description. The title is
    text, never markup: as a plain string, a frozen base's ``[frozen]`` was read as a style tag and
    dropped."""
    from rich import box
    from rich.text import Text

    Table = _table_class()
    table = Table(
        title=Text(title, style="bold"),
        title_justify="left",
        title_style="bold",
        header_style="bold",
        padding=(0, 1),
        box=box.SIMPLE_HEAD,
    )
    table.add_column("id", no_wrap=True)
    table.add_column("method", no_wrap=True)
    table.add_column("data", no_wrap=True)
    table.add_column("size", justify="right", no_wrap=True)
    table.add_column(RECOMMENDED_MARK, no_wrap=True)
    table.add_column("profile", no_wrap=True)
    table.add_column("description", overflow="fold", ratio=1)
    for row in rows:
        table.add_row(*row)
    return table


PLAIN_LIST = True  # False: every table of `list` goes through rich (the tests compare both)
_LIST_RIGHT = 3  # the size column, right-justified; the others are left-justified
_LIST_FOLD = 6  # the description column, folded; the others never wrap


def _plain_list_lines(console: Console, title: str, rows: Sequence[Sequence[str]]) -> list[str] | None:
    """The lines rich prints for :func:`_list_table` on a console without colour, laid out once.

    rich measures every cell, then renders each one through a padded renderable: about 0.6 ms per
    entry. The column widths depend only on the widest cell and the longest word of each column,
    so rich lays out a two-row stand-in table holding those cells; its title, header and edges are
    used as they are, and every row is padded to the widths by hand. The stand-in's rows are laid
    out both ways and must agree, else (and whenever a cell would be cropped or holds a control
    character) None: the caller prints the table through rich.
    """
    from rich.cells import cell_len as rich_cell_len
    from rich.text import Text

    def cell_len(text: str) -> int:  # rich's, with printable ASCII (nearly every cell) one cell a character
        return len(text) if text.isascii() and text.isprintable() else rich_cell_len(text)

    if not rows or console.color_system is not None:
        return None
    ncol = len(rows[0])
    widest: list[tuple[int, int]] = [(-1, 0)] * ncol  # (width, row) of the widest cell per column
    wordiest: list[tuple[int, int]] = [(-1, 0)] * ncol  # (longest word, row)
    for r, row in enumerate(rows):
        for c, cell in enumerate(row):
            if not cell.isprintable():
                if c != _LIST_FOLD:
                    return None
                lines = cell.splitlines()
                w = max((cell_len(x) for x in lines), default=0)
            else:
                w = cell_len(cell)
            if w > widest[c][0]:
                widest[c] = (w, r)
            if c == _LIST_FOLD:
                words = cell.split()
                m = max((cell_len(x) for x in words), default=w)
                if m > wordiest[c][0]:
                    wordiest[c] = (m, r)
    stand_in = [
        tuple(rows[widest[c][1]][c] for c in range(ncol)),
        tuple(rows[wordiest[c][1]][c] if c == _LIST_FOLD else rows[widest[c][1]][c] for c in range(ncol)),
    ]
    table = _list_table(title, stand_in)
    try:
        widths = table._calculate_column_widths(
            console, console.options.update_width(console.width - table._extra_width)
        )
    except AttributeError:  # pragma: no cover - a rich without these internals
        return None
    if any(widest[c][0] > widths[c] - 2 for c in range(ncol) if c != _LIST_FOLD) or widths[_LIST_FOLD] < 3:
        return None
    with console.capture() as capture:
        console.print(table)
    shown = capture.get().split("\n")
    if shown[-1] != "":
        return None
    shown.pop()

    def layout(row: Sequence[str]) -> list[str]:
        cells: list[list[str]] = []
        for c, cell in enumerate(row):
            inner = widths[c] - 2
            if c != _LIST_FOLD:
                pad = " " * (inner - cell_len(cell))
                cells.append([pad + cell if c == _LIST_RIGHT else cell + pad])
            elif cell.isprintable() and cell_len(cell) <= inner:
                cells.append([cell + " " * (inner - cell_len(cell))])
            else:
                lines = Text(cell).wrap(console, inner, justify="left", overflow="fold")
                cells.append([line.plain for line in lines] or [" " * inner])
        height = max(len(x) for x in cells)
        out = []
        for i in range(height):
            parts = [x[i] if i < len(x) else " " * (widths[c] - 2) for c, x in enumerate(cells)]
            out.append("  " + "   ".join(parts) + "  ")
        return out

    body = [line for row in stand_in for line in layout(row)]
    if len(shown) < len(body) + 1 or shown[len(shown) - 1 - len(body) : -1] != body:
        return None
    head, bottom = shown[: len(shown) - 1 - len(body)], shown[-1]
    return [*head, *(line for row in rows for line in layout(row)), bottom]


def _list_filter(cat: Catalog, query: str | None) -> tuple[EntryFilter, Callable[[dict[str, Any]], bool] | None]:
    """``list --filter``'s filter and the test it makes of an entry (None: keep everything). A status term
    (``is:error``, ``is:warning``, ``is:ok``) validates the registry first (through the validation cache)."""
    flt = EntryFilter.parse(query or "")
    if flt.unknown_fields:
        raise UsageError(
            f"--filter {query!r}: {unknown_field_text(flt.unknown_fields[0])}",
            hint=f"The fields are {', '.join(f + ':' for f in FILTER_FIELDS)}; words without a colon match ids, "
            f"paths, groups and descriptions. Terms: {FILTER_HELP}",
        )
    if flt.unknown_flags:
        raise UsageError(
            f"--filter {query!r}: is:{','.join(flt.unknown_flags)} is not a filter term",
            hint=f"is: takes rec, frozen, active, error, warning or ok. Terms: {FILTER_HELP}",
        )
    if flt.empty:
        raise UsageError(
            f"--filter {query!r}: {' '.join(flt.empty)} has no value",
            hint=f"Give one after the colon (method:miss), or drop the term. Terms: {FILTER_HELP}",
        )
    if not flt.active:
        return flt, None
    statuses: dict[str, str] = {}
    if flt.needs_status:
        from rwkv_registry.engine.validate import validate_registry

        found = FindingIndex(validate_registry(cat.root).findings, cat.entries, cat.index_entries)
        statuses = {as_text(e.get("id")): found.status(as_text(e.get("id"))) for e in cat.entries}
    return flt, flt.keeper(cat, statuses)


def print_list(cat: Catalog, query: str | None, fmt: str) -> int:
    """``rwkv-registry list [PATH] [--filter QUERY] [--format text|json]``: one row per entry of ``cat`` (those
    ``query`` keeps), grouped by base, as text or JSON on stdout; the exit code."""
    cat.require_index()
    flt, keep = _list_filter(cat, query)
    entries = [e for e in cat.entries if keep is None or keep(e)]
    if fmt == "json":
        out: dict[str, Any] = {
            "registry": cat.name,
            "bases": [{"name": b.get("name"), "status": b.get("status")} for b in cat.bases],
            "entries": [cat.entry_summary(e) for e in entries],
        }
        if keep is not None:
            out["filter"] = {"query": query, "kept": len(entries), "of": len(cat.entries)}
        sys.stdout.write(json_text(out) + "\n")
        return 0
    from rich.text import Text

    console = _console()
    if keep is None:
        console.print(Text(f"{cat.name}: {len(cat.entries)} entries, {len(cat.bases)} base(s)", style="bold"))
    else:
        console.print(
            Text(f"{cat.name}: {len(entries)} of {len(cat.entries)} entries ({flt.describe()})", style="bold")
        )
    grouped = cat.grouped(keep)
    if keep is not None:
        grouped = {b: m for b, m in grouped.items() if m}
    for base, methods in grouped.items():
        status = cat.base_status(base)
        title = printable(base) + (f" {FROZEN_TAG}" if status == "frozen" else "")
        rows = [  # registry text with its control characters escaped before the layout (textsafe.printable)
            (
                printable(as_text(e.get("id"))),
                printable(METHOD_LABEL.get(method, method)),
                printable(version),
                short_size(as_dict(e.get("file")).get("size")),
                RECOMMENDED_MARK if e.get("recommended") is True else "",
                printable(as_text(e.get("profile"), "—")),
                printable(as_text(e.get("description"))),
            )
            for method, versions in methods.items()
            for version, entries in versions.items()
            for e in entries
        ]
        lines = _plain_list_lines(console, title, rows) if PLAIN_LIST else None
        if lines is not None:
            console.file.write("".join(line + "\n" for line in lines))
            continue
        console.print(_list_table(title, rows or [("(no entries)", "", "", "", "", "", "")]))
    if not cat.bases and not cat.entries:
        console.print("no bases yet: `rwkv-registry add-base PATH BASE.pth`", style="dim")
    return 0


def print_show(cat: Catalog, what: str | None, fmt: str) -> int:
    """``rwkv-registry show [ENTRY_ID] [--path PATH] [--format text|json]``: ``what`` (an entry, a base or a weight
    never uploaded) in detail, as text or JSON on stdout; without it, the registry itself; the exit code."""
    cat.require_index()
    if what is None:
        return _show_registry(cat, fmt)
    e = cat.get_entry(what) or cat.entry_at(what)
    b = None if e is not None else cat.base(what)
    u = None if e is not None or b is not None else cat.get_unpublished(what)
    if u is not None:
        return _show_unpublished(cat, u, fmt)
    if e is None and b is None:
        raise cat._unknown(what)
    if fmt == "json":
        data = cat.describe(e) if e is not None else cat.describe_base(b or {})
        sys.stdout.write(json_text(data) + "\n")
        return 0
    from rich.rule import Rule

    console = _console()
    if b is not None:
        console.print(render_base_info(cat, b))
        console.print(Rule("scores", align="left"))
        console.print(render_scores(cat, as_text(b.get("name"))))
        return 0
    assert e is not None
    console.print(render_entry_info(cat, e, usage=False))
    console.print()
    for line in render_usage(cat, e):
        console.print(line, soft_wrap=True, markup=False, highlight=False)  # one line each, to copy and paste
    info, _ = cat.effective_train(e)
    console.print(Rule("train.json", align="left"))
    console.print(render_train(info, e))
    if e.get("method") == "miss":
        console.print(Rule("MiSS manifest", align="left"))
        console.print(render_miss(cat, e, cat.miss_summary(e)))
    console.print(Rule("scores", align="left"))
    console.print(render_scores(cat, as_text(e.get("base")), entry=e))
    console.print(Rule("smoke", align="left"))
    console.print(render_smoke(e))
    return 0


def _show_registry(cat: Catalog, fmt: str) -> int:
    """``show`` without an id: the registry's own record (the TUI's registry node), then one line per base."""
    about = cat.describe_registry()
    if fmt == "json":
        sys.stdout.write(json_text(about) + "\n")
        return 0
    from rich.rule import Rule
    from rich.text import Text

    console = _console()
    console.print(render_registry_info(cat))
    if not about["bases"]:
        return 0
    console.print(Rule("bases", align="left"))
    for b in about["bases"]:
        status = as_text(b["status"], "?")
        line = Text(as_text(b["name"], "?"), style="bold")
        frozen = status == "frozen"
        line.append(f"  {FROZEN_TAG}" if frozen else f"  {status}", style="cyan" if frozen else "")
        line.append(f"  {b['entries']['total']} entries ({_per_method(b['entries'])})")
        console.print(line)
        console.print(Text(f"  sha256 {as_text(b['sha256'], '—')}", style="dim"))
    console.print(Text("`rwkv-registry show BASE` shows a base and its scores, `list` the entries.", style="dim"))
    return 0


def _show_unpublished(cat: Catalog, u: dict[str, Any], fmt: str) -> int:
    """``show`` of a weight never uploaded (index.json ``unpublished``): what it was, its base, its scores."""
    if fmt == "json":
        sys.stdout.write(json_text(cat.describe_unpublished(u)) + "\n")
        return 0
    from rich.rule import Rule
    from rich.text import Text

    t = _kv_table()
    method = as_text(u.get("method"))
    title = Text(as_text(u.get("id")), style="bold")
    title.append(f"  {METHOD_LABEL.get(method, method)}")
    title.append("  † never uploaded: no file, no usage", style="dim")
    base = as_text(u.get("base"))
    t.add_row("base", base)
    t.add_row("base sha256", as_text(as_dict(cat.base(base)).get("sha256"), "—"))
    t.add_row("data", data_text(u))
    if u.get("description"):
        t.add_row("note", as_text(u.get("description")))
    console = _console()
    console.print(title)
    console.print(t)
    console.print(Rule("scores", align="left"))
    console.print(render_scores(cat, base, entry=u))
    return 0
