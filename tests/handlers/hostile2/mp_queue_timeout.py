"""multiprocessing.Queue.get(timeout=1) with nobody putting: queue.Empty after one real second, then the email."""
import multiprocessing, queue

from sandbox import orders_in, send_confirmation_email


def handler(event, context):
    q = multiprocessing.Queue()
    try:
        q.get(timeout=1)
        said = "got"
    except queue.Empty:
        said = "empty"
    for order in orders_in(event):
        send_confirmation_email(order)
    return said
