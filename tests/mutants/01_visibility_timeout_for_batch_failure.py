"""Mutant of solutions/01_*.py (a blind wrong answer, written from the README and the lessons only). the batch came
back 30 s later when the visibility timeout ran out, so it is the visibility-timeout scenario. Wrong: inv-1 had
already ended with an error; the failed batch came back whole (sqs-batch-failure), not under a running receiver."""
# ruff: noqa: E501  (kept as the learner wrote it)
# Exercise 01 · Name the source
# The answer cell of exercises/01_name_the_source.ipynb, as a file: write your answer in that cell.
def answers():
    """Which scenario is behind each timeline? A dict: each letter to one name from candidates()."""
    named = {'A': 'sqs-visibility-timeout', 'B': 'async-retry', 'C': 'producer-resend', 'D': 'apigw-client-retry', 'E': 'sqs-visibility-timeout', 'F': 'stream-batch-retry'}
    return named
