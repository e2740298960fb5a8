"""The naive handler, with a print and a log line per order (CloudWatch Logs, not the terminal)."""
import logging

from sandbox import orders_in, send_confirmation_email

log = logging.getLogger("orders")


def handler(event, context):
    for order in orders_in(event):
        print(f"sending the confirmation for {order['orderId']}")
        log.warning("order %s: email on its way", order["orderId"])
        send_confirmation_email(order)
