"""Forge the SnapStart kinds an environment may send ('snapshot', 'cloned', 'clone_status') in the middle of an
invocation, where the world expects a request: wire.FROM_ENVIRONMENT accepts them, and then?"""
import json, os, struct

from sandbox import orders_in, send_confirmation_email

KIND = os.environ.get("FORGE_KIND", "snapshot")


def _frame(message):
    data = json.dumps(message).encode()
    return struct.pack(">I", len(data)) + data


def handler(event, context):
    fd = next(int(f) for f in os.listdir("/proc/self/fd") if os.readlink(f"/proc/self/fd/{f}").startswith("socket:"))
    forged = {"snapshot": {"t": "snapshot"}, "cloned": {"t": "cloned", "pid": 1},
              "clone_status": {"t": "clone_status", "status": 0}, "ready": {"t": "ready"}}[KIND]
    os.write(fd, _frame(forged))
    for order in orders_in(event):
        send_confirmation_email(order)
    return "ok"
