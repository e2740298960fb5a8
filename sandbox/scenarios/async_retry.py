"""async-retry: a function error makes Lambda run the whole async event again a minute later.

https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-error-handling.html
"""
from __future__ import annotations

from dataclasses import dataclass

from ..core.faults import ProviderFault
from ..events import make_orders
from ..runtime.functions import LambdaFunction
from ..settings import group, param
from ..sources.async_invoke import AsyncConfig, AsyncInvokeSource, run_until_idle
from ..vocab import Effect
from ..world import Sandbox
from .base import Scenario, ScenarioSettings


@dataclass(frozen=True)
class AsyncRetrySettings(ScenarioSettings):
    orders: int = param(2, "how many orders the one event carries; the last one's email fails", None, 2, 50)
    provider_failures: int = param(1, "how many calls for the last order the email provider refuses (nothing is "
                                   "sent); more than the retries left makes Lambda discard the event", None, 1, 10)
    async_queue: AsyncConfig = group(AsyncConfig)


class AsyncRetry(Scenario[AsyncRetrySettings]):
    name = "async-retry"
    kind = "duplicate source"
    source = "async invoke"
    headline = "Lambda retries a failed async event 1 and then 2 minutes later"
    summary = ("One EventBridge event carries two orders. The first order's email goes out, then the email "
               "provider fails on the second one, so the function returns an error. A minute later Lambda runs the "
               "whole event again, and a handler with no memory of the first attempt emails the first customer twice.")

    def drive(self, sb: Sandbox, fn: LambdaFunction, cfg: AsyncRetrySettings) -> None:
        source = AsyncInvokeSource(sb, fn, cfg.async_queue)
        orders = make_orders(cfg.orders, sb.seed)
        # The provider refuses without sending, so only orders before it were handled: the retry
        # repeats their effects, which is the duplicate this scenario is about.
        sb.faults.add(ProviderFault(Effect.EMAIL, orders[-1]["orderId"], fail=cfg.provider_failures))
        source.invoke(sb.order_event(orders))
        run_until_idle(sb, source)
