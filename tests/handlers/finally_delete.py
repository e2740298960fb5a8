"""Claims the key with no expiry and deletes the claim in `finally` when the work did not finish.

On Lambda a timeout or a crash stops the process: the `finally` never runs, the claim stays
forever, and every retry skips the order. It looks safe only if `finally` runs after the deadline.
"""
import os

import boto3

from sandbox import orders_in, send_confirmation_email

table = boto3.resource("dynamodb").Table(os.environ["IDEMPOTENCY_TABLE"])


def handler(event, context):
    for order in orders_in(event):
        key = f"order-confirmation#{order['orderId']}"
        try:
            table.put_item(Item={"pk": key, "status": "IN_PROGRESS"}, ConditionExpression="attribute_not_exists(pk)")
        except table.meta.client.exceptions.ConditionalCheckFailedException:
            continue
        sent = False
        try:
            send_confirmation_email(order)
            sent = True
        finally:
            if not sent:
                table.delete_item(Key={"pk": key})  # let a retry start over
