"""A tempting shortcut: remember handled orders in a module-level set.

Module state lives as long as one Lambda container. A duplicate that lands in the same
warm container is caught; one that lands in a second container (concurrency) or after a
cold start is not.
"""
from sandbox import orders_in, send_confirmation_email

seen = set()


def handler(event, context):
    for order in orders_in(event):
        if order["orderId"] in seen:
            continue
        seen.add(order["orderId"])
        send_confirmation_email(order)
    return {"statusCode": 200}
