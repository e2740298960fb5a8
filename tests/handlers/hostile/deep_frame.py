"""Sends the world one frame of JSON nested a hundred thousand deep, well inside the 16 MB frame limit."""
from sandbox.runtime.environment import guest, wire


def handler(event, context):
    data = b"[" * 100_000 + b"]" * 100_000
    with guest.CHANNEL.lock:
        guest.CHANNEL.sock.sendall(wire._HEADER.pack(len(data)) + data)
        wire.receive(guest.CHANNEL.sock)
    return {"statusCode": 200}
