"""A correct conditional claim, with the emails sent from a thread pool (as people speed things up)."""
import os
from concurrent.futures import ThreadPoolExecutor

import boto3

from sandbox import orders_in, send_confirmation_email

table = boto3.resource("dynamodb").Table(os.environ["IDEMPOTENCY_TABLE"])
pool = ThreadPoolExecutor(max_workers=4)


def claim_and_send(order):
    key = f"order-confirmation#{order['orderId']}"
    try:
        table.put_item(Item={"pk": key, "status": "CLAIMED"}, ConditionExpression="attribute_not_exists(pk)")
    except table.meta.client.exceptions.ConditionalCheckFailedException:
        return "duplicate"
    send_confirmation_email(order)
    return "sent"


def handler(event, context):
    futures = [pool.submit(claim_and_send, order) for order in orders_in(event)]
    return {"results": [f.result() for f in futures]}
