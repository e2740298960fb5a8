# Exercise 07 · SQS partial batch responses
# The answer cell of exercises/07_sqs_partial_batch.ipynb, as a file.
# check("07") in the notebook saves that cell here, so the shell runs the same code:
#   python -m sandbox.grading check 07
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
    # YOUR CODE HERE
    raise NotImplementedError("exercise 07: write this part, then run check(\"07\")")
