"""A Gradescope autograder bundle, and what it runs on Gradescope for each submission.

``make autograder`` (``python -m sandbox.grading.autograder build``) writes
``out/autograder.zip`` and the same files unpacked in ``out/autograder/``:

- ``setup.sh``: Gradescope runs it once when it builds the image: a venv with the pinned
  requirements (``requirements.txt``, only what grading needs, and ``constraints.txt``, the lock);
- ``run_autograder``: Gradescope runs it for each submission; it grades ``/autograder/submission``
  with the same grader as ``python -m sandbox grade`` and writes ``/autograder/results/results.json``;
- ``sandbox/``: the package; ``run_once_kit.py``: the kit the exercises after 04 import;
- ``tests.json``: every exercise's tests, hidden ones included, as data (no solution in the bundle).

Gradescope's paths are under ``/autograder``; ``AUTOGRADER_ROOT`` (or ``--root``) moves them, which is
how the tests run a bundle locally. The layout follows Gradescope's specification:
https://gradescope-autograders.readthedocs.io/en/latest/specs/
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import stat
import sys
import zipfile
from collections.abc import Sequence
from pathlib import Path

from ..errors import BadInput
from .catalog import EXERCISES_DIR, KIT, ROOT, grading_catalogue

#: Requirements the lab needs and grading does not (kept out of the Gradescope image).
LAB_ONLY = ("jupyterlab", "ipykernel", "ipywidgets")

SETUP_SH = """#!/usr/bin/env bash
# Gradescope runs this once, when it builds the autograder image.
set -euo pipefail
ROOT="${AUTOGRADER_ROOT:-/autograder}"
export DEBIAN_FRONTEND=noninteractive
# The sandbox needs Python 3.11 or newer. Gradescope's Ubuntu images may have an older python3 (22.04's is
# 3.10): then the distribution's python3.11 is installed (Ubuntu 22.04 has it in universe) and used instead.
newest_python() {
  for candidate in python3.13 python3.12 python3.11 python3; do
    if command -v "$candidate" >/dev/null 2>&1 &&
       "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
      echo "$candidate"; return 0
    fi
  done
  return 1
}
if ! PYTHON="$(newest_python)"; then
  echo "setup.sh: python3 is $(python3 --version 2>&1 || echo missing), older than 3.11: installing python3.11"
  apt-get update && apt-get install -y python3.11 python3.11-venv
  PYTHON=python3.11
fi
echo "setup.sh: using $PYTHON ($("$PYTHON" --version 2>&1))"
if ! "$PYTHON" -m venv --help >/dev/null 2>&1 || ! "$PYTHON" -c 'import ensurepip' 2>/dev/null; then
  apt-get update && apt-get install -y "$(basename "$PYTHON")-venv"
fi
# bubblewrap contains every submission's code (no network, nothing of the machine in sight).
if ! command -v bwrap >/dev/null 2>&1; then
  apt-get update && apt-get install -y bubblewrap
fi
# Submissions' code runs as this unprivileged user, under bubblewrap, never as root.
if ! id -u rwh-grader >/dev/null 2>&1; then
  useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin rwh-grader
fi
"$PYTHON" -m venv "$ROOT/venv"
"$ROOT/venv/bin/python" -m pip install --disable-pip-version-check --progress-bar off \\
  -r "$ROOT/source/requirements.txt" -c "$ROOT/source/constraints.txt"
"""

RUN_AUTOGRADER = """#!/usr/bin/env bash
# Gradescope runs this for each submission: /autograder/submission in, /autograder/results/results.json out.
set -euo pipefail
ROOT="${AUTOGRADER_ROOT:-/autograder}"
PYTHON="${AUTOGRADER_PYTHON:-$ROOT/venv/bin/python}"
cd "$ROOT/source"
exec "$PYTHON" -m sandbox.grading.autograder run --root "$ROOT"
"""


def grading_requirements(text: str) -> str:
    """requirements.txt without the lab's packages; every kept line is an exact pin."""
    out = []
    for line in text.splitlines():
        name = re.split(r"[=<>\[ ;]", line.strip(), maxsplit=1)[0].lower()
        if not line.strip() or line.lstrip().startswith("#"):
            out.append(line)
        elif name not in LAB_ONLY:
            if "==" not in line:
                raise BadInput(f"requirements.txt: {line!r} is not pinned with ==")
            out.append(line)
    return "\n".join(out).rstrip("\n") + "\n"


def _executable(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def build(out: Path, exercises: Sequence[str] = ()) -> Path:
    """Write the bundle's files to ``out/`` and zip them as ``out.zip``; returns the zip."""
    catalogue = grading_catalogue()
    chosen = [str(e).split("_")[0].zfill(2) for e in exercises] or list(catalogue)
    unknown = [e for e in chosen if e not in catalogue]
    if unknown:
        raise BadInput(f"no exercise {', '.join(unknown)}; exercises: {', '.join(catalogue)}")
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    _executable(out / "setup.sh", SETUP_SH)
    _executable(out / "run_autograder", RUN_AUTOGRADER)
    (out / "requirements.txt").write_text(grading_requirements((ROOT / "requirements.txt").read_text()))
    shutil.copyfile(ROOT / "constraints.txt", out / "constraints.txt")
    shutil.copytree(ROOT / "sandbox", out / "sandbox", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    shutil.copyfile(EXERCISES_DIR / KIT, out / KIT)
    data = {"exercises": [catalogue[e].to_dict() for e in chosen]}
    (out / "tests.json").write_text(json.dumps(data, indent=1) + "\n")
    archive = out.with_suffix(".zip")
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as z:
        for path in sorted(out.rglob("*")):
            if path.is_file():
                info = zipfile.ZipInfo.from_file(path, path.relative_to(out).as_posix())
                z.writestr(info, path.read_bytes(), zipfile.ZIP_DEFLATED)
    return archive


def run(root: Path) -> int:
    """Grade ``root/submission`` as one student; write ``root/results/results.json``."""
    from ..runtime.environment.containment import containment_summary
    from . import batch
    from .grader import Limits

    print(containment_summary())

    source, submission, results = root / "source", root / "submission", root / "results"
    catalogue = grading_catalogue(source / "tests.json")
    only = list(catalogue) if len(catalogue) == 1 else []
    sub = batch.Submission("submission")
    if submission.is_dir():  # the same discovery as a class's: no link followed, every file named
        batch.read_student(sub, submission, catalogue, only)
    students = batch.grade_all([sub], list(catalogue.values()), jobs=1, limits=Limits(), kit=source / KIT,
                               progress=False)
    results.mkdir(parents=True, exist_ok=True)
    report = batch.gradescope_results(students[0])
    (results / "results.json").write_text(json.dumps(report, indent=1, default=str) + "\n")
    print(students[0].feedback(hidden=True))  # the log: Gradescope shows it to instructors only
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m sandbox autograder")
    sub = p.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="write the Gradescope bundle (a folder and its zip)")
    b.add_argument("--out", type=Path, default=ROOT / "out" / "autograder")
    b.add_argument("--exercise", action="append", default=[], metavar="NN", help="only these exercises")
    r = sub.add_parser("run", help="grade one submission, as Gradescope's run_autograder does")
    r.add_argument("--root", type=Path, default=Path(os.environ.get("AUTOGRADER_ROOT", "/autograder")))
    args = p.parse_args(argv)
    try:
        if args.command == "build":
            archive = build(args.out, args.exercise)
            print(f"wrote {archive} (upload it as the autograder) and {args.out}/")
            return 0
        return run(args.root)
    except BadInput as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
