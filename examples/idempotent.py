"""The improved handler: one ``run_once`` per order, for every way an event can arrive.

``run_once`` is the improved one (``run_once_improved.py``): one DynamoDB call for a
duplicate, a fencing token, a short lock and a long retention, a payload fingerprint.
Around it, each source gets what it needs:

- **The key names the operation**, ``order-confirmation#<orderId>``, never the delivery
  (a messageId, a request id, a stream eventID or an EventBridge id changes when a producer
  re-sends or a client retries). Behind API Gateway the client names its request with an
  ``Idempotency-Key`` header, which stays the same across its retries.
- **SQS, Kinesis, DynamoDB Streams: record by record.** A record that fails is named in
  ``batchItemFailures`` (the mapping is created with ``ReportBatchItemFailures``), so only
  it comes back (https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-errorhandling.html).
  On a stream, Lambda retries from the lowest failed record anyway, so the handler stops
  there and keeps the shard's order
  (https://docs.aws.amazon.com/lambda/latest/dg/services-kinesis-batchfailurereporting.html).
  A FIFO queue promises each message group's order, so there the handler hands back the failed
  record and every later one of its group, unprocessed, and goes on with the other groups (AWS
  says to stop at the first failure, the strictest form of the same rule; Powertools'
  ``skip_group_on_error`` does this,
  https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-errorhandling.html).
- **HTTP (API Gateway, a function URL, a load balancer): the Idempotency-Key draft's answers.** A
  repeat gets the stored status and body back; a key still in progress gets 409 with
  ``Retry-After``; a key reused with another payload gets 422
  (https://datatracker.ietf.org/doc/draft-ietf-httpapi-idempotency-key-header/). A cart of several
  orders is done order by order, each under its own key, so a retry replays what was done.
- **Async invokes, EventBridge, SNS, S3, synchronous calls:** the orders one after another; a
  failure raises, so the source retries the event, and the orders already done are replayed.
- **Kafka (Amazon MSK, self-managed):** the same, a failure raises. Naming failed records needs
  the mapping's provisioned mode; a mapping without it ignores a partial batch response, and the
  records named would be committed unprocessed. Raising is safe in both modes: Lambda retries the
  whole batch and ``run_once`` replays the orders already done
  (https://docs.aws.amazon.com/lambda/latest/dg/kafka-retry-configurations.html).
- **CloudFormation custom resources:** Create confirms the orders its properties hold, each under its
  order key, so Lambda's retry of the same event replays them; the answer to CloudFormation (an upload
  to the request's ``ResponseURL``) goes out once the work is done, with a physical id that names the
  resource and not the attempt (the log stream's name, ``cfn-response``'s default, changes with the
  environment). Update and Delete send no email
  (https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/crpg-ref-responses.html).
- **Payments:** ``charge_card`` gets its own idempotency key, ``charge#<orderId>``. If the
  charge succeeds and the invocation dies before saving, the retry charges again and the
  payment provider answers with the first charge: the window no claim can close is closed
  downstream. An email has no such key, so that window stays open for it.

The lock lasts as long as the invocation can still run, unless the function's environment
sets ``RUN_ONCE_LOCK_SECONDS``; results are kept a day, or ``RUN_ONCE_KEEP_FOR`` seconds.
"""
import json
import os
from functools import partial

from run_once_improved import KeyInProgressError, PayloadMismatchError, run_once

from sandbox import charge_card, orders_in, respond_to_cloudformation, send_confirmation_email

LOCK_SECONDS = int(os.environ["RUN_ONCE_LOCK_SECONDS"]) if os.environ.get("RUN_ONCE_LOCK_SECONDS") else None
#: How the batch item id of a record is named, by event source.
RECORD_ID = {"aws:sqs": lambda r: r["messageId"],
             "aws:kinesis": lambda r: r["kinesis"]["sequenceNumber"],
             "aws:dynamodb": lambda r: r["dynamodb"]["SequenceNumber"]}


def fulfil(order):
    if order.get("payment") == "card":
        charge_card(order, idempotency_key=f"charge#{order['orderId']}")
    return send_confirmation_email(order)


def confirm(order, context, work=None, key=None):
    """The order's confirmation, once: ``work`` (by default, fulfil the order) under its key."""
    return run_once(f"order-confirmation#{key or order['orderId']}", work or partial(fulfil, order),
                    payload=order, lock_seconds=LOCK_SECONDS, context=context)


def handler(event, context):
    if "httpMethod" in event or "requestContext" in event:
        return http_request(event, context)
    if "RequestType" in event and "ResponseURL" in event:
        return custom_resource(event, context)
    records = event.get("Records") or []
    if records and all(r.get("eventSource") in RECORD_ID for r in records):
        return batch(records, context)  # SQS, Kinesis, DynamoDB Streams: record by record
    # SNS and S3 notifications arrive as Records too, but asynchronously: a failure raises, and Lambda retries.
    return {"processed": [confirm(order, context) for order in orders_in(event)]}


def batch(records, context):
    failures, held_groups = [], set()
    for record in records:
        ident = {"itemIdentifier": RECORD_ID[record["eventSource"]](record)}
        group = _fifo_group(record)
        if group in held_groups:  # an earlier message of its group failed: this one waits, unprocessed
            failures.append(ident)
            continue
        try:
            for order in orders_in({"Records": [record]}):
                confirm(order, context)
        except Exception:  # this record failed (or is in progress elsewhere): report it, go on
            failures.append(ident)
            if record["eventSource"] != "aws:sqs":
                break  # a stream resumes at the lowest failed record: the rest come again anyway
            if group is not None:
                held_groups.add(group)  # keep the message group's order; other groups go on
    return {"batchItemFailures": failures}


def _fifo_group(record):
    """A FIFO queue's message group (None for a standard queue or a stream): order holds within each group."""
    if not record.get("eventSourceARN", "").endswith(".fifo"):
        return None
    return (record.get("attributes") or {}).get("MessageGroupId")


def custom_resource(event, context):
    """A CloudFormation custom resource: Create confirms the orders in its properties; Delete sends nothing.

    It answers CloudFormation only once the work is done: an error raises, and Lambda retries the event. The
    physical id names the resource, not the attempt, so every attempt and every later request agrees on it."""
    physical_id = event.get("PhysicalResourceId") or f"orders-import#{event['StackId']}#{event['LogicalResourceId']}"
    if event["RequestType"] == "Create":
        for order in orders_in(event):
            confirm(order, context)
    respond_to_cloudformation(event, context, "SUCCESS", physical_resource_id=physical_id)
    return {"PhysicalResourceId": physical_id}


def http_request(event, context):
    orders = list(orders_in(event))
    if len(orders) > 1:
        return http_cart(orders, context)
    [order] = orders
    headers = {name.lower(): value for name, value in (event.get("headers") or {}).items()}

    def respond():  # the whole response is the stored result, so a repeat gets the same status and body
        return {"statusCode": 200, "body": json.dumps(fulfil(order), default=str)}

    try:
        return confirm(order, context, work=respond, key=headers.get("idempotency-key"))
    except KeyInProgressError as err:
        return _answer(409, str(err), {"Retry-After": str(err.retry_after)})
    except PayloadMismatchError as err:
        return _answer(422, str(err))


def http_cart(orders, context):
    """A cart: each order once, under its own key, so a retry replays the orders already done and does the rest."""
    try:
        done = [confirm(order, context) for order in orders]
    except KeyInProgressError as err:
        return _answer(409, str(err), {"Retry-After": str(err.retry_after)})
    except PayloadMismatchError as err:
        return _answer(422, str(err))
    return {"statusCode": 200, "headers": {"Content-Type": "application/json"},
            "body": json.dumps({"processed": done}, default=str)}


def _answer(status, message, headers=None):
    return {"statusCode": status, "headers": {"Content-Type": "application/json", **(headers or {})},
            "body": json.dumps({"message": message})}
