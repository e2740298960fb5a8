"""A handler file whose module code ends the process: every invocation fails to initialise."""
import sys

from sandbox import orders_in, send_confirmation_email

sys.exit(0)


def handler(event, context):
    for order in orders_in(event):
        send_confirmation_email(order)
