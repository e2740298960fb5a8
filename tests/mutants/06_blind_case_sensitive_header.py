"""Mutant of solutions/06_http_idempotency_key.py, written blind,
from the README and the lessons only, before reading the tests.
Misconception: the header is spelled 'Idempotency-Key', so event['headers'].get('Idempotency-Key') finds it.
Wrong: HTTP header names are case-insensitive and API Gateway passes the client's spelling; 'idempotency-key' gets a
400.
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
    idem_key = (event.get("headers") or {}).get("Idempotency-Key")
    if not idem_key:
        return respond(400, {"error": "the Idempotency-Key header is required"})
    try:
        return run_once(f"order-confirmation#{idem_key}",
                        lambda: respond(201, send_confirmation_email(order)),
                        payload=order, context=context)
    except KeyInProgressError as err:
        return respond(409, {"error": "a request with this Idempotency-Key is still being processed"},
                       {"Retry-After": str(err.retry_after)})
    except PayloadMismatchError:
        return respond(422, {"error": "this Idempotency-Key was used for a different request"})
