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

from ..sources.stream import StreamMapping, StreamSource
from .base import Scenario
from .stream_batch_retry import run_stream, stream_orders, stream_settings


class StreamPartialBatch(Scenario):
    name = "stream-partial-batch"
    kind = "duplicate source"
    source = "Kinesis"
    headline = "with ReportBatchItemFailures, the retry starts at the lowest failed record, so later ones come again"
    summary = ("Four orders reach the function in one Kinesis batch, with ReportBatchItemFailures on. The email "
               "provider fails once for o-2. A handler that reports it in batchItemFailures makes Lambda retry from "
               "o-2's sequence number, so o-3 and o-4, already emailed, come again; a handler that raises gets the "
               "whole batch back, o-1 included. Bisecting on as well changes neither.")
    settings = stream_settings(StreamMapping, fail_order=2, report_batch_item_failures=True)

    def drive(self, sb, fn, cfg):
        orders = stream_orders(sb, cfg)
        source = StreamSource(sb, fn, StreamMapping.from_settings(cfg))
        run_stream(sb, cfg, source, orders, source.put)
