"""Mutant of solutions/07_sqs_partial_batch.py, written blind,
from the README and the lessons only, before reading the tests.
Misconception: itemIdentifier names the failed item, i.e. the order id that failed.
Wrong: Lambda wants the record's messageId; an identifier that is not one of the batch's fails the whole batch.
"""
import json
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
    failures = []
    for record in event["Records"]:
        try:
            for order in orders_in({"Records": [record]}):
                run_once(f"order-confirmation#{order['orderId']}", partial(fulfil, order), context=context)
        except Exception as err:
            print(f"record failed: {err!r}")
            body = record.get("body") or ""
            try:
                failed_id = json.loads(body).get("orderId", record["messageId"])
            except ValueError:
                failed_id = record["messageId"]
            failures.append({"itemIdentifier": failed_id})
    return {"batchItemFailures": failures}
