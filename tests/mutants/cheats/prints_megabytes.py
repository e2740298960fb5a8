"""Prints megabytes from the handler."""


def handler(event, context):
    for _ in range(1_000_000):
        print("x" * 1000)
    return {}
