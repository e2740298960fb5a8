"""Mutant of solutions/07_*.py. Reads each record's order outside the try: a poison message raises for the
whole batch, and every order in it comes back with it."""
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
        orders = list(orders_in({"Records": [record]}))  # a body that is not an order raises here: the whole batch
        try:
            for order in orders:
                run_once(f"order-confirmation#{order['orderId']}", partial(fulfil, order), payload=order,
                         context=context)
        except Exception:  # this record failed, or is in progress elsewhere: report it, go on with the rest
            failures.append({"itemIdentifier": record["messageId"]})
    return {"batchItemFailures": failures}
