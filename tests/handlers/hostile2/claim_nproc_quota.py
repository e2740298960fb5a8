"""Claim through RLIMIT_NPROC: is the process count shared between environments whose users are the same user
outside? Each environment tries to hold 600 processes (sleep 30, via posix_spawn); only the first can if the
count is shared (1,024 per user)."""
import os

from sandbox import orders_in, send_confirmation_email

HELD = []


def claim(order_id):
    for _ in range(600):
        try:
            HELD.append(os.posix_spawn("/bin/sleep", ["sleep", "30"], {}))
        except OSError:
            return False
    return True


def handler(event, context):
    for order in orders_in(event):
        if claim(order["orderId"]):
            send_confirmation_email(order)
    return len(HELD)
