"""Keeps handled orders in a sibling module, imported lazily: each container has its own copy."""
from sandbox import orders_in, send_confirmation_email


def handler(event, context):
    import seen_store  # a module of the task root, imported on first use

    for order in orders_in(event):
        if order["orderId"] in seen_store.SEEN:
            continue
        seen_store.SEEN.add(order["orderId"])
        send_confirmation_email(order)
