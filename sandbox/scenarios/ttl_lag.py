"""ttl-lag: an expired lock is still in the table when the retry comes.

DynamoDB's TTL deletes expired items lazily, typically within 48 hours, and until then
they show up in reads and condition checks
(https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/howitworks-ttl.html).
A claim that relies on TTL to clear a dead invocation's lock is refused by it on every
async retry (https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-error-handling.html).
"""
from __future__ import annotations

import dataclasses

from ..events import make_orders
from ..sources.async_invoke import from_settings, run_until_idle, scenario_settings
from .base import Scenario

TTL_DOC = "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/howitworks-ttl.html"


class TtlLag(Scenario):
    name = "ttl-lag"
    kind = "run_once"
    summary = ("The first invocation claims the order, then the email provider hangs and Lambda stops the function "
               "at its timeout, so the claim is left behind with nothing sent. Its lock expires three seconds later, "
               "but DynamoDB's TTL deletes expired items only hours later. The retries a minute and three minutes "
               "later must take over the expired claim themselves rather than wait for TTL to remove it.")
    settings = scenario_settings()
    # Same world setting, longer default: here the sweeper lags as DynamoDB's often does.
    common = tuple(
        dataclasses.replace(s, default=6 * 3600.0, help="seconds between an item's expiresAt and its deletion by TTL "
                            "(DynamoDB deletes lazily, typically within 48 h; 6 h here)", doc=TTL_DOC)
        if s.name == "ttl_lag" else s
        for s in Scenario.common
    )

    def drive(self, sb, fn, cfg):
        source = from_settings(sb, fn, cfg)
        order, = make_orders(1, sb.seed)
        # The hung call never reaches the provider: no email, only a claim left holding the key.
        sb.services.fault("email", order["orderId"], hang=True)
        source.on_attempt_end(lambda entry, inv: sb.services.fault("email", order["orderId"]))
        source.invoke(sb.order_event([order]))
        run_until_idle(sb, source)
        # Keep the clock running until the first lock's TTL deletion, to show how late it comes.
        first_lock_expiry = fn.config.timeout + 1.0
        sb.run(until=max(sb.clock.elapsed(), first_lock_expiry + cfg["ttl_lag"]) + 1.0)
