"""A 7 MB synchronous response (Lambda: Function.ResponseSizeTooLarge past 6 MB)."""


def handler(event, context):
    return "x" * (7 * 1024 * 1024)
