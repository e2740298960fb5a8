"""Mutant of solutions/01_*.py (a blind wrong answer, written from the README and the lessons only). stream lane and
repeated orders means the Kinesis producer re-sent (PutRecord twice). Wrong: inv-1 ended with an error and the same
batch was retried from its first record; no producer re-send."""
# ruff: noqa: E501  (kept as the learner wrote it)
# Exercise 01 · Name the source
# The answer cell of exercises/01_name_the_source.ipynb, as a file: write your answer in that cell.
def answers():
    """Which scenario is behind each timeline? A dict: each letter to one name from candidates()."""
    named = {'A': 'sqs-batch-failure', 'B': 'async-retry', 'C': 'producer-resend', 'D': 'apigw-client-retry', 'E': 'sqs-visibility-timeout', 'F': 'kinesis-producer-resend'}
    return named
