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
    if problem.mode == "hard":
        steps = [problem.t_star]
    else:
        steps = list(range(max(0, problem.t_star - problem.window), problem.t_star + 1))
    return any(evaluate(problem.effect, ys[t]) for t in steps)


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


def brute_valid_set(problem: Problem, budget: int | None = None) -> list[Cert]:
    """M(I) (budget None) or M_B(I): every valid certificate with at most ``budget`` timesteps, canonical order.

    Suff is tabulated once per flip subset within the budget (over the T * |AP_in| positions), then Min1 is read off
    the table: removing a flip never touches more timesteps, so every C - {c} of a C within the budget is in it.
    """
    n_in = problem.system.num_inputs
    positions = [(t, i) for t in range(problem.horizon) for i in range(n_in)]
    n = len(positions)
    step_bits = (1 << n_in) - 1
    masks: list[int] = []
    top = problem.horizon if budget is None else min(budget, problem.horizon)
    for k in range(top + 1):
        for ts in itertools.combinations(range(problem.horizon), k):
            for per in itertools.product(range(1, step_bits + 1), repeat=k):
                masks.append(sum(m << (t * n_in) for t, m in zip(ts, per, strict=True)))
    suff: dict[int, bool] = {}
    for mask in masks:
        atoms = [(t, i, 1 - ((problem.trace[t] >> i) & 1)) for k, (t, i) in enumerate(positions) if mask >> k & 1]
        suff[mask] = brute_suff(problem, atoms)
    out = []
    for mask in masks:
        if not suff[mask] or any(suff[mask & ~(1 << k)] for k in range(n) if mask >> k & 1):
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
