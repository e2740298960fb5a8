"""Mutant of solutions/04_*.py (a blind wrong answer, written from the README and the lessons only). keep the COMPLETED
record as long as the lock (the same window: the invocation's time left). Wrong: retention must cover redeliveries
hours later, not the run; the 2-hour late retry repeats the email."""
# Exercise 04 · Locks and retention (answer file)
import math
import os
import time
from functools import partial

import boto3

from sandbox import StillInProgressError, charge_card, orders_in, send_confirmation_email

_table = None


def table():
    """The idempotency table (built once per container: a boto3 resource takes a while to make)."""
    global _table
    if _table is None:
        _table = boto3.resource("dynamodb").Table(os.environ["IDEMPOTENCY_TABLE"])
    return _table


# What to size the windows for (the scenarios this exercise is checked against use these):
# - the function's timeout is set by each scenario (3 s to 60 s here): read what is left of it from
#   the context, never hard-code it;
# - Lambda's async queue keeps an event up to MaximumEventAgeInSeconds, 21600 s (6 hours) by default,
#   and may deliver it again at any moment within that (a throttled event is retried for hours).
MAXIMUM_EVENT_AGE = 6 * 60 * 60


def lock_seconds(context):
    """How long a claim locks its key: long enough that its owner cannot still be working after it."""
    return max(1, math.ceil(context.get_remaining_time_in_millis() / 1000))


def keep_seconds():
    """How long a COMPLETED record is kept: longer than any source may deliver the event again."""
    return 15 * 60  # the longest an invocation can run


def claim(key, now, lock):
    """Claim ``key`` (status IN_PROGRESS, expiresAt = now + lock, epoch seconds); True if this invocation won.

    Take the key if it is new, or if the item on it has expired: TTL deletes expired items lazily
    (even days later), so the condition must check the expiry itself.
    """
    try:
        table().put_item(
            Item={"pk": key, "status": "IN_PROGRESS", "expiresAt": now + lock},
            ConditionExpression="attribute_not_exists(pk) OR expiresAt < :now",
            ExpressionAttributeValues={":now": now},
        )
        return True
    except table().meta.client.exceptions.ConditionalCheckFailedException:
        return False


def run_once(key, work, context):
    """Exercise 03's run_once, with your claim, lock and retention."""
    if not claim(key, int(time.time()), lock_seconds(context)):
        item = table().get_item(Key={"pk": key}, ConsistentRead=True).get("Item")
        if item and item.get("status") == "COMPLETED":
            return item.get("result")
        raise StillInProgressError(f"{key} is being processed by another invocation")
    try:
        result = work()
    except Exception:
        table().delete_item(Key={"pk": key})
        raise
    table().update_item(
        Key={"pk": key},
        UpdateExpression="SET #status = :completed, #result = :result, expiresAt = :keep",
        ExpressionAttributeNames={"#status": "status", "#result": "result"},
        ExpressionAttributeValues={":completed": "COMPLETED", ":result": result,
                                   ":keep": int(time.time()) + keep_seconds()},
    )
    return result


def fulfil(order):
    """The work: charge card orders (the charge carries its own idempotency key), then email."""
    if order.get("payment") == "card":
        charge_card(order, idempotency_key=f"charge#{order['orderId']}")
    return send_confirmation_email(order)


def handler(event, context):
    return {"results": [run_once(f"order-confirmation#{order['orderId']}", partial(fulfil, order), context)
                        for order in orders_in(event)]}
