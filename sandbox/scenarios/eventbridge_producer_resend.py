"""eventbridge-producer-resend: a PutEvents that worked is sent again, and EventBridge holds two events.

A producer's SDK retries a read timeout in every retry mode
(https://docs.aws.amazon.com/sdkref/latest/guide/feature-retry-behavior.html), and a read
timeout does not mean the request failed: EventBridge may already hold the event. PutEvents has
no idempotency token (https://docs.aws.amazon.com/eventbridge/latest/APIReference/API_PutEvents.html),
and each event's ``id`` is "A Version 4 UUID that's generated for every event"
(https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-events-structure.html): the retry
creates a second event, with the same detail and a new ``id``, and the rule sends it to the
function like any other. A handler that keys on the event ``id`` treats it as new; a key built
from the order id catches it.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..core.faults import AwsFault
from ..runtime.functions import LambdaFunction
from ..settings import group, param
from ..sources.base import run_sources
from ..sources.eventbridge import SERVICE, EventBridgeConfig, EventBridgeSource, EventProducer
from ..sources.sync_invoke import CallerConfig
from ..world import Sandbox
from .base import Scenario, ScenarioSettings
from .producer_resend import resent_orders


@dataclass(frozen=True)
class EventBridgeProducerResendSettings(ScenarioSettings):
    orders: int = param(3, "how many orders the producer sends, one event each", None, 1, 50)
    interval: float = param(1.0, "virtual seconds between two events the producer sends", None, 0, 3600)
    resend_order: int = param(2, "which PutEvents takes effect but times out for the producer, so its SDK sends it "
                              "again (0: none)", None, 0, 50)
    bus: EventBridgeConfig = group(EventBridgeConfig)
    caller: CallerConfig = group(CallerConfig)


class EventBridgeProducerResend(Scenario[EventBridgeProducerResendSettings]):
    name = "eventbridge-producer-resend"
    kind = "duplicate source"
    source = "EventBridge"
    headline = "a producer's SDK re-sends a timed-out PutEvents: a second event with a new `id`"
    summary = ("A producer puts three OrderPlaced events on an EventBridge bus, one a second; a rule sends them to "
               "the function. The second PutEvents takes effect, but its response never reaches the producer: its "
               "SDK waits out the 60 s read timeout and sends it again, and EventBridge creates a second event with "
               "a new id. The function receives the order twice, under two different event ids.")

    def drive(self, sb: Sandbox, fn: LambdaFunction, cfg: EventBridgeProducerResendSettings) -> None:
        orders = resent_orders(sb, cfg.orders, cfg.resend_order)
        bus = EventBridgeSource(sb, fn, cfg.bus)
        if cfg.resend_order:
            # The request reaches EventBridge (the event exists), then the client gets a ReadTimeoutError.
            sb.faults.add(AwsFault("timeout-applied", SERVICE, "PutEvents", nth=cfg.resend_order))
        producer = EventProducer(sb, [(i * cfg.interval, [order]) for i, order in enumerate(orders)], bus=bus.bus,
                                 client=cfg.caller)
        run_sources(sb, producer, bus)
