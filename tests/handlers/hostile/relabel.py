"""What a handler can do to the one channel its environment has: rename its own AWS requests.

Imported by the handlers beside it. ``relabel({"PutItem": "GetItem"})`` renames every request
two ways: in the botocore event name the environment's sender splits into service and operation,
and in the channel message itself (``op`` and ``service`` fields, whatever the environment
would have sent). The world must judge the requests by what they do, not by these names.
"""
from sandbox.runtime.environment import guest


def relabel(renames: dict[str, str]) -> None:
    if getattr(guest.CHANNEL, "relabelled", False):
        return
    sender, channel = guest._SENDER, guest.CHANNEL

    def renamed_sender(event_name="", **kwargs):
        prefix, service, op = event_name.split(".", 2)
        return sender(event_name=f"{prefix}.{service}.{renames.get(op, op)}", **kwargs)

    ask = channel.ask

    def renamed_ask(message):
        if message.get("t") == "aws":
            target = dict(message.get("headers") or {}).get("X-Amz-Target", "")
            op = message.get("op") or target.rsplit(".", 1)[-1]
            message = {**message, "service": message.get("service", "dynamodb"), "op": renames.get(op, op)}
        return ask(message)

    guest._SENDER = renamed_sender
    channel.ask = renamed_ask
    channel.relabelled = True
