"""Powertools for AWS Lambda's ``idempotent_function``, one order at a time: the library's answer to run_once.

Set it beside ``idempotent.py`` (the "improved" stage): the same per-order design, built from
Powertools' idempotency utility (https://docs.aws.amazon.com/powertools/python/latest/utilities/idempotency/).

- ``fulfil`` is wrapped in ``idempotent_function``; ``data_keyword_argument="order"`` names the
  argument that is the payload. ``event_key_jmespath="orderId"`` keys the record on the order, the
  operation and not the delivery, so a batch that comes back, a producer's re-send (a new
  MessageId, sequence number or event id) and an API Gateway client retry (a new requestId) all
  find the same record. ``key_prefix`` keeps the key free of the module's name.
- ``payload_validation_jmespath="@"`` stores a hash of the whole order: the same orderId sent with
  another payload raises ``IdempotencyValidationError`` instead of replaying another order's result.
- ``register_lambda_context`` sizes the IN_PROGRESS lock to the invocation's remaining time, so
  after a crash or a timeout the next delivery takes the claim over. Powertools has no setting
  for a shorter lock; when the function's environment sets ``RUN_ONCE_LOCK_SECONDS`` (as
  ``lock-shorter-than-work`` does for the stages), the context it is given reports at most that
  much time left, so its lock is as long as theirs.
- Retention: ``expires_after_seconds`` comes from ``RUN_ONCE_KEEP_FOR``, the variable the stages
  read, so the campaign compares designs and not defaults. Unset, it is Powertools' own default,
  an hour, which is shorter than the 6 hours Lambda's async queue may still retry an event.
- A duplicate that finds the order IN_PROGRESS: behind HTTP (API Gateway, a function URL, a load
  balancer) a 409; anywhere else the invocation fails, so the source delivers it again later.

What Powertools does not do, and ``idempotent.py`` does: its save and its delete are
unconditional (no fencing token), so an invocation that outlives its lock overwrites, or
deletes, the record of the invocation that took the key over.
"""
import json
import os

from aws_lambda_powertools.utilities.idempotency import (
    DynamoDBPersistenceLayer,
    IdempotencyConfig,
    idempotent_function,
)
from aws_lambda_powertools.utilities.idempotency.exceptions import (
    IdempotencyAlreadyInProgressError,
    IdempotencyValidationError,
)

from sandbox import charge_card, orders_in, send_confirmation_email

LOCK_SECONDS = int(os.environ.get("RUN_ONCE_LOCK_SECONDS") or 0)  # 0: the invocation's remaining time

persistence = DynamoDBPersistenceLayer(table_name=os.environ["IDEMPOTENCY_TABLE"], key_attr="pk",
                                       expiry_attr="expiresAt")
config = IdempotencyConfig(event_key_jmespath="orderId", payload_validation_jmespath="@",
                           expires_after_seconds=int(os.environ.get("RUN_ONCE_KEEP_FOR", 60 * 60)))


@idempotent_function(data_keyword_argument="order", persistence_store=persistence, config=config,
                     key_prefix="order-confirmation")
def fulfil(order):
    if order.get("payment") == "card":
        charge_card(order, idempotency_key=f"charge#{order['orderId']}")
    return send_confirmation_email(order)


class LockedContext:
    """The Lambda context, reporting at most ``seconds`` of remaining time: Powertools' lock lasts that long."""

    def __init__(self, context, seconds):
        self._context, self._millis = context, seconds * 1000

    def get_remaining_time_in_millis(self):
        return min(self._context.get_remaining_time_in_millis(), self._millis)

    def __getattr__(self, name):
        return getattr(self._context, name)


def handler(event, context):
    config.register_lambda_context(LockedContext(context, LOCK_SECONDS) if LOCK_SECONDS else context)
    http = "httpMethod" in event or "requestContext" in event  # API Gateway, a function URL, a load balancer
    try:
        results = [fulfil(order=order) for order in orders_in(event)]
    except (IdempotencyAlreadyInProgressError, IdempotencyValidationError) as err:
        if http:
            status = 409 if isinstance(err, IdempotencyAlreadyInProgressError) else 422
            return {"statusCode": status, "body": json.dumps({"message": str(err)})}
        raise  # SQS, streams and async invokes: fail, so the source retries later
    if http:
        return {"statusCode": 200, "body": json.dumps(results[0] if len(results) == 1 else results)}
    return {"processed": len(results)}
