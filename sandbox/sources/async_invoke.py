"""Asynchronous invocation: Lambda's internal event queue in front of a function.

S3, SNS, EventBridge and ``Invoke(InvocationType='Event')`` hand the event to Lambda,
which puts it on an internal queue and answers at once; a separate process reads the
queue and runs the function (https://docs.aws.amazon.com/lambda/latest/dg/invocation-async.html).

What this model keeps from AWS
(https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-error-handling.html):

- On a function error (the handler raised, the runtime crashed, or the function timed
  out) Lambda runs the event up to two more times. The page puts it as a one-minute
  wait between the first two attempts and two minutes between the second and third;
  here the first retry starts 60 s after the first attempt fails and the second
  starts 120 s after the second attempt fails. Every retry carries the *whole* event
  again, including orders an earlier attempt already handled.
- ``MaximumRetryAttempts`` (0 to 2, default 2) caps those retries, and
  ``MaximumEventAgeInSeconds`` (60 to 21600, default 21600 = 6 h) caps how long an
  event may wait in the queue. An event that runs out of either is discarded.
- The queue is eventually consistent, so an event can be delivered twice even when
  nothing failed. ``duplicate_probability`` (off by default) makes the queue hold a
  second copy of an event, delivered ``duplicate_delay`` seconds after the first one;
  the copy is retried on its own if it fails.
- A discarded event goes to the on-failure destination, if one is configured (AWS sets
  none: without one, a discarded event is simply gone); here, where the setting is on by
  default so that a lesson can look inside, a moto SQS queue receives it as an
  invocation record: the original event as ``requestPayload`` plus ``requestContext``
  and ``responseContext``, shaped like the example on
  https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-retain-records.html.

- "For throttling errors (429) and system errors (500-series), Lambda returns the event to
  the queue and attempts to run the function again for up to 6 hours by default. The retry
  interval increases exponentially from 1 second after the first attempt to a maximum of 5
  minutes." ``throttled_for`` (off by default) throttles the function for a stretch of the
  run: every attempt that falls in it gets a 429 and goes back to the queue, tried again
  after 1, 2, 4 ... seconds (at most 5 min apart) until the throttling ends or the event
  reaches ``MaximumEventAgeInSeconds``. Throttles do not use up ``MaximumRetryAttempts``.
  One ``throttled`` record per stretch says how many tries were turned away, and from when.

What it leaves out: 5xx retries of the queue itself, and events the queue drops when the
function cannot keep up.

``AsyncInvokeCaller`` is an application in front of the queue: it calls
``Invoke(InvocationType='Event')`` with a real boto3 Lambda client, and the world's Invoke
endpoint (``sync_invoke.SyncInvokeEndpoint``) puts each request that reaches Lambda on this
queue and answers 202. Invoke takes no idempotency token
(https://docs.aws.amazon.com/lambda/latest/dg/API_Invoke.html), so when the 202 is lost and
botocore sends the Invoke again (it retries a read timeout in every retry mode,
https://docs.aws.amazon.com/sdkref/latest/guide/feature-retry-behavior.html), the queue holds
a second event for the same call: a "caller re-send", run under its own request id.
"""
from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import boto3
from botocore.exceptions import BotoCoreError, ClientError

from ..aws.adapter import queue_messages
from ..core.scheduler import current_task
from ..errors import BadInput
from ..events import Order, iso_millis, orders_in
from ..runtime.functions import function_error_payload
from ..settings import Config, param
from ..vocab import FAILED_OUTCOMES, Cause, Delivery, SourceKind
from .base import Source, run_sources
from .sync_invoke import THROTTLED_EVENT, CallerConfig, SyncInvokeEndpoint

if TYPE_CHECKING:
    from ..core.faults import CrashPlan
    from ..core.scheduler import Task
    from ..runtime.functions import Invocation, LambdaFunction
    from ..world import Sandbox

ASYNC_DOC = "https://docs.aws.amazon.com/lambda/latest/dg/invocation-async.html"
ERRORS_DOC = "https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-error-handling.html"
RECORDS_DOC = "https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-retain-records.html"

ON_FAILURE_QUEUE = "orders-on-failure"


@dataclass(frozen=True)
class AsyncConfig(Config):
    """The async queue's settings: AWS's own, with their ranges (invocation-async-error-handling.html)."""

    maximum_retry_attempts: int = param(
        2, "MaximumRetryAttempts: how many times Lambda retries an event after a function error (0 to 2)",
        ERRORS_DOC, 0, 2, aws="MaximumRetryAttempts")
    maximum_event_age: int = param(
        21600, "MaximumEventAgeInSeconds: how long an event may wait in the async queue before it is discarded "
        "(60 s to 6 h)", ERRORS_DOC, 60, 21600, aws="MaximumEventAgeInSeconds")
    first_retry_delay: float = param(
        60.0, "seconds between the first failed attempt and retry 1 (AWS waits one minute; not an AWS setting, "
        "change it to experiment)", ERRORS_DOC, 0, 21600)
    second_retry_delay: float = param(
        120.0, "seconds between the second failed attempt and retry 2 (AWS waits two minutes; not an AWS setting, "
        "change it to experiment)", ERRORS_DOC, 0, 21600)
    duplicate_probability: float = param(
        0.0, "chance that the eventually consistent queue delivers an event twice even though nothing failed",
        ERRORS_DOC, 0, 1)
    duplicate_delay: float = param(
        2.0, "seconds between an event's delivery and its spontaneous duplicate (0: both at once)", None, 0, 3600)
    duplicate_request_id: str = param(
        "new", "the aws_request_id a spontaneous duplicate carries: AWS does not document it, so try both; "
        "'new' is what defeats keying on the request id", ERRORS_DOC, choices=("new", "same"))
    on_failure_destination: bool = param(
        True, "send discarded events to an on-failure destination (an SQS queue) as an invocation record; on AWS "
        "there is none unless you configure one (on here, so that a lesson can look at it)",
        RECORDS_DOC)
    throttled_from: float = param(
        0.0, "virtual seconds into the run when the function starts being throttled (see throttled_for)",
        ERRORS_DOC, 0, 86400)
    throttled_for: float = param(
        0.0, "seconds the function stays throttled from throttled_from on (0: never): Lambda answers each attempt "
        "with 429, keeps the event and tries again 1 s later, then 2, 4 ... up to every 5 min, for up to "
        "MaximumEventAgeInSeconds", ERRORS_DOC, 0, 86400)

    @property
    def retry_delays(self) -> tuple[float, float]:
        return (float(self.first_retry_delay), float(self.second_retry_delay))

    def throttled_at(self, t: float) -> bool:
        """Is the function throttled at virtual time ``t``?"""
        return self.throttled_for > 0 and self.throttled_from <= t < self.throttled_from + self.throttled_for


#: Lambda's backoff after a 429 or 5xx: "from 1 second after the first attempt to a maximum of 5 minutes".
THROTTLE_FIRST_DELAY, THROTTLE_MAX_DELAY = 1.0, 300.0


@dataclass
class QueuedEvent:
    """One entry of the async queue. A spontaneous duplicate is a second entry (``copy_of``)."""

    id: str
    event: Any
    keys: list[str]
    enqueued_at: float  # virtual seconds since the world opened
    crash: "CrashPlan | None" = None  # applied to this entry's first attempt only
    copy_of: "QueuedEvent | None" = None
    invocations: list["Invocation"] = field(default_factory=list)
    state: str = "queued"  # queued, running, waiting (for a retry), succeeded, discarded
    condition: str | None = None  # why it was discarded: RetriesExhausted or EventAgeExceeded
    destination_message_id: str | None = None
    cause: str = Cause.FIRST_DELIVERY  # the cause of its first attempt
    repeats: "QueuedEvent | None" = None  # an earlier event this one repeats (a producer's or caller's re-send)

    @property
    def attempts(self) -> int:
        return len(self.invocations)

    @property
    def resolved(self) -> bool:
        return self.state in ("succeeded", Delivery.DISCARDED)


class AsyncInvokeSource(Source):
    """Invokes a function asynchronously through a modelled Lambda event queue (see ``AsyncConfig``).

    Discarded events go to the on-failure destination, an SQS queue named ``on_failure``,
    when ``config.on_failure_destination`` is on.
    """

    function: LambdaFunction  # it invokes one

    kind = SourceKind.ASYNC

    def __init__(self, world: "Sandbox", function: "LambdaFunction", config: AsyncConfig | None = None, *,
                 on_failure: str = ON_FAILURE_QUEUE, **settings: Any):
        super().__init__(world, function)
        self.config = config or AsyncConfig(**settings)
        self.on_failure = on_failure if self.config.on_failure_destination else None
        self.on_failure_url: str | None = None
        if self.on_failure:
            with world.gateway.unrecorded():
                self.on_failure_url = world.sqs.create_queue(QueueName=self.on_failure)["QueueUrl"]
        self.events: list[QueuedEvent] = []
        self._scheduled = 0  # events promised by invoke_at that have not entered the queue yet
        self._drivers: list = []

    # -- what a scenario calls ------------------------------------------------------------
    def invoke(self, event: Any, *, keys: list[str] | None = None, accept: bool = True,
               crash: "CrashPlan | None" = None, cause: str = Cause.FIRST_DELIVERY,
               repeats: QueuedEvent | None = None) -> QueuedEvent:
        """``Invoke(InvocationType='Event')``: queue the event and return at once (HTTP 202).

        Each order the event carries is accepted as owed its effects, unless ``accept``
        is False. ``crash`` applies to the first attempt only. ``cause`` and ``repeats`` say
        why the event exists when it is a copy of an earlier one (a producer sent it twice).
        """
        world = self.world
        # A service in front that names the keys and accepted the orders itself may hand over an event only the
        # function can read (an S3 notification names an object; reading it is the function's request).
        orders = list(orders_in(event)) if keys is None or accept else []
        if keys is None:
            keys = [str(o["orderId"]) for o in orders]
        if accept:
            for order in orders:
                world.accept(order, source=self.kind)
        entry = QueuedEvent(world.new_uuid(), event, list(keys), world.clock.elapsed(), crash, cause=cause,
                            repeats=repeats)
        self.events.append(entry)
        p = self.config.duplicate_probability
        duplicate = p > 0 and world.rng.random() < p
        self._drivers.append(world.scheduler.spawn(self._drive, entry, duplicate, name=f"async-queue {entry.id[:8]}"))
        return entry

    def invoke_at(self, at: float, make_event: Callable[[], Any], **kw: Any) -> None:
        """Queue ``make_event()`` at virtual time ``at``; until then the source is not idle."""
        self._scheduled += 1

        def fire() -> None:
            self._scheduled -= 1
            self.invoke(make_event(), **kw)

        self.world.scheduler.call_at(at, fire, name="async invoke")

    def idle(self) -> bool:
        """True once every queued event has succeeded or been discarded."""
        return self._scheduled == 0 and all(t.done for t in self._drivers)

    def finish(self) -> None:
        """At the end of a run: one "pending" record for each order still in the queue."""
        seen: set[str] = set()
        for entry in self.events:
            if entry.resolved:
                continue
            keys = [k for k in entry.keys if k not in seen]
            seen.update(keys)
            self.pending(keys, "", entry.invocations[-1].id if entry.invocations else None,
                         event=entry.id, state=entry.state, attempts=entry.attempts)

    def destination_records(self) -> list[dict]:
        """The invocation records sitting in the on-failure queue (looked at, not received)."""
        return read_queue(self.world, self.on_failure) if self.on_failure else []

    # -- the queue's own worker, one task per entry ---------------------------------------
    def _drive(self, entry: QueuedEvent, duplicate: bool) -> None:
        cause, prev = entry.cause, None
        if entry.repeats is not None and entry.repeats.invocations:
            prev = entry.repeats.invocations[0].id
        if entry.copy_of is not None:
            original = entry.copy_of.invocations[0]
            cause, prev = Cause.SPONTANEOUS_DUPLICATE, original.id
            self._record(Delivery.SPONTANEOUS_DUPLICATE, entry.keys, original.id,
                         {"event": entry.copy_of.id, "copy": entry.id, "delay": self.config.duplicate_delay})
        while True:
            if not self._through_throttling(entry, prev):
                return
            inv = self._attempt(entry, cause, prev, duplicate)
            duplicate = False
            if not self._retry_after(entry, inv):
                return
            cause, prev = Cause.retry(entry.attempts), inv.id

    def _attempt(self, entry: QueuedEvent, cause: str, prev: str | None, duplicate: bool) -> "Invocation":
        """Run the event once and wait for the outcome; a duplicate's copy is queued meanwhile."""
        sched = self.world.scheduler
        entry.state = "running"
        inv = self.function.start(entry.event, source=self.kind, cause=cause, prev=prev, keys=entry.keys,
                                  crash=entry.crash if not entry.invocations else None,
                                  request_id=self._request_id(entry))
        entry.invocations.append(inv)
        if duplicate:
            # The copy exists from the start, but is read from the queue a little later.
            copy = QueuedEvent(self.world.new_uuid(), entry.event, entry.keys, entry.enqueued_at, copy_of=entry)
            self.events.append(copy)
            self._drivers.append(sched.spawn(self._delayed, copy, name=f"async-queue {copy.id[:8]}"))
        sched.wait_for(inv.task, label=f"wait {inv.id}")
        return inv

    def _retry_after(self, entry: QueuedEvent, inv: "Invocation") -> bool:
        """After an attempt: wait for the next retry (True), or settle the entry for good (False)."""
        if inv.outcome not in FAILED_OUTCOMES:
            entry.state = "succeeded"
            return False
        retries_done = entry.attempts - 1
        if retries_done >= self.config.maximum_retry_attempts:
            self._discard(entry, "RetriesExhausted")
            return False
        delay = self.config.retry_delays[retries_done]
        sched, now = self.world.scheduler, self.world.clock.elapsed()
        expires = entry.enqueued_at + self.config.maximum_event_age
        entry.state = "waiting"
        if now + delay > expires + 1e-9:
            # Too old to be tried again: it leaves the queue when it reaches the maximum age.
            sched.sleep(max(0.0, expires - now), label="event ageing out")
            self._discard(entry, "EventAgeExceeded")
            return False
        self._record(Delivery.RETRY_SCHEDULED, entry.keys, inv.id,
                     {"event": entry.id, "attempt": entry.attempts + 1, "delay": delay, "at": round(now + delay, 6),
                      "after": inv.outcome})
        sched.sleep(delay, label=f"retry {retries_done + 1} in {delay:g} s")
        return True

    def _through_throttling(self, entry: QueuedEvent, prev: str | None) -> bool:
        """While the function is throttled, each try gets a 429 and the event waits in the queue (1 s, 2 s, 4 s
        ... at most 5 min apart). True once a try gets through; False if the event aged out meanwhile."""
        cfg, sched, clock = self.config, self.world.scheduler, self.world.clock
        tries, first, delay = 0, clock.elapsed(), THROTTLE_FIRST_DELAY
        expires = entry.enqueued_at + cfg.maximum_event_age
        while cfg.throttled_at(clock.elapsed()):
            tries += 1
            entry.state = "waiting"
            if clock.elapsed() + delay > expires + 1e-9:
                sched.sleep(max(0.0, expires - clock.elapsed()), label="event ageing out")
                self._throttled(entry, prev, tries, first)
                self._discard(entry, "EventAgeExceeded")
                return False
            sched.sleep(delay, label=f"throttled: try again in {delay:g} s")
            delay = min(delay * 2, THROTTLE_MAX_DELAY)
        if tries:
            self._throttled(entry, prev, tries, first)
        return True

    def _throttled(self, entry: QueuedEvent, prev: str | None, tries: int, first: float) -> None:
        self._record(Delivery.THROTTLED, entry.keys, prev,
                     {"event": entry.id, "tries": tries, "from": round(first, 6), "status": 429,
                      "error": "TooManyRequestsException",
                      "why": f"the function was throttled: {tries} {'try' if tries == 1 else 'tries'} answered 429 "
                             f"and went back to the queue, "
                             f"retried with a backoff growing from {THROTTLE_FIRST_DELAY:g} s to at most "
                             f"{THROTTLE_MAX_DELAY:g} s"})

    def _request_id(self, entry: QueuedEvent) -> str | None:
        """Lambda's retries of one event keep its request id (None: a new one).

        AWS Knowledge Center, "How do I prevent duplicate Lambda function invocations?":
        duplicates "that have the same request ID indicate that the Lambda service retried the
        function" (https://repost.aws/knowledge-center/lambda-function-duplicate-invocations).
        """
        if entry.invocations:
            return entry.invocations[0].request_id
        if entry.copy_of is not None and self.config.duplicate_request_id == "same":
            return entry.copy_of.invocations[0].request_id
        return None

    def _delayed(self, entry: QueuedEvent) -> None:
        self.world.scheduler.sleep(self.config.duplicate_delay, label="duplicate in the queue")
        self._drive(entry, False)

    # -- discarding ------------------------------------------------------------------------
    def _discard(self, entry: QueuedEvent, condition: str) -> None:
        entry.state, entry.condition = Delivery.DISCARDED, condition
        last = entry.invocations[-1] if entry.invocations else None
        record = self._invocation_record(entry, condition, last)
        attempts, cfg = entry.attempts, self.config
        failed = f"all {attempts} attempts failed" if attempts != 1 else "its only attempt failed"
        why = (f"{failed} (MaximumRetryAttempts {cfg.maximum_retry_attempts})" if condition == "RetriesExhausted" else
               f"the event reached MaximumEventAgeInSeconds {cfg.maximum_event_age:g} before it could be "
               f"{'retried' if last is not None else 'run (the function was throttled)'}")
        if self.on_failure_url:
            sent = self.world.sqs.send_message(QueueUrl=self.on_failure_url, MessageBody=json.dumps(record))
            entry.destination_message_id = sent["MessageId"]
            where = f"sent to the on-failure destination {self.on_failure}"
        else:
            where = "no on-failure destination, so the event is gone"
        self._record(Delivery.DISCARDED, entry.keys, last.id if last is not None else None,
                     {"event": entry.id, "reason": f"{condition}: {why}; {where}", "condition": condition,
                      "destination": self.on_failure, "messageId": entry.destination_message_id,
                      "approximateInvokeCount": attempts})

    def _invocation_record(self, entry: QueuedEvent, condition: str, last: "Invocation | None") -> dict:
        """The JSON Lambda sends to a destination (invocation-async-retain-records.html).

        An event that never ran (throttled until it aged out) has no function error to report;
        AWS's sample shows none, so its response context here holds only the 429 (an assumption).
        """
        config = self.function.config
        response = ({"statusCode": 200, "executedVersion": config.version, "functionError": "Unhandled"}
                    if last is not None else {"statusCode": 429, "executedVersion": config.version})
        return {
            "version": "1.0",
            "timestamp": iso_millis(self.world.clock.now()),
            "requestContext": {
                "requestId": last.request_id if last is not None else entry.id,
                "functionArn": f"{config.arn}:{config.version}",
                "condition": condition,
                "approximateInvokeCount": entry.attempts,
            },
            "requestPayload": entry.event,
            "responseContext": response,
            "responsePayload": function_error_payload(last) if last is not None else None,
        }

    def _record(self, what: str, keys: list[str], inv: str | None, detail: dict) -> None:
        self.world.record_delivery(self.kind, what, list(keys), inv, detail)


# -- an application that invokes asynchronously ------------------------------------------------
@dataclass
class EventCallOutcome:
    """What one caller's ``Invoke(InvocationType='Event')`` came to."""

    order: str
    attempts: int = 0  # Invoke requests botocore sent for this call
    status: int | None = None  # the StatusCode the caller finally got (202), if any
    error: str | None = None  # the exception the SDK finally raised, if any
    events: list[str] = field(default_factory=list)  # the events Lambda queued for it, one per attempt that took effect


class AsyncInvokeCaller(Source):
    """An application that invokes a function asynchronously with a real boto3 Lambda client.

    ``call(order, at=...)`` schedules a caller task at virtual time ``at``. It records that the
    order was accepted, builds an OrderPlaced event (the shape the other async scenarios use)
    and calls ``Invoke(InvocationType='Event')`` with ``config``'s retry and timeout settings.
    The world's Invoke endpoint puts every request that reaches Lambda on ``queue`` (the
    function's ``AsyncInvokeSource``, made here unless given) and answers 202; botocore does
    the rest, retries included. The client needs no help to wait out a read timeout: the
    endpoint itself waits ``read_timeout`` (virtually) before the read times out, as the
    synchronous endpoint does.
    """

    function: LambdaFunction  # it invokes one

    kind = SourceKind.ASYNC

    def __init__(self, world: "Sandbox", function: "LambdaFunction", config: CallerConfig | None = None, *,
                 queue: AsyncInvokeSource | None = None, name_of: Callable[[Order], str | None] | None = None,
                 **settings: Any):
        super().__init__(world, function)
        self.config = config or CallerConfig(**settings)
        #: The DurableExecutionName the caller gives an order's Invoke (a durable function's idempotency key), if any.
        self.name_of = name_of
        self.queue = queue if queue is not None else AsyncInvokeSource(world, function)
        self.endpoint = SyncInvokeEndpoint.of(world)
        self.endpoint.serve(function, queue=self.queue)
        self.outcomes: list[EventCallOutcome] = []
        self._callers: list[tuple["Task", str]] = []
        self._scheduled = 0

    def client(self) -> Any:
        """A boto3 Lambda client with this caller's botocore config (make it inside the world)."""
        return boto3.client("lambda", region_name=self.world.region, config=self.config.botocore_config())

    def call(self, order: Order, at: float = 0.0) -> None:
        """A caller invokes the function asynchronously for ``order`` at virtual time ``at``."""
        self.call_many([order], at)

    def call_many(self, orders: list[Order], at: float = 0.0) -> None:
        """One Invoke whose event carries every one of ``orders``, at virtual time ``at``."""
        self._scheduled += 1
        first = str(orders[0]["orderId"])

        def begin() -> None:
            self._scheduled -= 1
            task = self.world.scheduler.spawn(self._call, orders, name=f"caller-{first}")
            self._callers.append((task, first))

        self.world.scheduler.call_at(at, begin, name=f"invoke {first} (Event)")

    # -- lifecycle ------------------------------------------------------------------------
    def start(self) -> "AsyncInvokeCaller":
        if any(a.fault.kind == "throttle" and (a.fault.service, a.fault.op) == ("lambda", "Invoke")
               and a.fault.target in (None, self.function.config.name) for a in self.world.faults.aws):
            raise BadInput(THROTTLED_EVENT)
        self.queue.start()
        return self

    def idle(self) -> bool:
        """Every caller has its answer (or gave up), and every event it had queued is resolved."""
        return self._scheduled == 0 and all(t.done for t, _ in self._callers) and self.queue.idle()

    def stop(self) -> None:
        self.queue.stop()

    def finish(self) -> None:
        """An order whose caller was still trying, with nothing queued yet, is pending; then the queue's own."""
        queued = {id(a.caller) for a in self.endpoint.event_attempts if a.event is not None}
        self.pending([key for task, key in self._callers if not task.done and id(task) not in queued],
                     "the caller's SDK was still trying to invoke when the run stopped")
        self.queue.finish()

    # -- the caller -----------------------------------------------------------------------
    def _call(self, orders: list[Order]) -> EventCallOutcome:
        world, order = self.world, orders[0]
        for each in orders:
            world.accept(each, source=self.kind)
        outcome = EventCallOutcome(str(order["orderId"]))
        self.outcomes.append(outcome)
        before = len(self.endpoint.event_attempts)
        event = world.order_event(orders)
        try:
            name = self.name_of(order) if self.name_of is not None else None
            named = {"DurableExecutionName": name} if name else {}
            response = self.client().invoke(FunctionName=self.function.config.name, InvocationType="Event",
                                            Payload=json.dumps(event), **named)
        except (BotoCoreError, ClientError) as exc:
            outcome.error = type(exc).__name__
        else:
            outcome.status = response["StatusCode"]
        me = current_task()
        mine = [a for a in self.endpoint.event_attempts[before:] if a.caller is me]
        outcome.attempts = len(mine)
        outcome.events = [a.event.id for a in mine if a.event is not None]
        world.note(self._describe(outcome))
        return outcome

    @staticmethod
    def _describe(o: EventCallOutcome) -> str:
        tries = f"{o.attempts} attempt{'s' if o.attempts != 1 else ''}"
        queued = (f"Lambda queued {len(o.events)} event{'s' if len(o.events) != 1 else ''} for it"
                  if o.events else "Lambda queued nothing")
        if o.error and o.events:
            return (f"caller for {o.order}: the SDK gave up with {o.error} after {tries}. The caller thinks the "
                    f"Invoke failed, yet {queued}, and runs each.")
        if o.error:
            return f"caller for {o.order}: the SDK gave up with {o.error} after {tries}; {queued}."
        return f"caller for {o.order}: Invoke answered {o.status} after {tries}; {queued}."


def read_queue(world: "Sandbox", queue: str) -> list[dict]:
    """The JSON bodies of every message in ``queue``, looked at in moto without a request."""
    return [json.loads(m.body) for m in queue_messages(world.region, queue)]


# -- scenario helpers ------------------------------------------------------------------------
def run_until_idle(world: "Sandbox", source: AsyncInvokeSource, horizon: float | None = None) -> None:
    """Run until every event has succeeded or been discarded (or ``horizon``), then mark what is left pending."""
    run_sources(world, source, horizon=horizon)
