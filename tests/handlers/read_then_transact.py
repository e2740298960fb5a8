"""Read, then claim inside a transaction whose first item is an audit record: a read-then-write race."""
import os

import boto3

from sandbox.core.services import send_confirmation_email
from sandbox.events import orders_in

TABLE = os.environ["IDEMPOTENCY_TABLE"]
client = boto3.client("dynamodb")


def handler(event, context):
    for order in orders_in(event):
        key = f"claim#{order['orderId']}"
        if "Item" in client.get_item(TableName=TABLE, Key={"pk": {"S": key}}, ConsistentRead=True):
            continue
        client.transact_write_items(TransactItems=[
            {"Put": {"TableName": TABLE, "Item": {"pk": {"S": f"audit#{order['orderId']}#{context.aws_request_id}"}}}},
            {"Put": {"TableName": TABLE, "Item": {"pk": {"S": key}}}},
        ])
        send_confirmation_email(order)
