"""Loops forever inside the handler, never reaching the sandbox."""


def handler(event, context):
    n = 0
    while True:
        n += 1
