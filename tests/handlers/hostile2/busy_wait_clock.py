"""Busy-waits 5 s on time.time(), datetime.now() and perf_counter in turn (function timeout 3 s: a timeout)."""
import datetime, time

from sandbox import orders_in, send_confirmation_email


def handler(event, context):
    which = event.get("clock", "time") if isinstance(event, dict) else "time"
    start = time.time(); d0 = datetime.datetime.now(); p0 = time.perf_counter()
    if which == "time":
        while time.time() - start < 5:
            pass
    elif which == "datetime":
        while (datetime.datetime.now() - d0).total_seconds() < 5:
            pass
    else:
        while time.perf_counter() - p0 < 5:
            pass
    for order in orders_in(event):
        send_confirmation_email(order)
    return "waited"
