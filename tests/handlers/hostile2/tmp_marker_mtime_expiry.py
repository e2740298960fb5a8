"""A confused learner's dedupe: a marker file per order in /tmp, trusted for 1 second by its mtime
(time.time() - os.path.getmtime(marker) < 1). A duplicate 2 s later in the same environment finds the marker stale
on Lambda and sends again (invalid). File times are the kernel's real clock, time.time() is the world's: here
the age is negative, so the marker never goes stale."""
import os, time

from sandbox import orders_in, send_confirmation_email


def handler(event, context):
    for order in orders_in(event):
        marker = f"/tmp/sent-{order['orderId']}"
        if os.path.exists(marker) and time.time() - os.path.getmtime(marker) < 1.0:
            continue
        send_confirmation_email(order)
        with open(marker, "w") as f:
            f.write("sent")
    return "ok"
