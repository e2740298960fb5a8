"""Sleeps for real (select's timeout is not the sandbox's time.sleep)."""
import select


def handler(event, context):
    select.select([], [], [], 3600)
    return {}
