"""Lambda's Kafka event source mapping (Amazon MSK or self-managed Apache Kafka), on partition logs the world keeps.

There is no Kafka broker in the sandbox and moto has no Kafka data plane: this module keeps each
partition's log itself (offsets from 0, a timestamp, a key and a value per record), as a broker
would, and reads it as Lambda's poller does. The stream mappings' way of working (``shards.py``)
fits: one poller per partition, one batch of one partition at a time, in order. What AWS documents:

- "Lambda reads messages sequentially for each Kafka topic partition." "After Lambda processes each
  batch, it commits the offsets of the messages in that batch. If your function returns an error for
  any of the messages in a batch, Lambda retries the whole batch of messages until processing succeeds
  or the messages expire" (https://docs.aws.amazon.com/lambda/latest/dg/with-msk-configure.html).
- The event groups records by "topic-partition", each with its offset, a timestamp in milliseconds
  and a base64 key and value (https://docs.aws.amazon.com/lambda/latest/dg/with-msk.html;
  self-managed clusters: "SelfManagedKafka", https://docs.aws.amazon.com/lambda/latest/dg/with-kafka.html).
- The error handling controls (retry attempts, default -1 and so "infinite"; maximum record age, -1 or
  60 to 604,800 s; split batch on error; ``ReportBatchItemFailures``) are set in provisioned mode
  (https://docs.aws.amazon.com/lambda/latest/dg/kafka-retry-configurations.html). "When you configure
  both infinite retries and an on-failure destination, Lambda automatically applies a maximum of 10
  retry attempts" (https://docs.aws.amazon.com/lambda/latest/dg/kafka-on-failure-destination.html).
- A partial batch response names each failed record as ``{"partition": "<topic>-<n>", "offset": <n>}``,
  "allowing Lambda to retry just those specific items"; an empty or null answer is a success, and
  "Any invalid topic-partition_number or offset returned that was not present in the invoked event will
  be treated as failure and entire batch will be retried" (kafka-retry-configurations.html).
- The default batching window for Kafka is 500 ms
  (https://docs.aws.amazon.com/lambda/latest/api/API_CreateEventSourceMapping.html).

- A Kafka topic may be the on-failure destination instead (``kafka://<topic>``): "Lambda acts as a Kafka producer
  and writes failed records to the destination topic"; it "must exist in the same Kafka cluster as your source
  topics"; "Kafka destinations receive the actual failed records along with failure metadata"; and "Lambda prevents
  infinite loops by blocking configurations where the source and destination topics are the same"
  (https://docs.aws.amazon.com/lambda/latest/dg/kafka-on-failure-destination.html). The API takes it as
  ``DestinationConfig.OnFailure.Destination`` = ``kafka://`` and a topic name of letters, digits, ``.``, ``_`` and
  ``-`` (https://docs.aws.amazon.com/lambda/latest/api/API_OnFailure.html).

What AWS does not say, and the sandbox assumes:
- Partial responses: only the named records come again (AWS's words), not every record after the
  lowest one as on a Kinesis stream; a retry of them uses one retry attempt. With split batch on error as
  well, a partial response is still just that (AWS gives no rule for the two together).
- How long Lambda waits before a retry (``retry_backoff``), and that the poller reads again at the end of
  each batching window when a partition has nothing new.
- A record's partition is a hash of its key modulo the partition count (a Kafka producer's default
  partitioner uses murmur2; any stable hash keeps an order's records in one partition, which is what matters).
- The Kafka destination (see ``KafkaSource.write_failed``): AWS documents neither the failure metadata's format nor
  the error a same-topic destination gets. Here each failed record keeps its key and value and gets a new offset in
  the destination topic's partition for its key, a timestamp of when Lambda wrote it, and headers named
  ``sandbox-...``: the sandbox's own metadata, not AWS's. A same-topic destination is refused as an
  InvalidParameterValueException (the error CreateEventSourceMapping lists for a bad parameter), in our words.
  The destination topic is created with the source's partition count if the cluster does not have it yet.
- Topics keep records 7 days (Apache Kafka's default ``log.retention.hours`` of 168,
  https://kafka.apache.org/documentation/#brokerconfigs_log.retention.hours); past that a record expires.
"""
from __future__ import annotations

import json
import re
import zlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from ..aws.event_shapes import KafkaRecord
from ..errors import BadInput
from ..events import Order, iso_millis, kafka_record
from ..settings import Setting, param
from ..vocab import BadBatchResponse, Cause, Delivery, SourceKind
from .shards import DOC_ON_FAILURE, DOC_PARAMETERS, DOC_PARTIAL, Batch, Shard, ShardMapping, ShardSource
from .sqs import BadBatch, ignored_partial_response

if TYPE_CHECKING:
    from ..runtime.functions import Invocation, LambdaFunction
    from ..world import Sandbox

DOC_MSK = "https://docs.aws.amazon.com/lambda/latest/dg/with-msk.html"
DOC_MSK_CONFIGURE = "https://docs.aws.amazon.com/lambda/latest/dg/with-msk-configure.html"
DOC_KAFKA_RETRY = "https://docs.aws.amazon.com/lambda/latest/dg/kafka-retry-configurations.html"
DOC_KAFKA_ON_FAILURE = "https://docs.aws.amazon.com/lambda/latest/dg/kafka-on-failure-destination.html"
DOC_KAFKA_RETENTION = "https://kafka.apache.org/documentation/#brokerconfigs_log.retention.hours"
DOC_ON_FAILURE_API = "https://docs.aws.amazon.com/lambda/latest/api/API_OnFailure.html"
DOC_CREATE_ESM = "https://docs.aws.amazon.com/lambda/latest/api/API_CreateEventSourceMapping.html"
#: A Kafka destination's topic name, as the Lambda API's DestinationArn pattern takes it after "kafka://"
#: (DOC_ON_FAILURE_API; botocore's service model: ``kafka://([^.]([a-zA-Z0-9\-_.]{0,248}))``).
TOPIC_NAME = re.compile(r"[a-zA-Z0-9_\-][a-zA-Z0-9_\-.]{0,248}")
#: The headers the sandbox adds to a record it writes to a Kafka destination. AWS says "failure metadata" comes
#: with the records but not in what form: these names are the sandbox's, so a handler must not rely on them.
FAILURE_HEADERS = ("sandbox-failure-condition", "sandbox-source-topic-partition", "sandbox-source-offset",
                   "sandbox-approximate-invoke-count")
#: With infinite retries and an on-failure destination, Lambda retries at most this often (DOC_KAFKA_ON_FAILURE).
RETRIES_WITH_DESTINATION = 10


@dataclass(frozen=True)
class KafkaMapping(ShardMapping):
    """The settings of one Kafka event source mapping, and of its topic."""

    partitions: int = param(1, "how many partitions the topic has; each is read in order by its own poller", None,
                            1, 64)
    provisioned_mode: bool = param(
        False, "provisioned mode (ProvisionedPollerConfig): needed for the error handling controls (retries, record "
        "age, split batch, ReportBatchItemFailures); without it a failed batch is retried whole until its records "
        "expire", DOC_KAFKA_RETRY)
    retention_hours: int = param(168, "how long the topic keeps a record, after which Lambda's retries of it stop "
                                 "(Apache Kafka's default log.retention.hours: 7 days)", DOC_MSK_CONFIGURE, 1, 8760)
    # Declared again for its default: a Kafka mapping has no on-failure destination unless one is configured.
    on_failure_destination: bool = param(
        False, "describe discarded batches to an SQS queue: offsets and timestamps, never the records (AWS has none "
        "unless you configure one)", DOC_ON_FAILURE)
    on_failure_topic: str = param(
        "", "a Kafka topic of the same cluster as the on-failure destination (kafka://<topic>): Lambda writes the "
        "failed records themselves there, at new offsets ('': none; not the source topic)", DOC_KAFKA_ON_FAILURE,
        aws="DestinationConfig.OnFailure")
    topic: str = "orders"
    queue_name: str = "orders-kafka-failures"

    CITES: ClassVar[dict[str | None, str]] = {DOC_PARAMETERS: DOC_KAFKA_RETRY, DOC_ON_FAILURE: DOC_KAFKA_ON_FAILURE,
                                              DOC_PARTIAL: DOC_KAFKA_RETRY}

    @classmethod
    def settings(cls, **defaults: Any) -> tuple[Setting, ...]:
        # Kafka's batching window is 500 ms (API_CreateEventSourceMapping.html).
        defaults.setdefault("poll_interval", 0.5)
        return super().settings(**defaults)

    def check(self) -> None:
        super().check()
        controls = {"maximum_retry_attempts": -1, "maximum_record_age": -1, "bisect_batch_on_function_error": False,
                    "report_batch_item_failures": False}
        changed = [name for name, default in controls.items() if getattr(self, name) != default]
        if changed and not self.provisioned_mode:
            raise BadInput(f"the Kafka error handling controls ({', '.join(changed)}) are set in provisioned mode: "
                           f"turn provisioned_mode on, or leave them at their defaults ({DOC_KAFKA_RETRY})")
        if self.on_failure_topic:
            self._check_failure_topic()

    def _check_failure_topic(self) -> None:
        """A Kafka destination: a valid topic name, not the source topic, and the mapping's only destination."""
        name = self.on_failure_topic
        if not TOPIC_NAME.fullmatch(name):
            raise BadInput(f"on_failure_topic {name!r}: kafka://<topic> takes a topic name of letters, digits, '.', "
                           f"'_' and '-', not starting with '.' ({DOC_ON_FAILURE_API})")
        if name == self.topic:
            # AWS blocks it ("Recursion prevention") without documenting the error; CreateEventSourceMapping's
            # error for a bad parameter is InvalidParameterValueException. The message is ours.
            raise BadInput(f"InvalidParameterValueException: the on-failure destination kafka://{name} is the "
                           f"mapping's source topic; Lambda blocks a destination equal to a source topic, to "
                           f"prevent an infinite loop ({DOC_KAFKA_ON_FAILURE}; the error's wording is the "
                           f"sandbox's, AWS does not document it)")
        if self.on_failure_destination:
            raise BadInput(f"a mapping has one on-failure destination (DestinationConfig.OnFailure): choose the "
                           f"SQS queue (on_failure_destination) or the Kafka topic (on_failure_topic), not both "
                           f"({DOC_ON_FAILURE_API})")

    @property
    def has_destination(self) -> bool:
        """Is any on-failure destination set (an SQS queue or a Kafka topic)?"""
        return self.on_failure_destination or bool(self.on_failure_topic)

    @property
    def retry_limit(self) -> int:
        if self.maximum_retry_attempts == -1 and self.has_destination:
            return RETRIES_WITH_DESTINATION
        return self.maximum_retry_attempts

    @property
    def retention_seconds(self) -> float:
        return self.retention_hours * 3600.0


class KafkaCluster:
    """The partition logs of one Kafka cluster's topics (there is no broker here: the world keeps them).

    A mapping that reads a topic and one that reads its dead-letter topic share a cluster, as AWS requires of a
    Kafka on-failure destination (DOC_KAFKA_ON_FAILURE).
    """

    def __init__(self, world: "Sandbox"):
        self.arn = f"arn:aws:kafka:{world.region}:123456789012:cluster/orders-cluster/{world.new_uuid()}-1"
        self.bootstrap_servers = f"b-1.orders-cluster.abc123.c1.kafka.{world.region}.amazonaws.com:9092"
        self.topics: dict[str, list[list[dict]]] = {}

    def create(self, topic: str, partitions: int) -> list[list[dict]]:
        """The topic's partition logs, created empty if the cluster has no such topic yet."""
        return self.topics.setdefault(topic, [[] for _ in range(partitions)])

    def append(self, topic: str, record: dict) -> tuple[int, int]:
        """Write ``record`` (key, value, timestamp, ...) to the topic's partition for its key: (partition, offset).

        A Kafka producer's default partitioner hashes the key with murmur2; any stable hash keeps one key's
        records in one partition, which is what matters here."""
        logs = self.topics[topic]
        partition = zlib.crc32(record["key"]) % len(logs)
        log = logs[partition]
        log.append({**record, "offset": len(log)})
        return partition, len(log) - 1


class KafkaSource(ShardSource):
    """A Kafka topic, a producer that writes orders to it, and Lambda's mapping that reads it.

        src = KafkaSource(sb, fn, KafkaMapping(batch_size=10))
        src.put(order)      # accept the order and produce it (key = orderId)
        src.start()         # one poller per partition
        sb.run(stop_when=src.idle)
        src.finish()        # records still in the topic are reported "pending"
    """

    kind = SourceKind.KAFKA
    batch_info = "KafkaBatchInfo"
    mapping: KafkaMapping

    def __init__(self, world: "Sandbox", function: "LambdaFunction", mapping: KafkaMapping | None = None,
                 cluster: KafkaCluster | None = None, **settings: Any):
        mapping = mapping or KafkaMapping(**settings)
        super().__init__(world, function, mapping, mapping.queue_name)
        self.cluster = cluster or KafkaCluster(world)
        self.logs = self.cluster.create(mapping.topic, mapping.partitions)
        if mapping.on_failure_topic:
            # AWS requires the destination topic to exist in the cluster; the sandbox sets it up, as it does a queue.
            self.cluster.create(mapping.on_failure_topic, mapping.partitions)
        self.shards = [Shard(f"{mapping.topic}-{p}", p) for p in range(len(self.logs))]
        self.stream_arn = self.cluster.arn
        self.bootstrap_servers = self.cluster.bootstrap_servers
        self.sent = 0

    # -- producing -------------------------------------------------------------------------------
    def put(self, order: Order) -> dict:
        """Accept ``order`` (it is owed its effects) and produce it to the topic, keyed by orderId."""
        if not isinstance(order, dict) or "orderId" not in order:
            raise BadInput(f"a Kafka record here carries an order (a dict with orderId), got {order!r}")
        self.world.accept(order, source=self.kind)
        return self.produce(order)

    def produce(self, order: Order) -> dict:
        """Append ``order`` to its partition's log, as a broker acknowledges a write: its partition and offset.
        A producer that sends it again makes a second record, at a new offset."""
        record = {"timestamp": self.world.clock.now(), "key": str(order["orderId"]).encode(),
                  "value": json.dumps(order).encode()}
        partition, offset = self.cluster.append(self.mapping.topic, record)
        self.sent += 1
        return {"partition": partition, "offset": offset}

    # -- reading the partition logs (no AWS request: a Kafka consumer's fetch) -----------------------
    def _iterator(self, shard: Shard, kind: str, sequence: int | str | None = None) -> str:
        start = {"TRIM_HORIZON": 0, "AT_SEQUENCE_NUMBER": int(sequence or 1) - 1,
                 "AFTER_SEQUENCE_NUMBER": int(sequence or 0)}[kind]
        return f"{shard.index}:{start}"

    def _get_records(self, iterator: str, limit: int | None) -> dict:
        partition, start = (int(x) for x in iterator.split(":"))
        records = self.logs[partition][start:start + limit if limit is not None else None]
        return {"Records": records, "NextShardIterator": f"{partition}:{start + len(records)}"}

    def record_counts(self) -> dict[str, int]:
        return {shard.shard_id: len(self.logs[shard.index]) for shard in self.shards}

    def seq(self, record: dict) -> int:
        return int(record["offset"]) + 1  # the poller's checkpoints count from 1 (0: nothing read yet)

    def aws_seq(self, shard: Shard, record: dict) -> str:
        return str(record["offset"])

    def arrival(self, record: dict) -> float:
        return float(record["timestamp"])

    def key(self, record: dict) -> str:
        try:
            return str(json.loads(record["value"])["orderId"])
        except (ValueError, TypeError, KeyError):
            return record["key"].decode(errors="replace")

    def event_record(self, shard: Shard, record: dict) -> KafkaRecord:
        return kafka_record(self.mapping.topic, shard.index, record["offset"], round(record["timestamp"] * 1000),
                            record["key"], record["value"], record.get("headers", ()))

    def event(self, shard: Shard, records: list[dict]) -> dict:
        """An Amazon MSK event: one batch of one partition, under its "topic-partition" name."""
        return {"eventSource": "aws:kafka", "eventSourceArn": self.stream_arn,
                "bootstrapServers": self.bootstrap_servers,
                "records": {shard.shard_id: [self.event_record(shard, r) for r in records]}}

    def first_cause(self, shard: Shard, batch: Batch) -> tuple[str, str | None]:
        """A second record for an order already in the topic: the producer sent it twice. A record another mapping
        wrote here as its on-failure destination: the dead-letter topic, read again."""
        failed = [r for r in batch.records if "failed_by" in r]
        if failed:
            return Cause.DEAD_LETTER_TOPIC, failed[-1]["failed_by"]
        copies = [r for r in batch.records if self.repeats(shard, r)]
        if not copies:
            return Cause.FIRST_DELIVERY, None
        return Cause.PRODUCER_RESEND, self.carrier(self.key(copies[0]))

    # -- what differs from a stream: retrying only the records named --------------------------------
    def _reread(self, shard: Shard, batch: Batch) -> list[dict]:
        log = self.logs[shard.index]
        return [log[r["offset"]] for r in batch.records]

    def _advance(self, shard: Shard, records: list[dict]) -> None:
        # The records named in a partial response come back after the ones past them were handled: the
        # checkpoint never moves back.
        shard.checkpoint = max(shard.checkpoint, self.seq(records[-1]))
        shard.resolved += len(records)

    def _reported(self, shard: Shard, batch: Batch, result: Any) -> tuple[int | None, BadBatch | None]:
        if not self.mapping.report_batch_item_failures:
            ignored_partial_response(self.world, result)
            return None, None
        named, bad = read_kafka_response(result, shard.shard_id, [r["offset"] for r in batch.records])
        if bad is not None:
            return None, bad
        return (min(i for i, r in enumerate(batch.records) if r["offset"] in named) if named else None), None

    def _after_partial(self, shard: Shard, batch: Batch, inv: "Invocation", cut: int, todo: list[Batch]) -> bool:
        """Commit what succeeded; retry only the records named, or discard them once the retries are used up."""
        named, _ = read_kafka_response(inv.result, shard.shard_id, [r["offset"] for r in batch.records])
        done = [r for r in batch.records if r["offset"] not in named]
        again = [r for r in batch.records if r["offset"] in named]
        if done:
            self._advance(shard, done)
        self.world.record_delivery(self.kind, Delivery.BATCH_FAILED, keys=self._keys(again), inv=inv.id, detail={
            **self._span(shard, again), "attempt": batch.attempt, "partial": True, "retried": self._keys(again),
            "reason": "named in batchItemFailures: Lambda retries just those records"})
        limit = self.mapping.retry_limit
        if limit != -1 and batch.retries >= limit:
            self._discard(shard, Batch(again, batch.attempt, batch.retries, inv.id), "RetryAttemptsExhausted",
                          invocations=batch.attempt)
            return False
        retry = Batch(again, batch.attempt + 1, batch.retries + 1, inv.id)
        todo.insert(0, retry)
        self._note_retry(shard, retry, inv.id, {"only": [str(r["offset"]) for r in again]})
        return True

    # -- the Kafka destination ------------------------------------------------------------------------
    def _discard(self, shard: Shard, batch: Batch, condition: str, invocations: int) -> None:
        """Give the batch up: to the Kafka destination if there is one (its records), else as a stream mapping does
        (described to the SQS queue, or gone)."""
        topic = self.mapping.on_failure_topic
        if not topic:
            super()._discard(shard, batch, condition, invocations)
            return
        written = self.write_failed(shard, batch, condition, invocations)
        reason = (f"{self._discard_reason(condition, invocations)}; its records written to the on-failure "
                  f"destination kafka://{topic}")
        self.world.record_delivery(self.kind, Delivery.DISCARDED, keys=self._keys(batch.records), inv=batch.prev,
                                   detail={**self._span(shard, batch.records), "condition": condition,
                                           "reason": reason, "destination": f"kafka://{topic}", "written": written})
        self._advance(shard, batch.records)

    def write_failed(self, shard: Shard, batch: Batch, condition: str, invocations: int) -> list[str]:
        """Write the failed batch's records to the Kafka destination, as Lambda's producer does: the records
        themselves, "along with failure metadata" (DOC_KAFKA_ON_FAILURE). Each keeps its key and value; its offset
        is new, its timestamp is when it was written, and the metadata is the sandbox's ``FAILURE_HEADERS`` (AWS
        does not document its form). Returns where each landed, as ``<topic>-<partition>@<offset>``."""
        topic, now = self.mapping.on_failure_topic, self.world.clock.now()
        written = []
        for r in batch.records:
            values = (condition, shard.shard_id, r["offset"], invocations)
            headers = [(name, str(v).encode()) for name, v in zip(FAILURE_HEADERS, values)]
            # "failed_by" is the world's note of the invocation that failed it (no part of the record or event)
            partition, offset = self.cluster.append(topic, {"timestamp": now, "key": r["key"], "value": r["value"],
                                                            "headers": headers, "failed_by": batch.prev})
            written.append(f"{topic}-{partition}@{offset}")
        return written

    def describe_batch(self, shard: Shard, batch: Batch, span: dict) -> dict:
        """An on-failure record's ``KafkaBatchInfo``: offsets and timestamps per topic-partition, never the data
        (https://docs.aws.amazon.com/lambda/latest/dg/kafka-on-failure.html)."""
        first, last = batch.records[0], batch.records[-1]
        return {"batchSize": len(batch.records), "eventSourceArn": self.stream_arn,
                "bootstrapServers": self.bootstrap_servers,
                "payloadSize": sum(len(r["value"]) for r in batch.records),
                "recordsInfo": {shard.shard_id: {
                    "firstRecordOffset": str(first["offset"]), "lastRecordOffset": str(last["offset"]),
                    "firstRecordTimestamp": iso_millis(first["timestamp"]),
                    "lastRecordTimestamp": iso_millis(last["timestamp"])}}}


def read_kafka_response(result: Any, partition: str, offsets: list[int]) -> tuple[set[int], BadBatch | None]:
    """(the offsets a Kafka partial batch response names, None), or (empty, why Lambda failed the whole batch).

    Each failure is ``{"itemIdentifier": {"partition": "<topic>-<n>", "offset": <n>}}``; no answer, an empty one or
    a null ``batchItemFailures`` is a success, and a partition or offset not in the batch fails it whole
    (https://docs.aws.amazon.com/lambda/latest/dg/kafka-retry-configurations.html)."""
    if not isinstance(result, dict) or result.get("batchItemFailures") is None:
        return set(), None
    items = result["batchItemFailures"]
    if not isinstance(items, list):
        return set(), {"reason": "the batchItemFailures in the response is not a list, so Lambda failed the whole "
                                 "batch", "badResponse": BadBatchResponse.NOT_A_LIST}
    named: set[int] = set()
    for item in items:
        ident = item.get("itemIdentifier") if isinstance(item, dict) else None
        if not isinstance(ident, dict) or "partition" not in ident or "offset" not in ident:
            return set(), {"reason": f"batchItemFailures holds {item!r}, whose itemIdentifier is not a "
                                     f'{{"partition": ..., "offset": ...}} object, so Lambda failed the whole batch',
                           "badResponse": BadBatchResponse.NO_IDENTIFIER}
        offset = ident["offset"]
        if ident["partition"] != partition or not isinstance(offset, int) or isinstance(offset, bool) \
                or offset not in offsets:
            return set(), {"reason": f"batchItemFailures names {ident!r}, which is no record of this batch, so "
                                     f"Lambda failed the whole batch",
                           "badResponse": BadBatchResponse.UNKNOWN_IDENTIFIER,
                           "itemIdentifier": json.dumps(ident, sort_keys=True)}
        named.add(offset)
    return named, None


__all__ = ["KafkaCluster", "KafkaMapping", "KafkaSource", "read_kafka_response", "FAILURE_HEADERS",
           "RETRIES_WITH_DESTINATION"]
