"""The article's run_once with its claim written as a PartiQL INSERT with parameters.

DynamoDB refuses an INSERT of a key the table holds (DuplicateItemException, ql-reference.insert.html),
so the INSERT is a claim as a conditional PutItem is. A failed send releases the claim.
"""
import os
import time

import boto3

from sandbox import StillInProgressError, orders_in, send_confirmation_email

client = boto3.client("dynamodb")
TABLE = os.environ["IDEMPOTENCY_TABLE"]


def handler(event, context):
    for order in orders_in(event):
        key = f"order-confirmation#{order['orderId']}"
        now = int(time.time())
        try:
            client.execute_statement(
                Statement=f"INSERT INTO \"{TABLE}\" VALUE {{'pk': ?, 'status': ?, 'expiresAt': ?}}",
                Parameters=[{"S": key}, {"S": "IN_PROGRESS"}, {"N": str(now + 86400)}])
        except client.exceptions.DuplicateItemException:
            item = client.get_item(TableName=TABLE, Key={"pk": {"S": key}}, ConsistentRead=True).get("Item")
            if item and item["status"]["S"] == "COMPLETED":
                continue
            raise StillInProgressError(f"{key} is being processed") from None
        try:
            send_confirmation_email(order)
        except Exception:
            # release the claim, so that a retry can take it (a key-only DeleteItem: see the README's
            # note on moto's PartiQL DELETE with parameters)
            client.delete_item(TableName=TABLE, Key={"pk": {"S": key}})
            raise
        client.execute_statement(
            Statement=f"UPDATE \"{TABLE}\" SET status = ? WHERE pk = ?",
            Parameters=[{"S": "COMPLETED"}, {"S": key}])
