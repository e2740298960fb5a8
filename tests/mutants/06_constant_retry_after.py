"""Mutant of solutions/06_*.py. Answers every 409 with Retry-After: "1", a string of whole seconds but not the
seconds left on the lock: a client that waits as told comes back while the first request still works."""
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
    key = headers.get("idempotency-key")
    if not key:
        return respond(400, {"message": "this endpoint needs an Idempotency-Key header"})

    def work():  # the whole response is the stored result, so a retry gets the same status and body
        return respond(200, send_confirmation_email(order))

    try:
        return run_once(f"order-confirmation#{key}", work, payload=order, context=context)
    except KeyInProgressError as err:
        return respond(409, {"message": str(err)}, {"Retry-After": "1"})
    except PayloadMismatchError as err:
        return respond(422, {"message": str(err)})
