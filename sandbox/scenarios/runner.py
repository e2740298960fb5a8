"""One run of a scenario: a fresh world, the handler deployed, the scenario driven, the history judged."""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from ..analysis.checker import check
from ..core.scheduler import DEFAULT_WATCHDOG
from .base import RunResult, Scenario, deploy, open_world
from .catalog import get_scenario


def run_scenario(scenario: "str | Scenario", handler: Any = None, *, seed: int = 0,
                 settings: dict[str, Any] | None = None, policy: Any = None,
                 factory: Callable[[], Callable] | None = None, watchdog: float = DEFAULT_WATCHDOG,
                 isolation: str | None = None) -> RunResult:
    """Run one scenario against a handler in a fresh world and judge it (``isolation``: see ``Sandbox``)."""
    sc = get_scenario(scenario) if isinstance(scenario, str) else scenario
    cfg = sc.resolve(settings)
    started = time.perf_counter()
    with open_world(sc, cfg, seed, policy, watchdog, isolation) as sb:
        sc.drive(sb, deploy(sb, handler, factory, cfg, sc.environment(cfg)), cfg)
        history = sb.history
    return RunResult(sc.name, seed, cfg, history, check(history), time.perf_counter() - started)
