"""sqs-batch-failure: a later order of an SQS batch fails, and the whole batch comes back.

AWS semantics (https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-errorhandling.html):
when an invocation fails, Lambda deletes nothing, so once the visibility timeout (30 s by
default, https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-visibility-timeout.html)
has run out every message of the batch is received again, the orders the failed invocation
had already handled included. With ReportBatchItemFailures the handler can name the failed
messages, and only those come back. A message that keeps failing is moved to the
dead-letter queue after maxReceiveCount receives
(https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-dead-letter-queues.html).

This module also holds what the SQS scenarios share: their settings and their run.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from ..core.faults import ProviderFault
from ..errors import BadInput
from ..events import make_orders
from ..runtime.functions import DOC_TIMEOUT, LambdaFunction
from ..settings import group, param
from ..sources.base import Source, run_sources
from ..sources.fifo import FifoQueueConfig
from ..sources.producer import Producer
from ..sources.sqs import (
    DOC_DLQ,
    OPT_IN_MAPPING_SETTINGS,
    OPT_IN_QUEUE_SETTINGS,
    QueueConfig,
    SqsEventSourceMapping,
    SqsMappingConfig,
    SqsQueue,
)
from ..sources.sync_invoke import CallerConfig
from ..vocab import Effect
from ..world import Sandbox
from .base import Scenario, ScenarioSettings, payment_choice, payment_of

#: The body of a poison message: not JSON, so no handler can read an order from it.
POISON_BODY = "order o-?? (not JSON: a producer bug)"


@dataclass(frozen=True)
class SqsSettings(ScenarioSettings):
    """The workload, queue and event source mapping settings every SQS scenario offers.

    A queue setting in ``OPT_IN_QUEUE_SETTINGS`` (a mapping setting in ``OPT_IN_MAPPING_SETTINGS``) is
    offered only by a scenario that gives its default.
    The mapping is deployed with ReportBatchItemFailures unless a scenario says otherwise: AWS leaves
    it off until asked, but a handler that handles records one by one returns batchItemFailures, and
    with the setting off Lambda ignores them and deletes (or checkpoints past) the whole batch. A
    handler that raises fails the whole batch either way.
    """

    orders: int = param(3, "how many orders the producer sends, one SendMessage each", None, 1, 100_000)
    payment: str = payment_choice()
    queue: QueueConfig = group(QueueConfig, opt_in=OPT_IN_QUEUE_SETTINGS)
    mapping: SqsMappingConfig = group(SqsMappingConfig, opt_in=OPT_IN_MAPPING_SETTINGS,
                                      report_batch_item_failures=True)
    horizon: float = param(3600.0, "virtual seconds after which the run stops; orders still in flight are then "
                           "reported as pending (verdict unknown)", None, 1, 14 * 24 * 3600)


#: What ``run_sqs`` made: the queue, its event source mapping and the producer.
SqsRun = tuple[SqsQueue, SqsEventSourceMapping, Producer]


def max_depth(batch_size: int) -> int:
    """How many messages the producer lets sit in the queue: about two batches.

    moto's SQS cost grows with queue depth, so a long run stays cheap only if the queue
    stays shallow; 200 caps it for large batch sizes.
    """
    return min(max(2 * batch_size, 10), 200)


def run_sqs(sb: Sandbox, fn: LambdaFunction, cfg: SqsSettings, schedule: list[tuple[float, Any]], *,
            backlog: int = 0,
            client: CallerConfig | None = None, fifo: FifoQueueConfig | None = None,
            message_params: Callable[[Any], dict] | None = None,
            extra: Callable[[SqsQueue], list[Source]] | None = None,
            ) -> SqsRun:
    """Create the queue and the mapping, let the producer send ``schedule``, run until all is settled.

    ``backlog`` orders are already in the queue when the mapping starts polling, so a batch's
    make-up never depends on the seed. At the end, every accepted order still in the queue or
    never sent gets one "pending" record. ``fifo`` makes the queue ``orders.fifo``;
    ``message_params`` adds to each SendMessage; ``extra(queue)`` gives more sources to run.
    """
    queue = SqsQueue(sb, "orders.fifo" if fifo is not None else "orders", cfg.queue, fifo=fifo)
    mapping = SqsEventSourceMapping(sb, fn, queue, cfg.mapping)
    last = max((at for at, _ in schedule), default=0.0)
    if last >= cfg.horizon:
        raise BadInput(f"the last message is due at {last:g} s, not before the horizon {cfg.horizon:g} s; "
                       f"raise horizon")
    producer = Producer(sb, queue, schedule, max_depth=max_depth(cfg.mapping.batch_size), client=client,
                        message_params=message_params)
    producer.start()
    backlog = min(backlog, producer.max_depth, len(schedule))
    if backlog:
        sb.run(stop_when=lambda: producer.position >= backlog or producer.done)
    run_sources(sb, mapping, producer, *(extra(queue) if extra is not None else ()), horizon=cfg.horizon)
    return queue, mapping, producer


Q = TypeVar("Q", bound=SqsSettings)


class SqsScenario(Scenario[Q]):
    """A scenario of an SQS queue: ``deliver`` drives it and returns its queue, mapping and producer, for a test to
    look into after the run."""

    def drive(self, sb: Sandbox, fn: LambdaFunction, cfg: Q) -> None:
        self.deliver(sb, fn, cfg)

    def deliver(self, sb: Sandbox, fn: LambdaFunction, cfg: Q) -> SqsRun:
        raise NotImplementedError


@dataclass(frozen=True)
class SqsBatchFailureSettings(SqsSettings):
    fail_order: int = param(3, "the position of the order whose email provider fails, sending nothing "
                            "(0: no fault); a later order, so the earlier ones were already emailed", None, 0, 10000)
    failures: int = param(1, "how many calls to that order's email provider fail", None, 0, 1000)
    hang: bool = param(
        False, "the failing calls hang instead of failing: the function times out with that "
        "order's claim still in progress, and (a timeout failing the whole invocation) the batch comes back "
        "after the visibility timeout", DOC_TIMEOUT)
    poison: int = param(0, "how many poison messages (a body that is not JSON) the producer adds after the "
                        "orders (0: none); each fails until SQS moves it to the dead-letter queue", DOC_DLQ, 0, 10)
    poison_delay: float = param(
        1.0, "seconds after the orders that the poison messages are added: at 1 s they "
        "arrive after the orders' batch was taken and fail alone; at 0 they share the orders' batch, and a "
        "handler that raises on one sends every order of it back", None, 0.0, 3600.0)


class SqsBatchFailure(SqsScenario[SqsBatchFailureSettings]):
    name = "sqs-batch-failure"
    kind = "duplicate source"
    source = "SQS"
    headline = "a failed SQS batch comes back whole, handled records included"
    summary = ("Three orders wait in an SQS queue and reach the function in one batch. The email provider fails "
               "once for the last of them, so the invocation fails; Lambda deletes nothing, and after the 30 s "
               "visibility timeout SQS hands out the whole batch again, the orders already emailed included.")

    def deliver(self, sb: Sandbox, fn: LambdaFunction, cfg: SqsBatchFailureSettings) -> SqsRun:
        orders = make_orders(cfg.orders, sb.seed, payment=payment_of(cfg.payment))
        if cfg.fail_order > len(orders):
            raise BadInput(f"fail_order {cfg.fail_order} is beyond the {len(orders)} orders; "
                           f"pick 1 to {len(orders)}, or 0 for no fault")
        if cfg.fail_order and cfg.failures:
            order = orders[cfg.fail_order - 1]["orderId"]
            sb.faults.add(ProviderFault(Effect.EMAIL, order, hang=True, calls=cfg.failures) if cfg.hang
                          else ProviderFault(Effect.EMAIL, order, fail=cfg.failures))
        # By default the poison arrives on its own, after the orders' batch was taken, so it fails alone.
        schedule = [(0.0, order) for order in orders] + [(float(cfg.poison_delay), POISON_BODY)] * cfg.poison
        joins = cfg.poison if not cfg.poison_delay else 0  # the poller waits for these too: one batch
        return run_sqs(sb, fn, cfg, schedule, backlog=len(orders) + joins)
