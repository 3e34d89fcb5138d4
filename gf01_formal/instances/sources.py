"""Where an instance comes from: an instance file, one instance of a bundle, an HOA file (a Mealy controller) or an
AIGER circuit with :class:`InstanceOptions`. :func:`open_instance` is the one way every command and test turns its
INSTANCE argument into an instance and its solver-level Problem; :func:`instance_from_hoa` is the one way from HOA
text to an instance (``gf01 import hoa`` writes what it returns), :func:`instance_from_aiger` from a circuit
(``gf01 import aiger``). Both make the system with :func:`~gf01_formal.instances.spec.hoa_system` or
:func:`~gf01_formal.instances.spec.aiger_system` (as the directory families do) and hand the view and the effect they
parsed on to the Problem: a command that opens an HOA file or a circuit parses it, and its effect, once.

>>> inst, problem = open_instance("bundle.json", bundle.instances[0].instance_id)
>>> inst, problem = open_instance("arbiter.hoa", options=InstanceOptions(trace="r0&!r1;!r0&r1", effect="g0"))
>>> problem.horizon, inst.meta.provenance
(2, 'import:hoa')
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from aig.view import CircuitView
from encoders.problem import MODES, Problem
from gf01_formal.instances.io import load_set
from gf01_formal.instances.model import Instance, Meta, System, make_instance
from gf01_formal.instances.problem import task_problem
from gf01_formal.instances.spec import SystemSpec, Task, aiger_system, hoa_system, trace_pairs
from gf01_formal.instances.traces import parse_trace, read_effect, trace_to_json
from hoa.errors import Gf01Error, quote
from hoa.files import read_bytes
from hoa.label import Expr
from hoa.mealy import MealyView
from solvers.limits import Limits

#: ``meta.generator_version`` of instances made from HOA files.
SOURCE_VERSION = "gf01-formal.sources.v1"

@dataclass(frozen=True)
class InstanceOptions:
    """What an HOA file does not say about an instance, with the one set of defaults every command uses.

    ``trace``: JSON text, a decoded JSON list of ``{input: 0|1}``, or a Spot-style word ``a&!b;!a&b``; it is always
    the trace itself, never a file name (``--trace-file`` reads the file and names it in ``trace_source``, which
    errors in the trace then name). ``effect``: a Boolean expression over output names. Defaults: t* = T-1; hard
    mode; window = w(I) of DEC-014b from the measured knobs (in hard mode the window plays no part and, unmeasured,
    is stored as 1); B_T = T; B_A = T x |AP_in|; outputs = the file's ``controllable-AP``. ``observe`` (AIGER
    circuits only): latches added to the outputs, by name. ``edit`` (AIGER circuits only): the inputs the player
    edits, ``all`` (default), ``uncontrollable`` / ``controllable`` (SYNTCOMP's split by the ``controllable_*``
    prefix) or a comma-separated list of names; the others follow the base trace inside the circuit
    (:func:`aig.freeze.freeze_inputs`), and AP_in are the edited ones. ``resolve`` (HOA files only): how to read a
    controller that is not output-deterministic (``first-edge``); without it such a file is refused.
    """

    trace: str | list[Any] | None = None
    effect: str | None = None
    t_star: int | None = None
    mode: str = "hard"
    window: int | None = None
    budget_t: int | None = None
    budget_a: int | None = None
    outputs: tuple[str, ...] | None = None
    trace_source: str | None = None
    observe: tuple[str, ...] | None = None
    edit: str = "all"
    resolve: str | None = None

    @property
    def needs_measurement(self) -> bool:
        """Whether the window can only come from measuring the instance (normal mode, no window given)."""
        return self.mode == "normal" and self.window is None


def instance_from_hoa(
    hoa_text: str,
    options: InstanceOptions,
    *,
    source: str | None = None,
    measure: bool = True,
    count_limits: Limits | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> Instance:
    """The instance made of Mealy HOA text and ``options``: the one way from an HOA file to an instance.

    With ``measure`` the complexity knobs and the certification are computed by the exact solvers (and the window,
    when not given, is w(I)); without it nothing is measured, and normal mode needs an explicit window.
    ``progress`` is told ``(queries answered, queries)`` as the measurement goes
    (:func:`gf01_formal.instances.measure.measure`).
    """
    return _from_hoa(hoa_text, options, source=source, measure=measure, count_limits=count_limits,
                     progress=progress)[0]


def instance_from_aiger(
    data: bytes,
    options: InstanceOptions,
    *,
    source: str | None = None,
    measure: bool = True,
    count_limits: Limits | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> Instance:
    """The instance made of an AIGER circuit (``.aag`` or ``.aig`` bytes) and ``options``.

    The Mealy view: inputs are the AIGER inputs, outputs the AIGER outputs, then the bad-state properties, then the
    latches ``options.observe`` names (docs/aiger.md). The instance carries the canonical AIGER text. ``progress``:
    as :func:`instance_from_hoa`'s.
    """
    return _from_aiger(data, options, source=source, measure=measure, count_limits=count_limits,
                       progress=progress)[0]


def _from_hoa(hoa_text: str, options: InstanceOptions, *, source: str | None, measure: bool,
              count_limits: Limits | None,
              system: tuple[SystemSpec, MealyView | CircuitView] | None = None,
              progress: Callable[[int, int], None] | None = None) -> tuple[Instance, Problem]:
    """The instance of ``hoa_text`` and ``options`` and its Problem; ``system`` is what :func:`hoa_system` made of
    that text already."""
    _require_task(options, "an HOA file")
    if options.observe:
        raise Gf01Error("--observe names latches of an AIGER circuit; an HOA file's outputs are its controllable-AP "
                        "(or --outputs)", field="observe")
    if options.edit != "all":
        raise Gf01Error("--edit chooses the edited inputs of an AIGER circuit; an HOA controller's inputs are all "
                        "edited", field="edit")
    spec, view = (hoa_system(hoa_text, options.outputs, file=source, resolve=options.resolve) if system is None
                  else system)
    meta = Meta(generator_version=SOURCE_VERSION, provenance="import:hoa", id_scheme="content", family="user-hoa",
                source=Path(source).name if source else None)
    return _instance(view, spec, meta, options, source=source, measure=measure, count_limits=count_limits,
                     progress=progress)


def _from_aiger(data: bytes, options: InstanceOptions, *, source: str | None, measure: bool,
                count_limits: Limits | None,
                progress: Callable[[int, int], None] | None = None) -> tuple[Instance, Problem]:
    _require_task(options, "an AIGER circuit")
    if options.outputs is not None:
        raise Gf01Error("--outputs is for HOA files; a circuit's outputs are its outputs and bad-state properties "
                        "(add latches with --observe)", field="outputs")
    if options.resolve is not None:
        raise Gf01Error("--resolve is for HOA controllers; a circuit is deterministic", field="resolve")
    spec, view = aiger_system(data, options.observe or (), file=source)
    if options.edit != "all":
        spec, view, options = _freeze(spec, view, options, source)
    meta = Meta(generator_version=SOURCE_VERSION, provenance="import:aiger", id_scheme="content",
                family="user-aiger", source=Path(source).name if source else None)
    return _instance(view, spec, meta, options, source=source, measure=measure, count_limits=count_limits,
                     progress=progress)


def _freeze(spec: SystemSpec, view: CircuitView, options: InstanceOptions,
            source: str | None) -> tuple[SystemSpec, CircuitView, InstanceOptions]:
    """The circuit whose inputs outside ``options.edit`` follow the base trace inside it, its view, and the options
    with the base trace over the edited inputs alone."""
    from aig.freeze import edited_inputs, freeze_inputs
    from aig.writer import canonical

    kept = edited_inputs(view.inputs, options.edit)
    if len(kept) == view.num_inputs:
        return spec, view, options
    try:
        trace = parse_trace(options.trace, view.inputs, field="trace")
    except Gf01Error as ex:
        raise (ex.located(options.trace_source) if options.trace_source else ex) from None
    frozen = [k for k in range(view.num_inputs) if k not in kept]
    values = [sum(((x >> k) & 1) << j for j, k in enumerate(frozen)) for x in trace]
    spec, small = aiger_system(canonical(freeze_inputs(view.aig, frozen, values)), options.observe or (), file=source)
    edited = [sum(((x >> k) & 1) << i for i, k in enumerate(kept)) for x in trace]
    return spec, small, replace(options, trace=trace_to_json(edited, small.inputs), trace_source=None)


def _require_task(options: InstanceOptions, what: str) -> None:
    if options.trace is None:
        raise Gf01Error(f"an instance made from {what} needs a base trace (--trace or --trace-file)", field="trace")
    if options.effect is None:
        raise Gf01Error(f"an instance made from {what} needs an effect (--effect), an expression over output names",
                        field="effect")


def _instance(
    view: MealyView | CircuitView,
    spec: SystemSpec,
    meta: Meta,
    options: InstanceOptions,
    *,
    source: str | None,
    measure: bool,
    count_limits: Limits | None,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[Instance, Problem]:
    """The instance of the system ``spec`` (whose view is ``view``) under ``options``, measured when ``measure``
    (``progress`` told how far it is), and its Problem."""
    try:
        trace = parse_trace(options.trace, view.inputs, field="trace")
    except Gf01Error as ex:
        raise (ex.located(options.trace_source) if options.trace_source else ex) from None
    assert options.effect is not None  # _require_task
    effect, effect_expr = read_effect(options.effect, view.outputs)
    T = len(trace)
    if options.mode not in MODES:
        raise Gf01Error(f"mode {quote(options.mode)} is not one of {', '.join(MODES)}", field="mode")
    if options.mode == "hard" and options.window is not None:
        # A hard-mode window plays no part, but it would be stored and change the instance's id.
        raise Gf01Error("a window is for normal mode (in hard mode the effect is at t* itself): leave it out",
                        field="window")
    if options.needs_measurement and not measure:
        raise Gf01Error("normal mode needs a window: give one, or let the instance be measured for w(I)",
                        field="window")
    fields: dict[str, Any] = dict(
        system=System.of_spec(spec),
        base_trace=trace_to_json(trace, view.inputs),
        effect=effect,
        t_star=T - 1 if options.t_star is None else options.t_star,
        mode=options.mode,
        budget_t=T if options.budget_t is None else options.budget_t,
        budget_a=T * max(1, view.num_inputs) if options.budget_a is None else options.budget_a,
        meta=meta,
    )
    draft = make_instance(window=1 if options.window is None else options.window, **fields)
    problem = _problem(draft, spec, view, effect_expr, source)
    if not measure:
        return draft, problem
    from gf01_formal.instances.measure import measure as run_measure

    found = run_measure(problem, window=options.window, count_limits=count_limits, progress=progress)
    inst = make_instance(window=found.window, complexity=found.complexity, certification=found.certification,
                         **fields)
    return inst, _problem(inst, spec, view, effect_expr, source)


def _problem(inst: Instance, spec: SystemSpec, view: MealyView | CircuitView, effect: Expr,
             source: str | None) -> Problem:
    """The Problem of an instance just made of ``spec``, from the view and the effect already parsed; errors as
    :func:`gf01_formal.instances.io.instance_problem` gives them."""
    cert = inst.certification
    task = Task(spec, trace_pairs(inst.base_trace), inst.effect, inst.t_star, inst.mode, inst.window, inst.budget_t,
                inst.budget_a, None if cert is None else cert.oracle_eff_a)
    try:
        return task_problem(task, view=view, effect=effect)
    except Gf01Error as ex:
        msg = ex.message if ex.message.startswith("instance ") else f"instance {inst.instance_id}: {ex.message}"
        raise Gf01Error(msg, file=source or ex.file, line=ex.line, col=ex.col, field=ex.field) from ex


# The HOA header may follow comments and blank space; anything else first means JSON (or an error).
_HOA_START = re.compile(r"\A(?:\s|/\*.*?\*/)*HOA:", re.S)


def is_aiger_data(data: bytes) -> bool:
    """Whether ``data`` is an AIGER circuit (its header word ``aag`` or ``aig``)."""
    return data[:4] in (b"aag ", b"aig ")


def _decode(data: bytes, name: str) -> str:
    """The file's bytes as text, with the messages of :func:`hoa.files.read_text`."""
    shown = quote(name, 200, bare=True)
    nul = data.find(b"\0")
    if nul >= 0:
        raise Gf01Error(f"binary data (a NUL byte at offset {nul}), not text", file=shown)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as ex:
        raise Gf01Error(f"not UTF-8 text ({ex.reason} at byte {ex.start})", file=shown) from None


def is_hoa_text(text: str) -> bool:
    """Whether ``text`` is HOA (starts with ``HOA:`` after blank space and comments) rather than JSON."""
    return _HOA_START.match(text[:1 << 16]) is not None


def _measured_window(problem: Problem, count_limits: Limits | None,
                     progress: Callable[[str], None] | None) -> int:
    """w(I) of DEC-014b for the normal-mode instance whose draft (window 1) has ``problem``, measuring only what it
    needs: the hard-mode knobs (the hard-mode oracle and |M_B(I)|, the count bounded by ``count_limits``; past them
    the count is left out of z(I), as in the generator), not the instance's certification. ``progress`` is told
    before the measurement starts (once the instance is known to be well formed) and when it ends."""
    from gf01_formal.instances.measure import QuerySettings, measure_complexity

    # Announced only now: a user error in the options must stay the command's one line of output.
    if progress is not None:
        progress("normal mode without --window: measuring w(I) (hard-mode oracle and |M_B(I)|; --window W "
                 "skips this, --seconds bounds it)")
    started = time.monotonic()
    complexity = measure_complexity(problem, QuerySettings(count_limits=count_limits))
    if progress is not None:
        gold = complexity.gold_count
        count = f"|M_B(I)| = {gold.raw}" if gold.raw is not None else f"|M_B(I)| left out: {gold.note}"
        progress(f"w(I) = {complexity.window} (z = {complexity.z:.3f}; hard mode, {count}), measured in "
                 f"{time.monotonic() - started:.1f} s")
    return complexity.window


def open_instance(
    path: str | os.PathLike[str],
    instance_id: str | None = None,
    options: InstanceOptions | None = None,
    *,
    count_limits: Limits | None = None,
    progress: Callable[[str], None] | None = None,
) -> tuple[Instance, Problem]:
    """The instance named by an INSTANCE argument, with its checked Problem.

    ``path`` is an instance file, a bundle (``instance_id`` picks one; optional when it holds one), or an HOA file or
    an AIGER circuit, which need ``options`` (at least the trace and the effect). Options are refused for instance
    files: their task is fixed by their hash. ``count_limits`` bounds the measurement an instance in normal mode
    without a window needs for w(I). An HOA instance so gets w(I) only (``progress`` is told before and after the
    measurement) and is then the instance that window given explicitly makes: nothing else is measured.
    """
    name = os.fspath(path)
    data = read_bytes(path)
    if is_aiger_data(data):
        if options is None:
            raise Gf01Error("an AIGER circuit needs the instance options: at least a trace and an effect", file=name)
        if instance_id is not None:
            raise Gf01Error("--id picks an instance of a bundle; this is an AIGER circuit", file=name)
        return _from_aiger(data, options, source=name, measure=options.needs_measurement, count_limits=count_limits)
    text = _decode(data, name)
    if is_hoa_text(text):
        if options is None:
            raise Gf01Error("an HOA file needs the instance options: at least a trace and an effect", file=name)
        if instance_id is not None:
            raise Gf01Error("--id picks an instance of a bundle; this is an HOA file", file=name)
        system = None
        if options.needs_measurement:
            draft, problem = _from_hoa(text, replace(options, window=1), source=name, measure=False,
                                       count_limits=None)
            options = replace(options, window=_measured_window(problem, count_limits, progress))
            system = (draft.system.spec(), problem.system)  # the file parsed once
        return _from_hoa(text, options, source=name, measure=False, count_limits=None, system=system)
    if options is not None:
        raise Gf01Error("the instance options (trace, effect, t*, mode, window, budgets, outputs) apply to HOA files "
                        "and AIGER circuits only; an instance file fixes them", file=name)
    loaded = load_set(name)
    inst = loaded.pick(instance_id)
    return inst, loaded.problem(inst)
