"""200,000 log lines and one 50 MB print: log writes are asides (no answer), and the watchdog must still count."""
from sandbox import orders_in, send_confirmation_email


def handler(event, context):
    for i in range(200_000):
        print("line", i)
    print("y" * (50 * 1024 * 1024))
    for order in orders_in(event):
        send_confirmation_email(order)
    return "ok"
