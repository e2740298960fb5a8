"""Mutant of solutions/07_*.py. Claims each record under its SQS messageId: right for a redelivery of the
same message, wrong for a producer's re-send, which is a new message (a new messageId) for the same order."""
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
                run_once(f"order-confirmation#{record['messageId']}", partial(fulfil, order), payload=order,
                         context=context)
        except Exception:  # this record failed, or is in progress elsewhere: report it, go on with the rest
            failures.append({"itemIdentifier": record["messageId"]})
    return {"batchItemFailures": failures}
