"""sns-delivery-retry: SNS retries a delivery whose answer was lost, so Lambda gets the message twice.

SNS invokes a subscribed function asynchronously, and retries a delivery it sees fail "at
increasing intervals over several hours" (https://docs.aws.amazon.com/lambda/latest/dg/with-sns.html).
For AWS-managed endpoints such as Lambda its delivery policy starts with "3 times, without delay"
(https://docs.aws.amazon.com/sns/latest/dg/sns-message-delivery-retries.html). A delivery counts
as failed when SNS hears nothing back, including when Lambda did accept it: the SNS guide lists
"no network disruptions that prevent acknowledgment of the message delivery" among the conditions
for exactly-once processing (https://docs.aws.amazon.com/sns/latest/dg/fifo-message-dedup.html).
That retry is the duplicate here, chosen over SNS's plain at-least-once copy because AWS's
developer guides document its mechanism and its timing; the copy ("occasionally more than one
copy of a message is delivered", https://aws.amazon.com/sns/features/) is the
``duplicate_deliveries`` setting. Both copies carry the same ``MessageId``; Lambda queues each as a
new event with a new request id, so keying on the request id does not catch it.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..core.faults import AwsFault
from ..events import make_orders
from ..runtime.functions import LambdaFunction
from ..settings import group, param
from ..sources.async_invoke import AsyncConfig
from ..sources.base import run_sources
from ..sources.sns import DOC_ACK, DOC_RETRIES, SnsConfig, SnsPublisher, SnsSource
from ..world import Sandbox
from .base import Scenario, ScenarioSettings


@dataclass(frozen=True)
class SnsDeliveryRetrySettings(ScenarioSettings):
    orders: int = param(1, "how many orders the one message carries", None, 1, 50)
    lost_answers: int = param(1, "how many of SNS's hand-offs Lambda accepts while its answer to SNS is lost: "
                              "SNS retries each, handing the message over again", DOC_ACK, 0, 10)
    failed_handoffs: int = param(0, "how many of SNS's hand-offs fail before those (Lambda's service answers "
                                 "500): SNS retries them too, and they ran nothing", DOC_RETRIES, 0, 200)
    topic: SnsConfig = group(SnsConfig)
    async_queue: AsyncConfig = group(AsyncConfig)


class SnsDeliveryRetry(Scenario[SnsDeliveryRetrySettings]):
    name = "sns-delivery-retry"
    kind = "duplicate source"
    source = "SNS"
    headline = "SNS retries a delivery whose answer was lost: Lambda gets the same message twice"
    summary = ("A publisher publishes one message carrying an order to an SNS topic, and the function is subscribed "
               "to it. SNS hands the message to Lambda, which accepts it and runs the function, but Lambda's answer "
               "never reaches SNS. SNS counts the delivery failed and retries it at once, as its delivery policy "
               "for Lambda says; Lambda queues the same message (same MessageId) a second time, and the function "
               "runs twice and emails the customer twice. Nothing failed in the function.")

    def drive(self, sb: Sandbox, fn: LambdaFunction, cfg: SnsDeliveryRetrySettings) -> None:
        orders = make_orders(cfg.orders, sb.seed)
        topic = SnsSource(sb, fn, cfg.topic, cfg.async_queue)
        if cfg.failed_handoffs:
            sb.faults.add(AwsFault("5xx", "lambda", "Invoke", times=cfg.failed_handoffs))
        if cfg.lost_answers:
            sb.faults.add(AwsFault("timeout-applied", "lambda", "Invoke", times=cfg.lost_answers))
        run_sources(sb, SnsPublisher(sb, [(0.0, orders)], topic.topic_arn), topic)
