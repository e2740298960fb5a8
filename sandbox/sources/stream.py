"""The Kinesis event source mapping: one poller per shard, on moto's real Kinesis.

What it models, from the AWS documentation (the mapping's retries, bisecting, partial
batch responses and on-failure destination are the stream mappings' common ground, in
``shards.py``):

- Lambda polls each shard about once a second and, while records are waiting, keeps
  reading batches until it catches up; it invokes the function synchronously with one
  batch from one shard at a time (https://docs.aws.amazon.com/lambda/latest/dg/with-kinesis.html).
- A stream keeps records 24 hours by default
  (https://docs.aws.amazon.com/streams/latest/dev/kinesis-extended-retention.html).
- Every PutRecord that reaches the stream is a record with its own sequence number, even
  when a producer's SDK re-sends one whose first attempt had worked: the event's ``eventID``
  (shard and sequence number) tells the two copies apart, it does not make them one
  (https://docs.aws.amazon.com/streams/latest/dev/kinesis-record-processor-duplicates.html).

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
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..aws import adapter
from ..aws.event_shapes import KinesisRecord
from ..errors import BadInput
from ..events import Order, kinesis_record
from ..settings import param
from ..vocab import Cause, SourceKind
from .shards import (
    DOC_KINESIS,
    DOC_ON_FAILURE,
    DOC_PARAMETERS,
    DOC_PARTIAL,
    Batch,
    GetRecordsRequest,
    Shard,
    ShardMapping,
    ShardSource,
)

if TYPE_CHECKING:
    from ..runtime.functions import LambdaFunction
    from ..world import Sandbox

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
class StreamMapping(ShardMapping):
    """The settings of one Kinesis event source mapping, and of its stream."""

    shards: int = param(1, "how many shards the stream has; each is read in order by its own poller", None, 1, 64)
    retention_hours: int = param(24, "the stream's retention period; with the defaults, a failing record blocks "
                                 "its shard until then", DOC_RETENTION, 24, 8760)
    stream_name: str = "orders"
    queue_name: str = "orders-stream-failures"

    @property
    def retention_seconds(self) -> float:
        return self.retention_hours * 3600.0


class StreamSource(ShardSource):
    """A Kinesis stream, a producer that writes orders to it, and Lambda's mapping that reads it.

        src = StreamSource(sb, fn, StreamMapping(batch_size=10))
        src.put(order)      # accept the order and PutRecord it (partition key = orderId)
        src.start()         # one poller per shard, as daemon tasks
        sb.run(stop_when=src.idle)
        src.finish()        # records still in the stream are reported "pending"

    A producer task of its own (``sources.producer.KinesisProducer``) may write instead of ``put``.
    """

    kind = SourceKind.STREAM
    batch_info = "KinesisBatchInfo"
    mapping: StreamMapping

    def __init__(self, world: "Sandbox", function: "LambdaFunction", mapping: StreamMapping | None = None,
                 **settings: Any):
        mapping = mapping or StreamMapping(**settings)
        super().__init__(world, function, mapping, mapping.queue_name)
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
        self.shards = [Shard(sid, i) for i, sid in enumerate(sorted(shard_ids))]
        self.answer_drained_polls("kinesis", {"MillisBehindLatest": 0})

    # -- producing -----------------------------------------------------------------------
    def put(self, order: Order) -> dict:
        """Accept ``order`` (it is owed its effects) and write it to the stream, keyed by orderId."""
        if not isinstance(order, dict) or "orderId" not in order:
            raise BadInput(f"a stream record here carries an order (a dict with orderId), got {order!r}")
        self.world.accept(order, source=self.kind)
        response = self.world.kinesis.put_record(StreamName=self.mapping.stream_name,
                                                 PartitionKey=str(order["orderId"]),
                                                 Data=json.dumps(order).encode())
        self.sent += 1
        return response

    def sequence_numbers_of(self, key: str) -> list[str]:
        """The sequence numbers (as events show them) of every record in the stream for order ``key``."""
        found = []
        for shard in self.shards:
            for r in self._read(shard, "TRIM_HORIZON", None, None, recorded=False):
                if self.key(r) == key:
                    found.append(self.aws_seq(shard, r))
        return found

    # -- reading Kinesis -------------------------------------------------------------------
    def _iterator(self, shard: Shard, kind: str, sequence: int | str | None = None) -> str:
        params: dict[str, str] = {"StreamName": self.mapping.stream_name, "ShardId": shard.shard_id,
                                  "ShardIteratorType": kind}  # GetShardIterator's, every one a string
        if sequence is not None:
            params["StartingSequenceNumber"] = str(sequence)
        return self.world.kinesis.get_shard_iterator(**params)["ShardIterator"]

    def _get_records(self, iterator: str, limit: int | None) -> dict:
        params: GetRecordsRequest = {"ShardIterator": iterator}
        if limit is not None:
            params["Limit"] = limit
        return self.world.kinesis.get_records(**params)

    def record_counts(self) -> dict[str, int]:
        return adapter.kinesis_record_counts(self.world.region, self.mapping.stream_name)

    def unread_at(self, iterator: Any) -> int | None:
        return adapter.kinesis_unread(self.world.region, iterator)

    def seq(self, record: dict) -> int:
        return int(record["SequenceNumber"])

    def aws_seq(self, shard: Shard, record: dict) -> str:
        return aws_sequence_number(record["SequenceNumber"], shard.index)

    def arrival(self, record: dict) -> float:
        stamp = record["ApproximateArrivalTimestamp"]
        return stamp.timestamp() if hasattr(stamp, "timestamp") else float(stamp)

    def key(self, record: dict) -> str:
        try:
            return str(json.loads(record["Data"])["orderId"])
        except (ValueError, TypeError, KeyError):
            return str(record["PartitionKey"])

    def event_record(self, shard: Shard, record: dict) -> KinesisRecord:
        """A Kinesis record with an AWS-looking sequence number."""
        return kinesis_record({**record, "SequenceNumber": self.aws_seq(shard, record)}, shard.shard_id,
                              self.stream_arn, self.function.config.arn, self.world.region)

    def first_cause(self, shard: Shard, batch: Batch) -> tuple[str, str | None]:
        """A second record for an order already in the stream: the producer wrote it twice."""
        copies = [r for r in batch.records if self.repeats(shard, r)]
        if not copies:
            return Cause.FIRST_DELIVERY, None
        return Cause.PRODUCER_RESEND, self.carrier(self.key(copies[0]))


__all__ = ["StreamMapping", "StreamSource", "aws_sequence_number", "moto_sequence_number",
           "DOC_KINESIS", "DOC_PARAMETERS", "DOC_ON_FAILURE", "DOC_PARTIAL", "DOC_RETENTION"]
