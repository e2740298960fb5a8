"""The scenario catalogue. Names are a contract: the CLI, the notebooks and the grader use them.

Every module in this package that defines a ``Scenario`` subclass with a ``name`` is
picked up; ``ORDER`` fixes the order ``python -m sandbox scenarios`` lists them in.
"""
from __future__ import annotations

import importlib
import inspect
import pkgutil

from ..errors import BadInput
from ..settings import Setting
from .base import RunResult, Scenario, run_scenario

ORDER = ("no-fault", "sync-sdk-retry", "async-retry", "async-duplicate", "sqs-batch-failure",
         "sqs-visibility-timeout", "stream-batch-retry", "timeout-after-effect", "producer-resend",
         "concurrent-claims", "crash-mid-work", "ttl-lag")


def _discover() -> dict[str, Scenario]:
    found: dict[str, Scenario] = {}
    for info in pkgutil.iter_modules(__path__):
        if info.name == "base":
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if issubclass(cls, Scenario) and cls is not Scenario and cls.name and cls.__module__ == module.__name__:
                found[cls.name] = cls()
    rank = {name: i for i, name in enumerate(ORDER)}
    return dict(sorted(found.items(), key=lambda kv: (rank.get(kv[0], len(ORDER)), kv[0])))


SCENARIOS: dict[str, Scenario] = _discover()


def get_scenario(name: str) -> Scenario:
    try:
        return SCENARIOS[name]
    except KeyError:
        raise BadInput(f"unknown scenario {name!r}; known scenarios: {', '.join(SCENARIOS)}") from None


__all__ = ["ORDER", "SCENARIOS", "RunResult", "Scenario", "Setting", "get_scenario", "run_scenario"]
