"""Mutant of solutions/03_*.py (a blind wrong answer, written from the README and the lessons only). the record only
has to say the work is done; duplicates return a generic 'already done'. Wrong: the stored result is never saved, so
a duplicate gets a different answer than the first delivery (no replay)."""
# ruff: noqa: B904  (kept as the learner wrote it)
# Exercise 03 · Store and replay
# The answer cell of exercises/03_store_and_replay.ipynb, as a file.
import os

import boto3

from sandbox import StillInProgressError, orders_in, send_confirmation_email

_table = None


def table():
    """The idempotency table (built once per container: a boto3 resource takes a while to make)."""
    global _table
    if _table is None:
        _table = boto3.resource("dynamodb").Table(os.environ["IDEMPOTENCY_TABLE"])
    return _table


def run_once(key, work):
    try:
        table().put_item(Item={"pk": key, "status": "IN_PROGRESS"},
                         ConditionExpression="attribute_not_exists(pk)")
    except table().meta.client.exceptions.ConditionalCheckFailedException:
        item = table().get_item(Key={"pk": key}, ConsistentRead=True).get("Item")
        if item and item.get("status") == "COMPLETED":
            return {"status": "already-sent"}
        raise StillInProgressError(f"{key} is being processed by another invocation")
    try:
        result = work()
    except Exception:
        table().delete_item(Key={"pk": key})
        raise
    table().update_item(
        Key={"pk": key},
        UpdateExpression="SET #status = :completed",
        ExpressionAttributeNames={"#status": "status"},
        ExpressionAttributeValues={":completed": "COMPLETED"},
    )
    return result


def handler(event, context):
    results = []
    for order in orders_in(event):
        key = f"order-confirmation#{order['orderId']}"
        results.append(run_once(key, lambda order=order: send_confirmation_email(order)))
    return {"results": results}
