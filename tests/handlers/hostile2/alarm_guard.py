"""A timeout guard learners copy from blog posts: signal.alarm(1) around slow work (here a 2 s time.sleep, as a
stand-in for a slow call). On Lambda the alarm interrupts the sleep after 1 s and the handler takes its fallback."""
import signal, time

from sandbox import orders_in, send_confirmation_email


class Slow(Exception):
    pass


def _ring(signum, frame):
    raise Slow()


def handler(event, context):
    signal.signal(signal.SIGALRM, _ring)
    signal.alarm(1)
    try:
        time.sleep(2)
        path = "slept"
    except Slow:
        path = "alarm"
    finally:
        signal.alarm(0)
    if path == "alarm":
        for order in orders_in(event):
            send_confirmation_email(order)
    return path
