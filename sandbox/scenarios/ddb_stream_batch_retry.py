"""ddb-stream-batch-retry: a DynamoDB stream batch fails on a later order, and Lambda retries all of it.

AWS semantics (https://docs.aws.amazon.com/lambda/latest/dg/with-ddb.html,
https://docs.aws.amazon.com/lambda/latest/dg/services-dynamodb-errors.html): a DynamoDB
stream is read like a Kinesis stream. Orders written to the "orders" table become INSERT
records; when the function returns an error for a batch, Lambda retries the same batch from
its first record until it succeeds or the records expire (24 hours), and the shard waits
meanwhile. The orders before the failing one were already handled, so the retry hands them
to the function again.
"""
from __future__ import annotations

from ..sources.ddb_stream import DdbStreamMapping, DdbStreamSource
from .base import Scenario
from .stream_batch_retry import run_stream, stream_orders, stream_settings


class DdbStreamBatchRetry(Scenario):
    name = "ddb-stream-batch-retry"
    kind = "duplicate source"
    source = "DynamoDB Streams"
    headline = "a failed DynamoDB stream batch is retried from its first record"
    summary = ("Four orders are written to a DynamoDB table whose stream triggers the function; their INSERT records "
               "arrive in one batch. The email provider fails once for a later order, so the invocation fails and "
               "Lambda retries the whole batch from its first record: the orders before the failing one are handed "
               "to the function a second time.")
    settings = stream_settings(DdbStreamMapping, writes="writes to the orders table (PutItem), one stream record each")

    def drive(self, sb, fn, cfg):
        orders = stream_orders(sb, cfg)
        source = DdbStreamSource(sb, fn, DdbStreamMapping.from_settings(cfg))
        run_stream(sb, cfg, source, orders, source.put)
