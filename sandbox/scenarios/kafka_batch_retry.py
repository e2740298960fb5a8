"""kafka-batch-retry: a Kafka batch fails on a later order, and Lambda retries all of it.

AWS semantics (https://docs.aws.amazon.com/lambda/latest/dg/with-msk-configure.html): Lambda reads
each partition in order and commits a batch's offsets after the function handled it; "If your function
returns an error for any of the messages in a batch, Lambda retries the whole batch of messages until
processing succeeds or the messages expire". Without provisioned mode there are no error handling
controls to change that (https://docs.aws.amazon.com/lambda/latest/dg/kafka-retry-configurations.html).
The orders before the failing one were already handled, so the retry hands them to the function again.
"""
from __future__ import annotations

from ..sources.kafka import KafkaMapping, KafkaSource
from .base import Scenario
from .stream_batch_retry import run_stream, stream_orders, stream_settings


def kafka_settings(**defaults):
    """The stream scenarios' settings, for a Kafka topic: partial responses are off, as on a mapping without
    provisioned mode (they are an error handling control)."""
    defaults.setdefault("report_batch_item_failures", False)
    return stream_settings(KafkaMapping, writes="produces to the topic (key = orderId)", **defaults)


class KafkaBatchRetry(Scenario):
    name = "kafka-batch-retry"
    kind = "duplicate source"
    source = "Kafka"
    headline = "a failed Kafka batch is retried whole, the orders already handled included"
    summary = ("Several orders reach the function in one batch from a Kafka partition (Amazon MSK). The email "
               "provider fails once for a later order, so the invocation fails; Lambda commits no offset and "
               "retries the whole batch, handing the orders before the failing one to the function a second time.")
    settings = kafka_settings()

    def drive(self, sb, fn, cfg):
        orders = stream_orders(sb, cfg)
        source = KafkaSource(sb, fn, KafkaMapping.from_settings(cfg))
        run_stream(sb, cfg, source, orders, source.put)
