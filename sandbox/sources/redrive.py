"""Dead-letter queue redrive: SQS's StartMessageMoveTask, which moto 5.2.5 does not implement.

What AWS documents (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_StartMessageMoveTask.html):

- StartMessageMoveTask "Starts an asynchronous task to move messages from a specified source
  queue to a specified destination queue". The source must be a dead-letter queue of other
  SQS queues; without a DestinationArn, "the messages will be redriven back to their
  respective original source queues".
- "Only one active message movement task is supported per queue at any given time."
- MaxNumberOfMessagesPerSecond sets the rate; "The maximum value for messages per second is
  500". Without it the rate is system-optimized.
- The answer carries a TaskHandle; ListMessageMoveTasks reports a task's Status (RUNNING,
  COMPLETED, CANCELLING, CANCELLED, FAILED) and how many messages it moved, and
  CancelMessageMoveTask stops it.

And the developer guide (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-configure-dead-letter-queue-redrive.html):
"Dead-letter queues redrive messages in the order they are received, starting with the oldest
message", and "The redrive task resets the retention period. All redriven messages are
considered new messages with a new messageID and enqueueTime are assigned to redriven
messages." So a redriven message is a *new* message: a new MessageId, and a receive count that
starts again from zero. A handler that deduplicates on the SQS messageId treats it as new.
Until then, a standard queue's dead letter keeps its first enqueue time: "For standard queues, the
expiration of a message is always based on its original enqueue timestamp", so its retention clock
runs on in the dead-letter queue
(https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/setting-up-dead-letter-queue-retention.html).
moto does the same (``tests/test_sqs_more.py``); only a redrive resets it.

How it runs in the sandbox: ``MessageMoveTasks`` serves the three operations in the gateway
(the requests are recorded like any other), and each task is a scheduler task of its own that,
oldest first, receives up to 10 messages from the dead-letter queue, deletes them there and
sends their bodies and message attributes to the destination in one SendMessageBatch. Those requests are
SQS's own work, so they are not written to the history; each move is, as a "redriven"
delivery record naming both MessageIds. The destination queue remembers which of its
messages were redriven, so the mapping gives their invocation the cause "DLQ redrive". A
system-optimized task (no rate) moves them with no pause; with a rate it moves at most rate
messages at a time and waits their share of a second. Only standard queues are redriven here.

``Operator`` is the person who, alerted by the first dead letter, fixes the bug and starts the
redrive some time later, with their own boto3 client.
"""
from __future__ import annotations

import base64
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypedDict

import boto3

from ..aws.event_shapes import SqsMessage
from ..aws.gateway import Served, json_answer, json_error
from ..errors import BadInput
from ..vocab import Delivery, SourceKind
from .base import Source
from .sqs import order_id_of

if TYPE_CHECKING:
    from ..core.scheduler import Task
    from ..world import Sandbox
    from .sqs import SqsQueue

DOC_MOVE = "https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_StartMessageMoveTask.html"
DOC_REDRIVE = ("https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/"
               "sqs-configure-dead-letter-queue-redrive.html")
MAX_RATE = 500  # messages per second (API_StartMessageMoveTask.html)
MAX_BATCH = 10  # messages per ReceiveMessage / SendMessageBatch
RUNNING, COMPLETED, CANCELLED = "RUNNING", "COMPLETED", "CANCELLED"


class MoveTaskJson(TypedDict, total=False):
    """One entry of ListMessageMoveTasks' Results
    (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_ListMessageMoveTasksResultEntry.html)."""

    TaskHandle: str
    Status: str
    SourceArn: str | None  # the dead-letter queue's ARN (None: the queue has none)
    DestinationArn: str
    ApproximateNumberOfMessagesMoved: int
    StartedTimestamp: int
    MaxNumberOfMessagesPerSecond: int
    ApproximateNumberOfMessagesToMove: int


@dataclass
class MoveTask:
    """One message movement task, as ListMessageMoveTasks reports it."""

    handle: str
    source: "SqsQueue"  # the queue whose dead-letter queue is moved
    destination: "SqsQueue"
    rate: int | None
    started: float  # epoch seconds
    to_move: int
    status: str = RUNNING
    moved: int = 0
    task: "Task | None" = field(default=None, repr=False)

    def result(self) -> MoveTaskJson:
        out: MoveTaskJson = {"TaskHandle": self.handle, "Status": self.status, "SourceArn": self.source.dlq_arn,
               "DestinationArn": self.destination.arn, "ApproximateNumberOfMessagesMoved": self.moved,
               "StartedTimestamp": int(self.started * 1000)}
        if self.rate is not None:
            out["MaxNumberOfMessagesPerSecond"] = self.rate
        if self.status == RUNNING:
            out["ApproximateNumberOfMessagesToMove"] = self.to_move
        return out


class MessageMoveTasks:
    """StartMessageMoveTask, ListMessageMoveTasks and CancelMessageMoveTask for ``queues``' dead-letter queues."""

    def __init__(self, world: "Sandbox", *queues: "SqsQueue"):
        self.world = world
        # Looked up with a request's ARNs, which may be missing (None).
        self.by_dlq: dict[str | None, SqsQueue] = {q.dlq_arn: q for q in queues if q.dlq_arn}
        self.by_arn: dict[str | None, SqsQueue] = {q.arn: q for q in queues}
        if not self.by_dlq:
            raise BadInput("redrive needs a queue with a dead-letter queue (max_receive_count above 0)")
        if any(q.fifo is not None for q in queues):
            raise BadInput("the sandbox redrives standard queues only")
        self.tasks: list[MoveTask] = []
        gateway = world.gateway
        gateway.serve_locally("sqs", "StartMessageMoveTask", self._start)
        gateway.serve_locally("sqs", "ListMessageMoveTasks", self._list)
        gateway.serve_locally("sqs", "CancelMessageMoveTask", self._cancel)

    def active(self) -> list[MoveTask]:
        return [t for t in self.tasks if t.status == RUNNING]

    # -- the three operations ------------------------------------------------------------
    def _error(self, code: str, message: str) -> Served:
        return json_error(code, message, self.world.new_uuid())

    def _start(self, params: dict, forward: Callable[[], Served]) -> Served:
        source_arn = params.get("SourceArn")
        queue = self.by_dlq.get(source_arn)
        if queue is None:
            if source_arn in self.by_arn:
                return self._error("UnsupportedOperation", "Source queue must be configured as a Dead Letter Queue.")
            return self._error("ResourceNotFoundException", f"The resource {source_arn} does not exist.")
        destination = self.by_arn.get(params["DestinationArn"]) if params.get("DestinationArn") else queue
        if destination is None:
            return self._error("ResourceNotFoundException", f"The resource {params['DestinationArn']} "
                               "does not exist.")
        rate = params.get("MaxNumberOfMessagesPerSecond")
        if rate is not None and not (isinstance(rate, int) and 1 <= rate <= MAX_RATE):
            return self._error("InvalidParameterValue", f"MaxNumberOfMessagesPerSecond must be 1 to {MAX_RATE}, "
                               f"got {rate!r}.")
        if any(t.source is queue for t in self.active()):
            return self._error("UnsupportedOperation", "There is already a task running. Only one active task is "
                               "allowed for a source queue arn at a given time.")
        raw = json.dumps({"taskId": self.world.new_uuid(), "sourceArn": source_arn}).encode()
        task = MoveTask(base64.b64encode(raw).decode(), queue, destination, rate, self.world.clock.now(),
                        len(queue.dead_letters()))
        self.tasks.append(task)
        task.task = self.world.scheduler.spawn(self._move, task, name="sqs-message-move-task")
        return json_answer({"TaskHandle": task.handle}, self.world.new_uuid())

    def _list(self, params: dict, forward: Callable[[], Served]) -> Served:
        queue = self.by_dlq.get(params.get("SourceArn"))
        if queue is None:
            return self._error("ResourceNotFoundException", f"The resource {params.get('SourceArn')} does not exist.")
        most = min(max(int(params.get("MaxResults") or 1), 1), 10)  # default 1, upper limit 10
        mine = [t for t in self.tasks if t.source is queue][::-1][:most]
        return json_answer({"Results": [t.result() for t in mine]}, self.world.new_uuid())

    def _cancel(self, params: dict, forward: Callable[[], Served]) -> Served:
        task = next((t for t in self.tasks if t.handle == params.get("TaskHandle")), None)
        if task is None:
            return self._error("ResourceNotFoundException", "The specified TaskHandle does not exist.")
        if task.status != RUNNING:
            return self._error("UnsupportedOperation", f"The task is {task.status}, not RUNNING.")
        task.status = CANCELLED
        return json_answer({"ApproximateNumberOfMessagesMoved": task.moved}, self.world.new_uuid())

    # -- the task itself ------------------------------------------------------------------
    def _move(self, task: MoveTask) -> None:
        sqs, sched = self.world.sqs, self.world.scheduler
        with self.world.gateway.unrecorded():
            while task.status == RUNNING:
                most = min(MAX_BATCH, task.rate or MAX_BATCH)
                got = sqs.receive_message(QueueUrl=task.source.dlq_url, MaxNumberOfMessages=most, WaitTimeSeconds=0,
                                          VisibilityTimeout=60, MessageAttributeNames=["All"]).get("Messages", [])
                if not got:
                    break
                self._move_batch(task, got)
                if task.rate:
                    sched.sleep(len(got) / task.rate, label="sqs: redrive rate")
        if task.status == RUNNING:
            task.status = COMPLETED

    def _move_batch(self, task: MoveTask, messages: list[SqsMessage]) -> None:
        sqs = self.world.sqs
        # Deleted first, so that between the send and the bookkeeping after it this task makes no request
        # (a request is where another task may run): no poller can receive a new message unrecognised.
        sqs.delete_message_batch(QueueUrl=task.source.dlq_url, Entries=[
            {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(messages)])
        entries = [{"Id": str(i), "MessageBody": m["Body"],
                    **({"MessageAttributes": m["MessageAttributes"]} if m.get("MessageAttributes") else {})}
                   for i, m in enumerate(messages)]
        sent = {e["Id"]: e["MessageId"] for e in sqs.send_message_batch(QueueUrl=task.destination.url,
                                                                          Entries=entries).get("Successful", [])}
        for i, m in enumerate(messages):
            new_id = sent.get(str(i))
            if new_id is None:
                continue
            task.destination.redriven[new_id] = m["MessageId"]
            task.moved += 1
            task.to_move = max(task.to_move - 1, 0)
            order = order_id_of(m["Body"])
            self.world.record_delivery(SourceKind.SQS, Delivery.REDRIVEN, keys=[order] if order else [], inv=None,
                detail={"from": task.source.dlq_name, "to": task.destination.name, "messageId": new_id,
                        "deadLetterMessageId": m["MessageId"], "taskHandle": task.handle,
                        "why": "StartMessageMoveTask moved it from the dead-letter queue back to the queue as a new "
                               "message, with a new MessageId and a receive count starting again"},
            )


class Operator(Source):
    """Someone who redrives ``queue``'s dead-letter queue back to ``queue`` once the bug is fixed.

    They start ``delay`` seconds after the first message reaches the dead-letter queue (the
    alarm), or, with ``alarm=False``, ``delay`` seconds after the start.
    """

    kind = SourceKind.SQS

    def __init__(self, world: "Sandbox", moves: MessageMoveTasks, queue: "SqsQueue", delay: float, *,
                 alarm: bool = True, rate: int | None = None, name: str = "operator"):
        super().__init__(world, None)
        self.moves, self.queue, self.delay, self.alarm = moves, queue, float(delay), alarm
        self.rate, self.name = rate, name
        self.client = boto3.client("sqs", region_name=world.region)
        self.task: "Task | None" = None
        self.waiting = alarm  # for the first dead letter
        self.handle: str | None = None
        world.on_aws(self._on_aws)

    def _on_aws(self, service: str, op: str, params: dict, status: int) -> None:
        # moto moves messages to the dead-letter queue during a ReceiveMessage on the queue
        if self.waiting and service == "sqs" and op == "ReceiveMessage" and params.get("QueueUrl") == self.queue.url:
            self.world.scheduler.notify((self.kind, "dead letters", self.queue.url))

    def start(self) -> "Operator":
        if self.task is None:
            self.task = self.world.scheduler.spawn(self._run, name=self.name)
        return self

    def idle(self) -> bool:
        if self.waiting:
            # No alarm can come any more: nothing is left in the queue to be dead-lettered.
            return self.queue.depth() == 0 and not self.queue.dead_letters()
        return self.task is not None and self.task.done and not self.moves.active()

    def _run(self) -> None:
        sched = self.world.scheduler
        while self.waiting and not self.queue.dead_letters():
            sched.wait_signal((self.kind, "dead letters", self.queue.url), timeout=60.0,
                              label="operator: waiting for the DLQ alarm")
        self.waiting = False
        sched.sleep(self.delay, label="operator: fixing the bug")
        waiting = len(self.queue.dead_letters())
        self.world.note(f"{self.name}: the bug is fixed; redriving {waiting} message(s) from {self.queue.dlq_name} "
                        f"back to {self.queue.name} (StartMessageMoveTask)")
        extra = {"MaxNumberOfMessagesPerSecond": self.rate} if self.rate else {}
        self.handle = self.client.start_message_move_task(SourceArn=self.queue.dlq_arn, **extra)["TaskHandle"]
