"""Exits its process on the first attempt of each order (a marker in /tmp survives resets, as on Lambda)."""
import os
import sys
import tempfile

from sandbox import orders_in, send_confirmation_email

MARKERS = os.environ.get("EXIT_MARKERS") or tempfile.gettempdir()
HOW = os.environ.get("EXIT_HOW", "sys.exit")


def handler(event, context):
    for order in orders_in(event):
        marker = os.path.join(MARKERS, f"exited-{order['orderId']}")
        if not os.path.exists(marker):
            open(marker, "w").close()
            if HOW == "os._exit":
                os._exit(0)
            sys.exit(0)
        send_confirmation_email(order)
