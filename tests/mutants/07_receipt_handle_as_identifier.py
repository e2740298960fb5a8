"""Mutant of solutions/07_*.py. Names a failed record by its receiptHandle, not its messageId: Lambda matches the
entry to no message of the batch, so it fails the whole batch, as it does for a bare string."""
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
        except Exception:  # this record failed, or is in progress elsewhere: report it, go on with the rest
            failures.append({"itemIdentifier": record["receiptHandle"]})
    return {"batchItemFailures": failures}
