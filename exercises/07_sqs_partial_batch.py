# Exercise 07 · SQS partial batch responses
# The answer cell of exercises/07_sqs_partial_batch.ipynb, as a file: write your answer in that cell.
# check("07") in the notebook saves the cell here, so the shell runs the same code:
#   python -m sandbox.grading check 07
# It replaces this file; if you edited the file by hand, it keeps your version as 07_sqs_partial_batch.py.bak.
# fingerprint of the code below, as written: 17ea635c14addc0e
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
