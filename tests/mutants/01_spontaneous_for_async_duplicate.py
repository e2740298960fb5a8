"""Mutant of solutions/01_*.py (a blind wrong answer, written from the README and the lessons only). nothing failed in
E, so it must be SQS's at-least-once spontaneous copy. Wrong: the redelivery mark comes at 5 s while inv-1 is still
running: the visibility timeout ran out under it."""
# ruff: noqa: E501  (kept as the learner wrote it)
# Exercise 01 · Name the source
# The answer cell of exercises/01_name_the_source.ipynb, as a file: write your answer in that cell.
def answers():
    """Which scenario is behind each timeline? A dict: each letter to one name from candidates()."""
    named = {'A': 'sqs-batch-failure', 'B': 'async-retry', 'C': 'producer-resend', 'D': 'apigw-client-retry', 'E': 'sqs-spontaneous-duplicate', 'F': 'stream-batch-retry'}
    return named
