"""A DynamoDB stream handler that takes every REMOVE for the customer's cancellation (wrong).

INSERT: a new order, so it sends the confirmation. REMOVE: it sends a cancellation email.
But DynamoDB's TTL deletes expired items too, and each TTL deletion is a REMOVE record as
well; only its ``userIdentity`` (type "Service", principalId "dynamodb.amazonaws.com")
tells it apart. So every order that simply expires gets a cancellation nobody asked for.
https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_streams_Record.html
"""
from sandbox import orders_in, send_cancellation_email, send_confirmation_email


def handler(event, context):
    for record in event["Records"]:
        for order in orders_in({"Records": [record]}):
            if record["eventName"] == "INSERT":
                send_confirmation_email(order)
            elif record["eventName"] == "REMOVE":
                send_cancellation_email(order)
    return {"processed": len(event["Records"])}
