"""The scenario catalogue. Names are a contract: the CLI and the notebooks use them.

Every module of this package that defines a ``Scenario`` subclass with a ``name`` is
picked up; ``ORDER`` fixes the order ``python -m sandbox scenarios`` lists them in.
"""
from __future__ import annotations

import difflib
import importlib
import inspect
import pkgutil
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


def _discover() -> dict[str, Scenario]:
    found: dict[str, Scenario] = {}
    for info in pkgutil.iter_modules([str(Path(__file__).parent)]):
        if info.name in _NOT_SCENARIOS:
            continue
        module = importlib.import_module(f"{__package__}.{info.name}")
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if issubclass(cls, Scenario) and cls is not Scenario and cls.name and cls.__module__ == module.__name__:
                found[cls.name] = cls()
    rank = {name: i for i, name in enumerate(ORDER)}
    return dict(sorted(found.items(), key=lambda kv: (rank.get(kv[0], len(ORDER)), kv[0])))


SCENARIOS: dict[str, Scenario] = _discover()


def get_scenario(name: str) -> Scenario:
    try:
        return SCENARIOS[name]
    except (KeyError, TypeError):
        close = difflib.get_close_matches(str(name), SCENARIOS, n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise BadInput(f"unknown scenario {name!r}; {hint}known scenarios: {', '.join(SCENARIOS)}") from None
