"""The stages of run_once: each weaker one broken by a pinned (scenario, seed), the improved one proven.

The improved handler's promises are tested one by one: one call on the duplicate path, the
fencing token under a lock shorter than the work, per-record batches, the HTTP answers of the
Idempotency-Key draft, the payload fingerprint, storable results, and the remaining window
that only a downstream key closes.
"""
import ast
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sandbox import Sandbox, make_orders, run_scenario
from sandbox.analysis.campaign import strategy_handler
from sandbox.events import apigateway_event
from sandbox.stages import STAGES, stage
from sandbox.vocab import FindingKind

from conftest import ROOT

IMPROVED, ARTICLE = STAGES["improved"].handler, STAGES["article"].handler
#: What the pinned counterexample of each weaker stage shows, in the checker's words.
BROKEN_BY = {"naive": FindingKind.DUPLICATE, "module-set": FindingKind.DUPLICATE,
             "read-then-write": FindingKind.DUPLICATE, "claim-only": FindingKind.LOST,
             "no-expiry": FindingKind.LOST, "ttl-only": FindingKind.LOST, "article": FindingKind.DUPLICATE}


def test_the_stages_run_from_no_protection_to_improved():
    assert list(STAGES) == ["naive", "module-set", "read-then-write", "claim-only", "no-expiry", "ttl-only",
                            "article", "improved"]
    assert set(BROKEN_BY) == {name for name, s in STAGES.items() if s.counterexample is not None}


@pytest.mark.parametrize("name", list(STAGES))
def test_every_stage_is_a_handler_file_that_says_what_it_fixes_and_what_it_misses(name):
    s = stage(name)
    path = s.handler.rpartition(":")[0]
    with open(path) as f:
        tree = ast.parse(f.read())
    assert len(ast.get_docstring(tree) or "") > 150, f"{path} needs a docstring"
    defined = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    defined |= {t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
    assert s.function in defined
    assert s.fixes and s.still_wrong


@pytest.mark.parametrize("name", list(BROKEN_BY))
def test_each_weaker_stage_breaks_in_its_pinned_counterexample(name):
    scenario, overrides, seed = stage(name).counterexample
    result = run_scenario(scenario, stage(name).handler, seed=seed, settings=overrides)
    assert result.status == "invalid"
    assert BROKEN_BY[name] in {f.kind for f in result.verdict.findings}
    # ... and the pinned seed is the first one that shows it
    assert all(run_scenario(scenario, stage(name).handler, seed=s, settings=overrides).valid for s in range(seed))


@pytest.mark.parametrize("name", list(BROKEN_BY))
def test_the_improved_stage_survives_every_counterexample(name):
    scenario, overrides, seed = stage(name).counterexample
    assert run_scenario(scenario, IMPROVED, seed=seed, settings=overrides).valid


# -- a lock shorter than the work -----------------------------------------------------------------------
def _calls_of(result, inv):
    return [(e["op"], e["result"]) for e in result.history.of_type("aws")
            if e["service"] == "dynamodb" and e.get("inv") == inv]


def test_the_fencing_token_keeps_the_record_when_a_stale_owner_fails():
    result = run_scenario("lock-shorter-than-work", IMPROVED)
    assert result.valid
    kinds = [f.kind for f in result.verdict.findings]
    assert kinds == [FindingKind.OVERLAP]  # the double execution is noted, and nothing was written stale
    assert ("DeleteItem", "ConditionalCheckFailed") in _calls_of(result, "inv-1")  # the stale delete, refused
    assert _calls_of(result, "inv-3") == [("PutItem", "ConditionalCheckFailed")]  # the retry replays: no 3rd run
    effects = [(e["inv"], e["kind"], e["status"]) for e in result.history.of_type("effect")]
    assert [e for e in effects if e[0] == "inv-3"] == []


def test_the_article_loses_the_completed_record_in_the_same_run():
    result = run_scenario("lock-shorter-than-work", ARTICLE)
    assert result.status == "invalid"
    assert [f.kind for f in result.verdict.findings] == [FindingKind.DUPLICATE, FindingKind.OVERLAP,
                                                        FindingKind.STALE_WRITE]
    assert ("DeleteItem", "ok") in _calls_of(result, "inv-1")  # it deleted inv-2's COMPLETED record
    assert ("PutItem", "ok") in _calls_of(result, "inv-3")  # so the retry ran the work a third time
    assert result.verdict.effects_per_key["o-1"]["email"] == 2


def test_a_lock_sized_from_the_remaining_time_has_no_overlap():
    result = run_scenario("lock-shorter-than-work", ARTICLE, settings={"lock_seconds": 0})
    assert result.valid and result.verdict.notes == []


# -- the remaining window ---------------------------------------------------------------------------
def test_a_crash_between_the_charge_and_the_save_charges_once_thanks_to_the_downstream_key():
    result = run_scenario("crash-mid-work", IMPROVED, settings={"crash_after": "charge"})
    assert result.valid
    charges = [e["status"] for e in result.history.of_type("effect") if e["kind"] == "charge"]
    assert charges == ["done", "deduplicated"]


@pytest.mark.parametrize("name", ["article", "improved", "powertools-function", "powertools-decorator"])
def test_an_email_has_no_downstream_key_so_the_remaining_window_stays_open(name):
    # Every strategy that lets a crashed claim be taken over repeats the email, Powertools included. (The
    # ttl-only stage does not take it over: TTL has not deleted the claim when the retries come.)
    result = run_scenario("crash-mid-work", strategy_handler(name), settings={"crash_after": "email"})
    [dup] = result.verdict.duplicates
    assert dup.effect == "email" and dup.remaining_window and "Remaining window" in dup.text


# -- batches: one record at a time ------------------------------------------------------------------
def test_one_failing_sqs_record_comes_back_alone():
    result = run_scenario("sqs-batch-failure", IMPROVED)
    assert result.valid
    invs = result.report()["invocations"]
    assert [(i["cause"], i["keys"]) for i in invs] == [("first delivery", ["o-1", "o-2", "o-3"]),
                                                       ("redelivery", ["o-3"])]


def test_a_stream_handler_stops_at_the_first_failure_and_resumes_there():
    result = run_scenario("stream-batch-retry", IMPROVED)
    assert result.valid
    first = result.history.invocations()["inv-1"]
    assert first["outcome"] == "ok" and result.history.invocations()["inv-2"]["keys"] == ["o-3", "o-4"]
    # o-4 was not tried in the first invocation: the handler stopped at o-3
    emails = [(e["inv"], e["key"]) for e in result.history.of_type("effect") if e["kind"] == "email"]
    assert ("inv-1", "o-4") not in emails


# -- HTTP: the Idempotency-Key draft --------------------------------------------------------------
def _post(sb, fn, order, key, request_id):
    return fn.invoke(apigateway_event(order, request_id, idempotency_key=key)).result


def test_a_key_reused_with_another_payload_is_refused_with_422():
    with Sandbox() as sb:
        fn = sb.function(IMPROVED, timeout=10)
        first, other = make_orders(2)
        ok = _post(sb, fn, first, "key-1", "r-1")
        again = _post(sb, fn, first, "key-1", "r-2")
        clash = _post(sb, fn, {**other, "orderId": first["orderId"], "total": 999}, "key-1", "r-3")
        outbox = list(sb.outbox)
    assert ok["statusCode"] == 200 and again == ok  # status and body replayed
    assert clash["statusCode"] == 422 and "different request" in json.loads(clash["body"])["message"]
    assert len(outbox) == 1


def test_a_key_in_progress_gets_409_with_retry_after():
    with Sandbox() as sb:
        sb.services.timings.email = 20.0
        fn = sb.function(IMPROVED, timeout=30)
        order = make_orders(1)[0]
        first = fn.start(apigateway_event(order, "r-1", idempotency_key="k"))
        sb.scheduler.call_at(5.0, lambda: results.append(fn.start(apigateway_event(order, "r-2",
                                                                                    idempotency_key="k"))))
        results: list = []
        sb.run()
        second = results[0].result
    assert first.result["statusCode"] == 200
    assert second["statusCode"] == 409
    # the lock was sized to the 30 s the first invocation could run; 5 s of it had passed
    assert 20 <= int(second["headers"]["Retry-After"]) <= 25


# -- what run_once stores -----------------------------------------------------------------------------
@pytest.fixture
def examples_on_path(monkeypatch):
    """Handlers written here import run_once_improved from examples/, as a handler file there would."""
    monkeypatch.syspath_prepend(str(ROOT / "examples"))


def test_floats_are_stored_as_decimals_and_replayed(examples_on_path):
    def handler(event, context):
        from run_once_improved import run_once

        return run_once("k", lambda: {"total": 12.5, "items": [1.25, 2]}, context=context)

    with Sandbox() as sb:
        fn = sb.function(handler)
        first, replay = fn.invoke({"orderId": "o-1"}).result, fn.invoke({"orderId": "o-1"}).result
    # stored as Decimals (DynamoDB has no floats), sent back by the runtime as the numbers they hold
    assert first == replay == {"total": 12.5, "items": [1.25, 2]}


def test_a_result_too_big_for_dynamodb_is_refused_but_not_repeated(examples_on_path):
    runs = []

    def handler(event, context):
        from run_once_improved import ResultTooLargeError, run_once

        def work():
            runs.append(1)
            return "x" * 500_000
        try:
            return run_once("big", work, context=context)
        except ResultTooLargeError as err:
            return {"refused": str(err)}

    with Sandbox() as sb:
        fn = sb.function(handler)
        first, second = fn.invoke({}).result, fn.invoke({}).result
    assert "400 KB" in first["refused"] and "too large to keep" in second["refused"]
    assert runs == [1]  # the work was done once; the duplicate was told why nothing is replayed


# -- a property over schedules, crash points and faults ---------------------------------------------
@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), copies=st.integers(2, 4), stagger=st.sampled_from([0.0, 0.1, 1.0, 5.0]),
       orders=st.integers(1, 3))
def test_the_improved_handler_sends_once_under_any_schedule_of_concurrent_copies(seed, copies, stagger, orders):
    result = run_scenario("concurrent-claims", IMPROVED, seed=seed,
                          settings={"copies": copies, "stagger": stagger, "orders": orders})
    assert result.valid, result.verdict.explain()


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10_000), crash_after=st.sampled_from(["charge"]), orders=st.integers(1, 3),
       timeout=st.sampled_from([3.0, 10.0]))
def test_the_improved_handler_survives_crashes_after_the_charge(seed, crash_after, orders, timeout):
    result = run_scenario("crash-mid-work", IMPROVED, seed=seed,
                          settings={"crash_after": crash_after, "orders": orders, "function_timeout": timeout})
    assert result.valid, result.verdict.explain()


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10_000), failures=st.integers(1, 2), orders=st.integers(2, 5),
       report=st.booleans())
def test_the_improved_handler_survives_provider_faults_in_sqs_batches(seed, failures, orders, report):
    overrides = {"failures": failures, "orders": orders, "fail_order": orders - 1,
                 "report_batch_item_failures": report}
    result = run_scenario("sqs-batch-failure", IMPROVED, seed=seed, settings=overrides)
    if report:
        assert result.valid, result.verdict.explain()
    else:  # without ReportBatchItemFailures Lambda ignores the handler's answer: the failed order is lost
        assert [f.kind for f in result.verdict.findings] == [FindingKind.LOST]
