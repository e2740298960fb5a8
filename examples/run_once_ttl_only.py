"""A weaker run_once that trusts DynamoDB TTL to clear expired locks.

The claim does carry a lock expiry (``expiresAt``), but its condition is only
``attribute_not_exists(pk)``: it counts on TTL deleting the record once the lock runs
out. TTL deletes lazily, though, typically within two days, and an expired record still
shows up in every read and condition check until then. So after a crash or a timeout
the stale IN_PROGRESS record keeps refusing the retries. The article's run_once checks
``expiresAt < :now`` itself for exactly this reason.

Otherwise it matches ``article.py``: the same keys, lock length, stored result and
downstream idempotency key on the charge.
"""
import os
import time

import boto3
from article import make_handler

from sandbox import StillInProgressError

KEEP_FOR = 24 * 60 * 60  # seconds a completed record is kept

table = boto3.resource("dynamodb").Table(os.environ["IDEMPOTENCY_TABLE"])


def run_once(key, lock_seconds, work):
    now = int(time.time())
    try:
        table.put_item(
            Item={"pk": key, "status": "IN_PROGRESS", "expiresAt": now + lock_seconds},
            ConditionExpression="attribute_not_exists(pk)",  # TTL will have removed an expired lock... eventually
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
        ExpressionAttributeValues={":done": "COMPLETED", ":result": result, ":keepUntil": now + KEEP_FOR},
    )
    return result


handler = make_handler(run_once)
