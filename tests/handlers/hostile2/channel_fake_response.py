"""Write a forged 'response' frame straight onto the channel's socket (found in /proc/self/fd), then go on
to send the email: does the world end the invocation early, or keep serving this environment?"""
import json, os, socket, struct

from sandbox import orders_in, send_confirmation_email


def _channel():
    for fd in sorted(int(f) for f in os.listdir("/proc/self/fd")):
        try:
            if os.readlink(f"/proc/self/fd/{fd}").startswith("socket:"):
                return fd
        except OSError:
            pass


def _frame(message):
    data = json.dumps(message).encode()
    return struct.pack(">I", len(data)) + data


def handler(event, context):
    fd = _channel()
    os.write(fd, _frame({"t": "response", "body": json.dumps("forged"), "content_type": "application/json"}))
    for order in orders_in(event):
        send_confirmation_email(order)
    return "real"
