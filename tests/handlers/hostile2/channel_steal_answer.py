"""A thread that reads the channel itself, so the world's answer to the main thread's AWS call goes to it."""
import os, threading

from sandbox import orders_in, send_confirmation_email


def handler(event, context):
    fd = next(int(f) for f in os.listdir("/proc/self/fd") if os.readlink(f"/proc/self/fd/{f}").startswith("socket:"))
    stolen = []
    t = threading.Thread(target=lambda: stolen.append(os.read(fd, 65536)), daemon=True)
    t.start()
    for order in orders_in(event):
        send_confirmation_email(order)
    return {"stolen": len(stolen)}
