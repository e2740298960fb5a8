"""Each exercise's requirement table (issue 30): the task's numbered sentences, each mapped to the items that
test it, kept once in the solution notebook's metadata and read by the task text, the grader and the feedback."""
import pytest

from sandbox.grading import catalog
from sandbox.grading import notebooks as nb
from sandbox.grading.render import failure_text
from sandbox.grading.scoring import ItemResult, items
from sandbox.grading.scoring import TestResult as Judged

from conftest import ROOT

EXERCISES = sorted(catalog.grading_catalogue())


@pytest.mark.parametrize("eid", EXERCISES)
def test_every_requirement_has_an_item_and_every_item_one_requirement(eid):
    ex = catalog.grading_catalogue()[eid]
    assert catalog.requirement_gaps(ex) == []
    assert all(r.text.endswith(".") for r in ex.requirements), "a requirement is stated as a sentence"


@pytest.mark.parametrize("eid", EXERCISES)
def test_the_task_text_states_the_table_and_check_reads_the_same_one(eid):
    ex = catalog.grading_catalogue()[eid]
    block = catalog.render_requirements(ex.requirements)
    for folder in (catalog.SOLUTIONS_DIR, catalog.EXERCISES_DIR):
        task = nb.source(nb.read(folder / f"{ex.name}.ipynb")["cells"][0])
        assert block in task, f"{folder.name}/{ex.name}.ipynb's task text does not state its requirement table"
    assert catalog.exercise(eid).requirements == ex.requirements  # what check() reads (public_tests.json)


def test_the_feedback_of_a_failed_item_names_its_requirement():
    ex = catalog.grading_catalogue()["07"]
    [test] = [t for t in ex.tests if t.item == "in-progress"]
    [item] = items(ex, [Judged(test, False, 1, reason="no run of this test finished")])
    assert isinstance(item, ItemResult) and item.requirement.startswith("requirement 2: ")
    assert f"  it checks {item.requirement}" in failure_text(item)


def test_a_requirement_without_an_item_or_an_item_without_one_is_caught():
    ex = catalog.grading_catalogue()["06"]
    orphan = catalog.Exercise(ex.id, ex.slug, ex.title, ex.tests, requirements=ex.requirements[:-1])
    assert catalog.requirement_gaps(orphan) == ["item missing-key has no requirement"]
    empty = catalog.Exercise(ex.id, ex.slug, ex.title, ex.tests,
                             requirements=(*ex.requirements, catalog.Requirement("Something more.", ("typo",)),
                                           catalog.Requirement("Nothing tests this.", ())))
    assert catalog.requirement_gaps(empty) == ["requirement 6 (Nothing tests this.) has no item",
                                               "requirement names typo, which is no item"]


def test_each_exercise_keeps_a_record_of_a_new_learners_tries():
    """Issue 30: each exercise is passable within two tries, from the feedback alone; its source keeps the record."""
    for ex in catalog.grading_catalogue().values():
        record = ROOT / "solutions" / f"{ex.name}.tries.md"
        text = record.read_text()
        assert "correct_attempt" in text and "passed at the first try" in text, record
        [row] = [line for line in text.splitlines() if "| correct_attempt |" in line]
        assert "All public tests pass" in row, row
