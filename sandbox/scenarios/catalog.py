"""The scenario catalogue. Names are a contract: the CLI and the notebooks use them.

Every module of this package but the machinery (``_NOT_SCENARIOS``) defines one ``Scenario`` subclass, whose
``name`` is the module's with dashes (``no_fault.py``: ``no-fault``); ``ORDER`` fixes the order ``python -m
sandbox scenarios`` lists them in.
"""
from __future__ import annotations

import difflib
import importlib
import inspect
import pkgutil
from collections.abc import Iterator, Mapping
from pathlib import Path

from ..errors import BadInput
from .base import Scenario

ORDER = (
    "no-fault",
    # duplicate sources, grouped by how the event reaches the function
    "sync-sdk-retry", "apigw-client-retry", "function-url-client-retry", "alb-client-retry",
    "stepfunctions-task-retry",
    "async-retry", "async-duplicate", "timeout-after-effect", "async-late-retry", "async-invoke-resend",
    "eventbridge-target-retry", "eventbridge-producer-resend", "eventbridge-duplicate-target",
    "sns-delivery-retry", "s3-notification-duplicate", "cfn-custom-resource-retry",
    "sqs-batch-failure", "sqs-visibility-timeout", "sqs-throttled-batch", "sqs-low-traffic-wait",
    "sqs-spontaneous-duplicate", "sqs-fifo-window",
    "sqs-dlq-redrive", "producer-resend",
    "stream-batch-retry", "stream-partial-batch", "kinesis-producer-resend",
    "ddb-stream-batch-retry", "ddb-stream-ttl-remove",
    "kafka-batch-retry", "kafka-partial-batch", "kafka-producer-resend", "kafka-topic-destination",
    "durable-step-retry", "durable-replay", "durable-esm-start",
    "concurrent-claims",
    # what a run_once has to survive
    "crash-mid-work", "ttl-lag", "lock-shorter-than-work", "own-write-retried",
    "snapstart-cloned-init", "managed-instances-concurrency",
)
#: Modules of the package that hold machinery, not scenarios.
_NOT_SCENARIOS = ("base", "catalog", "runner", "durable_common")


class Catalog(Mapping[str, Scenario]):
    """Every scenario by name, in ``ORDER``. The module of scenario ``a-b`` is ``a_b.py``; it is imported when its
    scenario is first asked for, so a run imports the one module it needs, not all of them (the CLI's start)."""

    def __init__(self) -> None:
        modules = {info.name.replace("_", "-"): info.name for info in pkgutil.iter_modules([str(Path(__file__).parent)])
                   if info.name not in _NOT_SCENARIOS}
        rank = {name: i for i, name in enumerate(ORDER)}
        self._modules = {name: modules[name] for name in sorted(modules, key=lambda n: (rank.get(n, len(ORDER)), n))}
        self._loaded: dict[str, Scenario] = {}

    def __getitem__(self, name: str) -> Scenario:
        found = self._loaded.get(name)
        if found is None:
            found = self._loaded[name] = _load(self._modules[name], name)
        return found

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def __len__(self) -> int:
        return len(self._modules)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in self._modules


def _load(module_name: str, name: str) -> Scenario:
    """The one scenario ``module_name`` defines, which must be named ``name``."""
    module = importlib.import_module(f"{__package__}.{module_name}")
    found = [cls for _, cls in inspect.getmembers(module, inspect.isclass)
             if issubclass(cls, Scenario) and cls is not Scenario and cls.name and cls.__module__ == module.__name__]
    if [cls.name for cls in found] != [name]:
        raise TypeError(f"{module.__name__} must define one scenario, named {name!r}; it defines "
                        f"{[cls.name for cls in found]}")
    return found[0]()


SCENARIOS: Mapping[str, Scenario] = Catalog()


def get_scenario(name: str) -> Scenario:
    try:
        return SCENARIOS[name]
    except (KeyError, TypeError):
        close = difflib.get_close_matches(str(name), SCENARIOS, n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise BadInput(f"unknown scenario {name!r}; {hint}known scenarios: {', '.join(SCENARIOS)}") from None
