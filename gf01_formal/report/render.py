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
from gf01_formal.report.build import KEY_FIELDS, PRF

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


def tables(report: dict[str, Any]) -> list[tuple[str, list[str], list[list[str]], str]]:
    """The report's tables as (title, header, rows, note), shared by both renderings: the agents legend first."""
    cols, fixed = _varying(report)
    keyhead = [HEAD.get(c, c) for c in cols]
    out = [agents_table(report)]
    rows = []
    for g in report["groups"]:
        st = g["runs"]
        rows.append([g["agent"], *(_cell(g["key"][c]) for c in cols),
                     f"{st['total']} ({st['completed']}/{st['agent_error']}/{st['harness_error']}/"
                     f"{st['provider_error']})", str(g["n"]), str(g["instances"]), rate_text(g["score_c"]),
                     rate_text(g["goal"]), est_text(g["eff_t_given_goal"], "median"),
                     est_text(g["eff_t_given_certified"], "median")])
    fixed_note = "Fixed in every group: " + ", ".join(f"{k}={_cell(v)}" for k, v in fixed.items()) + ". " \
        if fixed else ""
    fixed_note += ("runs: total (completed/agent_error/harness_error/provider_error); harness and provider errors "
                   "are not scored.")
    out.append(("Groups", ["agent", *keyhead, "runs (c/ae/he/pe)",
                           "n scored", "instances", "Score_C", "goal", "median Eff_t given goal",
                           "median Eff_t given certified"], rows, fixed_note))
    prf = [[g["agent"], *(_cell(g["key"][c]) for c in cols),
            *(est_text(g[m], "mean") for m in PRF)] for g in report["groups"]]
    out.append(("AP/TS precision, recall and F1 (mean, 95 % bootstrap over instances)",
                ["agent", *keyhead, "AP P", "AP R", "AP F1", "TS P", "TS R", "TS F1"], prf, ""))
    rank_rows, pair_rows = [], []
    for s in report["strata"]:
        where = " / ".join(_cell(s["key"][c]) for c in cols)
        for r in s["ranking"]:
            rank_rows.append([where, str(r["rank"]), r["agent"], str(r["n"]),
                              "(" + ", ".join(_num(x) for x in r["kappa_mean"]) + ")"])
        for p in s["paired"]:
            sc, gl, test = p["score_c"], p["goal"], p["score_c_test"]
            pair_rows.append([where, f"{p['a']} - {p['b']}", str(sc["instances"]), est_text(sc, "difference"),
                              est_text(gl, "difference"), _num(test.get("p_value"), 4)])
    out.append(("Kappa ranking within each stratum (" + " / ".join(keyhead) + ")",
                ["stratum", "rank", "agent", "n", "mean kappa (M, G, -Eff_t, -Eff_a)"], rank_rows, ""))
    out.append(("Paired comparisons on shared instances",
                ["stratum", "agents", "shared instances", "Score_C difference", "goal difference",
                 "McNemar exact p (Score_C)"], pair_rows,
                "" if pair_rows else "No stratum holds two agents (agents of different tracks are never compared)."))
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


def markdown(report: dict[str, Any]) -> str:
    """The report as GitHub-flavoured Markdown."""
    out = ["# GF-01 report", "", *_summary(report), "", "## Methods", ""]
    out += [f"- {line}" for line in _methods(report)]
    for title, header, rows, note in tables(report):
        out += ["", f"## {title}", ""]
        if note:
            out += [note, ""]
        if rows:
            out.append("| " + " | ".join(h.replace("|", "\\|") for h in header) + " |")
            out.append("|" + "|".join("---" for _ in header) + "|")
            # A cell is one line: an agent's free-form parameter (a command line) must not break the table.
            out += ["| " + " | ".join(c.replace("\n", " ").replace("|", "\\|") for c in row) + " |"
                    for row in rows]
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


def html_page(report: dict[str, Any]) -> str:
    """The report as one self-contained HTML document (inline style, figures as embedded SVG)."""
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             '<meta name="viewport" content="width=device-width, initial-scale=1">',
             "<title>GF-01 report</title>", f"<style>{CSS}</style></head><body>", "<h1>GF-01 report</h1>"]
    parts += [f"<p>{html.escape(line)}</p>" for line in _summary(report)]
    parts.append("<h2>Methods</h2><ul>" + "".join(f"<li>{html.escape(line.replace('`', ''))}</li>"
                                                  for line in _methods(report)) + "</ul>")
    for title, header, rows, note in tables(report):
        parts.append(f"<h2>{html.escape(title)}</h2>")
        if note:
            parts.append(f'<p class="note">{html.escape(note)}</p>')
        if rows:
            parts.append(_table_html(header, rows))
    parts.append("<h2>Figures</h2>")
    parts += [_figure_html(svg, caption) for caption, svg in figures(report)]
    sw = ", ".join(f"{k} {v}" for k, v in report["software"].items())
    parts.append(f'<p class="note">Software: {html.escape(sw)}.</p></body></html>')
    return "\n".join(parts) + "\n"
