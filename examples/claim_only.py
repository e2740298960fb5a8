"""A first correct-looking step: claim the key with one conditional put, then do the work.

The put succeeds for exactly one of any number of concurrent invocations
(``attribute_not_exists(pk)`` is checked and the item written in one atomic step), so the
read-then-write race is gone. But the claim is all it keeps: no result to replay, no
expiry, no clean-up. When the work fails after the claim (a provider error, a timeout, a
crash), the record stays, every retry finds the key taken and skips the order, and the
customer never gets the email.
"""
import os

import boto3

from sandbox import charge_card, orders_in, send_confirmation_email

table = boto3.resource("dynamodb").Table(os.environ["IDEMPOTENCY_TABLE"])


def handler(event, context):
    for order in orders_in(event):
        try:
            table.put_item(Item={"pk": f"order-confirmation#{order['orderId']}", "status": "CLAIMED"},
                           ConditionExpression="attribute_not_exists(pk)")
        except table.meta.client.exceptions.ConditionalCheckFailedException:
            continue  # claimed before: by a duplicate still running, or by an attempt that failed
        if order.get("payment") == "card":
            charge_card(order)
        send_confirmation_email(order)
    return {"statusCode": 200}
