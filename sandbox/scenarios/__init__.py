"""The scenario catalogue. Names are a contract: the CLI, the notebooks and the grader use them."""
from __future__ import annotations

from ..errors import BadInput
from .base import RunResult, Scenario, Setting, run_scenario
from .concurrent_claims import ConcurrentClaims
from .no_fault import NoFault

SCENARIOS: dict[str, Scenario] = {sc.name: sc for sc in (NoFault(), ConcurrentClaims())}


def get_scenario(name: str) -> Scenario:
    try:
        return SCENARIOS[name]
    except KeyError:
        raise BadInput(f"unknown scenario {name!r}; known scenarios: {', '.join(SCENARIOS)}") from None


__all__ = ["SCENARIOS", "RunResult", "Scenario", "Setting", "get_scenario", "run_scenario"]
