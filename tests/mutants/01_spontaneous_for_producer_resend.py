"""Mutant of solutions/01_*.py. Names timeline C (a producer's re-send) as SQS's own spontaneous duplicate:
nothing failed in either; the producer's sends tell them apart."""


def answers():
    return {"A": "sqs-batch-failure", "B": "async-retry", "C": "sqs-spontaneous-duplicate",
            "D": "apigw-client-retry", "E": "sqs-visibility-timeout", "F": "stream-batch-retry"}
