"""SNS: a topic the function is subscribed to, SNS's delivery retries, and its at-least-once delivery.

What this model keeps from AWS:

- moto serves the topic, the subscription (protocol ``lambda``) and Publish, and gives each
  message its ``MessageId``. It cannot deliver to a Lambda endpoint, so the sandbox plays that
  part (``adapter.route_sns_lambda_subscriptions``; moto's filter policies still apply).
- SNS invokes the function asynchronously: "Lambda processes SNS messages asynchronously by
  queuing the messages and handling retries. If Amazon SNS can't reach Lambda or the message is
  rejected, Amazon SNS retries at increasing intervals over several hours"
  (https://docs.aws.amazon.com/lambda/latest/dg/with-sns.html). Each delivery is a hand-off to
  Lambda's async queue (``AsyncInvokeSource``, reused as it is), so a function error is Lambda's
  to retry (1 and 2 minutes later), never SNS's. Lambda supports SNS triggers for standard topics
  only (FIFO topics are not supported, same page).
- The event is ``Records`` with ``EventSource: "aws:sns"`` (capital E) and an ``Sns`` object whose
  ``Message`` is the published text, as a string, with its ``MessageId``, ``TopicArn``,
  ``Timestamp`` and ``MessageAttributes`` (``events.sns_record``; the example on with-sns.html).
- SNS's delivery policy for AWS-managed endpoints, Lambda and SQS among them, cannot be changed
  and has four phases: "3 times, without delay", then "2 times, 1 second apart", then "10 times,
  with exponential backoff, from 1 second to 20 seconds", then "100,000 times, 20 seconds apart";
  the page sums them as "100,015 times, over 23 days"
  (https://docs.aws.amazon.com/sns/latest/dg/sns-message-delivery-retries.html). Here those are
  retries after the first attempt (``retry_delay``); once they are spent SNS "discards the
  message" (no dead-letter queue here). SNS also applies jitter, with no figures: left out, so
  the phases read exactly; the backoff phase's curve (1 s to 20 s, geometric) is an assumption.
- Which duplicate is modelled by default: the retry of a hand-off that took effect. A delivery
  counts as failed when SNS gets no answer, so when Lambda has accepted the message and its
  answer is lost, SNS's retry (the first phase: at once) hands the same message over again, with
  the same ``MessageId``; Lambda queues it as a new event and the function runs twice. AWS's
  SNS guide names this gap itself: deduplication gives exactly-once processing only while "There
  are no network disruptions that prevent acknowledgment of the message delivery"
  (https://docs.aws.amazon.com/sns/latest/dg/fifo-message-dedup.html), and this delivery policy
  is the retry that follows. The scenario injects the lost answer as
  ``AwsFault("timeout-applied", "lambda", "Invoke")``; a hand-off that fails outright (Lambda's
  service answers 500: ``AwsFault("5xx", "lambda", "Invoke")``) is retried the same way and
  repeats nothing.
- SNS standard topics also deliver at least once: "A message is delivered at least once, but
  occasionally more than one copy of a message is delivered" (https://aws.amazon.com/sns/features/,
  standard topics). That page gives no mechanism and no figure, so it is a setting, off by
  default (``duplicate_deliveries``): the same message handed over twice, nothing failed.

What it leaves out: SNS's own dead-letter queues, delivery status logging, FIFO topics and raw
message delivery (not for Lambda), and message signatures (a placeholder).
"""
from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from ..aws import adapter
from ..errors import BadInput
from ..events import Order, iso_millis, orders_in, sns_record
from ..settings import Config, param
from ..vocab import AWS_OK, Cause, Delivery, RecordType, SourceKind
from .async_front import FAILED_HANDOFF, AsyncFront
from .async_invoke import AsyncConfig
from .producer import ScheduledSender
from .sync_invoke import CallerConfig

if TYPE_CHECKING:
    from ..runtime.functions import LambdaFunction
    from ..world import Sandbox
    from .async_invoke import QueuedEvent

DOC_RETRIES = "https://docs.aws.amazon.com/sns/latest/dg/sns-message-delivery-retries.html"
DOC_LAMBDA = "https://docs.aws.amazon.com/lambda/latest/dg/with-sns.html"
DOC_ACK = "https://docs.aws.amazon.com/sns/latest/dg/fifo-message-dedup.html"
DOC_AT_LEAST_ONCE = "https://aws.amazon.com/sns/features/"
TOPIC = "orders"
#: SNS's delivery policy for AWS-managed endpoints (DOC_RETRIES): retries per phase, and the delays.
IMMEDIATE_RETRIES, PRE_BACKOFF_RETRIES, BACKOFF_RETRIES, POST_BACKOFF_RETRIES = 3, 2, 10, 100_000
MIN_DELAY, MAX_DELAY = 1.0, 20.0
MAX_RETRIES = IMMEDIATE_RETRIES + PRE_BACKOFF_RETRIES + BACKOFF_RETRIES + POST_BACKOFF_RETRIES


def retry_delay(n: int) -> float | None:
    """Seconds SNS waits before its ``n``-th retry of a delivery (1-based); None once the policy is spent."""
    if n <= IMMEDIATE_RETRIES:
        return 0.0
    n -= IMMEDIATE_RETRIES
    if n <= PRE_BACKOFF_RETRIES:
        return MIN_DELAY
    n -= PRE_BACKOFF_RETRIES
    if n <= BACKOFF_RETRIES:
        return round(MIN_DELAY * (MAX_DELAY / MIN_DELAY) ** ((n - 1) / (BACKOFF_RETRIES - 1)), 6)
    n -= BACKOFF_RETRIES
    return MAX_DELAY if n <= POST_BACKOFF_RETRIES else None


@dataclass(frozen=True)
class SnsConfig(Config):
    """How SNS delivers to the function. Its delivery policy for Lambda is AWS's and fixed (DOC_RETRIES)."""

    answer_timeout: float = param(
        1.0, "seconds SNS waits for Lambda's answer to a hand-off before it counts the delivery failed and "
        "retries it (AWS gives no figure)", DOC_RETRIES, 0.01, 900)
    duplicate_deliveries: float = param(
        0.0, "probability (seeded) that the standard topic hands a message to the function twice with nothing "
        "failed: it delivers at least once, occasionally more than once (SNS's features page, "
        f"{DOC_AT_LEAST_ONCE})", None, 0, 1)
    duplicate_delivery_delay: float = param(
        0.5, "seconds after the first hand-off that the at-least-once copy comes (AWS gives no figure)", None,
        0, 3600)


class SnsSource(AsyncFront):
    """A standard topic with the function subscribed (protocol ``lambda``), in front of Lambda's async queue."""

    kind = SourceKind.SNS
    service = "SNS"
    pending_reason = "SNS was still retrying its delivery when the run stopped"

    def __init__(self, world: "Sandbox", function: "LambdaFunction", config: SnsConfig | None = None,
                 async_config: AsyncConfig | None = None, *, topic: str = TOPIC):
        self.config, self.topic = config or SnsConfig(), topic
        self.topic_arn = self.subscription_arn = ""
        self.messages: list[dict] = []  # every message's event, as the function gets it
        self.dropped: list[dict] = []
        super().__init__(world, function, async_config)

    def _setup(self) -> None:
        sns = adapter.shared_client(self.world.region, "sns")
        with self.world.gateway.unrecorded():
            self.topic_arn = sns.create_topic(Name=self.topic)["TopicArn"]
            self.subscription_arn = sns.subscribe(TopicArn=self.topic_arn, Protocol="lambda",
                                                  Endpoint=self.function.config.arn,
                                                  ReturnSubscriptionArn=True)["SubscriptionArn"]
        adapter.route_sns_lambda_subscriptions(self._published)

    def _published(self, message: dict) -> None:
        """moto has a message for a Lambda subscription (inside the Publish request): deliver it on its own task."""
        if message["topic"] != self.topic_arn or message["endpoint"] != self.function.config.arn:
            return
        event = {"Records": [sns_record(message, iso_millis(self.world.clock.now()), self.world.region)]}
        self.messages.append(event)
        try:
            keys = [str(o["orderId"]) for o in orders_in(event)]
        except BadInput:  # not an order: the function still gets it, and says what is wrong with it
            keys = []
        self.deliver(self._deliver, event, message["message_id"], keys, event_id=message["message_id"], keys=keys)

    def _deliver(self, event: dict, message_id: str, keys: list[str]) -> None:
        """Hand the message to Lambda; retry, as SNS's delivery policy says, each hand-off SNS does not hear back
        from (refused with a 500, or accepted with its answer lost)."""
        accepted: "QueuedEvent | None" = None  # a hand-off Lambda took although SNS never heard so
        failed = 0
        while True:
            fault = self.lambda_fault()
            if fault is None or fault.kind == "timeout-applied":
                entry = (self.hand_off(event, keys) if accepted is None
                         else self.hand_off(event, keys, Cause.DELIVERY_RETRY, accepted))
                if fault is None:
                    self.delivered(message_id)
                    self.maybe_again(event, message_id, keys, entry, self.config.duplicate_deliveries,
                                     self.config.duplicate_delivery_delay, "the standard topic delivered the message "
                                     f"a second time, nothing failed (at-least-once: {DOC_AT_LEAST_ONCE})")
                    return
                accepted = accepted or entry
                self.world.scheduler.sleep(self.config.answer_timeout, label="SNS waits for Lambda's answer")
            failed += 1
            if not self._retry(message_id, keys, event, failed, lost=fault.kind == "timeout-applied"):
                return

    def _retry(self, message_id: str, keys: list[str], event: dict, failed: int, lost: bool) -> bool:
        """Record the failed delivery and wait for SNS's next retry (True), or drop the message (False)."""
        world, delay = self.world, retry_delay(failed)
        detail: dict[str, Any] = {"event": message_id, "attempt": failed}
        if lost:
            detail.update(error=f"no answer within {self.config.answer_timeout:g} s", accepted=True,
                          waited=self.config.answer_timeout)
        else:
            detail.update(status=FAILED_HANDOFF[0], error=FAILED_HANDOFF[1])
        if delay is None:
            self.delivered(message_id)
            self.dropped.append(event)
            world.record_delivery(self.kind, Delivery.DISCARDED, keys, None, {
                **detail, "reason": f"SNS's delivery policy is spent ({MAX_RETRIES} retries); the message is "
                                    "discarded, no dead-letter queue"})
            return False
        what = Delivery.ANSWER_LOST if lost else Delivery.DELIVERY_FAILED
        world.record_delivery(self.kind, what, keys, None, {**detail, "retry_in": delay, "why": (
            "Lambda accepted the message, but SNS never got the answer, so it counts the delivery failed and "
            "retries it" if lost else "Lambda's service refused the hand-off; SNS retries it")})
        if delay:
            world.scheduler.sleep(delay, label=f"SNS retries in {delay:g} s")
        return True


class SnsPublisher(ScheduledSender):
    """Publishes ``schedule`` (pairs of virtual send time and a list of orders) to the topic, one message each.

    A message carrying one order is that order as JSON; one carrying several is ``{"orders": [...]}``.
    Its client is a boto3 ``sns`` client configured as ``client`` says; it waits out a read
    timeout before its SDK retries, as a real one would (see ``producer.py``). A retried Publish
    is a second message with a new ``MessageId``: a standard topic takes no deduplication id.
    """

    kind = SourceKind.SNS
    verb = "published"

    def __init__(self, world: "Sandbox", schedule: Iterable[tuple[float, list[Order]]], topic_arn: str, *,
                 client: CallerConfig | None = None, name: str = "publisher"):
        super().__init__(world, schedule, "sns", client=client, name=name)
        self.topic_arn = topic_arn  # self.sent: {"keys", "messageIds", "error"}

    def _send_orders(self, orders: list[Order]) -> None:
        world = self.world
        for order in orders:
            world.accept(order, source=self.kind)
        keys = [str(o["orderId"]) for o in orders]
        body = orders[0] if len(orders) == 1 else {"orders": orders}
        mark, error = len(world.history), None
        try:
            self.client.publish(TopicArn=self.topic_arn, Message=json.dumps(body, sort_keys=True))
        except (BotoCoreError, ClientError) as exc:
            error = f"{type(exc).__name__}: {exc}"
            world.note(f"{self.name} gave up publishing {', '.join(keys)} after its SDK's retries: {error}")
        # Every Publish that reached SNS, retries included, is in the history with its MessageId.
        ids = [r["key"] for r in world.history.since(mark) if r["type"] == RecordType.AWS
               and r.get("actor") == self.name and r["op"] == "Publish" and r["result"] == AWS_OK and r["key"]]
        self.sent.append({"keys": keys, "messageIds": ids, "error": error})
        if len(ids) > 1:
            world.record_delivery(self.kind, Delivery.PRODUCER_RESEND, keys, None, {
                "messageIds": ids, "why": "Publish took effect but its response timed out (ReadTimeoutError), so "
                                          "botocore's retry published it again; SNS gave the copy a new MessageId"})
