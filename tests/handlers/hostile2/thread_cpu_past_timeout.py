"""A thread computes forever while the handler returns at once; the next invocations come to a thawed environment."""
import threading

from sandbox import orders_in, send_confirmation_email

STARTED = []


def _burn():
    while True:
        pass


def handler(event, context):
    if not STARTED:
        t = threading.Thread(target=_burn, daemon=True)
        t.start()
        STARTED.append(t)
    for order in orders_in(event):
        send_confirmation_email(order)
    return "ok"
