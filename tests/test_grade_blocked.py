"""A blocked handler costs one watchdog per graded item, not one per invocation.

Before: every invocation of an endless loop waited out a whole watchdog, Lambda's retries and every other
copy included (async-retry: three stops in one run; exercise 02's six items: 66 s for one submission), up to
the submission's budget. Now a grader's run ends at the first stop (``halting_on_block``), and the handler's
later items give each invocation ``runner.AFTER_BLOCK``. Structure only: no timed assertion.
"""
from __future__ import annotations

import textwrap

from sandbox import run_scenario
from sandbox.core.scheduler import halting_on_block
from sandbox.grading import catalog, runner, scoring
from sandbox.grading.exercise_check import seeds_for
from sandbox.grading.recorder import MemorySink, Recorder
from sandbox.grading.runner import Runner
from sandbox.vocab import RecordType, Status

LOOP = """
    def handler(event, context):
        while True:
            pass
"""


def _stops(history) -> int:
    """How many of the run's invocations the watchdog stopped."""
    return sum(1 for e in history.of_type(RecordType.INVOKE_END) if e.get("blocked"))


def _loop(tmp_path, name="loop.py") -> str:
    path = tmp_path / name
    path.write_text(textwrap.dedent(LOOP))
    return f"{path}:handler"


def test_a_run_ends_at_the_first_watchdog_stop_inside_the_grader(tmp_path):
    handler = _loop(tmp_path)
    as_before = run_scenario("async-retry", handler, watchdog=0.5)
    assert _stops(as_before.history) == 3  # the event and Lambda's two retries
    with halting_on_block():
        graded = run_scenario("async-retry", handler, watchdog=0.5)
    assert _stops(graded.history) == 1
    assert graded.status == Status.UNKNOWN  # a handler that never returns: what it would have done is unknown
    assert any("was blocked outside the sandbox" in f.text for f in graded.verdict.findings)
    assert not any(f.kind in ("lost", "duplicate") for f in graded.verdict.findings)  # nothing misjudged as invalid


def test_a_loop_that_computes_through_its_timeout_ends_the_graders_run_there(tmp_path):
    """With the watchdog longer than the timeout, the loop's compute reaches the deadline first: on Lambda, and in
    the CLI, a timeout that Lambda retries; in the grader a block, since every retry would compute through its
    own timeout again, in real seconds (three endless loops took a class from 34 to 9 submissions a minute)."""
    handler, settings = _loop(tmp_path), {"function_timeout": 1}
    as_on_lambda = run_scenario("async-retry", handler, settings=settings, watchdog=30.0)
    ends = as_on_lambda.history.of_type(RecordType.INVOKE_END)
    assert [e["outcome"] for e in ends] == ["timeout"] * 3 and _stops(as_on_lambda.history) == 0
    with halting_on_block():
        graded = run_scenario("async-retry", handler, settings=settings, watchdog=30.0)
    [end] = graded.history.of_type(RecordType.INVOKE_END)
    assert end["outcome"] == "timeout" and end.get("blocked") and graded.status == Status.UNKNOWN


def test_every_item_of_an_endless_loop_costs_one_watchdog_stop_and_the_later_ones_a_short_one(tmp_path):
    ex = catalog.grading_catalogue()["02"]
    handler = _loop(tmp_path, f"{ex.name}.py")
    sink = MemorySink()
    stops, watchdogs, failed = [], [], []
    with Recorder(sink) as recorder:
        infos: list = []
        grader = Runner(handler, recorder, infos.append, watchdog=3.0)
        for index, test in enumerate(ex.tests):
            infos.clear()
            watchdogs.append(grader.watchdog)
            summary = grader.run_test(index, test, seeds_for(test, [777]))
            histories = [sink.history(i.group) for i in infos if i.group]
            stops.append(sum(map(_stops, histories)))
            failed.append(scoring.judge_test(test, list(infos), sink.history, handler, summary).passed is False)
    assert stops == [1] * len(ex.tests)  # one watchdog stop per item, whatever its scenario or kind
    assert watchdogs == [3.0] + [runner.AFTER_BLOCK] * (len(ex.tests) - 1)
    assert all(failed)


def test_a_handler_that_blocks_on_one_path_only_still_passes_the_others(tmp_path):
    # It hangs only when its claim is refused (a duplicate), so a run with no duplicate still passes after
    # an earlier item cut its watchdog short.
    path = tmp_path / "02_claim_the_key.py"
    path.write_text(textwrap.dedent("""
        import os

        import boto3

        from sandbox import orders_in, send_confirmation_email

        table = boto3.resource("dynamodb").Table(os.environ["IDEMPOTENCY_TABLE"])


        def handler(event, context):
            for order in orders_in(event):
                try:
                    table.put_item(Item={"pk": order["orderId"]}, ConditionExpression="attribute_not_exists(pk)")
                except table.meta.client.exceptions.ConditionalCheckFailedException:
                    while True:
                        pass
                send_confirmation_email(order)
    """))
    ex = catalog.grading_catalogue()["02"]
    sink = MemorySink()
    with Recorder(sink) as recorder:
        infos: list = []
        grader = Runner(f"{path}:handler", recorder, infos.append, watchdog=3.0)
        first = next(t for t in ex.tests if t.scenario == "concurrent-claims" and not t.exhaustive)
        grader.run_test(0, first, [1])
        assert grader.watchdog == runner.AFTER_BLOCK  # the duplicate blocked it
        infos.clear()
        from sandbox.grading.catalog import Test

        single = Test(item="no-fault", points=1, what="one order, once", scenario="no-fault", seeds=1)
        summary = grader.run_test(1, single, [5])
        assert scoring.judge_test(single, list(infos), sink.history, str(path), summary).passed
