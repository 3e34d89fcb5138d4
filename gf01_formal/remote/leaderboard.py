"""The leaderboard of an evaluation server: the headline of ``gf01 report`` over the server's records (per track,
each team's agents with their Score_C and goal rates and Wilson intervals, mean Eff_t and Eff_a of certified runs),
the baseline panel's agents beside them (DEC-056), and nothing per instance.

The baseline column holds the runs of the operator's own teams (tokens issued with ``--panel``: the server plays the
panel through its own wire, docs/remote.md), whatever their agents are called; a team's agent is the team's even
when the team names it ``oracle`` or plays the built-in ``oracle`` itself. A record names its team in
``agent_spec.params.team``, set by the server, never by the relay.

The numbers are the report's own (:func:`gf01_formal.report.build.build_report`), row for row: ``gf01 report`` of
the same runs file gives the same headline (tests/test_remote.py holds them equal). A headline row fixes every
reporting dimension but the difficulty slice (spec §7.4, never pooled across tracks, modes or splits).
"""

from __future__ import annotations

import html
import os
from typing import Any

LEADERBOARD_SCHEMA = "gf01-formal.leaderboard.v1"


def leaderboard(runs_path: str | os.PathLike[str], panel: frozenset[str] = frozenset()) -> dict[str, Any]:
    """The leaderboard of a runs file (an empty or missing one: no rows); ``panel``: the operator's teams, whose
    runs form the baseline column (module docstring)."""
    from pathlib import Path

    from gf01_formal.report.build import build_report
    from gf01_formal.report.load import load_runs

    path = Path(runs_path)
    head = {"schema_version": LEADERBOARD_SCHEMA, "panel": sorted(panel)}
    if not path.exists() or path.stat().st_size == 0:
        return {**head, "runs_digest": None, "rows": []}
    report = build_report(load_runs([path]))
    operator = {a["agent"] for a in report["agents"] if (a.get("params") or {}).get("team") in panel}
    rows = []
    for row in report["headline"]:
        teams = [a for a in row["agents"] if a["agent"] not in operator]
        baselines = [a for a in row["agents"] if a["agent"] in operator]
        rows.append({"key": row["key"], "slices": row["slices"], "teams": teams, "baselines": baselines})
    return {**head, "runs_digest": report["inputs"]["digest"], "rows": rows}


def _rate(value: dict[str, Any]) -> str:
    if value.get("rate") is None:
        return "-"
    lo, hi = value["ci"]
    return f"{value['rate']:.3f} [{lo:.3f}, {hi:.3f}] ({value['k']}/{value['n']})"


def _mean(value: dict[str, Any] | None) -> str:
    if not value or value.get("mean") is None:
        return "-"
    ci = value.get("ci")
    return f"{value['mean']:.2f}" + (f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else "")


def page(board: dict[str, Any]) -> str:
    """The leaderboard as an HTML page (no script, no style: the server's security headers forbid inline code)."""
    out = ["<!doctype html>", '<html lang="en"><head><meta charset="utf-8"><title>GF-01 leaderboard</title></head>',
           "<body>", "<h1>GF-01 leaderboard</h1>",
           "<p>Per track, each agent's Score_C and goal rates with their 95 % Wilson intervals, and the baseline "
           "panel beside them; the figures are those of <code>gf01 report</code> on the server's records.</p>"]
    if not board["rows"]:
        out.append("<p>No run is recorded yet.</p>")
    for row in board["rows"]:
        key = row["key"]
        title = ", ".join(f"{k}={key[k]}" for k in ("eval_track", "split_id", "mode", "renderer_track",
                                                     "adaptation_condition") if k in key)
        out.append(f"<h2>{html.escape(title)}</h2>")
        out.append("<table><thead><tr><th>agent</th><th>panel</th><th>runs</th><th>Score_C</th><th>goal</th>"
                   "<th>Eff_t | certified</th><th>Eff_a | certified</th></tr></thead><tbody>")
        for kind, agents in (("team", row["teams"]), ("baseline", row["baselines"])):
            for a in agents:
                cells = [a["agent"], kind, str(a["n"]), _rate(a["score_c"]), _rate(a["goal"]),
                         _mean(a.get("eff_t_given_certified")), _mean(a.get("eff_a_given_certified"))]
                out.append("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells) + "</tr>")
        out.append("</tbody></table>")
    out.append(f"<p>runs digest: <code>{html.escape(str(board['runs_digest']))}</code></p></body></html>")
    return "\n".join(out) + "\n"
