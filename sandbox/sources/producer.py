"""Producers: tasks that send orders over time, each with its own boto3 client.

A producer's client is configured as a ``CallerConfig`` says; by default it is what a plain
``boto3.client(...)`` is: the ``standard`` retry mode of the pinned botocore (3 attempts
in all, 4 for DynamoDB and DynamoDB Streams, botocore's ``_SERVICE_MAX_ATTEMPTS``; a
``ReadTimeoutError`` is retried in every mode) and a 60 s read timeout
(https://docs.aws.amazon.com/sdkref/latest/guide/feature-retry-behavior.html,
https://botocore.amazonaws.com/v1/documentation/api/latest/reference/config.html).
So when a request takes effect but its response never arrives (the gateway's
``timeout-applied`` fault), botocore itself sends it again:

- ``Producer`` sends to an SQS queue. SQS gives every SendMessage a new MessageId, so it
  stores a second message for the same order
  (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-queue-message-identifiers.html).
- ``KinesisProducer`` writes to a Kinesis stream. Both PutRecord calls are committed: "the
  two records have identical data, they also have unique sequence numbers"
  (https://docs.aws.amazon.com/streams/latest/dev/kinesis-record-processor-duplicates.html).

The producer cannot tell; the sandbox sees both requests and records a "producer re-send".

The gateway raises the timeout at once, in virtual time; a real client would first have
waited its whole read timeout. The producer's client is given that wait (a hook on
botocore's ``needs-retry`` event that only sleeps, virtually, and decides nothing), so the
second copy arrives when it would on AWS.

An order scheduled a second time is a deliberate re-send (a retry from the producer's own job,
say): it is owed its effects once, and if SQS stores it as a new message (a standard queue
always does; a FIFO queue does after its 5-minute deduplication interval) the producer
records a "producer re-send". ``message_params`` adds parameters to every SendMessage (a FIFO
queue's MessageGroupId and MessageDeduplicationId).

The SQS producer also keeps the queue shallow: it sends only while fewer than ``max_depth``
messages sit in the queue, because moto's SQS gets slower with every message it holds.
"""
from __future__ import annotations

import json
import time
from abc import abstractmethod
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, TypedDict

import boto3
from botocore.exceptions import BotoCoreError, ClientError, ReadTimeoutError

from ..core.records import RecordJson
from ..errors import BadInput
from ..events import Order
from ..vocab import AWS_OK, Delivery, RecordType, SourceKind
from .base import Source
from .sqs import pending_each
from .sync_invoke import CallerConfig

if TYPE_CHECKING:
    from ..core.scheduler import Task
    from ..world import Sandbox
    from .sqs import SqsQueue
    from .stream import StreamSource

DOC_RETRIES = "https://docs.aws.amazon.com/sdkref/latest/guide/feature-retry-behavior.html"
DOC_CONFIG = "https://botocore.amazonaws.com/v1/documentation/api/latest/reference/config.html"


def wait_out_read_timeouts(client: Any) -> None:
    """Make ``client`` wait out its read timeout (virtually) before botocore retries a ``ReadTimeoutError``.

    The gateway raises the timeout at once; a real client would first have waited that long.
    The hook runs before botocore's own retry handler and returns None, so botocore still decides.
    """
    def wait(caught_exception: BaseException | None = None, **_: Any) -> None:
        if isinstance(caught_exception, ReadTimeoutError):
            time.sleep(client.meta.config.read_timeout)
        return None

    client.meta.events.register_first(f"needs-retry.{client.meta.service_model.service_id.hyphenize()}", wait)


class ListSent(TypedDict, total=False):
    """One list a ``ScheduledSender`` sent: its orders' keys, the ids the service gave (an EventBridge producer's
    ``eventIds``, an SNS publisher's ``messageIds``), and the error that stopped it (None: it went)."""

    keys: list[str]
    eventIds: list[str]
    messageIds: list[str]
    error: str | None


class ItemSent(TypedDict):
    """One item a ``ClientProducer`` sent: its key, the ids of the requests that reached the service (a retry's
    too), and how many attempts its SDK made (None: unknown, it gave up)."""

    key: str | None
    ids: list[str | None]
    attempts: int | None


class ItemGaveUp(TypedDict):
    """An item a ``ClientProducer``'s SDK gave up on, and why."""

    key: str | None
    error: str
    ids: list[str | None]


class ScheduledSender(Source):
    """Sends ``schedule`` (pairs of virtual send time and a list of orders), one request per list, with a
    boto3 client of ``service`` configured as ``client`` says; it waits out a read timeout before its SDK
    retries, as a real one would. Subclasses say how one list is sent (``_send_orders``).
    """

    #: What one send carries, for messages: "an event", "a message".
    carries = "a message"
    #: What happened to a list once sent: "sent", "published".
    verb = "sent"

    def __init__(self, world: "Sandbox", schedule: Iterable[tuple[float, list[Order]]], service: str, *,
                 client: CallerConfig | None = None, name: str = "producer"):
        super().__init__(world, None)
        self.name = name
        self.schedule = sorted(((float(at), list(orders)) for at, orders in schedule), key=lambda pair: pair[0])
        for _, orders in self.schedule:
            if not orders or not all(isinstance(o, dict) and "orderId" in o for o in orders):
                raise BadInput(f"{self.carries} carries one or more orders (dicts with orderId), got {orders!r}")
        self.client = boto3.client(service, region_name=world.region,
                                   config=(client or CallerConfig()).botocore_config())
        wait_out_read_timeouts(self.client)
        self.sent: list[ListSent] = []
        self.task: "Task | None" = None

    def start(self) -> "ScheduledSender":
        if self.task is None:
            self.task = self.world.scheduler.spawn(self._run, name=self.name)
        return self

    def idle(self) -> bool:
        return self.task is not None and self.task.done

    def finish(self) -> None:
        sent = {k for s in self.sent for k in s["keys"]}
        self.pending([str(o["orderId"]) for _, orders in self.schedule for o in orders
                      if str(o["orderId"]) not in sent], f"not yet {self.verb} when the run stopped")

    def _run(self) -> None:
        world = self.world
        noun = self.carries.split(" ", 1)[1]
        for at, orders in self.schedule:
            if at > world.clock.elapsed():
                world.scheduler.sleep(at - world.clock.elapsed(), label=f"{self.name}: next {noun}")
            self._send_orders(orders)

    @abstractmethod
    def _send_orders(self, orders: list[Order]) -> None:
        """Accept ``orders`` and send them as one request; note what reached the service in ``self.sent``."""


class ClientProducer(Source):
    """Sends ``schedule`` (pairs of virtual send time and item), one ``op`` request per item.

    Subclasses name the boto3 ``service`` and the ``op``, check their items, send one
    (``_request``) and say what a re-sent copy is (``_resend_detail``).
    """

    service = ""
    op = ""

    def __init__(self, sb: "Sandbox", schedule: Iterable[tuple[float, Any]], *, client: CallerConfig | None = None,
                 name: str = "producer"):
        super().__init__(sb, None)
        self.sb, self.name = sb, name
        self.schedule = sorted(((float(at), item) for at, item in schedule), key=lambda pair: pair[0])
        for _, item in self.schedule:
            self._check_item(item)
        self.client = boto3.client(self.service, region_name=sb.region,
                                   config=(client or CallerConfig()).botocore_config())
        wait_out_read_timeouts(self.client)
        self.sent: list[ItemSent] = []
        self.first_send: dict[str, tuple[float, list[str | None]]] = {}  # orderId -> (when, its ids) at first send
        self.failed: list[ItemGaveUp] = []
        self.position = 0
        self.task: "Task | None" = None

    def _check_item(self, item: Any) -> None:
        if not isinstance(item, dict) or "orderId" not in item:
            raise BadInput(f"a producer sends orders (dicts with orderId), got {item!r}")

    # -- lifecycle ---------------------------------------------------------------------
    def start(self) -> "ClientProducer":
        if self.task is None:
            self.task = self.sb.scheduler.spawn(self._run, name=self.name)
        return self

    @property
    def done(self) -> bool:
        return self.task is not None and self.task.done

    def idle(self) -> bool:
        return self.done

    def finish(self) -> None:
        """One "pending" record per order never sent."""
        pending_each(self, self.unsent_keys())

    def unsent_keys(self) -> list[str]:
        """orderIds the producer has not sent (yet)."""
        return [str(item["orderId"]) for _, item in self.schedule[self.position:]
                if isinstance(item, dict) and str(item["orderId"]) not in self.first_send]

    # -- the task ----------------------------------------------------------------------
    def _run(self) -> None:
        sched, clock = self.sb.scheduler, self.sb.clock
        while self.position < len(self.schedule):
            at, item = self.schedule[self.position]
            if at > clock.elapsed():
                sched.sleep(at - clock.elapsed(), label="producer: next order")
            self._ready()
            self._send(item)
            self.position += 1

    def _ready(self) -> None:
        """Wait until the next item may be sent (nothing to wait for, unless a subclass says so)."""

    def _group(self, item: Any) -> str | None:
        """The FIFO message group ``item`` is sent in (None: no order among items is owed)."""
        return None

    @abstractmethod
    def _request(self, item: Any) -> dict:
        """Send one item; returns the response (botocore retries inside)."""

    def _copies_stored(self, ids: list[str | None]) -> int:
        """How many copies the requests that reached the service stored (each one, unless a subclass knows better)."""
        return len(ids)

    def _sent_again(self, key: str, ids: list[str | None]) -> None:
        """A scheduled re-send of an order (only the SQS producer's schedules repeat orders)."""
        raise BadInput(f"{self.name} has {key} in its schedule twice; only an SQS producer re-sends on purpose")

    @abstractmethod
    def _resend_detail(self, key: str | None, reached: list[RecordJson]) -> dict:
        """What the history says about an item that reached the service more than once."""

    def _send(self, item: Any) -> None:
        sb = self.sb
        key = str(item["orderId"]) if isinstance(item, dict) else None
        again = key is not None and key in self.first_send
        if key is not None and not again:
            sb.accept(item, source=self.kind, group=self._group(item))
        mark = len(sb.history)
        try:
            response = self._request(item)
            attempts = response["ResponseMetadata"].get("RetryAttempts", 0) + 1
            error = None
        except (BotoCoreError, ClientError) as exc:
            attempts, error = None, f"{type(exc).__name__}: {exc}"
        # Every request that reached the service, retries included, is in the history.
        reached = [r for r in sb.history.since(mark)
                   if r["type"] == RecordType.AWS and r.get("actor") == self.name
                   and r["op"] == self.op and r["result"] == AWS_OK]
        ids = [r["key"] for r in reached]
        self.sent.append({"key": key, "ids": ids, "attempts": attempts})
        if error is not None:
            self.failed.append({"key": key, "error": error, "ids": ids})
            tries = len(reached) or 1
            plural = "s" if tries != 1 else ""
            sb.note(f"{self.name} gave up sending {key or 'a message'} after {tries} attempt{plural} of its SDK: "
                    f"{error}")
            # ... and as a record the timeline can draw (it never reads a note's words)
            sb.record_delivery(self.kind, Delivery.PRODUCER_GAVE_UP, keys=[key] if key else [], inv=None,
                               detail={"attempts": tries, "error": error})
        if again and key is not None:  # (again says key is not None)
            self._sent_again(key, ids)
        elif key is not None:
            self.first_send[key] = (sb.clock.elapsed(), ids)
        if self._copies_stored(ids) > 1:
            sb.record_delivery(self.kind, Delivery.PRODUCER_RESEND, keys=[key] if key else [], inv=None,
                               detail={**self._resend_detail(key, reached), "attempts": attempts})


class Producer(ClientProducer):
    """Sends ``schedule`` to an SQS ``queue``, one SendMessage each.

    An item is an order (a dict with ``orderId``: accepted as owed its effects, then sent
    as JSON) or a string (sent as the raw body of a message that is not an order, such as a
    poison message).
    """

    kind = SourceKind.SQS
    service = "sqs"
    op = "SendMessage"

    def __init__(self, sb: "Sandbox", queue: "SqsQueue", schedule: Iterable[tuple[float, Any]], *,
                 max_depth: int = 20, client: CallerConfig | None = None, name: str = "producer",
                 depth_check_interval: float = 0.5, message_params: Callable[[Any], dict] | None = None):
        if max_depth < 1:
            raise BadInput(f"max_depth must be at least 1, got {max_depth}")
        super().__init__(sb, schedule, client=client, name=name)
        self.queue = queue
        self.message_params = message_params
        self.max_depth = max_depth
        self.depth_check_interval = depth_check_interval

    def _check_item(self, item: Any) -> None:
        if not isinstance(item, (dict, str)) or (isinstance(item, dict) and "orderId" not in item):
            raise BadInput(f"a producer sends orders (dicts with orderId) or raw string bodies, got {item!r}")

    def _ready(self) -> None:
        while self.queue.depth() >= self.max_depth:
            self.sb.scheduler.sleep(self.depth_check_interval, label="producer: queue full")

    def _group(self, item: Any) -> str | None:
        if self.queue.fifo is None or self.message_params is None:
            return None
        return self.message_params(item).get("MessageGroupId")

    def _request(self, item: Any) -> dict:
        body = json.dumps(item, sort_keys=True) if isinstance(item, dict) else item
        extra = self.message_params(item) if self.message_params is not None else {}
        return self.client.send_message(QueueUrl=self.queue.url, MessageBody=body, **extra)

    def _resend_detail(self, key: str | None, reached: list[RecordJson]) -> dict:
        return {"messageIds": [r["key"] for r in reached],
                "why": "SendMessage took effect but its response timed out (ReadTimeoutError), so botocore's retry "
                       "sent the message again; SQS gave the copy a new MessageId"}

    def _copies_stored(self, ids: list[str | None]) -> int:
        # A FIFO queue answers a retry it deduplicated with the first message's MessageId.
        return len(set(ids))

    def _sent_again(self, key: str, ids: list[str | None]) -> None:
        """A scheduled re-send of an order: a "producer re-send" if SQS stored it as a new message."""
        at, first_ids = self.first_send[key]
        new = [i for i in dict.fromkeys(ids) if i not in first_ids]
        if not new:
            return  # a FIFO queue deduplicated it (and recorded that)
        after = self.sb.clock.elapsed() - at
        fifo = ("outside the FIFO queue's 5-minute deduplication interval, so " if self.queue.fifo is not None
                else "")
        self.sb.record_delivery(self.kind, Delivery.PRODUCER_RESEND, keys=[key], inv=None,
            detail={"messageIds": first_ids[-1:] + new, "secondsAfterFirst": round(after, 3),
                    "why": f"the producer's own job sent the order again {after:g} s after its first SendMessage; "
                           f"{fifo}SQS stored it as a new message with a new MessageId"},
        )


class KinesisProducer(ClientProducer):
    """Writes ``schedule`` (orders) to ``stream``'s Kinesis stream, one PutRecord each, keyed by orderId."""

    kind = SourceKind.STREAM
    service = "kinesis"
    op = "PutRecord"

    def __init__(self, sb: "Sandbox", stream: "StreamSource", schedule: Iterable[tuple[float, Any]], *,
                 client: CallerConfig | None = None, name: str = "producer"):
        super().__init__(sb, schedule, client=client, name=name)
        self.stream = stream

    def _request(self, item: Any) -> dict:
        return self.client.put_record(StreamName=self.stream.mapping.stream_name, PartitionKey=str(item["orderId"]),
                                      Data=json.dumps(item, sort_keys=True).encode())

    def _resend_detail(self, key: str | None, reached: list[RecordJson]) -> dict:
        return {"sequenceNumbers": self.stream.sequence_numbers_of(key) if key else [],
                "why": "PutRecord took effect but its response timed out (ReadTimeoutError), so botocore's retry "
                       "wrote the record again; Kinesis gave the copy its own sequence number (and eventID)"}
