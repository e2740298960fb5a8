"""Mutant of solutions/07_sqs_partial_batch.py: run_once without the invocation's context.

The kit then locks each claim for its 60 s default, not for the time the invocation has left. A record cut
off by the function's timeout stays locked past its next deliveries, fails each as "in progress", and
reaches the dead-letter queue unsent (mutmut's arg_removal on context=context, the last survivor of 07).
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
                run_once(f"order-confirmation#{order['orderId']}", partial(fulfil, order), payload=order)
        except Exception:  # this record failed, or is in progress elsewhere: report it, go on with the rest
            failures.append({"itemIdentifier": record["messageId"]})
    return {"batchItemFailures": failures}
