"""Mutant of solutions/07_*.py. Reports a failed record by the id of the order it carries, not by its
messageId: Lambda matches the entry to no message of the batch, so it fails the whole batch, handled records
included. run_once keeps the redelivery from emailing twice, so only the broken response shows it."""
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
                try:
                    run_once(f"order-confirmation#{order['orderId']}", partial(fulfil, order), payload=order,
                             context=context)
                except Exception:
                    failures.append({"itemIdentifier": order["orderId"]})  # the order's id, not the message's
        except Exception:  # a body that is not an order: report its message
            failures.append({"itemIdentifier": record["messageId"]})
    return {"batchItemFailures": failures}
