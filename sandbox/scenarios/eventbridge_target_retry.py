"""eventbridge-target-retry: EventBridge retries a failed hand-off; Lambda, not EventBridge, repeats the work.

Two layers of retries meet here. EventBridge retries an event it could not hand to Lambda (here:
Lambda's service answers the Invoke with a 500) "for 24 hours and up to 185 times with an
exponential back off and jitter"
(https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-rule-retry-policy.html). Those
retries never ran the function, so they repeat nothing. Once Lambda accepts the event, it is in
Lambda's async queue, which retries throttling itself (for up to 6 hours) and a function error a
minute later, with the whole event
(https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-error-handling.html). That retry
is the duplicate. (EventBridge's own rare second invocation of a target is
``eventbridge-duplicate-target``.)
"""
from __future__ import annotations

from dataclasses import dataclass

from ..core.faults import AwsFault, ProviderFault
from ..events import make_orders
from ..runtime.functions import LambdaFunction
from ..settings import group, param
from ..sources.async_invoke import AsyncConfig
from ..sources.base import run_sources
from ..sources.eventbridge import DOC_RETRY, EventBridgeConfig, EventBridgeSource, EventProducer
from ..vocab import Effect
from ..world import Sandbox
from .base import Scenario, ScenarioSettings


@dataclass(frozen=True)
class EventBridgeTargetRetrySettings(ScenarioSettings):
    orders: int = param(2, "how many orders the one event carries; the last one's email fails", None, 2, 50)
    failed_handoffs: int = param(
        2, "how many of EventBridge's hand-offs fail (Lambda's service answers 500) "
        "before one is accepted (more than the retry policy allows drops the event)", DOC_RETRY, 0, 200)
    provider_failures: int = param(1, "how many calls for the last order the email provider refuses (nothing is "
                                   "sent); 0: none, so nothing is repeated", None, 0, 10)
    bus: EventBridgeConfig = group(EventBridgeConfig)
    async_queue: AsyncConfig = group(AsyncConfig)


class EventBridgeTargetRetry(Scenario[EventBridgeTargetRetrySettings]):
    name = "eventbridge-target-retry"
    kind = "duplicate source"
    source = "EventBridge"
    headline = "EventBridge retries failed hand-offs; once accepted, Lambda's async retry repeats the work"
    summary = ("A producer puts one OrderPlaced event carrying two orders on an EventBridge bus. EventBridge's "
               "first two hand-offs to Lambda fail (Lambda's service answers 500), and EventBridge retries them "
               "with back off: those retries never ran the function. The third is accepted into Lambda's async "
               "queue (which would retry throttling itself, for hours); the email provider then fails on the "
               "second order, and it is Lambda's own retry, a minute later, that runs the whole event again and "
               "emails the first customer twice.")

    def drive(self, sb: Sandbox, fn: LambdaFunction, cfg: EventBridgeTargetRetrySettings) -> None:
        orders = make_orders(cfg.orders, sb.seed)
        bus = EventBridgeSource(sb, fn, cfg.bus, cfg.async_queue)
        if cfg.failed_handoffs:
            sb.faults.add(AwsFault("5xx", "lambda", "Invoke", times=cfg.failed_handoffs))
        if cfg.provider_failures:
            sb.faults.add(ProviderFault(Effect.EMAIL, orders[-1]["orderId"], fail=cfg.provider_failures))
        run_sources(sb, EventProducer(sb, [(0.0, orders)], bus=bus.bus), bus)
