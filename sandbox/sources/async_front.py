"""What every AWS service that invokes a function asynchronously shares: it hands events to Lambda's queue.

S3 and SNS (like EventBridge, see ``eventbridge.py``) invoke a function asynchronously
(https://docs.aws.amazon.com/lambda/latest/dg/invocation-async.html): the service hands the event
to Lambda, Lambda puts it on its internal queue and answers 202, and from then on the event is
Lambda's (``AsyncInvokeSource``, reused as it is: its retries of a function error, its throttling
backoff, its own spontaneous duplicates). What the service itself does before that, and how
often it hands the same event over, is each service's own (``sns.py``, ``s3.py``).

Lambda accepts asynchronous requests from services even while the function is throttled: "For
throttling errors (429) and system errors (500-series), Lambda returns the event to the queue
and attempts to run the function again for up to 6 hours by default"
(https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-error-handling.html). So a
throttle fault injected on a service's hand-off is bad input: throttle the queue (its
``throttled_for`` setting) instead.
"""
from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..errors import BadInput
from ..vocab import Cause, Delivery
from .async_invoke import AsyncConfig, AsyncInvokeSource, QueuedEvent
from .base import Source

if TYPE_CHECKING:
    from ..core.faults import AwsFault
    from ..core.scheduler import Task
    from ..runtime.functions import LambdaFunction
    from ..world import Sandbox

DOC_ASYNC_ERRORS = "https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-error-handling.html"
#: What Lambda's service answers a failed hand-off with: a system error.
FAILED_HANDOFF = (500, "ServiceException")


def throttled_hand_off(service: str) -> str:
    """Why a throttle fault on ``service``'s hand-off to Lambda is refused."""
    return (f"Lambda accepts asynchronous requests from services even while the function is throttled, and its "
            f"async queue retries them (for up to 6 hours): throttle the queue with throttled_for, not {service}'s "
            f"hand-off ({DOC_ASYNC_ERRORS})")


class AsyncFront(Source):
    """An AWS service in front of Lambda's async queue (``queue``), whose invocations are the queue's.

    This source's own records are the service's: hand-offs that failed or that it made again, and
    events it dropped. Subclasses create the service's resources in ``_setup`` and hand events over
    with ``hand_off``.
    """

    #: The service, as the history's sentences name it ("SNS", "S3").
    service: str = ""
    #: Why an event still in the service's hands when the run stopped is pending.
    pending_reason: str = ""

    def __init__(self, world: "Sandbox", function: "LambdaFunction", async_config: AsyncConfig | None = None):
        super().__init__(world, function)
        self.queue = AsyncInvokeSource(world, function, async_config or AsyncConfig())
        self._first_of: dict[str, QueuedEvent] = {}  # orderId -> the first queue entry that carried it
        self._deliveries: list["Task"] = []
        self._in_flight: dict[str, list[str]] = {}  # event id -> its keys, until Lambda accepts it or it is dropped
        self._setup()

    @abstractmethod
    def _setup(self) -> None:
        """Create the service's resources (not recorded) and route its Lambda deliveries here."""

    # -- lifecycle --------------------------------------------------------------------------
    def start(self) -> "AsyncFront":
        if any(a.fault.kind == "throttle" and (a.fault.service, a.fault.op) == ("lambda", "Invoke")
               for a in self.world.faults.aws):
            raise BadInput(throttled_hand_off(self.service))
        self.queue.start()
        return self

    def idle(self) -> bool:
        return all(t.done for t in self._deliveries) and self.queue.idle()

    def stop(self) -> None:
        self.queue.stop()

    def finish(self) -> None:
        for event_id, keys in self._in_flight.items():
            self.pending(keys, self.pending_reason, event=event_id)
        self.queue.finish()

    # -- the service's side -------------------------------------------------------------------
    def deliver(self, work: Callable[..., None], *args: Any, event_id: str, keys: list[str]) -> None:
        """Run ``work(*args)`` on a task of its own: the service delivers the event ``event_id``."""
        self._in_flight[event_id] = list(keys)
        self._deliveries.append(self.world.scheduler.spawn(work, *args, name=f"{self.kind} {event_id[:8]}"))

    def delivered(self, event_id: str) -> None:
        """Lambda has the event (or the service dropped it): it is no longer the service's to deliver."""
        self._in_flight.pop(event_id, None)

    def lambda_fault(self) -> "AwsFault | None":
        """The fault the next hand-off to Lambda meets (a throttle is refused: see the module docstring)."""
        fault = self.world.faults.aws_fault("lambda", "Invoke", self.function.config.name, None)
        if fault is not None and fault.kind == "throttle":
            raise BadInput(throttled_hand_off(self.service))
        return fault

    def hand_off(self, event: Any, keys: list[str], cause: str | None = None,
                 repeats: QueuedEvent | None = None) -> QueuedEvent:
        """Lambda accepts the event into its async queue (202).

        Without a ``cause``, a first delivery, or a producer's re-send when an earlier event already
        carried these orders (the service saw two publishes or two uploads).
        """
        if cause is None:
            first = next((self._first_of[k] for k in keys if k in self._first_of), None)
            cause, repeats = (Cause.PRODUCER_RESEND, first) if first is not None else (Cause.FIRST_DELIVERY, None)
        entry = self.queue.invoke(event, keys=keys, accept=False, cause=cause, repeats=repeats)
        for k in keys:
            self._first_of.setdefault(k, entry)
        return entry

    def maybe_again(self, event: Any, event_id: str, keys: list[str], first: QueuedEvent, probability: float,
                    delay: float, why: str) -> None:
        """At-least-once delivery: with ``probability`` (seeded), the service hands the same event over again
        ``delay`` seconds later, with nothing failed anywhere."""
        world = self.world
        if not probability or world.rng.random() >= probability:
            return
        world.scheduler.sleep(delay, label=f"{self.service} delivers again")
        world.record_delivery(self.kind, Delivery.SPONTANEOUS_DUPLICATE, keys, None, {"event": event_id, "why": why})
        self.hand_off(event, keys, Cause.SPONTANEOUS_DUPLICATE, first)
