"""The tempting but wrong guard: read the key, and write it only if it is missing.

Two concurrent invocations can both read "missing" before either writes, so both send.
"""
import os

import boto3

from sandbox import orders_in, send_confirmation_email

table = boto3.resource("dynamodb").Table(os.environ["IDEMPOTENCY_TABLE"])


def handler(event, context):
    for order in orders_in(event):
        key = f"order-confirmation#{order['orderId']}"
        if "Item" in table.get_item(Key={"pk": key}, ConsistentRead=True):
            continue  # seen before
        table.put_item(Item={"pk": key, "status": "COMPLETED"})
        send_confirmation_email(order)
    return {"statusCode": 200}
