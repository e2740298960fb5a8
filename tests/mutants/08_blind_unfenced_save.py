"""Mutant of solutions/08_fencing_and_downstream_keys.py, written blind,
from the README and the lessons only, before reading the tests.
Misconception: only the delete needs fencing; saving a result is always safe (the work did succeed).
Wrong: a stale owner's save overwrites the new owner's claim with COMPLETED; the newer attempt's record is
destroyed.
"""
import math
import os
import time
import uuid
from functools import partial

import boto3

from sandbox import StillInProgressError, charge_card, orders_in, send_confirmation_email

KEEP_SECONDS = 24 * 60 * 60
_table = None


def table():
    """The idempotency table (built once per container: a boto3 resource takes a while to make)."""
    global _table
    if _table is None:
        _table = boto3.resource("dynamodb").Table(os.environ["IDEMPOTENCY_TABLE"])
    return _table


def lock_seconds(context):
    """RUN_ONCE_LOCK_SECONDS when the function's environment sets it (a scenario does), else the time left."""
    if os.environ.get("RUN_ONCE_LOCK_SECONDS"):
        return int(os.environ["RUN_ONCE_LOCK_SECONDS"])
    return max(1, math.ceil(context.get_remaining_time_in_millis() / 1000))


def claim(key, owner, now, lock):
    """Claim ``key`` for ``owner`` (a fresh token per invocation) until ``now + lock``; True if won.

    As in exercise 04, a new key or an expired one may be taken (the lock's end in ``expiresAt``, epoch
    seconds); store the owner in the item.
    """
    try:
        table().put_item(
            Item={"pk": key, "status": "IN_PROGRESS", "owner": owner, "expiresAt": now + lock},
            ConditionExpression="attribute_not_exists(pk) OR expiresAt < :now",
            ExpressionAttributeValues={":now": now},
        )
        return True
    except table().meta.client.exceptions.ConditionalCheckFailedException:
        return False


def save(key, owner, result):
    """Store the result (COMPLETED, kept KEEP_SECONDS), but only while ``owner`` still holds the claim.

    If another invocation holds it now, leave its record alone and return normally: this invocation's work is
    done, and its handler still answers with the result.
    """
    table().update_item(
        Key={"pk": key},
        UpdateExpression="SET #status = :completed, #result = :result, expiresAt = :keep",
        ExpressionAttributeNames={"#status": "status", "#result": "result"},
        ExpressionAttributeValues={":completed": "COMPLETED", ":result": result,
                                   ":keep": int(time.time()) + KEEP_SECONDS},
    )


def release(key, owner):
    """Delete the claim after the work failed, but only while ``owner`` still holds it."""
    try:
        table().delete_item(Key={"pk": key}, ConditionExpression="#owner = :me",
                            ExpressionAttributeNames={"#owner": "owner"},
                            ExpressionAttributeValues={":me": owner})
    except table().meta.client.exceptions.ConditionalCheckFailedException:
        print(f"{key}: not ours any more, left alone")


def fulfil(order):
    """Charge card orders, then email. The charge must not happen twice even if this invocation dies right
    after it, before its result is saved: give the payment API an idempotency key naming the order's charge."""
    if order.get("payment") == "card":
        charge_card(order, idempotency_key=f"charge#{order['orderId']}")
    return send_confirmation_email(order)


def run_once(key, work, context):
    owner = str(uuid.uuid4())
    if not claim(key, owner, int(time.time()), lock_seconds(context)):
        item = table().get_item(Key={"pk": key}, ConsistentRead=True).get("Item")
        if item and item.get("status") == "COMPLETED":
            return item.get("result")
        raise StillInProgressError(f"{key} is being processed by another invocation")
    try:
        result = work()
    except Exception:
        release(key, owner)
        raise
    save(key, owner, result)
    return result


def handler(event, context):
    return {"results": [run_once(f"order-confirmation#{order['orderId']}", partial(fulfil, order), context)
                        for order in orders_in(event)]}
