"""The Kinesis event source mapping: one poller per shard, on moto's real Kinesis.

What it models, from the AWS documentation:

- Lambda polls each shard about once a second and, while records are waiting, keeps
  reading batches until it catches up; it invokes the function synchronously with one
  batch from one shard at a time (https://docs.aws.amazon.com/lambda/latest/dg/with-kinesis.html).
- BatchSize defaults to 100, MaximumRetryAttempts and MaximumRecordAgeInSeconds to -1
  (retry until the record expires from the stream), BisectBatchOnFunctionError to false
  (https://docs.aws.amazon.com/lambda/latest/dg/services-kinesis-parameters.html).
- A function error (a timeout included) makes Lambda retry the *whole* batch, the records
  it already handled too, and nothing behind it in that shard moves until the batch
  succeeds or is discarded: order is kept per shard. Bisecting splits a failed batch in
  two and does not use up the retry quota. A discarded batch is described (shard, first
  and last sequence number, size; never the data) to the on-failure destination
  (https://docs.aws.amazon.com/lambda/latest/dg/kinesis-on-failure-destination.html).
- A stream keeps records 24 hours by default
  (https://docs.aws.amazon.com/streams/latest/dev/kinesis-extended-retention.html).

Where moto's Kinesis differs from AWS, and what this module does about it:

- moto numbers records 1, 2, 3 in each shard; AWS sequence numbers are 56-digit strings.
  Events and on-failure records show a real-looking number derived one-to-one from
  moto's (``aws_sequence_number``); the poller itself reads and re-reads moto by moto's.
- moto never trims a stream, so records never expire. The poller treats a record older
  than the retention period (or MaximumRecordAgeInSeconds) as expired itself.
- moto's GetRecords has no 5-reads-a-second limit, always returns what is there (AWS may
  return an empty page first) and its iterators never expire (AWS: after 5 minutes). The
  poller asks for a fresh iterator after every retried batch, as it would have to on AWS.
- Timestamps (ApproximateArrivalTimestamp) follow the virtual clock, and GetRecords never
  waits, so a frozen clock does not hang it (unlike SQS long polling).

AWS does not document how long Lambda waits before retrying a stream batch; here it is
the ``retry_backoff`` setting (1 s, about one poll).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from ..errors import BadInput, SandboxError
from ..events import iso_millis, kinesis_record
from ..settings import Config, param
from ..vocab import Cause, Delivery, Outcome, SourceKind
from .async_invoke import read_queue
from .base import Source

if TYPE_CHECKING:
    from ..runtime import LambdaFunction
    from ..world import Sandbox

DOC_KINESIS = "https://docs.aws.amazon.com/lambda/latest/dg/with-kinesis.html"
DOC_PARAMETERS = "https://docs.aws.amazon.com/lambda/latest/dg/services-kinesis-parameters.html"
DOC_ON_FAILURE = "https://docs.aws.amazon.com/lambda/latest/dg/kinesis-on-failure-destination.html"
DOC_RETENTION = "https://docs.aws.amazon.com/streams/latest/dev/kinesis-extended-retention.html"

#: The sequence number of the AWS documentation's sample Kinesis event; ours count up from it.
_SEQUENCE_BASE = 49590338271490256608559692538361571095921575989136588898
_SHARD_STRIDE = 10 ** 40
_RECORD_STRIDE = 10 ** 20


def aws_sequence_number(moto_sequence: str | int, shard_index: int = 0) -> str:
    """A 56-digit, AWS-looking sequence number for moto's record ``moto_sequence`` of a shard.

    One-to-one and increasing within a shard, so a handler may use it as a record's identity.
    """
    return str(_SEQUENCE_BASE + shard_index * _SHARD_STRIDE + int(moto_sequence) * _RECORD_STRIDE)


def moto_sequence_number(aws_sequence: str, shard_index: int = 0) -> str:
    """The inverse of ``aws_sequence_number``: the number moto's GetShardIterator understands."""
    offset = int(aws_sequence) - _SEQUENCE_BASE - shard_index * _SHARD_STRIDE
    if offset <= 0 or offset % _RECORD_STRIDE:
        raise BadInput(f"{aws_sequence} is not a sequence number of shard {shard_index} in this sandbox")
    return str(offset // _RECORD_STRIDE)


@dataclass(frozen=True)
class StreamMapping(Config):
    """The settings of one Kinesis event source mapping, and of its stream."""

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
    on_failure_destination: bool = param(
        True, "describe discarded batches to an SQS queue (AWS has none unless you configure one)", DOC_ON_FAILURE)
    shards: int = param(1, "how many shards the stream has; each is read in order by its own poller", None, 1, 64)
    poll_interval: float = param(1.0, "seconds between polls of a shard with nothing new (Lambda: about once a "
                                 "second)", DOC_KINESIS, 0.001, 3600)
    retry_backoff: float = param(1.0, "seconds before a failed batch is tried again (AWS does not document it)",
                                 None, 0.001, 3600)
    retention_hours: int = param(24, "the stream's retention period; with the defaults, a failing record blocks "
                                 "its shard until then", DOC_RETENTION, 24, 8760)
    stream_name: str = "orders"
    queue_name: str = "orders-stream-failures"

    def check(self) -> None:
        if 0 <= self.maximum_record_age < 60:
            # The API reference says -1 or more, but the console and CloudFormation refuse 0 to 59.
            raise BadInput(f"setting maximum_record_age (MaximumRecordAgeInSeconds) is -1 (the stream's retention) "
                           f"or 60 to 604800 seconds, got {self.maximum_record_age} ({DOC_PARAMETERS})")

    @property
    def age_limit(self) -> float:
        """Seconds after arrival at which a record is given up: the record age, else retention."""
        retention = self.retention_hours * 3600.0
        return min(retention, float(self.maximum_record_age)) if self.maximum_record_age >= 0 else retention


@dataclass
class _Batch:
    records: list[dict]  # GetRecords records, in shard order
    attempt: int = 1  # 1 for the first delivery of these records, 2 for the first retry, ...
    retries: int = 0  # retries used up; a bisect split does not use one
    prev: str | None = None  # the failed invocation this batch repeats

    @property
    def first(self) -> str:
        return self.records[0]["SequenceNumber"]

    @property
    def last(self) -> str:
        return self.records[-1]["SequenceNumber"]


@dataclass
class _Shard:
    shard_id: str
    index: int
    checkpoint: int = 0  # moto sequence number of the last record handled or discarded
    resolved: int = 0  # records handled or discarded
    task: Any = None


class StreamSource(Source):
    """A Kinesis stream, a producer that writes orders to it, and Lambda's mapping that reads it.

        src = StreamSource(sb, fn, StreamMapping(batch_size=10))
        src.put(order)      # accept the order and PutRecord it (partition key = orderId)
        src.start()         # one poller per shard, as daemon tasks
        sb.run(stop_when=src.idle)
        src.finish()        # records still in the stream are reported "pending"
    """

    kind = SourceKind.STREAM

    def __init__(self, world: "Sandbox", function: "LambdaFunction", mapping: StreamMapping | None = None,
                 **settings: Any):
        super().__init__(world, function)
        self.mapping = mapping or StreamMapping(**settings)
        self.sent = 0  # records written by put()
        sb, m = self.world, self.mapping
        with sb.gateway.unrecorded():  # setup is infrastructure, not part of the story
            sb.kinesis.create_stream(StreamName=m.stream_name, ShardCount=m.shards)
            if m.retention_hours > 24:
                sb.kinesis.increase_stream_retention_period(StreamName=m.stream_name,
                                                            RetentionPeriodHours=m.retention_hours)
            summary = sb.kinesis.describe_stream_summary(StreamName=m.stream_name)["StreamDescriptionSummary"]
            self.stream_arn = summary["StreamARN"]
            shard_ids = [s["ShardId"] for s in sb.kinesis.list_shards(StreamName=m.stream_name)["Shards"]]
            self.queue_url = self.queue_arn = None
            if m.on_failure_destination:
                self.queue_url = sb.sqs.create_queue(QueueName=m.queue_name)["QueueUrl"]
                self.queue_arn = sb.sqs.get_queue_attributes(
                    QueueUrl=self.queue_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        self.shards = [_Shard(sid, i) for i, sid in enumerate(sorted(shard_ids))]

    # -- producing -----------------------------------------------------------------------
    def put(self, order: dict) -> dict:
        """Accept ``order`` (it is owed its effects) and write it to the stream, keyed by orderId."""
        if not isinstance(order, dict) or "orderId" not in order:
            raise BadInput(f"a stream record here carries an order (a dict with orderId), got {order!r}")
        self.world.accept(order, source=self.kind)
        response = self.world.kinesis.put_record(StreamName=self.mapping.stream_name,
                                                 PartitionKey=str(order["orderId"]),
                                                 Data=json.dumps(order).encode())
        self.sent += 1
        return response

    # -- running -------------------------------------------------------------------------
    def start(self) -> "StreamSource":
        """Start one poller per shard (daemon tasks: they do not keep the world running)."""
        for shard in self.shards:
            if shard.task is None:
                shard.task = self.world.scheduler.spawn(self._poll, shard, name=f"stream-poller/{shard.shard_id}",
                                                        daemon=True)
        return self

    def idle(self) -> bool:
        """Every record written so far has been handled or discarded."""
        return sum(s.resolved for s in self.shards) >= self.sent

    def finish(self) -> None:
        """Report the records still in the stream (unread, or blocked behind a failing batch) as pending."""
        for shard in self.shards:
            left = self._read(shard, "AFTER_SEQUENCE_NUMBER", shard.checkpoint, None, recorded=False)
            if left:
                self.pending([self._key(r) for r in left], "still in the stream when the run stopped",
                             shard=shard.shard_id, records=len(left))

    def failure_records(self) -> list[dict]:
        """The on-failure destination's messages (parsed JSON), looked at without receiving them."""
        return read_queue(self.world, self.mapping.queue_name) if self.queue_url else []

    # -- the poller ------------------------------------------------------------------------
    def _poll(self, shard: _Shard) -> None:
        sched, m = self.world.scheduler, self.mapping
        iterator = self._iterator(shard, "TRIM_HORIZON")
        while True:
            page = self.world.kinesis.get_records(ShardIterator=iterator, Limit=m.batch_size)
            iterator = page["NextShardIterator"]
            if not page["Records"]:
                sched.sleep(m.poll_interval, label="poll")
                continue
            if self._deliver(shard, page["Records"]):
                # The batch needed retries; on AWS the old iterator may have expired meanwhile.
                iterator = self._iterator(shard, "AFTER_SEQUENCE_NUMBER", shard.checkpoint)
            # Records were waiting: read again at once, as Lambda does until it catches up.

    def _deliver(self, shard: _Shard, records: list[dict]) -> bool:
        """Invoke until the batch is handled or discarded; True if anything was retried."""
        todo = [_Batch(records)]
        retried = False
        while todo:
            batch = todo[0]
            expired = self._expired(batch)
            if expired:
                self._discard(shard, _Batch(batch.records[:expired], batch.attempt, batch.retries, batch.prev),
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
            if inv.outcome == Outcome.OK:
                self._advance(shard, batch)
            elif self._after_failure(shard, batch, inv, todo):
                self.world.scheduler.sleep(self.mapping.retry_backoff, label="retry backoff")
        return retried

    def _invoke(self, shard: _Shard, batch: _Batch):
        """Hand the batch to the function, as Kinesis records with AWS-looking sequence numbers."""
        event = {"Records": [kinesis_record({**r, "SequenceNumber": aws_sequence_number(r["SequenceNumber"],
                                                                                        shard.index)},
                                            shard.shard_id, self.stream_arn, self.function.config.arn,
                                            self.world.region)
                             for r in batch.records]}
        return self.function.invoke(event, source=self.kind, keys=[self._key(r) for r in batch.records],
                                    prev=batch.prev, cause=Cause.FIRST_DELIVERY if batch.attempt == 1
                                    else Cause.retry(batch.attempt - 1))

    def _after_failure(self, shard: _Shard, batch: _Batch, inv, todo: list[_Batch]) -> bool:
        """Split the failed batch, retry it or discard it; True if something will be tried again."""
        m = self.mapping
        self.world.record_delivery(self.kind, Delivery.BATCH_FAILED, keys=[self._key(r) for r in batch.records],
                                   inv=inv.id, detail={**self._span(shard, batch), "attempt": batch.attempt,
                                                       "outcome": inv.outcome, "error": inv.error_text})
        if m.bisect_batch_on_function_error and len(batch.records) > 1:
            half = (len(batch.records) + 1) // 2
            halves = [_Batch(part, batch.attempt + 1, batch.retries, inv.id)
                      for part in (batch.records[:half], batch.records[half:])]
            todo[:0] = halves
            for n, h in enumerate(halves, 1):
                self._note_retry(shard, h, inv.id, {"bisect": f"half {n} of {len(batch.records)} records"},
                                 soon=n == 1)
        elif m.maximum_retry_attempts != -1 and batch.retries >= m.maximum_retry_attempts:
            self._discard(shard, replace(batch, prev=inv.id), "RetryAttemptsExhausted", invocations=batch.attempt)
            return False
        else:
            again = _Batch(batch.records, batch.attempt + 1, batch.retries + 1, inv.id)
            todo.insert(0, again)
            self._note_retry(shard, again, inv.id, {})
        return True

    def _note_retry(self, shard: _Shard, batch: _Batch, failed: str, extra: dict, soon: bool = True) -> None:
        sb = self.world
        # The second half of a split waits for the first, so its start time is not known yet.
        when = {"at": round(sb.clock.elapsed() + self.mapping.retry_backoff, 6)} if soon else {}
        sb.record_delivery(self.kind, Delivery.RETRY_SCHEDULED,
                          keys=[self._key(r) for r in batch.records], inv=failed,
                          detail={**self._span(shard, batch), "attempt": batch.attempt, **when, **extra})

    def _advance(self, shard: _Shard, batch: _Batch) -> None:
        shard.checkpoint = int(batch.last)
        shard.resolved += len(batch.records)

    def _expired(self, batch: _Batch) -> int:
        """How many records at the front of the batch are too old to deliver."""
        now, limit = self.world.clock.now(), self.mapping.age_limit
        count = 0
        for r in batch.records:
            if now - _arrival(r) < limit - 1e-9:
                break
            count += 1
        return count

    def _discard(self, shard: _Shard, batch: _Batch, condition: str, invocations: int) -> None:
        """Give the batch up: describe it to the on-failure destination and move past it."""
        sb, m = self.world, self.mapping
        span = self._span(shard, batch)
        if condition == "RetryAttemptsExhausted":
            reason = (f"discarded after {invocations} attempt{'s' if invocations != 1 else ''}: "
                      f"MaximumRetryAttempts={m.maximum_retry_attempts}")
        elif m.maximum_record_age >= 0 and m.maximum_record_age <= m.retention_hours * 3600:
            reason = f"discarded: older than MaximumRecordAgeInSeconds={m.maximum_record_age}"
        else:
            reason = f"expired: older than the stream's {m.retention_hours} h retention period"
        first, last = _arrival(batch.records[0]), _arrival(batch.records[-1])
        message = {
            "requestContext": {"requestId": sb.new_uuid(), "functionArn": self.function.config.arn,
                               "condition": condition, "approximateInvokeCount": invocations},
            "version": "1.0",
            "timestamp": iso_millis(sb.clock.now()),
            "KinesisBatchInfo": {
                "shardId": shard.shard_id,
                "startSequenceNumber": span["start"],
                "endSequenceNumber": span["end"],
                "approximateArrivalOfFirstRecord": iso_millis(first),
                "approximateArrivalOfLastRecord": iso_millis(last),
                "batchSize": len(batch.records),
                "streamArn": self.stream_arn,
            },
        }
        if invocations:  # records that never reached the function carry no response
            message["responseContext"] = {"statusCode": 200, "executedVersion": self.function.config.version,
                                          "functionError": "Unhandled"}
        if self.queue_url is not None:
            sb.sqs.send_message(QueueUrl=self.queue_url, MessageBody=json.dumps(message, sort_keys=True))
            reason += f"; described to the on-failure destination {m.queue_name}"
        sb.record_delivery(self.kind, Delivery.DISCARDED, keys=[self._key(r) for r in batch.records],
                           inv=batch.prev, detail={**span, "condition": condition, "reason": reason})
        self._advance(shard, batch)

    # -- reading the stream ------------------------------------------------------------------
    def _iterator(self, shard: _Shard, kind: str, sequence: int | str | None = None) -> str:
        params = {"StreamName": self.mapping.stream_name, "ShardId": shard.shard_id, "ShardIteratorType": kind}
        if sequence is not None:
            params["StartingSequenceNumber"] = str(sequence)
        return self.world.kinesis.get_shard_iterator(**params)["ShardIterator"]

    def _read(self, shard: _Shard, kind: str, sequence: int | str | None, limit: int | None,
              recorded: bool = True) -> list[dict]:
        if not recorded:
            with self.world.gateway.unrecorded():
                return self._read(shard, kind, sequence, limit)
        if kind == "AFTER_SEQUENCE_NUMBER" and int(sequence or 0) == 0:
            kind, sequence = "TRIM_HORIZON", None
        params = {"ShardIterator": self._iterator(shard, kind, sequence)}
        if limit is not None:
            params["Limit"] = limit
        return self.world.kinesis.get_records(**params)["Records"]

    def _reread(self, shard: _Shard, batch: _Batch) -> list[dict]:
        """Read the same records again from the batch's first sequence number, as a retry does."""
        again = self._read(shard, "AT_SEQUENCE_NUMBER", batch.first, len(batch.records))
        if [r["SequenceNumber"] for r in again] != [r["SequenceNumber"] for r in batch.records]:
            raise SandboxError(f"re-reading {shard.shard_id} from {batch.first} did not return the same records")
        return again

    def _span(self, shard: _Shard, batch: _Batch) -> dict:
        return {"shard": shard.shard_id, "start": aws_sequence_number(batch.first, shard.index),
                "end": aws_sequence_number(batch.last, shard.index), "size": len(batch.records)}

    @staticmethod
    def _key(record: dict) -> str:
        try:
            return str(json.loads(record["Data"])["orderId"])
        except (ValueError, TypeError, KeyError):
            return str(record["PartitionKey"])


def _arrival(record: dict) -> float:
    stamp = record["ApproximateArrivalTimestamp"]
    return stamp.timestamp() if hasattr(stamp, "timestamp") else float(stamp)


__all__ = ["StreamMapping", "StreamSource", "aws_sequence_number", "moto_sequence_number",
           "DOC_KINESIS", "DOC_PARAMETERS", "DOC_ON_FAILURE", "DOC_RETENTION"]
