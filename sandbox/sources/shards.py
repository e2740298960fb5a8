"""What Lambda's stream event source mappings share: Kinesis and DynamoDB Streams.

Both work the same way, and this module holds that way once (``stream.py`` and
``ddb_stream.py`` say only how to read their service and how its events look):

- Lambda reads each shard in order, one batch of one shard at a time, polling (a Kinesis
  shard about once a second, a DynamoDB stream's 4 times a second) and reading again at
  once while records are waiting; it invokes the function
  synchronously with the batch (https://docs.aws.amazon.com/lambda/latest/dg/with-kinesis.html,
  https://docs.aws.amazon.com/lambda/latest/dg/with-ddb.html).
- BatchSize defaults to 100, MaximumRetryAttempts and MaximumRecordAgeInSeconds to -1 (retry
  until the record expires from the stream), BisectBatchOnFunctionError to false
  (https://docs.aws.amazon.com/lambda/latest/dg/services-kinesis-parameters.html,
  https://docs.aws.amazon.com/lambda/latest/dg/services-ddb-params.html).
- A function error (a timeout included) makes Lambda retry the *whole* batch, the records it
  already handled too, and nothing behind it in that shard moves until the batch succeeds or
  is discarded. Bisecting splits a failed batch in two and does not use up the retry quota.
  A discarded batch is described (shard, first and last sequence number, size; never the
  data) to the on-failure destination
  (https://docs.aws.amazon.com/lambda/latest/dg/kinesis-on-failure-destination.html,
  https://docs.aws.amazon.com/lambda/latest/dg/services-dynamodb-errors.html).
- With ``ReportBatchItemFailures`` (off by default) the function may answer
  ``{"batchItemFailures": [{"itemIdentifier": "<sequence number>"}]}``. "If the
  batchItemFailures array contains multiple items, Lambda uses the record with the lowest
  sequence number as the checkpoint. Lambda then retries all records starting from that
  checkpoint": the records before it are done, the reported one *and every record after it*
  come again, those that succeeded included. An empty or null list is a full success; an
  empty or null ``itemIdentifier``, or an item without that key, fails the whole batch (what
  AWS documents). An ``itemIdentifier`` that names no record of the batch fails it too: that
  one is our assumption, since AWS's page does not say. With bisecting on too,
  "the batch is bisected at the returned sequence number and Lambda retries only the
  remaining records"
  (https://docs.aws.amazon.com/lambda/latest/dg/services-kinesis-batchfailurereporting.html,
  https://docs.aws.amazon.com/lambda/latest/dg/services-ddb-batchfailurereporting.html).

What AWS does not document, and the sandbox assumes: a retry from a reported checkpoint uses
up one retry of MaximumRetryAttempts, while a cut at the returned sequence number (bisecting
on) uses none, as a bisect split does; a cut at the batch's first record cuts nothing, so it
is an ordinary retry. A retry from the checkpoint carries the batch's records from there on
(records that arrived meanwhile wait for the next batch), as a whole-batch retry carries the
same records. How long Lambda waits before retrying is the ``retry_backoff`` setting.
"""
from __future__ import annotations

import json
from abc import abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, ClassVar, Required, TypedDict

from ..aws.event_shapes import ShardRecord
from ..aws.gateway import Served, json_answer
from ..errors import BadInput, SandboxError
from ..events import iso_millis
from ..settings import Config, Setting, param
from ..vocab import Cause, Delivery, Outcome
from .async_invoke import read_queue
from .base import Source
from .sqs import BadBatch, ignored_partial_response, read_partial_response

if TYPE_CHECKING:
    from ..runtime.functions import Invocation, LambdaFunction
    from ..world import Sandbox

DOC_KINESIS = "https://docs.aws.amazon.com/lambda/latest/dg/with-kinesis.html"
DOC_PARAMETERS = "https://docs.aws.amazon.com/lambda/latest/dg/services-kinesis-parameters.html"
DOC_ON_FAILURE = "https://docs.aws.amazon.com/lambda/latest/dg/kinesis-on-failure-destination.html"
DOC_PARTIAL = "https://docs.aws.amazon.com/lambda/latest/dg/services-kinesis-batchfailurereporting.html"
#: The request id of a GetRecords the sandbox answers itself (``ShardSource.answer_drained_polls``): a fixed one, since
#: one drawn from the world's seeded generator would change everything drawn after it.
DRAINED_REQUEST_ID = "00000000-0000-4000-8000-00000000d7a1"


class GetRecordsRequest(TypedDict, total=False):
    """GetRecords' parameters, the same for Kinesis and DynamoDB Streams
    (https://docs.aws.amazon.com/kinesis/latest/APIReference/API_GetRecords.html)."""

    ShardIterator: Required[str]
    Limit: int


@dataclass(frozen=True)
class ShardMapping(Config):
    """The settings every stream event source mapping has (Kinesis's pages cited; see ``CITES``)."""

    batch_size: int = param(100, "BatchSize: most records per invocation", DOC_PARAMETERS, 1, 10_000, aws="BatchSize")
    maximum_retry_attempts: int = param(
        -1, "MaximumRetryAttempts: retries before a failed batch is discarded (-1: until the records expire)",
        DOC_PARAMETERS, -1, 10_000, aws="MaximumRetryAttempts")
    maximum_record_age: int = param(
        -1, "MaximumRecordAgeInSeconds: older records are discarded (-1: kept until they expire from the stream)",
        DOC_PARAMETERS, -1, 604_800, aws="MaximumRecordAgeInSeconds")
    bisect_batch_on_function_error: bool = param(
        False, "BisectBatchOnFunctionError: split a failed batch in two and retry each half (a split does not use "
        "up a retry)", DOC_ON_FAILURE, aws="BisectBatchOnFunctionError")
    report_batch_item_failures: bool = param(
        False, "FunctionResponseTypes=[ReportBatchItemFailures]: the handler may return batchItemFailures; Lambda "
        "checkpoints at the lowest failed sequence number and retries every record from there (AWS: off unless set)",
        DOC_PARTIAL, aws="ReportBatchItemFailures")
    on_failure_destination: bool = param(
        True, "describe discarded batches to an SQS queue (AWS has none unless you configure one)", DOC_ON_FAILURE)
    poll_interval: float = param(1.0, "seconds between polls of a shard with nothing new (Lambda: about once a "
                                 "second)", DOC_KINESIS, 0.001, 3600)
    retry_backoff: float = param(1.0, "seconds before a failed batch is tried again (AWS does not document it)",
                                 None, 0.001, 3600)

    #: The page that says the same for this mapping's service, for each page cited above.
    CITES: ClassVar[dict[str | None, str]] = {}

    @classmethod
    def settings(cls, **defaults: Any) -> tuple[Setting, ...]:
        return tuple(replace(s, doc=cls.CITES.get(s.doc, s.doc)) for s in super().settings(**defaults))

    def check(self) -> None:
        if 0 <= self.maximum_record_age < 60:
            # The API reference says -1 or more, but the console and CloudFormation refuse 0 to 59.
            raise BadInput(f"setting maximum_record_age (MaximumRecordAgeInSeconds) is -1 (the stream's retention) "
                           f"or 60 to 604800 seconds, got {self.maximum_record_age} "
                           f"({self.CITES.get(DOC_PARAMETERS, DOC_PARAMETERS)})")

    @property
    def retry_limit(self) -> int:
        """The retries a failed batch gets before it is discarded (-1: until its records expire)."""
        return self.maximum_retry_attempts

    @property
    def retention_seconds(self) -> float:
        """How long the stream keeps a record (24 hours unless a subclass says otherwise)."""
        return 24 * 3600.0

    @property
    def age_limit(self) -> float:
        """Seconds after arrival at which a record is given up: the record age, else retention."""
        retention = self.retention_seconds
        return min(retention, float(self.maximum_record_age)) if self.maximum_record_age >= 0 else retention


@dataclass
class Batch:
    records: list[dict]  # GetRecords records, in shard order
    attempt: int = 1  # 1 for the first delivery of these records, 2 for the first retry, ...
    retries: int = 0  # retries used up; a bisect split does not use one
    prev: str | None = None  # the failed invocation this batch repeats
    split: bool = False  # a half of a failed batch, sent on its own (BisectBatchOnFunctionError)


@dataclass
class Shard:
    shard_id: str
    index: int
    checkpoint: int = 0  # sequence number (as moto counts) of the last record handled or discarded
    resolved: int = 0  # records handled or discarded
    task: Any = None


class ShardSource(Source):
    """One poller per shard of a stream, invoking a function as Lambda's stream mappings do.

    A subclass creates its stream in ``__init__`` (setting ``shards`` and ``stream_arn``) and
    says how to read it: ``_iterator``, ``_get_records``, ``record_counts`` and, per record,
    ``seq``, ``aws_seq``, ``arrival``, ``key`` and ``event_record``.
    """

    function: LambdaFunction  # it invokes one

    #: The field of an on-failure message that describes the batch.
    batch_info = ""

    def __init__(self, world: "Sandbox", function: "LambdaFunction", mapping: ShardMapping, queue_name: str):
        super().__init__(world, function)
        self.mapping = mapping
        self.shards: list[Shard] = []
        self.stream_arn = ""
        self.queue_name = queue_name
        self.queue_url = self.queue_arn = None
        self.carried: dict[tuple[int, int], str] = {}  # (shard index, seq) -> the last invocation it reached
        self.first_of: dict[str, tuple[int, int]] = {}  # order key -> (shard index, seq) of its first record
        if mapping.on_failure_destination:
            with world.gateway.unrecorded():
                self.queue_url = world.sqs.create_queue(QueueName=queue_name)["QueueUrl"]
                self.queue_arn = world.sqs.get_queue_attributes(
                    QueueUrl=self.queue_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]

    # -- what a subclass says about its service ------------------------------------------------
    @abstractmethod
    def _iterator(self, shard: Shard, kind: str, sequence: int | str | None = None) -> str:
        """A shard iterator of this type (TRIM_HORIZON, AT_/AFTER_SEQUENCE_NUMBER)."""

    @abstractmethod
    def _get_records(self, iterator: str, limit: int | None) -> dict:
        """One GetRecords page: ``{"Records": [...], "NextShardIterator": ...}``."""

    @abstractmethod
    def record_counts(self) -> dict[str, int]:
        """How many records each shard holds now (read without a request)."""

    @abstractmethod
    def seq(self, record: dict) -> int:
        """The record's sequence number, as the service's GetShardIterator takes it."""

    @abstractmethod
    def aws_seq(self, shard: Shard, record: dict) -> str:
        """The record's sequence number as the function sees it (its ``itemIdentifier``)."""

    @abstractmethod
    def arrival(self, record: dict) -> float:
        """When the record reached the stream (Unix seconds)."""

    @abstractmethod
    def key(self, record: dict) -> str:
        """The orderId the record carries."""

    @abstractmethod
    def event_record(self, shard: Shard, record: dict) -> ShardRecord:
        """The record as one entry of the event's ``Records``."""

    def event(self, shard: Shard, records: list[dict]) -> dict:
        """The event a batch of the shard's records makes (Kinesis and DynamoDB Streams: ``Records``)."""
        return {"Records": [self.event_record(shard, r) for r in records]}

    def first_cause(self, shard: Shard, batch: Batch) -> tuple[str, str | None]:
        """(cause, prev) of a batch's first delivery; a subclass may see more than a first delivery."""
        return Cause.FIRST_DELIVERY, None

    def repeats(self, shard: Shard, record: dict) -> bool:
        """Is this record not the first the stream holds for its order?"""
        first = self.first_of.get(self.key(record))
        return first is not None and first != (shard.index, self.seq(record))

    def carrier(self, key: str) -> str | None:
        """The last invocation that carried the first record of order ``key`` (None: none yet)."""
        first = self.first_of.get(key)
        return self.carried.get(first) if first is not None else None

    # -- polls with nothing to read ------------------------------------------------------------------
    def answer_drained_polls(self, service: str, empty: Mapping[str, object]) -> None:
        """Answer, in the sandbox, each GetRecords at an iterator with nothing to read: ``empty`` (the service's
        empty page) and the same iterator to read on from.

        Lambda polls a shard once a second (four times for a DynamoDB stream), and a run that waits (for a TTL
        sweep, a late re-send) polls hundreds of times; moto took a couple of milliseconds for each (a DynamoDB
        Streams one also made a new iterator of 472 random bytes, kept for good). The request is still a request:
        the history, faults and listeners see it as before, so a run's history does not change."""
        def drained(params: dict, forward: Callable[[], Served]) -> Served:
            if self.unread_at(params.get("ShardIterator")) != 0:
                return forward()
            return json_answer({**empty, "Records": [], "NextShardIterator": params["ShardIterator"]},
                               DRAINED_REQUEST_ID)

        self.world.gateway.serve_locally(service, "GetRecords", drained)

    def unread_at(self, iterator: Any) -> int | None:
        """How many records a GetRecords at ``iterator`` would read now (None: not known here, ask the service)."""
        return None

    # -- the lifecycle -----------------------------------------------------------------------------
    def start(self) -> "ShardSource":
        """Start one poller per shard (daemon tasks: they do not keep the world running)."""
        for shard in self.shards:
            if shard.task is None:
                shard.task = self.world.scheduler.spawn(self._poll, shard, name=f"stream-poller/{shard.shard_id}",
                                                        daemon=True)
        return self

    def idle(self) -> bool:
        """Every record in the stream so far has been handled or discarded."""
        counts = self.record_counts()
        return all(s.resolved >= counts.get(s.shard_id, 0) for s in self.shards)

    def finish(self) -> None:
        """Report the records still in the stream (unread, or blocked behind a failing batch) as pending."""
        for shard in self.shards:
            left = self._read(shard, "AFTER_SEQUENCE_NUMBER", shard.checkpoint, None, recorded=False)
            if left:
                self.pending([self.key(r) for r in left], "still in the stream when the run stopped",
                             shard=shard.shard_id, records=len(left))

    def failure_records(self) -> list[dict]:
        """The on-failure destination's messages (parsed JSON), looked at without receiving them."""
        return read_queue(self.world, self.queue_name) if self.queue_url else []

    # -- the poller ---------------------------------------------------------------------------------
    def _poll(self, shard: Shard) -> None:
        sched, m = self.world.scheduler, self.mapping
        iterator = self._iterator(shard, "TRIM_HORIZON")
        while True:
            page = self._get_records(iterator, m.batch_size)
            iterator = page["NextShardIterator"]
            if not page["Records"]:
                sched.sleep(m.poll_interval, label="poll")
                continue
            if self._deliver(shard, page["Records"]):
                # The batch needed retries; on AWS the old iterator may have expired meanwhile.
                iterator = self._iterator(shard, "AFTER_SEQUENCE_NUMBER", shard.checkpoint)
            # Records were waiting: read again at once, as Lambda does until it catches up.

    def _deliver(self, shard: Shard, records: list[dict]) -> bool:
        """Invoke until the batch is handled or discarded; True if anything was retried."""
        todo = [Batch(records)]
        retried = False
        while todo:
            batch = todo[0]
            expired = self._expired(batch)
            if expired:
                self._discard(shard, Batch(batch.records[:expired], batch.attempt, batch.retries, batch.prev),
                              "RecordAgeExceeded", invocations=batch.attempt - 1)
                batch.records = batch.records[expired:]
                if not batch.records:
                    todo.pop(0)
                    continue
            if batch.attempt > 1:
                retried = True
                batch.records = self._reread(shard, batch)
            inv = self._invoke(shard, batch)
            todo.pop(0)
            if self._settle(shard, batch, inv, todo):
                self.world.scheduler.sleep(self.mapping.retry_backoff, label="retry backoff")
        return retried

    def _invoke(self, shard: Shard, batch: Batch) -> "Invocation":
        """Hand the batch to the function, as the service's event records."""
        if batch.attempt > 1:
            # Numbered as MaximumRetryAttempts counts them: a bisect half is no retry
            # (https://docs.aws.amazon.com/lambda/latest/dg/kinesis-on-failure-destination.html).
            cause = Cause.BISECT_HALF if batch.split else Cause.retry(batch.retries)
            prev = batch.prev
        else:
            for r in batch.records:
                self.first_of.setdefault(self.key(r), (shard.index, self.seq(r)))
            cause, prev = self.first_cause(shard, batch)
        event = self.event(shard, batch.records)
        inv = self.function.invoke(event, source=self.kind, keys=self._keys(batch.records), prev=prev, cause=cause)
        for r in batch.records:
            self.carried[(shard.index, self.seq(r))] = inv.id
        return inv

    def _settle(self, shard: Shard, batch: Batch, inv: "Invocation", todo: list[Batch]) -> bool:
        """Move past the batch, or retry (part of) it, or discard it; True if something will be tried again."""
        if inv.outcome != Outcome.OK:
            return self._after_failure(shard, batch, inv, todo)
        cut, bad = self._reported(shard, batch, inv.result)
        if bad is not None:
            return self._after_failure(shard, batch, inv, todo, bad)
        if cut is None:
            self._advance(shard, batch.records)
            return False
        return self._after_partial(shard, batch, inv, cut, todo)

    # -- partial batch responses ----------------------------------------------------------------------
    def _reported(self, shard: Shard, batch: Batch, result: Any) -> tuple[int | None, BadBatch | None]:
        """(index of the lowest record named in batchItemFailures, or None), or why the whole batch failed
        (the ``batch failed`` record's detail, as ``read_partial_response`` gives it)."""
        if not self.mapping.report_batch_item_failures:
            ignored_partial_response(self.world, result)
            return None, None  # the response is ignored unless the mapping asks for it
        position = {self.aws_seq(shard, r): i for i, r in enumerate(batch.records)}
        named, bad = read_partial_response(result, list(position), "a sequence number")
        if bad is not None:
            return None, bad
        return (min(position[ident] for ident in named) if named else None), None

    def _after_partial(self, shard: Shard, batch: Batch, inv: "Invocation", cut: int, todo: list[Batch]) -> bool:
        """Checkpoint before the lowest failed record and retry from it, the records after it included."""
        m = self.mapping
        done, rest = batch.records[:cut], batch.records[cut:]
        if done:
            self._advance(shard, done)
        failed = self._keys([r for r in rest if self.aws_seq(shard, r) in _reported_ids(inv.result)])
        checkpoint = self.aws_seq(shard, rest[0])
        bisected = m.bisect_batch_on_function_error and cut > 0
        self.world.record_delivery(self.kind, Delivery.BATCH_FAILED, keys=failed, inv=inv.id, detail={
            **self._span(shard, rest), "attempt": batch.attempt, "partial": True, "checkpoint": checkpoint,
            "bisected": bisected, "retried": self._keys(rest),
            "reason": "reported in batchItemFailures: Lambda retries every record from the lowest one reported"})
        if bisected:
            # "bisected at the returned sequence number": the rest, without using up a retry
            again = Batch(rest, batch.attempt + 1, batch.retries, inv.id, split=True)
            extra = {"cut_at": checkpoint}
        elif m.retry_limit != -1 and batch.retries >= m.retry_limit:
            self._discard(shard, Batch(rest, batch.attempt, batch.retries, inv.id), "RetryAttemptsExhausted",
                          invocations=batch.attempt)
            return False
        else:
            again = Batch(rest, batch.attempt + 1, batch.retries + 1, inv.id)
            extra = {"from": checkpoint}
        todo.insert(0, again)
        self._note_retry(shard, again, inv.id, extra)
        return True

    # -- failures -------------------------------------------------------------------------------------
    def _after_failure(self, shard: Shard, batch: Batch, inv: "Invocation", todo: list[Batch],
                       bad: BadBatch | None = None) -> bool:
        """Split the failed batch, retry it or discard it; True if something will be tried again."""
        m = self.mapping
        detail = {**self._span(shard, batch.records), "attempt": batch.attempt, "outcome": inv.outcome,
                  "error": inv.error_text, **(bad or {})}
        self.world.record_delivery(self.kind, Delivery.BATCH_FAILED, keys=self._keys(batch.records), inv=inv.id,
                                   detail=detail)
        if m.bisect_batch_on_function_error and len(batch.records) > 1:
            half = (len(batch.records) + 1) // 2
            halves = [Batch(part, batch.attempt + 1, batch.retries, inv.id, split=True)
                      for part in (batch.records[:half], batch.records[half:])]
            todo[:0] = halves
            for n, h in enumerate(halves, 1):
                self._note_retry(shard, h, inv.id, {"bisect": f"half {n} of {len(batch.records)} records"},
                                 soon=n == 1)
        elif m.retry_limit != -1 and batch.retries >= m.retry_limit:
            self._discard(shard, replace(batch, prev=inv.id), "RetryAttemptsExhausted", invocations=batch.attempt)
            return False
        else:
            again = Batch(batch.records, batch.attempt + 1, batch.retries + 1, inv.id)
            todo.insert(0, again)
            self._note_retry(shard, again, inv.id, {})
        return True

    def _note_retry(self, shard: Shard, batch: Batch, failed: str, extra: dict, soon: bool = True) -> None:
        sb = self.world
        # The second half of a split waits for the first, so its start time is not known yet.
        when = {"at": round(sb.clock.elapsed() + self.mapping.retry_backoff, 6)} if soon else {}
        sb.record_delivery(self.kind, Delivery.RETRY_SCHEDULED, keys=self._keys(batch.records), inv=failed,
                           detail={**self._span(shard, batch.records), "attempt": batch.attempt, **when, **extra})

    def _advance(self, shard: Shard, records: list[dict]) -> None:
        shard.checkpoint = self.seq(records[-1])
        shard.resolved += len(records)

    def _expired(self, batch: Batch) -> int:
        """How many records at the front of the batch are too old to deliver."""
        now, limit = self.world.clock.now(), self.mapping.age_limit
        count = 0
        for r in batch.records:
            if now - self.arrival(r) < limit - 1e-9:
                break
            count += 1
        return count

    def _discard_reason(self, condition: str, invocations: int) -> str:
        m = self.mapping
        if condition == "RetryAttemptsExhausted":
            limit = (f"MaximumRetryAttempts={m.maximum_retry_attempts}" if m.retry_limit == m.maximum_retry_attempts
                     else f"{m.retry_limit} retries (MaximumRetryAttempts={m.maximum_retry_attempts} with an "
                          f"on-failure destination)")
            return f"discarded after {invocations} attempt{'s' if invocations != 1 else ''}: {limit}"
        if 0 <= m.maximum_record_age <= m.retention_seconds:
            return f"discarded: older than MaximumRecordAgeInSeconds={m.maximum_record_age}"
        return f"expired: older than the stream's {m.retention_seconds / 3600:g} h retention period"

    def _discard(self, shard: Shard, batch: Batch, condition: str, invocations: int) -> None:
        """Give the batch up: describe it to the on-failure destination and move past it."""
        sb = self.world
        span = self._span(shard, batch.records)
        reason = self._discard_reason(condition, invocations)
        message = {
            "requestContext": {"requestId": sb.new_uuid(), "functionArn": self.function.config.arn,
                               "condition": condition, "approximateInvokeCount": invocations},
            "version": "1.0",
            "timestamp": iso_millis(sb.clock.now()),
            self.batch_info: self.describe_batch(shard, batch, span),
        }
        if invocations:  # records that never reached the function carry no response
            message["responseContext"] = {"statusCode": 200, "executedVersion": self.function.config.version,
                                          "functionError": "Unhandled"}
        if self.queue_url is not None:
            sb.sqs.send_message(QueueUrl=self.queue_url, MessageBody=json.dumps(message, sort_keys=True))
            reason += f"; described to the on-failure destination {self.queue_name}"
        sb.record_delivery(self.kind, Delivery.DISCARDED, keys=self._keys(batch.records), inv=batch.prev,
                           detail={**span, "condition": condition, "reason": reason})
        self._advance(shard, batch.records)

    def describe_batch(self, shard: Shard, batch: Batch, span: dict) -> dict:
        """What an on-failure record says of the discarded batch (never its data)."""
        return {
            "shardId": shard.shard_id,
            "startSequenceNumber": span["start"],
            "endSequenceNumber": span["end"],
            "approximateArrivalOfFirstRecord": iso_millis(self.arrival(batch.records[0])),
            "approximateArrivalOfLastRecord": iso_millis(self.arrival(batch.records[-1])),
            "batchSize": len(batch.records),
            "streamArn": self.stream_arn,
        }

    # -- reading the stream ---------------------------------------------------------------------------
    def _read(self, shard: Shard, kind: str, sequence: int | str | None, limit: int | None,
              recorded: bool = True) -> list[dict]:
        if not recorded:
            with self.world.gateway.unrecorded():
                return self._read(shard, kind, sequence, limit)
        if kind == "AFTER_SEQUENCE_NUMBER" and int(sequence or 0) == 0:
            kind, sequence = "TRIM_HORIZON", None
        return self._get_records(self._iterator(shard, kind, sequence), limit)["Records"]

    def _reread(self, shard: Shard, batch: Batch) -> list[dict]:
        """Read the same records again from the batch's first sequence number, as a retry does."""
        again = self._read(shard, "AT_SEQUENCE_NUMBER", self.seq(batch.records[0]), len(batch.records))
        if [self.seq(r) for r in again] != [self.seq(r) for r in batch.records]:
            raise SandboxError(f"re-reading {shard.shard_id} from {self.seq(batch.records[0])} did not return the "
                               f"same records")
        return again

    def _span(self, shard: Shard, records: list[dict]) -> dict:
        return {"shard": shard.shard_id, "start": self.aws_seq(shard, records[0]),
                "end": self.aws_seq(shard, records[-1]), "size": len(records)}

    def _keys(self, records: list[dict]) -> list[str]:
        return list(dict.fromkeys(self.key(r) for r in records))


def _reported_ids(result: Any) -> set[str]:
    """The itemIdentifiers of a (valid) partial batch response."""
    return {item["itemIdentifier"] for item in result["batchItemFailures"]}


__all__ = ["Batch", "Shard", "ShardMapping", "ShardSource", "DOC_KINESIS", "DOC_PARAMETERS", "DOC_ON_FAILURE",
           "DOC_PARTIAL"]
