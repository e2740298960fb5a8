"""The naive handler: do each order's work, with no idempotency at all.

An order that pays by card is charged first; every order gets its confirmation email.
"""
from sandbox import charge_card, orders_in, send_confirmation_email


def handler(event, context):
    for order in orders_in(event):
        if order.get("payment") == "card":
            charge_card(order)
        send_confirmation_email(order)
    return {"statusCode": 200}
