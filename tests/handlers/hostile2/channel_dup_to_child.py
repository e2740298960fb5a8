"""A forked child keeps a copy of the channel's fd (the runtime closes only its own socket object) and writes an
effect request on it after the parent has returned."""
import json, os, struct, time

from sandbox import orders_in, send_confirmation_email


def _frame(message):
    data = json.dumps(message).encode()
    return struct.pack(">I", len(data)) + data


def handler(event, context):
    fd = next(int(f) for f in os.listdir("/proc/self/fd") if os.readlink(f"/proc/self/fd/{f}").startswith("socket:"))
    keep = os.dup(fd)
    orders = list(orders_in(event))
    if os.fork() == 0:
        for f in os.listdir("/proc/self/fd"):
            pass
        alive = []
        for f in range(3, 64):
            try:
                if os.readlink(f"/proc/self/fd/{f}").startswith("socket:"):
                    alive.append(f)
            except OSError:
                pass
        os.write(2, repr(alive).encode())
        for order in orders:
            try:
                os.write(alive[0], _frame({"t": "effect", "kind": "send_confirmation_email", "args": {"order": order}}))
            except (OSError, IndexError):
                pass
        os._exit(0)
    return "parent sent nothing"
