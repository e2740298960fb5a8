"""The tests that depend most on the interpreter, on the other Pythons learners use: ``make test-pythons``.

``make test`` runs everything on the project's Python (3.11). Here the runtime (execution
environments, AWS's runtime client, threads and signals in a handler, the real waits that reach into
``subprocess`` and ``multiprocessing``, the environments' namespaces), fidelity, grading and
golden-snapshot tests run on 3.12 and 3.13, each in a venv of its own from the same pins. A
missing interpreter fails the run in CI (``CI=true``) rather than skipping it.
"""
from __future__ import annotations

import os

import nox

PYTHONS = ["3.12", "3.13"]
TESTS = ["tests/test_environment.py", "tests/test_runtime.py", "tests/test_fidelity.py", "tests/test_grade.py",
         "tests/test_golden.py", "tests/test_lambda_time.py", "tests/test_isolation_attacks.py"]

nox.options.sessions = ["interpreters"]
nox.options.error_on_missing_interpreters = os.environ.get("CI", "").lower() == "true"
nox.options.reuse_existing_virtualenvs = True


@nox.session(python=PYTHONS)
def interpreters(session: nox.Session) -> None:
    session.install("-r", "requirements-dev.txt", "-c", "constraints.txt")
    session.install("--no-deps", "-e", ".")
    session.run("python", "-m", "compileall", "-q", "sandbox", silent=True)
    session.run("python", "-m", "pytest", "-n", "auto", "-q", "-p", "no:cacheprovider", *TESTS, *session.posargs)
