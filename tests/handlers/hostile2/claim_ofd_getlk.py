"""Claim with open-file-description locks (F_OFD_GETLK / F_OFD_SETLK, Linux 3.15) on a read-only shared file."""
from sandbox import orders_in, send_confirmation_email


import fcntl, json, os, struct, zlib

HELD = []
F_OFD_GETLK, F_OFD_SETLK = 36, 37


def claim(order_id):
    fd = os.open(json.__file__, os.O_RDONLY)
    start = 3_000_000 + zlib.crc32(order_id.encode()) % 1_000_000
    got = fcntl.fcntl(fd, F_OFD_GETLK, struct.pack("hhqqi", fcntl.F_WRLCK, 0, start, 1, 0))
    if struct.unpack("hhqqi", got)[0] != fcntl.F_UNLCK:
        os.close(fd)
        return False
    fcntl.fcntl(fd, F_OFD_SETLK, struct.pack("hhqqi", fcntl.F_RDLCK, 0, start, 1, 0))
    HELD.append(fd)
    return True

def handler(event, context):
    for order in orders_in(event):
        if claim(order["orderId"]):
            send_confirmation_email(order)
    return "ok"
