"""Workshop and hub readiness: repo2docker would build this repository as it is, and learners share nothing.

No Docker here, so the repo2docker rules that decide how Binder and a JupyterHub build the image
are written down as small checks over the repository's files, each citing the repo2docker
documentation (https://repo2docker.readthedocs.io) or its source (jupyterhub/repo2docker) it
comes from, and each tried on a drifted sample so it can fail:

- where it looks: ``binder/`` or ``.binder/`` if one exists (then the root is ignored), both is an
  error ("Where to put configuration files in a repository", use/repository.md);
- which build it picks: a Dockerfile, Julia, Nix or R configuration wins over ``environment.yml``
  (the buildpack order in repo2docker/app.py), and with ``environment.yml`` the conda buildpack
  installs neither ``requirements.txt`` nor the package: the environment file must carry both
  (configuration/research.md, configuration/development.md);
- ``environment.yml`` must be a mapping, pin ``python=x.y`` to a version repo2docker ships a base
  environment for (buildpacks/conda/environment.py-X.Y-linux-64.lock), and a ``runtime.txt`` beside it
  would be ignored (research.md's warning);
- a local pip requirement (``-e .``, ``-c constraints.txt``) makes repo2docker copy the whole
  repository in before installing (``is_local_pip_requirement`` and ``_should_preassemble_env``), so
  those paths resolve from the root, where they must exist;
- ``postBuild`` and ``start`` only if needed; if present: executable, a shebang, ``set -e`` in
  postBuild, ``exec "$@"`` as start's last line (configuration/actions.md).

Then the isolation a hub relies on: three real kernels at once (nbclient), two with one seed and
one with another, each runs a scenario in its own in-process world: the same seed gives the same
history in both kernels and in this process, the other seed a different one, and no kernel opened
a listening port. ``make bench`` runs the same with 8 kernels and reports the memory per kernel.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
import yaml

from conftest import ROOT

#: Python versions repo2docker ships a linux-64 base environment for (buildpacks/conda/*.lock).
REPO2DOCKER_PYTHONS = {"3.10", "3.11", "3.12", "3.13", "3.14"}
#: repo2docker's own pattern for the python pin in environment.yml (buildpacks/conda/__init__.py).
PYTHON_PIN = re.compile(r"python\s*=+\s*([\d\.]*)")
#: Files that make repo2docker pick another buildpack before the conda one (app.py's order).
OTHER_BUILDPACKS = {
    "Dockerfile": "DockerBuildPack", "Project.toml": "JuliaProjectTomlBuildPack",
    "JuliaProject.toml": "JuliaProjectTomlBuildPack", "REQUIRE": "JuliaRequireBuildPack",
    "default.nix": "NixBuildPack", "DESCRIPTION": "RBuildPack", "install.R": "RBuildPack",
}


# -- the rules, as pure functions over a repository folder ------------------------------------------
def config_dir(repo: Path) -> tuple[Path | None, list[str]]:
    """Where repo2docker reads configuration from, and the problems with that choice."""
    binder, dot = (repo / "binder").is_dir(), (repo / ".binder").is_dir()
    if binder and dot:
        return None, ["both binder/ and .binder/ exist: repo2docker refuses to build"]
    where = repo / "binder" if binder else repo / ".binder" if dot else repo
    problems = []
    if where != repo and (repo / "environment.yml").exists() and not (where / "environment.yml").exists():
        problems.append(f"{where.name}/ exists, so the root environment.yml is ignored")
    return where, problems


def pip_lines(env: dict) -> list[str]:
    for dep in env.get("dependencies") or []:
        if isinstance(dep, dict) and "pip" in dep:
            return [str(x).strip() for x in dep["pip"] or []]
    return []


def is_local(line: str) -> bool:
    """repo2docker's is_local_pip_requirement, for the forms this repository uses."""
    line = line.split("#", 1)[0].strip()
    if line.startswith(("-r", "-c", "--requirement", "--constraint")):
        return True
    if line.startswith("-"):
        rest = line.split(None, 1)[1:] or [""]
        line = rest[0]
    return line.startswith((".", "/", "file:"))


def environment_problems(repo: Path) -> list[str]:
    """Everything repo2docker's conda buildpack would trip on, or silently do otherwise, in ``repo``."""
    where, problems = config_dir(repo)
    if where is None:
        return problems
    env_path = where / "environment.yml"
    if not env_path.exists():
        return problems + [f"no environment.yml in {where.name or 'the root'}: repo2docker would not use conda"]
    problems += [f"{name} present: repo2docker builds with {pack} and ignores environment.yml"
                 for name, pack in OTHER_BUILDPACKS.items() if (where / name).exists()]
    runtime = where / "runtime.txt"
    if runtime.exists() and runtime.read_text().strip().startswith("r-"):
        problems.append("runtime.txt asks for R: repo2docker builds with RBuildPack")
    elif runtime.exists():
        problems.append("runtime.txt is ignored when environment.yml pins python: remove it")
    env = yaml.safe_load(env_path.read_text()) or {}
    if not isinstance(env, dict):
        return problems + ["environment.yml must be a mapping (repo2docker raises TypeError otherwise)"]
    pins = [PYTHON_PIN.match(d) for d in env.get("dependencies") or [] if isinstance(d, str)]
    version = next((m.group(1) for m in pins if m), None)
    if not version:
        problems.append("environment.yml pins no python=x.y: repo2docker falls back to its default Python")
    elif ".".join(version.split(".")[:2]) not in REPO2DOCKER_PYTHONS:
        problems.append(f"python={version}: repo2docker has no base environment for it")
    lines = pip_lines(env)
    if lines and "pip" not in (env.get("dependencies") or []):
        problems.append("a pip: section without pip in the conda dependencies")
    if not any(re.fullmatch(r"-e\s+\.", ln) for ln in lines) and (repo / "pyproject.toml").exists():
        problems.append("the package is not installed: with environment.yml repo2docker does not run pip install -e .")
    for ln in lines:
        m = re.match(r"(?:-c|-r|--constraint|--requirement)\s+(\S+)", ln)
        if m and not (repo / m.group(1)).is_file():
            problems.append(f"{ln!r} names a file the repository root does not have")
    if lines and not any(is_local(ln) for ln in lines):
        problems.append("nothing local in the pip section: repo2docker would install before copying the repository")
    return problems


def script_problems(repo: Path) -> list[str]:
    """postBuild and start, when present, as repo2docker runs them (configuration/actions.md)."""
    where, problems = config_dir(repo)
    if where is None:
        return problems
    for name in ("postBuild", "start"):
        path = where / name
        if not path.exists():
            continue
        text = path.read_text()
        body = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.strip().startswith("#")]
        if not text.startswith("#!"):
            problems.append(f"{name}: the first line must be a shebang (#!/bin/bash)")
        if not os.access(path, os.X_OK):
            problems.append(f"{name}: not executable (git update-index --chmod=+x {name})")
        if name == "postBuild" and not any(re.match(r"set\s+-\w*e", ln) for ln in body):
            problems.append("postBuild: no 'set -e', so a failing step would not stop the build")
        if name == "start" and (not body or not re.fullmatch(r'exec\s+"\$@"', body[-1])):
            problems.append('start: the last line must be exec "$@"')
    return problems


# -- this repository ----------------------------------------------------------------------------
def test_repo2docker_builds_this_repository_with_its_environment_yml():
    assert environment_problems(ROOT) == []


def test_no_postbuild_or_start_is_needed_and_any_there_would_run():
    # Everything installs from environment.yml; JupyterLab 4 finds ipywidgets' front end by itself.
    where, _ = config_dir(ROOT)
    assert not (where / "postBuild").exists() and not (where / "start").exists()
    assert script_problems(ROOT) == []


def test_environment_yml_installs_what_the_lessons_import_at_the_pinned_versions():
    import tomllib
    from importlib.metadata import version

    from packaging.specifiers import SpecifierSet  # locked in constraints.txt

    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pins = dict(re.match(r"([A-Za-z0-9_.-]+)(?:\[[^\]]*\])?==(\S+)", ln).groups()
                for ln in pip_lines(env) if "==" in ln)
    for needed in ("jupyterlab", "ipywidgets", "ipykernel", "moto", "boto3", "matplotlib"):
        assert needed in pins, f"environment.yml does not install {needed}"
        assert version(needed) == pins[needed], f"{needed}: environment.yml {pins[needed]}, venv {version(needed)}"
    python = next(m.group(1) for d in env["dependencies"] if isinstance(d, str) and (m := PYTHON_PIN.match(d)))
    requires = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    assert python in SpecifierSet(requires), f"python={python} does not satisfy requires-python {requires}"


# -- each rule fails on a drifted repository -----------------------------------------------------
GOOD_ENV = ("name: x\nchannels: [conda-forge]\ndependencies:\n  - python=3.11\n  - pip\n  - pip:\n"
            "    - -c constraints.txt\n    - boto3==1.0.0\n    - -e .\n")


def _repo(tmp_path: Path, env: str = GOOD_ENV, **files: str) -> Path:
    (tmp_path / "environment.yml").write_text(env)
    (tmp_path / "constraints.txt").write_text("boto3==1.0.0\n")
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    for name, text in files.items():
        path = tmp_path / name.replace("__", "/")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


def test_a_good_sample_passes(tmp_path):
    assert environment_problems(_repo(tmp_path)) == []


@pytest.mark.parametrize(("change", "expected"), [
    ({"env": GOOD_ENV.replace("python=3.11", "python=3.4")}, "no base environment"),
    ({"env": GOOD_ENV.replace("  - python=3.11\n", "")}, "pins no python"),
    ({"env": GOOD_ENV.replace("    - -e .\n", "")}, "not installed"),
    ({"env": GOOD_ENV.replace("constraints.txt", "lock.txt")}, "names a file"),
    ({"env": GOOD_ENV.replace("  - pip\n  - pip:", "  - pip:")}, "without pip"),
    ({"env": "- python=3.11\n"}, "must be a mapping"),
    ({"Dockerfile": "FROM x\n"}, "DockerBuildPack"),
    ({"runtime.txt": "python-3.10\n"}, "runtime.txt is ignored"),
    ({"binder__requirements.txt": "x\n"}, "root environment.yml is ignored"),
])
def test_each_repo2docker_rule_names_what_drifted(tmp_path, change, expected):
    env = change.pop("env", GOOD_ENV)
    problems = environment_problems(_repo(tmp_path, env, **change))
    assert any(expected in p for p in problems), problems


def test_both_binder_folders_is_an_error(tmp_path):
    repo = _repo(tmp_path, **{"binder__x": "", ".binder__x": ""})
    assert environment_problems(repo) == ["both binder/ and .binder/ exist: repo2docker refuses to build"]


def test_postbuild_and_start_rules(tmp_path):
    repo = _repo(tmp_path, postBuild="pip install x\n", start="#!/bin/bash\nexport A=1\n")
    problems = script_problems(repo)
    assert any("postBuild: the first line must be a shebang" in p for p in problems)
    assert any("postBuild: not executable" in p for p in problems)
    assert any("postBuild: no 'set -e'" in p for p in problems)
    assert any('start: the last line must be exec "$@"' in p for p in problems)
    (repo / "postBuild").write_text("#!/bin/bash\nset -euo pipefail\npip install x\n")
    (repo / "start").write_text('#!/bin/bash\nexport A=1\nexec "$@"\n')
    for name in ("postBuild", "start"):
        (repo / name).chmod(0o755)
    assert script_problems(repo) == []


def test_is_local_matches_repo2docker_on_the_forms_used_here():
    assert is_local("-e .") and is_local("-c constraints.txt") and is_local("-r requirements.txt")
    assert not is_local("boto3==1.0.0") and not is_local("moto[dynamodb]==5.2.5")


# -- isolation: real kernels side by side ----------------------------------------------------------
@pytest.mark.notebook
def test_kernels_side_by_side_each_get_their_own_deterministic_world():
    from sandbox.bench.hub import HANDLER, SCENARIO, fingerprint, problems, run_kernels

    run = run_kernels([0, 0, 1])
    expected = {seed: fingerprint(SCENARIO, HANDLER, seed) for seed in (0, 1)}
    rows = run["rows"]
    assert problems(run, expected) == []
    assert [r["fingerprint"] for r in rows] == [expected[0], expected[0], expected[1]]
    assert expected[0] != expected[1], "different seeds should interleave the two copies differently"
    assert len({r["pid"] for r in rows}) == 3, "each notebook ran in a kernel of its own"
    assert all(r["ports_opened"] == 0 for r in rows), rows
    assert all(r["verdict"] == "invalid" and r["emails"] == 2 for r in rows), rows  # read-then-write races
    assert all(40 < r["rss_mib"] < 1024 for r in rows), [r["rss_mib"] for r in rows]


def test_isolation_problems_names_what_broke():
    from sandbox.bench.hub import problems

    row = {"seed": 0, "pid": 1, "fingerprint": "a", "ports_opened": 0}
    good = {"rows": [row, {**row, "pid": 2}, {**row, "pid": 3, "seed": 1, "fingerprint": "b"}]}
    assert problems(good, {0: "a", 1: "b"}) == []
    drift = {"rows": [row, {**row, "pid": 2, "fingerprint": "c"}]}
    assert any("kernels disagree" in p for p in problems(drift))
    assert any("this process got" in p for p in problems(good, {0: "z"}))
    port = {"rows": [{**row, "ports_opened": 1}]}
    assert any("listening port" in p for p in problems(port))
    same = {"rows": [row, {**row, "pid": 2, "seed": 1}]}
    assert any("did not reach the scheduler" in p for p in problems(same))
