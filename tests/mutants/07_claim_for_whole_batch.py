"""Mutant of solutions/07_*.py. Claims one key for the whole batch and runs the batch's work under it, so a
failing record fails (and brings back) every record of its batch."""
from functools import partial

from run_once_kit import run_once

from sandbox import charge_card, orders_in, send_confirmation_email


def fulfil(order):
    """The work: charge card orders (the charge carries its own idempotency key), then email."""
    if order.get("payment") == "card":
        charge_card(order, idempotency_key=f"charge#{order['orderId']}")
    return send_confirmation_email(order)


def fulfil_all(orders):
    return [fulfil(order) for order in orders]


def handler(event, context):
    """An SQS batch, record by record: return the records that failed in batchItemFailures."""
    orders = list(orders_in(event))
    key = "order-confirmation#" + ",".join(order["orderId"] for order in orders)
    try:
        run_once(key, partial(fulfil_all, orders), payload=orders, context=context)
    except Exception:
        return {"batchItemFailures": [{"itemIdentifier": record["messageId"]} for record in event["Records"]]}
    return {"batchItemFailures": []}
