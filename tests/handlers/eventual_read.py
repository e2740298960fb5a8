"""Read, then write, with DynamoDB's default (eventually consistent) read.

`CONSISTENT=1` makes the read strongly consistent, as the article's run_once does.
"""
import os

import boto3

from sandbox import orders_in, send_confirmation_email

table = boto3.resource("dynamodb").Table(os.environ["IDEMPOTENCY_TABLE"])
CONSISTENT = os.environ.get("CONSISTENT") == "1"


def handler(event, context):
    for order in orders_in(event):
        key = f"order-confirmation#{order['orderId']}"
        if "Item" in table.get_item(Key={"pk": key}, ConsistentRead=CONSISTENT):
            continue
        table.put_item(Item={"pk": key, "status": "CLAIMED"})
        send_confirmation_email(order)
