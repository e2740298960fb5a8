"""The install layer stays consistent: pins, lock, conda env, CI, README, Makefile.

Each check is a small pure function over file *text*, so it is tested twice:
once on the real files (must be clean) and once on a drifted sample (must
name what drifted). A check that cannot fail would be worse than none.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
import yaml  # PyYAML is locked in constraints.txt (jupyterlab -> jupyter-events)

ROOT = Path(__file__).resolve().parents[1]

REQUIREMENT_FILES = ("requirements.txt", "requirements-dev.txt")
EXPECTED_DIRECT = {
    "requirements.txt": {
        "boto3", "botocore", "moto", "time-machine", "matplotlib", "numpy",
        "ipywidgets", "jupyterlab", "ipykernel", "aws-lambda-powertools", "tqdm", "tabulate", "flask",
        "flask-cors", "awslambdaric", "aws-durable-execution-sdk-python",
    },
    "requirements-dev.txt": {
        "pytest", "pytest-xdist", "pytest-timeout", "hypothesis", "nbclient", "nbformat", "playwright", "ruff", "nox",
        "syrupy", "mutmut", "aws-durable-execution-sdk-python-testing",
        "mypy", "types-psutil", "types-tabulate", "types-tqdm",
    },
}

_PIN = re.compile(
    r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)(?:\[(?P<extras>[^\]]*)\])?"
    r"\s*==\s*(?P<version>[^\s;#]+)\s*(?:;\s*(?P<marker>[^#]+?))?\s*$"
)


# --------------------------------------------------------------------------
# helpers (pure functions over text)
# --------------------------------------------------------------------------
def canon(name: str) -> str:
    """PEP 503 normalised project name: 'Jinja2' -> 'jinja2', 'a_b.c' -> 'a-b-c'."""
    return re.sub(r"[-_.]+", "-", name).lower()


def requirement_lines(text: str) -> list[str]:
    """Meaningful lines of a requirements-style text: comments and blanks dropped."""
    out = []
    for raw in text.splitlines():
        if raw.lstrip().startswith("#"):
            continue
        line = re.split(r"\s#", raw, maxsplit=1)[0].strip()  # pip: ' #' starts a comment
        if line:
            out.append(line)
    return out


def parse_pins(lines: list[str]) -> tuple[dict[str, str], list[str]]:
    """Map canonical name -> pin line. Returns (pins, problems).

    Option lines (``-r``, ``-c``, ``-e`` ...) are skipped; any other line that
    is not an exact ``name==version`` pin, or a name pinned twice, is a problem.
    """
    pins: dict[str, str] = {}
    problems: list[str] = []
    for line in lines:
        if line.startswith("-"):
            continue
        m = _PIN.match(line)
        if not m:
            problems.append(f"not an exact '==' pin: {line!r}")
            continue
        key = canon(m["name"])
        if key in pins:
            problems.append(f"{key}: pinned twice ({pins[key]!r} and {line!r})")
        pins[key] = line
    return pins, problems


def pin_version(line: str) -> str:
    m = _PIN.match(line)
    assert m, line
    return m["version"]


def env_pip_lines(env_yml_text: str) -> list[str]:
    """The lines of the ``pip:`` section of a conda environment.yml."""
    env = yaml.safe_load(env_yml_text) or {}
    for dep in env.get("dependencies") or []:
        if isinstance(dep, dict) and "pip" in dep:
            return [str(x).strip() for x in dep["pip"] or []]
    return []


def pin_drift(env_yml_text: str, req_text: str) -> list[str]:
    """Differences between environment.yml's pip pins and requirements.txt's.

    Each message names the package that drifted. Empty list = in sync.
    """
    env_pins, env_problems = parse_pins(env_pip_lines(env_yml_text))
    req_pins, req_problems = parse_pins(requirement_lines(req_text))
    msgs = [f"environment.yml: {p}" for p in env_problems]
    msgs += [f"requirements.txt: {p}" for p in req_problems]
    for key in sorted(req_pins.keys() | env_pins.keys()):
        req, env = req_pins.get(key), env_pins.get(key)
        if env is None:
            msgs.append(f"{key}: in requirements.txt ({req}) but not in environment.yml")
        elif req is None:
            msgs.append(f"{key}: in environment.yml ({env}) but not in requirements.txt")
        elif req != env:
            msgs.append(f"{key}: requirements.txt has {req!r}, environment.yml has {env!r}")
    return msgs


def lock_drift(req_texts: dict[str, str], constraints_text: str) -> list[str]:
    """Pins in requirement files that disagree with (or are missing from) the lock."""
    lock, problems = parse_pins(requirement_lines(constraints_text))
    msgs = [f"constraints.txt: {p}" for p in problems]
    for line in requirement_lines(constraints_text):
        if line.startswith("-"):
            msgs.append(f"constraints.txt: option line not allowed in a lock: {line!r}")
        elif "[" in line:
            msgs.append(f"constraints.txt: extras not allowed in a lock: {line!r}")
    for fname, text in req_texts.items():
        pins, problems = parse_pins(requirement_lines(text))
        msgs += [f"{fname}: {p}" for p in problems]
        for key, line in sorted(pins.items()):
            if key not in lock:
                msgs.append(f"{key}: pinned in {fname} ({line}) but missing from constraints.txt")
            elif pin_version(line) != pin_version(lock[key]):
                msgs.append(
                    f"{key}: {fname} pins {pin_version(line)}, "
                    f"constraints.txt locks {pin_version(lock[key])}"
                )
    return msgs


def shell_commands(script_text: str) -> list[str]:
    """Non-comment, non-blank lines of a shell script, stripped."""
    return [
        ln.strip() for ln in script_text.splitlines()
        if ln.strip() and not ln.strip().startswith("#")
    ]


def ci_runs_make_test(script_text: str) -> bool:
    return "make test" in shell_commands(script_text)


def quick_start_commands(readme_text: str) -> list[str]:
    """Commands in the first fenced code block under the 'Quick start' heading."""
    m = re.search(r"^#+\s*Quick start\s*$", readme_text, re.M | re.I)
    if not m:
        return []
    block = re.search(r"^```[^\n]*\n(.*?)^```", readme_text[m.end():], re.M | re.S)
    if not block:
        return []
    return [ln.split("#", 1)[0].strip() for ln in block[1].splitlines() if ln.split("#", 1)[0].strip()]


def makefile_rule(makefile_text: str, target: str) -> tuple[list[str], list[str]]:
    """(prerequisites, recipe lines) of ``target`` in a simple Makefile."""
    lines = makefile_text.splitlines()
    for i, line in enumerate(lines):
        m = re.match(rf"^{re.escape(target)}\s*:(?!=)(.*)$", line)
        if not m:
            continue
        prereqs = m[1].split("#", 1)[0].replace("|", " ").split()
        recipe = []
        for nxt in lines[i + 1:]:
            if nxt.startswith("\t"):
                recipe.append(nxt.strip())
            elif not nxt.lstrip().startswith("#") or not nxt.strip():
                break  # a blank line or the next rule ends the recipe
        return prereqs, recipe
    return [], []


def makefile_test_problems(makefile_text: str) -> list[str]:
    """The `test` target must set up the venv and run pytest -n auto from it."""
    prereqs, recipe = makefile_rule(makefile_text, "test")
    msgs = []
    if not recipe:
        return ["Makefile has no 'test' target with a recipe"]
    if "setup" not in prereqs:
        msgs.append(f"'test' does not depend on 'setup' (prerequisites: {prereqs})")
    runner = [r for r in recipe if re.search(r"\$\(BIN\)/python -m pytest -n auto(\s|$)", r)]
    if not runner:
        msgs.append(f"'test' does not run '$(BIN)/python -m pytest -n auto': {recipe}")
    swallowed = [r for r in recipe if re.search(r"\|\|\s*(true|:)|^-", r)]
    if swallowed:
        msgs.append(f"'test' ignores the runner's exit code: {swallowed}")
    return msgs


def _read(name: str) -> str:
    return (ROOT / name).read_text(encoding="utf-8")


# --------------------------------------------------------------------------
# (1) environment.yml pip section == requirements.txt
# --------------------------------------------------------------------------
def test_environment_yml_pins_match_requirements():
    drift = pin_drift(_read("environment.yml"), _read("requirements.txt"))
    assert drift == [], "environment.yml drifted from requirements.txt:\n" + "\n".join(drift)


def test_environment_yml_shape():
    env = yaml.safe_load(_read("environment.yml"))
    assert env["name"] == "retries-will-happen"
    assert env["channels"] == ["conda-forge"]
    deps = env["dependencies"]
    assert "python=3.11" in deps and "pip" in deps
    pip_lines = env_pip_lines(_read("environment.yml"))
    assert pip_lines[-1] == "-e .", "the package itself should install last"
    options = [ln for ln in pip_lines if ln.startswith("-")]
    assert set(options) <= {"-c constraints.txt", "-e ."}, options


def test_pin_drift_names_the_package_that_drifted():
    req = "boto3==1.0.0\nmoto[dynamodb]==5.0.0\nnumpy==2.0.0\n"
    good_env = (
        "name: x\ndependencies:\n  - python=3.11\n  - pip\n  - pip:\n"
        "    - -c constraints.txt\n    - boto3==1.0.0\n    - moto[dynamodb]==5.0.0\n"
        "    - numpy==2.0.0\n    - -e .\n"
    )
    assert pin_drift(good_env, req) == []

    bumped = good_env.replace("numpy==2.0.0", "numpy==2.0.1")
    drift = pin_drift(bumped, req)
    assert len(drift) == 1 and drift[0].startswith("numpy:"), drift

    lost_extra = good_env.replace("moto[dynamodb]", "moto")
    drift = pin_drift(lost_extra, req)
    assert len(drift) == 1 and drift[0].startswith("moto:"), drift

    missing = good_env.replace("    - boto3==1.0.0\n", "")
    drift = pin_drift(missing, req)
    assert drift == ["boto3: in requirements.txt (boto3==1.0.0) but not in environment.yml"]

    extra = good_env.replace("    - -e .\n", "    - requests==2.0\n    - -e .\n")
    drift = pin_drift(extra, req)
    assert drift == ["requests: in environment.yml (requests==2.0) but not in requirements.txt"]

    loose = good_env.replace("numpy==2.0.0", "numpy>=2")
    assert any("numpy>=2" in d for d in pin_drift(loose, req))


# --------------------------------------------------------------------------
# (2) requirement pins agree with the constraints lock
# --------------------------------------------------------------------------
def test_requirement_pins_agree_with_constraints():
    texts = {f: _read(f) for f in REQUIREMENT_FILES}
    drift = lock_drift(texts, _read("constraints.txt"))
    assert drift == [], "requirements vs constraints.txt:\n" + "\n".join(drift)


def test_requirement_files_pin_exactly_the_direct_dependencies():
    for fname, expected in EXPECTED_DIRECT.items():
        pins, problems = parse_pins(requirement_lines(_read(fname)))
        assert problems == [], (fname, problems)
        assert set(pins) == expected, (fname, sorted(set(pins) ^ expected))
    assert "moto[dynamodb]==" in _read("requirements.txt")
    assert "-r requirements.txt" in requirement_lines(_read("requirements-dev.txt"))


def test_constraints_is_a_full_lock():
    lock, problems = parse_pins(requirement_lines(_read("constraints.txt")))
    assert problems == []
    # The transitive closure, not only the direct pins; the project itself excluded.
    for transitive in ("jmespath", "s3transfer", "docker", "py-partiql-parser", "pyyaml",
                       "pyzmq", "jupyter-server", "execnet", "werkzeug", "responses"):
        assert transitive in lock, f"{transitive} missing from constraints.txt"
    assert "retries-will-happen" not in lock


def test_lock_drift_catches_disagreement():
    lock = "boto3==1.0.0\nmoto==5.0.0\nJinja2==3.1.0\n"
    ok = {"requirements.txt": "boto3==1.0.0\nmoto[dynamodb]==5.0.0\njinja2==3.1.0\n"}
    assert lock_drift(ok, lock) == []

    bumped = {"requirements.txt": "boto3==1.0.1\nmoto[dynamodb]==5.0.0\n"}
    assert lock_drift(bumped, lock) == [
        "boto3: requirements.txt pins 1.0.1, constraints.txt locks 1.0.0"
    ]
    missing = {"requirements-dev.txt": "-r requirements.txt\npytest==9.0.0\n"}
    assert lock_drift(missing, lock) == [
        "pytest: pinned in requirements-dev.txt (pytest==9.0.0) but missing from constraints.txt"
    ]
    assert lock_drift(ok, lock + "-e .\n")  # an editable line is not a lock entry


# --------------------------------------------------------------------------
# (3) CI runs exactly the README's command
# --------------------------------------------------------------------------
def test_ci_run_invokes_make_test():
    path = ROOT / ".ci" / "run"
    text = path.read_text(encoding="utf-8")
    assert ci_runs_make_test(text), ".ci/run does not run `make test`"
    assert "set -euo pipefail" in text
    assert os.access(path, os.X_OK), ".ci/run is not executable"


def test_ci_check_fails_without_make_test():
    assert ci_runs_make_test("#!/bin/bash\nset -e\nmake test\n")
    assert not ci_runs_make_test("#!/bin/bash\nset -e\n# make test\npytest\n")
    assert not ci_runs_make_test("#!/bin/bash\nmake test || true\n")


# --------------------------------------------------------------------------
# (4) README quick start
# --------------------------------------------------------------------------
def test_readme_quick_start_has_make_lab_and_make_test():
    cmds = quick_start_commands(_read("README.md"))
    assert cmds == ["make lab", "make test"], cmds


def test_readme_quick_start_commands_exist_in_makefile():
    makefile = _read("Makefile")
    for cmd in quick_start_commands(_read("README.md")):
        target = cmd.split()[1]
        assert makefile_rule(makefile, target)[1], f"README says `{cmd}`; Makefile has no such target"


def test_quick_start_parser_fails_on_drift():
    good = "# X\n\n## Quick start\n\n```\nmake lab   # open it\nmake test  # test it\n```\n"
    assert quick_start_commands(good) == ["make lab", "make test"]
    assert quick_start_commands(good.replace("make lab", "jupyter lab")) == ["jupyter lab", "make test"]
    assert quick_start_commands(good.replace("Quick start", "Getting going")) == []


# --------------------------------------------------------------------------
# (5) Makefile `test` uses the runner CI relies on
# --------------------------------------------------------------------------
def test_makefile_test_target_runs_pytest_xdist_from_venv():
    makefile = _read("Makefile")
    assert makefile_test_problems(makefile) == []
    # -n auto needs pytest-xdist, which must be a pinned dev dependency
    assert "pytest-xdist" in parse_pins(requirement_lines(_read("requirements-dev.txt")))[0]
    setup_prereqs, _ = makefile_rule(makefile, "setup")
    assert setup_prereqs, "'setup' should depend on the install stamp"


def test_makefile_check_fails_on_drift():
    good = "test: setup\n\t$(BIN)/python -m pytest -n auto $(PYTEST_ARGS)\n"
    assert makefile_test_problems(good) == []
    assert makefile_test_problems("test: setup\n\tpytest\n")
    assert makefile_test_problems("test:\n\t$(BIN)/python -m pytest -n auto\n")
    assert makefile_test_problems("test: setup\n\t-$(BIN)/python -m pytest -n auto\n")
    assert makefile_test_problems("test: setup\n\t$(BIN)/python -m pytest -n auto || true\n")
    assert makefile_test_problems("lab: setup\n\tjupyter lab\n") == [
        "Makefile has no 'test' target with a recipe"
    ]


def test_pyproject_pytest_config():
    import tomllib

    cfg = tomllib.loads(_read("pyproject.toml"))
    assert cfg["project"]["name"] == "retries-will-happen"
    opts = cfg["tool"]["pytest"]["ini_options"]
    assert opts["testpaths"] == ["tests"]
    assert {m.split(":", 1)[0] for m in opts["markers"]} >= {"slow", "notebook"}


@pytest.mark.parametrize("name", ["Jinja2", "jinja2", "JINJA2"])
def test_canon(name):
    assert canon(name) == "jinja2"
    assert canon("ipython_pygments_lexers") == canon("ipython-pygments-lexers")


# --------------------------------------------------------------------------
# `make setup` byte-compiles the package
# --------------------------------------------------------------------------
def _pyc_is_current(source: Path) -> bool:
    """A timestamp .pyc for ``source`` whose header names the source's mtime and size (PEP 552)."""
    import importlib.util

    pyc = Path(importlib.util.cache_from_source(str(source)))
    if not pyc.exists():
        return False
    header = pyc.read_bytes()[:16]
    stat = source.stat()
    return (int.from_bytes(header[4:8], "little") == 0
            and int.from_bytes(header[8:12], "little") == int(stat.st_mtime) & 0xFFFFFFFF
            and int.from_bytes(header[12:16], "little") == stat.st_size & 0xFFFFFFFF)


def test_make_setup_byte_compiles_the_package():
    """With PYTHONDONTWRITEBYTECODE set, nothing else writes them: every CLI run, grader child and
    kernel would compile the sandbox from source again."""
    import subprocess

    subprocess.run(["make", "-s", "setup"], cwd=ROOT, check=True, capture_output=True,
                   env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    modules = sorted((ROOT / "sandbox").rglob("*.py"))
    assert len(modules) > 40
    assert [str(p.relative_to(ROOT)) for p in modules if not _pyc_is_current(p)] == []
