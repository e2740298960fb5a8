"""sqs-visibility-timeout: processing outlasts the visibility timeout, so a second poller takes the batch.

AWS semantics: a message's visibility timeout starts when it is received
(https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-visibility-timeout.html).
Lambda only refuses a function timeout longer than the visibility timeout
(https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-configure.html), but a poller
that has received a batch first waits out the batching window
(https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-parameters.html), so window plus
work can still outlast the visibility timeout. The messages then become visible while the
first invocation is still working on them, another poller receives them again, and the
batch is processed twice. AWS recommends a visibility timeout of at least six times the
function timeout (https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-configure.html);
because visibility counts from receipt, the batching window comes on top: six times the
function timeout plus MaximumBatchingWindowInSeconds.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..events import make_orders
from ..runtime.functions import LambdaFunction
from ..settings import group
from ..world import Sandbox
from .base import RunConfig, payment_of
from .sqs_batch_failure import SqsRun, SqsScenario, SqsSettings, run_sqs


@dataclass(frozen=True)
class SqsVisibilityTimeoutSettings(SqsSettings, defaults={"visibility_timeout": 5, "batching_window": 4}):
    # Slow enough that window plus work (4 s + 3 x 0.6 s) outlasts the 5 s visibility timeout,
    # while the 3 s function timeout still fits inside it, so Lambda accepts the mapping.
    run: RunConfig = group(RunConfig, email_seconds=0.6)


class SqsVisibilityTimeout(SqsScenario[SqsVisibilityTimeoutSettings]):
    name = "sqs-visibility-timeout"
    kind = "duplicate source"
    source = "SQS"
    headline = "processing outlasts the visibility timeout; another poller takes the batch"
    summary = ("Three orders reach a poller together. The batch is not full, so the poller waits its 4 s batching "
               "window before invoking, and each email takes 0.6 s; by then the 5 s visibility timeout, counted from "
               "receipt, has run out. A second poller receives the same messages while the first invocation is "
               "still sending, and the batch is processed twice. Nothing failed.")

    def deliver(self, sb: Sandbox, fn: LambdaFunction, cfg: SqsVisibilityTimeoutSettings) -> SqsRun:
        orders = make_orders(cfg.orders, sb.seed, payment=payment_of(cfg.payment))
        return run_sqs(sb, fn, cfg, [(0.0, order) for order in orders], backlog=len(orders))
