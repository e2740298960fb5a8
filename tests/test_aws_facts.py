"""Facts about AWS that a default of ours once taught wrong, each pinned by the behaviour it changes.

Each test failed on the code before the fix: the sandbox taught something AWS's own pages contradict.
"""
from __future__ import annotations

import pytest

from sandbox import SCENARIOS, Sandbox, get_scenario, run_scenario, stage
from sandbox.aws.ttl import TYPICAL_TTL_LAG
from sandbox.vocab import FindingKind

from conftest import example

TTL_ONLY = stage("ttl-only").handler
NAIVE = stage("naive").handler
ARTICLE = stage("article").handler
PARTIAL_BATCH = example("partial_batch.py")  # reports each failed record, and goes on with the batch
IMPROVED = stage("improved").handler


# -- TTL deletes late: "typically within two days of expiration" (API_UpdateTimeToLive) ---------------
def test_every_scenario_draws_ttl_deletion_up_to_two_days_unless_it_shows_one_lag():
    exact = {name for name in SCENARIOS if get_scenario(name).resolve({}).run.ttl_exact}
    assert exact == {"ttl-lag", "ddb-stream-ttl-remove"}  # each shows one lag; the others draw each item's
    lags = {name: get_scenario(name).resolve({}).run.ttl_lag for name in SCENARIOS}
    assert {lag for name, lag in lags.items() if name not in ("ttl-lag", "ddb-stream-ttl-remove")} == {TYPICAL_TTL_LAG}


@pytest.mark.parametrize("seed", range(3))
def test_ttl_lags_are_drawn_per_item_seeded_and_within_the_bound(seed):
    with Sandbox(seed=seed, ttl_lag=TYPICAL_TTL_LAG, ttl_drawn=True) as sb:
        lags = [sb.sweeper.lag_for("idempotency", f"k-{i}", 1.7e9 + i) for i in range(50)]
        again = [sb.sweeper.lag_for("idempotency", f"k-{i}", 1.7e9 + i) for i in range(50)]
    assert lags == again and len(set(lags)) == 50
    assert all(0 <= lag <= TYPICAL_TTL_LAG for lag in lags)
    assert max(lags) > TYPICAL_TTL_LAG / 2 > min(lags)


@pytest.mark.parametrize("seed", range(3))
def test_a_claim_that_waits_for_ttl_loses_the_crashed_order_at_the_defaults(seed):
    """The retries a minute later meet the crashed invocation's IN_PROGRESS record: TTL has not deleted it."""
    result = run_scenario("crash-mid-work", TTL_ONLY, seed=seed)
    assert result.status == "invalid"
    assert [f.kind for f in result.verdict.findings] == [FindingKind.LOST]
    sweeps = result.history.of_type("sweep")
    assert all(s["t"] > 60 for s in sweeps)


# -- EventBridge: Lambda accepts async requests from services even while throttled ----------------------
def test_a_throttled_function_behind_eventbridge_is_retried_by_lambdas_queue_not_by_eventbridge():
    """AWS: for throttling (429) Lambda returns the event to its own queue and tries again for up to 6 hours;
    EventBridge's retry policy is for a hand-off that failed (invocation-async-error-handling.html)."""
    result = run_scenario("eventbridge-target-retry", NAIVE, settings={
        "failed_handoffs": 0, "provider_failures": 0, "throttled_for": 30.0})
    deliveries = [d["what"] for d in result.history.of_type("delivery")]
    assert "throttled" in deliveries and "delivery failed" not in deliveries
    assert result.valid


def test_a_throttle_injected_on_eventbridges_hand_off_is_refused_with_the_reason():
    from sandbox import AwsFault, make_orders
    from sandbox.errors import BadInput
    from sandbox.sources.base import run_sources
    from sandbox.sources.eventbridge import EventBridgeSource, EventProducer

    with Sandbox(seed=0) as sb:
        bus = EventBridgeSource(sb, sb.function(NAIVE))
        sb.faults.add(AwsFault("throttle", "lambda", "Invoke", times=1))
        with pytest.raises(BadInput, match="accepts asynchronous requests from services even while"):
            run_sources(sb, EventProducer(sb, [(0.0, make_orders(1))], bus=bus.bus), bus)


def test_eventbridges_retries_follow_failed_hand_offs():
    result = run_scenario("eventbridge-target-retry", NAIVE)
    failed = [d["detail"] for d in result.history.of_type("delivery") if d["what"] == "delivery failed"]
    assert [(f["status"], f["error"]) for f in failed] == [(500, "ServiceException")] * 2


# -- FIFO: a message group's order is the handler's to keep (services-sqs-errorhandling.html) -----------
@pytest.mark.parametrize("fail_order", [1, 2])
def test_a_fifo_handler_that_goes_on_after_a_failure_breaks_the_groups_order(fail_order):
    carries_on = run_scenario("sqs-fifo-window", PARTIAL_BATCH, settings={"fail_order": fail_order, "resend_order": 0})
    assert carries_on.status == "invalid"
    [finding] = carries_on.verdict.findings
    assert finding.kind == FindingKind.OUT_OF_ORDER and finding.key == f"o-{fail_order}"
    stops = run_scenario("sqs-fifo-window", IMPROVED, settings={"fail_order": fail_order, "resend_order": 0})
    assert stops.valid
    returned = [d for d in stops.history.of_type("delivery") if d["what"] == "batch failed"]
    assert returned[0]["keys"] == [f"o-{n}" for n in range(fail_order, 4)]


def test_orders_of_different_groups_or_of_a_standard_queue_owe_no_order():
    interleaved = run_scenario("sqs-fifo-window", PARTIAL_BATCH,
                               settings={"fail_order": 1, "resend_order": 0, "message_groups": 3})
    assert interleaved.valid
    standard = run_scenario("sqs-batch-failure", PARTIAL_BATCH)
    assert all("group" not in a for a in standard.history.of_type("accept"))


# -- a redrive starts the messages' retention again (sqs-configure-dead-letter-queue-redrive.html) -------
def test_a_late_redrive_outlives_a_record_kept_a_day_and_the_checker_names_retention():
    late = run_scenario("sqs-dlq-redrive", ARTICLE, settings={"redrive_after": 2 * 86400.0,
                                                              "horizon": 2 * 86400.0 + 3600})
    [dup] = late.verdict.duplicates
    assert dup.key == "o-1" and "Retention shorter than the redelivery horizon" in dup.text
    assert run_scenario("sqs-dlq-redrive", ARTICLE).valid


def test_a_redrive_past_the_horizon_is_refused_with_what_to_raise():
    from sandbox.errors import BadInput

    with pytest.raises(BadInput, match="raise horizon above redrive_after"):
        run_scenario("sqs-dlq-redrive", ARTICLE, settings={"redrive_after": 2 * 86400.0})


# -- the handler's own write, retried by botocore (own-write-retried) ---------------------------------
@pytest.mark.parametrize("seed", range(3))
def test_a_claim_retried_by_botocore_meets_itself_and_only_an_owner_token_tells(seed):
    """PutItem takes effect, its answer is lost, botocore sends it again and the condition fails on the first
    attempt's own item: the article and Powertools answer their own caller 409 and the order is never emailed;
    the improved run_once sees its owner token in the old item and goes on."""
    improved = run_scenario("own-write-retried", IMPROVED, seed=seed)
    assert improved.valid
    puts = [(e["result"], (e.get("detail") or {}).get("fault")) for e in improved.history.of_type("aws")
            if e["op"] == "PutItem"]
    assert puts == [("ok", "timeout-applied"), ("ConditionalCheckFailed", None)]
    for refuses_itself in (ARTICLE, example("powertools_function.py")):
        result = run_scenario("own-write-retried", refuses_itself, seed=seed)
        assert result.status == "invalid" and [f.key for f in result.verdict.lost] == ["o-1"]


# -- the smaller facts, as the code and the lessons state them ------------------------------------------
def _text(path: str) -> str:
    from conftest import ROOT

    return (ROOT / path).read_text()


def test_the_smaller_facts_are_stated_as_aws_states_them():
    """Each sentence below was wrong before (issue 19's smaller facts); each page is cited where it is stated."""
    assert "4 for DynamoDB" in _text("sandbox/sources/producer.py")  # botocore's _SERVICE_MAX_ATTEMPTS
    assert "usually reached within one second" in _text("sandbox/aws/replicas.py")
    assert "our assumption" in _text("sandbox/sources/shards.py")  # an unknown itemIdentifier
    assert "there is none unless you configure one" in _text("sandbox/sources/async_invoke.py")
    assert "only hours later" not in _text("sandbox/scenarios/ttl_lag.py")
    assert "payload_validation_jmespath" in _text("notebooks/13_capstone.ipynb")  # the payload hash is opt-in
    eventbridge = _text("sandbox/sources/eventbridge.py")
    assert "no AWS page says" not in eventbridge and "eb-troubleshooting.html" in eventbridge
    sqs_lesson = _text("notebooks/03_sqs.ipynb")
    assert "up to 20 seconds" in sqs_lesson and "MaximumBatchingWindowInSeconds" in sqs_lesson  # the quiet queue
    assert "their retention started again" in _text("notebooks/10_locks_and_ttl.ipynb")  # a redrive
