"""The naive handler: one confirmation email per order in the event, no idempotency."""
from sandbox import orders_in, send_confirmation_email


def handler(event, context):
    for order in orders_in(event):
        send_confirmation_email(order)
    return {"statusCode": 200}
