"""Mutant of solutions/07_*.py. When one record fails, names every messageId of the batch in batchItemFailures:
a valid response, so Lambda returns exactly those messages to the queue, the handled ones included. That is
the whole-batch retry a partial response exists to prevent; run_once only hides it by replaying the others."""
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
                run_once(f"order-confirmation#{order['orderId']}", partial(fulfil, order), payload=order,
                         context=context)
        except Exception:  # one failed: report them all, to be safe
            failures.append({"itemIdentifier": record["messageId"]})
    if failures:
        failures = [{"itemIdentifier": r["messageId"]} for r in event["Records"]]
    return {"batchItemFailures": failures}
