"""Claim with a SysV semaphore under a fixed key (semget(IPC_CREAT|IPC_EXCL)): IPC namespaces must keep it per
environment."""
import ctypes, zlib

from sandbox import orders_in, send_confirmation_email

_libc = ctypes.CDLL(None, use_errno=True)


def claim(order_id):
    key = 0x5257 << 16 | (zlib.crc32(order_id.encode()) & 0xFFFF)
    return _libc.semget(key, 1, 0o1000 | 0o2000 | 0o600) >= 0  # IPC_CREAT | IPC_EXCL


def handler(event, context):
    for order in orders_in(event):
        if claim(order["orderId"]):
            send_confirmation_email(order)
    return "ok"
