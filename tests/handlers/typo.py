"""A handler with a typo: the error must point at this file's line."""
from sandbox import orders_in, send_confirmation_email


def handler(event, context):
    for order in orders_in(event):
        send_confirmation_email(order["ordr"])
