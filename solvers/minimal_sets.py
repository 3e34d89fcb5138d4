"""M_B(I) on the SAT unrolling without building every Min1 copy: a search that learns minimality, and the count and
enumeration it answers.

A valid certificate is a Suff flip set none of whose single removals is Suff (Min1). Encoding Min1 in full takes one
copy of the unrolling per flip position (``encoders.cnf.min1_term``): 52 inputs x 12 steps are 624 copies, most of
which no model ever needs. :class:`ValidSearch` asks the SAT solver for Suff models only and checks each model's Min1
by bit-parallel simulation (:func:`solvers.simulate.check_many`); for every position p whose removal keeps the model
sufficient it adds a copy whose clause every valid certificate satisfies, so the refinement is exact (the Min1
counterpart of a CEGAR loop, or of an MCS enumerator's learnt cores). The copies are first *rank copies*
(``encoders.cnf.rank_min1_term``: copy j undoes the model's j-th flip, whichever position that is, so K of them make
Min1 exact for every set of at most K flips); a removable flip ranked past :data:`RANK_CAP` gets its per-position
copy (``f_p -> NOT Suff_p``). A model that passes the check is valid; every refinement adds a copy that was not
there and there are finitely many, so the loop ends.

Counting and enumeration block each valid flip assignment exactly (never its supersets: Min1 is not monotone).
Past :data:`ENUMERATION_CAP` certificates the count goes to an exact projected model counter
(:mod:`solvers.projected_count`, Ganak through the optional ``count`` extra) on the full Valid encoding, projected on
the flip variables; without the counter it is ``unknown``, never a guess.

>>> count(problem, problem.budget_t)
6
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from pysat.card import ITotalizer

from encoders.cnf import Encoding, add_timestep_budget, encode, min1_term, rank_min1_term
from encoders.problem import Certificate, Flip, Problem
from solvers.canonical import canonical, flips_to_atoms, order_key
from solvers.cone import dead_flips
from solvers.limits import NO_LIMITS, Clock, Limits, Unknown, guarded
from solvers.sat_session import Session
from solvers.simulate import check_many

#: Rank copies a search builds at most (flips ranked past it get a per-position Min1 copy each).
RANK_CAP = 8

#: Certificates the count enumerates by SAT before it hands the rest to the projected model counter.
ENUMERATION_CAP = 20_000


class Tally:
    """Bounds on how many of ``lits`` are true, as assumption literals: two incremental totalizers built on first use
    (over the literals for upper bounds, over their negations for lower bounds), each grown only as far as the
    largest bound asked so far (a totalizer's size is about literals x bound)."""

    def __init__(self, search: ValidSearch, lits: Sequence[int]) -> None:
        self.search = search
        self.lits = list(lits)
        self._tots: dict[bool, ITotalizer] = {}
        self._added: dict[bool, int] = {}

    def _rhs(self, negated: bool, k: int) -> int:
        """The totalizer output meaning "more than k of the (negated) literals are true"."""
        enc = self.search.enc
        tot = self._tots.get(negated)
        if tot is None:
            lits = [-lit for lit in self.lits] if negated else self.lits
            tot = self._tots[negated] = ITotalizer(lits=lits, ubound=k + 1, top_id=enc.pool.top)
            self._added[negated] = 0
        elif len(tot.rhs) <= k:
            tot.increase(ubound=k + 1, top_id=enc.pool.top)
        enc.pool.top = max(enc.pool.top, tot.top_id)  # later pool ids must not reuse the totalizer's variables
        enc.clauses.extend(tot.cnf.clauses[self._added[negated] :])
        self._added[negated] = len(tot.cnf.clauses)
        return tot.rhs[k]

    def at_most(self, k: int) -> list[int]:
        """Assumptions meaning "at most k of the literals are true"."""
        if k >= len(self.lits):
            return []
        if k < 0:
            return [-self.search.enc.true]
        return [-self._rhs(False, k)]

    def at_least(self, k: int) -> list[int]:
        """Assumptions meaning "at least k of the literals are true" (at most len - k of their negations)."""
        if k <= 0:
            return []
        if k > len(self.lits):
            return [-self.search.enc.true]
        return [-self._rhs(True, len(self.lits) - k)]

    def between(self, lo: int, hi: int) -> list[int]:
        return [*self.at_least(lo), *self.at_most(hi)]

    def close(self) -> None:
        for tot in self._tots.values():
            tot.delete()


class ValidSearch:
    """One SAT session whose models, under any assumptions, are exactly the valid flip sets within ``budget_t``
    (Min1 copies added as the simulation finds them needed). Use as a context manager."""

    def __init__(self, problem: Problem, budget_t: int | None, clock: Clock, query: str,
                 rank_cap: int | None = None) -> None:
        self.problem = problem
        self.rank_cap = RANK_CAP if rank_cap is None else rank_cap
        self.query = query
        self.clock = clock
        self.enc: Encoding = encode(problem, check=lambda: clock.check(query))
        if budget_t is not None:
            add_timestep_budget(self.enc, budget_t)
        self.enc.clauses.append([self.enc.suff])
        # Flips outside the effect's step-by-step cone are in no valid set: off from the start, so no model carries
        # them and no Min1 copy is ever built for them.
        dead = dead_flips(problem)
        self.enc.clauses.extend([-self.enc.flips[p]] for p in sorted(dead))
        self.order = [p for p in sorted(self.enc.flips) if p not in dead]  # the rank copies' order of positions
        self.ranks = 0  # rank copies built: Min1 is encoded in full for every model of at most this many flips
        self.session = Session(self.enc, query, clock)
        # Flips default to off: the solver's models are then near-minimal, so few Min1 copies are ever needed
        # (with free phases a model flips about half the inputs, and every removable flip costs a copy).
        self.session.solver.set_phases([-v for v in self.enc.flips.values()])
        self.copies: set[Flip] = set()
        self.size = Tally(self, list(self.enc.flips.values()))
        self.steps = sorted(self.enc.timestep)

    def tally(self, lits: Sequence[int]) -> Tally:
        """A :class:`Tally` over ``lits`` (flip or timestep literals of :attr:`enc`)."""
        return Tally(self, lits)

    def solve(self, assumptions: Iterable[int] = ()) -> frozenset[Flip] | None:
        """A valid flip set satisfying ``assumptions``, or None when there is none."""
        assumptions = list(assumptions)
        while True:
            if not self.session.solve(assumptions):
                return None
            flips = sorted(self.session.model_flips())
            needed = self._removable(flips)
            if not needed:
                return frozenset(flips)
            # Cheap first: a Min1 subset of the model (removals by simulation) that meets the assumptions and every
            # clause so far (one SAT call that only propagates: every flip is fixed) is a valid answer, no copy built.
            core = self._shrink(flips, needed)
            if self.session.solve([*assumptions, *(v if p in core else -v for p, v in self.enc.flips.items())]):
                return frozenset(core)
            # Else refine on a model of least size under the assumptions: its removable flips are ones the
            # assumptions need (a model with spare flips would ask for a copy per spare flip, and spare flips are
            # as many as the budget allows).
            while len(flips) > 1 and self.session.solve([*assumptions, *self.size.at_most(len(flips) - 1)]):
                flips = sorted(self.session.model_flips())
            needed = self._removable(flips)
            if not needed:
                return frozenset(flips)
            self._refine(flips, needed)

    def _refine(self, flips: list[Flip], needed: list[Flip]) -> None:
        """Copies that rule out the model ``flips`` (sorted), whose removals of ``needed`` stay sufficient: rank
        copies up to the largest rank among them within :attr:`rank_cap`, a per-position copy for each past it."""
        check = lambda: self.clock.check(self.query)  # noqa: E731
        rank = {p: k + 1 for k, p in enumerate(flips)}
        for p in needed:
            # A removal that stays sufficient where a copy covers it would contradict the copy's clause.
            assert rank[p] > self.ranks and p not in self.copies, f"{p} is covered, yet its removal stays sufficient"
        upto = max((rank[p] for p in needed if rank[p] <= self.rank_cap), default=0)
        for j in range(self.ranks + 1, upto + 1):
            self.enc.clauses.append([rank_min1_term(self.enc, j, self.order, check)])
        if upto > self.ranks:
            self.clock.add("rank_copies", upto - self.ranks)
            self.ranks = upto
        past = [p for p in needed if rank[p] > self.rank_cap]
        for p in past:
            self.copies.add(p)
            self.enc.clauses.append([min1_term(self.enc, p, check)])
        if past:
            self.clock.add("min1_copies", len(past))

    def _removable(self, flips: list[Flip]) -> list[Flip]:
        """The flips whose single removal leaves ``flips`` sufficient (by simulation)."""
        if not flips:
            return []
        atoms = flips_to_atoms(self.problem, flips)
        by_flip = {(t, i): (t, i, v) for t, i, v in atoms}
        variants = [[by_flip[q] for q in flips if q != p] for p in flips]
        suff, _ = check_many(self.problem, variants)
        return [p for p, s in zip(flips, suff, strict=True) if s]

    def _shrink(self, flips: list[Flip], removable: list[Flip]) -> set[Flip]:
        """A subset of ``flips`` that is sufficient and Min1. Each round simulates, in one bit-parallel batch, the
        chain "drop the first removable flip, then the next too, ..." and keeps its longest sufficient prefix (the
        first link is sufficient by definition, so every round drops a flip); it stops at a link that is also Min1,
        else recomputes the removable flips. On a circuit a batch costs about as much as one run (measured on
        SYNTCOMP's LTL2DBA, about 80 ms a batch), so rounds, not removals, are what count."""
        cur = list(flips)
        while removable:
            chain, links = list(cur), []
            for p in removable:
                chain = [q for q in chain if q != p]
                links.append(chain)
            suff, min1 = check_many(self.problem, [flips_to_atoms(self.problem, link) for link in links])
            j = max(k for k in range(len(links)) if suff[k])
            cur = links[j]
            if min1[j]:
                break
            removable = self._removable(cur)
        return set(cur)

    def block(self, flips: Iterable[Flip]) -> None:
        """Exclude exactly this flip assignment from later models."""
        chosen = set(flips)
        self.enc.clauses.append([-v if p in chosen else v for p, v in self.enc.flips.items()])

    def close(self) -> None:
        self.size.close()
        self.session.close()

    def __enter__(self) -> ValidSearch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass(frozen=True)
class Enumerated:
    """What an enumeration of valid flip sets found: the sets, and whether they are all of them."""

    found: tuple[frozenset[Flip], ...]
    complete: bool


def valid_sets(search: ValidSearch, assumptions: Sequence[int], cap: int | None) -> Enumerated:
    """Every valid flip set under ``assumptions`` (each blocked once found), or the first ``cap`` of them."""
    found: list[frozenset[Flip]] = []
    while cap is None or len(found) < cap:
        flips = search.solve(assumptions)
        if flips is None:
            return Enumerated(tuple(found), True)
        found.append(flips)
        search.block(flips)
    return Enumerated(tuple(found), False)


@guarded("count")
def count(problem: Problem, budget_t: int | None, *, limits: Limits | None = None) -> int:
    """|M(I)| or |M_B(I)|: enumerated up to :data:`ENUMERATION_CAP` certificates, past it counted by the projected
    model counter (Unknown when it is not installed)."""
    clock = (limits or NO_LIMITS).start()
    with ValidSearch(problem, budget_t, clock, "count") as search:
        got = valid_sets(search, (), ENUMERATION_CAP)
    if got.complete:
        return len(got.found)
    from solvers import projected_count

    if not projected_count.available():
        raise Unknown("count", f"more than {ENUMERATION_CAP} certificates and no projected model counter "
                      f"({projected_count.INSTALL})", {**clock.spent, "seconds": round(clock.elapsed(), 3)})
    return projected_count.count_valid(problem, budget_t, clock)


@guarded("enumerate", stream=True)
def enumerate_certificates(
    problem: Problem, budget_t: int | None, limit: int | None = None, *, limits: Limits | None = None
) -> Iterator[Certificate]:
    """M(I) or M_B(I) in canonical order, lazily: layer by layer in (|TS|, |C|), each layer sorted (with every
    earlier layer blocked, the models under "at most k timesteps and at most n flips" are exactly layer (k, n))."""
    clock = (limits or NO_LIMITS).start()
    produced = 0
    with ValidSearch(problem, budget_t, clock, "enumerate") as search:
        ts = search.tally([search.enc.timestep[t] for t in search.steps])
        fl = search.size
        n_in = problem.system.num_inputs
        max_k = len(search.steps) if budget_t is None else min(budget_t, len(search.steps))
        for k in range(max_k + 1):
            if search.solve(ts.at_most(k)) is None:
                continue
            for n in range(k, k * n_in + 1):
                layer = valid_sets(search, [*ts.at_most(k), *fl.at_most(n)], None).found
                certs = sorted((flips_to_atoms(problem, f) for f in layer), key=lambda c: order_key(problem, c))
                for cert in certs:
                    yield canonical(problem, cert)
                    produced += 1
                    if limit is not None and produced >= limit:
                        return
                if search.solve(ts.at_most(k)) is None:
                    break
        ts.close()


__all__ = ["ENUMERATION_CAP", "RANK_CAP", "Enumerated", "Tally", "ValidSearch", "count", "enumerate_certificates",
           "valid_sets"]
