"""Brute-force twin of every solver query, straight from the definitions (tests only).

Plain Python over all flip subsets, simulating with ``MealyView.step`` and evaluating the effect with
``hoa.label.evaluate``; it shares no code with ``encoders``/``solvers`` beyond the ``Problem`` record and the
``BestMatch`` result type, so agreement with it is evidence. Exponential: use it on problems with T * |AP_in| <= ~12.

Only sets of real flips can be valid: if C holds an atom c that restates the base value, C - {c} has the same
intervened trace, so Suff(C) and "Suff(C - {c}) false" cannot both hold. So M(I) is found among flip sets.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Iterable
from fractions import Fraction

from encoders.problem import Atom, Problem
from hoa.label import evaluate
from solvers.results import BestMatch

Cert = tuple[Atom, ...]


def brute_apply(problem: Problem, atoms: Iterable[Atom]) -> list[int]:
    """tau[C] (Definition 5), written out bit by bit."""
    trace = list(problem.trace)
    for t, i, v in atoms:
        trace[t] = (trace[t] & ~(1 << i)) | (v << i)
    return trace


def brute_outputs(problem: Problem, trace: list[int]) -> list[int]:
    """y_0 .. y_{T-1} of the run on ``trace``."""
    q, ys = problem.system.initial, []
    for x in trace:
        q, y = problem.system.step(q, x)
        ys.append(y)
    return ys


def brute_suff(problem: Problem, atoms: Iterable[Atom]) -> bool:
    """Definition 10: the intervened run shows the effect (at t*, or somewhere in the window in normal mode)."""
    ys = brute_outputs(problem, brute_apply(problem, atoms))
    return any(evaluate(problem.effect, ys[t]) for t in _effect_steps(problem))


def brute_min1(problem: Problem, atoms: Iterable[Atom]) -> bool:
    """Definition 11: removing any single atom loses the effect."""
    c = list(atoms)
    return all(not brute_suff(problem, c[:k] + c[k + 1 :]) for k in range(len(c)))


def brute_valid(problem: Problem, atoms: Iterable[Atom]) -> bool:
    """Definition 12: Suff and Min1."""
    c = list(atoms)
    return brute_suff(problem, c) and brute_min1(problem, c)


def brute_subset_min(problem: Problem, atoms: Iterable[Atom]) -> bool:
    """Definition 14: no proper subset of C is sufficient (C itself need not be)."""
    c = list(atoms)
    for r in range(len(c)):
        for sub in itertools.combinations(c, r):
            if brute_suff(problem, sub):
                return False
    return True


def _key(problem: Problem, cert: Cert) -> tuple:
    names = problem.system.inputs
    return (len({a[0] for a in cert}), len(cert), tuple(sorted((t, names[i], v) for t, i, v in cert)))


def _sorted_cert(problem: Problem, cert: Iterable[Atom]) -> Cert:
    names = problem.system.inputs
    return tuple(sorted(cert, key=lambda a: (a[0], names[a[1]], a[2])))


def _effect_steps(problem: Problem) -> range:
    """The steps whose outputs Suff reads: t* in hard mode, the window ending at t* in normal mode."""
    if problem.mode == "hard":
        return range(problem.t_star, problem.t_star + 1)
    return range(max(0, problem.t_star - problem.window), problem.t_star + 1)


def _suff_by_mask(problem: Problem, top: int) -> dict[int, bool]:
    """Suff of every flip set touching at most ``top`` timesteps, by mask (bit ``t * |AP_in| + i``: input i flipped
    at step t). Each intervened run is simulated with ``step`` from the initial state, as :func:`brute_suff` does;
    the runs are walked as a tree over the steps, so runs whose flips agree up to step t share those steps' states
    (the same runs and effect checks, a fraction of the steps)."""
    system, trace, n_in = problem.system, problem.trace, problem.system.num_inputs
    shows = set(_effect_steps(problem))
    letters = range(1 << n_in)
    suff: dict[int, bool] = {}

    def walk(t: int, q: int, mask: int, touched: int, shown: bool) -> None:
        if t == len(trace):
            suff[mask] = shown
            return
        for m in letters if touched < top else (0,):  # m: the inputs flipped at step t
            nq, y = system.step(q, trace[t] ^ m)
            walk(t + 1, nq, mask | m << t * n_in, touched + (m != 0),
                 shown or (t in shows and evaluate(problem.effect, y)))

    walk(0, system.initial, 0, 0, False)
    return suff


def brute_valid_set(problem: Problem, budget: int | None = None) -> list[Cert]:
    """M(I) (budget None) or M_B(I): every valid certificate with at most ``budget`` timesteps, canonical order.

    Suff is tabulated once per flip subset within the budget (over the T * |AP_in| positions), then Min1 is read off
    the table: removing a flip never touches more timesteps, so every C - {c} of a C within the budget is in it.
    """
    n_in = problem.system.num_inputs
    positions = [(t, i) for t in range(problem.horizon) for i in range(n_in)]
    n = len(positions)
    top = problem.horizon if budget is None else min(budget, problem.horizon)
    suff = _suff_by_mask(problem, top)
    out = []
    for mask, shown in suff.items():
        if not shown or any(suff[mask & ~(1 << k)] for k in range(n) if mask >> k & 1):
            continue
        atoms = [(t, i, 1 - ((problem.trace[t] >> i) & 1)) for k, (t, i) in enumerate(positions) if mask >> k & 1]
        out.append(_sorted_cert(problem, atoms))
    return sorted(out, key=lambda c: _key(problem, c))


def brute_count(problem: Problem, budget: int | None = None) -> int:
    """|M(I)| or |M_B(I)|."""
    return len(brute_valid_set(problem, budget))


def brute_oracle(problem: Problem, budget: int | None = None) -> tuple[int, int] | None:
    """The least (Eff_t, Eff_a) over M_B(I), or None when M_B(I) is empty."""
    costs = [(len({a[0] for a in c}), len(c)) for c in brute_valid_set(problem, budget)]
    return min(costs) if costs else None


def _prf(agent: set, gold: set) -> tuple[Fraction, Fraction, Fraction]:
    if not agent or not gold:
        return Fraction(0), Fraction(0), Fraction(0)
    tp = len(agent & gold)
    p, r = Fraction(tp, len(agent)), Fraction(tp, len(gold))
    return p, r, (2 * p * r / (p + r) if p + r else Fraction(0))


def brute_best_match(problem: Problem, atoms: Iterable[Atom], budget: int | None = None) -> BestMatch:
    """argmax over M_B(I) of F1_AP, then F1_TS, then lower Eff_t, then lowest sha256 of the gold's canonical JSON."""
    agent = set(atoms)
    agent_ts = {a[0] for a in agent}
    names = problem.system.inputs
    best = None
    for gold in brute_valid_set(problem, budget):
        ap = _prf(agent, set(gold))
        ts = _prf(agent_ts, {a[0] for a in gold})
        text = json.dumps(sorted([t, names[i], v] for t, i, v in gold), separators=(",", ":"))
        digest = hashlib.sha256(text.encode()).hexdigest()
        rank = (-ap[2], -ts[2], len({a[0] for a in gold}), digest)
        if best is None or rank < best[0]:
            best = (rank, gold, ap, ts)
    if best is None:
        return BestMatch((), 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    _, gold, ap, ts = best
    return BestMatch(gold, *(float(x) for x in ap), *(float(x) for x in ts))
