"""Sends the email from a thread it starts and joins."""
import threading

from sandbox import orders_in, send_confirmation_email


def handler(event, context):
    threads = [threading.Thread(target=send_confirmation_email, args=(order,)) for order in orders_in(event)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
