"""Partial-order reduction (sandbox/modes/dpor.py): it finds every verdict the full search finds, with fewer schedules.

The engine is checked on a toy machine of shared variables (hypothesis writes the programs), and
the wired-in search on concurrent-claims against the full search, handler by handler.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sandbox.cli import main
from sandbox.core.policies import ReplayPolicy
from sandbox.modes import dpor
from sandbox.modes.explore import explore, explore_scenario
from sandbox.scenarios import run_scenario
from sandbox.vocab import RecordType

from conftest import ROOT, example

ANY, READ, WRITE, Step, Trace, DporPolicy = dpor.ANY, dpor.READ, dpor.WRITE, dpor.Step, dpor.Trace, dpor.DporPolicy
SCENARIO = "concurrent-claims"
#: The exercise's solution: the conditional put (the lessons number it; any number will do).
CLAIM = next(str(p.relative_to(ROOT)) for p in sorted((ROOT / "solutions").glob("*claim_the_key.py")))
HANDLERS = ["naive_email.py", "read_then_write.py", "module_set.py", "claim_only.py", "article.py",
            "run_once_no_expiry.py", "idempotent.py", CLAIM]


def handler(name: str) -> str:
    return f"{ROOT / name}:handler" if "/" in name else example(name)


# -- a toy machine: tasks that read, write and compare-and-set shared variables ----------------------
@dataclass(eq=False)
class ToyTask:
    tid: int
    name: str
    ops: list
    label: str = "start"


@dataclass
class Toy:
    memory: dict = field(default_factory=dict)
    seen: dict = field(default_factory=dict)

    def do(self, task: ToyTask) -> Step:
        """Run the task's next op; the step says what it touched, as the tracer would read it."""
        if task.label == "start":
            task.label = _label(task.ops)
            return Step(task.name)
        op, var, *args = task.ops.pop(0)
        task.label = _label(task.ops)
        now = self.memory.get(var, 0)
        self.seen.setdefault(task.name, []).append(now)
        if op == "all":
            self.memory[var] = now + 1
            return Step(task.name, everything=True)
        wrote = op == "w" or (op == "cas" and now == args[0])
        if wrote:
            self.memory[var] = args[-1]
        return Step(task.name, frozenset({("toy", var, ANY, WRITE if wrote else READ)}))

    def outcome(self) -> str:
        return json.dumps([sorted(self.memory.items()), sorted(self.seen.items())])


def _label(ops: list) -> str:
    return f"{ops[0][0]}:{ops[0][1]}" if ops else "done"


def toy_run(policy, program) -> tuple[Toy, Trace]:
    """Run the tasks to the end, asking the policy whenever two or more can move, as the scheduler does."""
    tasks = [ToyTask(i, f"t{i}", list(ops)) for i, ops in enumerate(program)]
    toy, trace, decisions = Toy(), Trace(None), 0
    tracing = isinstance(policy, DporPolicy)
    try:
        while tasks:
            task = tasks[0] if len(tasks) == 1 else policy.choose(tasks)
            if tracing:
                policy.started(task.name, len(tasks) > 1)
            step = toy.do(task)
            step.decision = decisions if len(tasks) > 1 else None
            decisions += len(tasks) > 1
            trace.steps.append(step)
            if tracing:
                policy.observe(step)
            if task.label == "done":
                tasks.remove(task)
    except dpor.Redundant:
        return toy, trace
    trace.verdict = toy.outcome()
    return toy, trace


def outcomes_full(program) -> set[str]:
    found: set[str] = set()
    explore(lambda policy: found.add(toy_run(policy, program)[0].outcome()) or "valid", max_schedules=100_000)
    return found


def outcomes_reduced(program) -> tuple[set[str], int]:
    found: set[str] = set()

    def run(policy):
        return toy_run(policy, program)[1]

    result = dpor.search(run, 100_000, on_schedule=lambda policy, trace: found.add(trace.verdict))
    assert not result.truncated
    return found, result.schedules


OPS = st.one_of(
    st.tuples(st.just("r"), st.sampled_from("xy")),
    st.tuples(st.just("w"), st.sampled_from("xy"), st.integers(0, 2)),
    st.tuples(st.just("cas"), st.sampled_from("xy"), st.integers(0, 1), st.integers(1, 2)),
    st.tuples(st.just("all"), st.just("z")),
)
PROGRAMS = st.lists(st.lists(OPS, min_size=1, max_size=3), min_size=2, max_size=3).filter(
    lambda p: sum(len(ops) for ops in p) <= 6)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(PROGRAMS)
def test_the_reduced_search_reaches_every_outcome_of_the_full_one(program):
    reduced, _ = outcomes_reduced(program)
    assert reduced == outcomes_full(program)


def test_independent_tasks_need_one_schedule_and_a_race_needs_two():
    apart, runs = outcomes_reduced([[("w", "x", 1)], [("w", "y", 1)]])
    assert runs == 1 and len(apart) == 1
    race, runs = outcomes_reduced([[("w", "x", 1)], [("w", "x", 2)]])
    assert runs == 2 and len(race) == 2


def test_failed_claims_commute_so_n_claims_need_n_schedules():
    """Each of 4 tasks claims x (compare-and-set 0 -> 1): who wins is all that differs."""
    claims = [[("cas", "x", 0, 1), ("r", "x")] for _ in range(4)]
    found, runs = outcomes_reduced(claims)
    assert len(found) == 4 and runs == 4


# -- what conflicts with what ---------------------------------------------------------------------------
def ddb(op, key="k", result="ok", table="idempotency"):
    return {"type": RecordType.AWS, "service": "dynamodb", "op": op, "target": table, "key": key, "result": result}


def step(task, *records, pool="fn"):
    found, everything = dpor.resources_of(list(records), pool)
    return Step(task, frozenset(found), everything=everything)


@pytest.mark.parametrize("a, b, conflict", [
    (ddb("GetItem"), ddb("GetItem"), False),  # reads commute
    (ddb("GetItem"), ddb("PutItem"), True),
    (ddb("PutItem"), ddb("PutItem"), True),
    (ddb("PutItem", result="ConditionalCheckFailed"), ddb("PutItem", result="ConditionalCheckFailed"), False),
    (ddb("PutItem", result="ConditionalCheckFailed"), ddb("GetItem"), False),  # a failed claim only read
    (ddb("PutItem", result="ConditionalCheckFailed"), ddb("UpdateItem"), True),
    (ddb("PutItem", key="a"), ddb("PutItem", key="b"), False),  # other items
    (ddb("PutItem", table="one"), ddb("PutItem", table="two"), False),
    (ddb("Query", key=None), ddb("PutItem", key="b"), True),  # a query reads the whole table
    (ddb("Query", key=None), ddb("GetItem", key="b"), False),
    ({"type": RecordType.AWS, "service": "sqs", "op": "SendMessage", "target": "q"},
     {"type": RecordType.AWS, "service": "sqs", "op": "ReceiveMessage", "target": "q"}, True),
    ({"type": RecordType.EFFECT, "kind": "email", "key": "o-1"},
     {"type": RecordType.EFFECT, "kind": "cancellation", "key": "o-2"}, True),  # one outbox numbers both
    ({"type": RecordType.EFFECT, "kind": "email", "key": "o-1"},
     {"type": RecordType.EFFECT, "kind": "charge", "key": "o-1"}, False),
    ({"type": RecordType.INVOKE_START, "cold_start": True}, {"type": RecordType.INVOKE_START, "cold_start": True},
     False),  # two new containers
    ({"type": RecordType.INVOKE_START, "cold_start": True}, {"type": RecordType.INVOKE_END}, True),  # warm or cold
    ({"type": RecordType.INVOKE_START}, {"type": RecordType.INVOKE_START, "cold_start": True}, True),
    ({"type": RecordType.INVOKE_END}, {"type": RecordType.INVOKE_END}, False),  # each frees its own container
    ({"type": RecordType.LOG}, {"type": RecordType.ACCEPT}, True),  # a record we cannot read: everything
])
def test_conflict_rules(a, b, conflict):
    assert dpor.dependent(step("inv-1", a), step("inv-2", b)) is conflict
    assert dpor.dependent(step("inv-2", b), step("inv-1", a)) is conflict
    assert dpor.dependent(step("inv-1", a), step("inv-1", b))  # one task's steps keep their order


def test_a_race_is_only_two_steps_that_nothing_else_orders():
    w1, r2, w3 = (step("a", ddb("PutItem")), step("b", ddb("GetItem")), step("c", ddb("PutItem")))
    past, races = dpor.happens_before([w1, r2, w3])
    assert races == [(0, 1), (1, 2)]  # w1 -> r2 -> w3: w1 and w3 are ordered through r2
    assert past[2] == 0b011
    tick = Step("(clock)", everything=True)
    _, races = dpor.happens_before([w1, tick, w3])
    assert races == []  # a tick orders everything before it before everything after it


# -- on the real scenario ---------------------------------------------------------------------------
def agree(name: str, cfg: dict) -> tuple:
    reduced = explore_scenario(SCENARIO, handler(name), settings=cfg, max_schedules=20_000)
    full = explore_scenario(SCENARIO, handler(name), settings=cfg, max_schedules=20_000, reduction=False)
    assert reduced.reduction and not full.reduction
    assert not reduced.truncated and not full.truncated
    assert (reduced.status, reduced.broken > 0) == (full.status, full.broken > 0), (reduced, full)
    assert set(reduced.verdicts) <= set(full.verdicts)
    assert reduced.schedules <= full.schedules
    return reduced, full


@pytest.mark.parametrize("name", ["naive_email.py", "module_set.py", "claim_only.py"])
def test_reduced_and_full_agree_on_two_copies(name):
    agree(name, {"copies": 2})


def test_a_transaction_touches_every_item_it_names():
    """The read and the transaction's second item race; the history names only one item of the transaction."""
    reduced, full = agree("tests/handlers/read_then_transact.py", {"copies": 2})
    assert reduced.broken > 0 and full.broken == 72 and full.schedules == 90


def test_request_resources_name_each_item_of_a_transaction_and_a_batch():
    put = {"TransactItems": [{"Put": {"TableName": "t", "Item": {"pk": {"S": "a"}}}},
                             {"Update": {"TableName": "t", "Key": {"pk": {"S": "b"}}}},
                             {"ConditionCheck": {"TableName": "u", "Key": {"pk": {"S": "c"}}}}]}
    assert set(dpor.request_resources("dynamodb", "TransactWriteItems", put, 200)) >= {
        ("dynamodb", "t", "a", dpor.WRITE), ("dynamodb", "t", "b", dpor.WRITE)}
    assert {r[3] for r in dpor.request_resources("dynamodb", "TransactWriteItems", put, 400)} == {dpor.READ}
    batch = {"RequestItems": {"t": {"Keys": [{"pk": {"S": "a"}}, {"pk": {"S": "b"}}]}}}
    assert dpor.request_resources("dynamodb", "BatchGetItem", batch, 200) == [
        ("dynamodb", "t", "a", dpor.READ), ("dynamodb", "t", "b", dpor.READ)]
    assert dpor.request_resources("sqs", "SendMessage", {}, 200) == []


@pytest.mark.slow
@pytest.mark.usefixtures("thread_isolation")
@pytest.mark.parametrize("name", HANDLERS)
def test_reduced_and_full_agree_on_every_handler(name):
    agree(name, {"copies": 2})


@pytest.mark.slow
# Three copies cost a full search of hundreds of schedules each: a handler with no claim, and one in module
# state. The improved run_once's full search of three copies runs in make bench (its exploration section);
# claim_only and the exercise's solution make the same conditional put, which the two-copy checks cover.
@pytest.mark.usefixtures("thread_isolation")
@pytest.mark.parametrize("name", ["naive_email.py", "module_set.py"])
def test_reduced_and_full_agree_on_three_copies(name):
    reduced, full = agree(name, {"copies": 3})
    assert reduced.schedules * 10 <= full.schedules or full.schedules < 50


@pytest.mark.slow
@pytest.mark.usefixtures("thread_isolation")
@settings(max_examples=4, deadline=None)
@given(seed=st.integers(0, 1000), name=st.sampled_from(["read_then_write.py", "claim_only.py", "article.py"]))
def test_reduced_and_full_agree_whatever_the_seed(seed, name):
    cfg = {"copies": 2}
    reduced = explore_scenario(SCENARIO, handler(name), settings=cfg, seed=seed)
    full = explore_scenario(SCENARIO, handler(name), settings=cfg, seed=seed, reduction=False)
    assert (reduced.status, reduced.broken > 0) == (full.status, full.broken > 0)


def test_the_first_broken_schedule_replays_from_its_choices_and_its_script():
    found = explore_scenario(SCENARIO, handler("read_then_write.py"), settings={"copies": 2})
    assert found.reduction and found.status == "invalid" and found.first_broken_script
    by_choices = run_scenario(SCENARIO, handler("read_then_write.py"), policy=ReplayPolicy(found.first_broken))
    by_script = run_scenario(SCENARIO, handler("read_then_write.py"), policy=found.first_broken_script)
    assert by_choices.status == by_script.status == "invalid"
    assert by_choices.history.to_json() == by_script.history.to_json()


def test_a_traced_run_matches_a_plain_run_and_cuts_it_into_steps_and_ticks():
    policy = DporPolicy()
    trace = dpor.run_traced(SCENARIO, handler("idempotent.py"), policy, settings={"copies": 2})
    plain = run_scenario(SCENARIO, handler("idempotent.py"), settings={"copies": 2},
                         policy=ReplayPolicy([names.index(chosen) for names, chosen in trace.decisions]))
    assert trace.verdict == plain.status == "valid"
    assert any(s.tick for s in trace.steps) and {s.task for s in trace.steps} >= {"inv-1", "inv-2"}
    claims = [s for s in trace.steps if any(r[0] == "dynamodb" for r in s.resources)]
    assert claims and all(not s.everything for s in claims)


def test_a_python_function_handler_gets_the_full_search():
    from sandbox import orders_in, send_confirmation_email

    def naive(event, context):
        for order in orders_in(event):
            send_confirmation_email(order)

    found = explore_scenario(SCENARIO, naive, settings={"copies": 2})
    assert not found.reduction and found.status == "invalid" and found.schedules > 2
    assert explore_scenario(SCENARIO, handler("naive_email.py"), settings={"copies": 2}).reduction


def test_reduction_can_be_turned_off():
    found = explore_scenario(SCENARIO, handler("claim_only.py"), settings={"copies": 2}, reduction=False)
    assert not found.reduction and found.redundant == 0


# -- the command line -------------------------------------------------------------------------------
def cli(capsys, *args):
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_the_cli_says_how_many_schedules_the_reduction_ran(capsys):
    code, out, err = cli(capsys, "run", SCENARIO, "--handler", handler("claim_only.py"), "--policy", "exhaustive")
    assert code == 0, err
    assert "partial-order reduction: 2 schedules run" in out and "--no-reduction runs all interleavings" in out
    code, out, err = cli(capsys, "run", SCENARIO, "--handler", handler("naive_email.py"), "--policy", "exhaustive",
                         "--no-reduction", "--json")
    report = json.loads(out)
    assert code == 1 and report["reduction"] is False and report["schedules"] > 2
    code, out, _ = cli(capsys, "run", SCENARIO, "--handler", handler("naive_email.py"), "--policy", "exhaustive",
                       "--no-reduction")
    assert code == 1 and "every interleaving was run (no reduction)" in out


def test_no_reduction_goes_with_exhaustive_only(capsys):
    code, out, err = cli(capsys, "run", SCENARIO, "--handler", handler("naive_email.py"), "--no-reduction")
    assert code == 2 and out == "" and err.strip() == "error: --no-reduction goes with --policy exhaustive"


def test_a_stream_read_conflicts_with_every_write_to_its_table():
    """The history names DynamoDB Streams as botocore does (``dynamodb-streams``): a handler's read of a table's
    stream must conflict with the writes to that table, or the search would never reorder them."""
    read = {"type": "aws", "service": "dynamodb-streams", "op": "GetRecords", "target": "orders", "result": "ok"}
    assert dpor._aws(read) == [("dynamodb", "orders", dpor.ANY, dpor.WRITE)]
