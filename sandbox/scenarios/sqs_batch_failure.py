"""sqs-batch-failure: a later order of an SQS batch fails, and the whole batch comes back.

AWS semantics (https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-errorhandling.html):
when an invocation fails, Lambda deletes nothing, so once the visibility timeout (30 s by
default, https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-visibility-timeout.html)
has run out every message of the batch is received again, the orders the failed invocation
had already handled included. With ReportBatchItemFailures the handler can name the failed
messages, and only those come back. A message that keeps failing is moved to the
dead-letter queue after maxReceiveCount receives
(https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-dead-letter-queues.html).

This module also holds what the three SQS scenarios share: their settings and their run.
"""
from __future__ import annotations

from typing import Any

from ..errors import BadInput
from ..events import make_orders
from ..sources.producer import Producer
from ..sources.sqs import (DOC_CONFIGURE, DOC_DLQ, DOC_ERRORS, DOC_PARAMETERS, DOC_SCALING, DOC_VISIBILITY,
                           SqsEventSourceMapping, SqsMappingConfig, SqsQueue)
from .base import Scenario, Setting

DOC_SQS_RETRIES = "https://docs.aws.amazon.com/lambda/latest/operatorguide/sqs-retries.html"

#: The body of a poison message: not JSON, so no handler can read an order from it.
POISON_BODY = "order o-?? (not JSON: a producer bug)"


def sqs_settings(*, orders: int = 3, visibility_timeout: int = 30, batching_window: int = 0) -> tuple[Setting, ...]:
    """The queue and event source mapping settings every SQS scenario offers."""
    return (
        Setting("orders", orders, "how many orders the producer sends, one SendMessage each", None, 1, 100_000),
        Setting("payment", "none", "how orders pay: 'card' adds a charge before each email", None,
                choices=("none", "card")),
        Setting("visibility_timeout", visibility_timeout, "the queue's visibility timeout (s): how long a received "
                "message stays hidden before SQS hands it out again (SQS default 30 s)", DOC_VISIBILITY, 0, 43200),
        Setting("batch_size", 10, "BatchSize: the most messages one invocation gets (Lambda default 10)",
                DOC_CONFIGURE, 1, 10000),
        Setting("batching_window", batching_window, "MaximumBatchingWindowInSeconds: how long a poller keeps "
                "gathering a batch that is not full before it invokes (Lambda default 0)", DOC_PARAMETERS, 0, 300),
        Setting("max_concurrency", 0, "MaximumConcurrency: most invocations at once, 2 to 1000 (0: not set)",
                DOC_SCALING, 0, 1000),
        Setting("pollers", 5, "how many batches Lambda processes at once (five, when messages are available)",
                DOC_SCALING, 1, 1000),
        Setting("max_receive_count", 5, "the redrive policy's maxReceiveCount: receives before SQS moves a message "
                "to the dead-letter queue (0: no DLQ); AWS recommends at least 5", DOC_SQS_RETRIES, 0, 1000),
        Setting("report_batch_item_failures", False, "FunctionResponseTypes=[ReportBatchItemFailures]: let the "
                "handler return batchItemFailures so only those messages come back (off by default)", DOC_ERRORS),
        Setting("horizon", 3600.0, "virtual seconds after which the run stops; orders still in flight are then "
                "reported as pending (verdict unknown)", None, 1, 14 * 24 * 3600),
    )


def max_depth(batch_size: int) -> int:
    """How many messages the producer lets sit in the queue: about two batches.

    moto's SQS cost grows with queue depth, so a long run stays cheap only if the queue
    stays shallow; 200 caps it for large batch sizes.
    """
    return min(max(2 * batch_size, 10), 200)


def run_sqs(sb, fn, cfg: dict[str, Any], schedule: list[tuple[float, Any]], *, backlog: int = 0,
            read_timeout: float = 60.0) -> tuple[SqsQueue, SqsEventSourceMapping, Producer]:
    """Create the queue and the mapping, let the producer send ``schedule``, run until all is settled.

    ``backlog`` orders are already in the queue when the mapping starts polling, so a batch's
    make-up never depends on the seed. At the end, every accepted order still in the queue or
    never sent gets one "pending" record.
    """
    queue = SqsQueue(sb, "orders", visibility_timeout=cfg["visibility_timeout"],
                     max_receive_count=cfg["max_receive_count"])
    mapping = SqsEventSourceMapping(sb, fn, queue, SqsMappingConfig(
        batch_size=cfg["batch_size"], batching_window=cfg["batching_window"], max_concurrency=cfg["max_concurrency"],
        report_batch_item_failures=cfg["report_batch_item_failures"], pollers=cfg["pollers"]))
    last = max((at for at, _ in schedule), default=0.0)
    if last >= cfg["horizon"]:
        raise BadInput(f"the last message is due at {last:g} s, not before the horizon {cfg['horizon']:g} s; "
                       f"raise horizon")
    producer = Producer(sb, queue, schedule, max_depth=max_depth(cfg["batch_size"]), read_timeout=read_timeout)
    producer.start()
    backlog = min(backlog, producer.max_depth, len(schedule))
    if backlog:
        sb.run(stop_when=lambda: producer.position >= backlog or producer.done)
    mapping.start()
    sb.run(until=cfg["horizon"], stop_when=lambda: producer.done and mapping.drained())
    mapping.stop()
    t = sb.clock.elapsed()
    for key in dict.fromkeys(mapping.pending_keys() + producer.unsent_keys()):
        sb.record_delivery(source="sqs", what="pending", keys=[key], inv=None,
                          detail={"reason": f"still in the queue or not yet sent when the run stopped at {t:g} s"})
    return queue, mapping, producer


def payment_of(cfg: dict[str, Any]) -> str | None:
    return "card" if cfg["payment"] == "card" else None


class SqsBatchFailure(Scenario):
    name = "sqs-batch-failure"
    kind = "duplicate source"
    summary = ("Three orders wait in an SQS queue and reach the function in one batch. The email provider fails "
               "once for the last of them, so the invocation fails; Lambda deletes nothing, and after the 30 s "
               "visibility timeout SQS hands out the whole batch again, the orders already emailed included.")
    settings = sqs_settings() + (
        Setting("fail_order", 3, "the position of the order whose email provider fails, sending nothing "
                "(0: no fault); a later order, so the earlier ones were already emailed", None, 0, 10000),
        Setting("failures", 1, "how many calls to that order's email provider fail", None, 0, 1000),
        Setting("poison", 0, "how many poison messages (a body that is not JSON) the producer adds 1 s after "
                "the orders (0: none); each fails until SQS moves it to the dead-letter queue", DOC_DLQ, 0, 10),
    )

    def drive(self, sb, fn, cfg):
        orders = make_orders(cfg["orders"], sb.seed, payment=payment_of(cfg))
        if cfg["fail_order"] > len(orders):
            raise BadInput(f"fail_order {cfg['fail_order']} is beyond the {len(orders)} orders; "
                           f"pick 1 to {len(orders)}, or 0 for no fault")
        if cfg["fail_order"] and cfg["failures"]:
            sb.services.fault("email", orders[cfg["fail_order"] - 1]["orderId"], fail=cfg["failures"])
        # The poison arrives on its own, after the orders' batch was taken, so it fails alone.
        schedule = [(0.0, order) for order in orders] + [(1.0, POISON_BODY)] * cfg["poison"]
        return run_sqs(sb, fn, cfg, schedule, backlog=len(orders))
