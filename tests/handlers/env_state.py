"""Keeps handled orders in os.environ: each container (process) has its own environment."""
import os

from sandbox import orders_in, send_confirmation_email


def handler(event, context):
    for order in orders_in(event):
        flag = f"SENT_{order['orderId'].replace('-', '_')}"
        if os.environ.get(flag):
            continue
        os.environ[flag] = "1"
        send_confirmation_email(order)
