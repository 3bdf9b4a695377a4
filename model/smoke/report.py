"""The smoke report: JSON (``schemas/smoke-report.schema.json``), the verdict, the index record, text.

Verdict ``fail`` (``exit_code`` 1 = the entry is broken), any of:

- a logits row with NaN or Inf with the entry, in a case where the base alone had none;
- non-determinism with the entry: a case that gave different tokens (or losses) in two identical runs, where the
  base alone repeated itself;
- entry parse failures above ``parse_failure_threshold`` of the cases (default 20 %), unless the base alone fails to
  parse exactly the same cases;
- significantly worse than the base: exact McNemar p < ``alpha`` (0.05) *and* more losses than wins.

Verdict ``inconclusive`` (``exit_code`` 2, the code of the run's other input problems) when nothing blames the entry
but the base alone fails the same way: NaN/Inf or non-determinism with the base alone, or the entry's parse failures
above the threshold on exactly the cases where the base alone fails to parse. The same cases failing without the
entry is a harness or format problem (the prompt profile, the case file, the base file, the machine), not the entry.
Such a run is not recorded (``--record``): it says nothing about the entry.

Otherwise ``pass`` (exit 0), even when the entry is not significantly better: a smoke test looks
for breakage; the per-case comparison says how much better it is.
"""

from __future__ import annotations

import datetime as dt
import json
import math
from typing import Any

from rwkv_registry import __version__
from rwkv_registry.index.smoke_cases import CATEGORY_TITLES
from rwkv_registry.index.stats import mcnemar_exact
from rwkv_registry.model.smoke.evaluate import SideRun, SmokeResult
from rwkv_registry.model.smoke.prompt import CALL_OPENER

REPORT_KIND = "rwkv-registry-smoke"
REPORT_FORMAT = 1


def _now() -> str:
    return dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def _finite_or_none(x: float | None) -> float | None:
    return x if x is not None and math.isfinite(x) else None


def side_summary(side: SideRun, categories: list[str], case_categories: list[str]) -> dict[str, Any]:
    """Counts of one side: solved per category, parse failures, false refusals, loss, speed."""
    by_cat: dict[str, dict[str, int]] = {c: {"solved": 0, "total": 0} for c in categories}
    for cat, s in zip(case_categories, side.scores, strict=True):
        by_cat[cat]["total"] += 1
        by_cat[cat]["solved"] += int(s.correct)
    abst = [s for cat, s in zip(case_categories, side.scores, strict=True) if cat == "abstention"]
    st = side.stats
    processed = st.prefill_tokens + st.fed_tokens
    return {
        "solved": side.solved,
        "total": len(side.scores),
        "by_category": by_cat,
        "parse_failures": sum(s.parse_failure for s in side.scores),
        "false_refusals": sum(s.false_refusal for s in side.scores),
        "unknown_tools": sum(s.unknown_tool for s in side.scores),
        "abstention": {"solved": sum(s.correct for s in abst), "total": len(abst)},
        "mean_loss": _finite_or_none(side.mean_loss),
        "deterministic": all(side.deterministic),
        "finite": all(side.finite),
        "tokens": {"prefill": st.prefill_tokens, "fed": st.fed_tokens, "generated": st.generated_tokens},
        "tokens_per_s": processed / st.seconds if st.seconds > 0 else 0.0,
        "seconds": st.seconds,
        "cuda_graphs": st.graphed,
    }


def _case_side(side: SideRun, i: int) -> dict[str, Any]:
    call = side.calls[i]
    loss = side.nll[i] / side.nll_tokens[i] if side.nll_tokens[i] else None
    out = side.scores[i].to_json()
    out.update(
        {
            "output": call.text,
            "thinking": side.thinking[i].text if side.thinking is not None else None,
            "tokens": len(call.tokens),
            "finish": call.finish,
            "loss": _finite_or_none(loss),
            "deterministic": side.deterministic[i],
            "finite": side.finite[i],
        }
    )
    return out


def verdict(report: dict[str, Any]) -> tuple[str, list[str]]:
    """``("pass" | "fail" | "inconclusive", reasons)`` from a report's cases, sides, comparison and settings: the
    reasons that blame the entry first, then those the base alone shares (see the module docstring)."""
    e = report["sides"]["entry"]
    cmp_, settings, cases = report["comparison"], report["settings"], report["cases"]

    def failing(side: str, check: str) -> set[str]:
        if check == "parse_failure":
            return {c["id"] for c in cases if c[side]["parse_failure"]}
        return {c["id"] for c in cases if not c[side][check]}

    blame: list[str] = []  # the entry is broken
    shared: list[str] = []  # the base alone fails the same way: the harness or the format, not the entry
    e_nan, b_nan = failing("entry", "finite"), failing("base", "finite")
    if e_nan - b_nan:
        blame.append("non-finite logits (NaN/Inf) with the entry attached")
    if b_nan:
        shared.append(
            f"non-finite logits (NaN/Inf) with the base alone in {len(b_nan)} case(s): nothing can be judged (the "
            "base file or the harness is broken, not the entry)"
        )
    e_nd, b_nd = failing("entry", "deterministic"), failing("base", "deterministic")
    if e_nd - b_nd:
        blame.append(f"non-deterministic with the entry: {len(e_nd)} case(s) gave different tokens in two runs")
    if b_nd:
        shared.append(
            f"non-deterministic with the base alone: {len(b_nd)} case(s) gave different tokens in two runs (the "
            "harness or the machine, not the entry)"
        )
    rate = e["parse_failures"] / e["total"] if e["total"] else 0.0
    if rate > settings["parse_failure_threshold"]:
        said = (
            f"parse failures with the entry: {e['parse_failures']}/{e['total']} ({rate:.0%}) above the "
            f"{settings['parse_failure_threshold']:.0%} threshold"
        )
        if failing("entry", "parse_failure") == failing("base", "parse_failure"):
            shared.append(
                said + ", but the base alone fails to parse exactly the same cases: a harness or format problem "
                "(the prompt profile, the case file or the base), not the entry"
            )
        else:
            blame.append(said)
    if cmp_["p_value"] < settings["alpha"] and cmp_["losses"] > cmp_["wins"]:
        blame.append(
            f"significantly worse than the base: +{cmp_['wins']}/−{cmp_['losses']}, exact McNemar "
            f"p = {cmp_['p_value']:.3g} < {settings['alpha']}"
        )
    return ("fail" if blame else "inconclusive" if shared else "pass"), blame + shared


EXIT_CODES = {"pass": 0, "fail": 1, "inconclusive": 2}  # inconclusive: 2, as the run's other input problems


def recordable(report: dict[str, Any]) -> bool:
    """Whether ``--record`` keeps the run: a pass or a fail says something about the entry, an inconclusive run
    does not (the base alone failed the same way)."""
    return report["verdict"] != "inconclusive"


def build_report(result: SmokeResult) -> dict[str, Any]:
    """The JSON report of a run (valid against ``smoke-report.schema.json``)."""
    cases = result.cases.cases
    cats = result.cases.categories()
    case_cats = [c.category for c in cases]
    e, b = result.entry_side, result.base_side
    rows = []
    won, lost = [], []
    for i, c in enumerate(cases):
        ec, bc = e.scores[i].correct, b.scores[i].correct
        outcome = "win" if ec and not bc else ("loss" if bc and not ec else "tie")
        if outcome == "win":
            won.append(c.id)
        elif outcome == "loss":
            lost.append(c.id)
        rows.append(
            {
                "id": c.id,
                "category": c.category,
                "outcome": outcome,
                "expected": {"name": c.expected_name, "arguments": c.expected_arguments},
                "entry": _case_side(e, i),
                "base": _case_side(b, i),
            }
        )
    s = result.settings
    report: dict[str, Any] = {
        "kind": REPORT_KIND,
        "format_version": REPORT_FORMAT,
        "tool_version": __version__,
        "date": _now(),
        "registry": str(result.root),
        "entry": {
            "id": result.entry["id"],
            "method": result.entry["method"],
            "path": result.entry["path"],
            "base": result.entry["base"],
            "profile": result.profile,
            "sha256": result.entry["file"]["sha256"],
        },
        "base": {
            "name": result.base["name"],
            "file": str(result.base_file),
            "sha256": result.base_sha256,
            "hash_cached": result.base_hash_cached,
        },
        "environment": {
            "device": result.env.device,
            "device_name": result.env.device_name,
            "dtype": result.env.dtype,
            "torch": result.env.torch,
            "cuda": result.env.cuda,
        },
        "cases_file": {"source": result.cases.source, "sha256": result.cases.sha256, "count": len(cases)},
        "settings": {
            "max_call_tokens": s.max_call_tokens,
            "think_tokens": s.think_tokens,
            "parse_failure_threshold": s.parse_failure_threshold,
            "alpha": s.alpha,
            "runs": s.runs,
        },
        "sides": {"entry": side_summary(e, cats, case_cats), "base": side_summary(b, cats, case_cats)},
        "comparison": {
            "wins": len(won),
            "losses": len(lost),
            "ties": len(cases) - len(won) - len(lost),
            "p_value": mcnemar_exact(len(won), len(lost)),
            "won": won,
            "lost": lost,
        },
        "timing": {k: round(v, 4) for k, v in result.timing.items()},
        "cases": rows,
    }
    report["verdict"], report["reasons"] = verdict(report)
    report["exit_code"] = EXIT_CODES[report["verdict"]]
    return report


def smoke_record(report: dict[str, Any]) -> dict[str, Any]:
    """The record ``--record`` appends to the entry's ``smoke`` list (``smoke-record.schema.json``)."""

    def score(side: dict[str, Any]) -> dict[str, Any]:
        return {"solved": side["solved"], "total": side["total"], "by_category": side["by_category"]}

    e, b = report["sides"]["entry"], report["sides"]["base"]
    return {
        "date": report["date"],
        "device": report["environment"]["device_name"],
        "torch": report["environment"]["torch"],
        "cuda": report["environment"]["cuda"],
        "cases_sha256": report["cases_file"]["sha256"],
        "cases": report["cases_file"]["count"],
        "profile": report["entry"]["profile"],
        "entry_score": score(e),
        "base_score": score(b),
        "wins": report["comparison"]["wins"],
        "losses": report["comparison"]["losses"],
        "p_value": report["comparison"]["p_value"],
        "verdict": report["verdict"],
        "tool_version": report["tool_version"],
        "checks": {
            "finite": e["finite"] and b["finite"],
            "deterministic": e["deterministic"] and b["deterministic"],
            "entry_parse_failures": e["parse_failures"],
            "base_parse_failures": b["parse_failures"],
            "false_refusals": e["false_refusals"],
            "entry_loss": e["mean_loss"],
            "base_loss": b["mean_loss"],
            "reasons": list(report["reasons"]),
        },
        "run": {
            "dtype": report["environment"]["dtype"],
            "wall_s": report["timing"]["wall_s"],
            "tokens_per_s": round(e["tokens_per_s"], 1),
        },
    }


def append_record(root: Any, entry_id: str, record: dict[str, Any]) -> None:
    """Append ``record`` to the entry's ``smoke`` list through the core's atomic, locked write path."""
    from rwkv_registry.store.ops import update_index

    def edit(index: dict[str, Any]) -> None:
        for e in index["entries"]:
            if e["id"] == entry_id:
                e.setdefault("smoke", []).append(record)
                return
        raise KeyError(entry_id)  # pragma: no cover - the entry was found before the run

    update_index(root, edit)


# ---------------------------------------------------------------------------------------- text


def _pct(n: int, total: int) -> str:
    return f"{n}/{total}" + (f" ({n / total:.0%})" if total else "")


def _loss(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3f}"


FAILED_SHOWN = 20  # the text report lists at most this many failed cases (the JSON report has them all)


def _short(text: str, width: int = 48) -> str:
    """``text`` on one line (newlines written ``\\n``), cut to ``width`` characters with an ellipsis."""
    one = text.replace("\r", "\\r").replace("\n", "\\n")
    return one if len(one) <= width else one[: width - 1] + "…"


def _call_text(name: str, arguments: Any) -> str:
    return f"{name} {_short(json.dumps(arguments, ensure_ascii=False, separators=(',', ':')), 40)}"


def what_came(side: dict[str, Any]) -> str:
    """One case side's answer, short: the call and what is wrong with it, or the text that did not parse."""
    if side["parse_failure"]:
        return f"unparseable {_short(CALL_OPENER + side['output'])} ({side['parse_error']})"
    issues = []
    if side["unknown_tool"]:
        issues.append("a tool not offered")
    elif side["false_refusal"]:
        issues.append("a false refusal")
    elif not side["name_ok"]:
        issues.append("another tool")
    issues += [f"missing {a}" for a in side["missing"]]
    issues += [f"invented {a}" for a in side["invented"]]
    issues += [f"wrong {a}" for a in side["wrong_values"]]
    return _call_text(side["name"], side["arguments"]) + (f" ({', '.join(issues)})" if issues else "")


def failed_lines(report: dict[str, Any], limit: int = FAILED_SHOWN) -> list[str]:
    """The cases the entry got wrong, one line each: id, what was expected, what came, and whether the base alone
    got it right; at most ``limit`` lines and one that says how many more."""
    bad = [c for c in report["cases"] if not c["entry"]["correct"]]
    lines = []
    for c in bad[:limit]:
        exp = c.get("expected")
        expected = _call_text(exp["name"], exp["arguments"]) if exp else "(not in this report)"
        base = "base alone: right" if c["base"]["correct"] else "base alone: wrong too"
        lines.append(f"{c['id']}: expected {expected}; got {what_came(c['entry'])}; {base}")
    if len(bad) > limit:
        lines.append(f"… and {len(bad) - limit} more (`--format json` has every case)")
    return lines


def render(report: dict[str, Any], console: Any) -> None:
    """Print the report for humans with rich: per-category table, comparison, checks, verdict."""
    from rich.markup import escape
    from rich.table import Table

    e, b = report["sides"]["entry"], report["sides"]["base"]
    ent, cmp_ = report["entry"], report["comparison"]
    env = report["environment"]
    console.print(
        f"[bold]smoke[/] {escape(ent['id'])} ({ent['method']}, profile {ent['profile']}) on base {escape(ent['base'])}"
    )
    console.print(
        f"[dim]{escape(env['device_name'])}, {env['dtype']}, torch {env['torch']}"
        f"{', CUDA ' + env['cuda'] if env['cuda'] else ''}; {report['cases_file']['count']} cases from "
        f"{escape(report['cases_file']['source'])} (sha256 {report['cases_file']['sha256'][:12]}…)[/]"
    )
    outcomes: dict[str, dict[str, int]] = {}
    for c in report["cases"]:
        o = outcomes.setdefault(c["category"], {"win": 0, "loss": 0, "tie": 0})
        o[c["outcome"]] += 1
    table = Table(title="entry vs base alone, per category")
    for col in ("category", "cases", "entry", "base", "+wins", "−losses"):
        table.add_column(col, justify="left" if col == "category" else "right")
    for cat, tally in e["by_category"].items():
        bt = b["by_category"][cat]
        o = outcomes.get(cat, {"win": 0, "loss": 0})
        table.add_row(
            CATEGORY_TITLES.get(cat, cat),
            str(tally["total"]),
            str(tally["solved"]),
            str(bt["solved"]),
            str(o["win"]),
            str(o["loss"]),
        )
    table.add_row(
        "all", str(e["total"]), str(e["solved"]), str(b["solved"]), str(cmp_["wins"]), str(cmp_["losses"]), style="bold"
    )
    console.print(table)
    console.print(
        f"+{cmp_['wins']}/−{cmp_['losses']} on {cmp_['wins'] + cmp_['losses']} discordant cases, "
        f"exact McNemar p = {cmp_['p_value']:.3g}"
    )
    best = mcnemar_exact(0, e["total"]) if e["total"] else 1.0
    if best >= report["settings"]["alpha"]:
        console.print(
            f"[yellow]note[/]: with {e['total']} case(s) no difference from the base can reach p < "
            f"{report['settings']['alpha']} (at best p = {best:.3g}); this run looks for breakage only"
        )
    if cmp_["won"]:
        console.print(f"[green]won[/]: {escape(', '.join(cmp_['won']))}")
    if cmp_["lost"]:
        console.print(f"[red]lost[/]: {escape(', '.join(cmp_['lost']))}")
    failed = failed_lines(report)
    if failed:
        wrong = sum(1 for c in report["cases"] if not c["entry"]["correct"])
        console.print(f"[bold]failed with the entry[/] ({wrong} of {e['total']}):")
        for line in failed:
            console.print(f"  {escape(line)}", soft_wrap=True)  # one line per case, for grep and copy

    def mark(ok: bool) -> str:
        return "[green]✓[/]" if ok else "[bold red]✗[/]"

    checks = Table(show_header=True, title="checks")
    for col in ("", "entry", "base"):
        checks.add_column(col, justify="left" if not col else "right")
    checks.add_row("parse failures", _pct(e["parse_failures"], e["total"]), _pct(b["parse_failures"], b["total"]))
    checks.add_row("false refusals", str(e["false_refusals"]), str(b["false_refusals"]))
    checks.add_row("unknown tools", str(e["unknown_tools"]), str(b["unknown_tools"]))
    checks.add_row(
        "abstention",
        _pct(e["abstention"]["solved"], e["abstention"]["total"]),
        _pct(b["abstention"]["solved"], b["abstention"]["total"]),
    )
    checks.add_row("deterministic (2 runs)", mark(e["deterministic"]), mark(b["deterministic"]))
    checks.add_row("logits finite", mark(e["finite"]), mark(b["finite"]))
    checks.add_row("loss of expected calls", _loss(e["mean_loss"]), _loss(b["mean_loss"]))
    checks.add_row("tokens/s", f"{e['tokens_per_s']:.0f}", f"{b['tokens_per_s']:.0f}")
    console.print(checks)
    t = report["timing"]
    console.print(
        f"[dim]wall {t['wall_s']:.1f} s (hash {t['hash_s']:.1f} s"
        f"{' cached' if report['base']['hash_cached'] else ''}, load {t['load_s']:.1f} s, "
        f"evaluation {t['eval_s']:.1f} s)[/]"
    )
    if report["verdict"] == "pass":
        console.print("[bold green]PASS[/]: the entry loads on its base and is not broken")
    elif report["verdict"] == "inconclusive":
        console.print(
            "[bold yellow]INCONCLUSIVE[/]: the base alone fails the same way, so this is a harness or format "
            "problem, not the entry (check the prompt profile, the case file and the base file)"
        )
    else:
        console.print("[bold red]FAIL[/]: the entry is broken")
    for r in report["reasons"]:
        console.print(f"  - {escape(r)}")
