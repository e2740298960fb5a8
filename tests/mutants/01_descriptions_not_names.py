"""Mutant of solutions/01_*.py (a blind wrong answer, written from the README and the lessons only). answering in words
as on the timeline (the candidate's description) instead of the scenario name. Wrong: the checker wants the exact
names from candidates(); prose does not identify a scenario."""
# ruff: noqa: E501  (kept as the learner wrote it)
# Exercise 01 · Name the source
# The answer cell of exercises/01_name_the_source.ipynb, as a file: write your answer in that cell.
def answers():
    """Which scenario is behind each timeline? A dict: each letter to one name from candidates()."""
    named = {'A': 'sqs batch failure', 'B': 'async retry', 'C': 'producer resend', 'D': 'apigw client retry', 'E': 'sqs visibility timeout', 'F': 'stream batch retry'}
    return named
