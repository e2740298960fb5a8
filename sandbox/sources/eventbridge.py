"""EventBridge: a producer's PutEvents, a rule that targets the function, and EventBridge's delivery retries.

What this model keeps from AWS:

- Every event gets its own ``id``, "A Version 4 UUID that's generated for every event"
  (https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-events-structure.html), and
  PutEvents takes no idempotency token
  (https://docs.aws.amazon.com/eventbridge/latest/APIReference/API_PutEvents.html). So when a
  producer's SDK sends a PutEvents again after a timeout that had taken effect (the gateway's
  ``timeout-applied`` fault: ``AwsFault("timeout-applied", SERVICE, "PutEvents")``; botocore
  names the service ``eventbridge``, the events client's service id), EventBridge holds a
  second event with the same detail and a new ``id``. The ``id`` tells EventBridge's own copies apart from nothing else.
- moto serves PutEvents, the bus and the rule (``PutRule``, ``PutTargets`` with the target's
  ``RetryPolicy``, created when the source is), and matches the rule's event pattern. It cannot
  deliver to a Lambda target, so the sandbox plays that part (``adapter.route_lambda_targets``).
- A rule's Lambda target is invoked asynchronously: EventBridge hands the event to Lambda's
  async queue (``AsyncInvokeSource``, reused as it is) and is done once Lambda has accepted it
  (https://docs.aws.amazon.com/lambda/latest/dg/invocation-async.html). Lambda accepts
  asynchronous requests from services even while the function is throttled: "For throttling
  errors (429) and system errors (500-series), Lambda returns the event to the queue and
  attempts to run the function again for up to 6 hours by default"
  (https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-error-handling.html). So
  throttling is the async queue's to retry (its ``throttled_for`` setting), and so is a
  function error (1 and 2 minutes later), never EventBridge's; a throttle fault injected on the
  hand-off is refused as bad input, with that reason.
- When the hand-off itself fails (Lambda's service answers the Invoke with a 5xx, injected as
  ``AwsFault("5xx", "lambda", "Invoke")``), "EventBridge retries sending the event for 24 hours
  and up to 185 times with an exponential back off and jitter"
  (https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-rule-retry-policy.html);
  ``RetryPolicy`` allows 0 to 185 retries and 60 to 86400 s
  (https://docs.aws.amazon.com/eventbridge/latest/APIReference/API_RetryPolicy.html). An
  event that runs out of either "is dropped". AWS gives no figures for the backoff; here each
  wait is between half and all of ``retry_base_delay`` doubled per retry, at most 10 min, so
  185 retries take about a day, as the default policy implies.
- EventBridge may, rarely, invoke a target more than once for one event: its troubleshooting
  page says "In some rare cases, the same event may be delivered more than once to a target"
  and tells the target to be idempotent
  (https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-troubleshooting.html). The
  ``duplicate_deliveries`` setting draws that: the event is handed to Lambda's queue twice.

What it leaves out: dead-letter queues and input transformers (the function gets the whole
event).
"""
from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from botocore.exceptions import BotoCoreError, ClientError

from ..aws import adapter
from ..errors import BadInput
from ..events import DETAIL_TYPE, EVENT_SOURCE, Order, eventbridge_time, orders_in
from ..settings import Config, param
from ..vocab import AWS_OK, Cause, Delivery, RecordType, SourceKind
from .async_front import FAILED_HANDOFF, throttled_hand_off
from .async_invoke import AsyncConfig, AsyncInvokeSource
from .base import Source
from .producer import ScheduledSender
from .sync_invoke import CallerConfig

if TYPE_CHECKING:
    from ..core.scheduler import Task
    from ..runtime.functions import LambdaFunction
    from ..world import Sandbox
    from .async_invoke import QueuedEvent

DOC_RETRY = "https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-rule-retry-policy.html"
DOC_RETRY_POLICY = "https://docs.aws.amazon.com/eventbridge/latest/APIReference/API_RetryPolicy.html"
BUS, RULE = "orders", "order-placed"
#: The service name requests to EventBridge carry in the gateway and in AwsFault (botocore's, not "events").
SERVICE = "eventbridge"
#: The longest wait between two of EventBridge's retries here (AWS documents none).
MAX_RETRY_DELAY = 600.0
DOC_DUPLICATE = "https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-troubleshooting.html"
_THROTTLED_HAND_OFF = throttled_hand_off("EventBridge")


@dataclass(frozen=True)
class EventBridgeConfig(Config):
    """The rule's target retry policy, as ``PutTargets`` sets it (API_RetryPolicy.html)."""

    target_retry_attempts: int = param(
        185, "MaximumRetryAttempts of the target's retry policy: how often EventBridge retries an event Lambda "
        "could not hand over (0 to 185)", DOC_RETRY_POLICY, 0, 185, aws="MaximumRetryAttempts")
    target_event_age: int = param(
        86400, "MaximumEventAgeInSeconds of the target's retry policy: how long EventBridge keeps retrying "
        "(60 s to 24 h)", DOC_RETRY_POLICY, 60, 86400, aws="MaximumEventAgeInSeconds")
    retry_base_delay: float = param(
        1.0, "seconds around which EventBridge's first retry comes; each retry waits up to twice as long, with "
        "jitter, at most 10 min (AWS documents back off and jitter, not these figures)", DOC_RETRY, 0.01, 600)
    duplicate_deliveries: float = param(
        0.0, "probability (seeded) that EventBridge invokes the target twice for one event, as it may in rare "
        "cases", DOC_DUPLICATE, 0, 1)
    duplicate_delivery_delay: float = param(
        0.5, "seconds after the first hand-off that the second one comes (AWS gives no figure)", DOC_DUPLICATE,
        0, 3600)

    def retry_policy(self) -> dict[str, int]:
        return {"MaximumRetryAttempts": self.target_retry_attempts,
                "MaximumEventAgeInSeconds": self.target_event_age}


def lambda_event(message: dict) -> dict:
    """The event as a Lambda target receives it (eb-events-structure.html), from moto's copy of it.

    moto keeps ``time`` as epoch seconds and adds ``ingestion-time``; a target sees an ISO time and no such field.
    """
    t = message.get("time")
    return {"version": message.get("version", "0"), "id": message["id"], "detail-type": message["detail-type"],
            "source": message["source"], "account": message["account"],
            "time": eventbridge_time(float(t)) if isinstance(t, (int, float)) else t,
            "region": message["region"], "resources": list(message.get("resources") or []),
            "detail": message["detail"]}


class EventBridgeSource(Source):
    """An event bus with one rule whose target is the function, in front of Lambda's async queue.

    ``queue`` is the ``AsyncInvokeSource`` EventBridge hands events to; its invocations are
    the async queue's (their lanes sit under it). This source's own records are EventBridge's:
    hand-offs Lambda refused, and events it dropped.
    """

    function: LambdaFunction  # it invokes one

    kind = SourceKind.EVENTBRIDGE

    def __init__(self, world: "Sandbox", function: "LambdaFunction", config: EventBridgeConfig | None = None,
                 async_config: AsyncConfig | None = None, *, bus: str = BUS, rule: str = RULE):
        super().__init__(world, function)
        self.config = config or EventBridgeConfig()
        self.queue = AsyncInvokeSource(world, function, async_config or AsyncConfig())
        self.bus, self.rule = bus, rule
        self.events: list[dict] = []  # every event the rule matched, as the target gets it
        self.dropped: list[dict] = []
        self._first_of: dict[str, "QueuedEvent"] = {}  # orderId -> the first event that carried it
        self._deliveries: list["Task"] = []
        self._in_flight: dict[str, list[str]] = {}  # event id -> its keys, until Lambda accepts or it is dropped
        self._setup()

    def _setup(self) -> None:
        """The bus, the rule and its target, created through moto's EventBridge (not recorded)."""
        events = adapter.shared_client(self.world.region, "events")
        with self.world.gateway.unrecorded():
            events.create_event_bus(Name=self.bus)
            events.put_rule(Name=self.rule, EventBusName=self.bus,
                            EventPattern=json.dumps({"source": [EVENT_SOURCE], "detail-type": [DETAIL_TYPE]}))
            events.put_targets(Rule=self.rule, EventBusName=self.bus, Targets=[
                {"Id": self.function.config.name, "Arn": self.function.config.arn,
                 "RetryPolicy": self.config.retry_policy()}])
        adapter.route_lambda_targets(self._matched)

    # -- lifecycle --------------------------------------------------------------------------
    def start(self) -> "EventBridgeSource":
        if any(a.fault.kind == "throttle" and (a.fault.service, a.fault.op) == ("lambda", "Invoke")
               for a in self.world.faults.aws):
            raise BadInput(_THROTTLED_HAND_OFF)
        self.queue.start()
        return self

    def idle(self) -> bool:
        return all(t.done for t in self._deliveries) and self.queue.idle()

    def stop(self) -> None:
        self.queue.stop()

    def finish(self) -> None:
        for event_id, keys in self._in_flight.items():
            self.pending(keys, "EventBridge was still retrying its delivery when the run stopped", event=event_id)
        self.queue.finish()

    # -- EventBridge's side -----------------------------------------------------------------
    def _matched(self, rule: str, target: dict, message: dict) -> None:
        """moto matched an event to the rule (inside the PutEvents request): deliver it on its own task."""
        if rule != self.rule or target.get("Arn") != self.function.config.arn:
            return
        event = lambda_event(message)
        self.events.append(event)
        try:
            keys = [str(o["orderId"]) for o in orders_in(event)]
        except BadInput:  # not an order event: the function still gets it, and says what is wrong with it
            keys = []
        self._in_flight[event["id"]] = keys
        self._deliveries.append(self.world.scheduler.spawn(self._deliver, event, keys, target.get("RetryPolicy") or {},
                                                           name=f"eventbridge {event['id'][:8]}"))

    def _deliver(self, event: dict, keys: list[str], policy: dict) -> None:
        """Hand the event to Lambda (an async Invoke); retry a failed hand-off as the target's retry policy allows."""
        world, received = self.world, self.world.clock.elapsed()
        retries = int(policy.get("MaximumRetryAttempts", self.config.target_retry_attempts))
        max_age = float(policy.get("MaximumEventAgeInSeconds", self.config.target_event_age))
        failed = 0
        while True:
            fault = world.faults.aws_fault("lambda", "Invoke", self.function.config.name, None)
            if fault is not None and fault.kind == "throttle":
                raise BadInput(_THROTTLED_HAND_OFF)
            if fault is None:
                self._in_flight.pop(event["id"], None)
                self._hand_off(event, keys)
                if self.config.duplicate_deliveries and world.rng.random() < self.config.duplicate_deliveries:
                    world.scheduler.sleep(self.config.duplicate_delivery_delay, label="EventBridge delivers again")
                    self._hand_off(event, keys, duplicate=True)
                return
            failed += 1
            status, error = FAILED_HANDOFF
            delay = self._backoff(failed)
            too_old = world.clock.elapsed() + delay - received > max_age
            detail = {"event": event["id"], "attempt": failed, "status": status, "error": error}
            if failed > retries or too_old:
                limit = "MaximumRetryAttempts" if failed > retries else "MaximumEventAgeInSeconds"
                self._drop(event, keys, detail, limit)
                return
            world.record_delivery(self.kind, Delivery.DELIVERY_FAILED, keys, None,
                                  {**detail, "retry_in": round(delay, 6)})
            world.scheduler.sleep(delay, label=f"EventBridge retries in {delay:.1f} s")

    def _backoff(self, failed: int) -> float:
        """Exponential back off with jitter: between half and all of the doubled base delay, at most 10 min."""
        ceiling = min(MAX_RETRY_DELAY, self.config.retry_base_delay * 2 ** (failed - 1))
        return ceiling * (0.5 + 0.5 * self.world.rng.random())

    def _drop(self, event: dict, keys: list[str], detail: dict, limit: str) -> None:
        self._in_flight.pop(event["id"], None)
        self.dropped.append(event)
        self.world.record_delivery(self.kind, Delivery.DISCARDED, keys, None, {
            **detail, "limit": limit,
            "reason": f"EventBridge gave up after {detail['attempt']} failed hand-offs ({limit} of the target's "
                      f"retry policy); the event is dropped, no dead-letter queue"})

    def _hand_off(self, event: dict, keys: list[str], duplicate: bool = False) -> None:
        """Lambda accepts the event into its async queue (202). A second event for orders an earlier one
        carried is a producer's re-send, and the same event handed over again is EventBridge's own rare
        duplicate: either invocation is drawn as repeating the first."""
        first = next((self._first_of[k] for k in keys if k in self._first_of), None)
        if duplicate:
            self.world.record_delivery(self.kind, Delivery.SPONTANEOUS_DUPLICATE, keys, None, {
                "event": event["id"], "why": "EventBridge invoked the target a second time for the same event (rare, "
                                             f"documented: {DOC_DUPLICATE})"})
        cause = (Cause.SPONTANEOUS_DUPLICATE if duplicate else Cause.PRODUCER_RESEND if first is not None
                 else Cause.FIRST_DELIVERY)
        entry = self.queue.invoke(event, keys=keys, accept=False, cause=cause, repeats=first)
        for k in keys:
            self._first_of.setdefault(k, entry)


class EventProducer(ScheduledSender):
    """Sends ``schedule`` (pairs of virtual send time and a list of orders) to the bus, one PutEvents each.

    Its client is a boto3 ``events`` client configured as ``client`` says (a plain client by
    default: standard retry mode, 60 s read timeout); it waits out a read timeout before its SDK
    retries, as a real one would (see ``producer.py``).
    """

    kind = SourceKind.EVENTBRIDGE
    carries = "an event"

    def __init__(self, world: "Sandbox", schedule: Iterable[tuple[float, list[Order]]], *, bus: str = BUS,
                 client: CallerConfig | None = None, name: str = "producer"):
        super().__init__(world, schedule, "events", client=client, name=name)
        self.bus = bus  # self.sent: {"keys", "eventIds", "error"}

    def _send_orders(self, orders: list[Order]) -> None:
        world = self.world
        for order in orders:
            world.accept(order, source=self.kind)
        keys = [str(o["orderId"]) for o in orders]
        mark, error = len(world.history), None
        try:
            self.client.put_events(Entries=[{"Source": EVENT_SOURCE, "DetailType": DETAIL_TYPE,
                                             "EventBusName": self.bus,
                                             "Detail": json.dumps({"orders": orders}, sort_keys=True)}])
        except (BotoCoreError, ClientError) as exc:
            error = f"{type(exc).__name__}: {exc}"
            world.note(f"{self.name} gave up sending {', '.join(keys)} after its SDK's retries: {error}")
        # Every PutEvents that reached EventBridge, retries included, is in the history with its EventId.
        ids = [i for r in world.history.since(mark) if r["type"] == RecordType.AWS and r.get("actor") == self.name
               and r["op"] == "PutEvents" and r["result"] == AWS_OK for i in (r["key"] or "").split(",") if i]
        if error is not None:  # ... and as a record the timeline draws on the producer's row (it reads no note)
            tries = sum(1 for r in world.history.since(mark) if r["type"] == RecordType.AWS
                        and r.get("actor") == self.name and r["op"] == "PutEvents") or 1
            world.record_delivery(self.kind, Delivery.PRODUCER_GAVE_UP, keys=keys, inv=None,
                                  detail={"attempts": tries, "error": error})
        self.sent.append({"keys": keys, "eventIds": ids, "error": error})
        if len(ids) > 1:
            world.record_delivery(self.kind, Delivery.PRODUCER_RESEND, keys, None, {
                "eventIds": ids, "why": "PutEvents took effect but its response timed out (ReadTimeoutError), so "
                                        "botocore's retry sent it again; EventBridge gave the copy a new id"})
