"""The DynamoDB Streams event source mapping: a poller per shard, on moto's real DynamoDB stream.

An "orders" table with a stream (StreamViewType NEW_AND_OLD_IMAGES) and TTL on
``expiresAt``. Writing an order is a PutItem, a customer's cancellation a DeleteItem, and
every change comes to the function as a stream record in the AWS shape: ``eventName``
INSERT, MODIFY or REMOVE, ``dynamodb.Keys``, ``NewImage``, ``OldImage``, ``SequenceNumber``,
``SizeBytes``, ``StreamViewType`` (https://docs.aws.amazon.com/lambda/latest/dg/with-ddb.html).
The mapping reads and retries as a Kinesis mapping does (``shards.py``): the same defaults,
whole-batch retries until success or expiry, a shard blocked meanwhile, bisecting, partial
batch responses and an on-failure destination, whose message describes the batch as
``DDBStreamBatchInfo``. Only the polling differs: Lambda polls a DynamoDB stream's shards
"at a base rate of 4 times per second" (with-ddb.html), a Kinesis stream's once a second
(https://docs.aws.amazon.com/lambda/latest/dg/services-ddb-params.html,
https://docs.aws.amazon.com/lambda/latest/dg/services-dynamodb-errors.html,
https://docs.aws.amazon.com/lambda/latest/dg/services-ddb-batchfailurereporting.html).
A stream keeps its records 24 hours
(https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Streams.html).

TTL deletions come through the stream too, as REMOVE records; only their ``userIdentity``
(type "Service", principalId "dynamodb.amazonaws.com") tells them from a user's DeleteItem
(https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_streams_Record.html).

Where moto differs from AWS, and what this module does about it:

- moto has no TTL process. The world's TTL sweeper deletes expired orders (it ``watch``es
  this table) and marks the deletion's stream record with the service's ``userIdentity``.
- botocore sends DescribeStream and GetShardIterator to the stream's account endpoint,
  which moto 5.2 does not serve; the adapter serves it as the regional endpoint.
- moto never trims a stream; the poller treats a record older than 24 hours as expired.
- moto's records are stamped "us-east-1" whatever the region; events carry the world's.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..aws import adapter
from ..aws.dynamo import dynamo_item, plain_value
from ..aws.event_shapes import DdbStreamRecord
from ..errors import BadInput
from ..events import Order, ddb_stream_record, removed_by_ttl
from ..settings import param
from ..vocab import Cause, Delivery, Effect, SourceKind, TableSchema
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

DOC_WITH_DDB = "https://docs.aws.amazon.com/lambda/latest/dg/with-ddb.html"
DOC_DDB_PARAMETERS = "https://docs.aws.amazon.com/lambda/latest/dg/services-ddb-params.html"
DOC_DDB_ERRORS = "https://docs.aws.amazon.com/lambda/latest/dg/services-dynamodb-errors.html"
DOC_DDB_PARTIAL = "https://docs.aws.amazon.com/lambda/latest/dg/services-ddb-batchfailurereporting.html"
DOC_STREAMS = "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Streams.html"
DOC_TTL_STREAMS = "https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_streams_Record.html"

#: The orders table: orderId is its key, expiresAt its TTL attribute (epoch seconds).
ORDER_KEY = "orderId"
#: DynamoDB Streams as a request names it (botocore's signing name, as the history records it).
STREAMS_SERVICE = "dynamodb-streams"
EXPIRES_AT = "expiresAt"


@dataclass(frozen=True)
class DdbStreamMapping(ShardMapping):
    """The settings of one DynamoDB stream event source mapping (the same as Kinesis's, on DynamoDB's pages)."""

    poll_interval: float = param(0.25, "seconds between polls of a shard with nothing new (Lambda polls a DynamoDB "
                                 "stream's shards 4 times a second)", DOC_WITH_DDB, 0.001, 3600)
    table_name: str = "orders"
    queue_name: str = "orders-ddb-stream-failures"

    CITES = {DOC_PARAMETERS: DOC_DDB_PARAMETERS, DOC_ON_FAILURE: DOC_DDB_ERRORS, DOC_PARTIAL: DOC_DDB_PARTIAL,
             DOC_KINESIS: DOC_WITH_DDB}


class DdbStreamSource(ShardSource):
    """An orders table with a stream, and Lambda's mapping that reads it.

        src = DdbStreamSource(sb, fn)
        src.put(order, expires_at=...)   # accept the order and PutItem it: an INSERT record
        src.cancel(order)                # the customer deletes it: a REMOVE owed a cancellation email
        src.start(); sb.run(stop_when=src.idle); src.finish()
    """

    kind = SourceKind.DDB_STREAM
    batch_info = "DDBStreamBatchInfo"

    def __init__(self, world: "Sandbox", function: "LambdaFunction", mapping: DdbStreamMapping | None = None,
                 **settings: Any):
        mapping = mapping or DdbStreamMapping(**settings)
        super().__init__(world, function, mapping, mapping.queue_name)
        self.schema = TableSchema(mapping.table_name, ORDER_KEY, EXPIRES_AT, ())
        self.streams = adapter.shared_client(world.region, "dynamodbstreams")
        self.written = 0  # orders written by put()
        with world.gateway.unrecorded():  # setup is infrastructure, not part of the story
            created = world.dynamodb.create_table(
                TableName=self.schema.name, BillingMode="PAY_PER_REQUEST",
                AttributeDefinitions=[{"AttributeName": ORDER_KEY, "AttributeType": "S"}],
                KeySchema=[{"AttributeName": ORDER_KEY, "KeyType": "HASH"}],
                StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"})
            world.dynamodb.update_time_to_live(TableName=self.schema.name, TimeToLiveSpecification={
                "Enabled": True, "AttributeName": EXPIRES_AT})
            self.stream_arn = created["TableDescription"]["LatestStreamArn"]
            shards = self.streams.describe_stream(StreamArn=self.stream_arn)["StreamDescription"]["Shards"]
        self.shards = [Shard(s["ShardId"], i) for i, s in enumerate(shards)]
        world.sweeper.watch(self.schema)
        self.answer_drained_polls(STREAMS_SERVICE, {})

    def unread_at(self, iterator: Any) -> int | None:
        return adapter.ddb_stream_unread(self.world.region, iterator)

    # -- writing the table -------------------------------------------------------------------
    def put(self, order: Order, expires_at: float | None = None) -> dict:
        """Accept ``order`` (it is owed its effects) and PutItem it, with ``expiresAt`` if given."""
        if not isinstance(order, dict) or ORDER_KEY not in order:
            raise BadInput(f"an item here is an order (a dict with orderId), got {order!r}")
        self.world.accept(order, source=self.kind)
        item = dict(order) if expires_at is None else {**order, EXPIRES_AT: int(expires_at)}
        response = self.world.dynamodb.put_item(TableName=self.schema.name, Item=dynamo_item(item))
        self.written += 1
        return response

    def cancel(self, order: Order) -> dict:
        """The customer cancels ``order``: it is owed a cancellation email, and the item is deleted."""
        key = str(order["orderId"])  # the table's key, ORDER_KEY
        self.world.accept(order, expects=[Effect.CANCELLATION], source=self.kind)
        response = self.world.dynamodb.delete_item(TableName=self.schema.name, Key={ORDER_KEY: {"S": key}})
        self.world.record_delivery(self.kind, Delivery.USER_DELETE, keys=[key], detail={
            "table": self.schema.name, "why": "the customer cancelled: a DeleteItem, so the stream's REMOVE record "
                                              "has no userIdentity (a TTL deletion's would)"})
        return response

    # -- reading the stream --------------------------------------------------------------------
    def _iterator(self, shard: Shard, kind: str, sequence: int | str | None = None) -> str:
        params = {"StreamArn": self.stream_arn, "ShardId": shard.shard_id, "ShardIteratorType": kind}
        if sequence is not None:
            params["SequenceNumber"] = str(sequence)
        return self.streams.get_shard_iterator(**params)["ShardIterator"]

    def _get_records(self, iterator: str, limit: int | None) -> dict:
        params: GetRecordsRequest = {"ShardIterator": iterator}
        if limit is not None:
            params["Limit"] = limit
        return self.streams.get_records(**params)

    def record_counts(self) -> dict[str, int]:
        return {s.shard_id: adapter.ddb_stream_record_count(self.world.region, self.schema.name)
                for s in self.shards}

    def seq(self, record: dict) -> int:
        return int(record["dynamodb"]["SequenceNumber"])

    def aws_seq(self, shard: Shard, record: dict) -> str:
        return record["dynamodb"]["SequenceNumber"]

    def arrival(self, record: dict) -> float:
        stamp = record["dynamodb"]["ApproximateCreationDateTime"]
        return stamp.timestamp() if hasattr(stamp, "timestamp") else float(stamp)

    def key(self, record: dict) -> str:
        return str(plain_value(record["dynamodb"]["Keys"][ORDER_KEY]))

    def event_record(self, shard: Shard, record: dict) -> DdbStreamRecord:
        return ddb_stream_record(record, self.stream_arn, self.world.region)

    def first_cause(self, shard: Shard, batch: Batch) -> tuple[str, str | None]:
        """A batch that carries DynamoDB's own TTL deletions was caused by them, not by anyone's write."""
        swept = [r for r in batch.records if removed_by_ttl(self.event_record(shard, r))]
        if not swept:
            return Cause.FIRST_DELIVERY, None
        return Cause.TTL_DELETION, self.carrier(self.key(swept[0]))


__all__ = ["DdbStreamMapping", "DdbStreamSource", "DOC_WITH_DDB", "DOC_DDB_PARAMETERS", "DOC_DDB_ERRORS",
           "DOC_DDB_PARTIAL", "DOC_STREAMS", "DOC_TTL_STREAMS", "EXPIRES_AT"]
