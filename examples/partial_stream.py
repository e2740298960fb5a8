"""A naive stream handler with a partial batch response: it reports the records that failed.

For Kinesis and DynamoDB streams, with ReportBatchItemFailures turned on for the mapping.
Each record is handled on its own; a record whose processing raises is named in
``batchItemFailures`` by its sequence number, and the others are handled anyway. It is
still naive: Lambda retries from the lowest sequence number reported, *every* record after
it included, and a record that comes back is processed again with no idempotency check.
https://docs.aws.amazon.com/lambda/latest/dg/services-kinesis-batchfailurereporting.html
"""
from sandbox import charge_card, orders_in, send_confirmation_email


def sequence_number(record):
    """The record's sequence number: Kinesis's, or a DynamoDB stream record's."""
    if "kinesis" in record:
        return record["kinesis"]["sequenceNumber"]
    return record["dynamodb"]["SequenceNumber"]


def handler(event, context):
    failures = []
    for record in event["Records"]:
        try:
            for order in orders_in({"Records": [record]}):
                if order.get("payment") == "card":
                    charge_card(order)
                send_confirmation_email(order)
        except Exception:
            failures.append({"itemIdentifier": sequence_number(record)})
    return {"batchItemFailures": failures}
