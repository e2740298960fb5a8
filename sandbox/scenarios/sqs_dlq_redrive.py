"""sqs-dlq-redrive: a batch ends in the dead-letter queue half done, and the redrive replays all of it.

AWS semantics: a message received maxReceiveCount times without being deleted moves to the
queue's dead-letter queue
(https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-dead-letter-queues.html).
Without partial batch responses a failed invocation deletes nothing, so every message of the
batch goes there, the ones already handled included
(https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-errorhandling.html). Once the bug
is fixed, an operator redrives the dead-letter queue with StartMessageMoveTask, an
asynchronous task that moves the messages back to their source queue
(https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_StartMessageMoveTask.html),
where "All redriven messages are considered new messages" with a new messageID
(https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-configure-dead-letter-queue-redrive.html):
their retention starts again, so the time within which an order may come back is the
dead-letter queue's retention plus the source queue's, not the source queue's alone.
The function then gets every order of the batch again, those whose work was done included,
under MessageIds it has never seen. moto 5.2.5 has no StartMessageMoveTask; the sandbox serves
it (``sandbox.sources.redrive``).
"""
from __future__ import annotations

from dataclasses import dataclass

from ..core.faults import ProviderFault
from ..errors import BadInput
from ..events import make_orders
from ..runtime.functions import LambdaFunction
from ..settings import param
from ..sources.base import Source
from ..sources.redrive import DOC_MOVE, MAX_RATE, MessageMoveTasks, Operator
from ..sources.sqs import DOC_SQS_RETRIES, SqsQueue
from ..vocab import Effect
from ..world import Sandbox
from .base import payment_of
from .sqs_batch_failure import SqsRun, SqsScenario, SqsSettings, run_sqs


@dataclass(frozen=True)
class SqsDlqRedriveSettings(SqsSettings, defaults={
        "orders": 2,
        "max_receive_count": (1, "the redrive policy's maxReceiveCount: receives before SQS moves a message to the "
                                 "dead-letter queue; 1 keeps the picture to the redrive (AWS recommends at least 5 for "
                                 "a Lambda source: try it, o-1 is then also emailed on every failed receive)")}):
    fail_order: int = param(
        2, "the position of the order whose email fails (the bug) on every receive until the "
        "messages are dead-lettered; a later order, so the earlier ones were already emailed (0: no bug, "
        "nothing to redrive)", None, 0, 10000)
    redrive_after: float = param(
        90.0, "seconds from the first message reaching the dead-letter queue (the alarm) "
        "until the operator, the bug fixed, starts the redrive (StartMessageMoveTask); a redrive days later "
        "outlives an idempotency record kept for the source queue's retention alone (raise horizon with "
        "it)", DOC_MOVE, 0, 14 * 24 * 3600)
    redrive_rate: int = param(0, "MaxNumberOfMessagesPerSecond of the move task (0: not set, system-optimized, "
                              f"modelled as no pause; at most {MAX_RATE})", DOC_MOVE, 0, MAX_RATE)


class SqsDlqRedrive(SqsScenario[SqsDlqRedriveSettings]):
    name = "sqs-dlq-redrive"
    kind = "duplicate source"
    source = "SQS"
    headline = "messages redriven from the dead-letter queue come back with their work half done"
    summary = ("Two orders reach the function in one SQS batch. Order o-1 is emailed, then a bug makes o-2 "
               "fail, so the whole batch fails and, once received maxReceiveCount times, both messages move to the "
               "dead-letter queue. 90 s after that alarm the bug is fixed and an operator redrives the dead-letter "
               "queue (StartMessageMoveTask): both orders come back as new messages with new MessageIds, and o-1 is "
               "emailed a second time.")

    def deliver(self, sb: Sandbox, fn: LambdaFunction, cfg: SqsDlqRedriveSettings) -> SqsRun:
        orders = make_orders(cfg.orders, sb.seed, payment=payment_of(cfg.payment))
        if cfg.fail_order > len(orders):
            raise BadInput(f"fail_order {cfg.fail_order} is beyond the {len(orders)} orders; "
                           f"pick 1 to {len(orders)}")
        if cfg.fail_order and cfg.redrive_after >= cfg.horizon:
            raise BadInput(f"the redrive starts {cfg.redrive_after:g} s after the alarm, past the run's horizon "
                           f"({cfg.horizon:g} s); raise horizon above redrive_after")
        if not cfg.queue.max_receive_count:
            raise BadInput(f"a redrive needs a dead-letter queue: set max_receive_count to 1 or more "
                           f"({DOC_SQS_RETRIES})")
        # The bug fails the order on every receive until the messages are dead-lettered; by the redrive it is fixed.
        if cfg.fail_order:
            sb.faults.add(ProviderFault(Effect.EMAIL, orders[cfg.fail_order - 1]["orderId"],
                                        fail=cfg.queue.max_receive_count))

        def operator(queue: SqsQueue) -> list[Source]:
            moves = MessageMoveTasks(sb, queue)
            return [Operator(sb, moves, queue, cfg.redrive_after, rate=cfg.redrive_rate or None)]

        return run_sqs(sb, fn, cfg, [(0.0, order) for order in orders], backlog=len(orders), extra=operator)
