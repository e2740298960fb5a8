"""Solution to exercise 1: one conditional put claims the key.

The read and the write become one atomic step: the put succeeds only if no item with
this key exists. Exactly one concurrent copy can win; every other copy gets
ConditionalCheckFailedException and skips the email. There is no window between
"check" and "write" for another invocation to slip into.

This is only the first step of the article's run_once: a crash after the claim would
leave the key claimed forever, and a duplicate gets no stored result. Later lessons add
the lock expiry, the stored result and the clean-up on failure.
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
                Item={"pk": key, "status": "CLAIMED"},
                ConditionExpression="attribute_not_exists(pk)",
            )
        except table.meta.client.exceptions.ConditionalCheckFailedException:
            continue  # another invocation has this order
        send_confirmation_email(order)
    return {"statusCode": 200}
