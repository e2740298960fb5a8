"""A claim whose owner token is made once per execution environment, at init.

It is the improved run_once's idea (lesson 12, ``own-write-retried``): a claim refused by an item
that carries our own token is our own claim, written by a put whose answer was lost, so we go on.
Here the token is made when the module loads, one per environment, which holds as long as every
environment runs its own init. With SnapStart it does not: Lambda runs the init once and restores
every environment from that snapshot, so every environment has the same token
(https://docs.aws.amazon.com/lambda/latest/dg/snapstart-uniqueness.html), and a duplicate running
in another environment takes the first one's claim for its own.

The fix AWS gives: make unique things after the restore, in the handler or in a runtime hook.
With ``OWNER_TOKEN_AFTER_RESTORE=1`` in the function's environment, an after-restore hook
(``snapshot_restore_py.register_after_restore``, which Lambda's Python runtime runs after each
restore: https://docs.aws.amazon.com/lambda/latest/dg/snapstart-runtime-hooks-python.html) makes a
fresh token in every restored environment.
"""
import os
import uuid

import boto3
from snapshot_restore_py import register_after_restore

from sandbox import orders_in, send_confirmation_email

table = boto3.resource("dynamodb").Table(os.environ["IDEMPOTENCY_TABLE"])
OWNER = str(uuid.uuid4())  # this environment's token, made at init


def new_owner():
    global OWNER
    OWNER = str(uuid.uuid4())


if os.environ.get("OWNER_TOKEN_AFTER_RESTORE") == "1":
    register_after_restore(new_owner)


def claim(key):
    """True if this invocation may do the work: a new claim, or one that carries our own token."""
    try:
        table.put_item(Item={"pk": key, "status": "IN_PROGRESS", "owner": OWNER},
                       ConditionExpression="attribute_not_exists(pk)", ReturnValuesOnConditionCheckFailure="ALL_OLD")
        return True
    except table.meta.client.exceptions.ConditionalCheckFailedException as err:
        return err.response.get("Item", {}).get("owner", {}).get("S") == OWNER


def handler(event, context):
    sent = []
    for order in orders_in(event):
        if claim(f"order-confirmation#{order['orderId']}"):
            send_confirmation_email(order)
            sent.append(order["orderId"])
    return {"sent": sent}
