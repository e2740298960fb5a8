"""producer-resend: the producer's SDK retries a SendMessage that had worked, so the order is queued twice.

AWS semantics: botocore retries a read timeout in every retry mode (``standard``, the
pinned botocore's default, and ``legacy``)
(https://docs.aws.amazon.com/sdkref/latest/guide/feature-retry-behavior.html), and a read
timeout does not mean the request failed: SQS may already have stored the message. The retry
is a new SendMessage, and SQS gives every message its own MessageId
(https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-queue-message-identifiers.html),
so the queue now holds two messages for one order. Standard queues do not deduplicate
(https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/standard-queues.html).
A handler that keys on the SQS messageId treats the copy as new; a key built from the
orderId catches it.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..core.faults import AwsFault
from ..errors import BadInput
from ..events import Order, make_orders
from ..runtime.functions import LambdaFunction
from ..settings import group, param
from ..sources.sync_invoke import CallerConfig
from ..world import Sandbox
from .base import payment_of
from .sqs_batch_failure import SqsRun, SqsScenario, SqsSettings, run_sqs


@dataclass(frozen=True)
class ProducerResendSettings(SqsSettings):
    interval: float = param(1.0, "virtual seconds between two orders the producer sends", None, 0, 3600)
    resend_order: int = param(2, "which SendMessage takes effect but times out for the producer, so its SDK "
                              "sends it again (0: none)", None, 0, 10000)
    caller: CallerConfig = group(CallerConfig)


class ProducerResend(SqsScenario[ProducerResendSettings]):
    name = "producer-resend"
    kind = "duplicate source"
    source = "SQS"
    headline = "a producer's SDK re-sends a timed-out SendMessage: a second message, new MessageId"
    summary = ("A producer sends three orders to SQS, one a second. SQS stores the second order, but the response "
               "never reaches the producer: its SDK waits out the 60 s read timeout and sends the order again, and "
               "SQS stores a second message with a new MessageId. The function receives the order twice.")

    def deliver(self, sb: Sandbox, fn: LambdaFunction, cfg: ProducerResendSettings) -> SqsRun:
        orders = resent_orders(sb, cfg.orders, cfg.resend_order, cfg.payment)
        if cfg.resend_order:
            # The request reaches moto (the message is stored), then the client gets a ReadTimeoutError.
            sb.faults.add(AwsFault("timeout-applied", "sqs", "SendMessage", nth=cfg.resend_order))
        schedule = [(i * cfg.interval, order) for i, order in enumerate(orders)]
        return run_sqs(sb, fn, cfg, schedule, client=cfg.caller)


def resent_orders(sb: Sandbox, orders: int, resend_order: int, payment: str = "none") -> list[Order]:
    """A producer re-send scenario's ``orders``, its ``resend_order`` checked against them."""
    made = make_orders(orders, sb.seed, payment=payment_of(payment))
    if resend_order > len(made):
        raise BadInput(f"resend_order {resend_order} is beyond the {len(made)} orders; "
                       f"pick 1 to {len(made)}, or 0 for none")
    return made
