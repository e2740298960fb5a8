"""Mutant of solutions/02_*.py (a blind wrong answer, written from the README and the lessons only). write my request
id unconditionally, read it back, and send only if I am still the owner. Wrong: last-writer-wins; an invocation can
read its own id back before the other one overwrites it, so both send."""
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


def handler(event, context):
    for order in orders_in(event):
        key = f"order-confirmation#{order['orderId']}"
        me = context.aws_request_id
        table().put_item(Item={"pk": key, "status": "CLAIMED", "owner": me})
        item = table().get_item(Key={"pk": key}, ConsistentRead=True).get("Item") or {}
        if item.get("owner") != me:
            continue  # someone else overwrote us: they send it
        send_confirmation_email(order)
    return {"statusCode": 200}
