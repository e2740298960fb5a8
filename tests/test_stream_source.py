"""The Kinesis event source mapping and its scenarios: stream-batch-retry, stream-partial-batch,
kinesis-producer-resend.

AWS semantics pinned here (https://docs.aws.amazon.com/lambda/latest/dg/with-kinesis.html,
https://docs.aws.amazon.com/lambda/latest/dg/services-kinesis-parameters.html,
https://docs.aws.amazon.com/lambda/latest/dg/kinesis-on-failure-destination.html): a failed
batch is retried whole, from its first record; its shard waits until it succeeds or is
discarded; MaximumRetryAttempts=k allows k retries; bisecting halves a failed batch without
using up a retry; a discarded batch is described to the on-failure destination.
"""
import base64
import json
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sandbox import (
    AwsFault,
    BadInput,
    ProviderFault,
    Sandbox,
    check,
    get_scenario,
    make_orders,
    orders_in,
    run_scenario,
    send_confirmation_email,
)
from sandbox.sources.base import run_sources
from sandbox.sources.producer import KinesisProducer
from sandbox.sources.stream import StreamMapping, StreamSource, aws_sequence_number, moto_sequence_number

from conftest import ROOT, example

NAIVE = example("naive_email.py")
IDEMPOTENT = example("idempotent.py")
SCENARIO = "stream-batch-retry"


def emails(result_or_verdict):
    verdict = result_or_verdict if hasattr(result_or_verdict, "effects_per_key") else result_or_verdict.verdict
    return {key: counts.get("email", 0) for key, counts in verdict.effects_per_key.items()}


def recording(seen):
    """A naive handler (no idempotency) that also keeps every event it is given."""

    def handler(event, context):
        seen.append(event)
        for order in orders_in(event):
            send_confirmation_email(order)

    return handler


def run_stream(handler, arrivals, mapping=None, faults=None, horizon=600.0, seed=0):
    """Write orders to a stream at the given times and let the mapping read it.

    ``arrivals`` is a list of (virtual time, order). Returns (history, on-failure messages).
    """
    with Sandbox(seed=seed) as sb:
        fn = sb.function(handler)
        for order_id, fail in (faults or {}).items():
            sb.faults.add(ProviderFault("email", order_id, fail=fail))
        source = StreamSource(sb, fn, mapping or StreamMapping())
        for t, order in arrivals:
            sb.scheduler.call_at(t, lambda order=order: source.put(order))
        sb.scheduler.call_at(0.0, source.start)
        sb.run(until=horizon, stop_when=lambda: source.sent == len(arrivals) and source.idle())
        source.finish()
        return sb.history, source.failure_records()


def invocations(history):
    return list(history.invocations().values())


# -- the scenario under default settings ----------------------------------------------------
@pytest.mark.parametrize("seed", range(20))
def test_naive_handler_duplicates_the_orders_before_the_failure(seed):
    # Defaults: 4 orders in one batch (BatchSize 100), o-3's email provider fails once, sending
    # nothing. inv-1 emails o-1 and o-2, then fails on o-3. Lambda retries the same batch from
    # its first record (MaximumRetryAttempts -1): inv-2 emails o-1 and o-2 again, then o-3 and
    # o-4. So o-1 and o-2 get 2 emails each, o-3 and o-4 one each: 6 emails for 4 orders.
    result = run_scenario(SCENARIO, NAIVE, seed=seed)
    assert result.status == "invalid"
    assert emails(result) == {"o-1": 2, "o-2": 2, "o-3": 1, "o-4": 1}
    invs = result.report()["invocations"]
    assert [(i["id"], i["cause"], i["prev"], i["keys"], i["outcome"]) for i in invs] == [
        ("inv-1", "first delivery", None, ["o-1", "o-2", "o-3", "o-4"], "error"),
        ("inv-2", "retry 1", "inv-1", ["o-1", "o-2", "o-3", "o-4"], "ok"),
    ]
    assert {d.key: d.invocations for d in result.verdict.duplicates} == {"o-1": ["inv-1", "inv-2"],
                                                                          "o-2": ["inv-1", "inv-2"]}


@pytest.mark.parametrize("seed", range(20))
def test_idempotent_handler_is_valid_under_defaults(seed):
    result = run_scenario(SCENARIO, IDEMPOTENT, seed=seed)
    assert result.status == "valid", result.verdict.explain()
    assert emails(result) == {"o-1": 1, "o-2": 1, "o-3": 1, "o-4": 1}


@settings(max_examples=12, deadline=None)
@given(batch_size=st.integers(1, 7), orders=st.integers(2, 7), data=st.data())
def test_idempotent_handler_is_valid_for_any_batch_size(batch_size, orders, data):
    fail_order = data.draw(st.integers(1, orders))
    bisect = data.draw(st.booleans())
    result = run_scenario(SCENARIO, IDEMPOTENT, settings={"batch_size": batch_size, "orders": orders,
                                                          "fail_order": fail_order, "failures": 2,
                                                          "bisect_batch_on_function_error": bisect})
    assert result.status == "valid", result.verdict.explain()


def test_card_orders_are_charged_again_by_the_retry_unless_the_charge_is_idempotent():
    # Each card order is charged, then emailed. inv-1 charges and emails o-1 and o-2, then charges
    # o-3 before its email fails; the retry repeats all three charges: o-1..o-3 charged twice.
    naive = run_scenario(SCENARIO, NAIVE, settings={"payment": "card"})
    charges = {key: counts["charge"] for key, counts in naive.verdict.effects_per_key.items()}
    assert charges == {"o-1": 2, "o-2": 2, "o-3": 2, "o-4": 1}
    assert emails(naive) == {"o-1": 2, "o-2": 2, "o-3": 1, "o-4": 1}
    # run_once replays o-1 and o-2; o-3's second charge reuses its idempotency key, so the payment
    # API returns the first charge instead of charging again.
    idempotent = run_scenario(SCENARIO, IDEMPOTENT, settings={"payment": "card"})
    assert idempotent.status == "valid", idempotent.verdict.explain()
    assert [e["status"] for e in idempotent.history.effects("charge") if e["key"] == "o-3"] == ["done", "deduplicated"]


def test_same_seed_gives_byte_identical_history():
    for overrides in ({}, {"bisect_batch_on_function_error": True, "failures": 2, "shards": 3, "orders": 9,
                           "batch_size": 2, "interval": 0.3}):
        a = run_scenario(SCENARIO, NAIVE, seed=7, settings=overrides).history.to_json()
        b = run_scenario(SCENARIO, NAIVE, seed=7, settings=overrides).history.to_json()
        assert a == b



def test_cli_reports_duplicates_caused_by_the_retry():
    proc = subprocess.run([sys.executable, "-m", "sandbox", "run", SCENARIO, "--handler",
                           "examples/naive_email.py:handler", "--json"], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 1, proc.stderr
    report = json.loads(proc.stdout)
    causes = {i["id"]: i["cause"] for i in report["invocations"]}
    assert report["verdict"] == "invalid" and len(report["duplicates"]) == 2
    for dup in report["duplicates"]:
        assert [causes[i] for i in dup["invocations"]] == ["first delivery", "retry 1"]


# -- order and blocking -----------------------------------------------------------------------
def test_a_failing_batch_blocks_the_records_behind_it():
    # o-1..o-4 arrive together and form one batch; o-5 and o-6 arrive while it runs. o-3 fails
    # twice, so the batch needs three attempts; o-5 and o-6 wait in the shard until it succeeds.
    orders = make_orders(6, 0)
    arrivals = [(0.0, o) for o in orders[:4]] + [(0.5, o) for o in orders[4:]]
    history, _ = run_stream(recording([]), arrivals, faults={"o-3": 2})
    invs = invocations(history)
    assert [(i["keys"], i["outcome"]) for i in invs] == [
        (["o-1", "o-2", "o-3", "o-4"], "error"),
        (["o-1", "o-2", "o-3", "o-4"], "error"),
        (["o-1", "o-2", "o-3", "o-4"], "ok"),
        (["o-5", "o-6"], "ok"),
    ]
    assert invs[3]["t"] >= invs[2]["end"]
    first_email = {}
    for e in history.effects("email"):
        if e["status"] == "done":
            first_email.setdefault(e["key"], e["t"])
    assert sorted(first_email, key=first_email.get) == [f"o-{i}" for i in range(1, 7)]
    assert emails(check(history)) == {"o-1": 3, "o-2": 3, "o-3": 1, "o-4": 1, "o-5": 1, "o-6": 1}


@settings(max_examples=8, deadline=None)
@given(shards=st.integers(1, 4), batch_size=st.integers(1, 4), fail=st.integers(1, 10), seed=st.integers(0, 50))
def test_each_shard_is_read_in_order_one_batch_at_a_time(shards, batch_size, fail, seed):
    seen = []
    orders = make_orders(10, seed)
    arrivals = [(0.4 * i, o) for i, o in enumerate(orders)]
    history, _ = run_stream(recording(seen), arrivals, StreamMapping(shards=shards, batch_size=batch_size),
                            faults={f"o-{fail}": 2}, seed=seed)
    assert check(history).lost == []
    by_shard = {}
    for event, inv in zip(seen, invocations(history)):
        shard = {r["eventID"].split(":")[0] for r in event["Records"]}
        assert len(shard) == 1  # a batch never mixes shards
        by_shard.setdefault(shard.pop(), []).append((event, inv))
    put_order = {}
    for r in history.of_type("aws"):
        if r["op"] == "PutRecord":
            put_order.setdefault(r["key"], len(put_order))
    for pairs in by_shard.values():
        for (_, a), (_, b) in zip(pairs, pairs[1:]):
            assert b["t"] >= a["end"]  # one batch of a shard at a time
        delivered = [k for _, inv in pairs if inv["outcome"] == "ok" for k in inv["keys"]]
        assert delivered == sorted(delivered, key=put_order.get)  # shard order kept
        assert len(delivered) == len(set(delivered))  # a successful batch is never re-read


# -- retries, discards and the on-failure destination ------------------------------------------
@settings(max_examples=4, deadline=None)
@given(k=st.integers(0, 3))
def test_maximum_retry_attempts_k_means_k_plus_1_attempts_then_discard(k):
    seen = []
    history, failures = run_stream(recording(seen), [(0.0, o) for o in make_orders(4, 0)],
                                   StreamMapping(maximum_retry_attempts=k), faults={"o-3": 1000})
    invs = invocations(history)
    assert [i["cause"] for i in invs] == ["first delivery"] + [f"retry {n}" for n in range(1, k + 1)]
    assert all(i["outcome"] == "error" and i["keys"] == ["o-1", "o-2", "o-3", "o-4"] for i in invs)
    verdict = check(history)
    assert emails(verdict) == {"o-1": k + 1, "o-2": k + 1, "o-3": 0, "o-4": 0}
    assert sorted(f.key for f in verdict.lost) == ["o-3", "o-4"]
    assert all("discarded" in f.text for f in verdict.lost)
    [message] = failures
    records = seen[0]["Records"]
    assert message["requestContext"]["condition"] == "RetryAttemptsExhausted"
    assert message["requestContext"]["approximateInvokeCount"] == k + 1
    assert message["responseContext"]["functionError"] == "Unhandled"
    info = message["KinesisBatchInfo"]
    assert info["batchSize"] == 4 and info["shardId"] == "shardId-000000000000"
    assert info["startSequenceNumber"] == records[0]["kinesis"]["sequenceNumber"]
    assert info["endSequenceNumber"] == records[-1]["kinesis"]["sequenceNumber"]
    assert info["streamArn"] == records[0]["eventSourceARN"]
    [discard] = [d for d in history.of_type("delivery") if d["what"] == "discarded"]
    assert discard["keys"] == ["o-1", "o-2", "o-3", "o-4"] and discard["inv"] == invs[-1]["inv"]


def test_scenario_with_no_retries_loses_the_failed_batch():
    # MaximumRetryAttempts 0, no bisect: inv-1 emails o-1 and o-2, fails on o-3, and the batch is
    # discarded at once. o-1 and o-2 were emailed once; o-3 and o-4 never: lost, reason discarded.
    for handler in (NAIVE, IDEMPOTENT):
        result = run_scenario(SCENARIO, handler, settings={"maximum_retry_attempts": 0})
        assert result.status == "invalid"
        assert emails(result) == {"o-1": 1, "o-2": 1, "o-3": 0, "o-4": 0}
        assert [f.key for f in result.verdict.lost] == ["o-3", "o-4"]
        assert all("ended discarded" in f.text and "MaximumRetryAttempts=0" in f.text for f in result.verdict.lost)
        assert result.verdict.duplicates == []


def test_bisect_halves_the_batch_and_helps_only_when_the_fault_recurs():
    # One failure: inv-1 emails o-1, o-2 and fails on o-3; the halves [o-1, o-2] and [o-3, o-4]
    # are sent on their own (cause "bisect half", prev inv-1: a split uses no retry, so it is not
    # numbered as one). The first half repeats o-1 and o-2, as the whole retry would: 6 emails, the
    # same as without bisecting.
    once = run_scenario(SCENARIO, NAIVE, settings={"bisect_batch_on_function_error": True})
    assert emails(once) == {"o-1": 2, "o-2": 2, "o-3": 1, "o-4": 1}
    assert [(i["keys"], i["cause"], i["prev"]) for i in once.report()["invocations"]] == [
        (["o-1", "o-2", "o-3", "o-4"], "first delivery", None),
        (["o-1", "o-2"], "bisect half", "inv-1"),
        (["o-3", "o-4"], "bisect half", "inv-1"),
    ]
    # Two failures: without bisecting, each retry repeats o-1 and o-2 (3 emails each, 8 in all).
    # With it, [o-3, o-4] fails alone and splits again into [o-3] and [o-4]: o-1 and o-2 are
    # repeated only once (6 in all). Fewer duplicates, not none.
    twice = {"failures": 2}
    assert emails(run_scenario(SCENARIO, NAIVE, settings=twice)) == {"o-1": 3, "o-2": 3, "o-3": 1, "o-4": 1}
    split = run_scenario(SCENARIO, NAIVE, settings={**twice, "bisect_batch_on_function_error": True})
    assert emails(split) == {"o-1": 2, "o-2": 2, "o-3": 1, "o-4": 1}
    assert [i["keys"] for i in split.report()["invocations"]] == [
        ["o-1", "o-2", "o-3", "o-4"], ["o-1", "o-2"], ["o-3", "o-4"], ["o-3"], ["o-4"]]


def test_bisect_isolates_a_poison_record_without_using_up_retries():
    # MaximumRetryAttempts 0 with bisect and o-3 failing forever: splits use no retry, so only the
    # single record [o-3] is discarded when it fails; o-4 behind it is still delivered.
    history, failures = run_stream(recording([]), [(0.0, o) for o in make_orders(4, 0)],
                                   StreamMapping(maximum_retry_attempts=0, bisect_batch_on_function_error=True),
                                   faults={"o-3": 1000})
    assert [i["keys"] for i in invocations(history)] == [
        ["o-1", "o-2", "o-3", "o-4"], ["o-1", "o-2"], ["o-3", "o-4"], ["o-3"], ["o-4"]]
    assert [m["KinesisBatchInfo"]["batchSize"] for m in failures] == [1]
    assert [f.key for f in check(history).lost] == ["o-3"]
    # Numbered as MaximumRetryAttempts counts: the halves are no retries, so no "retry n" appears at all.
    assert [i["cause"] for i in invocations(history)] == ["first delivery"] + ["bisect half"] * 4


def test_retries_after_bisecting_are_numbered_from_one_up_to_maximum_retry_attempts():
    """Lesson 04's figure numbered o-2's attempts "retry 2" to "retry 5" with MaximumRetryAttempts=3."""
    settings = {"interval": 0, "fail_order": 2, "failures": 1000, "maximum_retry_attempts": 3,
                "bisect_batch_on_function_error": True}
    result = run_scenario(SCENARIO, NAIVE, settings=settings)
    causes = {tuple(i["keys"]): [] for i in result.report()["invocations"]}
    for i in result.report()["invocations"]:
        causes[tuple(i["keys"])].append(i["cause"])
    assert causes[("o-2",)] == ["bisect half", "retry 1", "retry 2", "retry 3"]
    assert causes[("o-3", "o-4")] == ["bisect half"] and causes[("o-1",)] == ["bisect half"]


def test_maximum_record_age_discards_an_old_failing_batch():
    # Each attempt takes 0.4 s (o-1's email, then o-2's failing one) and the next starts 1 s after
    # it fails: attempts at 0, 1.4, ..., 58.8 s. At 60.2 s the records are over 60 s old (the
    # shortest age AWS accepts): discarded after 43 attempts, before a 44th.
    history, failures = run_stream(recording([]), [(0.0, o) for o in make_orders(2, 0)],
                                   StreamMapping(maximum_record_age=60), faults={"o-2": 1000})
    assert [i["t"] for i in invocations(history)] == pytest.approx([1.4 * n for n in range(43)])
    [message] = failures
    assert message["requestContext"]["condition"] == "RecordAgeExceeded"
    assert message["requestContext"]["approximateInvokeCount"] == 43
    [discard] = [d for d in history.of_type("delivery") if d["what"] == "discarded"]
    assert discard["t"] == pytest.approx(60.2)
    assert "MaximumRecordAgeInSeconds=60" in check(history).lost[0].text


@pytest.mark.parametrize("age", [0, 1, 59])
def test_a_record_age_under_a_minute_is_refused(age):
    with pytest.raises(BadInput, match="-1 .* or 60 to 604800"):
        StreamMapping(maximum_record_age=age)


def test_by_default_a_failing_record_blocks_its_shard_until_the_stream_drops_it():
    # MaximumRetryAttempts and MaximumRecordAgeInSeconds -1: retried until the record leaves the
    # stream (24 h retention). Here each attempt takes 0.2 s and the next comes an hour later:
    # attempts at n * 3600.2 s for n = 0..23; the 25th would start after 24 h, so it is dropped.
    history, failures = run_stream(recording([]), [(0.0, o) for o in make_orders(1, 0)],
                                   StreamMapping(retry_backoff=3600.0), faults={"o-1": 10 ** 6}, horizon=3 * 86400)
    assert len(invocations(history)) == 24
    [discard] = [d for d in history.of_type("delivery") if d["what"] == "discarded"]
    assert discard["t"] == pytest.approx(24 * 3600.2)
    assert "24 h retention" in discard["detail"]["reason"]
    assert failures[0]["requestContext"]["condition"] == "RecordAgeExceeded"


def test_records_still_blocked_at_the_horizon_are_pending():
    result = run_scenario(SCENARIO, IDEMPOTENT, settings={"failures": 1000, "horizon": 30.0})
    assert result.status == "unknown"
    assert sorted(f.key for f in result.verdict.findings if f.kind == "pending") == ["o-3", "o-4"]
    [pending] = [d for d in result.history.of_type("delivery") if d["what"] == "pending"]
    # the handler reported o-3 as failed, so Lambda checkpointed past o-1 and o-2: from o-3 on, all is still
    # in the stream (with a handler that raises instead, the whole batch would be)
    assert pending["keys"] == ["o-3", "o-4"]


# -- the event ------------------------------------------------------------------------------
def test_events_have_the_kinesis_shape_with_base64_orders():
    seen = []
    orders = make_orders(3, 0)
    run_stream(recording(seen), [(0.0, o) for o in orders], faults={"o-2": 1})
    assert len(seen) == 2
    first, retry = seen
    for event in seen:
        numbers = []
        for record, order in zip(event["Records"], orders):
            kinesis = record["kinesis"]
            assert json.loads(base64.b64decode(kinesis["data"], validate=True)) == order
            assert kinesis["partitionKey"] == order["orderId"]
            assert len(kinesis["sequenceNumber"]) == 56 and kinesis["sequenceNumber"].isdigit()
            assert record["eventID"] == f"shardId-000000000000:{kinesis['sequenceNumber']}"
            assert record["eventSource"] == "aws:kinesis" and record["eventName"] == "aws:kinesis:record"
            assert record["eventSourceARN"] == "arn:aws:kinesis:us-east-1:123456789012:stream/orders"
            numbers.append(int(kinesis["sequenceNumber"]))
        assert numbers == sorted(numbers) and len(set(numbers)) == len(numbers)
    # the retry carries the very same records
    def sequences(event):
        return [r["kinesis"]["sequenceNumber"] for r in event["Records"]]

    assert sequences(retry) == sequences(first)


@given(seq=st.integers(1, 10 ** 9), shard=st.integers(0, 63))
def test_sequence_numbers_map_one_to_one(seq, shard):
    aws = aws_sequence_number(seq, shard)
    assert len(aws) == 56 and moto_sequence_number(aws, shard) == str(seq)
    assert int(aws_sequence_number(seq + 1, shard)) > int(aws)


# -- bad input ------------------------------------------------------------------------------
@pytest.mark.parametrize("overrides, words", [
    ({"fail_order": 9}, "fail_order 9 is beyond the 4 orders"),
    ({"batch_size": 0}, r"batch_size \(BatchSize\) must be at least 1"),
    ({"maximum_retry_attempts": -2}, r"maximum_retry_attempts \(MaximumRetryAttempts\) must be at least -1"),
    ({"maximum_record_age": 700000}, r"maximum_record_age \(MaximumRecordAgeInSeconds\) must be at most 604800"),
    ({"retention_hours": 12}, "retention_hours must be at least 24"),
    ({"interval": 10, "horizon": 20}, "raise horizon or lower interval"),
])
def test_bad_settings_are_named(overrides, words):
    with pytest.raises(BadInput, match=words):
        run_scenario(SCENARIO, NAIVE, settings=overrides)


def test_a_bad_mapping_is_named():
    with Sandbox(seed=0) as sb:
        fn = sb.function(NAIVE)
        with pytest.raises(BadInput, match="BatchSize"):
            StreamSource(sb, fn, StreamMapping(batch_size=20_000))
        with pytest.raises(BadInput, match="poll_interval"):
            StreamSource(sb, fn, StreamMapping(poll_interval=0))


# -- partial batch responses (ReportBatchItemFailures) ---------------------------------------------
# https://docs.aws.amazon.com/lambda/latest/dg/services-kinesis-batchfailurereporting.html: Lambda
# checkpoints at the lowest sequence number reported and retries every record from there, the ones
# that succeeded after it included. Empty or null lists are full success; an empty, null or unknown
# itemIdentifier (or a bad key name) fails the whole batch.
PARTIAL = example("partial_stream.py")
PARTIAL_SCENARIO = "stream-partial-batch"


def answering(response_of, seen=None):
    """A naive handler that emails every order it is handed; it answers its first event with
    ``response_of(event)``, and later ones with nothing (full success)."""
    calls = []

    def handler(event, context):
        calls.append(event)
        if seen is not None:
            seen.append(event)
        for order in orders_in(event):
            send_confirmation_email(order)
        return response_of(event) if len(calls) == 1 else None

    return handler


def reporting(order_id):
    """A naive handler that emails every order it is handed and always reports ``order_id``'s record."""

    def handler(event, context):
        failed = []
        for record in event["Records"]:
            for order in orders_in({"Records": [record]}):
                send_confirmation_email(order)
                if order["orderId"] == order_id:
                    failed.append({"itemIdentifier": record["kinesis"]["sequenceNumber"]})
        return {"batchItemFailures": failed}

    return handler


def seqs(event):
    return [r["kinesis"]["sequenceNumber"] for r in event["Records"]]


def test_the_partial_batch_scenario_has_reporting_on_by_default():
    settings = {s.name: s for s in get_scenario(PARTIAL_SCENARIO).settings}
    assert settings["report_batch_item_failures"].default is True
    assert settings["report_batch_item_failures"].aws == "ReportBatchItemFailures"
    assert settings["fail_order"].default == 2
    assert "batchfailurereporting" in settings["report_batch_item_failures"].doc
    assert StreamMapping().report_batch_item_failures is False  # off by default, as on AWS


@pytest.mark.parametrize("seed", range(10))
def test_a_reported_failure_brings_back_every_record_after_it(seed):
    # Defaults: o-1..o-4 in one batch; o-2's email fails once. The handler emails o-1, fails o-2,
    # emails o-3 and o-4, and reports o-2. Lambda checkpoints before o-2 and retries o-2, o-3, o-4:
    # o-3 and o-4 are emailed twice, though they had succeeded.
    result = run_scenario(PARTIAL_SCENARIO, PARTIAL, seed=seed)
    assert result.status == "invalid"
    assert emails(result) == {"o-1": 1, "o-2": 1, "o-3": 2, "o-4": 2}
    assert [(i["id"], i["cause"], i["prev"], i["keys"], i["outcome"]) for i in result.report()["invocations"]] == [
        ("inv-1", "first delivery", None, ["o-1", "o-2", "o-3", "o-4"], "ok"),
        ("inv-2", "retry 1", "inv-1", ["o-2", "o-3", "o-4"], "ok"),
    ]
    [failed] = [d for d in result.history.of_type("delivery") if d["what"] == "batch failed"]
    assert failed["keys"] == ["o-2"] and failed["detail"]["partial"] is True
    assert failed["detail"]["retried"] == ["o-2", "o-3", "o-4"] and failed["detail"]["size"] == 3
    assert {d.key for d in result.verdict.duplicates} == {"o-3", "o-4"}


@pytest.mark.parametrize("bisect", [False, True])
def test_bisecting_too_cuts_at_the_reported_record_and_retries_the_same_records(bisect):
    # "the batch is bisected at the returned sequence number and Lambda retries only the remaining
    # records": o-2, o-3, o-4 again, as without bisecting.
    result = run_scenario(PARTIAL_SCENARIO, PARTIAL, settings={"bisect_batch_on_function_error": bisect})
    assert emails(result) == {"o-1": 1, "o-2": 1, "o-3": 2, "o-4": 2}
    assert [i["keys"] for i in result.report()["invocations"]] == [["o-1", "o-2", "o-3", "o-4"],
                                                                   ["o-2", "o-3", "o-4"]]
    [failed] = [d for d in result.history.of_type("delivery") if d["what"] == "batch failed"]
    assert failed["detail"]["bisected"] is bisect


def test_a_cut_at_the_reported_record_uses_no_retry_but_a_plain_retry_does():
    # MaximumRetryAttempts 0: without bisecting, the retry from the checkpoint is not allowed, so
    # o-2..o-4 are discarded (o-2 was never emailed: lost). With bisecting, the cut uses no retry.
    plain = run_scenario(PARTIAL_SCENARIO, PARTIAL, settings={"maximum_retry_attempts": 0})
    assert emails(plain) == {"o-1": 1, "o-2": 0, "o-3": 1, "o-4": 1}
    assert [f.key for f in plain.verdict.lost] == ["o-2"]
    [discard] = [d for d in plain.history.of_type("delivery") if d["what"] == "discarded"]
    assert discard["keys"] == ["o-2", "o-3", "o-4"] and discard["detail"]["condition"] == "RetryAttemptsExhausted"
    cut = run_scenario(PARTIAL_SCENARIO, PARTIAL, settings={"maximum_retry_attempts": 0,
                                                            "bisect_batch_on_function_error": True})
    assert emails(cut) == {"o-1": 1, "o-2": 1, "o-3": 2, "o-4": 2}


def test_each_retry_from_the_checkpoint_repeats_the_records_after_it():
    # o-2 fails twice: two retries from o-2, so o-3 and o-4 are emailed three times.
    result = run_scenario(PARTIAL_SCENARIO, PARTIAL, settings={"failures": 2})
    assert emails(result) == {"o-1": 1, "o-2": 1, "o-3": 3, "o-4": 3}
    assert [i["cause"] for i in result.report()["invocations"]] == ["first delivery", "retry 1", "retry 2"]


@settings(max_examples=10, deadline=None)
@given(orders=st.integers(2, 8), data=st.data())
def test_the_records_after_the_lowest_reported_one_come_again(orders, data):
    fail = data.draw(st.integers(1, orders))
    result = run_scenario(PARTIAL_SCENARIO, PARTIAL, settings={"orders": orders, "fail_order": fail})
    assert emails(result) == {f"o-{i}": (2 if i > fail else 1) for i in range(1, orders + 1)}
    assert result.status == ("valid" if fail == orders else "invalid")


@pytest.mark.parametrize("seed", range(5))
def test_idempotent_handler_is_valid_in_the_partial_batch_scenario(seed):
    for overrides in ({}, {"bisect_batch_on_function_error": True}, {"failures": 3, "orders": 6, "batch_size": 4}):
        result = run_scenario(PARTIAL_SCENARIO, IDEMPOTENT, seed=seed, settings=overrides)
        assert result.status == "valid", result.verdict.explain()


def test_the_catalogue_handler_raises_so_the_whole_batch_comes_back():
    result = run_scenario(PARTIAL_SCENARIO, NAIVE)
    assert emails(result) == {"o-1": 2, "o-2": 1, "o-3": 1, "o-4": 1}
    assert [i["keys"] for i in result.report()["invocations"]] == [["o-1", "o-2", "o-3", "o-4"]] * 2


def failures(*items):
    return {"batchItemFailures": list(items)}


@pytest.mark.parametrize("response_of, retried", [
    (lambda e: failures(), None),  # empty list: full success
    (lambda e: {"batchItemFailures": None}, None),  # null list: full success
    (lambda e: None, None),  # null response: full success
    (lambda e: {"statusCode": 200}, None),  # no batchItemFailures: full success
    # several: the lowest is the checkpoint
    (lambda e: failures({"itemIdentifier": seqs(e)[3]}, {"itemIdentifier": seqs(e)[1]}), ["o-2", "o-3", "o-4"]),
    (lambda e: failures({"itemIdentifier": seqs(e)[-1]}), ["o-4"]),
    (lambda e: failures({"itemIdentifier": ""}), "whole"),
    (lambda e: failures({"itemIdentifier": None}), "whole"),
    (lambda e: failures({"itemId": seqs(e)[1]}), "whole"),  # a bad key name
    (lambda e: failures({"itemIdentifier": "42"}), "whole"),  # not a sequence number of the batch
    (lambda e: {"batchItemFailures": "o-2"}, "whole"),
])
def test_what_a_partial_batch_response_means(response_of, retried):
    seen = []
    history, _ = run_stream(answering(response_of, seen), [(0.0, o) for o in make_orders(4, 0)],
                            StreamMapping(report_batch_item_failures=True))
    invs = invocations(history)
    assert invs[0]["keys"] == ["o-1", "o-2", "o-3", "o-4"] and invs[0]["outcome"] == "ok"
    bad = [f for f in check(history).findings if f.kind == "bad batch response"]
    assert bool(bad) == (retried == "whole")  # a response Lambda cannot read is a finding of its own
    if retried is None:
        assert len(invs) == 1
    elif retried == "whole":
        assert [i["keys"] for i in invs[1:]] == [["o-1", "o-2", "o-3", "o-4"]]
        [failed] = [d for d in history.of_type("delivery") if d["what"] == "batch failed"]
        assert "failed the whole batch" in failed["detail"]["reason"] and failed["detail"]["outcome"] == "ok"
    else:
        assert [i["keys"] for i in invs[1:]] == [retried]
        assert seqs(seen[1]) == seqs(seen[0])[4 - len(retried):]  # the very records, from the checkpoint


def test_a_partial_batch_response_is_ignored_unless_the_mapping_asks_for_it():
    # Reporting off: the response means nothing, the invocation succeeded, the shard moves on.
    history, _ = run_stream(reporting("o-2"), [(0.0, o) for o in make_orders(4, 0)], StreamMapping())
    assert len(invocations(history)) == 1
    # Reporting on, o-2 reported every time: retried from o-2 until MaximumRetryAttempts (2) runs out,
    # then o-2..o-4 are discarded; o-3 and o-4 were emailed on every attempt.
    history, failed = run_stream(reporting("o-2"), [(0.0, o) for o in make_orders(4, 0)],
                                 StreamMapping(report_batch_item_failures=True, maximum_retry_attempts=2))
    assert [i["keys"] for i in invocations(history)] == [["o-1", "o-2", "o-3", "o-4"]] + [["o-2", "o-3", "o-4"]] * 2
    assert emails(check(history)) == {"o-1": 1, "o-2": 3, "o-3": 3, "o-4": 3}
    [message] = failed
    assert message["KinesisBatchInfo"]["batchSize"] == 3
    assert message["requestContext"]["condition"] == "RetryAttemptsExhausted"


# -- the producer re-sends a PutRecord (kinesis-producer-resend) ------------------------------------
# https://docs.aws.amazon.com/streams/latest/dev/kinesis-record-processor-duplicates.html: two records
# with identical data and unique sequence numbers.
RESEND = "kinesis-producer-resend"
EVENT_ID_KEY = str(ROOT / "tests" / "handlers" / "stream_record_key.py") + ":handler"


@pytest.mark.parametrize("seed", range(10))
def test_a_producer_resend_writes_a_second_record_and_the_naive_handler_emails_twice(seed):
    # o-1 at 0.5 s, o-2 at 1.5 s: o-2's PutRecord takes effect, its response times out after the
    # 60 s read timeout, and botocore writes it again; o-3 follows. The poller reads o-1, then o-2,
    # then o-2's copy with o-3, a batch caused by the producer's re-send.
    result = run_scenario(RESEND, NAIVE, seed=seed)
    assert result.status == "invalid"
    assert emails(result) == {"o-1": 1, "o-2": 2, "o-3": 1}
    assert [(i["cause"], i["prev"], i["keys"]) for i in result.report()["invocations"]] == [
        ("first delivery", None, ["o-1"]), ("first delivery", None, ["o-2"]),
        ("producer re-send", "inv-2", ["o-2", "o-3"])]
    [resend] = [d for d in result.history.of_type("delivery") if d["what"] == "producer re-send"]
    assert resend["keys"] == ["o-2"] and resend["detail"]["attempts"] == 2
    assert resend["t"] >= 60  # the copy comes after the read timeout


def test_the_two_records_share_their_data_but_not_their_sequence_number_or_event_id():
    seen = []
    with Sandbox(seed=0) as sb:
        fn = sb.function(recording(seen))
        sb.faults.add(AwsFault("timeout-applied", "kinesis", "PutRecord", nth=2))
        source = StreamSource(sb, fn)
        producer = KinesisProducer(sb, source, [(0.5 + i, o) for i, o in enumerate(make_orders(3, 0))])
        run_sources(sb, source, producer, horizon=600)
        resend = [d for d in sb.history.of_type("delivery") if d["what"] == "producer re-send"]
    records = [r for event in seen for r in event["Records"]]
    copies = [r for r in records if json.loads(base64.b64decode(r["kinesis"]["data"]))["orderId"] == "o-2"]
    assert len(copies) == 2
    first, second = copies
    assert first["kinesis"]["data"] == second["kinesis"]["data"]
    assert first["kinesis"]["partitionKey"] == second["kinesis"]["partitionKey"] == "o-2"
    assert first["kinesis"]["sequenceNumber"] != second["kinesis"]["sequenceNumber"]
    assert first["eventID"] != second["eventID"]
    assert resend[0]["detail"]["sequenceNumbers"] == [first["kinesis"]["sequenceNumber"],
                                                      second["kinesis"]["sequenceNumber"]]
    assert len({r["eventID"] for r in records}) == len(records) == 4


@pytest.mark.parametrize("seed", range(5))
def test_the_event_id_is_not_a_business_key(seed):
    # Keyed on eventID, the copy is a new record, so the claim lets it through: o-2 emailed twice.
    by_event_id = run_scenario(RESEND, EVENT_ID_KEY, seed=seed)
    assert by_event_id.status == "invalid"
    assert emails(by_event_id) == {"o-1": 1, "o-2": 2, "o-3": 1}
    # Keyed on the orderId, the copy finds the first one's result.
    by_order = run_scenario(RESEND, IDEMPOTENT, seed=seed)
    assert by_order.status == "valid", by_order.verdict.explain()


@pytest.mark.parametrize("mode", ["standard", "legacy", "adaptive"])
def test_every_retry_mode_resends_a_timed_out_put_record(mode):
    result = run_scenario(RESEND, NAIVE, settings={"retry_mode": mode})
    assert emails(result) == {"o-1": 1, "o-2": 2, "o-3": 1}


def test_without_sdk_retries_or_the_fault_the_record_is_written_once():
    # One attempt in all: the record was still written, the producer just never heard so.
    once = run_scenario(RESEND, NAIVE, settings={"total_max_attempts": 1})
    assert once.status == "valid" and emails(once) == {"o-1": 1, "o-2": 1, "o-3": 1}
    assert not [d for d in once.history.of_type("delivery") if d["what"] == "producer re-send"]
    assert any("gave up sending o-2" in n["text"] for n in once.history.of_type("note"))
    assert run_scenario(RESEND, NAIVE, settings={"resend_order": 0}).status == "valid"


@pytest.mark.parametrize("name", [PARTIAL_SCENARIO, RESEND])
def test_new_stream_scenarios_repeat_for_a_seed(name):
    for handler in (NAIVE, IDEMPOTENT):
        a = run_scenario(name, handler, seed=3).history.to_json()
        assert a == run_scenario(name, handler, seed=3).history.to_json()


def test_the_timeline_says_where_a_partial_retry_starts_and_that_a_record_was_written_twice():
    import matplotlib.pyplot as plt

    def texts(result):
        fig = result.plot()
        out = [t.get_text() for ax in fig.axes for t in ax.texts]
        out += [t.get_text() for legend in fig.legends for t in legend.get_texts()]
        plt.close(fig)
        return [t.replace("\n", " ") for t in out]  # a label may take two lines where marks stand close

    partial = texts(run_scenario(PARTIAL_SCENARIO, PARTIAL))
    assert "checkpoint at o-2: o-2, o-3, o-4 come again" in partial
    assert "partial failure: retried from the lowest failed record on" in partial
    assert "bisected at o-2: o-2, o-3, o-4 come again" in texts(
        run_scenario(PARTIAL_SCENARIO, PARTIAL, settings={"bisect_batch_on_function_error": True}))
    assert "o-2 written twice (new sequence number)" in texts(run_scenario(RESEND, NAIVE))


@pytest.mark.parametrize("name", [PARTIAL_SCENARIO, RESEND])
def test_new_stream_scenarios_document_themselves(name):
    sc = get_scenario(name)
    assert sc.kind == "duplicate source" and len(sc.summary) > 60
    for setting in sc.all_settings().values():
        assert setting.help, setting.name
        if setting.aws:
            assert setting.doc and setting.doc.startswith("https://docs.aws.amazon.com/"), setting.name
    assert "docs.aws.amazon.com" in sys.modules[type(sc).__module__].__doc__  # the AWS quotes, cited


def test_polls_of_a_drained_shard_stay_in_the_history_and_never_reach_moto():
    """kinesis-producer-resend waits for the producer's late re-send while the poller polls once a second with nothing
    to read: each poll is still a request in the history, on its beat, and only the polls with records to read (and
    garbage iterators) reach moto's Kinesis."""
    from moto.kinesis.models import KinesisBackend

    from sandbox.aws import adapter

    reached = []
    original = KinesisBackend.get_records

    def counting(backend, stream_arn, shard_iterator, limit):
        reached.append(shard_iterator)
        return original(backend, stream_arn, shard_iterator, limit)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(KinesisBackend, "get_records", counting)
        result = run_scenario("kinesis-producer-resend", NAIVE, seed=0)
    polls = [e for e in result.history.of_type("aws") if e["op"] == "GetRecords"]
    assert len(polls) > 50 and all(e["result"] == "ok" for e in polls)
    assert 0 < len(reached) < 10
    assert adapter.kinesis_unread("us-east-1", "not an iterator") is None  # unknown: moto answers it, as AWS would
