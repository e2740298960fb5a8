"""Mutant of solutions/02_*.py. Remembers sent orders in a module-level set instead of DynamoDB."""
import os

import boto3

from sandbox import orders_in, send_confirmation_email

_table = None
_SENT = set()  # lives only as long as one container


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
        if key in _SENT:
            continue
        _SENT.add(key)
        send_confirmation_email(order)
    return {"statusCode": 200}
