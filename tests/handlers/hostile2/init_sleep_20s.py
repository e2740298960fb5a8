"""time.sleep(20) at import: virtual time, but Lambda's 10 s init limit counts it."""
import time

time.sleep(20)


def handler(event, context):
    return "inited"
