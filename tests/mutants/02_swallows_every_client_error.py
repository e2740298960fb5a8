"""Mutant of solutions/02_*.py. Takes any ClientError of the claim as "already claimed": a throttled or invalid
put (ProvisionedThroughputExceededException, ValidationException) skips the order, which is then never sent."""
import os

import boto3
from botocore.exceptions import ClientError

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
                ConditionExpression="attribute_not_exists(pk)",
            )
        except ClientError:
            continue  # another invocation has this order
        send_confirmation_email(order)
    return {"statusCode": 200}
