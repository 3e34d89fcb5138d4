"""Reports with honest uncertainty (spec §7.2-7.4, §9; DEC-001, DEC-014c/d, DEC-019..023, DEC-054, DEC-056, DEC-058).

One module per concern, data flowing one way (a later module may import an earlier one, never the reverse):

==============  ==============================================================================================
module          what it is for
==============  ==============================================================================================
``stats``       the interval methods (Wilson via statsmodels, bootstrap clustered by instance via scipy), paired
                differences, McNemar, quartiles, rank correlation: every number with its method named
``load``        run records from runs files (schema-checked, the last record of each run id, files merged)
``coverage``    the DEC-056 panels and manifest coverage per (split, mode, track, agent)
``build``       ``gf01 report``: groups by every §7.4 dimension plus mode and agent, rankings, paired comparisons
``plots``       matplotlib figures as deterministic SVG text (imported only when a figure is drawn)
``render``      the report as Markdown and as one self-contained HTML file
``pilot``       ``gf01 pilot-analyze``: complexity quartiles, the DEC-014d triggers, per-knob audit fields
``caps``        ``gf01 caps derive``: the dual-threshold rule (DEC-022/023) and diagnostics metered under caps
``release``     ``gf01 release check`` and ``gf01 release package``
==============  ==============================================================================================

docs/reports.md states every rule these modules implement.
"""
