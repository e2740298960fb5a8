"""threading.Event.wait(timeout=2) racing a real child (sleep 0.5) whose waiter thread sets the event:
on Lambda the child wins after 0.5 s and the email is sent."""
import subprocess, threading

from sandbox import orders_in, send_confirmation_email


def handler(event, context):
    done = threading.Event()
    child = subprocess.Popen(["sleep", "0.5"])
    threading.Thread(target=lambda: (child.wait(), done.set())).start()
    won = done.wait(timeout=2)
    if won:
        for order in orders_in(event):
            send_confirmation_email(order)
    return {"child_won": won}
