"""Claim the key with one conditional put before the email; whoever loses skips the work.

This is the first step of the article's run_once, without the lock expiry or stored
result: enough to make concurrent duplicates harmless.
"""
import os

import boto3

from sandbox import orders_in, send_confirmation_email

table = boto3.resource("dynamodb").Table(os.environ["IDEMPOTENCY_TABLE"])


def handler(event, context):
    for order in orders_in(event):
        key = f"order-confirmation#{order['orderId']}"
        try:
            table.put_item(
                Item={"pk": key, "status": "COMPLETED"},
                ConditionExpression="attribute_not_exists(pk)",
            )
        except table.meta.client.exceptions.ConditionalCheckFailedException:
            continue  # another invocation already claimed this order
        send_confirmation_email(order)
    return {"statusCode": 200}
