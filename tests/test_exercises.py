"""Each exercise, as shipped, fails its own check, and its solution passes it."""
import pytest

from sandbox.explore import explore_scenario

from conftest import ROOT

CASES = [("01_claim_the_key.py", "concurrent-claims", {"copies": 2})]


@pytest.mark.slow
@pytest.mark.parametrize("name, scenario, settings", CASES)
def test_exercise_starts_broken_and_solution_holds_under_every_interleaving(name, scenario, settings):
    start = explore_scenario(scenario, f"{ROOT / 'exercises' / name}:handler", settings=settings)
    assert start.broken > 0, "the exercise must give the learner something to fix"
    done = explore_scenario(scenario, f"{ROOT / 'solutions' / name}:handler", settings=settings)
    assert done.all_valid and done.schedules > 1


def test_every_exercise_has_a_solution_and_a_check():
    exercises = sorted(p.name for p in (ROOT / "exercises").glob("*.py"))
    assert exercises == sorted(p.name for p in (ROOT / "solutions").glob("*.py"))
    assert exercises == sorted(name for name, _, _ in CASES)
