"""A learner-style claim with fcntl.lockf(LOCK_SH) plus a LOCK_EX probe on a read-only file (lockf needs write access for LOCK_EX: EBADF)."""
from sandbox import orders_in, send_confirmation_email


import fcntl, json, os, zlib

HELD = []


def claim(order_id):
    f = open(json.__file__, "rb")
    start = 5_000_000 + zlib.crc32(order_id.encode()) % 1_000_000
    try:
        fcntl.lockf(f, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, start)
    except OSError as exc:
        if exc.errno in (11, 13):
            return False
    fcntl.lockf(f, fcntl.LOCK_SH | fcntl.LOCK_NB, 1, start)
    HELD.append(f)
    return True

def handler(event, context):
    for order in orders_in(event):
        if claim(order["orderId"]):
            send_confirmation_email(order)
    return "ok"
