"""The SQS event source mapping: pollers that read moto's real SQS queue and invoke a function.

What it models, from the AWS documentation:

- Lambda polls a standard queue, reads messages in batches and invokes the function
  synchronously with an event whose ``Records`` carry each message's ``messageId``,
  ``receiptHandle``, ``body`` and ``attributes`` (``ApproximateReceiveCount`` included).
  When the invocation succeeds, Lambda deletes the batch from the queue
  (https://docs.aws.amazon.com/lambda/latest/dg/with-sqs.html).
- BatchSize defaults to 10 (up to 10,000 on a standard queue, and above 10 only with a
  batching window of at least 1 s); MaximumBatchingWindowInSeconds defaults to 0 (0 to
  300); ``ReportBatchItemFailures`` in FunctionResponseTypes turns on partial batch
  responses (https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-configure.html,
  https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-parameters.html).
- When messages are available Lambda processes five batches at a time, so five pollers by
  default; MaximumConcurrency (2 to 1,000) caps the concurrent invocations
  (https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-scaling.html).
- On a function error or timeout *every* message of the batch becomes visible again once
  the queue's visibility timeout has run out, the ones already handled included. With
  ``ReportBatchItemFailures`` only the messages named in ``batchItemFailures`` stay; an
  empty or null list counts as full success, while an empty, null or unknown
  ``itemIdentifier`` makes the whole batch a failure
  (https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-errorhandling.html).
- The visibility timeout defaults to 30 s and counts from the moment a message is
  received (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-visibility-timeout.html).
  Lambda refuses a mapping whose function timeout exceeds it, and recommends at least six
  times the function timeout (services-sqs-configure.html), because throttling plus
  processing can still outlast it. Visibility counts from receipt, so a poller that has
  received messages and waits out its batching window spends their visibility too: the
  rule the sandbox checks (and notes in the history when a run breaks it) is six times the
  function timeout plus MaximumBatchingWindowInSeconds.
- A throttled invoke is not a function error. "If the invocation fails due to throttling,
  Lambda gradually backs off retries by reducing the amount of concurrency allocated to your
  Amazon SQS event source mapping. Lambda continues to retry the message until the message's
  timestamp exceeds your queue's visibility timeout, at which point Lambda drops the message";
  after a function error Lambda does not retry the invocation, and backs off the same way
  while the messages wait out their visibility timeout (services-sqs-errorhandling.html). The
  six-times advice is there for this: the extra time "allows Lambda to retry if your function
  is throttled while processing a previous batch" (services-sqs-configure.html). A dropped
  batch is not deleted, so it comes back once its visibility runs out, one receive spent (a
  low maxReceiveCount can then dead-letter it without a single run). ``throttled_for``
  throttles the function for a stretch from ``throttled_from``: a poller holding a batch
  then gets 429 and tries again 1 s later, then 2, 4 ... s (AWS gives no interval for SQS;
  these are the async queue's documented ones), until a try gets through or the next one
  would fall after the visibility timeout of the batch's first receive, when it drops the
  batch. One ``throttled`` record per batch says how many tries were refused, and how it ended.
  The sandbox keeps its pollers after a throttle or an error: AWS gives no figure for how far
  or how fast the mapping backs off, and even on a quiet queue it keeps at least 2 concurrent
  batches (services-sqs-scaling.html), so a second poller is there to receive what a
  throttled one still holds.
- "If you're using a batch window and your SQS queue contains very low traffic, Lambda might
  wait for up to 20 seconds before invoking your function. This is true even if you set a
  batch window lower than 20 seconds" (with-sqs.html). ``quiet_queue_wait`` is that wait, and
  the messages' visibility runs meanwhile: a poller with a batching window whose batch is not
  full when the window ends keeps gathering until ``quiet_queue_wait`` seconds after its first
  receive, then invokes (a ``quiet-queue wait`` record says so). It is a fixed figure, not a
  drawn one: AWS gives only the bound, no distribution, the bound is what a visibility timeout
  has to cover, and a fixed wait tells the same story for every seed. What counts as very low
  traffic is not documented; here, a batch that is still not full when its window ends.
- ``throttled_for`` and ``quiet_queue_wait`` are 0 (off) unless a scenario sets them, and only
  the scenarios that set them offer them (``OPT_IN_MAPPING_SETTINGS``).
- A queue's redrive policy moves a message to its dead-letter queue once it has been
  received maxReceiveCount times without being deleted
  (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-dead-letter-queues.html).
  moto's real RedrivePolicy does the moving; the mapping only records it.
- Nothing has to fail for a message to come twice: "Lambda event source mappings process
  each event at least once, and duplicate processing of records can occur"
  (https://docs.aws.amazon.com/lambda/latest/dg/invocation-eventsourcemapping.html), and a
  standard queue keeps copies of each message on several servers: "On rare occasions, one of
  the servers that stores a copy of a message might be unavailable when you receive or delete
  a message. If this occurs, the copy of the message isn't deleted on the server that is
  unavailable, and you might get that message copy again when you receive messages"
  (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/standard-queues-at-least-once-delivery.html).
  The queue's ``duplicate_probability`` (0 unless a scenario sets it) is the chance, drawn from
  the world's seeded generator, that the DeleteMessage of a successfully handled message
  misses such a copy: the request succeeds for Lambda, the mapping records it "deleted" and a
  "stale copy", and the copy, still in flight from its receive, becomes visible again when
  the visibility timeout runs out. Its next receive is a "spontaneous duplicate", the cause
  of the invocation that gets it. Each message misses at most once (a second miss is
  possible on AWS, but rarer still, and would make a demo at probability 1 endless).
- A FIFO queue (``FifoQueueConfig``, a name ending in ``.fifo``) deduplicates sends for 5
  minutes (``sandbox.sources.fifo``) and hands out a message group's messages in order, but
  the mapping on it is the same at-least-once mapping: a failed batch comes back whole, in
  order. Lambda takes at most 10 messages per batch from a FIFO queue and no batching window
  (services-sqs-parameters.html). moto keeps a group's later messages back while an earlier
  one is in flight.
- A message redriven from the dead-letter queue (``sandbox.sources.redrive``) arrives as a
  new message with a new MessageId; the invocation that gets it has the cause "DLQ redrive".

How it runs in the sandbox:

- ReceiveMessage uses ``WaitTimeSeconds=0``: long polling never returns under frozen time.
  Instead, an idle poller looks at moto's queue (without a request, so the history only
  shows receives that had something to read) and waits as a long poll does: until a
  message arrives (any SendMessage to the queue wakes it), an in-flight one becomes
  visible again, or 20 s (the longest long poll, WaitTimeSeconds=20) pass.
- moto deletes a message even through an older receipt handle; AWS documents that only
  the latest handle is sure to delete it. Either way the later invocation has already
  received its copy, so the duplicate it causes is the same.
- Every decision is written to the history as a ``delivery`` record ("redelivery",
  "deleted", "batch failed", "dead-lettered", "pending", and with ``duplicate_probability``
  "stale copy" and "spontaneous duplicate").
"""
from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NotRequired, TypedDict

from ..aws import adapter
from ..aws.dynamo import number_text
from ..aws.event_shapes import SqsMessage
from ..core.scheduler import current_task
from ..errors import BadInput
from ..events import sqs_record
from ..settings import Config, param
from ..vocab import BadBatchResponse, Cause, Delivery, Outcome, SourceKind
from .async_invoke import THROTTLE_FIRST_DELAY, THROTTLE_MAX_DELAY
from .base import Source
from .fifo import DOC_KEY_TERMS, FIFO_SUFFIX, FifoDeduplication, FifoOrder, FifoQueueConfig

if TYPE_CHECKING:
    from ..runtime.functions import Invocation, LambdaFunction
    from ..world import Sandbox

DOC_WITH_SQS = "https://docs.aws.amazon.com/lambda/latest/dg/with-sqs.html"
DOC_CONFIGURE = "https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-configure.html"
DOC_PARAMETERS = "https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-parameters.html"
DOC_SCALING = "https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-scaling.html"
DOC_ERRORS = "https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-errorhandling.html"
DOC_VISIBILITY = "https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-visibility-timeout.html"
DOC_DLQ = "https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-dead-letter-queues.html"
DOC_SQS_RETRIES = "https://docs.aws.amazon.com/lambda/latest/operatorguide/sqs-retries.html"
DOC_AT_LEAST_ONCE = ("https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/"
                     "standard-queues-at-least-once-delivery.html")
DOC_ESM = "https://docs.aws.amazon.com/lambda/latest/dg/invocation-eventsourcemapping.html"

MAX_RECEIVE = 10  # ReceiveMessage returns at most 10 messages per call
LONG_POLL = 20.0  # seconds: the longest ReceiveMessage WaitTimeSeconds (sqs-short-and-long-polling.html)


def dlq_name_of(name: str) -> str:
    """The dead-letter queue's name: ``orders-dlq``, or ``orders-dlq.fifo`` for ``orders.fifo``."""
    if name.endswith(FIFO_SUFFIX):
        return f"{name[:-len(FIFO_SUFFIX)]}-dlq{FIFO_SUFFIX}"
    return f"{name}-dlq"


def recommended_visibility(function_timeout: float, batching_window: float) -> float:
    """Six times the function timeout (services-sqs-configure.html), plus the batching window it waits out."""
    return 6 * function_timeout + batching_window


class QueueMessage(TypedDict):
    """A message still in a queue, as moto holds it: its id, its body, and how many times it was received."""

    id: str
    body: str
    receives: int


class BadBatch(TypedDict):
    """Why Lambda failed a whole batch over its partial batch response: a ``batch failed`` record's detail."""

    reason: str
    badResponse: str  # a BadBatchResponse
    itemIdentifier: NotRequired[str]


#: What a throttled poller's tries came to before one got through: how many, and from when (``from`` is a keyword).
Refused = TypedDict("Refused", {"tries": int, "from": float})


def order_id_of(body: Any) -> str | None:
    """The orderId a message body carries, or None if it is not a JSON order."""
    try:
        data = json.loads(body)
    except (TypeError, ValueError):
        return None
    return str(data["orderId"]) if isinstance(data, dict) and "orderId" in data else None


def _json_problem(body: Any) -> str | None:
    try:
        json.loads(body)
    except (TypeError, ValueError) as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


@dataclass(frozen=True)
class QueueConfig(Config):
    """A standard queue's settings, and its redrive policy."""

    visibility_timeout: int = param(
        30, "the queue's visibility timeout (s): how long a received message stays hidden before SQS hands it out "
        "again (SQS default 30 s)", DOC_VISIBILITY, 0, 43200, aws="VisibilityTimeout")
    max_receive_count: int = param(
        5, "the redrive policy's maxReceiveCount: receives before SQS moves a message to the dead-letter queue "
        "(0: no DLQ); AWS recommends at least 5", DOC_SQS_RETRIES, 0, 1000, aws="maxReceiveCount")
    duplicate_probability: float = param(
        0.0, "the chance that deleting a handled message misses one of its stored copies, which SQS then hands "
        "out again after the visibility timeout, with no error anywhere (rare on AWS; each message at most once "
        "here)", DOC_AT_LEAST_ONCE, 0, 1)


#: QueueConfig settings a scenario offers only when it sets them, so the others' settings stay as they were.
OPT_IN_QUEUE_SETTINGS = ("duplicate_probability",)
#: SqsMappingConfig settings offered the same way: only by a scenario that gives their default.
OPT_IN_MAPPING_SETTINGS = ("throttled_from", "throttled_for", "quiet_queue_wait")


@dataclass(frozen=True)
class SqsMappingConfig(Config):
    """The settings of one SQS event source mapping."""

    batch_size: int = param(10, "BatchSize: the most messages one invocation gets (Lambda default 10)",
                            DOC_CONFIGURE, 1, 10000, aws="BatchSize")
    batching_window: int = param(
        0, "MaximumBatchingWindowInSeconds: how long a poller keeps gathering a batch that is not full before it "
        "invokes (Lambda default 0)", DOC_PARAMETERS, 0, 300, aws="MaximumBatchingWindowInSeconds")
    max_concurrency: int = param(0, "MaximumConcurrency: most invocations at once, 2 to 1000 (0: not set)",
                                 DOC_SCALING, 0, 1000, aws="MaximumConcurrency")
    pollers: int = param(5, "how many batches Lambda processes at once (five, when messages are available)",
                         DOC_SCALING, 1, 1000)
    report_batch_item_failures: bool = param(
        False, "FunctionResponseTypes=[ReportBatchItemFailures]: let the handler return batchItemFailures so only "
        "those messages come back (off by default)", DOC_ERRORS, aws="ReportBatchItemFailures")
    throttled_from: float = param(
        0.0, "virtual seconds into the run when the function starts being throttled (see throttled_for)",
        DOC_ERRORS, 0, 86400)
    throttled_for: float = param(
        0.0, "seconds the function stays throttled from throttled_from on (0: never): a poller holding a batch "
        "gets 429 and tries again 1, 2, 4 ... s later, until a try gets through or the batch's visibility timeout "
        "runs out, when Lambda drops the batch and it comes back like a failed one", DOC_ERRORS, 0, 86400)
    quiet_queue_wait: float = param(
        0.0, "seconds after its first receive that a poller on a quiet queue still holds a batch that is not full "
        "(0: off; only with a batching window): on a very low-traffic queue Lambda may wait up to 20 s before "
        "invoking, even with a shorter batching window (a fixed figure here, not drawn)", DOC_WITH_SQS, 0, 20)
    #: Virtual seconds a poller held back by MaximumConcurrency waits before looking again.
    poll_interval: float = 1.0

    def throttled_at(self, t: float) -> bool:
        """Is the function throttled at virtual time ``t``?"""
        return self.throttled_for > 0 and self.throttled_from <= t < self.throttled_from + self.throttled_for

    def gathers_for(self) -> float:
        """How long after its first receive a poller keeps a batch that is not full: the batching window, or
        the quiet-queue wait when it is longer (AWS's note is about a batch window, so none without one)."""
        if self.batching_window == 0:
            return 0.0
        return max(float(self.batching_window), self.quiet_queue_wait)

    def check(self) -> None:
        if self.batch_size > 10 and self.batching_window < 1:
            raise BadInput(f"a BatchSize above 10 (here {self.batch_size}) needs MaximumBatchingWindowInSeconds "
                           f"of at least 1 second ({DOC_PARAMETERS})")
        if self.max_concurrency == 1:
            raise BadInput(f"MaximumConcurrency must be 2 to 1000 (or 0 for not set), got 1 ({DOC_SCALING})")
        if not self.poll_interval > 0:
            raise BadInput(f"poll_interval must be positive, got {self.poll_interval!r}")


class SqsQueue:
    """A queue in moto, optionally with a dead-letter queue, and ways to look inside.

    A standard queue unless ``fifo`` is given: then a FIFO queue (its name must end in
    ``.fifo``, and so does its dead-letter queue's), whose sends ``FifoDeduplication``
    deduplicates for 5 minutes.

    The look-ups (``depth``, ``visible``, ...) read moto's queue directly, under the
    gateway's lock and without a request, so they cost nothing in the history. They are the
    sandbox's own bookkeeping, never something a handler could do.
    """

    def __init__(self, world: "Sandbox", name: str = "orders", config: QueueConfig | None = None,
                 fifo: FifoQueueConfig | None = None, **settings: Any):
        self.world, self.name, self.fifo = world, name, fifo
        self.config = config or QueueConfig(**settings)
        self.visibility_timeout = self.config.visibility_timeout
        self.max_receive_count = self.config.max_receive_count
        self.dlq_name: str | None = None
        self.dlq_url: str | None = None
        self.dlq_arn: str | None = None
        #: MessageIds of messages moved here from the dead-letter queue -> the dead letter's MessageId.
        self.redriven: dict[str, str] = {}
        self._check_fifo()
        client = world.sqs
        with world.gateway.unrecorded():
            attributes = {"VisibilityTimeout": str(self.visibility_timeout)}
            kind = {"FifoQueue": "true"} if fifo is not None else {}
            if fifo is not None:
                attributes.update(kind, ContentBasedDeduplication=str(fifo.content_based_deduplication).lower())
            if self.max_receive_count:
                self.dlq_name = dlq_name_of(name)
                self.dlq_url = client.create_queue(QueueName=self.dlq_name,
                                                   **({"Attributes": kind} if kind else {}))["QueueUrl"]
                self.dlq_arn = client.get_queue_attributes(QueueUrl=self.dlq_url,
                                                           AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
                attributes["RedrivePolicy"] = json.dumps({"deadLetterTargetArn": self.dlq_arn,
                                                          "maxReceiveCount": str(self.max_receive_count)})
            self.url = client.create_queue(QueueName=name, Attributes=attributes)["QueueUrl"]
            self.arn = client.get_queue_attributes(QueueUrl=self.url,
                                                   AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        self.deduplication = FifoDeduplication(world, name, fifo, order_id_of) if fifo is not None else None
        if fifo is not None:
            FifoOrder(world, name)

    def _check_fifo(self) -> None:
        if self.fifo is None:
            if self.name.endswith(FIFO_SUFFIX):
                raise BadInput(f"queue {self.name!r}: a name ending in {FIFO_SUFFIX} is for a FIFO queue; pass fifo=")
            return
        if not self.name.endswith(FIFO_SUFFIX):
            raise BadInput(f"a FIFO queue's name must end in {FIFO_SUFFIX}, got {self.name!r}")
        if self.config.duplicate_probability:
            raise BadInput("duplicate_probability models a standard queue's stored copies; a FIFO queue does not "
                           f"hand out a deleted message again ({DOC_KEY_TERMS})")

    # -- looking inside moto (no request, nothing recorded) ------------------------------
    def depth(self) -> int:
        """Messages in the queue: visible, in flight or delayed (what moto's cost grows with)."""
        return adapter.queue_depth(self.world.region, self.name)

    def visible(self) -> int:
        """Messages a ReceiveMessage could return right now."""
        return adapter.queue_visible(self.world.region, self.name, self.world.clock.now() * 1000)

    def next_visible_in(self) -> float | None:
        """Virtual seconds until the next in-flight message becomes visible (None: nothing in flight)."""
        now_ms = self.world.clock.now() * 1000
        times = [max(m.visible_at, m.delayed_until) for m in adapter.queue_messages(self.world.region, self.name)]
        if not times:
            return None
        # moto counts a message visible only strictly after visible_at, in whole milliseconds.
        return max(0.0, (min(times) - now_ms) / 1000) + 0.001

    def messages(self) -> list[QueueMessage]:
        """``[{"id", "body", "receives"}]`` of every message still in the queue."""
        return [{"id": m.id, "body": m.body, "receives": m.receives}
                for m in adapter.queue_messages(self.world.region, self.name)]

    def dead_letters(self) -> list[QueueMessage]:
        """``[{"id", "body", "receives"}]`` of every message in the dead-letter queue."""
        if self.dlq_name is None:
            return []
        return [{"id": m.id, "body": m.body, "receives": m.receives}
                for m in adapter.queue_messages(self.world.region, self.dlq_name)]


@dataclass
class _Tracked:
    """What the mapping remembers about one message."""

    order: str | None
    last_inv: str | None = None
    last_error: str | None = None
    #: The invocation whose DeleteMessage missed a copy of this message (a "stale copy"), if one did.
    stale_after: str | None = None
    #: The receipt handle the stale copy was received with, once it has been.
    copy_receipt: str | None = None


class SqsEventSourceMapping(Source):
    """Pollers that read ``queue`` in batches and invoke a function, as Lambda's SQS mapping does.

    Creating it checks the settings and, like AWS, rejects a function timeout longer than
    the queue's visibility timeout (read with a real GetQueueAttributes call).
    """

    function: LambdaFunction  # it invokes one

    kind = SourceKind.SQS

    def __init__(self, world: "Sandbox", function: "LambdaFunction", queue: SqsQueue,
                 config: SqsMappingConfig | None = None, **settings: Any):
        super().__init__(world, function)
        self.queue, self.config = queue, config or SqsMappingConfig(**settings)
        with world.gateway.unrecorded():
            attrs = world.sqs.get_queue_attributes(QueueUrl=queue.url,
                                                   AttributeNames=["VisibilityTimeout"])["Attributes"]
        vt = int(attrs["VisibilityTimeout"])
        if function.config.timeout > vt:
            # The text of AWS's InvalidParameterValueException for CreateEventSourceMapping.
            raise BadInput(f"Queue visibility timeout: {vt} seconds is less than Function timeout: "
                           f"{number_text(function.config.timeout)} seconds")
        self.visibility_timeout = vt
        if queue.fifo is not None:
            self._check_fifo()
        advised = recommended_visibility(function.config.timeout, self.config.batching_window)
        if vt < advised:
            # AWS advises six times the function timeout; the batching window is added because visibility
            # counts from receipt, while the poller still gathers its batch (the module docstring says why).
            world.note(f"the queue's visibility timeout ({vt} s) is below six times the function timeout (AWS's "
                       f"advice) plus the batching window ({number_text(advised)} s): a batch can come back while "
                       f"it is still being processed")
        held = self.config.gathers_for()
        if held > self.config.batching_window and vt < recommended_visibility(function.config.timeout, held):
            world.note(f"on a quiet queue a poller may hold a batch {number_text(held)} s after receiving it before "
                       f"it invokes (longer than its {self.config.batching_window} s batching window), and the "
                       f"visibility timeout ({vt} s) is below six times the function timeout plus that wait "
                       f"({number_text(recommended_visibility(function.config.timeout, held))} s)")
        self.tracked: dict[str, _Tracked] = {}
        self.first_message_of: dict[str, str] = {}  # orderId -> the first messageId that carried it
        self.invocations: list["Invocation"] = []
        self.tasks: list = []
        self.busy = 0  # pollers holding a batch (receiving, waiting out the window, or invoking)
        self._dead_seen: set[str] = set()
        self._stopped = False
        world.on_aws(self._on_aws)

    def _check_fifo(self) -> None:
        if self.config.batch_size > MAX_RECEIVE:
            raise BadInput(f"BatchSize for a FIFO queue is at most {MAX_RECEIVE}, got {self.config.batch_size} "
                           f"({DOC_PARAMETERS})")
        if self.config.batching_window:
            raise BadInput(f"Batching window is not supported for FIFO queues: MaximumBatchingWindowInSeconds must "
                           f"be 0, got {self.config.batching_window} ({DOC_PARAMETERS})")

    # -- lifecycle -----------------------------------------------------------------------
    def start(self) -> "SqsEventSourceMapping":
        if not self.tasks:
            for i in range(self.config.pollers):
                self.tasks.append(self.world.scheduler.spawn(self._poll, name=f"sqs-poller-{i + 1}", daemon=True))
        return self

    def stop(self) -> None:
        """Pollers stop taking new batches; batches in hand are still finished."""
        self._stopped = True

    def idle(self) -> bool:
        """Nothing left in the queue and no poller holding a batch."""
        return self.busy == 0 and self.queue.depth() == 0

    def finish(self) -> None:
        """One "pending" record for each order whose messages are still in the queue."""
        pending_each(self, self.pending_keys())

    # -- the poller ------------------------------------------------------------------------
    #: What wakes a waiting poller early: a message arriving, or one made visible sooner.
    _WAKING_OPS = ("SendMessage", "SendMessageBatch", "ChangeMessageVisibility", "ChangeMessageVisibilityBatch")

    def _on_aws(self, service: str, op: str, params: dict, status: int) -> None:
        if service == "sqs" and op in self._WAKING_OPS and status == 200 and params.get("QueueUrl") == self.queue.url:
            self.world.scheduler.notify((self.kind, self.queue.url))

    def _wait(self, seconds: float, label: str) -> None:
        """Wait like a long poll: up to ``seconds``, but back at once when a message arrives."""
        self.world.scheduler.wait_signal((self.kind, self.queue.url), timeout=seconds, label=label)

    def _poll(self) -> None:
        sched = self.world.scheduler
        cfg = self.config
        while not self._stopped:
            if cfg.max_concurrency and self.busy >= cfg.max_concurrency:
                # MaximumConcurrency: read nothing more until an invocation frees a slot, so no
                # message waits in a poller's hand while its visibility runs.
                sched.sleep(cfg.poll_interval, label="sqs: at MaximumConcurrency")
                continue
            batch: list[SqsMessage] = []
            if self.queue.visible():
                self.busy += 1
                try:
                    batch, received_at = self._gather()
                    if batch:
                        self._process(batch, received_at)
                finally:
                    self.busy -= 1
            if not batch:
                # Nothing to read, or another poller was first: wait as a long poll would.
                nxt = self.queue.next_visible_in()
                self._wait(LONG_POLL if nxt is None else min(LONG_POLL, nxt), label="sqs: poll")

    def _gather(self) -> tuple[list[SqsMessage], float]:
        """Receive up to BatchSize messages, waiting out the batching window (or, on a quiet queue, the
        quiet-queue wait) if it is not full; the batch and when its first message was received."""
        cfg = self.config
        clock = self.world.clock
        batch: list[SqsMessage] = []
        first_at: float | None = None
        while True:
            want = min(MAX_RECEIVE, cfg.batch_size - len(batch))
            if want > 0 and self.queue.visible():
                got = self._receive(want)
                if got and first_at is None:
                    first_at = clock.elapsed()
                batch += got
            if not batch:
                return batch, clock.elapsed()
            assert first_at is not None  # set when the first message came
            if len(batch) >= cfg.batch_size or cfg.batching_window == 0:
                return batch, first_at
            left = first_at + cfg.gathers_for() - clock.elapsed()
            if left <= 1e-9:
                return batch, first_at
            # The received messages' visibility is already running while the poller waits.
            self._wait(left, label="sqs: batching window")

    def _receive(self, want: int) -> list[SqsMessage]:
        response = self.world.sqs.receive_message(
            QueueUrl=self.queue.url, MaxNumberOfMessages=want, WaitTimeSeconds=0,
            AttributeNames=["All"], MessageSystemAttributeNames=["All"], MessageAttributeNames=["All"],
        )
        messages = response.get("Messages", [])
        self._note_dead_letters()
        again: list[SqsMessage] = []
        copies: list[SqsMessage] = []
        for m in messages:
            mid = m["MessageId"]
            if mid not in self.tracked:
                info = self.tracked[mid] = _Tracked(order_id_of(m.get("Body")))
                if info.order is not None:
                    self.first_message_of.setdefault(info.order, mid)
            info = self.tracked[mid]
            if info.stale_after is not None and info.copy_receipt is None:
                info.copy_receipt = m["ReceiptHandle"]
                copies.append(m)
            elif self._receive_count(m) > 1:
                again.append(m)
        if copies:
            self._record_copies(copies)
        if again:
            ids = [m["MessageId"] for m in again]
            prev = self._latest(self.tracked[i].last_inv for i in ids)
            self.world.record_delivery(self.kind, Delivery.REDELIVERY,
                keys=self._keys(ids), inv=prev,
                detail={"messageIds": ids,
                        "receiveCounts": [self._receive_count(m) for m in again],
                        "visibilityTimeout": self.visibility_timeout,
                        "why": f"not deleted within the {self.visibility_timeout} s visibility timeout, so SQS "
                               f"made it visible again"},
            )
        return messages

    def _record_copies(self, copies: list[SqsMessage]) -> None:
        ids = [m["MessageId"] for m in copies]
        self.world.record_delivery(self.kind, Delivery.SPONTANEOUS_DUPLICATE, keys=self._keys(ids),
            inv=self._latest(self.tracked[i].stale_after for i in ids),
            detail={"messageIds": ids, "receiveCounts": [self._receive_count(m) for m in copies],
                    "why": "a copy of a message that was handled and deleted: the DeleteMessage succeeded, but a "
                           "server holding this copy was unavailable, so SQS handed it out again (no error anywhere)"},
        )

    def _process(self, batch: list[SqsMessage], received_at: float) -> None:
        sb = self.world
        ids = [m["MessageId"] for m in batch]
        cause, prev = self._cause(batch)
        got_through, refused = self._through_throttling(ids, prev, received_at)
        if not got_through:
            return
        event = {"Records": [sqs_record(m, self.queue.arn, sb.region) for m in batch]}
        inv = self.function.start(event, source=self.kind, cause=cause, prev=prev, keys=self._keys(ids))
        self.invocations.append(inv)
        for mid in ids:
            self.tracked[mid].last_inv = inv.id
        # Recorded once the invocation has its id, so a reader can tell which invocation waited.
        if refused is not None:
            self._throttled(ids, prev, refused, invocation=inv.id)
        if self.config.gathers_for() > self.config.batching_window and len(batch) < self.config.batch_size:
            self._quiet_wait(ids, inv.id, received_at)
        sb.scheduler.wait_for(inv.task, label=f"sqs: wait {inv.id}")
        if inv.outcome == Outcome.OK:
            failed, bad = self._failed_items(inv.result, ids)
            if bad is not None:
                self._batch_failed(ids, inv, bad["reason"], bad=bad)
                return
            done = [m for m in batch if m["MessageId"] not in failed]
            if done:
                self._delete(done, inv)
            if failed:
                self._batch_failed([i for i in ids if i in failed], inv, "reported in batchItemFailures", partial=True)
        else:
            self._batch_failed(ids, inv, inv.error_text or inv.outcome or "the invocation failed")

    # -- throttling and waiting --------------------------------------------------------------
    def _through_throttling(self, ids: list[str], prev: str | None,
                            received_at: float) -> tuple[bool, Refused | None]:
        """Try the invoke while the function is throttled: 429, then again 1, 2, 4 ... s later, the batch kept in
        hand. (True, what was refused) once a try gets through; False once the next try would come after the
        visibility timeout of the batch's first receive, when Lambda drops the batch."""
        cfg, sched, clock = self.config, self.world.scheduler, self.world.clock
        if not cfg.throttled_at(clock.elapsed()):
            return True, None
        tries, first, delay = 0, clock.elapsed(), THROTTLE_FIRST_DELAY
        deadline = received_at + self.visibility_timeout
        while cfg.throttled_at(clock.elapsed()):
            tries += 1
            if clock.elapsed() + delay >= deadline - 1e-9:
                sched.sleep(max(0.0, deadline - clock.elapsed()), label="sqs: throttled until the visibility timeout")
                self._throttled(ids, prev, {"tries": tries, "from": round(first, 6)})
                for mid in ids:
                    self.tracked[mid].last_error = (f"throttled (429) until its {self.visibility_timeout} s visibility "
                                                    f"timeout ran out, so Lambda dropped it without running it")
                return False, None
            sched.sleep(delay, label=f"sqs: throttled, try again in {delay:g} s")
            delay = min(delay * 2, THROTTLE_MAX_DELAY)
        return True, {"tries": tries, "from": round(first, 6)}

    def _throttled(self, ids: list[str], prev: str | None, refused: Refused,
                   invocation: str | None = None) -> None:
        tries = refused["tries"]
        answered = f"{tries} {'try' if tries == 1 else 'tries'} answered 429"
        if invocation is None:
            why = (f"the function was throttled: {answered} while the poller held the batch, and the next would have "
                   f"come after the {self.visibility_timeout} s visibility timeout, so Lambda dropped the batch "
                   f"without running it; SQS hands its messages out again, one receive spent")
        else:
            why = (f"the function was throttled: {answered} while the poller held the batch, tried again with a "
                   f"backoff growing from {THROTTLE_FIRST_DELAY:g} s; the messages' visibility timeout kept running")
        detail = {"messageIds": ids, **refused, "status": 429, "error": "TooManyRequestsException",
                  "dropped": invocation is None, "poller": _poller_name(), "why": why}
        if invocation is not None:
            detail["invocation"] = invocation
        self.world.record_delivery(self.kind, Delivery.THROTTLED, keys=self._keys(ids), inv=prev, detail=detail)

    def _quiet_wait(self, ids: list[str], inv: str, received_at: float) -> None:
        cfg = self.config
        waited = self.world.clock.elapsed() - received_at
        self.world.record_delivery(self.kind, Delivery.QUIET_QUEUE_WAIT, keys=self._keys(ids), inv=inv,
            detail={"messageIds": ids, "from": round(received_at, 6), "waited": round(waited, 6),
                    "batchingWindow": cfg.batching_window, "quietQueueWait": cfg.quiet_queue_wait,
                    "poller": _poller_name(),
                    "why": f"the queue was quiet, so the poller held the batch {number_text(cfg.quiet_queue_wait)} s "
                           f"after receiving it before invoking, not its {cfg.batching_window} s batching window; "
                           f"the messages' visibility timeout ran meanwhile"},
        )

    # -- outcomes ------------------------------------------------------------------------------
    def _failed_items(self, result: Any, ids: list[str]) -> tuple[set[str], BadBatch | None]:
        """The messageIds a partial batch response names, or why the whole batch failed (``bad_response``)."""
        if not self.config.report_batch_item_failures:
            ignored_partial_response(self.world, result)
            return set(), None  # the response is ignored unless the mapping asks for it
        named, bad = read_partial_response(result, ids, "a messageId")
        return set(named), bad

    def _delete(self, messages: list[SqsMessage], inv: "Invocation") -> None:
        missed = self._missed_copies(messages)
        copies = adapter.copy_messages(self.world.region, self.queue.name, missed) if missed else []
        deleted: list[str] = []
        for start in range(0, len(messages), MAX_RECEIVE):
            chunk = messages[start:start + MAX_RECEIVE]
            response = self.world.sqs.delete_message_batch(
                QueueUrl=self.queue.url,
                Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(chunk)],
            )
            ok = {e["Id"] for e in response.get("Successful", [])}
            deleted += [m["MessageId"] for i, m in enumerate(chunk) if str(i) in ok]
        if deleted:
            self.world.record_delivery(self.kind, Delivery.DELETED,
                                   keys=self._keys(deleted), inv=inv.id, detail={"messageIds": deleted})
        if copies:
            self._keep_stale_copies(copies, inv)

    def _missed_copies(self, messages: list[SqsMessage]) -> list[str]:
        """The messages whose DeleteMessage will miss a stored copy: each with duplicate_probability, at most once."""
        p = self.queue.config.duplicate_probability
        if p <= 0:
            return []  # no draw: a queue without the setting uses no randomness
        rng = self.world.rng
        return [m["MessageId"] for m in messages
                if self.tracked[m["MessageId"]].stale_after is None and rng.random() < p]

    def _keep_stale_copies(self, copies: list[adapter.HeldCopy], inv: "Invocation") -> None:
        """Put back the copies the delete missed: still in flight, visible again when their visibility runs out."""
        adapter.put_back(self.world.region, self.queue.name, copies)
        ids = [c.info.id for c in copies]
        for mid in ids:
            self.tracked[mid].stale_after = inv.id
        back_in = max(0.0, max(c.info.visible_at for c in copies) / 1000 - self.world.clock.now())
        self.world.record_delivery(self.kind, Delivery.STALE_COPY, keys=self._keys(ids), inv=inv.id,
            detail={"messageIds": ids, "visibleAgainIn": round(back_in, 3),
                    "why": "DeleteMessage succeeded, but one of the servers that stores a copy of the message was "
                           "unavailable, so that copy was not deleted; SQS hands it out again once its "
                           f"{self.visibility_timeout} s visibility timeout has run out"},
        )

    def _batch_failed(self, ids: list[str], inv: "Invocation", reason: str, partial: bool = False,
                      bad: BadBatch | None = None) -> None:
        for mid in ids:
            self.tracked[mid].last_error = reason
        whole = "" if partial else "the whole batch, already-handled messages included, "
        self.world.record_delivery(self.kind, Delivery.BATCH_FAILED, keys=self._keys(ids), inv=inv.id,
            detail={"messageIds": ids, "reason": reason, "partial": partial, **(bad or {}),
                    "visibilityTimeout": self.visibility_timeout,
                    "returns": f"{whole}becomes visible again {self.visibility_timeout} s after it was received"},
        )

    def _note_dead_letters(self) -> None:
        """Record the messages moto's redrive policy has just moved to the dead-letter queue."""
        for m in self.queue.dead_letters():
            if m["id"] in self._dead_seen:
                continue
            self._dead_seen.add(m["id"])
            info = self.tracked.get(m["id"]) or _Tracked(order_id_of(m["body"]))
            times = "once" if m["receives"] == 1 else f"{m['receives']} times"
            reason = f"received {times} (maxReceiveCount {self.queue.max_receive_count}) without being deleted"
            if info.last_error:
                reason += f"; last error: {info.last_error}"
            problem = _json_problem(m["body"])
            if problem and "JSON" not in (info.last_error or ""):
                reason += f"; its body is not JSON ({problem})"
            self.world.record_delivery(self.kind, Delivery.DEAD_LETTERED,
                keys=[info.order] if info.order else [], inv=info.last_inv,
                detail={"messageId": m["id"], "queue": self.queue.dlq_name, "reason": reason},
            )

    # -- bookkeeping -----------------------------------------------------------------------
    @staticmethod
    def _receive_count(message: SqsMessage) -> int:
        return int(message.get("Attributes", {}).get("ApproximateReceiveCount", "1"))

    def _cause(self, batch: list[SqsMessage]) -> tuple[str, str | None]:
        # This batch's own receive counts: another poller may have received the same messages since.
        ids = [m["MessageId"] for m in batch]
        copies = [m["MessageId"] for m in batch if self.tracked[m["MessageId"]].copy_receipt == m["ReceiptHandle"]]
        if copies:
            return Cause.SPONTANEOUS_DUPLICATE, self._latest(self.tracked[i].stale_after for i in copies)
        redriven = [self.queue.redriven[m["MessageId"]] for m in batch
                    if m["MessageId"] in self.queue.redriven and self._receive_count(m) == 1]
        if redriven:
            return Cause.REDRIVE, self._latest(self.tracked[i].last_inv for i in redriven if i in self.tracked)
        again = [m["MessageId"] for m in batch if self._receive_count(m) > 1]
        if again:
            return Cause.REDELIVERY, self._latest(self.tracked[i].last_inv for i in again)
        resent = [order for i in ids if (order := self.tracked[i].order) is not None
                  and self.first_message_of.get(order) != i]
        if resent:
            # A second message for an order already delivered: the producer sent it twice.
            firsts = [self.first_message_of[order] for order in resent]
            return Cause.PRODUCER_RESEND, self._latest(self.tracked[f].last_inv for f in firsts)
        return Cause.FIRST_DELIVERY, None

    @staticmethod
    def _latest(inv_ids: Iterable[str | None]) -> str | None:
        known = [i for i in inv_ids if i]
        return max(known, key=lambda i: int(i.rsplit("-", 1)[-1])) if known else None

    def _keys(self, ids: list[str]) -> list[str]:
        keys: list[str] = []
        for mid in ids:
            order = self.tracked[mid].order if mid in self.tracked else None
            if order is not None and order not in keys:
                keys.append(order)
        return keys

    def pending_keys(self) -> list[str]:
        """orderIds whose messages are still in the queue (visible or in flight)."""
        keys: list[str] = []
        for m in self.queue.messages():
            order = order_id_of(m["body"])
            if order is not None and order not in keys:
                keys.append(order)
        return keys


def _poller_name() -> str | None:
    """The poller task running now (the ``actor`` of its ReceiveMessage records)."""
    task = current_task()
    return task.name if task is not None else None


def pending_each(source: Source, keys: list[str]) -> None:
    """One "pending" record per order, saying when the run stopped."""
    t = source.world.clock.elapsed()
    for key in keys:
        source.pending([key], f"still in the queue or not yet sent when the run stopped at {t:g} s")


def ignored_partial_response(sb: Any, result: Any) -> None:
    """Say so in the history when a handler names failed records that the mapping will not hear of."""
    items = result.get("batchItemFailures") if isinstance(result, dict) else None
    if isinstance(items, list) and items:
        sb.note(f"the handler returned {len(items)} batchItemFailures, but the mapping was created without "
                f"ReportBatchItemFailures, so Lambda ignored them and treated the whole batch as a success")


def read_partial_response(result: Any, ids: list[str], what: str) -> tuple[list[str], BadBatch | None]:
    """(the ids a partial batch response names, None), or ([], why Lambda failed the whole batch).

    ``ids`` are the batch's records as the function saw them (``what`` says what they are: "a messageId",
    "a sequence number"). No response, or a null ``batchItemFailures``, is a full success. The why is the
    ``batch failed`` record's detail: ``reason`` in words, ``badResponse`` (``BadBatchResponse``) for a reader
    that judges, and the offending ``itemIdentifier`` when there was one. For SQS, AWS lists "an itemIdentifier
    value with a message ID that doesn't exist", an empty or null one and a bad key name as complete failures
    (https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-errorhandling.html#services-sqs-batchfailurereporting);
    for a stream, ``shards`` says which of these AWS documents and which the sandbox assumes.
    """
    if not isinstance(result, dict) or result.get("batchItemFailures") is None:
        return [], None
    items = result["batchItemFailures"]
    if not isinstance(items, list):
        return [], {"reason": "the batchItemFailures in the response is not a list, so Lambda failed the whole batch",
                    "badResponse": BadBatchResponse.NOT_A_LIST}
    named: list[str] = []
    for item in items:
        ident = item.get("itemIdentifier") if isinstance(item, dict) else None
        if not isinstance(ident, str) or not ident:
            return [], {"reason": f"batchItemFailures holds {item!r}, which has no itemIdentifier, so Lambda failed "
                                  f"the whole batch", "badResponse": BadBatchResponse.NO_IDENTIFIER}
        if ident not in ids:
            return [], {"reason": f"batchItemFailures names {ident!r}, which is not {what} of this batch, so Lambda "
                                  f"failed the whole batch", "badResponse": BadBatchResponse.UNKNOWN_IDENTIFIER,
                        "itemIdentifier": ident}
        named.append(ident)
    return named, None
