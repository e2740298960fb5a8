"""Powertools for AWS Lambda's ``@idempotent`` handler decorator: one record per invocation, not per order.

The decorator (https://docs.aws.amazon.com/powertools/python/latest/utilities/idempotency/) makes
the whole handler idempotent: it hashes part of the event into the key, claims it before the
handler runs, stores the handler's return value and replays it to a duplicate event.

The key: ``EVENT_KEY`` picks, with JMESPath's ``||`` (the first part that is present), what the
event carries without its delivery metadata (request, message and event ids, receipt handles,
receive counts), so that the same content delivered again hashes the same:

- HTTP (API Gateway, a function URL, a load balancer): the client's ``Idempotency-Key`` header
  (as the client spelled it, or in lower case, as a function URL and a load balancer pass it), else
  the body (the order, or the cart);
- EventBridge and async invokes: ``detail`` (a producer's re-send gets a new ``id``, not a new detail);
- SQS: the bodies of the batch; Kinesis: the records' data; DynamoDB Streams: the images;
- anything else: the whole event.

What that means for an SQS (or Kinesis, or DynamoDB Streams) batch: the key covers the batch,
never one order. The record says "this batch, as a whole, was done" or nothing at all:

- a batch that fails half-way leaves nothing behind (Powertools deletes the record when the
  handler raises), so when SQS hands the batch out again the orders handled before the failure
  are handled again (``sqs-batch-failure`` shows it);
- the same order in another batch (a producer's re-send, a partial retry, a redrive) is a new key.

For batches, Powertools' documentation pairs ``idempotent_function`` with each record instead:
that is ``powertools_function.py``.

Lock and retention are as there: the lock is the invocation's remaining time (the decorator
registers the context it is given), at most ``RUN_ONCE_LOCK_SECONDS`` when that is set, and the
retention ``RUN_ONCE_KEEP_FOR`` (unset: Powertools' hour).
A duplicate that finds the event IN_PROGRESS gets a 409 behind HTTP, and fails elsewhere.
"""
import json
import os

from aws_lambda_powertools.utilities.idempotency import DynamoDBPersistenceLayer, IdempotencyConfig, idempotent
from aws_lambda_powertools.utilities.idempotency.exceptions import IdempotencyAlreadyInProgressError

from sandbox import charge_card, orders_in, send_confirmation_email

LOCK_SECONDS = int(os.environ.get("RUN_ONCE_LOCK_SECONDS") or 0)  # 0: the invocation's remaining time

EVENT_KEY = ('headers."Idempotency-Key" || headers."idempotency-key" || body || detail || Records[*].body'
             ' || Records[*].kinesis.data || Records[*].dynamodb.NewImage || Records[*].dynamodb.OldImage || @')

persistence = DynamoDBPersistenceLayer(table_name=os.environ["IDEMPOTENCY_TABLE"], key_attr="pk",
                                       expiry_attr="expiresAt")
config = IdempotencyConfig(event_key_jmespath=EVENT_KEY,
                           expires_after_seconds=int(os.environ.get("RUN_ONCE_KEEP_FOR", 60 * 60)))


class LockedContext:
    """The Lambda context, reporting at most ``seconds`` of remaining time: Powertools' lock lasts that long."""

    def __init__(self, context, seconds):
        self._context, self._millis = context, seconds * 1000

    def get_remaining_time_in_millis(self):
        return min(self._context.get_remaining_time_in_millis(), self._millis)

    def __getattr__(self, name):
        return getattr(self._context, name)


def fulfil(order):
    if order.get("payment") == "card":
        charge_card(order, idempotency_key=f"charge#{order['orderId']}")
    return send_confirmation_email(order)


def is_http(event):
    """API Gateway, a function URL or a load balancer: an HTTP client waits for this answer."""
    return "httpMethod" in event or "requestContext" in event


@idempotent(persistence_store=persistence, config=config, key_prefix="order-event")
def process(event, context):
    results = [fulfil(order) for order in orders_in(event)]
    if is_http(event):
        return {"statusCode": 200, "body": json.dumps(results[0] if len(results) == 1 else results)}
    return {"processed": len(results)}


def handler(event, context):
    try:
        return process(event, LockedContext(context, LOCK_SECONDS) if LOCK_SECONDS else context)
    except IdempotencyAlreadyInProgressError as err:
        if is_http(event):
            return {"statusCode": 409, "body": json.dumps({"message": str(err)})}
        raise  # SQS, streams and async invokes: fail, so the source retries later
