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

from dataclasses import dataclass

from ..runtime.functions import LambdaFunction
from ..settings import group
from ..sources.ddb_stream import DdbStreamMapping, DdbStreamSource
from ..world import Sandbox
from .base import Scenario
from .stream_batch_retry import StreamSettings, run_stream, stream_orders


@dataclass(frozen=True)
class DdbStreamBatchRetrySettings(StreamSettings, defaults={
        "orders": (4, "how many orders the producer writes to the orders table (PutItem), one stream record each")}):
    mapping: DdbStreamMapping = group(DdbStreamMapping, report_batch_item_failures=True)


class DdbStreamBatchRetry(Scenario[DdbStreamBatchRetrySettings]):
    name = "ddb-stream-batch-retry"
    kind = "duplicate source"
    source = "DynamoDB Streams"
    headline = "a failed DynamoDB stream batch is retried from its first record"
    summary = ("Four orders are written to a DynamoDB table whose stream triggers the function; their INSERT records "
               "arrive in one batch. The email provider fails once for a later order, so the invocation fails and "
               "Lambda retries the whole batch from its first record: the orders before the failing one are handed "
               "to the function a second time.")

    def drive(self, sb: Sandbox, fn: LambdaFunction, cfg: DdbStreamBatchRetrySettings) -> None:
        orders = stream_orders(sb, cfg)
        source = DdbStreamSource(sb, fn, cfg.mapping)
        run_stream(sb, source, orders, source.put, horizon=cfg.horizon, interval=cfg.interval)
