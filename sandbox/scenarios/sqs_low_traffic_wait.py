"""sqs-low-traffic-wait: on a quiet queue Lambda holds a batch up to 20 s, past its batching window,
and the message's visibility timeout runs out before the invocation ends.

AWS semantics: "If you're using a batch window and your SQS queue contains very low traffic,
Lambda might wait for up to 20 seconds before invoking your function. This is true even if you
set a batch window lower than 20 seconds"
(https://docs.aws.amazon.com/lambda/latest/dg/with-sqs.html). The visibility timeout counts from
the receive (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-visibility-timeout.html),
so that wait spends it. AWS's advice for the visibility timeout is six times the function
timeout (https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-configure.html), plus the
batching window, as an earlier version of with-sqs.html put it; neither counts the quiet-queue
wait, and with a short function timeout the advice is shorter than 20 s.

Our assumptions, where AWS gives no figure: the mapping's ``quiet_queue_wait`` is how long
Lambda holds a batch on a quiet queue, and it is fixed (20 s here, AWS's bound), not drawn: AWS
gives no distribution, the bound is what a visibility timeout must cover, and a fixed wait tells
the same story for every seed. A batch still not full when its batching window ends counts as
"very low traffic". The wait applies only with a batching window, as AWS's note says.

At the defaults: one order, a 3 s batching window, a 2 s function timeout (sending one email
takes 0.2 s) and a 15 s visibility timeout: AWS's advice of six function timeouts plus the
window, exactly. The poller receives the order at 0 s and, the queue being quiet, holds it 20 s.
At 15 s the message becomes visible again and a second poller receives it, and holds it too.
The first invocation, at 20 s, sends the email and deletes the message; the second, at 35 s,
sends it again. (With a visibility timeout of 10 s or less, a third poller would take it too
before the first deletes it.)
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
class SqsLowTrafficWaitSettings(SqsSettings, defaults={"orders": 1, "visibility_timeout": 15, "batching_window": 3,
                                                     "quiet_queue_wait": 20.0}):
    # A short function timeout: AWS's advice (six of them plus the window) then stays below the 20 s wait.
    run: RunConfig = group(RunConfig, function_timeout=2.0)


class SqsLowTrafficWait(SqsScenario[SqsLowTrafficWaitSettings]):
    name = "sqs-low-traffic-wait"
    kind = "duplicate source"
    source = "SQS"
    headline = "on a quiet queue Lambda holds a batch up to 20 s, past its window and the visibility timeout"
    summary = ("One order arrives on a quiet SQS queue. The mapping's batching window is 3 s and the visibility "
               "timeout 15 s, as AWS advises: six times the 2 s function timeout, plus the window. But on a queue "
               "with very low traffic Lambda may wait up to 20 s before invoking, whatever the window: the poller "
               "holds the message, its visibility timeout runs out at 15 s, and a second poller receives it and "
               "holds it too. The first invocation emails at 20 s, the second at 35 s. Nothing failed.")

    def deliver(self, sb: Sandbox, fn: LambdaFunction, cfg: SqsLowTrafficWaitSettings) -> SqsRun:
        orders = make_orders(cfg.orders, sb.seed, payment=payment_of(cfg.payment))
        return run_sqs(sb, fn, cfg, [(0.0, order) for order in orders], backlog=len(orders))
