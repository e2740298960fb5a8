"""A 3 MB string of control characters: JSON escapes each as \\u00XX, six bytes on the channel (18 MB > 16 MB frame)."""


def handler(event, context):
    return "\x01" * (3 * 1024 * 1024)
