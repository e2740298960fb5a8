"""Mutant of solutions/05_choose_the_key.py, written blind,
from the README and the lessons only, before reading the tests.
Misconception: prefer the id the platform gives each event (messageId, Kinesis eventID, EventBridge id), fall back
to orderId.
Wrong: every one of those names a delivery; producer re-sends and client retries come with new ones.
"""
import json
from functools import partial

from run_once_kit import run_once

from sandbox import charge_card, orders_in, send_confirmation_email


def key_for(event, record, order, context):
    """The idempotency key for ``order`` as this event carries it (run_once prefixes "order-confirmation#").

    ``event`` is the whole event, ``record`` the SQS, Kinesis or DynamoDB Streams record the order came in
    (None for API Gateway, EventBridge and direct invocations), ``context`` Lambda's context.
    """
    if record:
        return record.get("messageId") or record.get("eventID") or order["orderId"]
    return event.get("id") or order["orderId"]


def fulfil(order):
    """The work: charge card orders (the charge carries its own idempotency key), then email."""
    if order.get("payment") == "card":
        charge_card(order, idempotency_key=f"charge#{order['orderId']}")
    return send_confirmation_email(order)


def handler(event, context):
    records = event.get("Records") or [None]
    results = []
    for record in records:
        for order in orders_in({"Records": [record]} if record else event):
            key = f"order-confirmation#{key_for(event, record, order, context)}"
            results.append(run_once(key, partial(fulfil, order), context=context))
    if "httpMethod" in event:
        return {"statusCode": 200, "body": json.dumps(results[0], default=str)}
    return {"results": results}
