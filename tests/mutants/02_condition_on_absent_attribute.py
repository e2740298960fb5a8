"""Mutant of solutions/02_*.py. Claims with a conditional put whose condition tests an attribute its item never
has (attribute_not_exists(orderId), while the item holds only pk and status): the condition always holds, so
every copy wins the claim and emails."""
import os

import boto3

from sandbox import orders_in, send_confirmation_email

_table = None


def table():
    """The idempotency table (built once per container: a boto3 resource takes a while to make)."""
    global _table
    if _table is None:
        _table = boto3.resource("dynamodb").Table(os.environ["IDEMPOTENCY_TABLE"])
    return _table


def handler(event, context):
    for order in orders_in(event):
        key = f"order-confirmation#{order['orderId']}"
        # Claim `key` with one conditional put, and send the email only if this invocation won the claim.
        try:
            table().put_item(
                Item={"pk": key, "status": "CLAIMED"},
                ConditionExpression="attribute_not_exists(orderId)",  # not an attribute of the item
            )
        except table().meta.client.exceptions.ConditionalCheckFailedException:
            continue  # another invocation has this order
        send_confirmation_email(order)
    return {"statusCode": 200}
