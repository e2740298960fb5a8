# ----------------------------------------------------------------------------------------------------------
# run_once_kit.py: the run_once that exercises 05, 06 and 07 import. A copy of
# examples/run_once_improved.py, made by `make exercises`; do not edit this copy.
#
# How to call it:
#   from run_once_kit import run_once
#   run_once(key, work, *, payload=None, lock_seconds=None, keep_seconds=KEEP_FOR, context=None)
#     Run ``work()`` once for ``key``; a duplicate gets the stored result back.
#     payload: what makes two requests the same; a repeat of the key with another payload raises
#       PayloadMismatchError
#     context: Lambda's context: the lock lasts as long as the invocation can still run (lock_seconds sets
#       it instead)
#     keep_seconds: how long a COMPLETED result is kept and replayed
# What it raises (import the ones you catch from run_once_kit):
#   PayloadMismatchError (a kind of IdempotencyError): The key was first used for a different payload (HTTP:
#     422 Unprocessable Content).
#   ResultTooLargeError (a kind of IdempotencyError): The result would make the idempotency item bigger than
#     DynamoDB's 400 KB.
#   KeyInProgressError (a kind of StillInProgressError): Another invocation holds the key; ``retry_after``
#     is how many seconds its lock still runs.
#
# SPOILER below this header: the code is the course's worked answer to exercise 03 (store and replay),
# exercise 04 (locks and retention: claim, lock_seconds_for, KEEP_FOR) and the fencing half of exercise 08
# (save and release, conditional on the owner token). Do those first; exercises 05, 06 and 07 need nothing
# from this file but what this header says.
# ----------------------------------------------------------------------------------------------------------

"""``run_once``, past the article: the design production systems arrived at.

The article's spine stays: claim the key with one conditional put, store the result and
replay it to duplicates, let an IN_PROGRESS lock expire after a crash, delete the claim when
the work fails. On top of it:

- **One call on the duplicate path.** The claim asks DynamoDB to return the existing item when
  its condition fails (``ReturnValuesOnConditionCheckFailure="ALL_OLD"``), so a duplicate needs
  no second read (https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_PutItem.html).
- **A fencing token.** Each claim stores a fresh ``owner`` id. Saving the result and deleting on
  failure are conditional on still owning the claim, so an invocation whose lock expired (it ran
  longer than its lock) can neither overwrite nor delete the record of the invocation that took
  over. (Powertools' save and delete are unconditional.) The same token tells a claim refused
  by its own first attempt (written, its answer lost, sent again by botocore) from another
  invocation's: the old item carries our token, so we go on.
- **Two windows, each checked at read time.** A short lock (``lockUntil``, by default the
  invocation's remaining time) while IN_PROGRESS, and a long retention (``keepUntil``) once
  COMPLETED. TTL (``expiresAt``) follows whichever applies, but deletes lazily, so the claim's
  condition checks both itself.
- **A payload fingerprint.** The same key with a different payload is refused
  (``PayloadMismatchError``) instead of replaying another request's result.
- **Results DynamoDB can store.** Floats become Decimals, and a result that would push the item
  past DynamoDB's 400 KB limit is refused up front with ``ResultTooLargeError``
  (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/ServiceQuotas.html).

    result = run_once("order-confirmation#o-1", lambda: send(order), payload=order, context=context)
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import time
import uuid
from decimal import Decimal

import boto3
from boto3.dynamodb.types import TypeDeserializer

from sandbox import StillInProgressError

KEEP_FOR = int(os.environ.get("RUN_ONCE_KEEP_FOR", 24 * 60 * 60))  # seconds a completed result is kept
DEFAULT_LOCK = 60  # seconds, when there is no context to size the lock from
MAX_ITEM_BYTES = 400 * 1024  # DynamoDB's item size limit
IN_PROGRESS, COMPLETED = "IN_PROGRESS", "COMPLETED"


class IdempotencyError(Exception):
    """Base class for what run_once refuses."""


class PayloadMismatchError(IdempotencyError):
    """The key was first used for a different payload (HTTP: 422 Unprocessable Content)."""


class ResultTooLargeError(IdempotencyError):
    """The result would make the idempotency item bigger than DynamoDB's 400 KB."""


class KeyInProgressError(StillInProgressError):
    """Another invocation holds the key; ``retry_after`` is how many seconds its lock still runs."""

    def __init__(self, key: str, retry_after: int):
        super().__init__(f"{key} is being processed by another invocation")
        self.retry_after = retry_after


_table = None
_plain = TypeDeserializer().deserialize


def table():
    global _table
    if _table is None:
        _table = boto3.resource("dynamodb").Table(os.environ["IDEMPOTENCY_TABLE"])
    return _table


def fingerprint(payload) -> str | None:
    """A stable hash of what defines "the same request" (None: not checked)."""
    if payload is None:
        return None
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()


def storable(result):
    """The result as DynamoDB can hold it: floats as Decimals (JSON in, JSON out)."""
    return json.loads(json.dumps(result, default=str), parse_float=Decimal)


def lock_seconds_for(context) -> int:
    """Hold the lock for as long as this invocation can still run (it cannot be working after that)."""
    if context is None:
        return DEFAULT_LOCK
    return max(1, math.ceil(context.get_remaining_time_in_millis() / 1000))


def claim(key: str, owner: str, lock_seconds: int, print_: str | None):
    """One conditional put: a new key, an expired lock or an expired result. Returns the old item if refused."""
    now = int(time.time())
    item = {"pk": key, "status": IN_PROGRESS, "owner": owner, "lockUntil": now + lock_seconds,
            "expiresAt": now + lock_seconds}
    if print_:
        item["fingerprint"] = print_
    try:
        table().put_item(
            Item=item,
            ConditionExpression="attribute_not_exists(pk)"
                                " OR (#status = :in_progress AND lockUntil < :now)"
                                " OR (#status = :completed AND keepUntil < :now)",
            ExpressionAttributeNames={"#status": "status"},
            ExpressionAttributeValues={":now": now, ":in_progress": IN_PROGRESS, ":completed": COMPLETED},
            ReturnValuesOnConditionCheckFailure="ALL_OLD")
        return None
    except table().meta.client.exceptions.ConditionalCheckFailedException as err:
        # The Table resource hands the old item back in DynamoDB's wire format.
        return {name: _plain(value) for name, value in err.response.get("Item", {}).items()}


def run_once(key, work, *, payload=None, lock_seconds=None, keep_seconds=KEEP_FOR, context=None):
    """Run ``work()`` once for ``key``; a duplicate gets the stored result back.

    Raises ``StillInProgressError`` while another invocation holds the key, and
    ``PayloadMismatchError`` when the key was first used for a different payload.
    """
    owner, print_ = str(uuid.uuid4()), fingerprint(payload)
    old = claim(key, owner, lock_seconds or lock_seconds_for(context), print_)
    if old is not None and old.get("status") == IN_PROGRESS and old.get("owner") == owner:
        old = None  # our own claim: the put took effect, its answer was lost, and botocore sent it again
    if old is not None:
        if print_ and old.get("fingerprint") not in (None, print_):
            raise PayloadMismatchError(f"{key} was first used for a different request")
        if old.get("status") == COMPLETED:
            if old.get("resultTooLarge"):
                raise ResultTooLargeError(f"{key} was done, but its result was too large to keep")
            return old.get("result")  # a duplicate: replay the stored result
        raise KeyInProgressError(key, max(1, int(old.get("lockUntil", 0)) - int(time.time())))
    try:
        result = storable(work())
    except Exception:
        release(key, owner)  # let a retry start over
        raise
    if too_large(key, result):
        # The work is done: record that, so no duplicate repeats it, and say why nothing is replayed.
        save(key, owner, None, keep_seconds, too_large=True)
        raise ResultTooLargeError(f"the result for {key} would make its item larger than DynamoDB's 400 KB; "
                                  f"store it elsewhere (S3) and return a reference")
    save(key, owner, result, keep_seconds)
    return result


def release(key: str, owner: str) -> None:
    """Delete our claim; if another invocation owns the key by now, leave its record alone."""
    try:
        table().delete_item(Key={"pk": key}, ConditionExpression="#owner = :me",
                            ExpressionAttributeNames={"#owner": "owner"}, ExpressionAttributeValues={":me": owner})
    except table().meta.client.exceptions.ConditionalCheckFailedException:
        pass


def too_large(key: str, result) -> bool:
    """Would the item, with this result, pass DynamoDB's 400 KB? (an estimate with room for the other fields)"""
    return len(json.dumps(result, default=str).encode()) + len(key) + 300 > MAX_ITEM_BYTES


def save(key: str, owner: str, result, keep_seconds: int, too_large: bool = False) -> None:
    """Store the result and keep it ``keep_seconds``; only the claim's owner may (the fencing token)."""
    keep_until = int(time.time()) + keep_seconds
    try:
        table().update_item(
            Key={"pk": key},
            UpdateExpression="SET #status = :completed, #result = :result, keepUntil = :keep, expiresAt = :keep,"
                             " resultTooLarge = :too_large REMOVE lockUntil",
            ConditionExpression="#owner = :me",
            ExpressionAttributeNames={"#status": "status", "#result": "result", "#owner": "owner"},
            ExpressionAttributeValues={":completed": COMPLETED, ":result": result, ":keep": keep_until,
                                       ":me": owner, ":too_large": too_large})
    except table().meta.client.exceptions.ConditionalCheckFailedException:
        # Our lock ran out and another invocation took the key over: its record stands. The work
        # was done twice (the checker says so), but the record stays consistent.
        pass
