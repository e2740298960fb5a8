"""Mutant of solutions/07_sqs_partial_batch.py, written blind,
from the README and the lessons only, before reading the tests.
Misconception: parse all orders up front (orders_in(event)), then run each through run_once with its own try.
Wrong: one non-JSON message makes orders_in raise for the whole batch, so every order in it is held back.
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
    orders = list(orders_in(event))  # every order of the batch
    by_order = {}
    for record in event["Records"]:
        for order in orders_in({"Records": [record]}):
            by_order[order["orderId"]] = record["messageId"]
    for order in orders:
        try:
            run_once(f"order-confirmation#{order['orderId']}", partial(fulfil, order), context=context)
        except Exception:
            failures.append({"itemIdentifier": by_order[order["orderId"]]})
    return {"batchItemFailures": failures}
