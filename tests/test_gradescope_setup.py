"""The Gradescope bundle from scratch, as Gradescope builds and runs it: ``setup.sh`` on an image whose
``python3`` is too old (3.10), then ``run_autograder`` on one submission.

It makes a venv and installs the grading requirements, so it takes a minute or two and needs the package
registry: it runs in ``make test-grading`` (CI runs it after ``make test``), not in ``make test``. It
needs root, as Gradescope's image build has: ``setup.sh`` creates the unprivileged user that runs every
submission's code.
"""
from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import tempfile
import zipfile
from pathlib import Path

import pytest

from sandbox.grading import autograder

from conftest import ROOT

pytestmark = pytest.mark.grading
#: An interpreter older than the sandbox supports, as Ubuntu 22.04's python3 is.
OLD_PYTHON = Path("/root/.pyenv/versions/3.10.13/bin/python3.10")
SUBMISSION = ROOT / "solutions" / "02_claim_the_key.ipynb"


def _image_path(tmp_path: Path) -> str:
    """A PATH whose python3 is 3.10 and which holds the distribution's python3.11 (Debian's, in /usr/bin)."""
    shim = tmp_path / "old-python"
    shim.mkdir()
    (shim / "python3").symlink_to(OLD_PYTHON)
    return f"{shim}:/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin"


@pytest.fixture
def image_dir():
    """A folder others may enter, as Gradescope's /autograder is (pytest's own is private to root)."""
    folder = Path(tempfile.mkdtemp(prefix="rwh-gradescope-", dir="/var/tmp"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def test_setup_and_run_autograder_on_an_image_whose_python3_is_3_10(image_dir):
    tmp_path = image_dir
    assert os.geteuid() == 0, "setup.sh runs as root, as on Gradescope"
    assert OLD_PYTHON.exists(), f"{OLD_PYTHON} is the old python3 this test stands in for Gradescope's"
    root = tmp_path / "autograder"
    zipfile.ZipFile(autograder.build(tmp_path / "bundle", ["02"])).extractall(root / "source")
    for script in ("setup.sh", "run_autograder"):
        (root / "source" / script).chmod(0o755)
    root.chmod(0o755)  # the unprivileged user reads the venv and the sandbox, as under /autograder
    env = {"PATH": _image_path(tmp_path), "AUTOGRADER_ROOT": str(root), "HOME": str(tmp_path),
           "PIP_CACHE_DIR": os.environ.get("PIP_CACHE_DIR", str(Path.home() / ".cache" / "pip"))}
    setup = subprocess.run(["bash", str(root / "source" / "setup.sh")], env=env, capture_output=True, text=True,
                           timeout=900)
    assert setup.returncode == 0, setup.stdout[-3000:] + setup.stderr[-3000:]
    assert "older than 3.11" not in setup.stdout  # a supported python3.11 was found on the PATH
    assert "using python3.11" in setup.stdout, setup.stdout[-2000:]
    version = subprocess.run([str(root / "venv" / "bin" / "python"), "-c", "import sys; print(sys.version_info[:2])"],
                             capture_output=True, text=True)
    assert version.stdout.strip() == "(3, 11)"
    grader = pwd.getpwnam("rwh-grader")
    assert grader.pw_uid != 0 and grader.pw_shell.endswith("nologin")

    (root / "submission").mkdir()
    shutil.copyfile(SUBMISSION, root / "submission" / "my_answer.ipynb")
    run = subprocess.run([str(root / "source" / "run_autograder")], env=env, capture_output=True, text=True,
                         timeout=600)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-3000:]
    assert "runs as the unprivileged user rwh-grader" in run.stdout
    results = json.loads((root / "results" / "results.json").read_text())
    assert results["score"] == sum(t["max_score"] for t in results["tests"]) > 0
    assert all(t["status"] == "passed" for t in results["tests"])
    assert isinstance(results.get("execution_time"), (int, float)) and results["execution_time"] > 0
