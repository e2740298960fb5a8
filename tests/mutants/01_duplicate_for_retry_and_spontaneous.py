"""Mutant of solutions/01_*.py (a blind wrong answer, written from the README and the lessons only). Two mistakes
mixing up 'nothing failed' cases: B taken as an async duplicate and E as a spontaneous SQS copy. Wrong: B's inv-1
ended in error (retry keeps the request id); E's inv-1 was still running at the redelivery."""
# ruff: noqa: E501  (kept as the learner wrote it)
# Exercise 01 · Name the source
# The answer cell of exercises/01_name_the_source.ipynb, as a file: write your answer in that cell.
def answers():
    """Which scenario is behind each timeline? A dict: each letter to one name from candidates()."""
    named = {'A': 'sqs-batch-failure', 'B': 'async-duplicate', 'C': 'producer-resend', 'D': 'apigw-client-retry', 'E': 'sqs-spontaneous-duplicate', 'F': 'stream-batch-retry'}
    return named
