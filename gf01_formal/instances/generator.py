"""The certified instance generator (spec §8, DEC-024, DEC-014b, DEC-058): seeded, reproducible, solver-proven.

``generate(seed, count, cfg)`` fills ``count`` slots. Slot k draws from its own ``Generator(PCG64(SeedSequence(
[seed, k])))``: a size level, a family member of that size, a horizon T, a base trace, t*, a mode and an effect the
base run does not show. A candidate is accepted only when exact solver queries prove that the base trace does not
achieve the effect and that M_B(I) is non-empty (the oracle finds a valid certificate within B_T), and when the
cfg's difficulty targets hold: a minimum oracle Eff_t, and caps on the fractions of single-timestep optima,
single-atom optima and instances the greedy baseline certifies. A cap is met slot by slot (``slot_allowance``), so
slots are independent and may run in parallel. A slot whose ``max_attempts`` attempts all fail is skipped and
reported in the bundle, never a crash.

The output depends only on (seed, cfg, generator version): no clock, no global random state, and counts bounded by
deterministic limits (a static size guard, optionally BDD nodes), never by seconds. See docs/instances.md.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from encoders.problem import Certificate, Problem
from gf01_formal.artifacts import sha256_hex
from gf01_formal.instances.complexity import W_MIN, window_of
from gf01_formal.instances.families import FAMILIES, FamilySystem, check_family
from gf01_formal.instances.families.base import at_level
from gf01_formal.instances.measure import (
    QuerySettings,
    certify,
    greedy_result,
    measure_complexity,
    oracle,
    possible_windows,
)
from gf01_formal.instances.model import (
    Bundle,
    Instance,
    Meta,
    Skip,
    make_bundle,
    make_instance,
    validate_model,
)
from gf01_formal.instances.problem import system_view
from gf01_formal.instances.traces import effect_text, parse_effect, trace_to_json
from hoa.errors import Gf01Error, quote
from hoa.label import Expr, evaluate, evaluate_array
from hoa.mealy import MealyView
from solvers.api import BACKENDS
from solvers.limits import Limits, Unknown, guarded
from solvers.results import OracleResult
from solvers.small_tables import TINY_CELLS

GENERATOR_VERSION = "gf01-formal.generator.1.1.0"
CFG_SCHEMA = "gf01-formal.gen_cfg.v1"
#: Longest horizon T a cfg may ask for (the benchmark's largest is 1024); also the cap of the budget slacks.
MAX_HORIZON = 10_000


class FamilyCfg(BaseModel):
    """One family of the mix: its ``kind`` (a key of FAMILIES), its weight, and its size parameters (extra keys)."""

    model_config = ConfigDict(extra="allow", frozen=True, strict=True)
    kind: str
    weight: float = Field(default=1.0, gt=0, le=1e6)


class Targets(BaseModel):
    """Difficulty targets, each checked with exact queries; fractions are caps over the requested count."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)
    min_oracle_eff_t: int = Field(default=1, ge=1)
    max_single_timestep_fraction: float | None = Field(default=0.4, ge=0, le=1)
    max_single_atom_fraction: float | None = Field(default=0.25, ge=0, le=1)
    max_greedy_fraction: float | None = Field(default=0.6, ge=0, le=1)


def _default_families() -> list[FamilyCfg]:
    return [
        FamilyCfg(kind="random_mealy", weight=3.0),
        FamilyCfg(kind="arbiter", weight=1.0),
        FamilyCfg(kind="register", weight=1.0),
        FamilyCfg(kind="counter", weight=1.0),
        FamilyCfg(kind="traffic_light", weight=1.0),
    ]


class GenConfig(BaseModel):
    """Generator configuration (``--cfg cfg.json``); its hash covers every field, defaults included."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)
    schema_version: Literal["gf01-formal.gen_cfg.v1"] = CFG_SCHEMA
    families: list[FamilyCfg] = Field(default_factory=_default_families)
    horizon: list[int] = Field(default=[5, 32], min_length=2, max_length=2, description="[min T, max T]")
    t_star_from: float = Field(default=0.2, ge=0, le=1, description="t* is placed in [f*(T-1), T-1] by the level")
    normal_fraction: float = Field(default=0.5, ge=0, le=1)
    budget_slack: list[int] = Field(default=[0, 2], min_length=2, max_length=2, description="B_T = Eff_t + slack")
    atom_slack: list[int] = Field(default=[0, 3], min_length=2, max_length=2, description="B_A = Eff_a + slack")
    max_attempts: int = Field(default=40, ge=1, le=100_000)
    oracle_backend: str = "explicit"
    count_backend: str = "forward"
    count_node_limit: int | None = Field(default=None, ge=1, description="BDD node cap for |M_B(I)| (null: none)")
    count_max_positions: int | None = Field(
        default=200, ge=0, description="count |M_B(I)| only when (t*+1) x |AP_in| is at most this (null: always)"
    )
    targets: Targets = Field(default_factory=Targets)


def load_config(data: dict[str, Any] | None, *, file: str | None = None) -> GenConfig:
    """The generator config from decoded JSON (None: the defaults); unknown families and bad ranges are refused."""
    cfg: GenConfig = validate_model(GenConfig, {} if data is None else data, file=file)
    for k, f in enumerate(cfg.families):
        if f.kind not in FAMILIES:
            raise Gf01Error(f"unknown family kind {quote(f.kind)} (known: {', '.join(sorted(FAMILIES))})",
                            file=file, field=f"families[{k}].kind")
        try:
            check_family(f.kind, f.model_extra or {}, field=f"families[{k}]")
        except Gf01Error as ex:
            raise Gf01Error(ex.message, file=file, field=ex.field) from None
    lo, hi = cfg.horizon
    if not 1 <= lo <= hi <= MAX_HORIZON:
        raise Gf01Error(f"horizon [{quote(lo, 30)}, {quote(hi, 30)}] must satisfy 1 <= min <= max <= {MAX_HORIZON}",
                        file=file, field="horizon")
    for name in ("budget_slack", "atom_slack"):
        a, b = getattr(cfg, name)
        if not 0 <= a <= b <= MAX_HORIZON:
            raise Gf01Error(f"{name} must be [lo, hi] with 0 <= lo <= hi <= {MAX_HORIZON}", file=file, field=name)
    for name in ("oracle_backend", "count_backend"):
        if getattr(cfg, name) not in BACKENDS:
            raise Gf01Error(f"unknown backend {quote(getattr(cfg, name), 60)} (expected one of {', '.join(BACKENDS)})",
                            file=file, field=name)
    return cfg


def config_hash(cfg: GenConfig) -> str:
    """sha256 of the canonical JSON of the full config (defaults filled in)."""
    return sha256_hex(cfg.model_dump(mode="json"))


class Rejected(Exception):
    """A candidate failed a check; ``reason`` is a short stable key (counted in skip reports)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def slot_allowance(fraction: float | None, slot: int) -> bool:
    """Whether slot ``slot`` may hold an instance with an easy property whose bundle fraction is capped.

    Slot k may iff floor((k+1) f) > floor(k f): among any first n slots at most floor(n f) may, so the cap holds
    for every bundle size, and each slot is decided on its own.

    >>> [slot_allowance(0.4, k) for k in range(5)]
    [False, False, True, False, True]
    """
    if fraction is None:
        return True
    f = Fraction(str(fraction))
    return math.floor((slot + 1) * f) > math.floor(slot * f)


@dataclass(frozen=True)
class Allowances:
    """Which capped easy properties a slot may have."""

    single_timestep: bool = True
    single_atom: bool = True
    greedy: bool = True


def _check_targets(cfg: GenConfig, allow: Allowances, eff_t: int, eff_a: int, t_star: int) -> None:
    """Reject an optimum (Eff_t, Eff_a) that misses the cfg targets or the slot's allowances. At t* = 0 (always so
    when T = 1) every certificate touches the one step 0, so the single-timestep cap does not apply there: generation
    is defined for every T >= 1 (section 8.1), and the cap would refuse them all."""
    if eff_t < cfg.targets.min_oracle_eff_t:
        raise Rejected("oracle Eff_t below target")
    if eff_t == 1 and not allow.single_timestep and t_star > 0:
        raise Rejected("single-timestep optimum (slot not allowed)")
    if eff_a == 1 and not allow.single_atom:
        raise Rejected("single-atom optimum (slot not allowed)")


def _draw_range(rng: np.random.Generator, pair: list[int]) -> int:
    return int(rng.integers(pair[0], pair[1] + 1))


@dataclass(frozen=True)
class _Reach:
    """What simulating the drawn system around its base run tells about every effect at once (one per attempt):
    the output valuations some input sequence shows at t*, and those every single-step change of the base trace
    shows at t* and at t* - 1.

    Both decide queries exactly, for any effect, before any oracle is asked:

    - hard-mode M(I) at t* is non-empty exactly when some valuation of ``shown`` satisfies the effect (the base run
      does not show it): any input sequence is the base trace with flips, a sufficient flip set holds a
      subset-minimal one, and that one is valid;
    - when a change at one step shows the effect at the effect steps, the (Eff_t, Eff_a)-optimum is (1, the fewest
      flips of such a change): no valid certificate touches fewer steps (the empty one is not sufficient), the
      cheapest sufficient one-step set is Min1 (a smaller sufficient subset would be cheaper), and Eff_t = 1 is
      within every B_T. The optimum decides the single-timestep and single-atom targets, which reject most
      candidates of small random machines.
    """

    shown: np.ndarray
    at_t_star: np.ndarray  # [t, x]: y at t* when step t reads x (t <= t*)
    before_t_star: np.ndarray | None  # [t, x]: y at t* - 1 (the base run's at t = t*); None when t* = 0
    flips: np.ndarray  # [t, x]: popcount(x ^ trace[t]); 0 for the base input itself
    n_outputs: int  # the system's outputs (the valuations above are below 2^n_outputs)

    def one_step(self, effect: Expr, hard: bool) -> tuple[int, int] | None:
        """(1, fewest flips) when a change at one step shows ``effect`` at t* (hard) or at t* - 1 or t* (normal mode,
        window 1): the optimum then; None when no one-step change does."""
        hit = _satisfies(effect, self.at_t_star, self.n_outputs)
        if not hard and self.before_t_star is not None:
            hit |= _satisfies(effect, self.before_t_star, self.n_outputs)
        hit &= self.flips > 0
        return (1, int(self.flips[hit].min())) if hit.any() else None


#: Most outputs for which an effect's truth table over the output valuations is kept (:func:`_satisfies`).
TRUTH_OUTPUTS = 12


@functools.lru_cache(maxsize=4096)
def _truth(effect: Expr, n_outputs: int) -> np.ndarray:
    """The effect's value at every valuation of ``n_outputs`` outputs: attempts ask the same few effects again and
    again, on arrays a few dozen entries long, where evaluating the expression costs more than the lookup."""
    return evaluate_array(effect, np.arange(1 << n_outputs, dtype=np.int64))


def _satisfies(effect: Expr, ys: np.ndarray, n_outputs: int) -> np.ndarray:
    """``evaluate_array(effect, ys)`` in the shape of ``ys`` (valuations of ``n_outputs`` outputs), by
    :func:`_truth` when the valuations are few."""
    if n_outputs <= TRUTH_OUTPUTS:
        return _truth(effect, n_outputs)[ys]
    return evaluate_array(effect, ys.ravel()).reshape(ys.shape)


def _open_effects(view: MealyView | Any, trace: tuple[int, ...], steps: range, effects: list[Expr]) -> list[Expr]:
    """The effects the base run shows at none of ``steps``; on a tiny table by a plain run and the effects' truth
    tables (no numpy set-up)."""
    if isinstance(view, MealyView) and view.has_tables and _tiny(view, steps.stop - 1):
        nxt, out = view.tables
        q, ys = view.initial, []
        for x in trace[: steps.stop]:
            ys.append(int(out[q, x]))
            q = int(nxt[q, x])
        shown = np.array(ys[steps.start :], dtype=np.int64)
        return [e for e in effects if not _satisfies(e, shown, view.num_outputs).any()]
    _, outs = view.run(trace)
    return [e for e in effects if not any(evaluate(e, outs[t]) for t in steps)]


def _reach(view: MealyView | Any, trace: tuple[int, ...], t_star: int) -> _Reach | None:
    """The :class:`_Reach` of a system with dense tables (None for others: their queries go to the solvers)."""
    if not isinstance(view, MealyView) or not view.has_tables:
        return None
    if _tiny(view, t_star):
        return _tiny_reach(view, trace, t_star)
    nxt, out = view.tables
    live = np.zeros(view.num_states, dtype=bool)
    live[view.initial] = True
    for _ in range(t_star):
        new = np.zeros_like(live)
        new[nxt[live].ravel()] = True
        if (new == live).all():  # a fixed point: every later step has the same states
            break
        live = new
    width = 1 << view.num_inputs
    xs = np.arange(width, dtype=np.int64)
    base = np.asarray(trace[: t_star + 1], dtype=np.int64)
    states, outs = view.simulate(base[None, :])
    q = states[0]
    # Backwards over the base inputs: shows[s][r] is the output at step `at` of the base continuation from state r at
    # step s; a change at step t then reads shows[t + 1] at its successor state (or its own output at t = at).
    def after(at: int) -> np.ndarray:
        res = np.empty((t_star + 1, width), dtype=np.int64)
        res[at] = out[q[at]]
        res[at + 1 :] = outs[0, at]  # a change after step `at` leaves its output as the base run's
        shows = out[:, base[at]]
        for t in range(at - 1, -1, -1):
            res[t] = shows[nxt[q[t]]]
            shows = shows[nxt[:, base[t]]]
        return res

    at = after(t_star)
    before = after(t_star - 1) if t_star else None
    diff = xs[None, :] ^ base[:, None]
    flips = np.zeros(diff.shape, dtype=np.int64)
    for i in range(view.num_inputs):
        flips += (diff >> i) & 1
    return _Reach(np.unique(out[live].ravel()), at, before, flips, view.num_outputs)


#: Tables of at most :data:`solvers.small_tables.TINY_CELLS` (state, valuation) cells, and this many cells x steps,
#: get the plain-Python paths (:func:`_tiny_reach`, :func:`_open_effects`).
TINY_WORK = 1 << 14


def _tiny(view: MealyView, t_star: int) -> bool:
    cells = view.num_states << view.num_inputs
    return cells <= TINY_CELLS and cells * (t_star + 1) <= TINY_WORK


def _tiny_reach(view: MealyView, trace: tuple[int, ...], t_star: int) -> _Reach:
    """:func:`_reach` in plain Python, the same arrays: on a tiny table the numpy calls' set-up is most of its cost
    (tests/test_generator.py compares the two)."""
    nxt_a, out_a = view.tables
    nxt: list[list[int]] = nxt_a.tolist()
    out: list[list[int]] = out_a.tolist()
    width = 1 << view.num_inputs
    xs = range(width)
    every = range(view.num_states)
    live = {view.initial}
    for _ in range(t_star):
        new = {r for q in live for r in nxt[q]}
        if new == live:  # a fixed point: every later step has the same states
            break
        live = new
    base = trace[: t_star + 1]
    q = [view.initial]
    for t in range(t_star):
        q.append(nxt[q[-1]][base[t]])

    def after(at: int) -> list[list[int]]:
        res = [[out[q[at]][x] for x in xs]]  # rows at, at - 1, .., 0, reversed below
        shows = [out[r][base[at]] for r in every]
        for t in range(at - 1, -1, -1):
            res.append([shows[r] for r in nxt[q[t]]])
            shows = [shows[nxt[r][base[t]]] for r in every]
        res.reverse()
        res.extend([[out[q[at]][base[at]]] * width for _ in range(at + 1, t_star + 1)])
        return res

    shown = sorted({out[r][x] for r in live for x in xs})
    before = np.array(after(t_star - 1), dtype=np.int64) if t_star else None
    flips = [[bin(x ^ b).count("1") for x in xs] for b in base]
    return _Reach(np.array(shown, dtype=np.int64), np.array(after(t_star), dtype=np.int64), before,
                  np.array(flips, dtype=np.int64), view.num_outputs)


class _Candidate:
    """The exact queries of one candidate (system, trace, effect, t*, mode, B_T), each asked at most once.

    The checks before the count, the checks after it and the certification ask the same oracle and greedy queries;
    here each is answered once per window. In hard mode the window plays no part (the effect is read at t* alone),
    so every window shares one answer.
    """

    def __init__(self, cfg: GenConfig, view: MealyView, trace: tuple[int, ...], effect: Expr, t_star: int,
                 mode: str, budget_t: int) -> None:
        self.cfg, self.view, self.trace, self.effect = cfg, view, trace, effect
        self.t_star, self.mode, self.budget_t = t_star, mode, budget_t
        self._oracle: dict[int, OracleResult | None] = {}
        self._greedy: dict[int, tuple[Certificate | None, bool]] = {}

    def problem(self, window: int, budget_a: int | None = None) -> Problem:
        return Problem(self.view, self.trace, self.effect, self.t_star, self.mode, window, self.budget_t, budget_a)

    def _key(self, window: int) -> int:
        return 0 if self.mode == "hard" else window

    def oracle(self, window: int) -> OracleResult | None:
        """The oracle (:func:`measure.oracle`) of the problem with this window, within B_T."""
        key = self._key(window)
        if key not in self._oracle:
            self._oracle[key] = oracle(self.problem(window), self.budget_t, self.cfg.oracle_backend)
        return self._oracle[key]

    def greedy(self, window: int) -> tuple[Certificate | None, bool]:
        """:func:`greedy_result` of the problem with this window."""
        key = self._key(window)
        if key not in self._greedy:
            self._greedy[key] = greedy_result(self.problem(window))
        return self._greedy[key]

    def verdict(self, window: int, allow: Allowances) -> str | None:
        """Why the candidate with this window fails the checks after the count, or None when it passes them."""
        best = self.oracle(window)
        if best is None:
            return "M_B(I) empty"
        try:
            _check_targets(self.cfg, allow, best.eff_t, best.eff_a, self.t_star)
        except Rejected as rej:
            return rej.reason
        if self.greedy(window)[1] and not allow.greedy:
            return "greedy certifies it (slot not allowed)"
        return None


def _cheap_checks(
    cfg: GenConfig, allow: Allowances, view: MealyView, trace: tuple[int, ...], effect: Expr, t_star: int,
    mode: str, slack_t: int, reach: _Reach | None,
) -> tuple[int, _Candidate]:
    """Checks before the count: hard-mode M(I) non-empty, oracle targets. Returns the hard-mode optimum's Eff_t and
    the candidate (its B_T settled).

    The base run does not show the effect at any step the widest window covers (the open effects were chosen so),
    so that needs no query. In normal mode the window is not known yet; the optimum (Eff_t, Eff_a) never grows with
    the window, so the narrowest window (w = 1) bounds it from above: an optimum already too easy there is too easy
    for any window. In hard mode B_T is at least the hard-mode optimum's Eff_t, so the optimum within B_T is that
    optimum itself. Optima of one timestep come from ``reach`` without an oracle (:class:`_Reach`).
    """
    if reach is not None and not _satisfies(effect, reach.shown, reach.n_outputs).any():
        raise Rejected("M(I) empty in hard mode at t*")
    hard_opt = reach.one_step(effect, hard=True) if reach is not None else None
    if hard_opt is None:
        hard_best = oracle(Problem(view, trace, effect, t_star, "hard", W_MIN, None, None), None, cfg.oracle_backend)
        if hard_best is None:
            raise Rejected("M(I) empty in hard mode at t*")
        hard_opt = (hard_best.eff_t, hard_best.eff_a)
    budget_t = min(t_star + 1, hard_opt[0] + slack_t)
    cand = _Candidate(cfg, view, trace, effect, t_star, mode, budget_t)
    narrow: tuple[int, int] | None = hard_opt
    if mode == "normal":
        narrow = reach.one_step(effect, hard=False) if reach is not None else None
        if narrow is None:
            best = cand.oracle(W_MIN)
            narrow = None if best is None else (best.eff_t, best.eff_a)
    if narrow is not None:
        _check_targets(cfg, allow, narrow[0], narrow[1], t_star)
    if mode == "hard" and not allow.greedy and cand.greedy(W_MIN)[1]:
        raise Rejected("greedy certifies it (slot not allowed)")
    return hard_opt[0], cand


@functools.lru_cache(maxsize=4096)
def _effect(text: str, outputs: tuple[str, ...]) -> Expr:
    """A family's effect text parsed over its outputs: families draw the same few texts every attempt."""
    return parse_effect(text, outputs)


def _draw_family(rng: np.random.Generator, cfg: GenConfig) -> FamilyCfg:
    weights = np.array([f.weight for f in cfg.families], dtype=np.float64)
    return cfg.families[int(rng.choice(len(cfg.families), p=weights / weights.sum()))]


def _attempt(
    rng: np.random.Generator, cfg: GenConfig, allow: Allowances, mode: str, fam_cfg: FamilyCfg, meta: dict[str, Any]
) -> Instance:
    """One candidate: draw it, then accept it (an Instance) or raise Rejected with the failed check."""
    params = dict(fam_cfg.model_extra or {})
    level = float(rng.random())  # the attempt's size level: every size of this attempt grows with it
    fs: FamilySystem = FAMILIES[fam_cfg.kind](rng, params, level)
    view = system_view(fs.system.spec(), built=fs.view)
    lo, hi = cfg.horizon
    T = lo + math.floor((hi - lo + 1) * at_level(rng, level) * 0.999999)
    dens = np.array(fs.input_density, dtype=np.float64)
    bits = rng.random((T, view.num_inputs)) < dens[None, :]
    trace = tuple((bits.astype(np.int64) << np.arange(view.num_inputs, dtype=np.int64)).sum(axis=1).tolist())
    first = cfg.t_star_from * (T - 1)
    t_star = min(T - 1, round(first + (T - 1 - first) * at_level(rng, level)))
    # Effects the base run does not show at any step that the widest possible window could cover.
    reach = window_of(1.0, T) if mode == "normal" else 0
    steps = range(max(0, t_star - reach), t_star + 1)
    effects = [_effect(e, tuple(view.outputs)) for e in fs.effects]
    open_ = _open_effects(view, trace, steps, effects)
    if not open_:
        raise Rejected("base run shows every candidate effect")
    slack_t = _draw_range(rng, cfg.budget_slack)
    slack_a = _draw_range(rng, cfg.atom_slack)
    limits = Limits(nodes=cfg.count_node_limit) if cfg.count_node_limit else None
    # Try the open effects in a random order and keep the first that passes the cheap checks, so that one drawn
    # system serves several candidates before the costly count.
    reach = _reach(view, trace, t_star)
    reason = ""
    for k in rng.permutation(len(open_)):
        effect = open_[int(k)]
        try:
            hard_eff_t, cand = _cheap_checks(cfg, allow, view, trace, effect, t_star, mode, slack_t, reach)
            break
        except Rejected as rej:
            reason = rej.reason
    else:
        raise Rejected(reason)
    queries = QuerySettings(cfg.oracle_backend, cfg.count_backend, limits, cfg.count_max_positions)
    widest = cand.problem(window_of(1.0, T))
    # The checks after the count at every window the count can give, before it: a candidate that every one of them
    # rejects for the same reason is rejected now, as the count would have had it (measure.possible_windows).
    windows = possible_windows(widest, queries, hard_eff_t)
    early = cand.verdict(windows[0], allow)
    if early is not None and all(cand.verdict(w, allow) == early for w in windows[1:]):
        raise Rejected(early)
    complexity = measure_complexity(widest, queries, hard_eff_t=hard_eff_t)
    window = complexity.window
    reason = cand.verdict(window, allow)
    if reason is not None:
        raise Rejected(reason)
    best = cand.oracle(window)
    greedy = cand.greedy(window)
    assert best is not None  # the verdict says so
    budget_t = cand.budget_t
    budget_a = min(T * view.num_inputs, best.eff_a + slack_a)
    problem = cand.problem(window, budget_a)
    raw = complexity.gold_count.raw
    known = (None if raw is None else int(raw), complexity.gold_count.note) if mode == "hard" else None
    # The count's limits here are nodes only, never seconds: certify's greedy is the unbounded one asked already.
    cert = certify(problem, queries, known_count=known, known_oracle=best, known_greedy=greedy)
    if cert.base_achieves_effect or cert.oracle_eff_t != best.eff_t or cert.greedy_valid != greedy[1]:
        # Not a user error: the same queries answered differently twice.
        raise RuntimeError("the certification disagrees with the acceptance checks")
    return make_instance(
        system=fs.system,
        base_trace=trace_to_json(trace, view.inputs),
        effect=effect_text(effect, view.outputs),
        t_star=t_star,
        mode=mode,
        window=window,
        budget_t=budget_t,
        budget_a=budget_a,
        complexity=complexity,
        certification=cert,
        meta=Meta(family=fs.family, family_params={**fs.params, "level": round(level, 4)}, **meta),
    )


def generate_slot(seed: int, slot: int, cfg: GenConfig, chash: str | None = None) -> Instance | Skip:
    """Fill one slot: the first accepted attempt's instance, or a Skip with the rejection reasons counted."""
    chash = chash or config_hash(cfg)
    rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence([seed, slot])))
    t = cfg.targets
    allow = Allowances(
        single_timestep=slot_allowance(t.max_single_timestep_fraction, slot),
        single_atom=slot_allowance(t.max_single_atom_fraction, slot),
        greedy=slot_allowance(t.max_greedy_fraction, slot),
    )
    # The mode is the slot's, not the attempt's: normal-mode candidates fail more often, and drawing the mode per
    # attempt would tilt the bundle towards hard mode.
    # The family, too, is the slot's for the first half of the attempts (so that the bundle's family mix follows the
    # weights rather than the acceptance rates); the second half draws from the whole mix, so a family that cannot
    # meet this slot's targets does not cost the slot.
    mode = "normal" if rng.random() < cfg.normal_fraction else "hard"
    slot_family = _draw_family(rng, cfg)
    reasons: Counter[str] = Counter()
    for attempt in range(cfg.max_attempts):
        meta = dict(generator_version=GENERATOR_VERSION, provenance="generated", id_scheme="content",
                    seed=seed, slot=slot, attempt=attempt, cfg_hash=chash)
        fam = slot_family if attempt < (cfg.max_attempts + 1) // 2 else _draw_family(rng, cfg)
        try:
            return _attempt(rng, cfg, allow, mode, fam, meta)
        except Rejected as rej:
            reasons[rej.reason] += 1
    return Skip(slot=slot, seed=[seed, slot], attempts=cfg.max_attempts, reasons=dict(sorted(reasons.items())))


@guarded("generate slot")
def _slot_limited(seed: int, slot: int, cfg: GenConfig, chash: str, *, limits: Limits | None = None) -> Instance | Skip:
    """:func:`generate_slot` under ``limits`` (seconds, memory): in a forked child, killed past them (Unknown); a slot
    that finishes within the kill's grace but past its limits is Unknown as well."""
    clock = (limits or Limits()).start()
    res = generate_slot(seed, slot, cfg, chash)
    clock.check("generate slot")
    return res


def _slot(seed: int, slot: int, cfg: GenConfig, chash: str, limits: Limits | None) -> Instance | Skip:
    if limits is None:
        return generate_slot(seed, slot, cfg, chash)
    try:
        return _slot_limited(seed, slot, cfg, chash, limits=limits)
    except Unknown as ex:
        # The whole command stops: a slot skipped for want of time or memory would make the bundle depend on the
        # machine (DEC-024), so the answer is unknown and nothing is written.
        raise Unknown(f"generate slot {slot}", ex.reason, ex.spent) from None


def _slot_job(args: tuple[int, int, dict[str, Any], str, Limits | None]) -> tuple[int, dict[str, Any], bool]:
    seed, slot, cfg_json, chash, limits = args
    res = _slot(seed, slot, GenConfig.model_validate(cfg_json), chash, limits)
    return slot, res.model_dump(mode="json"), isinstance(res, Instance)


def generate(
    seed: int,
    count: int,
    cfg: GenConfig | None = None,
    *,
    split_id: str | None = None,
    key: bytes | None = None,
    jobs: int = 1,
    progress: Callable[[int], None] | None = None,
    slot_limits: Limits | None = None,
) -> Bundle:
    """Generate a bundle of up to ``count`` certified instances on ``jobs`` processes (same bytes for any ``jobs``).

    Slots are independent (their own seed, their own allowances), so they run in any order and are assembled by
    slot number. ``progress(done)`` is called after each finished slot. With a split ``key`` slot k draws from the
    keyed seed ``keys.slot_seed(key, seed, k)`` instead of ``seed`` (a sealed release: docs/release.md).
    ``slot_limits`` (seconds, memory) bounds each slot: one past them raises Unknown and no bundle is made (never one
    whose slots depend on the machine).
    """
    from gf01_formal.instances.keys import key_id, slot_seed

    cfg = cfg or GenConfig()
    if count < 0:
        raise Gf01Error("count must be >= 0", field="count")
    if seed < 0:
        raise Gf01Error("seed must be >= 0", field="seed")
    chash = config_hash(cfg)

    def seed_of(slot: int) -> int:
        return seed if key is None else slot_seed(key, seed, slot)

    results: dict[int, Instance | Skip] = {}
    if jobs <= 1 or count <= 1:
        for slot in range(count):
            results[slot] = _slot(seed_of(slot), slot, cfg, chash, slot_limits)
            if progress is not None:
                progress(len(results))
    else:
        from concurrent.futures import FIRST_COMPLETED, Future, wait

        from gf01_formal.workers import pool

        cfg_json = cfg.model_dump(mode="json")
        slots = iter(range(count))
        with pool(jobs) as ex:
            # A few slots in flight per worker, not all of them: the queue stays small for any count, and Ctrl-C
            # has little to cancel.
            running: set[Future[tuple[int, dict[str, Any], bool]]] = set()
            while True:
                for slot in itertools.islice(slots, 2 * jobs - len(running)):
                    running.add(ex.submit(_slot_job, (seed_of(slot), slot, cfg_json, chash, slot_limits)))
                if not running:
                    break
                done, running = wait(running, return_when=FIRST_COMPLETED)
                for fut in done:
                    slot, data, ok = fut.result()
                    results[slot] = Instance.model_validate(data) if ok else Skip.model_validate(data)
                    if progress is not None:
                        progress(len(results))
    instances: list[Instance] = []
    skipped: list[Skip] = []
    seen: set[str] = set()
    for slot in range(count):
        res = results[slot]
        if isinstance(res, Skip):
            skipped.append(res)
        elif res.instance_id in seen:  # two slots drew the same task: keep the first
            skipped.append(Skip(slot=slot, seed=[seed_of(slot), slot], attempts=0, reasons={"duplicate instance": 1}))
        else:
            seen.add(res.instance_id)
            instances.append(res.model_copy(update={"split_id": split_id}) if split_id else res)
    return make_bundle(
        instances,
        generator_version=GENERATOR_VERSION,
        provenance="generated",
        seed=seed,
        cfg=cfg.model_dump(mode="json"),
        cfg_hash=chash,
        count_requested=count,
        seed_key_id=None if key is None else key_id(key),
        skipped=skipped,
    )


def summary(bundle: Bundle) -> dict[str, Any]:
    """Distribution facts of a bundle: families, modes, windows, oracle Eff_t, fractions achieved, knob ranges."""
    insts = bundle.instances
    n = len(insts)
    certs = [i.certification for i in insts if i.certification is not None]

    def hist(values: Iterable[Any]) -> dict[str, int]:
        c = Counter(str(v) for v in values)
        return {k: c[k] for k in sorted(c, key=lambda s: (len(s), s))}

    knobs: dict[str, dict[str, Any]] = {}
    for name in ("states", "inputs", "outputs", "transitions", "horizon", "effect_depth", "oracle_eff_t",
                 "gold_count"):
        vals = [getattr(i.complexity, name).norm for i in insts if i.complexity is not None]
        vals = [v for v in vals if v is not None]
        knobs[name] = {"min": min(vals) if vals else None, "max": max(vals) if vals else None,
                       "distinct": len(set(vals))}
    zs = [i.complexity.z for i in insts if i.complexity is not None]
    return {
        "instances": n,
        "skipped": len(bundle.skipped),
        "families": hist(i.meta.family for i in insts),
        "modes": hist(i.mode for i in insts),
        "windows": hist(i.window for i in insts),
        "oracle_eff_t": hist(c.oracle_eff_t for c in certs),
        "single_timestep_fraction": round(sum(c.oracle_eff_t == 1 for c in certs) / n, 4) if n else None,
        "single_atom_fraction": round(sum(c.oracle_eff_a == 1 for c in certs) / n, 4) if n else None,
        "greedy_fraction": round(sum(bool(c.greedy_valid) for c in certs) / n, 4) if n else None,
        "gold_count_unknown": sum(c.gold_count is None for c in certs),
        "z": {"min": min(zs) if zs else None, "max": max(zs) if zs else None},
        "knobs": knobs,
    }
