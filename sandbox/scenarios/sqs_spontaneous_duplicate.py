"""sqs-spontaneous-duplicate: nothing fails, the visibility timeout is right, and SQS still delivers twice.

AWS semantics: "Lambda event source mappings process each event at least once, and
duplicate processing of records can occur"
(https://docs.aws.amazon.com/lambda/latest/dg/invocation-eventsourcemapping.html). A standard
queue stores each message on several servers: "On rare occasions, one of the servers that
stores a copy of a message might be unavailable when you receive or delete a message. If
this occurs, the copy of the message isn't deleted on the server that is unavailable, and
you might get that message copy again when you receive messages"
(https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/standard-queues-at-least-once-delivery.html).

In the sandbox the queue's ``duplicate_probability`` is the chance that Lambda's
DeleteMessage of a handled message misses such a copy (drawn from the seed). For the demo it
is 1, so every message comes back once; on AWS it is rare, which is why a handler that has
never seen it in testing still needs to survive it. The visibility timeout (30 s) is well
above AWS's advice of six times the 3 s function timeout, and no invocation fails: a learner
who fixed every timeout still gets the duplicate.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..events import make_orders
from ..runtime.functions import LambdaFunction
from ..world import Sandbox
from .base import payment_of
from .sqs_batch_failure import SqsRun, SqsScenario, SqsSettings, run_sqs


@dataclass(frozen=True)
# For the demo every handled message's delete misses a copy; on AWS this is rare.
class SqsSpontaneousDuplicateSettings(SqsSettings, defaults={"duplicate_probability": 1.0}):
    pass


class SqsSpontaneousDuplicate(SqsScenario[SqsSpontaneousDuplicateSettings]):
    name = "sqs-spontaneous-duplicate"
    kind = "duplicate source"
    source = "SQS"
    headline = "nothing fails, yet a stored copy of a message is delivered again (at-least-once)"
    summary = ("Three orders reach the function in one SQS batch, everything succeeds, and Lambda deletes the batch. "
               "But a server holding a copy of each message was unavailable when it was deleted, so those copies "
               "survive, and 30 s later, once the visibility timeout runs out, SQS hands them out again. The "
               "visibility timeout is correct and nothing failed: SQS with Lambda is at-least-once, not "
               "exactly-once.")

    def deliver(self, sb: Sandbox, fn: LambdaFunction, cfg: SqsSpontaneousDuplicateSettings) -> SqsRun:
        orders = make_orders(cfg.orders, sb.seed, payment=payment_of(cfg.payment))
        return run_sqs(sb, fn, cfg, [(0.0, order) for order in orders], backlog=len(orders))
