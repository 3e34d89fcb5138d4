"""The report as Markdown and as one self-contained HTML file, drawn from the report dict alone.

The HTML file has no external resource (no script, no stylesheet or font from elsewhere): its style is inline and
its figures are matplotlib SVG documents embedded as ``data:`` URIs, so it opens offline and a copy is complete.
Both renderings are functions of the report, so they are as deterministic as the report itself.
"""

from __future__ import annotations

import base64
import html
from collections.abc import Iterable
from typing import Any

from gf01_formal.artifacts import canonical_json
from gf01_formal.report.build import FEW_INSTANCES, KEY_FIELDS, PRF

#: Key fields always shown as columns; the others are shown when they vary, else listed once as fixed.
SHOWN_KEYS = ("eval_track", "split_id", "mode", "difficulty_slice")
HEAD = {"eval_track": "track", "split_id": "split", "mode": "mode", "difficulty_slice": "slice"}


def _num(x: float | None, digits: int = 3) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def _ci(ci: list[float] | None) -> str:
    return "" if ci is None else f" [{_num(ci[0])}, {_num(ci[1])}]"


def rate_text(r: dict[str, Any]) -> str:
    """``k/n = rate [lo, hi]`` (a rate with its Wilson interval)."""
    return "-" if not r["n"] else f"{r['k']}/{r['n']} = {_num(r['rate'])}{_ci(r['ci'])}"


def est_text(r: dict[str, Any], field: str) -> str:
    """``value [lo, hi]`` for a mean or median, ``-`` without runs."""
    return "-" if r[field] is None else f"{_num(r[field])}{_ci(r['ci'])}"


def _varying(report: dict[str, Any]) -> tuple[list[str], dict[str, Any]]:
    values: dict[str, set[str]] = {f: set() for f in KEY_FIELDS}
    for g in report["groups"]:
        for f in KEY_FIELDS:
            values[f].add(repr(g["key"][f]))
    cols = [f for f in KEY_FIELDS if f in SHOWN_KEYS or len(values[f]) > 1]
    fixed = {f: report["groups"][0]["key"][f] for f in KEY_FIELDS if f not in cols} if report["groups"] else {}
    return cols, fixed


def _cell(v: Any) -> str:
    return "-" if v is None else str(v).lower() if isinstance(v, bool) else str(v)


def _value(v: Any) -> str:
    """A legend value: a string as it is, a list as its items joined by commas, anything else as canonical JSON."""
    if isinstance(v, str):
        return v
    if isinstance(v, list):
        return ", ".join(_value(x) for x in v)
    return canonical_json(v)


def _pairs(obj: dict[str, Any]) -> str:
    """``k=v; k=v`` in key order (values as :func:`_value` writes them), ``-`` when empty."""
    return "; ".join(f"{k}={_value(v)}" for k, v in sorted(obj.items())) or "-"


def agents_table(report: dict[str, Any]) -> tuple[str, list[str], list[list[str]], str]:
    """The agents legend: who each label of the other tables is (name, tracks, spec parameters, what it reported)."""
    rows = [[a["agent"], a["agent_name"], ", ".join(a["eval_tracks"]), str(a["runs"]), a["agent_hash"][:16],
             _pairs(a["params"]), _pairs(a["reported"])] for a in report["agents"]]
    note = ("An agent is its name and spec hash; a label carries #hash8 when one name has several specs. Parameters "
            "are the spec's (secret-named values withheld, URLs cut to their host); 'reported' is what the runs "
            "recorded about the model and prompt.")
    return ("Agents", ["agent", "name", "track", "runs", "spec hash", "parameters", "reported"], rows, note)


def headline_title(key: dict[str, Any], varying: Iterable[str] = ()) -> str:
    """``EVAL-CB`` (and the split, and any other field in ``varying`` but the mode): what one headline table fixes."""
    parts = [str(key["eval_track"])]
    if key.get("split_id") is not None:
        parts.append(f"split {key['split_id']}")
    parts += [f"{f}={_cell(key[f])}" for f in varying if f not in ("eval_track", "mode", "split_id")]
    return ", ".join(parts)


def _headline_varying(report: dict[str, Any]) -> list[str]:
    keys = [h["key"] for h in report.get("headline", [])]
    return [f for f in (keys[0] if keys else {}) if len({repr(k[f]) for k in keys}) > 1]


def _tokens_text(tok: dict[str, Any] | None) -> str:
    if tok is None:
        return "-"
    unknown = f" (+{tok['unknown_runs']} runs unknown)" if tok["unknown_runs"] else ""
    return f"{tok['input']:,} in / {tok['output']:,} out{unknown}"


def _cost_text(tok: dict[str, Any] | None) -> str:
    if tok is None or tok["cost"] is None:
        return "-"
    return f"{tok['cost']:.4f}" + (" + unknown" if tok["unknown_runs"] else "")


def headline_tables(report: dict[str, Any]) -> list[tuple[str, list[str], list[list[str]], str]]:
    """The headline: one table per track (and split, and any other varying field but the mode), one row per agent
    and mode: runs, Score_C, goal rate, mean Eff_t / Eff_a of certified runs; for language models their tokens,
    and the cost when the report was given a price."""
    varying = _headline_varying(report)
    price = report.get("price_per_mtok")
    tracks: dict[str, list[dict[str, Any]]] = {}
    for h in report.get("headline", []):
        tracks.setdefault(headline_title(h["key"], varying), []).append(h)
    out = []
    for title, heads in tracks.items():
        llm = any(a["tokens"] is not None for h in heads for a in h["agents"])
        header = ["agent", "mode", "runs (scored)", "Score_C", "goal", "mean Eff_t (certified)",
                  "mean Eff_a (certified)"]
        if llm:
            header += ["tokens", "cost"] if price is not None else ["tokens"]
        rows = []
        for h in heads:
            for a in h["agents"]:
                row = [a["agent"], str(h["key"]["mode"]), f"{a['runs']} ({a['n']})", rate_text(a["score_c"]),
                       rate_text(a["goal"]), est_text(a["eff_t_given_certified"], "mean"),
                       est_text(a["eff_a_given_certified"], "mean")]
                if llm:
                    row.append(_tokens_text(a["tokens"]))
                    if price is not None:
                        row.append(_cost_text(a["tokens"]))
                rows.append(row)
        slices = sorted({_cell(s) for h in heads for s in h["slices"]})
        note = (f"Difficulty slices {', '.join(slices)} together; hard and normal mode apart (different objectives). "
                "Rates with 95 % Wilson intervals, means with 95 % bootstrap intervals over instances.")
        if llm:
            note += (" Tokens as the reported records say (the last record of each run, scored or not: an earlier "
                     "attempt played again was billed too); a run whose endpoint did not report usage is counted as "
                     "unknown, not 0.")
            if price is not None:
                note += f" Cost at {price[0]:g} (input) and {price[1]:g} (output) per million tokens."
        out.append((f"Headline: {title}", header, rows, note))
    return out


def private_headline_tables(report: dict[str, Any]) -> list[tuple[str, list[str], list[list[str]], str]]:
    """A public package's private_eval headline (``private_eval``: the key holder's rows of the sealed split, from
    private_eval.results.json), as the headline tables are drawn; none in any other report."""
    sec = report.get("private_eval")
    if not sec:
        return []
    attest = (f" The key holder's runs on the sealed split, from {sec['source']}: aggregates only, the runs and "
              f"instances withheld and committed to (the holder's full report: {sec['full_runs']} runs, records "
              f"digest {str(sec['full_runs_digest'])[:16]}, sha256 {str(sec['full_report_sha256'])[:16]}).")
    return [(title, header, rows, note + attest) for title, header, rows, note in
            headline_tables({"headline": sec["headline"], "price_per_mtok": sec.get("price_per_mtok")})]


def tables(report: dict[str, Any]) -> list[tuple[str, list[str], list[list[str]], str]]:
    """The report's tables as (title, header, rows, note), shared by both renderings: the agents legend first."""
    cols, fixed = _varying(report)
    keyhead = [HEAD.get(c, c) for c in cols]
    out = [agents_table(report)]
    rows = []
    few = 0
    for g in report["groups"]:
        st = g["runs"]
        few += bool(g.get("few_instances"))
        rows.append([g["agent"], *(_cell(g["key"][c]) for c in cols),
                     f"{st['total']} ({st['completed']}/{st['agent_error']}/{st['harness_error']}/"
                     f"{st['provider_error']})", str(g["n"]),
                     str(g["instances"]) + (" (few)" if g.get("few_instances") else ""), rate_text(g["score_c"]),
                     rate_text(g["goal"]), est_text(g["eff_t_given_goal"], "median"),
                     est_text(g["eff_t_given_certified"], "median")])
    fixed_note = "Fixed in every group: " + ", ".join(f"{k}={_cell(v)}" for k, v in fixed.items()) + ". " \
        if fixed else ""
    fixed_note += ("runs: total (completed/agent_error/harness_error/provider_error); harness and provider errors "
                   "are not scored.")
    if few:
        fixed_note += (f" {few} group(s) marked (few) hold fewer than {FEW_INSTANCES} instances: their intervals span "
                       "most of [0, 1]; the headline above holds their slices together.")
    out.append(("Groups", ["agent", *keyhead, "runs (c/ae/he/pe)",
                           "n scored", "instances", "Score_C", "goal", "median Eff_t given goal",
                           "median Eff_t given certified"], rows, fixed_note))
    prf = [[g["agent"], *(_cell(g["key"][c]) for c in cols),
            *(est_text(g[m], "mean") for m in PRF)] for g in report["groups"]]
    out.append(("AP/TS precision, recall and F1 (mean, 95 % bootstrap over instances)",
                ["agent", *keyhead, "AP P", "AP R", "AP F1", "TS P", "TS R", "TS F1"], prf, ""))
    rank_rows, pair_rows = [], []
    pairs = no_discordant = all_tied = 0
    for s in report["strata"]:
        where = " / ".join(_cell(s["key"][c]) for c in cols)
        all_tied += bool(s.get("all_tied"))
        for r in s["ranking"]:
            rank = str(r["rank"]) + ("=" if r.get("tied") else "")
            rank_rows.append([where, rank + (" (all tie)" if s.get("all_tied") else ""), r["agent"], str(r["n"]),
                              "(" + ", ".join(_num(x) for x in r["kappa_mean"]) + ")"])
        for p in s["paired"]:
            pairs += 1
            # A pair whose Score_C agrees on every shared instance has nothing to test (p = 1 by construction).
            if p.get("discordant", 1) == 0:
                no_discordant += 1
                continue
            sc, gl, test = p["score_c"], p["goal"], p["score_c_test"]
            pair_rows.append([where, f"{p['a']} - {p['b']}", str(sc["instances"]), str(p.get("discordant", "-")),
                              est_text(sc, "difference"), est_text(gl, "difference"), _num(test.get("p_value"), 4)])
    tie_note = "A rank written as 2= is shared by agents with equal mean kappa vectors: a tie, not an order."
    if all_tied:
        tie_note += f" In {all_tied} stratum(s) every agent ties: the ranking there orders nothing."
    out.append(("Kappa ranking within each stratum (" + " / ".join(keyhead) + ")",
                ["stratum", "rank", "agent", "n", "mean kappa (M, G, -Eff_t, -Eff_a)"], rank_rows,
                tie_note if rank_rows else ""))
    if not pairs:
        pair_note = "No stratum holds two agents (agents of different tracks are never compared)."
    else:
        pair_note = (f"Only pairs with discordant instances (Score_C differs on the instance) are tested: "
                     f"{no_discordant} of {pairs} pair(s) agree on every shared instance and are left out.")
    out.append(("Paired comparisons on shared instances",
                ["stratum", "agents", "shared instances", "discordant", "Score_C difference", "goal difference",
                 "McNemar exact p (Score_C)"], pair_rows, pair_note))
    cov = report["coverage"]
    if cov is not None:
        crow = [[r["split_id"], r["mode"], r["eval_track"], r["agent"], str(r["expected"]), str(r["observed"]),
                 str(r["missing"]), ", ".join(r["missing_ids"][:5]) + (" ..." if r["missing"] > 5 else "")]
                for r in cov["slices"]]
        note = ""
        if cov["panel"] is not None:
            v = cov["panel"]
            note = (f"Required {v['level']} panel ({', '.join(v['required'])}): "
                    + ("complete." if v["complete"] else f"incomplete in {len(v['incomplete'])} slice(s)."))
        if cov["unexpected"]:
            note += f" Runs outside the manifest: {sum(len(u['instances']) for u in cov['unexpected'])} instance(s)."
        out.append(("Manifest coverage", ["split", "mode", "track", "agent", "expected", "observed", "missing",
                                          "first missing"], crow, note.strip()))
    return out


def _summary(report: dict[str, Any]) -> list[str]:
    inp = report["inputs"]
    st = ", ".join(f"{k} {v}" for k, v in inp["statuses"].items())
    lines = [f"{inp['runs']} runs ({st}); {inp['scored']} scored; {inp['instances']} instances; "
             f"records digest {inp['digest'][:16]}."]
    named = {"M": "M(I), every valid certificate (section 7.3)", "MB": "M_B(I), within B_T (--gold-set MB)"}
    sets = report.get("gold_sets") or {}
    if sets:
        lines.append("AP/TS precision, recall and F1 against the DEC-025 best match in "
                     + "; ".join(f"{named[k]}{f' ({n} runs)' if len(sets) > 1 else ''}" for k, n in sets.items())
                     + ("; the sets are mixed: figures over both are not comparable." if len(sets) > 1 else "."))
    if report.get("private_eval"):
        lines.append(f"The first headline is private_eval's, from {report['private_eval']['source']} (the key "
                     "holder's runs, withheld); every other table is of the public runs this report is made from.")
    caps = report.get("caps")
    if caps:
        shown = ", ".join(f"{k} {caps[k]}" for k in ("seconds", "memory_kib", "conflicts", "nodes")
                          if caps[k] is not None)
        lines.append(f"Diagnostic caps ({caps['backend']}): {shown or 'none'}"
                     + (f"; PROVISIONAL: derived from {caps['sample_instances']} pilot instances, before the DEC-021 "
                        f"checkpoint of {caps['checkpoint']} (used with --allow-provisional-caps)."
                        if caps["provisional"] else "; frozen at the DEC-021 checkpoint."))
    return lines


def _methods(report: dict[str, Any]) -> list[str]:
    m = report["methods"]
    lines = [f"`{k}`: {v}" for k, v in m["ids"].items()]
    lines += [f"Ranking: {m['ranking']}.", f"Quartiles: {m['quartiles']}.", f"Statuses: {m['status_policy']}."]
    return lines


def _markdown_tables(tabs: list[tuple[str, list[str], list[list[str]], str]]) -> list[str]:
    out: list[str] = []
    for title, header, rows, note in tabs:
        out += ["", f"## {title}", ""]
        if note:
            out += [note, ""]
        if rows:
            out.append("| " + " | ".join(h.replace("|", "\\|") for h in header) + " |")
            out.append("|" + "|".join("---" for _ in header) + "|")
            # A cell is one line: an agent's free-form parameter (a command line) must not break the table.
            out += ["| " + " | ".join(c.replace("\n", " ").replace("|", "\\|") for c in row) + " |"
                    for row in rows]
    return out


def markdown(report: dict[str, Any]) -> str:
    """The report as GitHub-flavoured Markdown."""
    out = ["# GF-01 report", "", *_summary(report)]
    out += _markdown_tables(private_headline_tables(report) + headline_tables(report))
    out += ["", "## Methods", ""]
    out += [f"- {line}" for line in _methods(report)]
    out += _markdown_tables(tables(report))
    sw = ", ".join(f"{k} {v}" for k, v in report["software"].items())
    out += ["", f"Software: {sw}.", ""]
    return "\n".join(out)


CSS = """
body { font-family: system-ui, sans-serif; margin: 1.5em; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; font-size: 0.85em; }
th, td { border: 1px solid #bbb; padding: 0.2em 0.5em; text-align: left; vertical-align: top; }
th { background: #eee; }
tr:nth-child(even) td { background: #fafafa; }
figure { margin: 1em 0; }
figure img { max-width: 100%; border: 1px solid #ddd; }
.note { color: #555; font-size: 0.9em; }
"""


def _table_html(header: list[str], rows: Iterable[list[str]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _figure_html(svg: str, caption: str) -> str:
    data = base64.b64encode(svg.encode("utf-8")).decode("ascii")
    cap = html.escape(caption)
    return (f'<figure><img alt="{cap}" src="data:image/svg+xml;base64,{data}">'
            f"<figcaption>{cap}</figcaption></figure>")


def figures(report: dict[str, Any]) -> list[tuple[str, str]]:
    """(caption, SVG) of every figure of the report."""
    from gf01_formal.report import plots

    out = []
    for fig in report["figures"]:
        where = f"{fig['key']['eval_track']}, renderer {fig['key']['renderer_track']}, " \
                f"{fig['key']['adaptation_condition']}"
        out.append((f"Score_C by complexity quartile per agent ({where})", plots.quartile_figure(fig)))
        out.append((f"Eff_t distribution of certified runs per agent ({where})", plots.eff_t_figure(fig)))
    if report["coverage"] is not None and report["coverage"]["slices"]:
        out.append(("Manifest coverage per (split, mode, track, agent)",
                    plots.coverage_figure(report["coverage"]["slices"])))
    return out


def _html_tables(tabs: list[tuple[str, list[str], list[list[str]], str]]) -> list[str]:
    parts = []
    for title, header, rows, note in tabs:
        parts.append(f"<h2>{html.escape(title)}</h2>")
        if note:
            parts.append(f'<p class="note">{html.escape(note)}</p>')
        if rows:
            parts.append(_table_html(header, rows))
    return parts


def html_page(report: dict[str, Any]) -> str:
    """The report as one self-contained HTML document (inline style, figures as embedded SVG)."""
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             '<meta name="viewport" content="width=device-width, initial-scale=1">',
             "<title>GF-01 report</title>", f"<style>{CSS}</style></head><body>", "<h1>GF-01 report</h1>"]
    parts += [f"<p>{html.escape(line)}</p>" for line in _summary(report)]
    parts += _html_tables(private_headline_tables(report) + headline_tables(report))
    if report.get("headline"):
        from gf01_formal.report import plots

        parts.append(_figure_html(plots.headline_figure(report["headline"], _headline_varying(report)),
                                  "Score_C and goal rate per agent, with 95 % Wilson intervals, per track"))
    parts.append("<h2>Methods</h2><ul>" + "".join(f"<li>{html.escape(line.replace('`', ''))}</li>"
                                                  for line in _methods(report)) + "</ul>")
    parts += _html_tables(tables(report))
    parts.append("<h2>Figures</h2>")
    parts += [_figure_html(svg, caption) for caption, svg in figures(report)]
    sw = ", ".join(f"{k} {v}" for k, v in report["software"].items())
    parts.append(f'<p class="note">Software: {html.escape(sw)}.</p></body></html>')
    return "\n".join(parts) + "\n"
