"""kafka-topic-destination: a failed Kafka batch is written to a dead-letter topic, and a mapping that reads that topic
hands the orders already emailed to the function again.

AWS semantics (https://docs.aws.amazon.com/lambda/latest/dg/kafka-on-failure-destination.html): a Kafka mapping
may send failed records to a Kafka topic of the same cluster (``kafka://<topic>``). "Lambda acts as a Kafka
producer and writes failed records to the destination topic", after the retries are used up or the records are
too old; with infinite retries and a destination, "Lambda automatically applies a maximum of 10 retry attempts"
(this scenario sets no retry, in provisioned mode, to keep the story short).
"Kafka destinations receive the actual failed records along with failure metadata": unlike an SQS or SNS
destination, which gets a description of the batch (offsets, never the data), the topic gets the records
themselves, at new offsets. A function that raises fails the whole batch, so the orders it had already emailed
go to the dead-letter topic too.

Reading a dead-letter topic is the usual way to process failed records later. Here a second mapping of the same
function reads it (the sandbox's choice of consumer: AWS leaves that to you). Its records are new records (a new
topic, new offsets), so a key built from topic, partition and offset sees new work; the orderId sees the same
order. AWS does not document the failure metadata's form: the sandbox's headers are named ``sandbox-...``
(``sources/kafka.py``).
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

from ..runtime.functions import LambdaFunction
from ..sources.kafka import KafkaMapping, KafkaSource
from ..world import Sandbox
from .base import Scenario
from .kafka_batch_retry import KafkaSettings
from .stream_batch_retry import stream_orders

#: The dead-letter topic the mapping writes to, and the second mapping reads.
DEAD_LETTER_TOPIC = "orders-failures"


@dataclass(frozen=True)
# No retry keeps the story to the destination (at the default of -1, a destination caps the retries at 10, and
# the provider would have to fail 11 times for the batch to get there).
class KafkaTopicDestinationSettings(KafkaSettings, defaults={"fail_order": 3, "provisioned_mode": True,
                                                            "maximum_retry_attempts": 0,
                                                            "on_failure_topic": DEAD_LETTER_TOPIC}):
    pass


class KafkaTopicDestination(Scenario[KafkaTopicDestinationSettings]):
    name = "kafka-topic-destination"
    kind = "duplicate source"
    source = "Kafka"
    headline = "a failed Kafka batch goes whole to a dead-letter topic; reading it hands the emailed orders over again"
    summary = ("Four orders reach the function in one batch from a Kafka partition, on a mapping in provisioned mode "
               "that retries nothing (MaximumRetryAttempts 0) and writes a failed batch's records to the Kafka topic "
               f"{DEAD_LETTER_TOPIC}. o-3's email provider fails once, so the batch fails, and Lambda writes all four "
               "records there, o-1 and o-2 included, already emailed. A second mapping of the function reads that "
               "topic and hands it all four orders again: new records at new offsets, the same orders.")

    def drive(self, sb: Sandbox, fn: LambdaFunction, cfg: KafkaTopicDestinationSettings) -> None:
        orders = stream_orders(sb, cfg)
        source = KafkaSource(sb, fn, cfg.mapping)
        # The dead-letter topic's reader: the same function, on a mapping with AWS's defaults (the same batching
        # window and backoff as the first, so a run reads the same either way).
        dead_letters = KafkaSource(sb, fn, KafkaMapping(
            topic=cfg.mapping.on_failure_topic or DEAD_LETTER_TOPIC, partitions=cfg.mapping.partitions,
            batch_size=cfg.mapping.batch_size, poll_interval=cfg.mapping.poll_interval,
            retry_backoff=cfg.mapping.retry_backoff),
            cluster=source.cluster)
        for i, order in enumerate(orders):
            sb.scheduler.call_at(i * cfg.interval, functools.partial(source.put, order))
        sb.scheduler.call_at(0.0, source.start)
        sb.scheduler.call_at(0.0, dead_letters.start)
        sb.run(until=cfg.horizon, stop_when=lambda: source.sent >= len(orders) and source.idle()
               and dead_letters.idle())
        source.finish()
        dead_letters.finish()
