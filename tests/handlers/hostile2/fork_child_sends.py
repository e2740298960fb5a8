"""The email is sent from a forked child (os.fork), which then returns from the handler instead of exiting.
On Lambda a child process has the network and sends it; the parent waits for the child."""
import os

from sandbox import orders_in, send_confirmation_email


def handler(event, context):
    pid = os.fork()
    if pid == 0:
        for order in orders_in(event):
            send_confirmation_email(order)
        return "child returned"
    _, status = os.waitpid(pid, 0)
    return {"child_status": os.waitstatus_to_exitcode(status)}
