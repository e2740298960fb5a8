"""The DynamoDB Streams event source mapping and its scenarios: ddb-stream-batch-retry, ddb-stream-ttl-remove.

AWS semantics pinned here: stream records have the shape of
https://docs.aws.amazon.com/lambda/latest/dg/with-ddb.html (INSERT/MODIFY/REMOVE, Keys, NewImage,
OldImage, SequenceNumber, SizeBytes, StreamViewType); the mapping retries, bisects, reports partial
failures and discards as a Kinesis mapping does
(https://docs.aws.amazon.com/lambda/latest/dg/services-ddb-params.html,
https://docs.aws.amazon.com/lambda/latest/dg/services-dynamodb-errors.html); a TTL deletion is a
REMOVE whose userIdentity is the DynamoDB service, a user's DeleteItem a REMOVE without one
(https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_streams_Record.html).
"""
import boto3
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sandbox import (
    BadInput,
    ProviderFault,
    Sandbox,
    check,
    get_scenario,
    make_orders,
    orders_in,
    removed_by_ttl,
    run_scenario,
    send_confirmation_email,
)
from sandbox.aws import adapter
from sandbox.aws.dynamo import attribute_value, dynamo_item, plain_item, plain_value
from sandbox.sources.ddb_stream import DdbStreamMapping, DdbStreamSource
from sandbox.sources.stream import StreamMapping

from conftest import example

NAIVE = example("naive_email.py")
IDEMPOTENT = example("idempotent.py")
PARTIAL = example("partial_stream.py")
CANCEL_ON_REMOVE = example("cancel_on_remove.py")
CANCEL_UNLESS_TTL = example("cancel_unless_ttl.py")
RETRY = "ddb-stream-batch-retry"
TTL = "ddb-stream-ttl-remove"
TTL_IDENTITY = {"type": "Service", "principalId": "dynamodb.amazonaws.com"}


def effects(result_or_verdict, kind="email"):
    verdict = result_or_verdict if hasattr(result_or_verdict, "effects_per_key") else result_or_verdict.verdict
    return {key: counts.get(kind, 0) for key, counts in verdict.effects_per_key.items()}


def recording(seen):
    """A naive handler (no idempotency) that keeps every event and emails every INSERT's order."""

    def handler(event, context):
        seen.append(event)
        for record in event["Records"]:
            if record["eventName"] == "INSERT":
                for order in orders_in({"Records": [record]}):
                    send_confirmation_email(order)

    return handler


def run_table(handler, orders, *, expires_after=None, cancel=(), mapping=None, faults=None, seed=0, horizon=600.0,
              ttl_lag=0.0):
    """Write ``orders`` at t=0 (expiring ``expires_after`` s later, if given), delete ``cancel`` (pairs of
    time and order) as the customer, and let the mapping read the stream. Returns (history, failure messages)."""
    with Sandbox(seed=seed, ttl_lag=ttl_lag) as sb:
        fn = sb.function(handler)
        for order_id, fail in (faults or {}).items():
            sb.faults.add(ProviderFault("email", order_id, fail=fail))
        source = DdbStreamSource(sb, fn, mapping or DdbStreamMapping())
        expires = None if expires_after is None else sb.clock.now() + expires_after
        for order in orders:
            sb.scheduler.call_at(0.0, lambda order=order: source.put(order, expires_at=expires))
        for t, order in cancel:
            sb.scheduler.call_at(t, lambda order=order: source.cancel(order))
        removes = len(orders) if expires_after is not None else len(cancel)
        sb.scheduler.call_at(0.0, source.start)
        sb.run(until=horizon, stop_when=lambda: sum(source.record_counts().values()) >= len(orders) + removes
               and source.idle())
        source.finish()
        return sb.history, source.failure_records()


def invocations(history):
    return list(history.invocations().values())


# -- the event shape --------------------------------------------------------------------------------
def test_insert_and_remove_records_have_the_aws_shape():
    seen = []
    orders = make_orders(2, 0)
    run_table(recording(seen), orders, expires_after=60, cancel=[(30.0, orders[1])])
    records = [r for event in seen for r in event["Records"]]
    assert [(r["eventName"], r["dynamodb"]["Keys"]["orderId"]["S"]) for r in records] == [
        ("INSERT", "o-1"), ("INSERT", "o-2"), ("REMOVE", "o-2"), ("REMOVE", "o-1")]
    numbers = [int(r["dynamodb"]["SequenceNumber"]) for r in records]
    assert numbers == sorted(numbers) and len(set(numbers)) == 4
    for r in records:
        assert r["eventSource"] == "aws:dynamodb" and r["awsRegion"] == "us-east-1"
        assert r["eventSourceARN"].startswith("arn:aws:dynamodb:us-east-1:123456789012:table/orders/stream/")
        assert len(r["eventID"]) == 32 and int(r["eventID"], 16) >= 0
        body = r["dynamodb"]
        assert body["StreamViewType"] == "NEW_AND_OLD_IMAGES"
        assert isinstance(body["SizeBytes"], int) and body["SizeBytes"] > 0
        assert 21 <= len(body["SequenceNumber"]) <= 40
        assert body["ApproximateCreationDateTime"] == int(body["ApproximateCreationDateTime"])
    insert, _, user_remove, ttl_remove = records
    assert "OldImage" not in insert["dynamodb"] and plain_item(insert["dynamodb"]["NewImage"]) == {
        **orders[0], "expiresAt": int(ttl_remove["dynamodb"]["ApproximateCreationDateTime"])}
    assert "NewImage" not in ttl_remove["dynamodb"]
    assert plain_item(ttl_remove["dynamodb"]["OldImage"])["orderId"] == "o-1"
    # only the TTL's deletion carries userIdentity, as the DynamoDB service
    assert ttl_remove["userIdentity"] == TTL_IDENTITY
    assert "userIdentity" not in user_remove and "userIdentity" not in insert
    assert [removed_by_ttl(r) for r in records] == [False, False, False, True]
    assert len({r["eventID"] for r in records}) == 4


def test_orders_in_reads_the_new_image_or_a_removes_old_image():
    order = {"orderId": "o-7", "email": "ana@example.com", "amount": 1250, "payment": "card"}
    image = dynamo_item(order)
    insert = {"eventSource": "aws:dynamodb", "eventName": "INSERT", "dynamodb": {"NewImage": image}}
    modify = {"eventSource": "aws:dynamodb", "eventName": "MODIFY",
              "dynamodb": {"OldImage": dynamo_item({**order, "amount": 1}), "NewImage": image}}
    remove = {"eventSource": "aws:dynamodb", "eventName": "REMOVE", "dynamodb": {"OldImage": image},
              "userIdentity": TTL_IDENTITY}
    assert list(orders_in({"Records": [insert, modify, remove]})) == [order] * 3
    assert [removed_by_ttl(r) for r in (insert, modify, remove)] == [False, False, True]
    assert not removed_by_ttl({**remove, "userIdentity": {"type": "Service", "principalId": "someone"}})
    with pytest.raises(BadInput, match="NEW_AND_OLD_IMAGES"):
        list(orders_in({"Records": [{"eventSource": "aws:dynamodb", "eventName": "REMOVE", "dynamodb": {}}]}))


@given(value=st.recursive(
    st.none() | st.booleans() | st.integers(-10 ** 12, 10 ** 12) | st.text(max_size=5)
    | st.floats(allow_nan=False, allow_infinity=False, width=32).filter(lambda f: not f.is_integer()),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=8))
def test_plain_values_survive_dynamodb_json(value):
    assert plain_value(attribute_value(value)) == value


def test_describe_stream_works_from_any_client_in_a_world():
    # botocore sends DescribeStream to https://ACCOUNT.streams-ddb.REGION...; moto only serves the
    # regional endpoint, so the adapter maps the one onto the other.
    assert adapter.moto_url("https://123456789012.streams-ddb.us-east-1.amazonaws.com/") == \
        "https://streams.dynamodb.us-east-1.amazonaws.com/"
    assert adapter.moto_url("https://dynamodb.us-east-1.amazonaws.com/") == "https://dynamodb.us-east-1.amazonaws.com/"
    with Sandbox(seed=0) as sb:
        source = DdbStreamSource(sb, sb.function(NAIVE))
        plain = boto3.client("dynamodbstreams", region_name="us-east-1")
        description = plain.describe_stream(StreamArn=source.stream_arn)["StreamDescription"]
        assert description["StreamViewType"] == "NEW_AND_OLD_IMAGES" and description["TableName"] == "orders"
        assert [s["ShardId"] for s in description["Shards"]] == [s.shard_id for s in source.shards]


def test_the_mapping_cites_dynamodb_pages_with_kinesis_limits():
    ddb = {s.name: s for s in DdbStreamMapping.settings()}
    kinesis = {s.name: s for s in StreamMapping.settings()}
    assert ddb["batch_size"].doc == "https://docs.aws.amazon.com/lambda/latest/dg/services-ddb-params.html"
    assert ddb["report_batch_item_failures"].doc.endswith("services-ddb-batchfailurereporting.html")
    assert ddb["bisect_batch_on_function_error"].doc.endswith("services-dynamodb-errors.html")
    for name, setting in ddb.items():
        assert "kinesis" not in (setting.doc or ""), name
        assert (setting.minimum, setting.maximum) == (kinesis[name].minimum, kinesis[name].maximum)
        # the same defaults, but Lambda polls a DynamoDB stream 4 times a second (with-ddb.html)
        assert setting.default == (0.25 if name == "poll_interval" else kinesis[name].default), name
    assert "shards" not in ddb and "retention_hours" not in ddb  # one shard here; 24 h, fixed
    with pytest.raises(BadInput, match="services-ddb-params"):
        DdbStreamMapping(maximum_record_age=30)


# -- ddb-stream-batch-retry -------------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(10))
def test_naive_handler_duplicates_the_orders_before_the_failure(seed):
    # Four INSERT records in one batch; o-3's email fails once: the whole batch is retried from its
    # first record, so o-1 and o-2 are emailed twice.
    result = run_scenario(RETRY, NAIVE, seed=seed)
    assert result.status == "invalid"
    assert effects(result) == {"o-1": 2, "o-2": 2, "o-3": 1, "o-4": 1}
    assert [(i["cause"], i["prev"], i["keys"], i["outcome"]) for i in result.report()["invocations"]] == [
        ("first delivery", None, ["o-1", "o-2", "o-3", "o-4"], "error"),
        ("retry 1", "inv-1", ["o-1", "o-2", "o-3", "o-4"], "ok")]
    assert {i["source"] for i in result.report()["invocations"]} == {"dynamodb-stream"}
    reads = [r for r in result.history.of_type("aws") if r["service"] == "dynamodb-streams"]
    assert reads and {(r["target"], r["inv"]) for r in reads} == {("orders", None)}  # the poller's, not the handler's


@pytest.mark.parametrize("name", [RETRY, TTL])
@pytest.mark.parametrize("seed", range(4))
def test_idempotent_handler_is_valid_under_defaults(name, seed):
    result = run_scenario(name, IDEMPOTENT, seed=seed)
    assert result.status == "valid", result.verdict.explain()


@settings(max_examples=10, deadline=None)
@given(batch_size=st.integers(1, 5), orders=st.integers(2, 6), data=st.data())
def test_idempotent_handler_is_valid_for_any_batch_and_fault(batch_size, orders, data):
    fail = data.draw(st.integers(1, orders))
    overrides = {"batch_size": batch_size, "orders": orders, "fail_order": fail, "failures": 2,
                 "bisect_batch_on_function_error": data.draw(st.booleans()), "payment": "card"}
    result = run_scenario(RETRY, IDEMPOTENT, settings=overrides)
    assert result.status == "valid", result.verdict.explain()


def test_bisect_and_partial_batch_responses_work_as_for_kinesis():
    split = run_scenario(RETRY, NAIVE, settings={"failures": 2, "bisect_batch_on_function_error": True})
    assert [i["keys"] for i in split.report()["invocations"]] == [
        ["o-1", "o-2", "o-3", "o-4"], ["o-1", "o-2"], ["o-3", "o-4"], ["o-3"], ["o-4"]]
    # The partial handler reports o-2 by its DynamoDB SequenceNumber: retried from o-2, so o-3, o-4 again.
    partial = run_scenario(RETRY, PARTIAL, settings={"report_batch_item_failures": True, "fail_order": 2})
    assert effects(partial) == {"o-1": 1, "o-2": 1, "o-3": 2, "o-4": 2}
    assert [i["keys"] for i in partial.report()["invocations"]] == [["o-1", "o-2", "o-3", "o-4"],
                                                                    ["o-2", "o-3", "o-4"]]


def test_a_discarded_batch_is_described_as_ddb_stream_batch_info():
    seen = []
    history, failures = run_table(recording(seen), make_orders(3, 0), faults={"o-2": 1000},
                                  mapping=DdbStreamMapping(maximum_retry_attempts=1))
    assert len(invocations(history)) == 2
    [message] = failures
    info = message["DDBStreamBatchInfo"]
    records = seen[0]["Records"]
    assert info["startSequenceNumber"] == records[0]["dynamodb"]["SequenceNumber"]
    assert info["endSequenceNumber"] == records[-1]["dynamodb"]["SequenceNumber"]
    assert info["batchSize"] == 3 and info["streamArn"] == records[0]["eventSourceARN"]
    assert message["requestContext"]["condition"] == "RetryAttemptsExhausted"
    assert message["requestContext"]["approximateInvokeCount"] == 2
    assert "KinesisBatchInfo" not in message
    assert sorted(f.key for f in check(history).lost) == ["o-2", "o-3"]


def test_a_failing_record_blocks_the_stream_for_24_hours():
    history, failures = run_table(recording([]), make_orders(1, 0), faults={"o-1": 10 ** 6},
                                  mapping=DdbStreamMapping(retry_backoff=3600.0), horizon=2 * 86400)
    assert len(invocations(history)) == 24
    [discard] = [d for d in history.of_type("delivery") if d["what"] == "discarded"]
    assert "24 h retention" in discard["detail"]["reason"]
    assert failures[0]["requestContext"]["condition"] == "RecordAgeExceeded"


# -- ddb-stream-ttl-remove --------------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(6))
def test_ttl_deletions_reach_the_handler_and_the_naive_one_emails_again(seed):
    # Three orders expire at 60 s; the sweeper deletes them a minute later (ttl_lag 60, the same for each) and the
    # stream carries three REMOVE records with the service's userIdentity: one batch, caused by the TTL deletions.
    result = run_scenario(TTL, NAIVE, seed=seed)
    assert result.status == "invalid"
    assert effects(result) == {"o-1": 2, "o-2": 2, "o-3": 2}
    assert [(i["cause"], i["prev"], i["keys"]) for i in result.report()["invocations"]] == [
        ("first delivery", None, ["o-1", "o-2", "o-3"]), ("TTL deletion", "inv-1", ["o-1", "o-2", "o-3"])]
    sweeps = result.history.of_type("sweep")
    assert [(s["target"], s["key"], s["t"]) for s in sweeps] == [("orders", f"o-{i}", 120.0) for i in (1, 2, 3)]


def test_polls_of_a_drained_shard_are_recorded_on_the_beat_and_leave_moto_no_iterators():
    """Lambda polls a DynamoDB stream's shard four times a second; the run waiting for the TTL sweep polls hundreds
    of times with nothing to read. Each poll stays in the history on its beat, and moto makes no new iterator for
    one that reads nothing (it made one per poll, 472 random bytes each, kept for the process's life)."""
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.dynamodbstreams.models import dynamodbstreams_backends

    made = []
    original = dynamodbstreams_backends[DEFAULT_ACCOUNT_ID]["us-east-1"].__class__.get_records

    def counting(backend, iterator_arn, limit):
        made.append(iterator_arn)
        return original(backend, iterator_arn, limit)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(dynamodbstreams_backends[DEFAULT_ACCOUNT_ID]["us-east-1"].__class__, "get_records", counting)
        result = run_scenario(TTL, NAIVE, seed=0)
    polls = [e["t"] for e in result.history.of_type("aws") if e["op"] == "GetRecords"]
    beats = [round(b - a, 6) for a, b in zip(polls, polls[1:])]
    assert len(polls) > 400 and beats.count(0.25) >= len(beats) - 3  # the beat, but around the batches
    assert 0 < len(made) <= 6  # only polls with records to read (and the first) reached moto


@pytest.mark.parametrize("cancel", [0, 2])
def test_treating_every_remove_as_a_cancellation_sends_cancellations_nobody_asked_for(cancel):
    result = run_scenario(TTL, CANCEL_ON_REMOVE, settings={"cancel_order": cancel})
    assert result.status == "invalid"
    expired = ["o-1", "o-2", "o-3"] if not cancel else ["o-1", "o-3"]
    assert sorted(f.key for f in result.verdict.findings) == expired
    assert {f.kind for f in result.verdict.findings} == {"unexpected"}
    assert all(f.effect == "cancellation" for f in result.verdict.findings)
    assert effects(result, "cancellation") == {"o-1": 1, "o-2": 1, "o-3": 1}
    assert effects(result) == {"o-1": 1, "o-2": 1, "o-3": 1}


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("cancel", [0, 1, 3])
def test_checking_user_identity_cancels_only_what_the_customer_cancelled(seed, cancel):
    result = run_scenario(TTL, CANCEL_UNLESS_TTL, seed=seed, settings={"cancel_order": cancel, "payment": "card"})
    assert result.status == "valid", result.verdict.explain()
    cancelled = {k: n for k, n in effects(result, "cancellation").items() if n}
    assert cancelled == ({f"o-{cancel}": 1} if cancel else {})
    [delete] = [d for d in result.history.of_type("delivery") if d["what"] == "user delete"] or [None]
    assert (delete is None) == (not cancel)


def test_the_idempotent_example_knows_no_cancellations():
    # It emails each order once and ignores REMOVEs (the order's key is done), so a customer's
    # cancellation is lost: honest, since it was never written to send one.
    result = run_scenario(TTL, IDEMPOTENT, settings={"cancel_order": 2})
    assert result.status == "invalid"
    [lost] = result.verdict.lost
    assert (lost.key, lost.effect) == ("o-2", "cancellation")


def test_a_ttl_lag_delays_the_removes():
    result = run_scenario(TTL, NAIVE, settings={"ttl_lag": 600.0, "horizon": 1200.0})
    assert [i["start"] >= 660 for i in result.report()["invocations"]] == [False, True]
    assert effects(result) == {"o-1": 2, "o-2": 2, "o-3": 2}


def test_the_idempotency_table_is_still_swept_beside_the_orders_table():
    # run_once's records expire too (24 h here): with both tables watched, each sweep is of its own table.
    with Sandbox(seed=0) as sb:
        source = DdbStreamSource(sb, sb.function(IDEMPOTENT))
        sb.dynamodb.put_item(TableName="idempotency", Item={"pk": {"S": "k"}, "expiresAt": {"N": str(
            int(sb.clock.now()) + 10)}})
        source.put(make_orders(1, 0)[0], expires_at=sb.clock.now() + 20)
        sb.advance(30)
        assert [(s["target"], s["key"], s["t"]) for s in sb.history.of_type("sweep")] == [
            ("idempotency", "k", 10.0), ("orders", "o-1", 20.0)]
        assert sb.items() == []
        assert adapter.ddb_stream_record_count(sb.region, "orders") == 2


@pytest.mark.parametrize("overrides, words", [
    ({"cancel_order": 5}, "cancel_order 5 is beyond the 3 orders"),
    ({"cancel_order": 1, "cancel_at": 60}, "not before the order expires"),
    ({"ttl_lag": 600}, "raise horizon"),
    ({"batch_size": 0}, r"batch_size \(BatchSize\) must be at least 1"),
])
def test_bad_settings_are_named(overrides, words):
    with pytest.raises(BadInput, match=words):
        run_scenario(TTL, NAIVE, settings=overrides)


@pytest.mark.parametrize("name", [RETRY, TTL])
def test_same_seed_same_history(name):
    for handler in (NAIVE, IDEMPOTENT):
        a = run_scenario(name, handler, seed=5, settings={"payment": "card"}).history.to_json()
        assert a == run_scenario(name, handler, seed=5, settings={"payment": "card"}).history.to_json()


def test_every_setting_cites_a_page_for_its_aws_default():
    for name in (RETRY, TTL):
        settings = get_scenario(name).all_settings()
        for setting in settings.values():
            if setting.aws:
                assert setting.doc and setting.doc.startswith("https://docs.aws.amazon.com/"), (name, setting.name)


# -- what the timeline shows ---------------------------------------------------------------------
def _all_texts(fig):
    texts = [t.get_text() for ax in fig.axes for t in ax.texts]
    texts += [t.get_text() for ax in fig.axes for t in ax.get_yticklabels()]
    texts += [t.get_text() for legend in fig.legends for t in legend.get_texts()]
    return [t.replace("\n", " ") for t in texts]  # a label may take two lines where marks stand close


def test_the_timeline_names_the_source_the_customers_delete_and_unasked_for_cancellations():
    import matplotlib.pyplot as plt

    fig = run_scenario(TTL, CANCEL_ON_REMOVE, settings={"cancel_order": 2}).plot()
    texts = _all_texts(fig)
    plt.close(fig)
    assert "DynamoDB stream poller" in texts and "TTL sweeper" in texts
    assert "o-2 deleted by the customer" in texts
    assert "unexpected cancellation o-1, o-3" in texts
    assert "cancellation email sent" in texts
    assert any(t.startswith("inv-3") and "TTL deletion" in t for t in texts)
