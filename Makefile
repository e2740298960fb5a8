# Retries Will Happen: everything runs from a local .venv.
# Needs only python3 (with venv), make and git.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
LAB_STAMP := $(VENV)/.lab-installed
PIP    := $(BIN)/python -m pip --disable-pip-version-check

LAB_ARGS    ?=
PYTEST_ARGS ?=
NOX_ARGS ?=
BENCH_ARGS  ?=
CAMPAIGN_ARGS ?=
AUTOGRADER_ARGS ?=
MUTATION_ARGS ?=

.PHONY: setup lab lint typecheck test test-deep test-course test-rest test-all test-ui chromium bench campaign mutation clean help reset-notebooks html golden snapshots

# Byte-compile the package (quick when nothing changed): an editable install is not compiled, and
# with PYTHONDONTWRITEBYTECODE set (as on some CI machines) every CLI run, grader child and kernel
# would compile the sandbox from source again, a fifth of a CLI run's start.
setup: $(STAMP) bubblewrap
	@$(BIN)/python -m compileall -q sandbox >/dev/null

# bubblewrap contains the grader's execution environments (INSTRUCTORS.md). Installed when root on
# Debian or Ubuntu; elsewhere the lessons do without it and the grader says how to get it.
.PHONY: bubblewrap
bubblewrap:
	@if command -v bwrap >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "installing bubblewrap (the grader's containment)"; \
	  DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends bubblewrap >/dev/null; \
	else \
	  echo "note: bubblewrap is not installed; grading a class needs it (sudo apt-get install bubblewrap)"; \
	fi

# Create the venv once. Debian/Ubuntu ship venv's ensurepip separately.
$(BIN)/python:
	@$(PYTHON) -m venv $(VENV) || { rm -rf $(VENV); \
	  echo "error: '$(PYTHON) -m venv' failed; on Debian/Ubuntu run: sudo apt-get install python3-venv (then make setup again)" >&2; \
	  exit 1; }

# Install the pins of requirements file $(1), locked by constraints.txt, and the package itself.
define install-pins
	$(PIP) install --progress-bar off --upgrade pip
	$(PIP) install --progress-bar off -r $(1) -c constraints.txt
	$(PIP) install --progress-bar off --no-deps -e .
	@$(MAKE) --no-print-directory git-filter
endef

# Reinstall only when a pin, the lock or the project metadata changed. The full set (tests, linters, the
# browser driver) holds the lessons' set too.
$(STAMP): requirements.txt requirements-dev.txt constraints.txt pyproject.toml | $(BIN)/python
	$(call install-pins,requirements-dev.txt)
	@touch $@ $(LAB_STAMP)

# What the lessons need and no more (a learner's first `make lab` installs no test tools).
$(LAB_STAMP): requirements.txt constraints.txt pyproject.toml | $(BIN)/python
	$(call install-pins,requirements.txt)
	@touch $@

.PHONY: setup-lab
setup-lab: $(LAB_STAMP)
	@$(BIN)/python -m compileall -q sandbox >/dev/null

# git stores notebooks without outputs (.gitattributes), so running lessons keeps the clone clean.
.PHONY: git-filter
git-filter:
	@if git rev-parse --git-dir >/dev/null 2>&1; then \
	  git config filter.strip-outputs.clean "$(abspath $(BIN))/python -m sandbox.tools.strip_outputs"; \
	  git config filter.strip-outputs.smudge cat; fi

# Jupyter refuses to run as root (containers, CI) unless told it may.
ROOT_ARGS := $(if $(filter 0,$(shell id -u 2>/dev/null)),--allow-root)

# Serves the repository root, so exercises/ and examples/ open from the file browser. lab-settings/overrides.json
# changes JupyterLab's defaults for this course (no news toast over a lesson; your own settings still win).
LAB_SETTINGS := "--LabApp.app_settings_dir=$(CURDIR)/lab-settings"
lab: setup-lab git-filter
	$(BIN)/jupyter lab --ServerApp.root_dir=. notebooks/00_start_here.ipynb $(LAB_SETTINGS) $(ROOT_ARGS) $(LAB_ARGS)

# Put the lessons and exercises back as they came (outputs gone; your edits to code cells stay).
reset-notebooks: setup-lab
	$(BIN)/python -m sandbox.tools.strip_outputs $(wildcard notebooks/*.ipynb exercises/*.ipynb)

# The executed course as static HTML, for reading without a kernel: out/html/ (lesson links lead to pages).
html: setup-lab
	rm -rf out/html && mkdir -p out/html
	$(BIN)/jupyter nbconvert --to html --execute --ExecutePreprocessor.timeout=300 \
	  --output-dir out/html notebooks/*.ipynb
	$(BIN)/python -m sandbox.tools.html_links out/html notebooks
	@echo "open out/html/00_start_here.html"

# The student notebooks and answer files, regenerated from solutions/ (CI fails when they are stale).
.PHONY: exercises
exercises: setup
	$(BIN)/python -m sandbox.grading.generate

# The Gradescope autograder bundle: out/autograder.zip (AUTOGRADER_ARGS="--exercise 02" for one exercise).
.PHONY: autograder
autograder: setup
	$(BIN)/python -m sandbox.grading.autograder build $(AUTOGRADER_ARGS)

lint: setup
	$(BIN)/ruff check .

# The type checker alone (configured in pyproject.toml: sandbox/, its strictness).
typecheck: setup
	$(BIN)/mypy

# make test is a newcomer's check, within five minutes of a fresh clone on 2 cores: ruff, mypy, and the tests but
# two tiers. make test-deep runs the quick suite's long tail, the tests listed in tests/deep.txt (tests/tiers.py:
# every case of each costly family, the CLI and the grader end to end, every figure rendered). make test-course
# runs the course's long suites (marked slow, notebook or course): the lessons and exercises executed in kernels,
# the browser, the golden snapshots, the exercises' items and mutants, campaigns and exhaustive searches. CI runs
# all three (.ci/run); make test-all runs them here.
# mypy runs beside ruff and pytest, not before them: a cold run (no .mypy_cache, as in a fresh clone)
# is about 15 s of one core, which the tests would otherwise wait for. Its report is printed after the
# tests', and the target fails if either failed. pytest exits 5 when it collects no test: make
# passes that on as a failure.
QUICK := not slow and not notebook and not course and not grading and not deep
DEEP := deep and not slow and not notebook and not course and not grading
COURSE := (slow or notebook or course) and not grading
test: setup
	@log=$$(mktemp); $(BIN)/mypy >"$$log" 2>&1 & mypy=$$!; \
	echo "$(BIN)/mypy  (in the background)"; \
	echo "$(BIN)/ruff check ."; $(BIN)/ruff check . && \
	{ echo "$(BIN)/python -m pytest -n auto --dist worksteal --durations=15 -m \"$(QUICK)\" $(PYTEST_ARGS)"; \
	  $(BIN)/python -m pytest -n auto --dist worksteal --durations=15 -m "$(QUICK)" $(PYTEST_ARGS); }; tests=$$?; \
	wait $$mypy; typed=$$?; echo "mypy:"; cat "$$log"; rm -f "$$log"; \
	[ $$tests -eq 0 ] && [ $$typed -eq 0 ]

test-deep: setup
	$(BIN)/python -m pytest -n auto --dist worksteal --durations=15 -m "$(DEEP)" $(PYTEST_ARGS)

test-course: setup
	$(BIN)/python -m pytest -n auto --dist worksteal --durations=15 -m "$(COURSE)" $(PYTEST_ARGS)

# Everything make test leaves out, test-deep's and test-course's tests in one run: one collection and one pool of
# workers, which CI's time budget wants (.ci/run).
test-rest: setup
	$(BIN)/python -m pytest -n auto --dist worksteal --durations=15 -m "($(DEEP)) or ($(COURSE))" $(PYTEST_ARGS)

test-all: test test-rest

# The golden snapshots (tests/__snapshots__/test_golden/, described in tests/test_golden.py): every scenario's
# history, report and timeline. make test-course compares seeds 0 and 1; make golden compares all ten. After a change
# that alters runs on purpose, make snapshots rewrites them all (git diff tests/__snapshots__ shows what changed).
golden: setup
	$(BIN)/python -m pytest -n auto -q tests/test_golden.py --golden-all $(PYTEST_ARGS)

snapshots: setup
	$(BIN)/python -m pytest -n auto -q tests/test_golden.py --snapshot-update $(PYTEST_ARGS)

# The grader end to end (about three minutes): a class of twenty mixed submissions graded into grades.csv,
# the gradebook files and feedback; and the Gradescope bundle built and run from scratch (setup.sh on an
# image whose python3 is 3.10: a venv, the grading requirements from the registry, the unprivileged
# grading user; then run_autograder). Needs root, as Gradescope's image build has.
.PHONY: test-grading
test-grading: setup
	$(BIN)/python -m pytest -n auto -m grading -rA tests/test_grade.py tests/test_gradescope_setup.py

# The runtime, fidelity, grading and golden tests on Python 3.12 and 3.13 (noxfile.py), each in a venv of
# its own under .nox/. Interpreters are found on PATH, and in pyenv's folder when there is one.
PYENV_BINS := $(wildcard $(HOME)/.pyenv/versions/3.12*/bin $(HOME)/.pyenv/versions/3.13*/bin)
.PHONY: test-pythons
test-pythons: setup
	PATH="$(subst $(eval) ,:,$(PYENV_BINS)):$$PATH" $(BIN)/nox $(NOX_ARGS)

# The browser tests alone (tests/test_lab_ui.py): Playwright drives Debian's chromium against a
# private JupyterLab. A missing chromium is installed when you are root, else the command is shown;
# either way these tests never skip here (LAB_UI_REQUIRED), and -rA lists each one's outcome.
test-ui: setup chromium
	LAB_UI_REQUIRED=1 $(BIN)/python -m pytest -n auto -rA tests/test_lab_ui.py $(PYTEST_ARGS)

# Debian's chromium for the UI tests (Playwright never downloads a browser).
chromium:
	@if [ -x /usr/bin/chromium ]; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "installing Debian's chromium for the UI tests"; \
	  DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium; \
	else \
	  echo "error: the UI tests need Debian's chromium at /usr/bin/chromium; run: sudo apt-get install chromium" >&2; \
	  exit 1; \
	fi

bench: setup
	$(BIN)/python -m sandbox.bench $(BENCH_ARGS)

# Every strategy x every scenario and variant x seeds, on every core: campaign-results/.
campaign: setup
	$(BIN)/python -m sandbox campaign $(CAMPAIGN_ARGS)

# Mutation testing of the exercises' items (sandbox/tools/mutation.py): mutmut's mutants of the code each worked
# answer's learner writes, each graded with its exercise's items, two at a time. A table of the scores, the survivors
# with their listed reasons (solutions/NN_slug.mutants.toml), and out/mutation/report.json. Fails when a survivor is
# listed nowhere, a listed mutant is gone or killed, or an exercise scores under 95%. About ten minutes on 2 cores;
# MUTATION_ARGS="--exercise 02" for one exercise, "--sample 3" for the slice tests/test_mutation.py runs.
mutation: setup
	$(BIN)/python -m sandbox.tools.mutation $(MUTATION_ARGS)

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis .mypy_cache build *.egg-info
	find . -path ./.git -prune -o -type d \( -name __pycache__ -o -name .ipynb_checkpoints \) -prune -exec rm -rf {} +

# Every target, one line each (`make` alone runs setup, the first target).
help:
	@echo "make setup            create .venv with the pinned packages, and register the notebook git filter"
	@echo "make setup-lab        create .venv with only what the lessons need (no test tools)"
	@echo "make lab              setup-lab, then open JupyterLab on notebooks/00_start_here.ipynb (LAB_ARGS=...)"
	@echo "make test             setup, ruff, mypy and the quick tests, within five minutes (PYTEST_ARGS=...)"
	@echo "make test-deep        the quick suite's long tail (tests/deep.txt): every case of each family, CLI, grader"
	@echo "make test-course      the course's long suites: lessons, exercises, browser, golden snapshots, campaigns"
	@echo "make test-rest        test-deep and test-course in one run: everything make test leaves out"
	@echo "make test-all         test and test-rest (CI then runs test-pythons, test-grading and mutation: .ci/run)"
	@echo "make test-ui          the JupyterLab browser tests alone, in Debian's chromium"
	@echo "make test-grading     the grader end to end: a class of twenty, and the Gradescope bundle from scratch"
	@echo "make test-pythons     the runtime, fidelity, grading and golden tests on Python 3.12 and 3.13 (nox)"
	@echo "make golden           compare every scenario's seeds 0-9 with the golden snapshots (test-course: seeds 0-1)"
	@echo "make snapshots        rewrite the golden snapshots after a change that alters runs on purpose"
	@echo "make lint             ruff alone"
	@echo "make typecheck        mypy alone, on sandbox/ (make test runs it too)"
	@echo "make reset-notebooks  strip outputs from notebooks/ and exercises/, keeping your code edits"
	@echo "make html             run every lesson and render it to out/html/"
	@echo "make exercises        regenerate the student exercises from solutions/"
	@echo "make autograder       build out/autograder.zip for Gradescope (AUTOGRADER_ARGS=...)"
	@echo "make bench            speed and memory figures: bench-results.json and .txt (BENCH_ARGS=...)"
	@echo "make campaign         every strategy x scenario x seed: campaign-results/ (CAMPAIGN_ARGS=...)"
	@echo "make mutation         grade mutants of each worked answer with its exercise's items: scores per exercise (MUTATION_ARGS=...)"
	@echo "make chromium         install Debian's chromium for the UI tests (when root)"
	@echo "make bubblewrap       install bubblewrap, the grader's containment (when root; setup does it)"
	@echo "make git-filter       register filter.strip-outputs in .git/config (setup and lab do it)"
	@echo "make clean            remove .venv and the caches"
	@echo "make help             this list"
