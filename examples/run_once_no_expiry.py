"""A weaker run_once that a learner often writes first: the claim never expires.

It claims the key with ``attribute_not_exists(pk)`` alone and writes no lock expiry on
the IN_PROGRESS record. When the work raises, it deletes the claim, just as the article
does. But a crash or a timeout is not an exception the handler can catch: the runtime
stops it, the IN_PROGRESS record stays, and every retry is told "still in progress"
until the retries run out and the order is dropped.

Otherwise it matches ``idempotent.py``: the same keys, the stored result and the
downstream idempotency key on the charge.
"""
import json
import os
import time

import boto3

from sandbox import StillInProgressError, charge_card, orders_in, send_confirmation_email

KEEP_FOR = 24 * 60 * 60  # seconds a completed record is kept

table = boto3.resource("dynamodb").Table(os.environ["IDEMPOTENCY_TABLE"])


def run_once(key, work):
    try:
        table.put_item(
            Item={"pk": key, "status": "IN_PROGRESS"},
            ConditionExpression="attribute_not_exists(pk)",  # nobody has claimed this key, ever
        )
    except table.meta.client.exceptions.ConditionalCheckFailedException:
        item = table.get_item(Key={"pk": key}, ConsistentRead=True).get("Item")
        if item and item["status"] == "COMPLETED":
            return item.get("result")
        raise StillInProgressError(f"{key} is being processed by another invocation")

    try:
        result = work()
    except Exception:
        table.delete_item(Key={"pk": key})
        raise

    table.update_item(
        Key={"pk": key},
        UpdateExpression="SET #status = :done, #result = :result, expiresAt = :keepUntil",
        ExpressionAttributeNames={"#status": "status", "#result": "result"},
        ExpressionAttributeValues={":done": "COMPLETED", ":result": result,
                                   ":keepUntil": int(time.time()) + KEEP_FOR},
    )
    return result


def fulfil(order):
    if order.get("payment") == "card":
        charge_card(order, idempotency_key=f"charge#{order['orderId']}")
    return send_confirmation_email(order)


def handler(event, context):
    http = "httpMethod" in event
    results = []
    try:
        for order in orders_in(event):
            results.append(run_once(f"order-confirmation#{order['orderId']}", lambda: fulfil(order)))
    except StillInProgressError as err:
        if http:
            return {"statusCode": 409, "body": json.dumps({"message": str(err)})}
        raise
    if http:
        return {"statusCode": 200, "body": json.dumps(results[0])}
    return {"processed": len(results)}
