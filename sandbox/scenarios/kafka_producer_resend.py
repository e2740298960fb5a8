"""kafka-producer-resend: a producer sends an order again after a write it never heard back from; the topic holds two.

A Kafka record's identity is its topic, partition and offset, and a producer that sends the same order twice makes
two records at two offsets, with identical data. When a write lands but its acknowledgement is lost, the producer
cannot tell it from a write that failed:

- With ``enable.idempotence`` off, the client library resends after ``request.timeout.ms`` (30 s by default), and
  the broker appends the copy.
- With it on (the default since Apache Kafka 3.0), the broker drops the library's own resend of that batch, but not
  an application's: when the send's future fails after ``delivery.timeout.ms`` (120 s by default), an application
  that sends the order again makes a new record
  (https://kafka.apache.org/documentation/#producerconfigs_enable.idempotence,
  https://kafka.apache.org/documentation/#producerconfigs_delivery.timeout.ms).

Lambda hands the function both records, each a first delivery (AWS: "Lambda event source mappings process each
event at least once", https://docs.aws.amazon.com/lambda/latest/dg/with-kafka.html). A handler keyed on the
partition and offset sees two operations; a key built from the orderId sees one.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

from ..errors import BadInput
from ..events import Order
from ..runtime.functions import LambdaFunction
from ..settings import group, param
from ..sources.base import run_sources
from ..sources.kafka import KafkaMapping, KafkaSource
from ..world import Sandbox
from .base import Scenario, ScenarioSettings, payment_choice
from .producer_resend import resent_orders

#: Virtual seconds before the producer sends its first order (half a batching window: no send and poll coincide).
FIRST_SEND = 0.25


@dataclass(frozen=True)
class KafkaProducerResendSettings(ScenarioSettings):
    orders: int = param(3, "how many orders the producer sends (key = orderId)", None, 1, 5000)
    payment: str = payment_choice()
    interval: float = param(1.0, "virtual seconds between two orders the producer sends", None, 0, 3600)
    resend_order: int = param(2, "which send lands but is never acknowledged, so the producer sends it again "
                              "(0: none)", None, 0, 5000)
    enable_idempotence: bool = param(
        True, "the producer's enable.idempotence (Kafka's default since 3.0): on, its "
        "library's resend is dropped and the application resends after delivery_timeout; off, the library "
        "resends after request_timeout and the copy is kept", None)
    request_timeout: float = param(30.0, "the producer's request.timeout.ms, in seconds (Kafka's default: 30 s)",
                                   None, 0.001, 3600)
    delivery_timeout: float = param(120.0, "the producer's delivery.timeout.ms, in seconds (Kafka's default: 120 s)",
                                    None, 0.001, 3600)
    mapping: KafkaMapping = group(KafkaMapping)
    horizon: float = param(600.0, "virtual seconds after which the run stops; records still in the topic "
                           "are reported as pending (verdict unknown)", None, 1, 400 * 24 * 3600)


class KafkaProducerResend(Scenario[KafkaProducerResendSettings]):
    name = "kafka-producer-resend"
    kind = "duplicate source"
    source = "Kafka"
    headline = "a producer resends an order whose write landed unacknowledged: two records, two offsets, one order"
    summary = ("A producer sends three orders to a Kafka topic, one a second. The broker appends the second, but its "
               "acknowledgement is lost. The producer's application waits out delivery.timeout.ms (120 s), sees the "
               "send fail and sends the order again (an idempotent producer drops only its library's own resends): "
               "the partition now holds the order at two offsets, and the function is handed it twice.")

    def drive(self, sb: Sandbox, fn: LambdaFunction, cfg: KafkaProducerResendSettings) -> None:
        orders = resent_orders(sb, cfg.orders, cfg.resend_order, cfg.payment)
        source = KafkaSource(sb, fn, cfg.mapping)
        resend_after = cfg.delivery_timeout if cfg.enable_idempotence else cfg.request_timeout
        last = FIRST_SEND + (len(orders) - 1) * cfg.interval + (resend_after if cfg.resend_order else 0)
        if last >= cfg.horizon:
            raise BadInput(f"the last send is due at {last:g} s, not before the horizon {cfg.horizon:g} s; "
                           f"raise horizon, or lower interval or the producer's timeouts")
        for i, order in enumerate(orders):
            at = FIRST_SEND + i * cfg.interval
            sb.scheduler.call_at(at, functools.partial(source.put, order))
            if i + 1 == cfg.resend_order:
                sb.scheduler.call_at(at + resend_after,
                                     functools.partial(self._resend, sb, source, order, cfg.enable_idempotence))
        run_sources(sb, source, horizon=cfg.horizon,
                    also=lambda: source.sent >= len(orders) + (1 if cfg.resend_order else 0))

    @staticmethod
    def _resend(sb: Sandbox, source: KafkaSource, order: Order, idempotent: bool) -> None:
        who = ("the producer's application, its send failed after delivery.timeout.ms" if idempotent
               else "the producer's client library, after request.timeout.ms (enable.idempotence off)")
        placed = source.produce(order)
        sb.note(f"{order['orderId']} sent again by {who}: a second record at offset {placed['offset']} of partition "
                f"{placed['partition']}, the first one's data")
