"""Declared adaptation (DEC-055, ``gf01.adaptation_policy.v1``): how the model behind an agent was adapted to GF-01.

A run record carries ``adaptation_condition`` (``no_adaptation``, ``prompt_adaptation``, ``weight_finetune``),
``adaptation_budget_tokens``, ``adaptation_data_scope`` and ``adaptation_protocol_id``. ``no_adaptation`` requires
budget 0, scope ``none`` and protocol ``none``; the two adapted conditions require a positive budget, a scope other
than ``none`` and a protocol id other than ``none``. The declaration belongs to the agent (a fine-tuned model is
another agent), so it enters the agent's spec, and with it the agent hash and the run ids, when it is not the
default; ``gf01 validate`` checks the same constraints on every record.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hoa.errors import Gf01Error

POLICY = "gf01.adaptation_policy.v1"
CONDITIONS = ("no_adaptation", "prompt_adaptation", "weight_finetune")
#: The longest scope or protocol id accepted (they are labels, not documents).
MAX_LABEL = 200


@dataclass(frozen=True)
class Adaptation:
    """One DEC-055 declaration; :func:`declare` builds a checked one."""

    condition: str = "no_adaptation"
    budget_tokens: int = 0
    data_scope: str = "none"
    protocol_id: str = "none"

    @property
    def is_default(self) -> bool:
        """Whether this is the declaration every record carries when none is given."""
        return self == Adaptation()

    def to_json(self) -> dict[str, Any]:
        """The declaration as the agent spec stores it."""
        return {"condition": self.condition, "budget_tokens": self.budget_tokens, "data_scope": self.data_scope,
                "protocol_id": self.protocol_id}

    def record_fields(self) -> dict[str, Any]:
        """The run record's adaptation fields."""
        return {"adaptation_condition": self.condition, "adaptation_budget_tokens": self.budget_tokens,
                "adaptation_data_scope": self.data_scope, "adaptation_protocol_id": self.protocol_id}


def problems(a: Adaptation) -> list[tuple[str, str]]:
    """(option, reason) for every DEC-055 constraint ``a`` breaks, in option order."""
    out: list[tuple[str, str]] = []
    if a.condition not in CONDITIONS:
        return [("--adaptation-condition", f"unknown condition {a.condition!r} (one of {', '.join(CONDITIONS)})")]
    if a.condition == "no_adaptation":
        if a.budget_tokens != 0:
            out.append(("--adaptation-budget-tokens", "no_adaptation requires a token budget of 0"))
        if a.data_scope != "none":
            out.append(("--adaptation-data-scope", "no_adaptation requires the data scope none"))
        if a.protocol_id != "none":
            out.append(("--adaptation-protocol-id", "no_adaptation requires the protocol id none"))
        return out
    if a.budget_tokens <= 0:
        out.append(("--adaptation-budget-tokens", f"{a.condition} requires a positive token budget"))
    if not a.data_scope.strip() or a.data_scope == "none":
        out.append(("--adaptation-data-scope", f"{a.condition} requires a data scope other than none"))
    if not a.protocol_id.strip() or a.protocol_id == "none":
        out.append(("--adaptation-protocol-id", f"{a.condition} requires a protocol id other than none"))
    return out


def declare(condition: str | None = None, budget_tokens: int | None = None, data_scope: str | None = None,
            protocol_id: str | None = None) -> Adaptation:
    """A checked declaration from the options given (None: the option was not given, its default applies); the
    first broken constraint is a Gf01Error naming its option."""
    for option, value in (("--adaptation-data-scope", data_scope), ("--adaptation-protocol-id", protocol_id)):
        if value is not None and len(value) > MAX_LABEL:
            raise Gf01Error(f"at most {MAX_LABEL} characters", field=option)
    if budget_tokens is not None and budget_tokens < 0:
        raise Gf01Error("a token budget is >= 0", field="--adaptation-budget-tokens")
    a = Adaptation(condition=condition or "no_adaptation", budget_tokens=budget_tokens or 0,
                   data_scope="none" if data_scope is None else data_scope,
                   protocol_id="none" if protocol_id is None else protocol_id)
    bad = problems(a)
    if bad:
        option, reason = bad[0]
        raise Gf01Error(reason, field=option)
    return a


def from_json(data: Any) -> Adaptation:
    """The declaration an agent spec stored (:meth:`Adaptation.to_json`)."""
    if not isinstance(data, dict):
        raise Gf01Error("an adaptation declaration is an object", field="adaptation")
    return declare(data.get("condition"), data.get("budget_tokens"), data.get("data_scope"), data.get("protocol_id"))
