"""A DynamoDB stream handler that tells a customer's cancellation from a TTL deletion, idempotently.

INSERT: the order's confirmation, once (the idempotent example's ``fulfil``, under
``order-confirmation#<orderId>``). REMOVE: a cancellation email, once
(``order-cancellation#<orderId>``), but only when a user deleted the item: a REMOVE that
DynamoDB's TTL made carries ``userIdentity`` of the DynamoDB service
(``sandbox.removed_by_ttl``), and the customer cancelled nothing. MODIFY changes nothing
the customer is owed.
"""
import math
from functools import partial

from article import fulfil
from run_once import run_once

from sandbox import orders_in, removed_by_ttl, send_cancellation_email


def handler(event, context):
    done = 0
    for record in event["Records"]:
        for order in orders_in({"Records": [record]}):
            lock_seconds = math.ceil(context.get_remaining_time_in_millis() / 1000)
            if record["eventName"] == "INSERT":
                run_once(f"order-confirmation#{order['orderId']}", lock_seconds, partial(fulfil, order))
            elif record["eventName"] == "REMOVE" and not removed_by_ttl(record):
                run_once(f"order-cancellation#{order['orderId']}", lock_seconds,
                         partial(send_cancellation_email, order))
            done += 1
    return {"processed": done}
