"""A busy loop that never makes a request (on Lambda: Task timed out after the function's timeout)."""


def handler(event, context):
    while True:
        pass
