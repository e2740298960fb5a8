"""The article's design, as a handler: one ``run_once`` per order, around the article's port.

- The key names the operation, not the delivery: ``order-confirmation#<orderId>``. Behind
  API Gateway, a client that sends an ``Idempotency-Key`` header names its request itself:
  the header stays the same across the client's retries (``requestContext.requestId`` does
  not), so the key is ``order-confirmation#<Idempotency-Key>``.
- The lock lasts as long as this invocation can still run (or ``RUN_ONCE_LOCK_SECONDS``, if
  the function's environment sets it).
- A charge also carries a downstream idempotency key, which closes the remaining window
  between the charge and the saved result.
- Behind API Gateway a duplicate that finds the work in progress gets a 409.

What it still gets wrong, and ``idempotent.py`` fixes: a duplicate costs two DynamoDB calls
(the failed put, then a read); an invocation that outlives its lock saves over, or deletes,
the record of the invocation that took the key over; the same key sent with a different
payload replays the first payload's result; and a batch is all or nothing, so one failing
SQS or stream record brings the others back.
"""
import json
import math
import os
from functools import partial

from run_once import run_once

from sandbox import StillInProgressError, charge_card, orders_in, send_confirmation_email


def fulfil(order):
    if order.get("payment") == "card":
        charge_card(order, idempotency_key=f"charge#{order['orderId']}")
    return send_confirmation_email(order)


def key_of(event, order):
    """The client's Idempotency-Key header when there is one (header names are case-insensitive), else the order id."""
    headers = {name.lower(): value for name, value in (event.get("headers") or {}).items()}
    return headers.get("idempotency-key") or order["orderId"]


def make_handler(run_once):
    """A handler around any ``run_once(key, lock_seconds, work)``; the weaker variants reuse it."""

    def handler(event, context):
        http = "httpMethod" in event
        results = []
        try:
            for order in orders_in(event):
                lock_seconds = (int(os.environ.get("RUN_ONCE_LOCK_SECONDS") or 0)
                                or math.ceil(context.get_remaining_time_in_millis() / 1000))
                results.append(run_once(f"order-confirmation#{key_of(event, order)}", lock_seconds,
                                        partial(fulfil, order)))
        except StillInProgressError as err:
            if http:
                return {"statusCode": 409, "body": json.dumps({"message": str(err)})}
            raise  # SQS, streams and async invokes: fail, so the source retries later
        if http:
            return {"statusCode": 200, "body": json.dumps(results[0])}
        return {"processed": len(results)}

    return handler


handler = make_handler(run_once)
