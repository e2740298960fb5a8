# Exercise 06 · The HTTP Idempotency-Key
# The answer cell of exercises/06_http_idempotency_key.ipynb, as a file: write your answer in that cell.
# check("06") in the notebook saves the cell here, so the shell runs the same code:
#   python -m sandbox.grading check 06
# It replaces this file; if you edited the file by hand, it keeps your version as 06_http_idempotency_key.py.bak.
# fingerprint of the code below, as written: df5c144876d1f25b
import json

from run_once_kit import KeyInProgressError, PayloadMismatchError, run_once

from sandbox import orders_in, send_confirmation_email


def respond(status, body, headers=None):
    """An API Gateway proxy response with a JSON body."""
    return {"statusCode": status, "headers": {"Content-Type": "application/json", **(headers or {})},
            "body": json.dumps(body, default=str)}


def handler(event, context):
    """POST /orders behind API Gateway, safe to retry with the client's Idempotency-Key header."""
    [order] = orders_in(event)
    # YOUR CODE HERE
    raise NotImplementedError("exercise 06: write this part, then run check(\"06\")")
