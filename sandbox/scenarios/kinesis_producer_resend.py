"""kinesis-producer-resend: the producer's SDK retries a PutRecord that had worked, so the stream holds the order twice.

AWS semantics (https://docs.aws.amazon.com/streams/latest/dev/kinesis-record-processor-duplicates.html):
"Consider a producer that experiences a network-related timeout after it makes a call to
PutRecord, but before it can receive an acknowledgement ... If both PutRecord calls on that
same data were successfully committed to Kinesis Data Streams, then there will be two
Kinesis Data Streams records. Although the two records have identical data, they also have
unique sequence numbers." botocore retries a read timeout in every retry mode
(https://docs.aws.amazon.com/sdkref/latest/guide/feature-retry-behavior.html), so a plain
boto3 producer does exactly that. The two records reach the function with different
sequence numbers and so different ``eventID``s: the eventID names a record, not an order,
and a handler that dedupes on it sends twice. A key built from the orderId catches it.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..core.faults import AwsFault
from ..errors import BadInput
from ..runtime.functions import LambdaFunction
from ..settings import group, param
from ..sources.base import run_sources
from ..sources.producer import KinesisProducer
from ..sources.stream import StreamMapping, StreamSource
from ..sources.sync_invoke import CallerConfig
from ..world import Sandbox
from .base import Scenario, ScenarioSettings, payment_choice
from .producer_resend import resent_orders

#: Virtual seconds before the producer writes its first order.
FIRST_WRITE = 0.5


@dataclass(frozen=True)
class KinesisProducerResendSettings(ScenarioSettings):
    orders: int = param(3, "how many orders the producer writes, one PutRecord each (partition key = orderId)",
                        None, 1, 5000)
    payment: str = payment_choice()
    interval: float = param(1.0, "virtual seconds between two orders the producer writes", None, 0, 3600)
    resend_order: int = param(2, "which PutRecord takes effect but times out for the producer, so its SDK "
                              "writes it again (0: none)", None, 0, 5000)
    mapping: StreamMapping = group(StreamMapping, report_batch_item_failures=True)
    caller: CallerConfig = group(CallerConfig)
    horizon: float = param(600.0, "virtual seconds after which the run stops; records still in the stream "
                           "are reported as pending (verdict unknown)", None, 1, 400 * 24 * 3600)


class KinesisProducerResend(Scenario[KinesisProducerResendSettings]):
    name = "kinesis-producer-resend"
    kind = "duplicate source"
    source = "Kinesis"
    headline = "a retried PutRecord writes two records: same data, new sequence number and `eventID`"
    summary = ("A producer writes three orders to a Kinesis stream, one PutRecord a second. Kinesis stores the second "
               "order, but the response never reaches the producer: its SDK waits out the 60 s read timeout and "
               "writes the order again. The stream now holds two records with identical data and different sequence "
               "numbers (different eventIDs), and the function receives the order twice.")

    def drive(self, sb: Sandbox, fn: LambdaFunction, cfg: KinesisProducerResendSettings) -> None:
        orders = resent_orders(sb, cfg.orders, cfg.resend_order, cfg.payment)
        last = FIRST_WRITE + (len(orders) - 1) * cfg.interval
        if last >= cfg.horizon:
            raise BadInput(f"the last order is due at {last:g} s, not before the horizon {cfg.horizon:g} s; "
                           f"raise horizon or lower interval")
        if cfg.resend_order:
            # The request reaches moto (the record is stored), then the client gets a ReadTimeoutError.
            sb.faults.add(AwsFault("timeout-applied", "kinesis", "PutRecord", nth=cfg.resend_order))
        source = StreamSource(sb, fn, cfg.mapping)
        # The first order goes out half a poll in, so a poll and a write never fall on the same
        # instant and the batches do not depend on the seed.
        schedule = [(FIRST_WRITE + i * cfg.interval, o) for i, o in enumerate(orders)]
        producer = KinesisProducer(sb, source, schedule, client=cfg.caller)
        run_sources(sb, source, producer, horizon=cfg.horizon)
