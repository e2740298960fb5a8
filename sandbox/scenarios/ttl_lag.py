"""ttl-lag: an expired lock is still in the table when the retry comes.

DynamoDB's TTL deletes expired items lazily, typically within two days, and until then
they show up in reads and condition checks
(https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/howitworks-ttl.html).
A claim that relies on TTL to clear a dead invocation's lock is refused by it on every
async retry (https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-error-handling.html).
"""
from __future__ import annotations

from dataclasses import dataclass

from ..aws.ttl import TTL_WORDS
from ..core.faults import ProviderFault
from ..events import make_orders
from ..runtime.functions import LambdaFunction
from ..settings import group
from ..sources.async_invoke import AsyncConfig, AsyncInvokeSource, run_until_idle
from ..vocab import Effect
from ..world import Sandbox
from .base import RunConfig, Scenario, ScenarioSettings


@dataclass(frozen=True)
class TtlLagSettings(ScenarioSettings):
    async_queue: AsyncConfig = group(AsyncConfig)
    # One lag, exactly, so the lesson's slider shows where the retries stop meeting the record; the other
    # scenarios draw each item's lag, up to two days (DOC_TTL_API).
    run: RunConfig = group(
        RunConfig,
        ttl_lag=(6 * 3600.0, f"seconds between an item's expiresAt and its deletion by TTL (DynamoDB "
                             f"deletes lazily, {TTL_WORDS}; here every item waits exactly this "
                             f"long)"),
        ttl_exact=(True, "delete every expired item exactly ttl_lag seconds after its expiresAt (this "
                         "scenario shows one lag; the others draw each item's)"))


class TtlLag(Scenario[TtlLagSettings]):
    name = "ttl-lag"
    kind = "run_once"
    source = "async invoke"
    headline = "a retry meets an expired lock that TTL has not deleted yet"
    summary = ("The first invocation claims the order, then the email provider hangs and Lambda stops the function "
               "at its timeout, so the claim is left behind with nothing sent. Its lock expires three seconds later, "
               "but DynamoDB's TTL deletes an expired item at a moment of its own, typically within two days (six "
               "hours here). The retries a minute and three minutes later must take over the expired claim "
               "themselves rather than wait for TTL to remove it.")

    def drive(self, sb: Sandbox, fn: LambdaFunction, cfg: TtlLagSettings) -> None:
        source = AsyncInvokeSource(sb, fn, cfg.async_queue)
        order, = make_orders(1, sb.seed)
        # The hung call never reaches the provider: no email, only a claim left holding the key.
        # The provider recovers for the retries.
        sb.faults.add(ProviderFault(Effect.EMAIL, order["orderId"], hang=True, calls=1))
        source.invoke(sb.order_event([order]))
        run_until_idle(sb, source)
        # Keep the clock running until the first lock's TTL deletion, to show how late it comes.
        first_lock_expiry = fn.config.timeout + 1.0
        sb.run(until=max(sb.clock.elapsed(), first_lock_expiry + cfg.run.ttl_lag) + 1.0)

