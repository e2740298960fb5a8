"""Mutant of solutions/02_*.py (a blind wrong answer, written from the README and the lessons only). the request id
identifies 'this event', so claim on context.aws_request_id. Wrong: concurrent copies and duplicate deliveries are
separate invocations with their own request ids; the claim never collides."""
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
        key = f"order-confirmation#{context.aws_request_id}#{order['orderId']}"
        try:
            table().put_item(Item={"pk": key, "status": "CLAIMED"},
                             ConditionExpression="attribute_not_exists(pk)")
        except table().meta.client.exceptions.ConditionalCheckFailedException:
            continue
        send_confirmation_email(order)
    return {"statusCode": 200}
