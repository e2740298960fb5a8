"""Mutant of solutions/06_http_idempotency_key.py, written blind,
from the README and the lessons only, before reading the tests.
Misconception: in-progress is 409, anything else that goes wrong is the client's fault: 422.
Wrong: an email provider failure becomes a 4xx; the client does not retry a 4xx, and the released order is lost.
"""
import json

from run_once_kit import KeyInProgressError, run_once

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
    try:
        return run_once(f"order-confirmation#{idem_key}",
                        lambda: respond(201, send_confirmation_email(order)),
                        payload=order, context=context)
    except KeyInProgressError as err:
        return respond(409, {"error": "a request with this Idempotency-Key is still being processed"},
                       {"Retry-After": str(err.retry_after)})
    except Exception:
        return respond(422, {"error": "this Idempotency-Key was used for a different request"})
