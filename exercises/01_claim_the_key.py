"""Exercise 1: claim the key, don't look it up.

This handler tries to be idempotent by reading the idempotency table first and writing
only if the key is missing. Two deliveries of the same order that run at the same moment
(an async duplicate, a second SQS poller, a client retry) can both read "missing", and
then both send the email.

Your task: change ``handler`` so that, whatever the interleaving, exactly one of them
sends the email. Keep the key, ``order-confirmation#<orderId>``.

Check your answer against every possible interleaving of two concurrent copies:

    python -m sandbox run concurrent-claims --handler exercises/01_claim_the_key.py:handler --policy exhaustive

It prints how many schedules broke the invariant: you are done when it says 0 (exit code 0).
Then try three copies: add ``--set copies=3``.

Hint: DynamoDB can check a condition and write in one step (a ConditionExpression on
PutItem). Only one writer can win it; the others get ConditionalCheckFailedException.
"""
import os

import boto3

from sandbox import orders_in, send_confirmation_email

table = boto3.resource("dynamodb").Table(os.environ["IDEMPOTENCY_TABLE"])


def handler(event, context):
    for order in orders_in(event):
        key = f"order-confirmation#{order['orderId']}"
        if "Item" in table.get_item(Key={"pk": key}, ConsistentRead=True):
            continue  # looks handled already
        table.put_item(Item={"pk": key, "status": "COMPLETED"})
        send_confirmation_email(order)
    return {"statusCode": 200}
