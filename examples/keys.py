"""What to key on: the improved run_once with seven different keys, one handler each.

A key must name the *operation* (confirm order o-1), so that every way the same operation can
reach the function maps to one key. Ids that name a *delivery* look tempting, because every
event carries one, but each survives some repeats and not others:

- ``by_order_id``: the business id. The same order is the same key however it arrives.
- ``by_payload_hash``: a hash of the fields that define the order. It holds as long as a
  repeat carries exactly the same fields; any field that changes between two sends (a
  timestamp, a retry counter) makes it a new key.
- ``by_message_id`` (SQS): survives a redelivery of the same message, not a producer's
  re-send, a FIFO re-send after the deduplication interval or a redrive from the DLQ, each of
  which is a new message with a new MessageId.
- ``by_request_id`` (any source): Lambda keeps ``aws_request_id`` for its own async retries,
  and gives every other repeat (SDK retries, redeliveries, client retries) a new one.
- ``by_stream_event_id`` (Kinesis, DynamoDB Streams): survives a batch retry, not a producer's
  second PutRecord, which is a new record with a new eventID.
- ``by_event_id`` (EventBridge and async events): survives EventBridge's and Lambda's own
  retries, not a producer's second PutEvents, which is a new event with a new ``id``.
- ``by_kafka_offset`` (Kafka): the record's topic, partition and offset, its natural name;
  survives a batch retry, not a producer's resend, which is a new record at a new offset.

``sandbox.analysis.matrix.key_matrix()`` runs each of them through the scenarios of the sources it
applies to, and says where each key holds and what breaks it.
"""
import hashlib
import json
from functools import partial

from idempotent import fulfil
from run_once_improved import run_once

from sandbox import orders_in

#: The event sources (as the scenarios name them) each key can be read from.
APPLIES_TO = {
    "by_order_id": None,  # every source
    "by_payload_hash": None,
    "by_message_id": ("SQS", "SQS FIFO"),
    "by_request_id": None,
    "by_stream_event_id": ("Kinesis", "DynamoDB Streams"),
    "by_event_id": ("async invoke", "EventBridge"),
    "by_kafka_offset": ("Kafka",),
}
#: The fields that make an order the same order.
DEFINING_FIELDS = ("orderId", "email", "amount", "payment")


def keyed(key_of):
    """A handler that runs each order once under ``key_of(event, record, order, context)``."""

    def handler(event, context):
        for one, record in _each_record(event):
            for order in orders_in(one):
                run_once(f"order-confirmation#{key_of(event, record, order, context)}", partial(fulfil, order),
                         context=context)
        return {"statusCode": 200, "body": "{}"} if "httpMethod" in event else {"done": True}

    return handler


def _each_record(event):
    """(an event of one record, that record) for each record the event carries; (the event, None) for the rest."""
    if event.get("eventSource") in ("aws:kafka", "SelfManagedKafka"):  # records grouped by "topic-partition"
        return [({"eventSource": event["eventSource"], "records": {name: [r]}}, r)
                for name, records in event["records"].items() for r in records]
    return [({"Records": [r]}, r) for r in event.get("Records") or []] or [(event, None)]


def payload_hash(order):
    defining = {name: order.get(name) for name in DEFINING_FIELDS}
    return hashlib.sha256(json.dumps(defining, sort_keys=True).encode()).hexdigest()[:16]


by_order_id = keyed(lambda event, record, order, context: order["orderId"])
by_payload_hash = keyed(lambda event, record, order, context: payload_hash(order))
by_message_id = keyed(lambda event, record, order, context: record["messageId"])
by_request_id = keyed(lambda event, record, order, context: f"{context.aws_request_id}#{order['orderId']}")
by_stream_event_id = keyed(lambda event, record, order, context: record["eventID"])
by_event_id = keyed(lambda event, record, order, context: f"{event['id']}#{order['orderId']}")
by_kafka_offset = keyed(lambda event, record, order, context:
                        f"{record['topic']}-{record['partition']}@{record['offset']}")
