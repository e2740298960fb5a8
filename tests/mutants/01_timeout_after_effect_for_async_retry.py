"""Mutant of solutions/01_*.py (a blind wrong answer, written from the README and the lessons only). same request id on
an async retry means the first one timed out after its effect. Wrong: inv-1 ended with an error at 0.4 s, well
inside its timeout: a plain async retry after a function error."""
# ruff: noqa: E501  (kept as the learner wrote it)
# Exercise 01 · Name the source
# The answer cell of exercises/01_name_the_source.ipynb, as a file: write your answer in that cell.
def answers():
    """Which scenario is behind each timeline? A dict: each letter to one name from candidates()."""
    named = {'A': 'sqs-batch-failure', 'B': 'timeout-after-effect', 'C': 'producer-resend', 'D': 'apigw-client-retry', 'E': 'sqs-visibility-timeout', 'F': 'stream-batch-retry'}
    return named
