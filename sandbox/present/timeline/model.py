"""What the timeline shows, as plain data: invocations, markers, table windows, source events.

:func:`~sandbox.present.timeline.reading.read_history` fills a :class:`Model` from a History;
the drawing stages only read it. No matplotlib and no imports from the rest of the
package, so every other module can depend on this one.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from ...vocab import AWS_OK, Outcome, SourceKind


class WindowKind(StrEnum):
    """What an idempotency-table record was doing during a shaded window."""

    LOCK = "lock"  # IN_PROGRESS: claimed, not finished
    KEPT = "kept"  # COMPLETED: the result is kept until its TTL
    EXPIRED = "expired"  # past its expiresAt, yet still in the table (TTL lag)


#: The marker drawn where an invocation ended badly.
END_MARKER = {Outcome.ERROR: "end_error", Outcome.TIMEOUT: "end_timeout", Outcome.CRASHED: "end_crashed"}

#: A caller's read timed out: the ``result`` of its Invoke request.
READ_TIMEOUT = "ReadTimeout"
#: The HTTP status API Gateway answers when the function outlasts the integration timeout.
GATEWAY_TIMEOUT_STATUS = 504
#: A Step Functions Task ran past its TimeoutSeconds: the ``result`` of its attempt.
TASK_TIMEOUT = "States.Timeout"


@dataclass
class Invocation:
    inv: str
    seq: int
    start: float
    source: str
    cause: str | None
    container: str | None
    prev: str | None
    keys: list[str] = field(default_factory=list)
    end: float | None = None
    end_seq: int | None = None
    outcome: Outcome | None = None
    error: str | None = None
    running: bool = True
    status_code: Any = None  # HTTP statusCode in a synchronous caller's response payload
    failed_items: list[str] = field(default_factory=list)  # partial batch response
    shard: str | None = None
    cold_start: bool = False  # it started a new container (after a reset, or to scale out)
    restored: bool = False  # that container was restored from a SnapStart snapshot (it ran no init)
    environment: str | None = None  # Managed Instances: the environment the container is a process of


@dataclass
class Mark:
    inv: str | None  # None: sweeper lane
    t: float
    seq: int
    style: str
    dup_text: str | None = None  # "2nd email o-1" for duplicate effects
    label: str | None = None  # small text next to the marker (sweeps: the key)
    warning: str | None = None  # a stale write: "stale write: deleted inv-2's o-1 record"
    note: str | None = None  # a write its condition refused: "delete refused: inv-2 holds o-1"


PRODUCER = "producer:"  # the row of the producer that sends to a source: "producer:sqs"


def producer_of(source: str) -> str:
    """The row of the producer that sends to ``source``: its re-sends are the producer's doing, not the source's."""
    return f"{PRODUCER}{source}"


@dataclass
class Event:
    """Something a delivery source did besides invoking: drawn on its header row."""

    source: str
    t: float
    seq: int
    style: str
    label: str | None = None
    t0: float | None = None  # pending: the band starts here
    running: list[str] = field(default_factory=list)  # redelivery: invocations still working on these keys


@dataclass
class Attempt:
    """One request a caller sent: an SDK's Invoke (synchronous, or an Event invoke on the async queue's row), or an
    HTTP client's request through API Gateway."""

    actor: str
    attempt: int | None
    sent: float
    t: float  # when the caller stopped waiting (read timeout or response)
    seq: int
    result: str
    inv: str | None
    status: Any = None  # the function's own statusCode when its response reached the caller (an Event invoke: 202)
    function_error: str | None = None
    final: bool = False
    source: str = SourceKind.SYNC  # the lane group (a SourceKind) whose header row shows it (async: Event invokes)
    http_status: int | None = None  # an HTTP status API Gateway answered itself (504, 502)

    @property
    def style(self) -> str:
        """The marker that ends the attempt: read timeout, answer, gateway timeout or function error."""
        if self.result == READ_TIMEOUT:
            return "call_timeout"
        if self.result == TASK_TIMEOUT:
            return "task_timeout"
        if self.result == AWS_OK:
            return "call_answer"
        return "gateway_timeout" if self.http_status == GATEWAY_TIMEOUT_STATUS else "call_error"


@dataclass
class Window:
    kind: WindowKind
    inv: str
    key: str
    start: float
    expires: float | None  # relative seconds, None = no TTL
    end: float | None = None  # when it stopped (replaced/deleted/expired); None = open


@dataclass
class Hidden:
    """Messages an SQS poller received: invisible to other pollers until deleted or their visibility timeout ran out."""

    source: str
    start: float  # the receive
    end: float
    timeout: float | None  # the queue's visibility timeout (s), when the history says
    ran_out: bool  # the timeout ran out before the messages were deleted: they became visible again


@dataclass
class Batching:
    """An SQS poller held the messages it received while it waited out its batching window, then invoked."""

    inv: str
    start: float  # the first receive of the batch
    end: float  # the invocation's start
    #: Why the poller held them: "" its batching window, or a ``Delivery`` word: throttled (tries answered 429),
    #: quiet-queue wait (longer than its window, on a quiet queue).
    kind: str = ""
    #: What the label adds: the 429s ("3 tries") or the batching window the quiet wait outlasted ("window 3 s").
    note: str = ""


@dataclass
class Model:
    meta: dict[str, Any]
    invs: dict[str, Invocation]
    marks: list[Mark] = field(default_factory=list)
    windows: list[Window] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    attempts: list[Attempt] = field(default_factory=list)
    hidden: list[Hidden] = field(default_factory=list)
    batching: list[Batching] = field(default_factory=list)
    t_end: float = 0.0
    lock_statuses: set[str] = field(default_factory=set)  # what the claims wrote as status (IN_PROGRESS, CLAIMED)
