"""A careful claim (conditional put, lock from the remaining time, delete on failure), keyed on the id of
the event itself: EventBridge's ``id``, or API Gateway's ``requestContext.requestId``. The key names the
delivery, not the operation, so a producer's re-send or a client's retry looks new."""
import math
import os
import time

import boto3

from sandbox import orders_in, send_confirmation_email

table = boto3.resource("dynamodb").Table(os.environ["IDEMPOTENCY_TABLE"])


def event_id(event):
    if "requestContext" in event:
        return event["requestContext"]["requestId"]
    return event["id"]


def handler(event, context):
    for order in orders_in(event):
        key = f"{event_id(event)}#{order['orderId']}"
        now = int(time.time())
        try:
            table.put_item(Item={"pk": key, "status": "IN_PROGRESS",
                                 "expiresAt": now + math.ceil(context.get_remaining_time_in_millis() / 1000)},
                           ConditionExpression="attribute_not_exists(pk) OR expiresAt < :now",
                           ExpressionAttributeValues={":now": now})
        except table.meta.client.exceptions.ConditionalCheckFailedException:
            continue
        try:
            send_confirmation_email(order)
        except Exception:
            table.delete_item(Key={"pk": key})
            raise
        table.update_item(Key={"pk": key}, UpdateExpression="SET #s = :done, expiresAt = :keep",
                          ExpressionAttributeNames={"#s": "status"},
                          ExpressionAttributeValues={":done": "COMPLETED", ":keep": now + 86400})
    return {"statusCode": 200}
