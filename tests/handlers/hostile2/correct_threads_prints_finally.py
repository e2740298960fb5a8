"""A correct run_once whose work runs in a thread, with prints and a finally block."""
import os, time
import boto3
from botocore.exceptions import ClientError
from sandbox import StillInProgressError, orders_in, send_confirmation_email

TABLE = boto3.resource("dynamodb").Table(os.environ["IDEMPOTENCY_TABLE"])


def run_once(key, work, context):
    now = int(time.time())
    lock = int(context.get_remaining_time_in_millis() / 1000) + 1
    try:
        TABLE.put_item(Item={"pk": key, "state": "IN_PROGRESS", "expiresAt": now + lock},
                       ConditionExpression="attribute_not_exists(pk) OR expiresAt < :now",
                       ExpressionAttributeValues={":now": now})
    except ClientError as exc:
        if exc.response["Error"]["Code"] != "ConditionalCheckFailedException":
            raise
        item = TABLE.get_item(Key={"pk": key}, ConsistentRead=True).get("Item")
        if item and item["state"] == "COMPLETED":
            return
        raise StillInProgressError(key) from None
    work()
    TABLE.update_item(Key={"pk": key}, UpdateExpression="SET #s = :d, expiresAt = :k",
                      ExpressionAttributeNames={"#s": "state"},
                      ExpressionAttributeValues={":d": "COMPLETED", ":k": now + 86400})


import threading

def handler(event, context):
    print("start", context.aws_request_id)
    try:
        for order in orders_in(event):
            t = threading.Thread(target=run_once, args=("email#" + order["orderId"], lambda o=order: send_confirmation_email(o), context))
            t.start()
            t.join()
            print("done", order["orderId"])
    finally:
        print("finally runs")
    return "ok"
