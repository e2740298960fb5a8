"""Scenarios: each reproduces one way AWS delivers an event more than once (see ``catalog``)."""
from __future__ import annotations

from ..settings import Setting
from .base import RunResult, Scenario
from .catalog import ORDER, SCENARIOS, get_scenario
from .runner import run_scenario

__all__ = ["ORDER", "SCENARIOS", "RunResult", "Scenario", "Setting", "get_scenario", "run_scenario"]
