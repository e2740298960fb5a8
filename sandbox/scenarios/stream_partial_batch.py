"""stream-partial-batch: the handler reports the one record that failed, and the records after it still come again.

AWS semantics (https://docs.aws.amazon.com/lambda/latest/dg/services-kinesis-batchfailurereporting.html):
with ReportBatchItemFailures, a stream handler answers ``{"batchItemFailures":
[{"itemIdentifier": "<sequenceNumber>"}]}``. Lambda checkpoints at the lowest sequence
number reported and "retries all records starting from that checkpoint": a stream keeps
order, so it cannot skip the failed record and keep the ones after it. Those later records
had succeeded, and they are handed to the function again. With BisectBatchOnFunctionError
on too, "the batch is bisected at the returned sequence number and Lambda retries only the
remaining records": the same records. The standard remedy narrows the retry; it does not
make it exactly-once.

The catalogue's naive handler raises instead of reporting, so Lambda retries the whole
batch; ``examples/partial_stream.py`` is the naive handler that reports its failure.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..runtime.functions import LambdaFunction
from ..sources.stream import StreamSource
from ..world import Sandbox
from .base import Scenario
from .stream_batch_retry import StreamBatchRetrySettings, run_stream, stream_orders


@dataclass(frozen=True)
class StreamPartialBatchSettings(StreamBatchRetrySettings, defaults={"fail_order": 2}):
    pass


class StreamPartialBatch(Scenario[StreamPartialBatchSettings]):
    name = "stream-partial-batch"
    kind = "duplicate source"
    source = "Kinesis"
    headline = "with ReportBatchItemFailures, the retry starts at the lowest failed record, so later ones come again"
    summary = ("Four orders reach the function in one Kinesis batch, with ReportBatchItemFailures on. The email "
               "provider fails once for o-2. A handler that reports it in batchItemFailures makes Lambda retry from "
               "o-2's sequence number, so o-3 and o-4, already emailed, come again; a handler that raises gets the "
               "whole batch back, o-1 included. Bisecting on as well changes neither.")

    def drive(self, sb: Sandbox, fn: LambdaFunction, cfg: StreamPartialBatchSettings) -> None:
        orders = stream_orders(sb, cfg)
        source = StreamSource(sb, fn, cfg.mapping)
        run_stream(sb, source, orders, source.put, horizon=cfg.horizon, interval=cfg.interval)
