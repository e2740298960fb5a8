"""The article's run_once with its claim written as a TransactWriteItems Put (as some teams do)."""
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
        lock = int(context.get_remaining_time_in_millis() / 1000) + 1
        try:
            client.transact_write_items(TransactItems=[{"Put": {
                "TableName": TABLE,
                "Item": {"pk": {"S": key}, "status": {"S": "IN_PROGRESS"}, "expiresAt": {"N": str(now + lock)}},
                "ConditionExpression": "attribute_not_exists(pk) OR expiresAt < :now",
                "ExpressionAttributeValues": {":now": {"N": str(now)}}}}])
        except client.exceptions.TransactionCanceledException:
            item = client.get_item(TableName=TABLE, Key={"pk": {"S": key}}, ConsistentRead=True).get("Item")
            if item and item["status"]["S"] == "COMPLETED":
                continue
            raise StillInProgressError(f"{key} is being processed") from None
        send_confirmation_email(order)
        client.transact_write_items(TransactItems=[{"Update": {
            "TableName": TABLE, "Key": {"pk": {"S": key}},
            "UpdateExpression": "SET #s = :done, expiresAt = :keep",
            "ExpressionAttributeNames": {"#s": "status"},
            "ExpressionAttributeValues": {":done": {"S": "COMPLETED"}, ":keep": {"N": str(now + 86400)}}}}])
