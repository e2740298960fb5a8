"""A correct claim with a lock that expires, and a `finally` that marks the order DONE.

On Lambda the `finally` never runs after a timeout, the lock expires and the retry sends the
email: valid. A sandbox that ran the `finally` at the deadline would mark it DONE unsent.
"""
import os
import time

import boto3

from sandbox import orders_in, send_confirmation_email

table = boto3.resource("dynamodb").Table(os.environ["IDEMPOTENCY_TABLE"])


def handler(event, context):
    for order in orders_in(event):
        key = f"order-confirmation#{order['orderId']}"
        now = int(time.time())
        try:
            table.put_item(Item={"pk": key, "status": "IN_PROGRESS", "expiresAt": now + 3},
                           ConditionExpression="attribute_not_exists(pk) OR (#s <> :done AND expiresAt < :now)",
                           ExpressionAttributeNames={"#s": "status"},
                           ExpressionAttributeValues={":now": now, ":done": "DONE"})
        except table.meta.client.exceptions.ConditionalCheckFailedException:
            continue
        try:
            send_confirmation_email(order)
        finally:
            table.put_item(Item={"pk": key, "status": "DONE"})
