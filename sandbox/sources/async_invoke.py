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
- A discarded event goes to the on-failure destination, here a moto SQS queue, as an
  invocation record: the original event as ``requestPayload`` plus ``requestContext``
  and ``responseContext``, shaped like the example on
  https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-retain-records.html.

What it leaves out: throttling and 5xx retries of the queue itself, and events the
queue drops when the function cannot keep up.
"""
from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from ..errors import BadInput
from ..events import orders_in

if TYPE_CHECKING:
    from ..runtime import CrashPlan, Invocation, LambdaFunction
    from ..world import Sandbox

ASYNC_DOC = "https://docs.aws.amazon.com/lambda/latest/dg/invocation-async.html"
ERRORS_DOC = "https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-error-handling.html"
RECORDS_DOC = "https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-retain-records.html"

#: AWS's own settings and their allowed ranges (invocation-async-error-handling.html).
DEFAULT_MAXIMUM_RETRY_ATTEMPTS = 2
DEFAULT_MAXIMUM_EVENT_AGE = 21600  # 6 hours
RETRY_DELAYS = (60.0, 120.0)  # one minute, then two minutes
ON_FAILURE_QUEUE = "orders-on-failure"

FAILED = ("error", "timeout", "crashed")  # every one is a function error to the async queue


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

    @property
    def attempts(self) -> int:
        return len(self.invocations)

    @property
    def resolved(self) -> bool:
        return self.state in ("succeeded", "discarded")


class AsyncInvokeSource:
    """Invokes ``fn`` asynchronously through a modelled Lambda event queue.

    ``maximum_retry_attempts``  0 to 2 (AWS default 2)
    ``maximum_event_age``       60 to 21600 seconds (AWS default 21600, i.e. 6 h)
    ``retry_delays``            waits before retry 1 and retry 2, counted from the failure
                                (AWS: 60 s and 120 s; change them only to experiment)
    ``duplicate_probability``   chance that an event is queued twice (default 0: off)
    ``duplicate_delay``         seconds between an event's delivery and its duplicate's
                                (0 runs both at once, in two containers)
    ``on_failure``              name of the SQS queue receiving discarded events, or None
    """

    source = "async"

    def __init__(self, sb: "Sandbox", fn: "LambdaFunction", *,
                 maximum_retry_attempts: int = DEFAULT_MAXIMUM_RETRY_ATTEMPTS,
                 maximum_event_age: float = DEFAULT_MAXIMUM_EVENT_AGE,
                 retry_delays: tuple[float, float] = RETRY_DELAYS,
                 duplicate_probability: float = 0.0, duplicate_delay: float = 0.0,
                 on_failure: str | None = ON_FAILURE_QUEUE):
        if isinstance(maximum_retry_attempts, bool) or not isinstance(maximum_retry_attempts, int) \
                or not 0 <= maximum_retry_attempts <= 2:
            raise BadInput(f"MaximumRetryAttempts must be an integer from 0 to 2 (AWS's range), got {maximum_retry_attempts!r}")
        if not 60 <= maximum_event_age <= 21600:
            raise BadInput(f"MaximumEventAgeInSeconds must be from 60 to 21600 seconds (AWS's range), got {maximum_event_age!r}")
        delays = tuple(float(d) for d in retry_delays)
        if len(delays) != 2 or any(d < 0 for d in delays):
            raise BadInput(f"retry_delays needs two waits in seconds, neither negative, got {retry_delays!r}")
        if not 0.0 <= duplicate_probability <= 1.0:
            raise BadInput(f"duplicate_probability must be between 0 and 1, got {duplicate_probability!r}")
        if duplicate_delay < 0:
            raise BadInput(f"duplicate_delay cannot be negative, got {duplicate_delay!r}")
        self.sb, self.fn = sb, fn
        self.maximum_retry_attempts = maximum_retry_attempts
        self.maximum_event_age = float(maximum_event_age)
        self.retry_delays = delays
        self.duplicate_probability = float(duplicate_probability)
        self.duplicate_delay = float(duplicate_delay)
        self.on_failure = on_failure
        self.on_failure_url: str | None = None
        if on_failure:
            # Created now, on the world's thread: inside a task, an unrecorded request could
            # yield and hide other tasks' requests from the history.
            with sb.gateway.unrecorded():
                self.on_failure_url = sb.sqs.create_queue(QueueName=on_failure)["QueueUrl"]
        self.events: list[QueuedEvent] = []
        self._scheduled = 0  # events promised by invoke_at that have not entered the queue yet
        self._drivers: list = []
        self._listeners: list[Callable[[QueuedEvent, "Invocation"], None]] = []

    # -- what a scenario calls ------------------------------------------------------------
    def invoke(self, event: Any, *, keys: list[str] | None = None, accept: bool = True,
               crash: "CrashPlan | None" = None) -> QueuedEvent:
        """``Invoke(InvocationType='Event')``: queue the event and return at once (HTTP 202).

        Each order the event carries is accepted as owed its effects, unless ``accept``
        is False. ``crash`` applies to the first attempt only.
        """
        orders = list(orders_in(event))
        if keys is None:
            keys = [str(o["orderId"]) for o in orders]
        if accept:
            for order in orders:
                self.sb.accept(order, source=self.source)
        entry = QueuedEvent(self.sb.new_uuid(), event, list(keys), self.sb.clock.elapsed(), crash)
        self.events.append(entry)
        duplicate = self.duplicate_probability > 0 and self.sb.rng.random() < self.duplicate_probability
        self._drivers.append(self.sb.scheduler.spawn(self._drive, entry, duplicate, name=f"async-queue {entry.id[:8]}"))
        return entry

    def invoke_at(self, at: float, make_event: Callable[[], Any], **kw: Any) -> None:
        """Queue ``make_event()`` at virtual time ``at``; until then the source is not idle."""
        self._scheduled += 1

        def fire():
            self._scheduled -= 1
            self.invoke(make_event(), **kw)

        self.sb.scheduler.call_at(at, fire, name="async invoke")

    def on_attempt_end(self, listener: Callable[[QueuedEvent, "Invocation"], None]) -> None:
        """Call ``listener(entry, invocation)`` each time an attempt ends (before any retry is decided)."""
        self._listeners.append(listener)

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
            if keys:
                self._record("pending", keys, entry.invocations[-1].id if entry.invocations else None,
                             {"event": entry.id, "state": entry.state, "attempts": entry.attempts})

    def destination_records(self) -> list[dict]:
        """The invocation records sitting in the on-failure queue (read without recording)."""
        if not self.on_failure_url:
            return []
        out = []
        with self.sb.gateway.unrecorded():
            while True:
                got = self.sb.sqs.receive_message(QueueUrl=self.on_failure_url, MaxNumberOfMessages=10,
                                                  WaitTimeSeconds=0, VisibilityTimeout=0).get("Messages", [])
                new = [m for m in got if m["MessageId"] not in {o["_messageId"] for o in out}]
                if not new:
                    break
                out += [{**json.loads(m["Body"]), "_messageId": m["MessageId"]} for m in new]
        return [{k: v for k, v in r.items() if k != "_messageId"} for r in out]

    # -- the queue's own worker, one task per entry ---------------------------------------
    def _drive(self, entry: QueuedEvent, duplicate: bool) -> None:
        sched = self.sb.scheduler
        cause, prev = "first delivery", None
        if entry.copy_of is not None:
            original = entry.copy_of.invocations[0]
            cause, prev = "spontaneous duplicate", original.id
            self._record("spontaneous duplicate", entry.keys, original.id,
                         {"event": entry.copy_of.id, "copy": entry.id, "delay": self.duplicate_delay})
        while True:
            entry.state = "running"
            inv = self.fn.start(entry.event, source=self.source, cause=cause, prev=prev, keys=entry.keys,
                                crash=entry.crash if not entry.invocations else None)
            entry.invocations.append(inv)
            if duplicate:
                # The copy exists from the start, but is read from the queue a little later.
                duplicate = False
                copy = QueuedEvent(self.sb.new_uuid(), entry.event, entry.keys, entry.enqueued_at, copy_of=entry)
                self.events.append(copy)
                self._drivers.append(sched.spawn(self._delayed, copy, name=f"async-queue {copy.id[:8]}"))
            sched.wait_for(inv.task, label=f"wait {inv.id}")
            for listener in self._listeners:
                listener(entry, inv)
            if inv.outcome not in FAILED:
                entry.state = "succeeded"
                return
            retries_done = entry.attempts - 1
            if retries_done >= self.maximum_retry_attempts:
                self._discard(entry, "RetriesExhausted")
                return
            delay = self.retry_delays[retries_done]
            now = self.sb.clock.elapsed()
            expires = entry.enqueued_at + self.maximum_event_age
            if now + delay > expires + 1e-9:
                # Too old to be tried again: it leaves the queue when it reaches the maximum age.
                entry.state = "waiting"
                sched.sleep(max(0.0, expires - now), label="event ageing out")
                self._discard(entry, "EventAgeExceeded")
                return
            entry.state = "waiting"
            self._record("retry scheduled", entry.keys, inv.id,
                         {"event": entry.id, "attempt": entry.attempts + 1, "delay": delay, "at": round(now + delay, 6),
                          "after": inv.outcome})
            sched.sleep(delay, label=f"retry {retries_done + 1} in {delay:g} s")
            cause, prev = f"retry {retries_done + 1}", inv.id

    def _delayed(self, entry: QueuedEvent) -> None:
        self.sb.scheduler.sleep(self.duplicate_delay, label="duplicate in the queue")
        self._drive(entry, False)

    # -- discarding ------------------------------------------------------------------------
    def _discard(self, entry: QueuedEvent, condition: str) -> None:
        entry.state, entry.condition = "discarded", condition
        last = entry.invocations[-1]
        record = self._invocation_record(entry, condition, last)
        why = (f"all {entry.attempts} attempt{'s' if entry.attempts != 1 else ''} failed (MaximumRetryAttempts "
               f"{self.maximum_retry_attempts})" if condition == "RetriesExhausted" else
               f"the event reached MaximumEventAgeInSeconds {self.maximum_event_age:g} before it could be retried")
        if self.on_failure_url:
            sent = self.sb.sqs.send_message(QueueUrl=self.on_failure_url, MessageBody=json.dumps(record))
            entry.destination_message_id = sent["MessageId"]
            where = f"sent to the on-failure destination {self.on_failure}"
        else:
            where = "no on-failure destination, so the event is gone"
        self._record("discarded", entry.keys, last.id,
                     {"event": entry.id, "reason": f"{condition}: {why}; {where}", "condition": condition,
                      "destination": self.on_failure, "messageId": entry.destination_message_id,
                      "approximateInvokeCount": entry.attempts})

    def _invocation_record(self, entry: QueuedEvent, condition: str, last: "Invocation") -> dict:
        """The JSON Lambda sends to a destination (invocation-async-retain-records.html)."""
        stamp = dt.datetime.fromtimestamp(self.sb.clock.now(), dt.timezone.utc)
        error = last.error
        if last.outcome == "timeout":
            payload = {"errorMessage": f"RequestId: {last.request_id} Error: {error}", "errorType": "Sandbox.Timedout"}
        elif last.outcome == "crashed":
            payload = {"errorMessage": f"RequestId: {last.request_id} Error: Runtime exited before completing the "
                                       f"request ({error})", "errorType": "Runtime.ExitError"}
        else:
            payload = {"errorMessage": str(error) if error is not None else (last.error_text or ""),
                       "errorType": type(error).__name__ if error is not None else "Error"}
        return {
            "version": "1.0",
            "timestamp": stamp.strftime("%Y-%m-%dT%H:%M:%S.") + f"{stamp.microsecond // 1000:03d}Z",
            "requestContext": {
                "requestId": last.request_id,
                "functionArn": f"{self.fn.config.arn}:{self.fn.config.version}",
                "condition": condition,
                "approximateInvokeCount": entry.attempts,
            },
            "requestPayload": entry.event,
            "responseContext": {"statusCode": 200, "executedVersion": self.fn.config.version,
                                "functionError": "Unhandled"},
            "responsePayload": payload,
        }

    def _record(self, what: str, keys: list[str], inv: str | None, detail: dict) -> None:
        self.sb.record_delivery(source=self.source, what=what, keys=list(keys),
                               inv=inv, detail=detail)


# -- scenario helpers ------------------------------------------------------------------------
def scenario_settings(*, duplicate_probability: float = 0.0, duplicate_delay: float = 2.0) -> tuple:
    """The async queue's settings, as scenario ``Setting``s (AWS defaults cite their doc page)."""
    from ..scenarios.base import Setting  # scenario modules import this module while scenarios load

    return (
        Setting("maximum_retry_attempts", DEFAULT_MAXIMUM_RETRY_ATTEMPTS,
                "MaximumRetryAttempts: how many times Lambda retries an event after a function error (0 to 2)",
                ERRORS_DOC, 0, 2),
        Setting("maximum_event_age", DEFAULT_MAXIMUM_EVENT_AGE,
                "MaximumEventAgeInSeconds: how long an event may wait in the async queue before it is discarded "
                "(60 s to 6 h)", ERRORS_DOC, 60, 21600),
        Setting("first_retry_delay", RETRY_DELAYS[0],
                "seconds between the first failed attempt and retry 1 (AWS waits one minute; not an AWS setting, "
                "change it to experiment)", ERRORS_DOC, 0, 21600),
        Setting("second_retry_delay", RETRY_DELAYS[1],
                "seconds between the second failed attempt and retry 2 (AWS waits two minutes; not an AWS setting, "
                "change it to experiment)", ERRORS_DOC, 0, 21600),
        Setting("duplicate_probability", float(duplicate_probability),
                "chance that the eventually consistent queue delivers an event twice even though nothing failed",
                ERRORS_DOC, 0, 1),
        Setting("duplicate_delay", float(duplicate_delay),
                "seconds between an event's delivery and its spontaneous duplicate (0: both at once)", None, 0, 3600),
        Setting("on_failure_destination", True,
                "send discarded events to an on-failure destination (an SQS queue) as an invocation record",
                RECORDS_DOC),
    )


def from_settings(sb: "Sandbox", fn: "LambdaFunction", cfg: dict[str, Any]) -> AsyncInvokeSource:
    """An ``AsyncInvokeSource`` configured from resolved ``scenario_settings`` values."""
    return AsyncInvokeSource(
        sb, fn,
        maximum_retry_attempts=cfg["maximum_retry_attempts"],
        maximum_event_age=cfg["maximum_event_age"],
        retry_delays=(cfg["first_retry_delay"], cfg["second_retry_delay"]),
        duplicate_probability=cfg["duplicate_probability"],
        duplicate_delay=cfg["duplicate_delay"],
        on_failure=ON_FAILURE_QUEUE if cfg["on_failure_destination"] else None,
    )


def run_until_idle(sb: "Sandbox", source: AsyncInvokeSource, horizon: float | None = None) -> None:
    """Run until every event has succeeded or been discarded (or ``horizon``), then mark what is left pending."""
    sb.run(until=horizon, stop_when=source.idle)
    source.finish()
