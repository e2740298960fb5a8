"""Mutant of solutions/03_*.py (a blind wrong answer, written from the README and the lessons only). treat any
ClientError from the claim as 'it exists already' and go read the record. Wrong: a throttle, ValidationException or
AccessDenied on the claim is masked as 'in progress' (or replays a stale record); the real error never surfaces and
a permanent one makes the order look busy until the source gives up."""
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
    except table().meta.client.exceptions.ClientError:
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
        UpdateExpression="SET #status = :completed, #result = :result",
        ExpressionAttributeNames={"#status": "status", "#result": "result"},
        ExpressionAttributeValues={":completed": "COMPLETED", ":result": result},
    )
    return result


def handler(event, context):
    results = []
    for order in orders_in(event):
        key = f"order-confirmation#{order['orderId']}"
        results.append(run_once(key, lambda order=order: send_confirmation_email(order)))
    return {"results": results}
