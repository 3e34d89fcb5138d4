"""The DEC-025 best match as SAT optimisation over M_B(I), level by level, without listing M_B(I).

The gold for an agent certificate A is the valid certificate C (within B_T) maximising F1_AP(A, C), then F1_TS,
then the lower Eff_t(C), then the lowest sha256 of C's canonical JSON (docs/semantics.md). Every valid C is a set of
flips up to t*, so with a = |A|, h = |A ∩ C| (the agent's flips up to t* that C makes) and n = |C|,
F1_AP = 2h / (a + n); likewise F1_TS = 2g / (|TS(A)| + m) with g = |TS(A) ∩ TS(C)| and m = Eff_t(C). Each count is
a cardinality (incremental totalizers on the flip and timestep literals, :class:`solvers.minimal_sets.Tally`) and
each SAT model is valid (:class:`solvers.minimal_sets.ValidSearch`, Min1 learnt lazily), so:

1. F1_AP: for h = 1, 2, ..., the least n with "at least h hits" (descending SAT-UNSAT search); the best F1_AP is the
   largest 2h / (a + n_min(h)), and the valid sets with exactly that F1_AP are the union of the boxes
   "hits >= h and n <= n_min(h)" over the h that reach it (a box holds no other F1 value: any model in it has
   F1_AP >= 2h / (a + n_min(h)), the maximum). With no hit possible, every valid set ties at F1_AP = 0.
2. F1_TS likewise within those boxes; 3. the least m among the (g, m) cells at that F1_TS;
4. the tie class (every valid set in the boxes with exactly g and m) enumerated by SAT with blocking, and the lowest
   digest taken. Past the limits, or past :data:`TIE_CAP` sets in the tie class, the answer is Unknown, never a pick.

>>> best_match(problem, [(19, 1, 1)], problem.budget_t).ap_f1
0.4
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from fractions import Fraction

from encoders.problem import Atom, Flip, Problem
from solvers import explicit
from solvers.canonical import canonical, certificate_digest, effective_flips, flips_to_atoms, timesteps
from solvers.limits import NO_LIMITS, Limits, Unknown, guarded
from solvers.minimal_sets import Tally, ValidSearch
from solvers.results import BestMatch, prf

#: Most valid certificates enumerated in the final tie class before the best match is Unknown.
TIE_CAP = 100_000

Model = frozenset[Flip]
Measure = Callable[[Model], int]


def _least(search: ValidSearch, base: list[int], tally: Tally, measure: Measure) -> int | None:
    """The least ``measure`` (counted by ``tally``) of a valid set under ``base``; None when there is none."""
    model = search.solve(base)
    if model is None:
        return None
    k = measure(model)
    while k > 0:
        better = search.solve([*base, *tally.at_most(k - 1)])
        if better is None:
            break
        k = measure(better)
    return k


def _f1(hits: int, agent: int, gold: int) -> Fraction:
    return prf(hits, agent, gold)[2]


def _best_ratio(search: ValidSearch, boxes: list[list[int]], hits: Tally, size: Tally, agent: int,
                hit_of: Measure, size_of: Measure) -> tuple[Fraction, list[list[int]]]:
    """The largest F1 = 2 hits / (agent + size) over valid sets in the union of ``boxes``, and the boxes (each
    refined by "hits >= h and size <= s") whose union is exactly the valid sets in ``boxes`` at that F1."""
    least: list[tuple[list[int], int, int]] = []  # (box, h, least size with >= h hits)
    for box in boxes:
        for h in range(1, len(hits.lits) + 1):
            got = _least(search, [*box, *hits.at_least(h)], size, size_of)
            if got is None:
                break
            least.append((box, h, got))
    if not least:  # no valid set scores a hit: all of them tie at F1 = 0
        return Fraction(0), boxes
    best = max(_f1(h, agent, s) for _, h, s in least)
    return best, [[*box, *hits.at_least(h), *size.at_most(s)] for box, h, s in least if _f1(h, agent, s) == best]


@guarded("best_match")
def best_match(
    problem: Problem, atoms: Sequence[Atom], budget_t: int | None, *, limits: Limits | None = None
) -> BestMatch:
    """The DEC-025 gold certificate in M_B(I) for the agent's ``atoms``, with AP- and TS-level P/R/F1.

    A valid agent certificate within the budget is its own gold, with no SAT call (as on the forward pass)."""
    clock = (limits or NO_LIMITS).start()
    agent = set(atoms)
    agent_ts = timesteps(agent)
    if agent and (budget_t is None or len(agent_ts) <= budget_t) and explicit.valid(problem, sorted(agent)):
        # F1_AP = 1 exactly when the gold is C_a itself; without this the optimisation below has to prove that on
        # circuits too wide to tabulate, and ran out of time on SYNTCOMP designs (the corpus sweep).
        return BestMatch(canonical(problem, sorted(agent)), 1.0, 1.0, 1.0, 1.0, 1.0, 1.0)
    live = sorted(p for p in effective_flips(problem, agent) if p[0] <= problem.t_star)
    with ValidSearch(problem, budget_t, clock, "best_match") as search:
        enc = search.enc
        if search.solve() is None:
            return BestMatch((), 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
        live_set = set(live)
        ap_hits = search.tally([enc.flips[p] for p in live])
        size = search.size
        ts_live = sorted(t for t in agent_ts if t in enc.timestep)
        ts_hits = search.tally([enc.timestep[t] for t in ts_live])
        eff_t = search.tally([enc.timestep[t] for t in search.steps])

        def n_hits(m: Model) -> int:
            return len(m & live_set)

        def n_ts_hits(m: Model) -> int:
            return len(timesteps((t, i, 0) for t, i in m) & agent_ts)

        def n_ts(m: Model) -> int:
            return len(timesteps((t, i, 0) for t, i in m))

        _, level1 = _best_ratio(search, [[]], ap_hits, size, len(agent), n_hits, len)
        f1_ts, level2 = _best_ratio(search, level1, ts_hits, eff_t, len(agent_ts), n_ts_hits, n_ts)
        # Level 3: the least Eff_t among the (g, m) cells at F1_TS, then the exact cell as the tie class.
        cells = []
        for box in level2 if f1_ts else level1:
            m = _least(search, box, eff_t, n_ts)
            if m is not None:
                cells.append((m, box))
        m_star = min(m for m, _ in cells)
        ties = [[*box, *eff_t.between(m_star, m_star)] for m, box in cells if m == m_star]
        best: tuple[str, tuple[Atom, ...]] | None = None
        seen = 0
        for box in ties:
            while (model := search.solve(box)) is not None:
                seen += 1
                if seen > TIE_CAP:
                    raise Unknown("best_match", f"more than {TIE_CAP} certificates tie up to the digest",
                                  {**clock.spent, "seconds": round(clock.elapsed(), 3)})
                cert = flips_to_atoms(problem, model)
                key = (certificate_digest(problem, cert), cert)
                if best is None or key < best:
                    best = key
                search.block(model)
        for tally in (ap_hits, ts_hits, eff_t):
            tally.close()
    assert best is not None, "a cell found feasible holds a model"
    gold = best[1]
    ap = prf(len(agent & set(gold)), len(agent), len(gold))
    ts = prf(len(agent_ts & timesteps(gold)), len(agent_ts), len(timesteps(gold)))
    return BestMatch(gold, *(float(v) for v in ap), *(float(v) for v in ts))


__all__ = ["TIE_CAP", "best_match"]
