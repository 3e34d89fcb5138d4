"""A GF-01 query at the solver level: Mealy system, base trace, effect, target time, mode, window, budgets.

The system is a table system (:class:`hoa.mealy.MealyView`, dense next/out tables) or a circuit
(:class:`aig.view.CircuitView`, an AIG with latches); both offer ``inputs``, ``outputs``, ``initial`` and
``step(q, x) -> (q', y)``, and each backend says which queries it answers on which (docs/solvers.md).

Everything is by index, not by name: input ``i`` is ``system.inputs[i]``, the effect is an expression over output
indices. An atom is ``(t, i, v)``: at step ``t`` set input ``i`` to ``v``. A flip is ``(t, i)``: the atom that sets
input ``i`` at step ``t`` to the opposite of its base value. A certificate is a tuple of atoms; the solvers return
them canonical (sorted by ``(t, input name, v)``, no duplicates; :func:`solvers.canonical.canonical`).
"""

from __future__ import annotations

from dataclasses import dataclass

from aig.view import CircuitView
from hoa.errors import Gf01Error
from hoa.label import Expr, variables
from hoa.mealy import MealyView

#: ``(t, i, v)``: at step t, set input i (index into ``system.inputs``) to v.
Atom = tuple[int, int, int]
#: ``(t, i)``: at step t, input i takes the opposite of its base value.
Flip = tuple[int, int]
#: A set of atoms as a tuple; canonical when sorted by (t, input name, v) without duplicates.
Certificate = tuple[Atom, ...]

MODES = ("hard", "normal")


@dataclass(frozen=True)
class Problem:
    """One instance's exact semantics (docs/semantics.md).

    ``trace[t]`` is the input valuation tau_t (bit ``i`` = input ``i``). Hard mode asks for the effect at
    ``t_star``; normal mode asks for it at some step of ``[max(0, t_star - window), t_star]``. ``budget_t`` (B_T)
    bounds the distinct timesteps a certificate touches; ``budget_a`` (B_A) is carried for the play protocol.
    """

    system: MealyView | CircuitView
    trace: tuple[int, ...]
    effect: Expr
    t_star: int
    mode: str = "hard"
    window: int = 1
    budget_t: int | None = None
    budget_a: int | None = None

    def __post_init__(self) -> None:
        T = len(self.trace)
        if T < 1:
            raise Gf01Error("the base trace must have at least one step", field="base_trace")
        if not 0 <= self.t_star < T:
            raise Gf01Error(f"t* = {self.t_star} is outside [0, {T - 1}]", field="t_star")
        if self.mode not in MODES:
            raise Gf01Error(f"mode {self.mode!r} is not one of {', '.join(MODES)}", field="mode")
        if self.window < 0:
            raise Gf01Error(f"window {self.window} is negative", field="window")
        if self.budget_t is not None and self.budget_t < 0:
            raise Gf01Error(f"B_T = {self.budget_t} is negative", field="budget_t")
        if self.budget_a is not None and self.budget_a < 0:
            raise Gf01Error(f"B_A = {self.budget_a} is negative", field="budget_a")
        limit = 1 << self.system.num_inputs
        for t, x in enumerate(self.trace):
            if not 0 <= x < limit:
                raise Gf01Error(f"step {t}: input valuation {x} out of range", field="base_trace")
        bad = [v for v in variables(self.effect) if v >= self.system.num_outputs]
        if bad:
            raise Gf01Error(f"the effect uses output index {bad[0]}, the system has {self.system.num_outputs}",
                            field="effect")

    @property
    def circuit(self) -> bool:
        """Whether the system is a circuit (:class:`aig.view.CircuitView`) rather than a table system."""
        return isinstance(self.system, CircuitView)

    @property
    def horizon(self) -> int:
        """T, the number of steps."""
        return len(self.trace)

    @property
    def effect_steps(self) -> range:
        """The steps at which the effect counts: ``{t*}`` in hard mode, the window in normal mode."""
        if self.mode == "hard":
            return range(self.t_star, self.t_star + 1)
        return range(max(0, self.t_star - self.window), self.t_star + 1)

    def apply(self, atoms: tuple[Atom, ...] | list[Atom]) -> list[int]:
        """tau[C]: the base trace with every atom's value written in (Definition 5)."""
        trace = list(self.trace)
        for t, i, v in atoms:
            trace[t] = (trace[t] | (1 << i)) if v else (trace[t] & ~(1 << i))
        return trace
