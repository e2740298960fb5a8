"""SQS FIFO queues: deduplication for 5 minutes, kept on the world's virtual clock.

What AWS documents:

- "If a message with a particular MessageDeduplicationId is sent successfully, any messages
  sent with the same MessageDeduplicationId are accepted successfully but aren't delivered
  during the 5-minute deduplication interval." Without a MessageDeduplicationId, a queue with
  ContentBasedDeduplication uses "a SHA-256 hash to generate the MessageDeduplicationId using
  the body of the message (but not the attributes of the message)"; an explicit ID overrides
  it. And: "If a message is sent successfully but the acknowledgement is lost and the message
  is resent with the same MessageDeduplicationId after the deduplication interval, Amazon SQS
  can't detect duplicate messages"
  (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_SendMessage.html).
- "Amazon SQS continues tracking the deduplication ID even after the message has been
  received and deleted"
  (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/FIFO-key-terms.html).

Where moto differs, and what the sandbox does instead: moto 5.2.5 deduplicates a send only
against the messages still *in* the queue, so once the first message has been received and
deleted it forgets its ID and stores the re-send; and it answers a deduplicated send with a
fresh MessageId of a message it never stored. So ``FifoDeduplication`` serves SendMessage to
its queue itself, in the gateway (the request is still recorded, faulted and locked like
any other): it remembers every deduplication ID it let through with the virtual time of
that send, and a SendMessage with the same ID less than 300 s later gets what SQS answers,
success with the *original* MessageId (and SequenceNumber), while no message is stored. The
API reference says only that such a send is "accepted successfully"; answering with the
original MessageId is how SQS is observed to behave, and it makes the producer's records show
one message. Every other send goes on to moto. The interval counts from the first accepted
send; a deduplicated send does not extend it. SendMessageBatch is left to moto.

moto also loses a group's order when a batch comes back: a message whose visibility timeout
ran out stays on its in-flight list until its receive loop reaches it, so the group's first
message is skipped (its later ones still look in flight) and the last one goes first.
``FifoOrder`` clears those expired entries before each ReceiveMessage on the queue, so the
group comes back in order, as SQS hands it out.
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..aws import adapter
from ..aws.gateway import Served, json_answer, queue_name
from ..settings import Config, param
from ..vocab import Delivery, SourceKind

if TYPE_CHECKING:
    from ..world import Sandbox

DOC_SEND = "https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_SendMessage.html"
DOC_KEY_TERMS = "https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/FIFO-key-terms.html"
#: The deduplication interval, in seconds: 5 minutes (API_SendMessage.html), not configurable on AWS.
DEDUPLICATION_INTERVAL = 300.0
#: A FIFO queue's name ends with this (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-fifo-queues.html).
FIFO_SUFFIX = ".fifo"


@dataclass(frozen=True)
class FifoQueueConfig(Config):
    """What a FIFO queue adds to a queue's settings: how it finds a message's deduplication ID."""

    content_based_deduplication: bool = param(
        False, "ContentBasedDeduplication: SQS takes a SHA-256 of the body as the deduplication ID when the sender "
        "gives none (off: every SendMessage must carry a MessageDeduplicationId)", DOC_SEND,
        aws="ContentBasedDeduplication")


def deduplication_id(params: Mapping[str, object], content_based: bool) -> str | None:
    """The deduplication ID SQS uses for a SendMessage: the explicit one, else the body's SHA-256 if enabled."""
    explicit = params.get("MessageDeduplicationId")
    if explicit:
        return str(explicit)
    body = params.get("MessageBody")
    if content_based and isinstance(body, str):
        return hashlib.sha256(body.encode("utf-8")).hexdigest()
    return None


@dataclass
class _FirstSend:
    """The send that opened a deduplication interval."""

    at: float
    message_id: str
    sequence_number: str | None


@dataclass(frozen=True)
class _HeldSend:
    """A deduplicated send, held until its request is in the history: what it sent and the send it repeated."""

    body: object  # the SendMessage's MessageBody, as the caller sent it
    dedup: str
    first: _FirstSend
    now: float


class FifoDeduplication:
    """SendMessage to one FIFO queue, deduplicated for 300 virtual seconds (see the module docstring)."""

    def __init__(self, world: "Sandbox", name: str, config: FifoQueueConfig,
                 key_of: Callable[[Any], str | None]):
        self.world, self.name, self.config, self.key_of = world, name, config, key_of
        self.first: dict[str, _FirstSend] = {}  # deduplication ID -> the send that opened its interval
        self._held: list[_HeldSend] = []  # deduplicated sends to record once their request is recorded
        world.gateway.serve_locally("sqs", "SendMessage", self._send)
        world.on_aws(self._after)

    def _send(self, params: dict, forward: Callable[[], Served]) -> Served:
        if queue_name(params.get("QueueUrl")) != self.name:
            return forward()
        dedup = deduplication_id(params, self.config.content_based_deduplication)
        now = self.world.clock.elapsed()
        first = self.first.get(dedup) if dedup is not None else None
        if dedup is not None and first is not None and now - first.at < DEDUPLICATION_INTERVAL:
            self._held.append(_HeldSend(params.get("MessageBody"), dedup, first, now))
            answer = {"MessageId": first.message_id,
                      "MD5OfMessageBody": hashlib.md5(str(params.get("MessageBody", "")).encode()).hexdigest()}
            if first.sequence_number is not None:
                answer["SequenceNumber"] = first.sequence_number
            return json_answer(answer, self.world.new_uuid())
        status, headers, body = forward()
        if status == 200 and dedup is not None:
            data = json.loads(body or b"{}")
            self.first[dedup] = _FirstSend(now, data["MessageId"], data.get("SequenceNumber"))
        return status, headers, body

    def _after(self, service: str, op: str, params: dict, status: int) -> None:
        """After the SendMessage is in the history: say that SQS stored nothing for it."""
        if service != "sqs" or op != "SendMessage" or not self._held or queue_name(params.get("QueueUrl")) != self.name:
            return
        held = self._held.pop(0)
        key = self.key_of(held.body)
        first = held.first
        age = held.now - first.at
        self.world.record_delivery(SourceKind.SQS, Delivery.SEND_DEDUPLICATED, keys=[key] if key else [], inv=None,
            detail={"messageId": first.message_id, "deduplicationId": held.dedup, "queue": self.name,
                    "secondsSinceFirst": round(age, 3),
                    "why": f"a SendMessage with the deduplication ID of a message first sent {age:g} s earlier, "
                           f"within the {DEDUPLICATION_INTERVAL:g} s deduplication interval: SQS accepted it, "
                           f"answered with the original MessageId, and stored no new message"})


class FifoOrder:
    """ReceiveMessage on one FIFO queue, with moto's in-flight list brought up to date first (module docstring)."""

    def __init__(self, world: "Sandbox", name: str):
        self.world, self.name = world, name
        world.gateway.serve_locally("sqs", "ReceiveMessage", self._receive)

    def _receive(self, params: dict, forward: Callable[[], Served]) -> Served:
        if queue_name(params.get("QueueUrl")) == self.name:
            adapter.release_expired(self.world.region, self.name)
        return forward()
