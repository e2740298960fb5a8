"""eventbridge-duplicate-target: EventBridge invokes the same target twice for one event.

EventBridge's troubleshooting page says that "In some rare cases, the same event may be
delivered more than once to a target" and asks that targets be idempotent
(https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-troubleshooting.html). For a Lambda
target each delivery is an asynchronous Invoke that Lambda accepts into its queue
(https://docs.aws.amazon.com/lambda/latest/dg/invocation-async.html), so the function runs
twice with the same event ``id``: nothing failed, and no retry policy is involved. Here the rare
case is made certain (``duplicate_deliveries`` 1) so that a lesson can look at it.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..events import make_orders
from ..runtime.functions import LambdaFunction
from ..settings import group, param
from ..sources.async_invoke import AsyncConfig
from ..sources.base import run_sources
from ..sources.eventbridge import DOC_DUPLICATE, EventBridgeConfig, EventBridgeSource, EventProducer
from ..world import Sandbox
from .base import Scenario, ScenarioSettings


@dataclass(frozen=True)
class EventBridgeDuplicateTargetSettings(ScenarioSettings):
    orders: int = param(1, "how many orders the one event carries", None, 1, 50)
    bus: EventBridgeConfig = group(
        EventBridgeConfig, duplicate_deliveries=(1.0, "probability (seeded) that EventBridge invokes the target twice "
                                                      "for the event: 1 here, to show the rare case", DOC_DUPLICATE))
    async_queue: AsyncConfig = group(AsyncConfig)


class EventBridgeDuplicateTarget(Scenario[EventBridgeDuplicateTargetSettings]):
    name = "eventbridge-duplicate-target"
    kind = "duplicate source"
    source = "EventBridge"
    headline = "EventBridge invokes the target twice for one event (rare, documented)"
    summary = ("A producer puts one OrderPlaced event on an EventBridge bus, and the rule's target is the function. "
               "Nothing fails, but EventBridge hands the event to Lambda twice, half a second apart, as its "
               "troubleshooting page says it rarely may. Both copies carry the same event id; the function runs "
               "twice and emails the customer twice.")

    def drive(self, sb: Sandbox, fn: LambdaFunction, cfg: EventBridgeDuplicateTargetSettings) -> None:
        orders = make_orders(cfg.orders, sb.seed)
        bus = EventBridgeSource(sb, fn, cfg.bus, cfg.async_queue)
        run_sources(sb, EventProducer(sb, [(0.0, orders)], bus=bus.bus), bus)
