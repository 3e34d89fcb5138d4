"""The figures of reports and pilot analyses, drawn with matplotlib as SVG text that is the same on every run.

Determinism: no pyplot (no global figure state), the Agg-free ``Figure`` API, settings applied in an
``rc_context`` only while drawing, a fixed ``svg.hashsalt`` (matplotlib otherwise salts its element ids at random),
no ``Date`` metadata, and text kept as SVG ``<text>`` (``svg.fonttype = "none"``) rather than glyph outlines.
Each function takes the report's (or the analysis') data and returns one SVG document.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any

RC = {
    "svg.hashsalt": "gf01-formal",
    "svg.fonttype": "none",
    "font.family": "DejaVu Sans",
    "font.size": 9,
    "axes.grid": True,
    "grid.alpha": 0.3,
}
QUARTERS = ["Q1", "Q2", "Q3", "Q4"]


def _svg(fig: Any) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", metadata={"Date": None})
    return buf.getvalue()


def _draw(build: Any, *args: Any) -> str:
    import matplotlib
    from matplotlib.figure import Figure

    with matplotlib.rc_context(RC):
        fig = Figure()
        build(fig, *args)
        return _svg(fig)


def _margins(fig: Any, rows: int, top_title: bool = True) -> None:
    """Fixed margins in inches (a layout engine costs several extra draws per figure)."""
    w, h = fig.get_size_inches()
    fig.subplots_adjust(left=0.75 / w, right=1 - 0.15 / w, bottom=0.6 / h, top=1 - (0.75 if top_title else 0.35) / h,
                        wspace=0.9 / (w / 2), hspace=0.9 / (h / max(1, rows)))


def _panel_grid(fig: Any, n: int) -> Any:
    """Axes for ``n`` panels, two to a row, the unused cell hidden."""
    fig.set_size_inches(4.2 * min(2, n), 3.0 * ((n + 1) // 2))
    axes = fig.subplots((n + 1) // 2, min(2, n), squeeze=False)
    for ax in axes.flat[n:]:
        ax.set_visible(False)
    return axes


def _legend_or_note(ax: Any, drawn: bool, note: str) -> None:
    """The legend of a panel that drew something, else ``note`` in its middle (a legend with no labelled artist is
    a matplotlib warning on stderr)."""
    if drawn:
        ax.legend(fontsize=7, loc="best")
    else:
        ax.text(0.5, 0.5, note, ha="center", va="center", transform=ax.transAxes)


def _title(key: dict[str, Any]) -> str:
    return f"{key.get('eval_track', '')} · {key.get('renderer_track', '')} · {key.get('adaptation_condition', '')}"


def headline_figure(headline: list[dict[str, Any]], varying: list[str]) -> str:
    """Score_C and goal rate per agent with their Wilson intervals, one panel per headline (track, mode, split)."""

    def build(fig: Any, data: list[dict[str, Any]]) -> None:
        most = max(len(h["agents"]) for h in data)
        rows = (len(data) + 1) // 2
        axes_h = 0.35 + 0.35 * most  # inches per panel; 0.9 in between rows for a title and the axis label
        fig.set_size_inches(4.2 * min(2, len(data)), rows * (axes_h + 0.9) + 0.5)
        axes = fig.subplots(rows, min(2, len(data)), squeeze=False)
        for ax in axes.flat[len(data):]:
            ax.set_visible(False)
        drawn: dict[str, Any] = {}
        for ax, h in zip(axes.flat, data, strict=False):
            agents = h["agents"]
            ys = list(range(len(agents)))[::-1]  # the first agent on top, as in the table
            for field, marker, shift, colour in (("score_c", "o", 0.12, "#1f5fa8"), ("goal", "s", -0.12, "#c06a1a")):
                pts = [(a[field]["rate"], a[field]["ci"], y) for a, y in zip(agents, ys, strict=True) if a[field]["n"]]
                if not pts:
                    continue
                err = [[r - ci[0] for r, ci, _ in pts], [ci[1] - r for r, ci, _ in pts]]
                drawn[field] = ax.errorbar([r for r, _, _ in pts], [y + shift for _, _, y in pts], xerr=err,
                                           fmt=marker, capsize=3, color=colour)
            ax.set_yticks(ys, [a["agent"] for a in agents])
            ax.set_ylim(-0.6, len(agents) - 0.4)
            ax.set_xlim(-0.03, 1.03)
            ax.set_xlabel("rate (95 % Wilson interval)")
            key = h["key"]
            title = f"{key['eval_track']} · {key['mode']}"
            title += f" · {key['split_id']}" if key.get("split_id") is not None else ""
            title += "".join(f" · {key[f]}" for f in varying if f not in ("eval_track", "mode", "split_id"))
            ax.set_title(title)
            if not any(a["n"] for a in agents):
                ax.text(0.5, 0.5, "no scored run", ha="center", va="center", transform=ax.transAxes)
        w, hgt = fig.get_size_inches()
        if drawn:  # one legend for the figure, above the panels: inside a panel it hides points at 0 or 1
            names = {"score_c": "Score_C", "goal": "goal"}
            fig.legend([drawn[f] for f in names if f in drawn], [names[f] for f in names if f in drawn],
                       loc="upper right", ncols=2, fontsize=8, frameon=False)
        fig.subplots_adjust(left=1.1 / w, right=1 - 0.15 / w, bottom=0.55 / hgt, top=1 - 0.55 / hgt,
                            wspace=1.3 / (w / 2), hspace=0.9 / axes_h)

    return _draw(build, headline)


def _panel_figure(figure: dict[str, Any], title: str, draw_panel: Callable[[Any, dict[str, Any]], None]) -> str:
    """One panel per (split, mode) of ``figure``, each drawn by ``draw_panel(ax, panel)``, under ``title``."""

    def build(fig: Any, data: dict[str, Any]) -> None:
        panels = data["panels"]
        axes = _panel_grid(fig, len(panels))
        for ax, panel in zip(axes.flat, panels, strict=False):
            draw_panel(ax, panel)
        fig.suptitle(f"{title} — " + _title(data["key"]))
        _margins(fig, axes.shape[0])

    return _draw(build, figure)


def quartile_figure(figure: dict[str, Any]) -> str:
    """Score_C rate by z(I) quartile per agent with Wilson intervals, one panel per (split, mode)."""

    def draw_panel(ax: Any, panel: dict[str, Any]) -> None:
        shown = 0
        for k, agent in enumerate(panel["agents"]):
            pts = [(QUARTERS.index(f"Q{q['quartile']}") + (k - len(panel["agents"]) / 2) * 0.06,
                    q["score_c"]["rate"], q["score_c"]["ci"]) for q in agent["quartiles"] if q["score_c"]["n"]]
            if not pts:
                continue
            shown += 1
            xs = [p[0] for p in pts]
            ys = [p[1] for p in pts]
            err = [[p[1] - p[2][0] for p in pts], [p[2][1] - p[1] for p in pts]]
            ax.errorbar(xs, ys, yerr=err, marker="o", capsize=3, label=agent["agent"])
        ax.set_xticks(range(4), QUARTERS)
        ax.set_ylim(-0.05, 1.05)
        ax.set_xlabel("complexity quartile of z(I)")
        ax.set_ylabel("Score_C rate (95 % Wilson)")
        ax.set_title(f"{panel['split_id'] or 'no split'} / {panel['mode']} ({panel['instances']} instances)")
        # Runs without z(I) have no quartile: a panel of such runs draws nothing and says why.
        _legend_or_note(ax, bool(shown), "no scored run with z(I)")

    return _panel_figure(figure, "Score_C by complexity quartile", draw_panel)


def eff_t_figure(figure: dict[str, Any]) -> str:
    """Eff_t distributions of certified runs per agent (bars of run counts), one panel per (split, mode)."""

    def draw_panel(ax: Any, panel: dict[str, Any]) -> None:
        from matplotlib.ticker import MaxNLocator

        agents = panel["agents"]
        width = 0.8 / max(1, len(agents))
        for k, agent in enumerate(agents):
            hist = agent["eff_t_given_certified"]
            if hist:
                ax.bar([v + (k - (len(agents) - 1) / 2) * width for v, _ in hist], [c for _, c in hist],
                       width=width, label=agent["agent"])
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_xlabel("Eff_t (distinct intervened timesteps), certified runs")
        ax.set_ylabel("runs")
        ax.set_title(f"{panel['split_id'] or 'no split'} / {panel['mode']}")
        _legend_or_note(ax, any(a["eff_t_given_certified"] for a in agents), "no certified run")

    return _panel_figure(figure, "Eff_t given certified", draw_panel)


def coverage_figure(rows: list[dict[str, Any]]) -> str:
    """Observed / expected instances per (split, mode, track, agent) slice, as horizontal bars."""

    def build(fig: Any, data: list[dict[str, Any]]) -> None:
        fig.set_size_inches(7.0, 0.5 + 0.22 * len(data))
        ax = fig.subplots()
        labels = [f"{r['split_id']}/{r['mode']} {r['agent']} ({r['eval_track']})" for r in data]
        frac = [r["observed"] / r["expected"] if r["expected"] else 0.0 for r in data]
        ys = list(range(len(data)))[::-1]
        ax.barh(ys, [1.0] * len(data), color="#dddddd")
        ax.barh(ys, frac, color=["#2a7a2a" if r["missing"] == 0 else "#b03030" for r in data])
        ax.set_yticks(ys, labels, fontsize=7)
        ax.set_xlim(0, 1)
        ax.set_xlabel("observed / expected instances")
        ax.set_title("Manifest coverage")
        w, h = fig.get_size_inches()
        fig.subplots_adjust(left=3.2 / w, right=1 - 0.2 / w, bottom=0.45 / h, top=1 - 0.3 / h)

    return _draw(build, rows)


def knob_figure(knob: str, slices: list[dict[str, Any]]) -> str:
    """Score_C rate by knob quartile (Wilson intervals) per agent slice, for one complexity knob."""

    def build(fig: Any, name: str, data: list[dict[str, Any]]) -> None:
        fig.set_size_inches(5.0, 3.2)
        ax = fig.subplots()
        shown = 0
        for k, sl in enumerate(data):
            pts = [(i + (k - len(data) / 2) * 0.05, q["score_c"]["rate"], q["score_c"]["ci"])
                   for i, q in enumerate(sl["quartiles"]) if q["score_c"]["n"]]
            if not pts:
                continue
            shown += 1
            err = [[p[1] - p[2][0] for p in pts], [p[2][1] - p[1] for p in pts]]
            ax.errorbar([p[0] for p in pts], [p[1] for p in pts], yerr=err, marker="o", capsize=3,
                        label=f"{sl['agent']} {sl['mode']}" + (" (constant)" if sl["constant"] else ""))
        ax.set_xticks(range(4), QUARTERS)
        ax.set_ylim(-0.05, 1.05)
        ax.set_xlabel(f"quartile of knob '{name}' (normalised value)")
        ax.set_ylabel("Score_C rate (95 % Wilson)")
        ax.set_title(f"Score_C against {name}")
        _margins(fig, 1, top_title=False)
        if shown:
            ax.legend(fontsize=7, loc="best")
        else:
            ax.text(0.5, 0.5, "no runs with this knob known", ha="center", va="center", transform=ax.transAxes)

    return _draw(build, knob, slices)
