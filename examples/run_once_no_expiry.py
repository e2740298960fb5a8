"""A weaker run_once that a learner often writes first: the claim never expires.

It claims the key with ``attribute_not_exists(pk)`` alone and writes no lock expiry on
the IN_PROGRESS record. When the work raises, it deletes the claim, just as the article
does. But a crash or a timeout is not an exception the handler can catch: the runtime
stops it, the IN_PROGRESS record stays, and every retry is told "still in progress"
until the retries run out and the order is dropped.

Otherwise it matches ``article.py``: the same keys, the stored result and the
downstream idempotency key on the charge.
"""
import os
import time

import boto3
from article import make_handler

from sandbox import StillInProgressError

KEEP_FOR = 24 * 60 * 60  # seconds a completed record is kept

table = boto3.resource("dynamodb").Table(os.environ["IDEMPOTENCY_TABLE"])


def run_once(key, work):
    try:
        table.put_item(
            Item={"pk": key, "status": "IN_PROGRESS"},
            ConditionExpression="attribute_not_exists(pk)",  # nobody has claimed this key, ever
        )
    except table.meta.client.exceptions.ConditionalCheckFailedException:
        item = table.get_item(Key={"pk": key}, ConsistentRead=True).get("Item")
        if item and item["status"] == "COMPLETED":
            return item.get("result")
        raise StillInProgressError(f"{key} is being processed by another invocation") from None

    try:
        result = work()
    except Exception:
        table.delete_item(Key={"pk": key})
        raise

    table.update_item(
        Key={"pk": key},
        UpdateExpression="SET #status = :done, #result = :result, expiresAt = :keepUntil",
        ExpressionAttributeNames={"#status": "status", "#result": "result"},
        ExpressionAttributeValues={":done": "COMPLETED", ":result": result,
                                   ":keepUntil": int(time.time()) + KEEP_FOR},
    )
    return result


handler = make_handler(lambda key, lock_seconds, work: run_once(key, work))  # no lock to size
