"""sqs-throttled-batch: the function is throttled, Lambda keeps retrying the batch it holds, and the
messages' visibility timeout runs out meanwhile.

AWS semantics. A throttled invoke is not a function error: "If the invocation fails due to
throttling, Lambda gradually backs off retries by reducing the amount of concurrency allocated
to your Amazon SQS event source mapping. Lambda continues to retry the message until the
message's timestamp exceeds your queue's visibility timeout, at which point Lambda drops the
message" (https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-errorhandling.html). The
visibility timeout counts from the receive
(https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-visibility-timeout.html),
so those retries spend it, and this is the reason AWS gives for its advice to set the visibility
timeout to at least six times the function timeout: "The extra time allows Lambda to retry if
your function is throttled while processing a previous batch"
(https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-configure.html). With less, a retry
that gets through late leaves the invocation too little time: the messages become visible
while it still runs, another poller receives them (Lambda runs several pollers, and keeps at
least 2 concurrent batches even on a quiet queue,
https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-scaling.html), and the batch is
processed twice.

Left out: the other half of that sentence, the mapping's *reduced concurrency* after a throttle. AWS gives no
figure for how far or for how long it backs off, and here the pollers keep their number (two, or as the
scenario sets them); the duplicate comes from the visibility timeout running out, which the back-off does not
change.

The other ending, when no retry gets through before the visibility timeout: Lambda drops the
batch without running it, the messages come back with one receive spent, and a low
maxReceiveCount then moves them to the dead-letter queue without a single run, a lost order.
An earlier version of https://docs.aws.amazon.com/lambda/latest/dg/with-sqs.html said so: "Set
the maxReceiveCount on the queue's redrive policy to at least 5 to avoid sending messages to
the dead letter queue due to throttling". Set ``max_receive_count=1`` with ``throttled_for`` at
least the visibility timeout to see it. The duplicate is the default because it is what AWS's
six-times advice guards against today, and it happens with the queue's default redrive policy
(maxReceiveCount 5).

Our assumptions, where AWS gives no figure: the poller tries again 1 s after a 429, then 2,
4, 8 ... s later (the backoff AWS documents for Lambda's asynchronous queue,
https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-error-handling.html), and it
drops the batch as soon as its next try would come after the visibility timeout of the batch's
first receive. The number of pollers is not reduced after a throttle.

At the defaults: three orders, one batch received at 0 s; the function is throttled for the
first 6 s (say, other work holds its reserved concurrency), so the tries at 0, 1 and 3 s get
429 and the try at 7 s gets through. Each email takes 0.6 s, so the invocation runs until
8.8 s, past the 8 s visibility timeout: at 8 s a second poller receives the same three
messages and emails them again. With the visibility timeout at six times the 3 s function
timeout (18 s), the same throttling leaves the messages hidden until they are deleted at 8.8 s.
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
class SqsThrottledBatchSettings(SqsSettings, defaults={"visibility_timeout": 8, "throttled_from": 0.0,
                                                      "throttled_for": 6.0}):
    # Slow enough that a try getting through at 7 s still runs past the 8 s visibility timeout (3 x 0.6 s),
    # within the 3 s function timeout.
    run: RunConfig = group(RunConfig, email_seconds=0.6)


class SqsThrottledBatch(SqsScenario[SqsThrottledBatchSettings]):
    name = "sqs-throttled-batch"
    kind = "duplicate source"
    source = "SQS"
    headline = "a throttled batch is retried until its visibility timeout runs out; another poller takes it too"
    summary = ("Three orders reach a poller in one batch while the function is throttled (its concurrency is taken "
               "for the first 6 s). Lambda keeps the batch and tries the invoke again: 429 at 0, 1 and 3 s, through "
               "at 7 s. Each email takes 0.6 s, but the 8 s visibility timeout, counted from the receive, runs out "
               "at 8 s: a second poller receives the same messages while the first invocation still sends, and the "
               "batch is processed twice. AWS advises a visibility timeout of six times the 3 s function timeout "
               "(18 s) to leave room for exactly these retries.")

    def deliver(self, sb: Sandbox, fn: LambdaFunction, cfg: SqsThrottledBatchSettings) -> SqsRun:
        orders = make_orders(cfg.orders, sb.seed, payment=payment_of(cfg.payment))
        return run_sqs(sb, fn, cfg, [(0.0, order) for order in orders], backlog=len(orders))
