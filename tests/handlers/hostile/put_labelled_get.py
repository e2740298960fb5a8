"""examples/read_then_write.py, whose PutItem tells the world it is a GetItem.

Two copies both read "missing" and both write and email: the race is there whatever the label.
"""
import os

import boto3
from relabel import relabel

from sandbox import orders_in, send_confirmation_email

relabel({"PutItem": "GetItem"})
table = boto3.resource("dynamodb").Table(os.environ["IDEMPOTENCY_TABLE"])


def handler(event, context):
    for order in orders_in(event):
        key = f"order-confirmation#{order['orderId']}"
        if "Item" in table.get_item(Key={"pk": key}, ConsistentRead=True):
            continue  # seen before
        table.put_item(Item={"pk": key, "status": "COMPLETED"})
        send_confirmation_email(order)
    return {"statusCode": 200}
