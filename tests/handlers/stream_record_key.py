"""A careful claim (conditional put, lock from the remaining time, delete on failure) keyed on each
stream record's eventID: the key names the record, not the order, so a producer's re-sent copy
(a second record, a new sequence number, a new eventID) gets through."""
import math
import os
import time

import boto3

from sandbox import orders_in, send_confirmation_email

table = boto3.resource("dynamodb").Table(os.environ["IDEMPOTENCY_TABLE"])


def handler(event, context):
    for record in event["Records"]:
        key = f"record#{record['eventID']}"
        now = int(time.time())
        try:
            table.put_item(Item={"pk": key, "status": "IN_PROGRESS",
                                 "expiresAt": now + math.ceil(context.get_remaining_time_in_millis() / 1000)},
                           ConditionExpression="attribute_not_exists(pk) OR expiresAt < :now",
                           ExpressionAttributeValues={":now": now})
        except table.meta.client.exceptions.ConditionalCheckFailedException:
            continue
        try:
            for order in orders_in({"Records": [record]}):
                send_confirmation_email(order)
        except Exception:
            table.delete_item(Key={"pk": key})
            raise
        table.update_item(Key={"pk": key}, UpdateExpression="SET #s = :done, expiresAt = :keep",
                          ExpressionAttributeNames={"#s": "status"},
                          ExpressionAttributeValues={":done": "COMPLETED", ":keep": now + 86400})
