"""Mutant of solutions/02_*.py (a blind wrong answer, written from the README and the lessons only). compare the
ClientError code to 'ConditionalCheckFailed' (as the timelines print it). Wrong: the code is
'ConditionalCheckFailedException', so losers re-raise; async sources then retry, and the loser fails noisily."""
# Exercise 02 · Claim the key
# The answer cell of exercises/02_claim_the_key.ipynb, as a file.
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
        try:
            table().put_item(Item={"pk": key, "status": "CLAIMED"},
                             ConditionExpression="attribute_not_exists(pk)")
        except ClientError as err:
            if err.response["Error"]["Code"] == "ConditionalCheckFailed":
                continue
            raise
        send_confirmation_email(order)
    return {"statusCode": 200}
