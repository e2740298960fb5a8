"""async-retry: a function error makes Lambda run the whole async event again a minute later.

https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-error-handling.html
"""
from __future__ import annotations

from ..core.faults import ProviderFault
from ..events import make_orders
from ..settings import Setting
from ..sources.async_invoke import from_settings, run_until_idle, scenario_settings
from ..vocab import Effect
from .base import Scenario


class AsyncRetry(Scenario):
    name = "async-retry"
    kind = "duplicate source"
    source = "async invoke"
    headline = "Lambda retries a failed async event 1 and then 2 minutes later"
    summary = ("One EventBridge event carries two orders. The first order's email goes out, then the email "
               "provider fails on the second one, so the function returns an error. A minute later Lambda runs the "
               "whole event again, and a handler with no memory of the first attempt emails the first customer twice.")
    settings = (
        Setting("orders", 2, "how many orders the one event carries; the last one's email fails", None, 2, 50),
        Setting("provider_failures", 1, "how many calls for the last order the email provider refuses (nothing is "
                "sent); more than the retries left makes Lambda discard the event", None, 1, 10),
        *scenario_settings(),
    )

    def drive(self, sb, fn, cfg):
        source = from_settings(sb, fn, cfg)
        orders = make_orders(cfg["orders"], sb.seed)
        # The provider refuses without sending, so only orders before it were handled: the retry
        # repeats their effects, which is the duplicate this scenario is about.
        sb.faults.add(ProviderFault(Effect.EMAIL, orders[-1]["orderId"], fail=cfg["provider_failures"]))
        source.invoke(sb.order_event(orders))
        run_until_idle(sb, source)
