"""timeout-after-effect: a timeout is a function error, even after some of the work was done.

Lambda stops a function at its timeout and counts that as a function error, so an async
event is retried whole (https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-error-handling.html,
https://docs.aws.amazon.com/lambda/latest/dg/configuration-timeout.html).
"""
from __future__ import annotations

from dataclasses import dataclass

from ..core.faults import Latency, ProviderFault
from ..events import make_orders
from ..runtime.functions import LambdaFunction
from ..settings import group, param
from ..sources.async_invoke import AsyncConfig, AsyncInvokeSource, run_until_idle
from ..vocab import Effect
from ..world import Sandbox
from .base import Scenario, ScenarioSettings

#: In the window variant, the slow provider answers this long before the deadline ...
WINDOW_SPARE = 0.005
#: ... and a DynamoDB request takes this long, so the save after it cannot finish in time.
DYNAMODB_LATENCY = 0.010


@dataclass(frozen=True)
class TimeoutAfterEffectSettings(ScenarioSettings):
    fault_in_window: bool = param(
        False,
        "move the fault into the remaining window: the provider answers the first order's email just before "
        "the deadline, and the function is stopped before it can save that it was sent. No claim survives "
        "this; only a downstream idempotency key would (a naive handler, which saves nothing, is instead cut "
        "off on the second order)", None)
    indefinite: bool = param(
        False,
        "a call cut off by the deadline still reaches the provider (the email is delivered, but the function "
        "never hears so): an indefinite outcome", None)
    async_queue: AsyncConfig = group(AsyncConfig)


class TimeoutAfterEffect(Scenario[TimeoutAfterEffectSettings]):
    name = "timeout-after-effect"
    kind = "duplicate source"
    source = "async invoke"
    headline = "the function times out after an email; the retry sends it again"
    summary = ("One event carries two orders. The first order's email goes out; the email provider then hangs on "
               "the second, and Lambda stops the function at its timeout. A timeout is a function error, so a minute "
               "later Lambda runs the whole event again and the first customer's email is sent a second time.")

    def drive(self, sb: Sandbox, fn: LambdaFunction, cfg: TimeoutAfterEffectSettings) -> None:
        source = AsyncInvokeSource(sb, fn, cfg.async_queue)
        first, second = make_orders(2, sb.seed)
        sb.faults.add(self.faults(first["orderId"], second["orderId"], cfg))
        source.invoke(sb.order_event([first, second]))
        run_until_idle(sb, source)

    @staticmethod
    def faults(first: str, second: str, cfg: TimeoutAfterEffectSettings) -> list[ProviderFault | Latency]:
        """What goes wrong on the first attempt; the provider recovers for the retries (``calls=1``)."""
        if cfg.fault_in_window:
            # The first email is answered with 5 ms to spare; whatever the handler sends next
            # (a save, or the next email) is cut off by the deadline, wherever its client came from.
            return [ProviderFault(Effect.EMAIL, first, answer_before_deadline=WINDOW_SPARE, calls=1),
                    ProviderFault(Effect.EMAIL, second, indefinite=cfg.indefinite, calls=1),
                    Latency("dynamodb", DYNAMODB_LATENCY)]
        # A hung provider never got the request (unless `indefinite`): nothing is sent for
        # the second order, so every strategy can stay correct here.
        return [ProviderFault(Effect.EMAIL, second, hang=True, indefinite=cfg.indefinite, calls=1)]
