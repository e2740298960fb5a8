"""sqs-fifo-window: a FIFO queue deduplicates for 5 minutes only, so a later re-send is a second message.

AWS semantics: a FIFO queue drops a send whose MessageDeduplicationId (or, with
ContentBasedDeduplication, whose body's SHA-256) it has already accepted, but only "during
the 5-minute deduplication interval", and "If a message is sent successfully but the
acknowledgement is lost and the message is resent with the same MessageDeduplicationId after
the deduplication interval, Amazon SQS can't detect duplicate messages"
(https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_SendMessage.html).
SQS keeps tracking the ID for the interval "even after the message has been received and
deleted" (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/FIFO-key-terms.html).
And the Lambda mapping on a FIFO queue is the same at-least-once mapping as on a standard
queue: "Lambda event source mappings process each event at least once, and duplicate
processing of records can occur"
(https://docs.aws.amazon.com/lambda/latest/dg/invocation-eventsourcemapping.html); a failed
batch comes back whole after the visibility timeout, in order within its message group
(``fail_order`` shows it).

moto differs from AWS here: it deduplicates only against messages still in the queue, so it
forgets an ID as soon as its message is deleted, and it answers a deduplicated send with a
MessageId it never stored. The sandbox keeps the 5-minute window itself, on virtual time
(``sandbox.sources.fifo.FifoDeduplication``, in the gateway): a SendMessage with a known
deduplication ID less than 300 s after the first is answered with success and the original
MessageId, and no message is stored; from 300 s on, the send goes to moto as a new message.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..core.faults import ProviderFault
from ..errors import BadInput
from ..events import Order, make_orders
from ..runtime.functions import LambdaFunction
from ..settings import group, param
from ..sources.fifo import DEDUPLICATION_INTERVAL, DOC_SEND, FifoQueueConfig
from ..vocab import Effect
from ..world import Sandbox
from .base import payment_of
from .sqs_batch_failure import SqsRun, SqsScenario, SqsSettings, run_sqs


@dataclass(frozen=True)
class SqsFifoWindowSettings(SqsSettings):
    fifo: FifoQueueConfig = group(FifoQueueConfig)
    send_deduplication_id: bool = param(True, "the producer sets MessageDeduplicationId to the orderId (off: it "
                                        "sends none, so the queue needs ContentBasedDeduplication)", DOC_SEND)
    message_groups: int = param(1, "how many MessageGroupIds the orders are spread over (order i goes to group "
                                "i mod n); SQS keeps each group in order", None, 1, 100)
    resend_order: int = param(2, "which order the producer's job sends a second time (0: none)", None, 0, 10000)
    resend_after: float = param(
        360.0, "seconds after that order's first SendMessage that the job sends it again; "
        f"under {DEDUPLICATION_INTERVAL:g} (the 5-minute deduplication interval) SQS accepts it and stores "
        "nothing", DOC_SEND, 0, 14 * 24 * 3600)
    fail_order: int = param(0, "the position of an order whose email provider fails, so its batch fails and comes "
                            "back whole, in order (0: no fault)", None, 0, 10000)
    failures: int = param(1, "how many calls to that order's email provider fail", None, 0, 1000)


class SqsFifoWindow(SqsScenario[SqsFifoWindowSettings]):
    name = "sqs-fifo-window"
    kind = "duplicate source"
    source = "SQS FIFO"
    headline = "a re-send after the 5-minute deduplication interval is a new message"
    summary = ("Three orders go to a FIFO queue, orders.fifo, each with its orderId as MessageDeduplicationId, and "
               "reach the function in one batch. Six minutes later the producer's own retry job, which never saw o-2 "
               "confirmed, sends o-2 again. The 5-minute deduplication interval is over, so SQS stores a second "
               "message and the function emails o-2 twice (set resend_after below 300 and SQS stores nothing). A FIFO "
               "queue is not exactly-once: it drops repeated sends for five minutes, and the Lambda mapping on top "
               "still delivers at least once.")

    def deliver(self, sb: Sandbox, fn: LambdaFunction, cfg: SqsFifoWindowSettings) -> SqsRun:
        orders = make_orders(cfg.orders, sb.seed, payment=payment_of(cfg.payment))
        fifo = cfg.fifo
        if not cfg.send_deduplication_id and not fifo.content_based_deduplication:
            raise BadInput("the queue should either have ContentBasedDeduplication enabled or the producer send a "
                           f"MessageDeduplicationId ({DOC_SEND}); set send_deduplication_id or "
                           "content_based_deduplication")
        for setting, position in (("resend_order", cfg.resend_order), ("fail_order", cfg.fail_order)):
            if position > len(orders):
                raise BadInput(f"{setting} {position} is beyond the {len(orders)} orders; pick 1 to "
                               f"{len(orders)}, or 0 for none")
        if cfg.fail_order and cfg.failures:
            sb.faults.add(ProviderFault(Effect.EMAIL, orders[cfg.fail_order - 1]["orderId"], fail=cfg.failures))
        schedule = [(0.0, order) for order in orders]
        if cfg.resend_order:
            schedule.append((cfg.resend_after, orders[cfg.resend_order - 1]))
        place = {order["orderId"]: i for i, order in enumerate(orders)}

        def message_params(order: Order) -> dict[str, str]:
            extra = {"MessageGroupId": f"customers-{place[order['orderId']] % cfg.message_groups + 1}"}
            if cfg.send_deduplication_id:
                extra["MessageDeduplicationId"] = order["orderId"]
            return extra

        return run_sqs(sb, fn, cfg, schedule, backlog=len(orders), fifo=fifo, message_params=message_params)
