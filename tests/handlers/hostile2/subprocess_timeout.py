"""subprocess.run(["sleep", "5"], timeout=1): TimeoutExpired after one real second, then the email."""
import subprocess

from sandbox import orders_in, send_confirmation_email


def handler(event, context):
    try:
        subprocess.run(["sleep", "5"], timeout=1)
        said = "finished"
    except subprocess.TimeoutExpired:
        said = "timed out"
    for order in orders_in(event):
        send_confirmation_email(order)
    return said
