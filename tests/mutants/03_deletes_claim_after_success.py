"""Mutant of solutions/03_*.py. Deletes the claim in `finally`, after success too: the losing copy's source retries
it (an async retry, a message back on the queue), finds the key free and sends the email again."""
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
        raise StillInProgressError(f"{key} is being processed by another invocation") from None
    try:
        result = work()
        table().update_item(
            Key={"pk": key},
            UpdateExpression="SET #status = :completed, #result = :result",
            ExpressionAttributeNames={"#status": "status", "#result": "result"},
            ExpressionAttributeValues={":completed": "COMPLETED", ":result": result},
        )
        return result
    finally:
        table().delete_item(Key={"pk": key})  # tidy up: the key is free for the next one


def handler(event, context):
    results = []
    for order in orders_in(event):
        key = f"order-confirmation#{order['orderId']}"
        results.append(run_once(key, lambda order=order: send_confirmation_email(order)))
    return {"results": results}
