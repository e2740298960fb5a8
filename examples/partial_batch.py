"""A naive SQS handler with a partial batch response: it reports the records that failed.

Each record is handled on its own. A record whose processing raises is named in
``batchItemFailures``, so (with ReportBatchItemFailures turned on for the mapping) only it
comes back; the others are deleted. It is still naive: a record that does come back is
processed again with no idempotency check.
https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-errorhandling.html
"""
from sandbox import charge_card, orders_in, send_confirmation_email


def handler(event, context):
    failures = []
    for record in event["Records"]:
        try:
            for order in orders_in({"Records": [record]}):
                if order.get("payment") == "card":
                    charge_card(order)
                send_confirmation_email(order)
        except Exception:
            failures.append({"itemIdentifier": record["messageId"]})
    return {"batchItemFailures": failures}
