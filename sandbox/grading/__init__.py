"""Graded exercises: instant feedback in the notebook, and a grader for a folder of submissions.

    from sandbox.grading import check
    check("02")        # in exercises/02_claim_the_key.ipynb: the public tests and a seeded campaign

The pieces: ``catalog`` (the exercises and their tests, read from the notebooks; the public ones
as ``public_tests.json``, which ``check`` runs), ``generate``
(the student versions, from the solutions: ``make exercises``), ``runner`` and ``drills`` (running
tests), ``recorder`` (the grader's own copy of every history), ``scoring`` (a test's runs to a result,
results to graded items) and ``diagnose`` (hints), ``exercise_check`` (the notebook's ``check()``),
``grader`` and ``batch`` (``python -m sandbox grade``),
``child`` and ``limits`` (the world a submission is graded in; its code runs only in contained execution
environments), ``autograder`` (Gradescope).
"""
from .exercise_check import CheckResult, check

__all__ = ["CheckResult", "check"]
