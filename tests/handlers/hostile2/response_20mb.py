"""A 20 MB response: past the channel's 16 MB frame too."""


def handler(event, context):
    return "x" * (20 * 1024 * 1024)
