"""One run of a scenario: a fresh world, the handler deployed, the scenario driven, the history judged."""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..core.scheduler import DEFAULT_WATCHDOG
from ..settings import SettingValue
from .base import RunResult, Scenario, open_world, run_in_world
from .catalog import get_scenario


def run_scenario(scenario: "str | Scenario", handler: Any = None, *, seed: int = 0,
                 settings: Mapping[str, SettingValue] | None = None, policy: Any = None,
                 factory: Callable[[], Callable] | None = None, watchdog: float = DEFAULT_WATCHDOG,
                 isolation: str | None = None) -> RunResult:
    """Run one scenario against a handler in a fresh world and judge it (``isolation``: see ``Sandbox``)."""
    sc = get_scenario(scenario) if isinstance(scenario, str) else scenario
    cfg = sc.resolve(settings)
    return run_in_world(open_world(sc, cfg, seed, policy, watchdog, isolation), sc, handler, cfg, factory)
