"""async-duplicate: nothing fails, yet Lambda's async queue delivers the same event twice.

AWS: even when the function returns no error it can get the same event more than once,
because the async queue itself is eventually consistent
(https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-error-handling.html).
"""
from __future__ import annotations

import functools

from ..events import make_orders
from ..settings import Setting
from ..sources.async_invoke import from_settings, run_until_idle, scenario_settings
from .base import Scenario


class AsyncDuplicate(Scenario):
    name = "async-duplicate"
    kind = "duplicate source"
    source = "async invoke"
    headline = "the async queue delivers an event twice with no error at all"
    summary = ("Each order arrives as its own EventBridge event and nothing ever fails. Lambda's internal queue is "
               "only eventually consistent, so it hands the same event to the function a second time a few seconds "
               "later, and a handler that trusts one delivery per event sends every email twice.")
    settings = (
        Setting("orders", 2, "how many orders arrive, one event each", None, 1, 200),
        Setting("interval", 5.0, "virtual seconds between two events", None, 0, 3600),
        # For the demo every event is duplicated; on AWS this is rare.
        *scenario_settings(duplicate_probability=1.0, duplicate_delay=2.0),
    )

    def drive(self, sb, fn, cfg):
        source = from_settings(sb, fn, cfg)
        for i, order in enumerate(make_orders(cfg["orders"], sb.seed)):
            source.invoke_at(i * cfg["interval"], functools.partial(sb.order_event, [order]))
        run_until_idle(sb, source)
