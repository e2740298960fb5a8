"""The exercises: written once as solutions, the student versions generated from them and kept in sync;
each solution passes its public tests, and each student version, as generated, fails them all."""
import json

import nbformat
import pytest

from sandbox.grading import catalog, generate
from sandbox.grading import notebooks as nb
from sandbox.grading.exercise_check import run_tests
from sandbox.grading.scoring import items

from conftest import ROOT

#: One of the course's long suites: `make test-course` runs it (CI too), `make test` leaves it out.
pytestmark = pytest.mark.course

PLANNED = ["01_name_the_source", "02_claim_the_key", "03_store_and_replay", "04_locks_and_retention",
           "05_choose_the_key", "06_http_idempotency_key", "07_sqs_partial_batch", "08_fencing_and_downstream_keys",
           "09_powertools_handler"]


def test_the_planned_exercises_exist_as_solution_notebook_student_notebook_and_files():
    assert [p.stem for p in catalog.solution_notebooks()] == PLANNED
    for name in PLANNED:
        for path in (ROOT / "exercises" / f"{name}.ipynb", ROOT / "exercises" / f"{name}.py",
                     ROOT / "solutions" / f"{name}.py"):
            assert path.is_file(), path


def test_student_versions_are_up_to_date_with_the_solutions():
    """CI's sync check: regenerate every student version and compare (``make exercises`` fixes it)."""
    files = generate.every_output()
    assert generate.stale(files) == [], "run `make exercises` and commit the result"
    assert generate.main(["--check"]) == 0


def test_the_student_notebooks_hold_no_solution_no_hidden_test_and_no_answer_key():
    for name in PLANNED:
        text = (ROOT / "exercises" / f"{name}.ipynb").read_text()
        assert "### BEGIN" not in text and "### END" not in text
        student = nbformat.reads(text, as_version=4)
        assert "mysteries" not in json.dumps(student.metadata)
        for cell in student.cells:
            assert cell.get("outputs", []) == []
        solution = nb.read(ROOT / "solutions" / f"{name}.ipynb")
        hidden = catalog.from_notebook(solution, with_hidden=True)
        public = catalog.from_notebook(student, with_hidden=False)
        assert any(t.hidden for t in hidden.tests) and not any(t.hidden for t in public.tests)
        assert [t for t in hidden.tests if not t.hidden] == list(public.tests)


def test_markers_become_stubs_and_hidden_tests_go():
    cell = ("def f():\n    x = 1\n    ### BEGIN SOLUTION\n    return x\n    ### END SOLUTION\n"
            "T = [\n    1,\n    ### BEGIN HIDDEN TESTS\n    2,\n    ### END HIDDEN TESTS\n]\n")
    student = nb.student_text(cell, "09")
    assert "return x" not in student and "    raise NotImplementedError(" in student and "2," not in student
    assert "# YOUR CODE HERE" in student and 'check(\\"09\\")' in student
    assert nb.solution_text(cell, hidden=False) == "def f():\n    x = 1\n    return x\nT = [\n    1,\n]\n"
    assert "    2,\n" in nb.solution_text(cell, hidden=True)
    for broken in ("### BEGIN SOLUTION\nx\n", "### END SOLUTION\n", "### BEGIN SOLUTION\n### END HIDDEN TESTS\n"):
        with pytest.raises(nb.MarkerError):
            nb.student_text(broken, "09")


def test_every_exercise_has_at_least_two_public_tests_and_a_hidden_one():
    graded = catalog.grading_catalogue()
    assert list(graded) == [n[:2] for n in PLANNED]
    for ex in graded.values():
        assert sum(not t.hidden for t in ex.tests) >= 2 and any(t.hidden for t in ex.tests)
        assert ex.max_score == sum(ex.items.values()) > 0


def test_each_items_points_are_stated_once_so_the_tests_list_adds_up_to_the_exercises_score():
    """A learner adds up the points in the notebook's TESTS list: exercise 09's listed "retention" twice at 2 points,
    14 in all, though the item is worth 2 and the exercise 12. An item's points go on its first test only."""
    for ex in catalog.grading_catalogue().values():
        assert catalog.points_gaps(list(ex.tests)) == [], ex.name
        assert sum(t.points or 0 for t in ex.tests) == ex.max_score, ex.name
        public = ex.public()
        assert sum(t.points or 0 for t in public.tests) == public.max_score, ex.name  # what the student's list shows
    first = catalog.Test("retention", points=2, scenario="async-late-retry")
    again = catalog.Test("retention", points=2, scenario="async-late-retry", settings={"throttled_for": 21550})
    assert catalog.points_gaps([first, again]) == [
        "a test of retention states points again (2): state an item's points once, on its first test; its other "
        "tests state none"]
    assert catalog.points_gaps([first, catalog.Test("retention", scenario="async-late-retry")]) == []


def _graded(name, folder, seeds):
    """Every test of the exercise, the hidden ones included, as the grader runs them (fresh seeds)."""
    ex = catalog.grading_catalogue()[name[:2]]
    return ex, items(ex, run_tests(ex, ROOT / folder / f"{name}.py", f"{folder}/{name}.py", seeds))


@pytest.mark.slow
@pytest.mark.parametrize("name", PLANNED)
def test_the_solution_gets_full_marks_on_every_test_hidden_ones_included(name):
    ex, results = _graded(name, "solutions", [4242, 4243])
    assert [(i.item, i.passed) for i in items_failed(results)] == []
    assert sum(i.score for i in results) == ex.max_score


@pytest.mark.slow
@pytest.mark.parametrize("name", PLANNED)
def test_the_generated_exercise_scores_zero(name):
    ex, results = _graded(name, "exercises", [4242, 4243])
    assert [i.item for i in results if i.passed] == []
    assert sum(i.score for i in results) == 0 and ex.max_score > 0


def items_failed(results):
    return [i for i in results if not i.passed]


def test_the_quiz_timelines_are_as_generated_and_no_request_id_turns_up_in_two_of_them():
    """The mysteries all run from seed 0, so their worlds draw the same request ids; each timeline gets ids of its
    own (made from its letter, the same every time), and within one an async retry still shares its id."""
    files = generate.mysteries(ROOT / "solutions" / "01_name_the_source.ipynb")
    assert files and all(path.read_text() == text for path, text in files.items())  # deterministic, committed
    seen: dict[str, str] = {}
    for path, text in files.items():
        ids = {e["request_id"] for e in json.loads(text)["events"] if e.get("request_id")}
        for rid in ids:
            assert rid not in seen, f"{rid} is in timelines {seen[rid]} and {path.stem}"
            seen[rid] = path.stem
    events = json.loads(files[ROOT / "exercises" / "01_name_the_source" / "B.json"])["events"]
    starts = [e["request_id"] for e in events if e["type"] == "invoke_start"]
    assert len(starts) > len(set(starts))  # B's retry keeps its first invocation's request id


def test_the_kit_says_how_to_call_run_once_before_any_of_its_code_which_answers_exercises_03_04_and_08():
    """Exercise 05 sends learners to run_once_kit.py: its header tells what 05 to 07 need (the call, the keyword
    arguments they use, the errors), read from the code so it cannot drift, and warns before the first line of
    code that the code is the worked answer to 03, 04 and the fencing half of 08."""
    import importlib.util
    import inspect

    path = ROOT / "exercises" / catalog.KIT
    text = path.read_text()
    header, _, code = text.partition('"""')  # the header is comments, before the module's docstring
    assert header.strip() and all(line.startswith("#") for line in header.strip().splitlines())
    assert "def " not in header and "import boto3" not in header
    flat = " ".join(line.lstrip("# ").strip() for line in header.splitlines())
    for words in ("exercise 03", "exercise 04", "fencing half of exercise 08", "SPOILER"):
        assert words in flat, words
    spec = importlib.util.spec_from_file_location("kit_under_test", path)
    kit = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(kit)
    call = flat.split("run_once(", 1)[1].split(")", 1)[0]  # the call the header shows
    named = [part.split("=")[0].strip() for part in call.split(",") if part.strip() != "*"]
    assert named == list(inspect.signature(kit.run_once).parameters)
    for name in generate.KIT_ARGUMENTS:
        assert name in inspect.signature(kit.run_once).parameters and f"{name}:" in flat
    for error in ("KeyInProgressError", "PayloadMismatchError", "ResultTooLargeError"):
        assert issubclass(getattr(kit, error), Exception) and f"{error} (a kind of" in flat
    told = " ".join(nb.source(c) for c in nb.read(ROOT / "exercises" / "05_choose_the_key.ipynb")["cells"])
    assert "worked answer to exercises 03" in " ".join(told.split())  # exercise 05 says so where it sends them
