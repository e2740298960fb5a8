# A "claim" with no DynamoDB: a POSIX read lock on a shared read-only file, probed with F_GETLK.
import fcntl, json, os, struct, zlib

from sandbox import orders_in, send_confirmation_email

HELD = []
SEEN = set()  # the same environment's own locks never conflict with themselves


def claim(key):
    if key in SEEN:
        return False
    SEEN.add(key)
    fd = os.open(json.__file__, os.O_RDONLY)
    start = 1_000_000 + zlib.crc32(key.encode()) % 1_000_000_000
    got = fcntl.fcntl(fd, fcntl.F_GETLK, struct.pack("hhqqi", fcntl.F_WRLCK, 0, start, 1, 0))
    if struct.unpack("hhqqi", got)[0] != fcntl.F_UNLCK:
        os.close(fd)
        return False
    fcntl.fcntl(fd, fcntl.F_SETLK, struct.pack("hhqqi", fcntl.F_RDLCK, 0, start, 1, 0))
    HELD.append(fd)
    return True


def handler(event, context):
    for order in orders_in(event):
        key = f"order-confirmation#{order['orderId']}"
        if claim(key):
            send_confirmation_email(order)
    return {"statusCode": 200}
