"""Mutation testing's CI slice (``make mutation`` runs the whole of it: sandbox/tools/mutation.py).

A fixed sample of mutmut's mutants of each worked answer, chosen by a hash of their names, is graded with its
exercise's items, in this process: each must fail an item unless ``solutions/NN_slug.mutants.toml`` accepts it
(as equivalent, or as a known gap), and a mutant listed there must still survive. A wrong answer the items caught
yesterday and miss today fails here, and so does a list that has gone stale: the score cannot fall unseen. The
lists must name only mutants that exist, each with a one-line reason.
"""
import tomllib

import pytest

from sandbox.grading import catalog
from sandbox.tools import mutation

#: One of the course's long suites: `make test-course` runs it (CI too), `make test` leaves it out.
pytestmark = pytest.mark.course

#: Mutants graded per exercise: the slice's whole cost is about a second each, on 2 cores.
SAMPLE = 3
CATALOGUE = catalog.grading_catalogue()


@pytest.fixture(scope="module")
def found():
    return {ex_id: mutation.mutants(mutation.answer_of(ex)) for ex_id, ex in CATALOGUE.items()}


def test_only_the_lines_the_learner_writes_are_mutated():
    """Exercise 02 hands out the imports, table() and the loop over the orders; the learner writes the claim."""
    answer = mutation.answer_of(CATALOGUE["02"])
    lines = [answer.text.splitlines()[n - 1].strip() for n in sorted(answer.lines)]
    assert lines[0] == "try:" and lines[-1] == "send_confirmation_email(order)", lines
    assert not [line for line in lines if line.startswith(("def ", "import ", "from ", "for ", "global "))]


def test_every_exercise_has_mutants_and_each_is_named_once(found):
    for ex_id, mutants in found.items():
        assert len(mutants) >= 10, ex_id
        assert len({m.key for m in mutants}) == len(mutants), ex_id
        assert "string" in {m.operator for m in mutants}, ex_id


def test_the_lists_name_only_mutants_that_exist_each_with_a_reason(found):
    stale = [line for ex_id, ex in CATALOGUE.items() for line in mutation.stale(ex, found[ex_id])]
    assert stale == []
    for ex in CATALOGUE.values():
        for entry in mutation.listed(ex).values():
            assert len(entry.why) >= 20 and "\n" not in entry.why, entry


def test_a_printed_entry_reads_back_as_the_same_mutant(found):
    """The entry printed for a survivor, pasted into a list, names that mutant (quotes of both kinds included)."""
    tricky = [m for mutants in found.values() for m in mutants if "'" in m.line and '"' in m.line]
    assert tricky
    for m in tricky[:5] + found["02"][:3]:
        [data] = tomllib.loads(m.entry("equivalent", "a reason"))["equivalent"]
        assert (data["operator"], data["line"], data["change"], data.get("occurrence", 1)) == m.key


@pytest.mark.parametrize("ex_id", sorted(CATALOGUE))
def test_a_sample_of_mutants_fails_an_item_unless_listed(tmp_path, found, ex_id):
    ex = CATALOGUE[ex_id]
    entries = mutation.listed(ex)
    wrong = []
    for m in mutation.sample(found[ex_id], SAMPLE):
        fails = mutation.failed_items(ex, m.code, tmp_path)
        entry = entries.get(m.key)
        if entry is None and not fails:
            wrong.append(f"survives every item, listed nowhere: {m.label}")
        elif entry is not None and fails:
            wrong.append(f"listed as {entry.kind}, yet fails {fails}: take it off the list: {m.label}")
    assert wrong == []


def test_a_mutant_that_loops_is_stopped_and_counted_as_killed():
    ex = CATALOGUE["02"]
    looping = mutation.Job(ex, "def handler(event, context):\n    while True:\n        pass\n")
    assert list(mutation.grade_all([looping], workers=1, timeout=3.0)) == [(0, ["(timeout)"])]
