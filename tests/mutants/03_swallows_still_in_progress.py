"""Mutant of solutions/03_*.py. A duplicate that finds the key IN_PROGRESS returns None instead of raising."""
import os

import boto3

from sandbox import orders_in, send_confirmation_email

_table = None


def table():
    """The idempotency table (built once per container: a boto3 resource takes a while to make)."""
    global _table
    if _table is None:
        _table = boto3.resource("dynamodb").Table(os.environ["IDEMPOTENCY_TABLE"])
    return _table


def run_once(key, work):
    """Run ``work()`` once for ``key`` and return its result; a duplicate gets the stored result back.

    1. Claim the key: one conditional put of {"pk": key, "status": "IN_PROGRESS"}.
    2. If the claim fails, read the item (ConsistentRead=True). COMPLETED: return its stored
       "result". Anything else: another invocation is working, raise StillInProgressError.
    3. Run the work. If it raises, delete the claim (so a retry can start over) and raise again.
    4. Save status COMPLETED and the result in one update, and return the result.
    ("status" and "result" are DynamoDB reserved words: name them with ExpressionAttributeNames.)
    """
    try:
        table().put_item(
            Item={"pk": key, "status": "IN_PROGRESS"},
            ConditionExpression="attribute_not_exists(pk)",
        )
    except table().meta.client.exceptions.ConditionalCheckFailedException:
        item = table().get_item(Key={"pk": key}, ConsistentRead=True).get("Item")
        if item and item.get("status") == "COMPLETED":
            return item.get("result")  # a duplicate: replay the stored result
        return None  # someone else is on it
    try:
        result = work()
    except Exception:
        table().delete_item(Key={"pk": key})  # let a retry start over
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
