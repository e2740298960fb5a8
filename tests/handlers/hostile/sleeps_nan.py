"""Asks the world, on its environment's own channel, for a sleep of NaN seconds (time.sleep itself refuses one)."""
from sandbox import orders_in, send_confirmation_email
from sandbox.runtime.environment import guest


def handler(event, context):
    guest.CHANNEL.request({"t": "sleep", "seconds": float("nan")})
    for order in orders_in(event):
        send_confirmation_email(order)
    return {"statusCode": 200}
