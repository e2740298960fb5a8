"""Mutant of solutions/06_http_idempotency_key.py, written blind,
from the README and the lessons only, before reading the tests.
Misconception: store only the email result; the first request answers 201 Created, a replay 200 OK 'already done'.
Wrong: the draft says a repeat gets the same response back, status and body; the client sees a different status.
"""
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
    headers = {name.lower(): value for name, value in (event.get("headers") or {}).items()}
    idem_key = headers.get("idempotency-key")
    if not idem_key:
        return respond(400, {"error": "the Idempotency-Key header is required"})
    first = []
    try:
        result = run_once(f"order-confirmation#{idem_key}",
                          lambda: first.append(True) or send_confirmation_email(order),
                          payload=order, context=context)
    except KeyInProgressError as err:
        return respond(409, {"error": "still processing"}, {"Retry-After": str(err.retry_after)})
    except PayloadMismatchError:
        return respond(422, {"error": "Idempotency-Key reused with another body"})
    return respond(201 if first else 200, result)
