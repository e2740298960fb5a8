"""Exits its process on the first attempt of each order.

It remembers the first attempt in DynamoDB: a reset gives the next attempt a new environment,
with nothing of the old one's memory or /tmp.
"""
import os
import sys

import boto3

from sandbox import orders_in, send_confirmation_email

HOW = os.environ.get("EXIT_HOW", "sys.exit")
client = boto3.client("dynamodb")
TABLE = os.environ["IDEMPOTENCY_TABLE"]


def _first_attempt(order_id: str) -> bool:
    try:
        client.put_item(TableName=TABLE, Item={"pk": {"S": f"exited#{order_id}"}},
                        ConditionExpression="attribute_not_exists(pk)")
    except client.exceptions.ConditionalCheckFailedException:
        return False
    return True


def handler(event, context):
    for order in orders_in(event):
        if _first_attempt(order["orderId"]):
            if HOW == "os._exit":
                os._exit(0)
            sys.exit(0)
        send_confirmation_email(order)
