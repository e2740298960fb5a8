"""Mutant of solutions/01_*.py. Names timeline B (an async retry after an error) as a timeout after the effect:
both are Lambda's async retries of the same event; how the first invocation ended tells them apart."""


def answers():
    return {"A": "sqs-batch-failure", "B": "timeout-after-effect", "C": "producer-resend",
            "D": "apigw-client-retry", "E": "sqs-visibility-timeout", "F": "stream-batch-retry"}
