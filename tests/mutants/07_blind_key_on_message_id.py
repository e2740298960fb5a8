"""Mutant of solutions/07_sqs_partial_batch.py, written blind,
from the README and the lessons only, before reading the tests.
Misconception: in an SQS handler, the messageId is the record's identity: key run_once on it too.
Wrong: redeliveries keep it, but a producer re-send or a DLQ redrive brings a new messageId: the order is done
twice.
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
    failures = []
    for record in event["Records"]:
        try:
            for order in orders_in({"Records": [record]}):
                run_once(f"order-confirmation#{record['messageId']}", partial(fulfil, order), context=context)
        except Exception as err:  # any reason: the work raised, in progress elsewhere, not an order
            print(f"record {record['messageId']} failed: {err!r}")
            failures.append({"itemIdentifier": record["messageId"]})
    return {"batchItemFailures": failures}
