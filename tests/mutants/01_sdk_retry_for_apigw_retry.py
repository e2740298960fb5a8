"""Mutant of solutions/01_*.py (a blind wrong answer, written from the README and the lessons only). D is a synchronous
caller timing out and retrying, so botocore's SDK retry. Wrong: the lane is API Gateway and the repeat comes at 30 s
(its 29 s integration timeout), not the SDK's 60 s read timeout."""
# ruff: noqa: E501  (kept as the learner wrote it)
# Exercise 01 · Name the source
# The answer cell of exercises/01_name_the_source.ipynb, as a file: write your answer in that cell.
def answers():
    """Which scenario is behind each timeline? A dict: each letter to one name from candidates()."""
    named = {'A': 'sqs-batch-failure', 'B': 'async-retry', 'C': 'producer-resend', 'D': 'sync-sdk-retry', 'E': 'sqs-visibility-timeout', 'F': 'stream-batch-retry'}
    return named
