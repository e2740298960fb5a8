"""Mutant of solutions/07_sqs_partial_batch.py, written blind,
from the README and the lessons only, before reading the tests.
Misconception: catch the failure inside the work (log it, return None) so one record never fails the batch.
Wrong: run_once then saves COMPLETED with None: the order counts as done, is never retried and never emailed.
"""
from functools import partial

from run_once_kit import run_once

from sandbox import charge_card, orders_in, send_confirmation_email


def fulfil(order):
    """The work: charge card orders (the charge carries its own idempotency key), then email."""
    if order.get("payment") == "card":
        charge_card(order, idempotency_key=f"charge#{order['orderId']}")
    return send_confirmation_email(order)


def handler(event, context):
    """An SQS batch, record by record: return the records that failed in batchItemFailures."""
    def safe_fulfil(order):
        try:
            return fulfil(order)
        except Exception as err:
            print(f"{order['orderId']} failed: {err!r}")
            return None

    failures = []
    for record in event["Records"]:
        try:
            for order in orders_in({"Records": [record]}):
                run_once(f"order-confirmation#{order['orderId']}", partial(safe_fulfil, order), context=context)
        except Exception:
            failures.append({"itemIdentifier": record["messageId"]})
    return {"batchItemFailures": failures}
