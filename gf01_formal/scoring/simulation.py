"""The base run and a certificate's edited run, step by step: what ``gf01 sim`` shows (the view ``aigsim`` gives a
hardware engineer), and what the VCD and AIGER-witness writers turn into files.

Both runs are simulated by the system's own ``run`` (the one simulator of the project); nothing here decides Suff
differently from the scorer: the edited run shows the effect exactly when the certificate is sufficient
(Definition 10), which a test holds against :func:`solvers.api.suff`.

>>> sim = simulate(problem, ((20, 2, 1), (21, 2, 1)))
>>> sim.suff, sim.base_effect, [s.t for s in sim.steps if s.edited_inputs != s.base_inputs]
(True, False, [20, 21])
"""

from __future__ import annotations

from dataclasses import dataclass

from encoders.problem import Atom, Problem
from hoa.label import evaluate


@dataclass(frozen=True, slots=True)
class SimStep:
    """One step ``t`` of both runs: the state before the step, the input and output valuations (bit ``i`` is input
    or output ``i``), and whether the outputs satisfy the effect (whatever the step; ``effect_step`` says whether the
    effect counts there)."""

    t: int
    base_state: int
    edited_state: int
    base_inputs: int
    edited_inputs: int
    base_outputs: int
    edited_outputs: int
    base_effect: bool
    edited_effect: bool
    effect_step: bool


@dataclass(frozen=True, slots=True)
class Simulation:
    """Both runs of one instance under one certificate (the base run twice for the empty certificate)."""

    problem: Problem
    atoms: tuple[Atom, ...]
    steps: tuple[SimStep, ...]
    final_base_state: int
    final_edited_state: int

    @property
    def suff(self) -> bool:
        """Whether the edited run shows the effect at an effect step (Suff, Definition 10)."""
        return any(s.edited_effect and s.effect_step for s in self.steps)

    @property
    def base_effect(self) -> bool:
        """Whether the base run already shows the effect at an effect step (then the empty certificate suffices)."""
        return any(s.base_effect and s.effect_step for s in self.steps)

    @property
    def first_effect(self) -> int | None:
        """The first effect step at which the edited run shows the effect (None when it never does)."""
        return next((s.t for s in self.steps if s.edited_effect and s.effect_step), None)


def simulate(problem: Problem, atoms: tuple[Atom, ...] = ()) -> Simulation:
    """The base run of ``problem`` and its edited run under ``atoms`` (well-formed: one value per (t, input))."""
    system = problem.system
    edited = problem.apply(atoms)
    base_states, base_outs = system.run(problem.trace)
    edit_states, edit_outs = system.run(edited)
    window = set(problem.effect_steps)
    steps = tuple(
        SimStep(t, base_states[t], edit_states[t], problem.trace[t], edited[t], base_outs[t], edit_outs[t],
                evaluate(problem.effect, base_outs[t]), evaluate(problem.effect, edit_outs[t]), t in window)
        for t in range(problem.horizon)
    )
    return Simulation(problem, tuple(atoms), steps, base_states[-1], edit_states[-1])


def bits(value: int, width: int) -> str:
    """A valuation as a bit string, signal 0 first (the order AIGER's simulators print).

    >>> bits(0b0110, 4)
    '0110'
    """
    return "".join(str((value >> i) & 1) for i in range(width))


def to_json(sim: Simulation) -> dict[str, object]:
    """The JSON record of ``gf01 sim --json``: names once, then per step both runs as bit strings (signal 0 first),
    the state names, the effect, and the names of the inputs and outputs where the runs differ."""
    system = sim.problem.system
    n_in, n_out = system.num_inputs, system.num_outputs

    def side(state: int, xs: int, ys: int, effect: bool) -> dict[str, object]:
        return {"state": system.state_name(state), "inputs": bits(xs, n_in), "outputs": bits(ys, n_out),
                "effect": effect}

    return {
        "inputs": list(system.inputs),
        "outputs": list(system.outputs),
        "t_star": sim.problem.t_star,
        "mode": sim.problem.mode,
        "effect_steps": [min(sim.problem.effect_steps), max(sim.problem.effect_steps)],
        "certificate": [[t, system.inputs[i], v] for t, i, v in sim.atoms],
        "suff": sim.suff,
        "base_effect": sim.base_effect,
        "steps": [
            {
                "t": s.t,
                "effect_step": s.effect_step,
                "base": side(s.base_state, s.base_inputs, s.base_outputs, s.base_effect),
                "edited": side(s.edited_state, s.edited_inputs, s.edited_outputs, s.edited_effect),
                "inputs_differ": [a for i, a in enumerate(system.inputs) if (s.base_inputs ^ s.edited_inputs) >> i & 1],
                "outputs_differ": [o for j, o in enumerate(system.outputs)
                                   if (s.base_outputs ^ s.edited_outputs) >> j & 1],
            }
            for s in sim.steps
        ],
    }


__all__ = ["SimStep", "Simulation", "bits", "simulate", "to_json"]
