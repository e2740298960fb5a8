"""A broken handler that sends every confirmation twice, so the checker has something to catch."""
from sandbox import orders_in, send_confirmation_email


def handler(event, context):
    for order in orders_in(event):
        send_confirmation_email(order)
        send_confirmation_email(order)
    return {"statusCode": 200}
