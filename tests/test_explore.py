"""The explorer on a toy scheduler: verdict status, the schedule cap, and scripts that replay exactly."""
from dataclasses import dataclass

import pytest

from sandbox.core.policies import ReplayPolicy, ScriptedPolicy
from sandbox.errors import BadInput
from sandbox.modes.explore import Exploration, explore


@dataclass(eq=False)
class ToyTask:
    tid: int
    name: str
    steps: list

    @property
    def label(self) -> str:
        return self.steps[0]


def toy_run(policy, plan=(("a", ["x", "y"]), ("b", ["x", "y"]))) -> list[str]:
    """Tasks that each start, then do their steps; the policy picks whenever two or more can move."""
    tasks = [ToyTask(i, name, ["start", *steps]) for i, (name, steps) in enumerate(plan)]
    done = []
    while tasks:
        task = tasks[0] if len(tasks) == 1 else policy.choose(tasks)
        step = task.steps.pop(0)
        if step != "start":
            done.append(f"{task.name}:{step}")
        if not task.steps:
            tasks.remove(task)
    return done


def judged(verdict_of):
    """A run_once that runs the toy and judges the order of its steps with ``verdict_of``."""
    return lambda policy: verdict_of(toy_run(policy))


def test_every_interleaving_is_visited_once():
    seen = []
    found = explore(lambda policy: seen.append(tuple(toy_run(policy))) or "valid")
    # 4 steps, 2 from each task, in order within a task: C(4,2) = 6 orders of the steps.
    assert len(set(seen)) == 6 and found.schedules == len(seen)
    assert found.status == "valid" and found.all_valid and found.first_broken is None


def test_an_unknown_schedule_and_no_invalid_one_makes_the_search_unknown():
    found = explore(judged(lambda order: "unknown" if order[0] == "b:x" else "valid"))
    assert found.status == "unknown" and found.broken > 0
    assert found.first_broken_verdict == "unknown"


def test_an_invalid_schedule_is_reported_before_an_earlier_unknown_one():
    def verdict(order):
        if order[:2] == ["a:x", "a:y"]:
            return "unknown"  # the very first schedule
        return "invalid" if order[:2] == ["b:x", "b:y"] else "valid"

    found = explore(judged(verdict))
    assert found.status == "invalid" and found.first_broken_verdict == "invalid"
    assert verdict(toy_run(ReplayPolicy(found.first_broken))) == "invalid"


def test_a_search_stopped_at_its_cap_is_unknown_even_if_all_it_saw_was_valid():
    found = explore(judged(lambda order: "valid"), max_schedules=2)
    assert found.truncated and found.schedules == 2 and found.max_schedules == 2
    assert found.status == "unknown" and not found.all_valid
    assert "stopped at the limit of 2" in found.summary()


def test_a_cap_the_search_just_reaches_is_no_truncation():
    every = explore(judged(lambda order: "valid")).schedules
    found = explore(judged(lambda order: "valid"), max_schedules=every)
    assert found.schedules == every and not found.truncated and found.status == "valid"


@pytest.mark.parametrize("cap", [0, -1, 2.5, True])
def test_the_cap_must_be_a_positive_whole_number(cap):
    with pytest.raises(BadInput, match="max_schedules"):
        explore(judged(lambda order: "valid"), max_schedules=cap)


def test_the_first_broken_schedule_comes_with_a_script_that_replays_it_exactly():
    def verdict(order):
        return "invalid" if order.index("b:x") < order.index("a:y") else "valid"

    found = explore(judged(verdict))
    assert found.first_broken_script and all(":" in step for step in found.first_broken_script)
    by_choices = toy_run(ReplayPolicy(found.first_broken))
    by_script = toy_run(ScriptedPolicy(found.first_broken_script))
    assert by_script == by_choices and verdict(by_script) == "invalid"


def test_every_schedule_with_a_script_replays_from_it():
    runs = []

    def record(policy):
        runs.append((policy, toy_run(policy, plan)))
        return "valid"

    plan = (("a", ["x", "y"]), ("b", ["x"]), ("c", ["x", "y"]))
    explore(record)
    scripted = [(p.script, order) for p, order in runs if p.script]
    assert len(scripted) > 1
    for script, order in scripted:
        assert toy_run(ScriptedPolicy(script), plan) == order, script


def test_the_summary_counts_unknown_schedules_apart():
    found = Exploration(schedules=1, broken=1, verdicts={"unknown": 1})
    assert found.summary() == "1 schedule explored; 1 broke the invariant (0 invalid, 1 unknown)"
