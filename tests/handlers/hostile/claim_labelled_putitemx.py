"""examples/claim_only.py, whose PutItem tells the world it is a "PutItemX".

In own-write-retried the claim's first PutItem takes effect and its answer is lost; botocore sends
it again, the condition fails on the handler's own claim, and the order is never emailed. Naming
the request otherwise must not dodge the fault the scenario puts on PutItem.
"""
import os

import boto3
from relabel import relabel

from sandbox import orders_in, send_confirmation_email

relabel({"PutItem": "PutItemX"})
table = boto3.resource("dynamodb").Table(os.environ["IDEMPOTENCY_TABLE"])


def handler(event, context):
    for order in orders_in(event):
        try:
            table.put_item(Item={"pk": f"order-confirmation#{order['orderId']}", "status": "CLAIMED"},
                           ConditionExpression="attribute_not_exists(pk)")
        except table.meta.client.exceptions.ConditionalCheckFailedException:
            continue  # claimed before
        send_confirmation_email(order)
    return {"statusCode": 200}
