"""async-duplicate: nothing fails, yet Lambda's async queue delivers the same event twice.

AWS: even when the function returns no error it can get the same event more than once,
because the async queue itself is eventually consistent
(https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-error-handling.html).
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

from ..events import make_orders
from ..runtime.functions import LambdaFunction
from ..settings import group, param
from ..sources.async_invoke import AsyncConfig, AsyncInvokeSource, run_until_idle
from ..world import Sandbox
from .base import Scenario, ScenarioSettings


@dataclass(frozen=True)
class AsyncDuplicateSettings(ScenarioSettings):
    orders: int = param(2, "how many orders arrive, one event each", None, 1, 200)
    interval: float = param(5.0, "virtual seconds between two events", None, 0, 3600)
    # For the demo every event is duplicated; on AWS this is rare.
    async_queue: AsyncConfig = group(AsyncConfig, duplicate_probability=1.0, duplicate_delay=2.0)


class AsyncDuplicate(Scenario[AsyncDuplicateSettings]):
    name = "async-duplicate"
    kind = "duplicate source"
    source = "async invoke"
    headline = "the async queue delivers an event twice with no error at all"
    summary = ("Each order arrives as its own EventBridge event and nothing ever fails. Lambda's internal queue is "
               "only eventually consistent, so it hands the same event to the function a second time a few seconds "
               "later, and a handler that trusts one delivery per event sends every email twice.")

    def drive(self, sb: Sandbox, fn: LambdaFunction, cfg: AsyncDuplicateSettings) -> None:
        source = AsyncInvokeSource(sb, fn, cfg.async_queue)
        for i, order in enumerate(make_orders(cfg.orders, sb.seed)):
            source.invoke_at(i * cfg.interval, functools.partial(sb.order_event, [order]))
        run_until_idle(sb, source)
