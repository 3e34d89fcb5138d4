"""|M(I)| / |M_B(I)| of a tiny table system by a plain-Python forward DP: the forward backend's count where the key
space is a few hundred keys (the generator's sizes: 3-6 states, 3 inputs, T <= 12).

The numpy pass (:mod:`solvers.forward_pass`) pays a fixed cost per call (the quotient, its per-step tables, array
set-up: about 9.5 ms at these sizes) that dwarfs the work of a tiny instance. This DP walks the same keys without
it: after step t a key is (q, S, b, shown) with

- q the edited run's state, S the bitmask of the states of the removal runs (one per flip made so far; two in the
  same state behave alike from then on) that have not shown the effect, b the timesteps used, and shown whether
  the edited run has shown the effect at a step of the window.

Walking step t with flip mask d (x = tau_t XOR d): the edited run and every removal run in S read x; flip i of d
starts a removal run from q reading x with bit i toggled. A removal run that shows the effect at a window step
kills the path (C minus its flip is sufficient); after the edited run has shown the effect no flip may follow (its
removal run would share the showing prefix). Exact reductions that keep the keys few: a removal run from which no
input sequence can show the effect any more is dropped; an edited run that has not shown the effect and cannot
any more kills the path, and so does a removal run in its state (its twin from then on: it would show the effect
whenever the edited run does). Each flip set is one path, so the keys with ``shown`` after t* count M_B(I).

:func:`count` returns None when the instance is not tiny (not a table system, too many inputs, more than
:data:`MAX_KEYS` keys at some step or :data:`MAX_WORK` expansions in all): the caller then runs the numpy pass. The
bounds are on keys and expansions, never on time, so which path answers is a function of the instance alone; both
are exact, so the answer is the same either way.
"""

from __future__ import annotations

from collections import defaultdict

from encoders.problem import Problem
from hoa.mealy import MealyView
from solvers.small_tables import plain_tables

#: Most input bits a tiny instance has (2^n flip masks per key and step).
MAX_INPUTS = 4
#: Most states a tiny instance has (S is a bitmask over them).
MAX_STATES = 64
#: Most live keys after any step; past it the numpy pass takes over.
MAX_KEYS = 4096
#: Most (key, flip mask) expansions of the whole count (about a quarter of a second); past it the pass takes over,
#: so a tiny table at a long horizon does not run a plain loop where the pass is faster.
MAX_WORK = 1 << 18


def applies(problem: Problem) -> bool:
    """Whether ``problem``'s system is small enough to try :func:`count` on."""
    view = problem.system
    return (isinstance(view, MealyView) and view.has_tables and view.num_inputs <= MAX_INPUTS
            and view.num_states <= MAX_STATES)


def count(problem: Problem, budget_t: int | None) -> int | None:
    """|M(I)| (``budget_t`` None) or |M_B(I)| exactly, or None when the instance is not tiny (module docstring)."""
    if not applies(problem):
        return None
    view: MealyView = problem.system  # type: ignore[assignment]
    nxt, hit = plain_tables(problem)
    n, n_states, t_star = view.num_inputs, view.num_states, problem.t_star
    lo = t_star if problem.mode == "hard" else max(0, t_star - problem.window)
    can = _can_show(nxt, hit, n_states, lo, t_star)
    bits = [[1 << i for i in range(n) if d >> i & 1] for d in range(1 << n)]
    budget = t_star + 1 if budget_t is None else budget_t
    keys: dict[tuple[int, int, int, bool], int] = {(view.initial, 0, 0, False): 1}
    work = 0
    for t in range(t_star + 1):
        work += len(keys) << n
        if work > MAX_WORK:
            return None
        in_window = t >= lo
        live = can[t + 1]
        tau = problem.trace[t]
        new: defaultdict[tuple[int, int, int, bool], int] = defaultdict(int)
        for (q, s, b, shown), c in keys.items():
            # The removal runs already made read x as the edited run does: their images under each letter.
            runs = [r for r in range(n_states) if s >> r & 1]
            for d, flips in enumerate(bits):
                if d and (shown or b >= budget):
                    break
                x = tau ^ d
                row_hit = hit[q]
                if in_window and any(hit[r][x] for r in runs):
                    continue
                s2 = 0
                for r in runs:
                    r2 = nxt[r][x]
                    if live[r2]:
                        s2 |= 1 << r2
                dead = False
                for f in flips:
                    if in_window and row_hit[x ^ f]:
                        dead = True
                        break
                    r2 = nxt[q][x ^ f]
                    if live[r2]:
                        s2 |= 1 << r2
                if dead:
                    continue
                q2 = nxt[q][x]
                shown2 = shown or (in_window and row_hit[x])
                if not shown2 and (not live[q2] or s2 >> q2 & 1):
                    continue
                new[(q2, s2, b + (d != 0), shown2)] += c
        if len(new) > MAX_KEYS:
            return None
        keys = new
    return sum(c for (_, _, _, shown), c in keys.items() if shown)


def _can_show(nxt: list[list[int]], hit: list[list[bool]], n_states: int, lo: int, t_star: int) -> list[list[bool]]:
    """``can[t][r]``: some input sequence from state r before step t shows the effect at a window step >= t
    (``can[t* + 1]`` is all False: nothing after t* counts)."""
    can = [[False] * n_states for _ in range(t_star + 2)]
    for t in range(t_star, -1, -1):
        later = can[t + 1]
        in_window = t >= lo
        can[t] = [any((in_window and h) or later[r2] for h, r2 in zip(hit[r], nxt[r], strict=True))
                  for r in range(n_states)]
    return can
