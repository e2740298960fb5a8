"""kafka-batch-retry: a Kafka batch fails on a later order, and Lambda retries all of it.

AWS semantics (https://docs.aws.amazon.com/lambda/latest/dg/with-msk-configure.html): Lambda reads
each partition in order and commits a batch's offsets after the function handled it; "If your function
returns an error for any of the messages in a batch, Lambda retries the whole batch of messages until
processing succeeds or the messages expire". Without provisioned mode there are no error handling
controls to change that (https://docs.aws.amazon.com/lambda/latest/dg/kafka-retry-configurations.html).
The orders before the failing one were already handled, so the retry hands them to the function again.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..runtime.functions import LambdaFunction
from ..settings import group
from ..sources.kafka import KafkaMapping, KafkaSource
from ..world import Sandbox
from .base import Scenario
from .stream_batch_retry import StreamSettings, run_stream, stream_orders


@dataclass(frozen=True)
class KafkaSettings(StreamSettings, defaults={"orders": (4, "how many orders the producer produces to the topic "
                                                            "(key = orderId)")}):
    """The stream scenarios' settings, for a Kafka topic: partial responses are off, as on a mapping without
    provisioned mode (they are an error handling control)."""

    mapping: KafkaMapping = group(KafkaMapping, report_batch_item_failures=False)


@dataclass(frozen=True)
class KafkaBatchRetrySettings(KafkaSettings):
    pass


class KafkaBatchRetry(Scenario[KafkaBatchRetrySettings]):
    name = "kafka-batch-retry"
    kind = "duplicate source"
    source = "Kafka"
    headline = "a failed Kafka batch is retried whole, the orders already handled included"
    summary = ("Several orders reach the function in one batch from a Kafka partition (Amazon MSK). The email "
               "provider fails once for a later order, so the invocation fails; Lambda commits no offset and "
               "retries the whole batch, handing the orders before the failing one to the function a second time.")

    def drive(self, sb: Sandbox, fn: LambdaFunction, cfg: KafkaBatchRetrySettings) -> None:
        orders = stream_orders(sb, cfg)
        source = KafkaSource(sb, fn, cfg.mapping)
        run_stream(sb, source, orders, source.put, horizon=cfg.horizon, interval=cfg.interval)
