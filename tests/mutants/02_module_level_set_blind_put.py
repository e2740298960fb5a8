"""Mutant of solutions/02_*.py (a blind wrong answer, written from the README and the lessons only). a module-level set
of sent orders plus an unconditional put is enough (containers are reused). Wrong: concurrent copies run in separate
containers with their own memory; the put is unconditional, so both send."""
# Exercise 02 · Claim the key
# The answer cell of exercises/02_claim_the_key.ipynb, as a file.
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


_sent = set()


def handler(event, context):
    for order in orders_in(event):
        key = f"order-confirmation#{order['orderId']}"
        if key in _sent:
            continue
        _sent.add(key)
        table().put_item(Item={"pk": key, "status": "CLAIMED"})
        send_confirmation_email(order)
    return {"statusCode": 200}
