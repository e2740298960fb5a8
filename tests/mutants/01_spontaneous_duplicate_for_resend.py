"""Mutant of solutions/01_*.py (a blind wrong answer, written from the README and the lessons only). C's o-2 came again
with no failure, so SQS delivered a stored copy (at least once). Wrong: the producer made 4 sends for 3 orders and
no message was received twice: a producer re-send, new MessageId."""
# ruff: noqa: E501  (kept as the learner wrote it)
# Exercise 01 · Name the source
# The answer cell of exercises/01_name_the_source.ipynb, as a file: write your answer in that cell.
def answers():
    """Which scenario is behind each timeline? A dict: each letter to one name from candidates()."""
    named = {'A': 'sqs-batch-failure', 'B': 'async-retry', 'C': 'sqs-spontaneous-duplicate', 'D': 'apigw-client-retry', 'E': 'sqs-visibility-timeout', 'F': 'stream-batch-retry'}
    return named
