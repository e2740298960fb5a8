"""The article's ``runOnce``, ported to Python with boto3.

1. Claim the key with one conditional put: a new key, or a record whose lock expired.
2. If the claim fails, read the record (strongly consistent): COMPLETED means replay the
   stored result; anything else means someone else is still working.
3. Run the work. If it raises, delete the claim so a retry can start over.
4. Save the result and keep the record for a day (``RUN_ONCE_KEEP_FOR`` seconds, if the
   function's environment sets it). Keep it longer than any source may still deliver the
   event again: Lambda's async queue retries for up to 6 hours.
"""
import os
import time

import boto3

from sandbox import StillInProgressError

KEEP_FOR = int(os.environ.get("RUN_ONCE_KEEP_FOR", 24 * 60 * 60))  # seconds a completed record is kept

_table = None


def table():
    global _table
    if _table is None:
        _table = boto3.resource("dynamodb").Table(os.environ["IDEMPOTENCY_TABLE"])
    return _table


def run_once(key, lock_seconds, work):
    now = int(time.time())
    try:
        table().put_item(
            Item={"pk": key, "status": "IN_PROGRESS", "expiresAt": now + lock_seconds},
            # a new key, or a previous record that has expired
            ConditionExpression="attribute_not_exists(pk) OR expiresAt < :now",
            ExpressionAttributeValues={":now": now},
        )
    except table().meta.client.exceptions.ConditionalCheckFailedException:
        item = table().get_item(Key={"pk": key}, ConsistentRead=True).get("Item")
        if item and item["status"] == "COMPLETED":
            return item.get("result")  # a duplicate: replay the stored result
        raise StillInProgressError(f"{key} is being processed by another invocation") from None

    try:
        result = work()
    except Exception:
        table().delete_item(Key={"pk": key})  # let the retry start over
        raise

    table().update_item(
        Key={"pk": key},
        UpdateExpression="SET #status = :done, #result = :result, expiresAt = :keepUntil",
        ExpressionAttributeNames={"#status": "status", "#result": "result"},
        ExpressionAttributeValues={":done": "COMPLETED", ":result": result, ":keepUntil": now + KEEP_FOR},
    )
    return result
